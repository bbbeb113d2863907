// SPDX-License-Identifier: MIT
/*
 * memcopy.c - the memory-copy ceiling: each thread copies its own B-byte
 * buffer into its own destination, P passes, threads released together.
 *
 * "movsb" is an inline "rep movsb", the instruction the kernel's
 * copy_to_user/copy_from_user use on CPUs with ERMS/FSRM; "memcpy" is
 * glibc's.  Bandwidth is counted as perf bench mem memcpy counts it: bytes
 * copied divided by seconds (not read + write).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "fail.h"
#include "gate.h"
#include "json.h"
#include "modes.h"
#include "timing.h"

#if defined(__x86_64__) || defined(__i386__)
#define HAVE_MOVSB 1
#else
#define HAVE_MOVSB 0
#endif

#define MC_MAX_PASSES 1000
#define MC_AUTO_PASS_BYTES (256ULL << 20)

enum { M_MOVSB, M_MEMCPY, M_COUNT };

static const char *const method_names[M_COUNT] = { "movsb", "memcpy" };

static void copy_movsb(void *dst, const void *src, size_t n)
{
#if HAVE_MOVSB
	__asm__ __volatile__("rep movsb"
			     : "+D"(dst), "+S"(src), "+c"(n)
			     :
			     : "memory");
#else
	memcpy(dst, src, n);
#endif
}

/* Through a volatile pointer: always glibc's ifunc-selected memcpy, never inlined. */
static void *(*volatile libc_memcpy)(void *, const void *, size_t) = memcpy;

static void copy_memcpy(void *dst, const void *src, size_t n)
{
	libc_memcpy(dst, src, n);
}

static void (*const copy_fn[M_COUNT])(void *, const void *, size_t) = {
	copy_movsb, copy_memcpy,
};

struct mc_run {
	unsigned threads;
	uint64_t bytes;
	uint64_t loops;
	unsigned passes;
	unsigned nslots;
	int slot_method[2 * MC_MAX_PASSES];
	bool measured[M_COUNT];
	struct gate gate;
	atomic_int failed;
};

struct mc_thread {
	pthread_t tid;
	struct mc_run *run;
	double *starts;		/* start time of each slot, stamped by the thread itself */
	double *ends;		/* end time of each slot */
	int err;
};

static void *mc_worker(void *arg)
{
	struct mc_thread *t = arg;
	struct mc_run *r = t->run;
	void *src = NULL, *dst = NULL;
	unsigned s;
	uint64_t l;
	int m;

	/* Allocated and touched by the thread that copies (first touch: local node). */
	if (posix_memalign(&src, 4096, r->bytes) ||
	    posix_memalign(&dst, 4096, r->bytes)) {
		t->err = ENOMEM;
		atomic_store(&r->failed, 1);
	} else {
		memset(src, 0x5a, r->bytes);
		memset(dst, 0, r->bytes);
		for (m = 0; m < M_COUNT; m++)
			if (r->measured[m])
				copy_fn[m](dst, src, r->bytes);
	}
	for (s = 0; s < r->nslots; s++) {
		gate_wait(&r->gate);
		if (atomic_load_explicit(&r->failed, memory_order_relaxed))
			continue;
		m = r->slot_method[s];
		t->starts[s] = now_s();
		for (l = 0; l < r->loops; l++)
			copy_fn[m](dst, src, r->bytes);
		t->ends[s] = now_s();
	}
	free(src);
	free(dst);
	return NULL;
}

struct mc_result {
	double best_pass_s;
	unsigned best_slot;
};

/*
 * A pass runs from the first thread's start to the last thread's end: the
 * wake-up after the gate is not copying (perf bench starts its clock in the
 * copying thread too), but a thread that starts late lengthens the pass.
 */
static double mc_pass_wall(const struct mc_run *r, const struct mc_thread *th,
			   unsigned s)
{
	double first = th[0].starts[s], last = th[0].ends[s];
	unsigned i;

	for (i = 1; i < r->threads; i++) {
		if (th[i].starts[s] < first)
			first = th[i].starts[s];
		if (th[i].ends[s] > last)
			last = th[i].ends[s];
	}
	return last - first;
}

static struct mc_result mc_best(const struct mc_run *r, const struct mc_thread *th,
				int m)
{
	struct mc_result res = { -1.0, 0 };
	unsigned s;

	for (s = 0; s < r->nslots; s++) {
		double wall;

		if (r->slot_method[s] != m)
			continue;
		wall = mc_pass_wall(r, th, s);
		if (res.best_pass_s < 0 || wall < res.best_pass_s) {
			res.best_pass_s = wall;
			res.best_slot = s;
		}
	}
	return res;
}

/* The members that describe one method's best pass. */
static void mc_json_method(struct json *j, const struct mc_run *r,
			   const struct mc_thread *th, int m, bool with_passes)
{
	struct mc_result res = mc_best(r, th, m);
	double per_pass = (double)r->bytes * (double)r->loops;
	unsigned s, i;

	json_f64(j, "best_pass_s", res.best_pass_s);
	json_f64(j, "total_bytes_per_s", per_pass * r->threads / res.best_pass_s);
	json_arr_open(j, "per_thread_bytes_per_s");
	for (i = 0; i < r->threads; i++)
		json_f64(j, NULL, per_pass / (th[i].ends[res.best_slot] -
					      th[i].starts[res.best_slot]));
	json_arr_close(j);
	if (!with_passes)
		return;
	json_arr_open(j, "pass_s");
	for (s = 0; s < r->nslots; s++)
		if (r->slot_method[s] == m)
			json_f64(j, NULL, mc_pass_wall(r, th, s));
	json_arr_close(j);
}

