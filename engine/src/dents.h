/* SPDX-License-Identifier: MIT */
/*
 * dents.h - reading a directory with getdents64 into a caller's buffer.
 */
#ifndef IOWALL_DENTS_H
#define IOWALL_DENTS_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define DENTS_BUF_SIZE (64 * 1024)

struct dent {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* One getdents64 call: bytes read, 0 at the end, -1 with errno. */
ssize_t dents_read(int fd, void *buf, size_t size);
/* The entry at pos in a buffer that dents_read filled. */
static inline const struct dent *dent_at(const void *buf, size_t pos)
{
	return (const struct dent *)((const char *)buf + pos);
}
/* "." or "..". */
static inline bool dent_is_dot(const struct dent *d)
{
	return d->d_name[0] == '.' &&
	       (d->d_name[1] == '\0' ||
		(d->d_name[1] == '.' && d->d_name[2] == '\0'));
}

#endif
