// SPDX-License-Identifier: MIT
/*
 * series.c - a growing array of per-second counts.
 */
#include <stdlib.h>

#include "series.h"

int series_push(struct series *s, uint64_t x)
{
	uint64_t *nv;

	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		nv = realloc(s->v, s->cap * sizeof(*nv));
		if (!nv)
			return -1;
		s->v = nv;
	}
	s->v[s->n++] = x;
	return 0;
}

void series_free(struct series *s)
{
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}
