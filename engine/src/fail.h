/* SPDX-License-Identifier: MIT */
/*
 * fail.h - the first error of a run, reported as the engine's error object:
 *   {"error": "...", "errno": N, "errno_name": "ENOSPC", "path": "..."}
 */
#ifndef IOWALL_FAIL_H
#define IOWALL_FAIL_H

#include <limits.h>
#include <stdbool.h>

#include "json.h"

struct fail {
	bool set;
	int err;		/* errno; 0 for an error that is not a system call's */
	const char *op;		/* the call that failed, a static string */
	char msg[160];		/* for errors that are not a system call's */
	char path[PATH_MAX];
};

/* Record a failed system call on dir/name (name may be NULL). */
void fail_sys(struct fail *f, const char *op, int err, const char *dir,
	      const char *name);
/* Record an error that is not a system call's (errno 0, errno_name null). */
void fail_msg(struct fail *f, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Begin an error object with the four standard members; the caller may add more. */
void fail_json(struct json *j, const struct fail *f);
/*
 * Begin a mode's result object: the error members when first is set, then
 * "mode" and "status": ok, filled (ENOSPC, EDQUOT) or failed.
 */
void fail_result_begin(struct json *j, const struct fail *first, const char *mode);
/* Write a complete error object for f on stdout. */
void fail_emit(const struct fail *f);
/* "ENOSPC" for ENOSPC, or NULL. */
const char *errno_name(int err);

#endif
