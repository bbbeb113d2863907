// SPDX-License-Identifier: MIT
/*
 * fail.c - recording and printing the engine's error object.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fail.h"

const char *errno_name(int err)
{
	if (err <= 0)
		return NULL;
	return strerrorname_np(err);
}

void fail_sys(struct fail *f, const char *op, int err, const char *dir,
	      const char *name)
{
	f->set = true;
	f->err = err;
	f->op = op;
	f->msg[0] = '\0';
	if (name && dir)
		snprintf(f->path, sizeof(f->path), "%s/%s", dir, name);
	else
		snprintf(f->path, sizeof(f->path), "%s", dir ? dir : (name ? name : ""));
}

void fail_msg(struct fail *f, const char *path, const char *fmt, ...)
{
	va_list ap;

	f->set = true;
	f->err = 0;
	f->op = NULL;
	va_start(ap, fmt);
	vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
	va_end(ap);
	snprintf(f->path, sizeof(f->path), "%s", path ? path : "");
}

void fail_json(struct json *j, const struct fail *f)
{
	char text[256];

	if (f->err)
		snprintf(text, sizeof(text), "%s: %s", f->op ? f->op : "error",
			 strerror(f->err));
	else
		snprintf(text, sizeof(text), "%s", f->msg);
	json_begin(j);
	json_str(j, "error", text);
	json_i64(j, "errno", f->err);
	json_str(j, "errno_name", errno_name(f->err));
	if (f->path[0])
		json_str(j, "path", f->path);
	else
		json_null(j, "path");
}

void fail_result_begin(struct json *j, const struct fail *first, const char *mode)
{
	if (first)
		fail_json(j, first);
	else
		json_begin(j);
	json_str(j, "mode", mode);
	if (!first)
		json_str(j, "status", "ok");
	else if (first->err == ENOSPC || first->err == EDQUOT)
		json_str(j, "status", "filled");
	else
		json_str(j, "status", "failed");
}

void fail_emit(const struct fail *f)
{
	struct json j;

	fail_json(&j, f);
	json_emit(&j);
}
