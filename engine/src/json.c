// SPDX-License-Identifier: MIT
/*
 * json.c - a minimal JSON writer for the engine's one-object-per-line output.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json.h"

static void grow(struct json *j, size_t need)
{
	size_t cap;
	char *nb;

	if (j->oom || j->len + need + 1 <= j->cap)
		return;
	cap = j->cap ? j->cap : 512;
	while (cap < j->len + need + 1)
		cap *= 2;
	nb = realloc(j->buf, cap);
	if (!nb) {
		j->oom = true;
		return;
	}
	j->buf = nb;
	j->cap = cap;
}

static void put(struct json *j, const char *s, size_t n)
{
	grow(j, n);
	if (j->oom)
		return;
	memcpy(j->buf + j->len, s, n);
	j->len += n;
	j->buf[j->len] = '\0';
}

static void putc_(struct json *j, char c)
{
	put(j, &c, 1);
}

static void put_string(struct json *j, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	char esc[6] = { '\\', 'u', '0', '0', 0, 0 };

	putc_(j, '"');
	for (; *p; p++) {
		switch (*p) {
		case '"':
			put(j, "\\\"", 2);
			break;
		case '\\':
			put(j, "\\\\", 2);
			break;
		case '\n':
			put(j, "\\n", 2);
			break;
		case '\t':
			put(j, "\\t", 2);
			break;
		default:
			if (*p < 0x20) {
				esc[4] = hex[*p >> 4];
				esc[5] = hex[*p & 15];
				put(j, esc, 6);
			} else {
				putc_(j, (char)*p);
			}
		}
	}
	putc_(j, '"');
}

/* Comma, then "key": when inside an object. */
static void member(struct json *j, const char *key)
{
	if (!j->first[j->depth])
		putc_(j, ',');
	j->first[j->depth] = false;
	if (key) {
		put_string(j, key);
		putc_(j, ':');
	}
}

void json_begin(struct json *j)
{
	memset(j, 0, sizeof(*j));
	j->first[0] = true;
	putc_(j, '{');
}

void json_str(struct json *j, const char *key, const char *val)
{
	member(j, key);
	if (val)
		put_string(j, val);
	else
		put(j, "null", 4);
}

void json_u64(struct json *j, const char *key, uint64_t val)
{
	char tmp[24];
	int n = snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)val);

	member(j, key);
	put(j, tmp, (size_t)n);
}

void json_i64(struct json *j, const char *key, int64_t val)
{
	char tmp[24];
	int n = snprintf(tmp, sizeof(tmp), "%lld", (long long)val);

	member(j, key);
	put(j, tmp, (size_t)n);
}

void json_f64(struct json *j, const char *key, double val)
{
	char tmp[32];
	int n;

	member(j, key);
	if (!isfinite(val)) {
		put(j, "null", 4);
		return;
	}
	n = snprintf(tmp, sizeof(tmp), "%.9g", val);
	put(j, tmp, (size_t)n);
}

void json_bool(struct json *j, const char *key, bool val)
{
	member(j, key);
	if (val)
		put(j, "true", 4);
	else
		put(j, "false", 5);
}

void json_null(struct json *j, const char *key)
{
	member(j, key);
	put(j, "null", 4);
}

static void open_(struct json *j, const char *key, char c)
{
	member(j, key);
	putc_(j, c);
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
}

static void close_(struct json *j, char c)
{
	putc_(j, c);
	if (j->depth > 0)
		j->depth--;
}

void json_obj_open(struct json *j, const char *key)
{
	open_(j, key, '{');
}

void json_obj_close(struct json *j)
{
	close_(j, '}');
}

void json_arr_open(struct json *j, const char *key)
{
	open_(j, key, '[');
}

void json_arr_close(struct json *j)
{
	close_(j, ']');
}

int json_emit(struct json *j)
{
	static const char oom[] =
		"{\"error\":\"out of memory building JSON\",\"errno\":12,"
		"\"errno_name\":\"ENOMEM\",\"path\":null}\n";
	const char *p;
	size_t left;
	ssize_t n;

	putc_(j, '}');
	putc_(j, '\n');
	if (j->oom) {
		p = oom;
		left = sizeof(oom) - 1;
	} else {
		p = j->buf;
		left = j->len;
	}
	while (left > 0) {
		n = write(STDOUT_FILENO, p, left);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		p += n;
		left -= (size_t)n;
	}
	free(j->buf);
	j->buf = NULL;
	j->len = j->cap = 0;
	return left ? -1 : 0;
}
