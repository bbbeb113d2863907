// SPDX-License-Identifier: MIT
/*
 * args.c - command-line helpers shared by the modes.
 */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"

void usage_fail(const char *mode, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "iowall-engine %s: ", mode);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_USAGE);
}

void usage_bad_option(const char *mode, int argc, char **argv)
{
	int i = optind - 1;
	const char *arg = (i >= 1 && i < argc) ? argv[i] : "?";

	usage_fail(mode, "unknown option or missing value at '%s' (see iowall-engine --help)",
		   arg);
}

static int suffix_shift(const char *s)
{
	char c = (char)toupper((unsigned char)s[0]);
	int shift;

	switch (c) {
	case '\0':
		return 0;
	case 'K':
		shift = 10;
		break;
	case 'M':
		shift = 20;
		break;
	case 'G':
		shift = 30;
		break;
	case 'T':
		shift = 40;
		break;
	default:
		return -1;
	}
	s++;
	if (*s == '\0' || strcmp(s, "iB") == 0 || strcmp(s, "ib") == 0 ||
	    strcmp(s, "B") == 0)
		return shift;
	return -1;
}

uint64_t parse_u64(const char *mode, const char *opt, const char *s,
		   uint64_t min, uint64_t max)
{
	unsigned long long v;
	char *end;
	int shift;

	if (!s || !isdigit((unsigned char)s[0]))
		usage_fail(mode, "%s wants a number, got '%s'", opt, s ? s : "");
	errno = 0;
	v = strtoull(s, &end, 10);
	shift = suffix_shift(end);
	if (errno || shift < 0)
		usage_fail(mode, "%s wants a number (suffixes K, M, G, T = 1024^n), got '%s'",
			   opt, s);
	if (shift && v > (UINT64_MAX >> shift))
		usage_fail(mode, "%s is too large: '%s'", opt, s);
	v <<= shift;
	if (v < min || v > max)
		usage_fail(mode, "%s must be between %llu and %llu, got '%s'", opt,
			   (unsigned long long)min, (unsigned long long)max, s);
	return v;
}

double parse_seconds(const char *mode, const char *opt, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v <= 0 || v > 1e7)
		usage_fail(mode, "%s wants a positive number of seconds, got '%s'",
			   opt, s);
	return v;
}
