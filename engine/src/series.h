/* SPDX-License-Identifier: MIT */
/*
 * series.h - a growing array of per-second counts (it grows with time, not
 * with the number of files).
 */
#ifndef IOWALL_SERIES_H
#define IOWALL_SERIES_H

#include <stddef.h>
#include <stdint.h>

struct series {
	uint64_t *v;
	size_t n;
	size_t cap;
};

/* Append one value; -1 if out of memory. */
int series_push(struct series *s, uint64_t x);
void series_free(struct series *s);

#endif
