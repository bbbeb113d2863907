// SPDX-License-Identifier: MIT
/*
 * stream.c - sequential read or write of a set of files, one thread per job,
 * each job going round-robin over its own files one block at a time (fio's
 * default file_service_type), buffered, uncached (RWF_DONTCACHE) or direct.
 * It exists because a fio whose uncached=1 passes the old flag 0x40 (read as
 * RWF_ATOMIC by kernels >= 6.11) cannot generate the uncached stream.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "args.h"
#include "fail.h"
#include "gate.h"
#include "json.h"
#include "modes.h"
#include "series.h"
#include "timing.h"

#ifndef RWF_DONTCACHE
#define RWF_DONTCACHE 0x00000080
#endif

#define ST_MAX_JOBS 4096
#define ST_ALIGN 4096

enum st_mode { ST_BUFFERED, ST_UNCACHED, ST_DIRECT };

static const char *const st_mode_names[] = { "buffered", "uncached", "direct" };

struct st_file {
	char *path;
	int fd;
	uint64_t off;
};

struct st_run {
	bool write;
	enum st_mode mode;
	uint64_t bs;
	uint64_t file_size;
	bool end_fsync;
	uint64_t buf_offset;		/* --buf-offset: the buffer starts this far past a page */
	double runtime_s;		/* --runtime-ms: 0 for one pass over the files */
	unsigned jobs;
	struct gate gate;
	atomic_int stop;
	unsigned running;		/* under done_lock */
	pthread_mutex_t done_lock;
	pthread_cond_t done_cv;
};

/* The bandwidth log: three parallel series, one entry per interval. */
struct st_log {
	double ms;			/* --log-ms, 0 for none */
	double t0;
	double prev_t;
	uint64_t prev_sum;
	struct series stamps;		/* CLOCK_REALTIME ms at the interval's end */
	struct series bytes;		/* bytes completed in the interval */
	struct series ns;		/* the interval's length (monotonic) */
};

struct st_job {
	_Alignas(64) atomic_uint_fast64_t bytes;	/* read by the sampler */
	pthread_t tid;
	struct st_run *r;
	struct st_file *files;
	unsigned nfiles;
	unsigned cap;
	uint64_t ios;
	uint64_t fsyncs;		/* --end-fsync: one a file at the end of each pass */
	double end;
	char *buf;
	struct fail fail;
};

static int st_open(struct st_job *jb)
{
	const struct st_run *r = jb->r;
	int flags = O_CLOEXEC;
	unsigned i;

	flags |= r->write ? O_WRONLY | O_CREAT | O_TRUNC : O_RDONLY;
	if (r->mode == ST_DIRECT)
		flags |= O_DIRECT;
	for (i = 0; i < jb->nfiles; i++) {
		jb->files[i].fd = open(jb->files[i].path, flags, 0644);
		if (jb->files[i].fd < 0) {
			fail_sys(&jb->fail, "open", errno, jb->files[i].path, NULL);
			return -1;
		}
	}
	return 0;
}

/* One block of file f at its offset; 1 when the file is done, 0, or -1. */
static int st_one(struct st_job *jb, struct st_file *f, int rwf)
{
	const struct st_run *r = jb->r;
	uint64_t left = r->file_size - f->off;
	struct iovec iov = { .iov_base = jb->buf + r->buf_offset };
	ssize_t n;

	iov.iov_len = left < r->bs ? (size_t)left : (size_t)r->bs;
	do {
		if (r->write)
			n = pwritev2(f->fd, &iov, 1, (off_t)f->off, rwf);
		else
			n = preadv2(f->fd, &iov, 1, (off_t)f->off, rwf);
	} while (n < 0 && errno == EINTR);
	if (n < 0) {
		fail_sys(&jb->fail, r->write ? "pwritev2" : "preadv2", errno, f->path, NULL);
		return -1;
	}
	if (n == 0) {
		fail_msg(&jb->fail, f->path, "file ends at %llu bytes, before --file-size %llu",
			 (unsigned long long)f->off, (unsigned long long)r->file_size);
		return -1;
	}
	f->off += (uint64_t)n;
	jb->ios++;
	atomic_fetch_add_explicit(&jb->bytes, (uint64_t)n, memory_order_relaxed);
	return f->off == r->file_size;
}

/*
 * A new pass over the job's files: offsets back to 0 and, for a buffered or
 * uncached read, the files' cached pages dropped first (fio's invalidate=1), so
 * that every pass reads from the device as the first did. A write pass
 * overwrites the pages the last one left (iowall runs fio's time-based writes
 * with invalidate=0): dropping them would make every writer write back
 * synchronously in fadvise, a cost of the loop and not of buffered writing.
 */
