/* SPDX-License-Identifier: MIT */
/*
 * meta.h - the metadata phases (create, walk, chmod, unlink) shared between
 * the orchestration (meta.c) and the per-thread work (meta_ops.c).
 */
#ifndef IOWALL_META_H
#define IOWALL_META_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "fail.h"
#include "gate.h"

#define META_MAX_DEPTH 16
#define META_SHARED_ROOT "shared"
#define META_FILES_PER_DIR_DEFAULT 10000

enum meta_phase { PH_CREATE, PH_WALK, PH_CHMOD, PH_UNLINK, PH_COUNT };

extern const char *const meta_phase_names[PH_COUNT];

struct meta {
	/* the request */
	const char *dir;
	unsigned threads;
	uint64_t files_per_thread;
	unsigned dirs_per_thread;
	bool shared;
	uint64_t size;
	mode_t chmod_mode;
	/* the run */
	enum meta_phase phase;
	int dfd;			/* D */
	int shared_fd;			/* D/shared, --shared-dir only */
	pthread_mutex_t shared_lock;	/* one getdents64 at a time on shared_fd */
	bool shared_eof;
	atomic_uint active;		/* threads still in the phase */
	atomic_int abort;		/* a thread failed: the others stop */
	struct gate gate;
};

struct meta_thread {
	pthread_t tid;
	unsigned idx;
	struct meta *m;
	uint64_t files;			/* non-directories handled */
	uint64_t dirs;			/* directories below the thread root */
	uint64_t bytes;			/* walk: sum of st_size */
	double end;
	char *levels[META_MAX_DEPTH];	/* a getdents64 buffer per depth */
	char *wbuf;			/* create: the data written */
	size_t wlen;
	struct fail fail;
	char path[PATH_MAX];		/* the directory being worked on */
};

/* Allocate what the phase needs before the start gate; -1 with t->fail set. */
int meta_thread_prepare(struct meta_thread *t);
void meta_thread_release(struct meta_thread *t);
/* The phase's work for one thread, after the gate. */
void meta_thread_run(struct meta_thread *t);

#endif
