/* SPDX-License-Identifier: MIT */
/*
 * fileops.h - the per-entry system calls of create-type work, relative to a
 * directory fd, with failures recorded as the engine's error.
 */
#ifndef IOWALL_FILEOPS_H
#define IOWALL_FILEOPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fail.h"

#define FILE_BUF_MAX (1U << 20)

/*
 * openat(O_CREAT|O_EXCL|O_WRONLY), write size bytes (buf of buflen bytes,
 * reused), fsync if asked, close.  0, or -1 with f filled (dirpath/name).
 */
int file_create(int dfd, const char *name, const char *buf, size_t buflen,
		uint64_t size, bool do_fsync, struct fail *f, const char *dirpath);
/* mkdirat (EEXIST accepted if existing_ok) then open it: the fd, or -1 with f filled. */
int dir_make_open(int dfd, const char *name, bool existing_ok, struct fail *f,
		  const char *dirpath);
/* Open an existing directory: the fd, or -1 with f filled. */
int dir_open(int dfd, const char *name, struct fail *f, const char *dirpath);
/* A buffer of min(size, FILE_BUF_MAX) pattern bytes (NULL, len 0 for size 0). */
char *file_pattern(uint64_t size, size_t *len);

#endif
