// SPDX-License-Identifier: MIT
/*
 * names.c - the engine's naming scheme.
 */
#include <stdio.h>
#include <string.h>

#include "names.h"

size_t name_fmt(char *out, const char *prefix, uint64_t n, int width)
{
	int len = snprintf(out, NAME_MAX_LEN, "%s%0*llu", prefix, width,
			   (unsigned long long)n);

	return len < 0 ? 0 : (size_t)len;
}

void name_thread_root(char *out, unsigned t)
{
	name_fmt(out, "t", t, 3);
}

void name_seq_init(struct name_seq *s, const char *prefix, uint64_t first, int width)
{
	s->plen = strlen(prefix);
	s->len = name_fmt(s->buf, prefix, first, width);
}

/* Add one to the decimal digits after the prefix, growing by a digit on carry-out. */
void name_seq_next(struct name_seq *s)
{
	size_t i = s->len;

	while (i > s->plen) {
		i--;
		if (s->buf[i] != '9') {
			s->buf[i]++;
			return;
		}
		s->buf[i] = '0';
	}
	if (s->len + 1 >= NAME_MAX_LEN)
		return;
	memmove(s->buf + s->plen + 1, s->buf + s->plen, s->len - s->plen + 1);
	s->buf[s->plen] = '1';
	s->len++;
}