static void st_rewind(struct st_job *jb)
{
	const struct st_run *r = jb->r;
	unsigned i;

	for (i = 0; i < jb->nfiles; i++) {
		jb->files[i].off = 0;
		if (!r->write && r->mode != ST_DIRECT)
			posix_fadvise(jb->files[i].fd, 0, 0, POSIX_FADV_DONTNEED);
	}
}

/* With --end-fsync, fsync every file of the job: 0, or -1 with the failure set. */
static int st_sync(struct st_job *jb)
{
	unsigned i;

	for (i = 0; jb->r->end_fsync && i < jb->nfiles; i++) {
		if (fsync(jb->files[i].fd)) {
			fail_sys(&jb->fail, "fsync", errno, jb->files[i].path, NULL);
			return -1;
		}
		jb->fsyncs++;
	}
	return 0;
}

/*
 * Round-robin over the job's files, one block each, until all are done; with
 * --runtime-ms, pass after pass until the time is up (fio's time_based: the
 * last pass stops where the time ends, mid-file). --end-fsync syncs the files
 * at the end of every pass, as fio's end_fsync does in a time_based job (fio
 * 3.33 fsyncs each file once per pass): otherwise a later pass re-dirties
 * pages still in the page cache and the point measures less writeback.
 */
static int st_stream(struct st_job *jb)
{
	struct st_run *r = jb->r;
	int rwf = r->mode == ST_UNCACHED ? RWF_DONTCACHE : 0;
	double deadline = r->runtime_s > 0 ? now_s() + r->runtime_s : 0;
	unsigned i, left;
	int rc;

	for (;;) {
		left = 0;
		for (i = 0; i < jb->nfiles; i++)
			if (jb->files[i].off < r->file_size)
				left++;
		while (left > 0) {
			for (i = 0; i < jb->nfiles; i++) {
				if (jb->files[i].off >= r->file_size)
					continue;
				if (atomic_load_explicit(&r->stop, memory_order_relaxed))
					return 0;
				rc = st_one(jb, &jb->files[i], rwf);
				if (rc < 0)
					return -1;
				left -= (unsigned)rc;
				if (deadline > 0 && now_s() >= deadline)
					goto synced;
			}
		}
		if (deadline <= 0 || now_s() >= deadline)
			break;
		if (st_sync(jb))
			return -1;
		st_rewind(jb);
	}
synced:
	return st_sync(jb);
}

static void *st_worker(void *arg)
{
	struct st_job *jb = arg;
	struct st_run *r = jb->r;
	size_t size;
	bool ok;

	/* page-aligned unless --buf-offset moves its start (the copy's rate depends on it) */
	size = (r->bs + r->buf_offset + ST_ALIGN - 1) / ST_ALIGN * ST_ALIGN;
	jb->buf = aligned_alloc(ST_ALIGN, size);
	if (!jb->buf)
		fail_sys(&jb->fail, "aligned_alloc", ENOMEM, jb->files[0].path, NULL);
	else
		memset(jb->buf, 0xa5, r->bs + r->buf_offset);
	ok = jb->buf && !st_open(jb);
	if (!ok)
		atomic_store(&r->stop, 1);
	gate_wait(&r->gate);
	if (ok && !atomic_load(&r->stop) && st_stream(jb))
		atomic_store(&r->stop, 1);
	jb->end = now_s();
	pthread_mutex_lock(&r->done_lock);
	if (--r->running == 0)
		pthread_cond_signal(&r->done_cv);
	pthread_mutex_unlock(&r->done_lock);
	return NULL;
}

static int st_add(struct st_job *jb, char *path)
{
	struct st_file *nf;

	if (jb->nfiles == jb->cap) {
		jb->cap = jb->cap ? jb->cap * 2 : 16;
		nf = realloc(jb->files, jb->cap * sizeof(*nf));
		if (!nf)
			return -1;
		jb->files = nf;
	}
	nf = &jb->files[jb->nfiles++];
	nf->path = path;
	nf->fd = -1;
	nf->off = 0;
	return 0;
}

struct st_entry {
	unsigned job;
	char *path;
};

