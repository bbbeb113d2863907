// SPDX-License-Identifier: MIT
/*
 * smallfiles.c - the small-file stream: threads create files of --size bytes
 * through the page cache, each in its own tree D/tNNN/dNNNNNN/ (a new
 * directory every --files-per-dir files), for --seconds or until --files
 * exist, whichever comes first when both are given (a time capped by the
 * room the filesystem has), while the main thread samples a per-second
 * count series.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "fail.h"
#include "fileops.h"
#include "gate.h"
#include "json.h"
#include "modes.h"
#include "names.h"
#include "series.h"
#include "timing.h"

struct sf_run {
	const char *dir;
	unsigned threads;
	uint64_t size;
	uint64_t target_files;		/* --files, 0 without */
	double seconds;			/* --seconds, 0 without */
	bool fsync;
	uint64_t files_per_dir;
	int dfd;
	struct gate gate;
	atomic_int stop;
	atomic_int failed;
	unsigned running;		/* under done_lock */
	pthread_mutex_t done_lock;
	pthread_cond_t done_cv;
};

struct sf_thread {
	_Alignas(64) atomic_uint_fast64_t count;	/* read by the sampler */
	pthread_t tid;
	unsigned idx;
	struct sf_run *r;
	uint64_t quota;			/* with --files: this thread's share */
	uint64_t dirs;
	double end;
	char *wbuf;
	size_t wlen;
	struct fail fail;
	char path[PATH_MAX];
};

static int sf_stream(struct sf_thread *t, int rfd)
{
	struct sf_run *r = t->r;
	char dname[NAME_MAX_LEN];
	struct name_seq seq;
	uint64_t n = 0, in_dir = r->files_per_dir;
	size_t keep = strlen(t->path);
	int dfd = -1, rc = 0;

	name_seq_init(&seq, "f", 0, 7);
	for (;;) {
		if (atomic_load_explicit(&r->stop, memory_order_relaxed))
			break;
		if (r->target_files && n == t->quota)
			break;
		if (in_dir == r->files_per_dir) {
			if (dfd >= 0)
				close(dfd);
			t->path[keep] = '\0';
			name_fmt(dname, "d", t->dirs, 6);
			dfd = dir_make_open(rfd, dname, false, &t->fail, t->path);
			if (dfd < 0) {
				rc = -1;
				break;
			}
			snprintf(t->path + keep, sizeof(t->path) - keep, "/%s", dname);
			t->dirs++;
			in_dir = 0;
		}
		if (file_create(dfd, seq.buf, t->wbuf, t->wlen, r->size, r->fsync,
				&t->fail, t->path)) {
			rc = -1;
			break;
		}
		n++;
		in_dir++;
		name_seq_next(&seq);
		atomic_store_explicit(&t->count, n, memory_order_relaxed);
	}
	if (dfd >= 0)
		close(dfd);
	return rc;
}

static void *sf_worker(void *arg)
{
	struct sf_thread *t = arg;
	struct sf_run *r = t->r;
	char root[NAME_MAX_LEN];
	int rfd = -1;

	snprintf(t->path, sizeof(t->path), "%s", r->dir);
	name_thread_root(root, t->idx);
	if (r->size) {
		t->wbuf = file_pattern(r->size, &t->wlen);
		if (!t->wbuf)
			fail_sys(&t->fail, "malloc", ENOMEM, r->dir, NULL);
	}
	if (!t->fail.set)
		rfd = dir_make_open(r->dfd, root, true, &t->fail, t->path);
	if (rfd < 0)
		atomic_store(&r->failed, 1);
	else
		snprintf(t->path + strlen(t->path), sizeof(t->path) - strlen(t->path),
			 "/%s", root);
	gate_wait(&r->gate);
	if (rfd >= 0 && !atomic_load(&r->failed) && sf_stream(t, rfd)) {
		atomic_store(&r->failed, 1);
		atomic_store(&r->stop, 1);
	}
	t->end = now_s();
	if (rfd >= 0)
		close(rfd);
	pthread_mutex_lock(&r->done_lock);
	if (--r->running == 0)
		pthread_cond_signal(&r->done_cv);
	pthread_mutex_unlock(&r->done_lock);
	return NULL;
}

