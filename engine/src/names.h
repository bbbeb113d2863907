/* SPDX-License-Identifier: MIT */
/*
 * names.h - the engine's naming scheme, used only to create entries: the
 * phases that read a tree find names with getdents64.
 *
 *   meta       D/tNNN/dMMM/fNNNNNNN      (--shared-dir: D/shared/tNNN-fNNNNNNN)
 *   smallfiles D/tNNN/dNNNNNN/fNNNNNNN
 */
#ifndef IOWALL_NAMES_H
#define IOWALL_NAMES_H

#include <stddef.h>
#include <stdint.h>

#define NAME_MAX_LEN 64

/* prefix, then n in decimal zero-padded to at least width digits; returns the length. */
size_t name_fmt(char *out, const char *prefix, uint64_t n, int width);
/* The root of thread t: "t007". */
void name_thread_root(char *out, unsigned t);

/* Incrementing decimal name without a printf per file. */
struct name_seq {
	char buf[NAME_MAX_LEN];
	size_t plen;	/* length of the fixed prefix */
	size_t len;	/* current length */
};

void name_seq_init(struct name_seq *s, const char *prefix, uint64_t first, int width);
void name_seq_next(struct name_seq *s);

#endif
