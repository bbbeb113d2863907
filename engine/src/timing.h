/* SPDX-License-Identifier: MIT */
/*
 * timing.h - the monotonic clock and the process's CPU accounting.
 */
#ifndef IOWALL_TIMING_H
#define IOWALL_TIMING_H

#include <time.h>

struct cpu_usage {
	double user_s;
	double sys_s;
	long maxrss_kib;
};

/* CLOCK_MONOTONIC in seconds. */
double now_s(void);
/* getrusage(RUSAGE_SELF): user and system CPU of all threads, peak RSS. */
void cpu_sample(struct cpu_usage *c);
/* A CLOCK_MONOTONIC timespec for t seconds. */
struct timespec ts_of(double t);

#endif