/* Parse one line of LIST into e (0), or 1 for a blank or comment line. */
static int st_parse(const char *list, unsigned long lineno, char *line, struct st_entry *e)
{
	unsigned long job;
	char *p, *end;

	line[strcspn(line, "\n")] = '\0';
	p = line + strspn(line, " \t");
	if (!*p || *p == '#')
		return 1;
	errno = 0;
	job = strtoul(p, &end, 10);
	if (end == p || errno || job >= ST_MAX_JOBS || (*end != ' ' && *end != '\t'))
		usage_fail("stream", "%s:%lu: want 'JOB PATH' with JOB < %d, got '%s'",
			   list, lineno, ST_MAX_JOBS, line);
	end += strspn(end, " \t");
	if (!*end || strlen(end) >= PATH_MAX)
		usage_fail("stream", "%s:%lu: missing or overlong PATH", list, lineno);
	e->job = (unsigned)job;
	e->path = strdup(end);
	return e->path ? 0 : -1;
}

/*
 * Read LIST ("JOB PATH" per line; blank lines and '#' comments skipped) into
 * *jobsp, *njobs.  Malformed lines are usage errors; an unreadable LIST or
 * no memory fills f.
 */
static int st_load(const char *list, struct st_job **jobsp, unsigned *njobs,
		   struct fail *f)
{
	struct st_entry *ents = NULL, *ne;
	struct st_job *jobs = NULL;
	size_t cap = 0, n = 0, ecap = 0, i;
	unsigned long lineno = 0;
	unsigned nj = 0;
	char *line = NULL;
	FILE *fp;
	int rc;

	fp = fopen(list, "re");
	if (!fp) {
		fail_sys(f, "open", errno, list, NULL);
		return -1;
	}
	while (getline(&line, &cap, fp) > 0) {
		if (n == ecap) {
			ecap = ecap ? ecap * 2 : 64;
			ne = realloc(ents, ecap * sizeof(*ne));
			if (!ne)
				break;
			ents = ne;
		}
		rc = st_parse(list, ++lineno, line, &ents[n]);
		if (rc < 0)
			break;
		if (rc == 0 && ents[n++].job + 1 > nj)
			nj = ents[n - 1].job + 1;
	}
	if (!feof(fp))
		fail_sys(f, "read", errno ? errno : ENOMEM, list, NULL);
	free(line);
	fclose(fp);
	if (!f->set && !nj)
		usage_fail("stream", "%s lists no files", list);
	if (!f->set) {
		jobs = aligned_alloc(64, nj * sizeof(*jobs));
		if (!jobs)
			fail_sys(f, "aligned_alloc", ENOMEM, list, NULL);
		else
			memset(jobs, 0, nj * sizeof(*jobs));
	}
	for (i = 0; i < n; i++) {
		if (!f->set && st_add(&jobs[ents[i].job], ents[i].path))
			fail_sys(f, "realloc", ENOMEM, list, NULL);
		if (f->set)
			free(ents[i].path);
	}
	free(ents);
	*jobsp = jobs;
	*njobs = jobs ? nj : 0;
	if (f->set)
		return -1;
	for (i = 0; i < nj; i++)
		if (!jobs[i].nfiles)
			usage_fail("stream", "%s: job %zu has no files (jobs are 0..%u)", list,
				   i, nj - 1);
	return 0;
}

static double unix_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static uint64_t st_total(struct st_job *jobs, unsigned n)
{
	uint64_t sum = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		sum += atomic_load_explicit(&jobs[i].bytes, memory_order_relaxed);
	return sum;
}

/* Push one log entry: CLOCK_REALTIME ms now, bytes since the last, its length in ns. */
static int st_log(struct st_log *lg, uint64_t sum, double t)
{
	if (series_push(&lg->stamps, (uint64_t)unix_ms()) ||
	    series_push(&lg->bytes, sum - lg->prev_sum) ||
	    series_push(&lg->ns, (uint64_t)((t - lg->prev_t) * 1e9)))
		return -1;
	lg->prev_sum = sum;
	lg->prev_t = t;
	return 0;
}

/* Until the jobs are done, a log entry every log_ms after t0 (monotonic grid). */
static int st_sample(struct st_run *r, struct st_job *jobs, struct st_log *lg)
{
	struct timespec ts;
	double until;
	int rc = 0;

	pthread_mutex_lock(&r->done_lock);
	while (r->running > 0) {
		until = lg->t0 + (double)(lg->bytes.n + 1) * lg->ms / 1e3;
		ts = ts_of(until);
		while (r->running > 0 && now_s() < until)
			pthread_cond_timedwait(&r->done_cv, &r->done_lock, &ts);
		if (r->running == 0)
			break;
		if (st_log(lg, st_total(jobs, r->jobs), now_s())) {
			rc = -1;
			break;
		}
	}
	pthread_mutex_unlock(&r->done_lock);
	return rc;
}

