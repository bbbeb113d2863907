/* SPDX-License-Identifier: MIT */
/*
 * args.h - command-line helpers: numbers with binary suffixes and the one-line
 * usage error (stderr, exit status 2).
 */
#ifndef IOWALL_ARGS_H
#define IOWALL_ARGS_H

#include <stdint.h>

#define EXIT_USAGE 2

/* Print "iowall-engine <mode>: <message>" on stderr and exit 2. */
void usage_fail(const char *mode, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
/*
 * Parse a non-negative integer with an optional binary suffix
 * (k, K, KiB, m, M, MiB, g, G, GiB, t, T, TiB: powers of 1024);
 * out of [min, max] or malformed is a usage error for option opt.
 */
uint64_t parse_u64(const char *mode, const char *opt, const char *s,
		   uint64_t min, uint64_t max);
/* Parse a positive number of seconds. */
double parse_seconds(const char *mode, const char *opt, const char *s);
/* getopt_long's error for argv element optind-1 / optopt, as a usage error. */
void usage_bad_option(const char *mode, int argc, char **argv)
	__attribute__((noreturn));

#endif