static uint64_t sf_total(const struct sf_thread *th, unsigned n)
{
	uint64_t sum = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		sum += atomic_load_explicit(&th[i].count, memory_order_relaxed);
	return sum;
}

/*
 * Sample the counters at every whole second after t0 until the threads are
 * done or --seconds have passed; per_second gets files per full second.
 */
static int sf_sample(struct sf_run *r, struct sf_thread *th, double t0,
		     struct series *ps, uint64_t *prev)
{
	double stop_at = r->seconds > 0 ? t0 + r->seconds : INFINITY;
	struct timespec ts;
	double until;
	uint64_t sum;

	pthread_mutex_lock(&r->done_lock);
	for (;;) {
		until = t0 + (double)(ps->n + 1);
		if (stop_at < until)
			until = stop_at;
		ts = ts_of(until);
		while (r->running > 0 && now_s() < until)
			pthread_cond_timedwait(&r->done_cv, &r->done_lock, &ts);
		if (r->running == 0)
			break;
		if (now_s() >= stop_at) {
			atomic_store(&r->stop, 1);
			break;
		}
		sum = sf_total(th, r->threads);
		if (series_push(ps, sum - *prev)) {
			pthread_mutex_unlock(&r->done_lock);
			return -1;
		}
		*prev = sum;
	}
	pthread_mutex_unlock(&r->done_lock);
	return 0;
}

static const char sf_usage[] =
	"smallfiles --dir D --threads T [--size BYTES] [--seconds S] [--files N] "
	"[--fsync none|close] [--files-per-dir N]";