static const char memcopy_usage[] =
	"memcopy --threads N --bytes B [--passes P] [--loops L] [--method movsb|memcpy|best]";

int mode_memcopy(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "bytes", required_argument, NULL, 'b' },
		{ "passes", required_argument, NULL, 'p' },
		{ "loops", required_argument, NULL, 'l' },
		{ "method", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *method = "best";
	const char *note = NULL;
	struct mc_run *r;
	struct mc_thread *th;
	struct fail f = { 0 };
	struct json j;
	unsigned i, s;
	int c, m, best_m, rc = 0;
	double best;

	r = calloc(1, sizeof(*r));
	if (!r)
		return 1;
	r->passes = 5;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			r->threads = (unsigned)parse_u64("memcopy", "--threads", optarg, 1, 1024);
			break;
		case 'b':
			r->bytes = parse_u64("memcopy", "--bytes", optarg, 1, 1ULL << 40);
			break;
		case 'p':
			r->passes = (unsigned)parse_u64("memcopy", "--passes", optarg, 1,
							MC_MAX_PASSES);
			break;
		case 'l':
			r->loops = parse_u64("memcopy", "--loops", optarg, 1, 1000000000);
			break;
		case 'm':
			method = optarg;
			break;
		case 'h':
			printf("usage: iowall-engine %s\n", memcopy_usage);
			free(r);
			return 0;
		default:
			usage_bad_option("memcopy", argc, argv);
		}
	}
	if (optind < argc)
		usage_fail("memcopy", "unexpected argument '%s'", argv[optind]);
	if (!r->threads || !r->bytes)
		usage_fail("memcopy", "--threads and --bytes are required (%s)", memcopy_usage);
	if (!strcmp(method, "movsb")) {
		r->measured[M_MOVSB] = true;
	} else if (!strcmp(method, "memcpy")) {
		r->measured[M_MEMCPY] = true;
	} else if (!strcmp(method, "best")) {
		r->measured[M_MOVSB] = r->measured[M_MEMCPY] = true;
	} else {
		usage_fail("memcopy", "--method must be movsb, memcpy or best, got '%s'", method);
	}
	if (!HAVE_MOVSB && r->measured[M_MOVSB]) {
		r->measured[M_MOVSB] = false;
		r->measured[M_MEMCPY] = true;
		note = "rep movsb is x86-only: measured glibc memcpy instead";
	}
	if (!r->loops)
		r->loops = r->bytes >= MC_AUTO_PASS_BYTES ? 1 :
			   (MC_AUTO_PASS_BYTES + r->bytes - 1) / r->bytes;

	/* Passes of the measured methods interleaved: A B A B ... */
	for (s = 0; s < r->passes; s++)
		for (m = 0; m < M_COUNT; m++)
			if (r->measured[m])
				r->slot_method[r->nslots++] = m;

	th = calloc(r->threads, sizeof(*th));
	if (!th) {
		free(r);
		return 1;
	}
	gate_init(&r->gate, r->threads);
	for (i = 0; i < r->threads; i++) {
		th[i].run = r;
		th[i].starts = calloc(r->nslots, sizeof(double));
		th[i].ends = calloc(r->nslots, sizeof(double));
		if (!th[i].starts || !th[i].ends) {
			fail_sys(&f, "calloc", ENOMEM, "memcopy", NULL);
			fail_emit(&f);
			exit(1);
		}
		c = pthread_create(&th[i].tid, NULL, mc_worker, &th[i]);
		if (c) {
			fail_sys(&f, "pthread_create", c, "memcopy", NULL);
			fail_emit(&f);
			exit(1);
		}
	}
	for (s = 0; s < r->nslots; s++)
		gate_open(&r->gate);
	for (i = 0; i < r->threads; i++) {
		pthread_join(th[i].tid, NULL);
		if (th[i].err && !f.set)
			fail_sys(&f, "posix_memalign", th[i].err, "memcopy buffers", NULL);
	}
	gate_destroy(&r->gate);

	if (f.set) {
		fail_json(&j, &f);
		json_str(&j, "mode", "memcopy");
		json_u64(&j, "bytes_per_thread", r->bytes);
		json_u64(&j, "threads", r->threads);
		json_emit(&j);
		rc = 1;
		goto out;
	}

	best_m = -1;
	best = 0;
	for (m = 0; m < M_COUNT; m++) {
		double w;

		if (!r->measured[m])
			continue;
		w = mc_best(r, th, m).best_pass_s;
		if (best_m < 0 || w < best) {
			best = w;
			best_m = m;
		}
	}
	json_begin(&j);
	json_str(&j, "mode", "memcopy");
	json_u64(&j, "threads", r->threads);
	json_u64(&j, "bytes_per_thread", r->bytes);
	json_u64(&j, "loops", r->loops);
	json_u64(&j, "passes", r->passes);
	json_str(&j, "method", method);
	json_str(&j, "best_method", method_names[best_m]);
	json_bool(&j, "movsb_available", HAVE_MOVSB);
	if (note)
		json_str(&j, "note", note);
	json_str(&j, "units", "bytes copied per second (as perf bench mem memcpy)");
	mc_json_method(&j, r, th, best_m, false);
	json_obj_open(&j, "methods");
	for (m = 0; m < M_COUNT; m++) {
		if (!r->measured[m])
			continue;
		json_obj_open(&j, method_names[m]);
		mc_json_method(&j, r, th, m, true);
		json_obj_close(&j);
	}
	json_obj_close(&j);
	json_emit(&j);
out:
	for (i = 0; i < r->threads; i++) {
		free(th[i].starts);
		free(th[i].ends);
	}
	free(th);
	free(r);
	return rc;
}
