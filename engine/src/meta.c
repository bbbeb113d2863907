// SPDX-License-Identifier: MIT
/*
 * meta.c - the "meta" mode: create, walk, chmod and unlink phases with a
 * fixed number of files per thread (weak scaling, as in the inode cache
 * scalability runs), each phase started by all threads at once.
 *
 * One JSON object per phase; a phase's wall_s runs from the release of the
 * start gate to the end of its last thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "fileops.h"
#include "json.h"
#include "meta.h"
#include "modes.h"
#include "timing.h"

static const char meta_usage[] =
	"meta --dir D --threads T --files-per-thread F [--dirs-per-thread N] "
	"[--size BYTES] [--shared-dir] [--chmod-mode OCTAL] "
	"--phases create,walk,chmod,unlink";

static int parse_phases(const char *s, enum meta_phase *out, int max)
{
	char *copy = strdup(s), *tok, *save = NULL;
	int n = 0, p;

	if (!copy)
		return -1;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (p = 0; p < PH_COUNT; p++)
			if (!strcmp(tok, meta_phase_names[p]))
				break;
		if (p == PH_COUNT)
			usage_fail("meta", "unknown phase '%s' (phases: create, walk, chmod, unlink)",
				   tok);
		if (n == max)
			usage_fail("meta", "too many phases in '%s'", s);
		out[n++] = (enum meta_phase)p;
	}
	free(copy);
	if (!n)
		usage_fail("meta", "--phases is empty");
	return n;
}

static void *meta_worker(void *arg)
{
	struct meta_thread *t = arg;

	if (meta_thread_prepare(t))
		atomic_store(&t->m->abort, 1);
	gate_wait(&t->m->gate);
	if (!atomic_load(&t->m->abort))
		meta_thread_run(t);
	else
		atomic_fetch_sub(&t->m->active, 1);
	t->end = now_s();
	return NULL;
}

static void phase_common(struct json *j, const struct meta *m)
{
	json_str(j, "mode", "meta");
	json_str(j, "phase", meta_phase_names[m->phase]);
	json_str(j, "dir", m->dir);
	json_u64(j, "threads", m->threads);
	json_u64(j, "files_per_thread", m->files_per_thread);
	if (m->shared)
		json_null(j, "dirs_per_thread");
	else
		json_u64(j, "dirs_per_thread", m->dirs_per_thread);
	json_bool(j, "shared_dir", m->shared);
	json_u64(j, "size", m->size);
}

/* The directory the phase works in for --shared-dir, opened before the gate. */
static int open_shared(struct meta *m, struct fail *f)
{
	m->shared_fd = -1;
	if (!m->shared)
		return 0;
	m->shared_fd = m->phase == PH_CREATE ?
		dir_make_open(m->dfd, META_SHARED_ROOT, true, f, m->dir) :
		dir_open(m->dfd, META_SHARED_ROOT, f, m->dir);
	return m->shared_fd < 0 ? -1 : 0;
}

static int run_phase(struct meta *m, enum meta_phase ph)
{
	struct meta_thread *th;
	struct cpu_usage c0, c1;
	struct fail f = { 0 };
	const struct fail *first = NULL;
	uint64_t files = 0, dirs = 0, bytes = 0, exp_files, exp_dirs;
	double t0, wall = 0;
	struct json j;
	unsigned i, started;
	int rc;

	m->phase = ph;
	m->shared_eof = false;
	atomic_store(&m->abort, 0);
	atomic_store(&m->active, m->threads);
	if (open_shared(m, &f)) {
		fail_json(&j, &f);
		phase_common(&j, m);
		json_emit(&j);
		return 1;
	}
	th = calloc(m->threads, sizeof(*th));
	if (!th) {
		fail_sys(&f, "calloc", ENOMEM, m->dir, NULL);
		fail_emit(&f);
		return 1;
	}
	gate_init(&m->gate, m->threads);
	for (started = 0; started < m->threads; started++) {
		th[started].idx = started;
		th[started].m = m;
		rc = pthread_create(&th[started].tid, NULL, meta_worker, &th[started]);
		if (rc) {
			fail_sys(&f, "pthread_create", rc, m->dir, NULL);
			fail_emit(&f);
			exit(1);
		}
	}
	gate_await(&m->gate);
	cpu_sample(&c0);
	t0 = gate_release(&m->gate);
	for (i = 0; i < started; i++)
		pthread_join(th[i].tid, NULL);
	cpu_sample(&c1);
	gate_destroy(&m->gate);
	if (m->shared_fd >= 0)
		close(m->shared_fd);

	for (i = 0; i < m->threads; i++) {
		files += th[i].files;
		dirs += th[i].dirs;
		bytes += th[i].bytes;
		if (th[i].end - t0 > wall)
			wall = th[i].end - t0;
		if (th[i].fail.set && !first)
			first = &th[i].fail;
	}
	exp_files = (uint64_t)m->threads * m->files_per_thread;
	exp_dirs = m->shared ? 0 : (uint64_t)m->threads * m->dirs_per_thread;
	if (!first && ph != PH_CREATE && (files != exp_files || dirs != exp_dirs)) {
		fail_msg(&f, m->dir,
			 "%s found %llu files in %llu directories, expected %llu in %llu: "
			 "the tree is not the one create made with these --threads, "
			 "--files-per-thread and --dirs-per-thread",
			 meta_phase_names[ph], (unsigned long long)files,
			 (unsigned long long)dirs, (unsigned long long)exp_files,
			 (unsigned long long)exp_dirs);
		first = &f;
	}

	if (first)
		fail_json(&j, first);
	else
		json_begin(&j);
	phase_common(&j, m);
	json_u64(&j, "files", files);
	json_u64(&j, "dirs", dirs);
	json_u64(&j, "expected_files", exp_files);
	if (ph == PH_WALK)
		json_u64(&j, "bytes", bytes);
	if (ph == PH_CHMOD) {
		char octal[8];

		snprintf(octal, sizeof(octal), "%04o", (unsigned)m->chmod_mode);
		json_str(&j, "chmod_mode", octal);
	}
	json_f64(&j, "wall_s", wall);
	json_f64(&j, "files_per_s", wall > 0 ? (double)files / wall : 0);
	json_f64(&j, "user_s", c1.user_s - c0.user_s);
	json_f64(&j, "sys_s", c1.sys_s - c0.sys_s);
	json_i64(&j, "peak_rss_kib", peak_rss_kib());
	json_arr_open(&j, "per_thread");
	for (i = 0; i < m->threads; i++) {
		json_obj_open(&j, NULL);
		json_u64(&j, "files", th[i].files);
		json_u64(&j, "dirs", th[i].dirs);
		json_f64(&j, "wall_s", th[i].end - t0);
		json_obj_close(&j);
	}
	json_arr_close(&j);
	json_emit(&j);

	for (i = 0; i < m->threads; i++)
		meta_thread_release(&th[i]);
	free(th);
	return first ? 1 : 0;
}