int mode_smallfiles(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "threads", required_argument, NULL, 't' },
		{ "size", required_argument, NULL, 's' },
		{ "seconds", required_argument, NULL, 'S' },
		{ "files", required_argument, NULL, 'f' },
		{ "fsync", required_argument, NULL, 'y' },
		{ "files-per-dir", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct sf_run r = { .size = 4096, .files_per_dir = 10000, .dfd = -1 };
	const char *fsync_arg = "none";
	struct series ps = { 0 };
	struct sf_thread *th;
	struct cpu_usage c0, c1;
	pthread_condattr_t ca;
	const struct fail *first = NULL;
	struct fail f = { 0 };
	uint64_t files = 0, dirs = 0, prev = 0;
	double t0, wall = 0;
	struct json j;
	unsigned i;
	int c, rc;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			r.dir = optarg;
			break;
		case 't':
			r.threads = (unsigned)parse_u64("smallfiles", "--threads", optarg, 1, 4096);
			break;
		case 's':
			r.size = parse_u64("smallfiles", "--size", optarg, 0, 1ULL << 30);
			break;
		case 'S':
			r.seconds = parse_seconds("smallfiles", "--seconds", optarg);
			break;
		case 'f':
			r.target_files = parse_u64("smallfiles", "--files", optarg, 1, 1ULL << 40);
			break;
		case 'y':
			fsync_arg = optarg;
			break;
		case 'D':
			r.files_per_dir = parse_u64("smallfiles", "--files-per-dir", optarg, 1,
						    1ULL << 32);
			break;
		case 'h':
			printf("usage: iowall-engine %s\n", sf_usage);
			return 0;
		default:
			usage_bad_option("smallfiles", argc, argv);
		}
	}
	if (optind < argc)
		usage_fail("smallfiles", "unexpected argument '%s'", argv[optind]);
	if (!r.dir || !r.threads)
		usage_fail("smallfiles", "--dir and --threads are required (%s)", sf_usage);
	if (!(r.seconds > 0) && !r.target_files)
		usage_fail("smallfiles", "give --seconds, --files or both (%s)", sf_usage);
	if (!strcmp(fsync_arg, "close"))
		r.fsync = true;
	else if (strcmp(fsync_arg, "none"))
		usage_fail("smallfiles", "--fsync must be none or close, got '%s'", fsync_arg);
	if (strlen(r.dir) > PATH_MAX - 64)
		usage_fail("smallfiles", "--dir is too long");

	if (mkdir(r.dir, 0755) && errno != EEXIST) {
		fail_sys(&f, "mkdir", errno, r.dir, NULL);
		fail_emit(&f);
		return 1;
	}
	r.dfd = open(r.dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (r.dfd < 0) {
		fail_sys(&f, "open", errno, r.dir, NULL);
		fail_emit(&f);
		return 1;
	}
	th = aligned_alloc(64, r.threads * sizeof(*th));
	if (!th) {
		fail_sys(&f, "aligned_alloc", ENOMEM, r.dir, NULL);
		fail_emit(&f);
		return 1;
	}
	memset(th, 0, r.threads * sizeof(*th));
	gate_init(&r.gate, r.threads);
	pthread_mutex_init(&r.done_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r.done_cv, &ca);
	pthread_condattr_destroy(&ca);
	r.running = r.threads;
	for (i = 0; i < r.threads; i++) {
		th[i].idx = i;
		th[i].r = &r;
		if (r.target_files)
			th[i].quota = r.target_files / r.threads +
				      (i < r.target_files % r.threads ? 1 : 0);
		rc = pthread_create(&th[i].tid, NULL, sf_worker, &th[i]);
		if (rc) {
			fail_sys(&f, "pthread_create", rc, r.dir, NULL);
			fail_emit(&f);
			exit(1);
		}
	}
	gate_await(&r.gate);
	cpu_sample(&c0);
	t0 = gate_release(&r.gate);
	rc = sf_sample(&r, th, t0, &ps, &prev);
	for (i = 0; i < r.threads; i++)
		pthread_join(th[i].tid, NULL);
	cpu_sample(&c1);

	for (i = 0; i < r.threads; i++) {
		files += atomic_load(&th[i].count);
		dirs += th[i].dirs;
		if (th[i].end - t0 > wall)
			wall = th[i].end - t0;
		if (th[i].fail.set && !first)
			first = &th[i].fail;
	}
	if (rc || series_push(&ps, files - prev)) {
		fail_sys(&f, "realloc", ENOMEM, r.dir, NULL);
		first = &f;
	}

	fail_result_begin(&j, first, "smallfiles");
	json_str(&j, "dir", r.dir);
	json_u64(&j, "threads", r.threads);
	json_u64(&j, "size", r.size);
	json_str(&j, "fsync", r.fsync ? "close" : "none");
	json_u64(&j, "files_per_dir", r.files_per_dir);
	if (r.seconds > 0)
		json_f64(&j, "seconds", r.seconds);
	else
		json_null(&j, "seconds");
	if (r.target_files)
		json_u64(&j, "target_files", r.target_files);
	else
		json_null(&j, "target_files");
	json_u64(&j, "files", files);
	json_u64(&j, "bytes", files * r.size);
	json_u64(&j, "dirs", dirs);
	json_f64(&j, "wall_s", wall);
	json_f64(&j, "files_per_s", wall > 0 ? (double)files / wall : 0);
	json_f64(&j, "bytes_per_s", wall > 0 ? (double)(files * r.size) / wall : 0);
	json_f64(&j, "user_s", c1.user_s - c0.user_s);
	json_f64(&j, "sys_s", c1.sys_s - c0.sys_s);
	json_i64(&j, "peak_rss_kib", peak_rss_kib());
	json_arr_open(&j, "per_second");
	for (i = 0; i < ps.n; i++)
		json_u64(&j, NULL, ps.v[i]);
	json_arr_close(&j);
	json_f64(&j, "last_interval_s", wall - (double)(ps.n ? ps.n - 1 : 0));
	json_arr_open(&j, "per_thread");
	for (i = 0; i < r.threads; i++) {
		json_obj_open(&j, NULL);
		json_u64(&j, "files", atomic_load(&th[i].count));
		json_u64(&j, "dirs", th[i].dirs);
		json_f64(&j, "wall_s", th[i].end - t0);
		json_obj_close(&j);
	}
	json_arr_close(&j);
	json_emit(&j);

	for (i = 0; i < r.threads; i++)
		free(th[i].wbuf);
	free(th);
	series_free(&ps);
	gate_destroy(&r.gate);
	pthread_cond_destroy(&r.done_cv);
	pthread_mutex_destroy(&r.done_lock);
	close(r.dfd);
	return first ? 1 : 0;
}
