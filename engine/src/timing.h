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
};

/* CLOCK_MONOTONIC in seconds. */
double now_s(void);
/* getrusage(RUSAGE_SELF): user and system CPU of all threads. */
void cpu_sample(struct cpu_usage *c);
/*
 * Peak RSS of this process's own memory in KiB (VmHWM).  Not ru_maxrss: that
 * one keeps the RSS of whatever called execve (a Python parent, say).
 */
long peak_rss_kib(void);
/* A CLOCK_MONOTONIC timespec for t seconds. */
struct timespec ts_of(double t);

#endif