/* D itself: created by a create phase if missing (one level, like mkdir). */
static int open_base(struct meta *m, bool may_create)
{
	struct fail f = { 0 };

	if (may_create && mkdir(m->dir, 0755) && errno != EEXIST) {
		fail_sys(&f, "mkdir", errno, m->dir, NULL);
		fail_emit(&f);
		return -1;
	}
	m->dfd = open(m->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (m->dfd < 0) {
		fail_sys(&f, "open", errno, m->dir, NULL);
		fail_emit(&f);
		return -1;
	}
	return 0;
}

int mode_meta(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "threads", required_argument, NULL, 't' },
		{ "files-per-thread", required_argument, NULL, 'f' },
		{ "dirs-per-thread", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "shared-dir", no_argument, NULL, 'S' },
		{ "chmod-mode", required_argument, NULL, 'c' },
		{ "phases", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	enum meta_phase phases[32];
	struct meta m = { .dfd = -1, .shared_fd = -1, .chmod_mode = 0600 };
	const char *phase_arg = NULL;
	char *end;
	unsigned long mode;
	int c, nphases, i, rc = 0;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			m.dir = optarg;
			break;
		case 't':
			m.threads = (unsigned)parse_u64("meta", "--threads", optarg, 1, 4096);
			break;
		case 'f':
			m.files_per_thread = parse_u64("meta", "--files-per-thread", optarg, 1,
						       1ULL << 32);
			break;
		case 'n':
			m.dirs_per_thread = (unsigned)parse_u64("meta", "--dirs-per-thread",
								optarg, 1, 1000000);
			break;
		case 's':
			m.size = parse_u64("meta", "--size", optarg, 0, 1ULL << 40);
			break;
		case 'S':
			m.shared = true;
			break;
		case 'c':
			errno = 0;
			mode = strtoul(optarg, &end, 8);
			if (errno || end == optarg || *end || mode > 07777)
				usage_fail("meta", "--chmod-mode wants an octal mode like 0600, got '%s'",
					   optarg);
			m.chmod_mode = (mode_t)mode;
			break;
		case 'p':
			phase_arg = optarg;
			break;
		case 'h':
			printf("usage: iowall-engine %s\n", meta_usage);
			return 0;
		default:
			usage_bad_option("meta", argc, argv);
		}
	}
	if (optind < argc)
		usage_fail("meta", "unexpected argument '%s'", argv[optind]);
	if (!m.dir || !m.threads || !m.files_per_thread || !phase_arg)
		usage_fail("meta", "--dir, --threads, --files-per-thread and --phases are required (%s)",
			   meta_usage);
	if (m.shared && m.dirs_per_thread)
		usage_fail("meta", "--dirs-per-thread and --shared-dir exclude each other "
			   "(--shared-dir puts every file in D/shared)");
	if (strlen(m.dir) > PATH_MAX - 64)
		usage_fail("meta", "--dir is too long");
	if (!m.shared && !m.dirs_per_thread)
		m.dirs_per_thread = (unsigned)((m.files_per_thread +
						META_FILES_PER_DIR_DEFAULT - 1) /
					       META_FILES_PER_DIR_DEFAULT);
	nphases = parse_phases(phase_arg, phases, 32);
	if (nphases < 0)
		return 1;

	if (open_base(&m, phases[0] == PH_CREATE))
		return 1;
	pthread_mutex_init(&m.shared_lock, NULL);
	for (i = 0; i < nphases && !rc; i++)
		rc = run_phase(&m, phases[i]);
	pthread_mutex_destroy(&m.shared_lock);
	close(m.dfd);
	return rc;
}
