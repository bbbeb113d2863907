// SPDX-License-Identifier: MIT
/*
 * fileops.c - create files and directories relative to a directory fd.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileops.h"

int file_create(int dfd, const char *name, const char *buf, size_t buflen,
		uint64_t size, bool do_fsync, struct fail *f, const char *dirpath)
{
	uint64_t left = size;
	ssize_t n;
	int fd;

	fd = openat(dfd, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0) {
		fail_sys(f, "openat", errno, dirpath, name);
		return -1;
	}
	while (left > 0) {
		size_t chunk = left < buflen ? (size_t)left : buflen;

		n = write(fd, buf, chunk);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			fail_sys(f, "write", errno, dirpath, name);
			close(fd);
			return -1;
		}
		left -= (uint64_t)n;
	}
	if (do_fsync && fsync(fd)) {
		fail_sys(f, "fsync", errno, dirpath, name);
		close(fd);
		return -1;
	}
	if (close(fd)) {
		fail_sys(f, "close", errno, dirpath, name);
		return -1;
	}
	return 0;
}

int dir_open(int dfd, const char *name, struct fail *f, const char *dirpath)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		fail_sys(f, "openat", errno, dirpath, name);
	return fd;
}

int dir_make_open(int dfd, const char *name, bool existing_ok, struct fail *f,
		  const char *dirpath)
{
	if (mkdirat(dfd, name, 0755) && !(existing_ok && errno == EEXIST)) {
		fail_sys(f, "mkdirat", errno, dirpath, name);
		return -1;
	}
	return dir_open(dfd, name, f, dirpath);
}

char *file_pattern(uint64_t size, size_t *len)
{
	char *buf;

	*len = size < FILE_BUF_MAX ? (size_t)size : FILE_BUF_MAX;
	if (!*len)
		return NULL;
	buf = malloc(*len);
	if (buf)
		memset(buf, 0x5a, *len);
	return buf;
}
