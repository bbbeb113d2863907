/* SPDX-License-Identifier: MIT */
/*
 * json.h - build one JSON object and write it to stdout as a single line.
 *
 * The object is built in a growing buffer (one allocation per object, never
 * per file) and written with one write(2), so that lines from different
 * objects never interleave.
 */
#ifndef IOWALL_JSON_H
#define IOWALL_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_DEPTH 8

struct json {
	char *buf;
	size_t len;
	size_t cap;
	int depth;
	bool first[JSON_MAX_DEPTH];
	bool oom;
};

/* Start a top-level object. */
void json_begin(struct json *j);
/* Inside an object pass a key; inside an array pass key == NULL. */
void json_str(struct json *j, const char *key, const char *val);
void json_u64(struct json *j, const char *key, uint64_t val);
void json_i64(struct json *j, const char *key, int64_t val);
void json_f64(struct json *j, const char *key, double val);
void json_bool(struct json *j, const char *key, bool val);
void json_null(struct json *j, const char *key);
void json_obj_open(struct json *j, const char *key);
void json_obj_close(struct json *j);
void json_arr_open(struct json *j, const char *key);
void json_arr_close(struct json *j);
/* Close the top-level object, write it and a newline to stdout, free it. */
int json_emit(struct json *j);

#endif