static void st_wait(struct st_run *r)
{
	pthread_mutex_lock(&r->done_lock);
	while (r->running > 0)
		pthread_cond_wait(&r->done_cv, &r->done_lock);
	pthread_mutex_unlock(&r->done_lock);
}

static void st_report(struct st_run *r, struct st_job *jobs, const struct fail *first,
		      double start_ms, const struct cpu_usage *cpu, const struct st_log *lg)
{
	uint64_t total = 0, ios = 0, fsyncs = 0;
	double t0 = lg->t0, wall = 0;
	struct json j;
	unsigned i, nfiles = 0;

	for (i = 0; i < r->jobs; i++) {
		total += atomic_load(&jobs[i].bytes);
		ios += jobs[i].ios;
		fsyncs += jobs[i].fsyncs;
		nfiles += jobs[i].nfiles;
		if (jobs[i].end - t0 > wall)
			wall = jobs[i].end - t0;
	}
	fail_result_begin(&j, first, "stream");
	json_str(&j, "rw", r->write ? "write" : "read");
	json_str(&j, "io_mode", st_mode_names[r->mode]);
	json_u64(&j, "rwf_flags", r->mode == ST_UNCACHED ? RWF_DONTCACHE : 0);
	json_u64(&j, "bs", r->bs);
	json_u64(&j, "file_size", r->file_size);
	json_bool(&j, "end_fsync", r->end_fsync);
	json_u64(&j, "buf_offset", r->buf_offset);
	json_f64(&j, "runtime_limit_s", r->runtime_s);
	json_u64(&j, "jobs", r->jobs);
	json_u64(&j, "files", nfiles);
	json_u64(&j, "bytes", total);
	json_u64(&j, "ios", ios);
	json_u64(&j, "fsyncs", fsyncs);
	json_f64(&j, "runtime_s", wall);
	json_f64(&j, "bytes_per_s", wall > 0 ? (double)total / wall : 0);
	json_f64(&j, "iops", wall > 0 ? (double)ios / wall : 0);
	json_f64(&j, "user_s", cpu[1].user_s - cpu[0].user_s);
	json_f64(&j, "sys_s", cpu[1].sys_s - cpu[0].sys_s);
	json_u64(&j, "start_unix_ms", (uint64_t)start_ms);
	json_arr_open(&j, "per_job");
	for (i = 0; i < r->jobs; i++) {
		json_obj_open(&j, NULL);
		json_u64(&j, "files", jobs[i].nfiles);
		json_u64(&j, "bytes", atomic_load(&jobs[i].bytes));
		json_u64(&j, "ios", jobs[i].ios);
		json_f64(&j, "runtime_s", jobs[i].end - t0);
		json_obj_close(&j);
	}
	json_arr_close(&j);
	if (lg->ms > 0) {
		json_f64(&j, "log_ms", lg->ms);
		json_arr_open(&j, "log");
		for (i = 0; i < lg->bytes.n; i++) {
			json_arr_open(&j, NULL);
			json_u64(&j, NULL, lg->stamps.v[i]);
			json_u64(&j, NULL, lg->bytes.v[i]);
			json_u64(&j, NULL, lg->ns.v[i]);
			json_arr_close(&j);
		}
		json_arr_close(&j);
	} else {
		json_null(&j, "log_ms");
		json_null(&j, "log");
	}
	json_emit(&j);
}

static const char st_usage[] =
	"stream --rw read|write --mode buffered|uncached|direct --bs B --file-size B "
	"--files-from LIST [--end-fsync] [--log-ms MS] [--runtime-ms MS] [--buf-offset B]";

