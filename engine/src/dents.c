// SPDX-License-Identifier: MIT
/*
 * dents.c - getdents64 without libc's DIR (its buffer is allocated per opendir).
 */
#include <sys/syscall.h>
#include <unistd.h>

#include "dents.h"

ssize_t dents_read(int fd, void *buf, size_t size)
{
	return (ssize_t)syscall(SYS_getdents64, fd, buf, size);
}
