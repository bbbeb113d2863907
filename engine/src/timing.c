// SPDX-License-Identifier: MIT
/*
 * timing.c - the monotonic clock and the process's CPU accounting.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "timing.h"

double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

struct timespec ts_of(double t)
{
	struct timespec ts;

	ts.tv_sec = (time_t)t;
	ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

static double tv_s(const struct timeval *tv)
{
	return (double)tv->tv_sec + (double)tv->tv_usec * 1e-6;
}

void cpu_sample(struct cpu_usage *c)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	c->user_s = tv_s(&ru.ru_utime);
	c->sys_s = tv_s(&ru.ru_stime);
}

long peak_rss_kib(void)
{
	char buf[4096], *p;
	ssize_t n;
	int fd;

	fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, "\nVmHWM:");
	if (!p)
		return -1;
	return strtol(p + 7, NULL, 10);
}