static void st_args(int argc, char **argv, struct st_run *r, const char **list,
		    double *log_ms)
{
	static const struct option opts[] = {
		{ "rw", required_argument, NULL, 'r' },
		{ "mode", required_argument, NULL, 'm' },
		{ "bs", required_argument, NULL, 'b' },
		{ "file-size", required_argument, NULL, 's' },
		{ "files-from", required_argument, NULL, 'f' },
		{ "end-fsync", no_argument, NULL, 'y' },
		{ "log-ms", required_argument, NULL, 'l' },
		{ "runtime-ms", required_argument, NULL, 't' },
		{ "buf-offset", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *rw = NULL, *mode = NULL;
	unsigned i;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'r':
			rw = optarg;
			break;
		case 'm':
			mode = optarg;
			break;
		case 'b':
			r->bs = parse_u64("stream", "--bs", optarg, 1, 1ULL << 30);
			break;
		case 's':
			r->file_size = parse_u64("stream", "--file-size", optarg, 1, 1ULL << 50);
			break;
		case 'f':
			*list = optarg;
			break;
		case 'y':
			r->end_fsync = true;
			break;
		case 'l':
			*log_ms = (double)parse_u64("stream", "--log-ms", optarg, 1, 3600000);
			break;
		case 't':
			r->runtime_s = (double)parse_u64("stream", "--runtime-ms", optarg, 1,
							 86400000) / 1e3;
			break;
		case 'o':
			r->buf_offset = parse_u64("stream", "--buf-offset", optarg, 0, ST_ALIGN - 1);
			break;
		case 'h':
			printf("usage: iowall-engine %s\n", st_usage);
			exit(0);
		default:
			usage_bad_option("stream", argc, argv);
		}
	}
	if (optind < argc)
		usage_fail("stream", "unexpected argument '%s'", argv[optind]);
	if (!rw || !mode || !r->bs || !r->file_size || !*list)
		usage_fail("stream", "--rw, --mode, --bs, --file-size and --files-from are "
			   "required (%s)", st_usage);
	if (strcmp(rw, "read") && strcmp(rw, "write"))
		usage_fail("stream", "--rw must be read or write, got '%s'", rw);
	r->write = !strcmp(rw, "write");
	for (i = 0; i < 3 && strcmp(mode, st_mode_names[i]); i++)
		;
	if (i == 3)
		usage_fail("stream", "--mode must be buffered, uncached or direct, got '%s'", mode);
	r->mode = (enum st_mode)i;
	if (r->mode == ST_DIRECT && (r->bs % ST_ALIGN || r->file_size % ST_ALIGN))
		usage_fail("stream", "--mode direct wants --bs and --file-size in multiples of %d",
			   ST_ALIGN);
	if (r->mode == ST_DIRECT && r->buf_offset)
		usage_fail("stream", "--mode direct wants an aligned buffer: no --buf-offset");
}

int mode_stream(int argc, char **argv)
{
	struct st_run r = { 0 };
	struct st_log lg = { 0 };
	struct st_job *jobs = NULL;
	struct cpu_usage cpu[2];
	pthread_condattr_t ca;
	const struct fail *first = NULL;
	struct fail f = { 0 };
	const char *list = NULL;
	double start_ms, last = 0;
	unsigned i, k;
	int rc = 0;

	st_args(argc, argv, &r, &list, &lg.ms);
	if (st_load(list, &jobs, &r.jobs, &f)) {
		fail_emit(&f);
		rc = 1;
		goto out;
	}
	gate_init(&r.gate, r.jobs);
	pthread_mutex_init(&r.done_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r.done_cv, &ca);
	pthread_condattr_destroy(&ca);
	r.running = r.jobs;
	for (i = 0; i < r.jobs; i++) {
		jobs[i].r = &r;
		rc = pthread_create(&jobs[i].tid, NULL, st_worker, &jobs[i]);
		if (rc) {
			fail_sys(&f, "pthread_create", rc, list, NULL);
			fail_emit(&f);
			exit(1);
		}
	}
	gate_await(&r.gate);
	cpu_sample(&cpu[0]);
	lg.t0 = lg.prev_t = gate_release(&r.gate);
	start_ms = unix_ms();
	if (lg.ms > 0)
		rc = st_sample(&r, jobs, &lg);
	st_wait(&r);
	for (i = 0; i < r.jobs; i++)
		pthread_join(jobs[i].tid, NULL);
	cpu_sample(&cpu[1]);
	for (i = 0; i < r.jobs; i++)
		if (jobs[i].end > last)
			last = jobs[i].end;
	if (lg.ms > 0 && (rc || st_log(&lg, st_total(jobs, r.jobs), last))) {
		fail_sys(&f, "realloc", ENOMEM, list, NULL);
		first = &f;
	}
	for (i = 0; i < r.jobs && !first; i++)
		if (jobs[i].fail.set)
			first = &jobs[i].fail;
	st_report(&r, jobs, first, start_ms, cpu, &lg);
	rc = first ? 1 : 0;
	gate_destroy(&r.gate);
	pthread_cond_destroy(&r.done_cv);
	pthread_mutex_destroy(&r.done_lock);
out:
	for (i = 0; jobs && i < r.jobs; i++) {
		for (k = 0; k < jobs[i].nfiles; k++) {
			if (jobs[i].files[k].fd >= 0)
				close(jobs[i].files[k].fd);
			free(jobs[i].files[k].path);
		}
		free(jobs[i].files);
		free(jobs[i].buf);
	}
	free(jobs);
	series_free(&lg.stamps);
	series_free(&lg.bytes);
	series_free(&lg.ns);
	return rc;
}
