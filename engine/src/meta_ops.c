// SPDX-License-Identifier: MIT
/*
 * meta_ops.c - one thread's share of a metadata phase.
 *
 * create builds D/tNNN/dMMM/fNNNNNNN (or D/shared/tNNN-fNNNNNNN); walk,
 * chmod and unlink find every name with getdents64, never from the naming
 * scheme, and keep one getdents64 buffer per directory depth, so memory does
 * not grow with the number of files.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dents.h"
#include "fileops.h"
#include "meta.h"
#include "names.h"

#define RMDIR_TRIES 4

const char *const meta_phase_names[PH_COUNT] = { "create", "walk", "chmod", "unlink" };

static bool aborted(const struct meta_thread *t)
{
	return atomic_load_explicit(&t->m->abort, memory_order_relaxed);
}

static void set_abort(struct meta_thread *t)
{
	atomic_store(&t->m->abort, 1);
}

/* Append "/name" to t->path; returns the old length to restore. */
static size_t path_push(struct meta_thread *t, const char *name)
{
	size_t len = strlen(t->path);

	snprintf(t->path + len, sizeof(t->path) - len, "/%s", name);
	return len;
}

static char *level_buf(struct meta_thread *t, int depth)
{
	if (depth >= META_MAX_DEPTH) {
		fail_msg(&t->fail, t->path, "tree deeper than %d levels", META_MAX_DEPTH);
		return NULL;
	}
	if (!t->levels[depth]) {
		t->levels[depth] = malloc(DENTS_BUF_SIZE);
		if (!t->levels[depth])
			fail_sys(&t->fail, "malloc", ENOMEM, t->path, NULL);
	}
	return t->levels[depth];
}

int meta_thread_prepare(struct meta_thread *t)
{
	const struct meta *m = t->m;
	int d;

	snprintf(t->path, sizeof(t->path), "%s", m->dir);
	if (m->phase == PH_CREATE) {
		if (!m->size)
			return 0;
		t->wbuf = file_pattern(m->size, &t->wlen);
		if (!t->wbuf) {
			fail_sys(&t->fail, "malloc", ENOMEM, m->dir, NULL);
			return -1;
		}
		return 0;
	}
	/* The levels a D/tNNN/dMMM tree uses, allocated before the clock starts. */
	for (d = 0; d < 2; d++)
		if (!level_buf(t, d))
			return -1;
	return 0;
}

void meta_thread_release(struct meta_thread *t)
{
	int d;

	for (d = 0; d < META_MAX_DEPTH; d++) {
		free(t->levels[d]);
		t->levels[d] = NULL;
	}
	free(t->wbuf);
	t->wbuf = NULL;
}

/* ---- create ------------------------------------------------------------ */

static int create_files(struct meta_thread *t, int dfd, const char *prefix,
			uint64_t first, uint64_t count)
{
	struct name_seq seq;
	uint64_t k;

	name_seq_init(&seq, prefix, first, 7);
	for (k = 0; k < count; k++) {
		if (aborted(t))
			return -1;
		if (file_create(dfd, seq.buf, t->wbuf, t->wlen, t->m->size, false,
				&t->fail, t->path))
			return -1;
		t->files++;
		name_seq_next(&seq);
	}
	return 0;
}

static int create_own(struct meta_thread *t)
{
	const struct meta *m = t->m;
	uint64_t per = m->files_per_thread / m->dirs_per_thread;
	uint64_t extra = m->files_per_thread % m->dirs_per_thread;
	uint64_t first = 0, count;
	char root[NAME_MAX_LEN], dname[NAME_MAX_LEN];
	size_t keep;
	unsigned d;
	int rfd, dfd, rc = 0;

	name_thread_root(root, t->idx);
	/* The thread root may exist already (e.g. a btrfs subvolume made by the caller). */
	rfd = dir_make_open(m->dfd, root, true, &t->fail, t->path);
	if (rfd < 0)
		return -1;
	path_push(t, root);
	for (d = 0; d < m->dirs_per_thread && !rc; d++) {
		count = per + (d < extra ? 1 : 0);
		name_fmt(dname, "d", d, 3);
		dfd = dir_make_open(rfd, dname, false, &t->fail, t->path);
		if (dfd < 0) {
			rc = -1;
			break;
		}
		t->dirs++;
		keep = path_push(t, dname);
		rc = create_files(t, dfd, "f", first, count);
		t->path[keep] = '\0';
		close(dfd);
		first += count;
	}
	close(rfd);
	return rc;
}

static int create_shared(struct meta_thread *t)
{
	char prefix[NAME_MAX_LEN];

	snprintf(prefix, sizeof(prefix), "t%03u-f", t->idx);
	path_push(t, META_SHARED_ROOT);
	return create_files(t, t->m->shared_fd, prefix, 0, t->m->files_per_thread);
}

/* ---- walk, chmod, unlink ----------------------------------------------- */

static int tree_dir(struct meta_thread *t, int fd, int depth);

/* rmdir dfd/name; if entries appeared behind the reader, empty it again first. */
static int remove_dir(struct meta_thread *t, int dfd, const char *name, int depth)
{
	size_t keep;
	int tries, fd, rc;

	for (tries = 0;; tries++) {
		if (!unlinkat(dfd, name, AT_REMOVEDIR))
			return 0;
		if (errno != ENOTEMPTY || tries == RMDIR_TRIES) {
			fail_sys(&t->fail, "unlinkat(AT_REMOVEDIR)", errno, t->path, name);
			return -1;
		}
		fd = dir_open(dfd, name, &t->fail, t->path);
		if (fd < 0)
			return -1;
		keep = path_push(t, name);
		rc = tree_dir(t, fd, depth);
		t->path[keep] = '\0';
		close(fd);
		if (rc)
			return -1;
	}
}

static int descend(struct meta_thread *t, int dfd, const char *name, int depth)
{
	size_t keep;
	int fd, rc;

	fd = dir_open(dfd, name, &t->fail, t->path);
	if (fd < 0)
		return -1;
	keep = path_push(t, name);
	rc = tree_dir(t, fd, depth);
	t->path[keep] = '\0';
	close(fd);
	if (rc)
		return -1;
	if (t->m->phase == PH_UNLINK)
		return remove_dir(t, dfd, name, depth);
	return 0;
}

static bool is_dir(struct meta_thread *t, int dfd, const struct dent *d, int *err)
{
	struct stat st;

	*err = 0;
	if (d->d_type != DT_UNKNOWN)
		return d->d_type == DT_DIR;
	if (fstatat(dfd, d->d_name, &st, AT_SYMLINK_NOFOLLOW)) {
		*err = errno;
		fail_sys(&t->fail, "fstatat", errno, t->path, d->d_name);
		return false;
	}
	return S_ISDIR(st.st_mode);
}

/* Apply the phase to the entries of one getdents64 batch read from dfd. */
static int tree_batch(struct meta_thread *t, int dfd, const char *buf, size_t n,
		      int depth)
{
	const struct meta *m = t->m;
	const struct dent *d;
	struct statx stx;
	size_t pos;
	bool dir;
	int err;

	for (pos = 0; pos < n; pos += d->d_reclen) {
		d = dent_at(buf, pos);
		if (dent_is_dot(d))
			continue;
		if (aborted(t))
			return -1;
		if (m->phase == PH_WALK) {
			if (statx(dfd, d->d_name, AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT,
				  STATX_BASIC_STATS, &stx)) {
				fail_sys(&t->fail, "statx", errno, t->path, d->d_name);
				return -1;
			}
			dir = S_ISDIR(stx.stx_mode);
		} else {
			dir = is_dir(t, dfd, d, &err);
			if (err)
				return -1;
		}
		if (dir) {
			t->dirs++;
			if (descend(t, dfd, d->d_name, depth + 1))
				return -1;
			continue;
		}
		switch (m->phase) {
		case PH_WALK:
			t->bytes += stx.stx_size;
			break;
		case PH_CHMOD:
			if (fchmodat(dfd, d->d_name, m->chmod_mode, 0)) {
				fail_sys(&t->fail, "fchmodat", errno, t->path, d->d_name);
				return -1;
			}
			break;
		case PH_UNLINK:
			if (unlinkat(dfd, d->d_name, 0)) {
				fail_sys(&t->fail, "unlinkat", errno, t->path, d->d_name);
				return -1;
			}
			break;
		default:
			break;
		}
		t->files++;
	}
	return 0;
}

/* Every entry of the directory open at fd, depth-first. */
static int tree_dir(struct meta_thread *t, int fd, int depth)
{
	char *buf = level_buf(t, depth);
	ssize_t n;

	if (!buf)
		return -1;
	for (;;) {
		n = dents_read(fd, buf, DENTS_BUF_SIZE);
		if (n < 0) {
			fail_sys(&t->fail, "getdents64", errno, t->path, NULL);
			return -1;
		}
		if (n == 0)
			return 0;
		if (tree_batch(t, fd, buf, (size_t)n, depth))
			return -1;
	}
}

static int tree_own(struct meta_thread *t)
{
	const struct meta *m = t->m;
	char root[NAME_MAX_LEN];
	size_t keep;
	int rfd, rc;

	name_thread_root(root, t->idx);
	rfd = dir_open(m->dfd, root, &t->fail, t->path);
	if (rfd < 0)
		return -1;
	keep = path_push(t, root);
	rc = tree_dir(t, rfd, 0);
	t->path[keep] = '\0';
	close(rfd);
	if (rc)
		return -1;
	if (m->phase == PH_UNLINK)
		return remove_dir(t, m->dfd, root, 0);
	return 0;
}

/*
 * --shared-dir: the threads share one open directory and take turns pulling
 * getdents64 batches from it; the last thread out removes it (unlink).
 */
static int tree_shared(struct meta_thread *t)
{
	struct meta *m = t->m;
	char *buf = t->levels[0];
	ssize_t n;
	int err = 0, rc = 0;

	path_push(t, META_SHARED_ROOT);
	for (;;) {
		if (aborted(t)) {
			rc = -1;
			break;
		}
		pthread_mutex_lock(&m->shared_lock);
		n = 0;
		if (!m->shared_eof) {
			n = dents_read(m->shared_fd, buf, DENTS_BUF_SIZE);
			err = errno;
			if (n <= 0)
				m->shared_eof = true;
		}
		pthread_mutex_unlock(&m->shared_lock);
		if (n < 0) {
			fail_sys(&t->fail, "getdents64", err, t->path, NULL);
			rc = -1;
			break;
		}
		if (n == 0)
			break;
		rc = tree_batch(t, m->shared_fd, buf, (size_t)n, 0);
		if (rc)
			break;
	}
	if (atomic_fetch_sub(&m->active, 1) != 1 || rc || m->phase != PH_UNLINK)
		return rc;
	/* Last one out: nothing else reads shared_fd now. */
	t->path[strlen(m->dir)] = '\0';
	if (!unlinkat(m->dfd, META_SHARED_ROOT, AT_REMOVEDIR))
		return 0;
	if (errno != ENOTEMPTY) {
		fail_sys(&t->fail, "unlinkat(AT_REMOVEDIR)", errno, t->path, META_SHARED_ROOT);
		return -1;
	}
	lseek(m->shared_fd, 0, SEEK_SET);
	path_push(t, META_SHARED_ROOT);
	if (tree_dir(t, m->shared_fd, 0))
		return -1;
	t->path[strlen(m->dir)] = '\0';
	return remove_dir(t, m->dfd, META_SHARED_ROOT, 0);
}

void meta_thread_run(struct meta_thread *t)
{
	const struct meta *m = t->m;
	int rc;

	if (m->phase == PH_CREATE)
		rc = m->shared ? create_shared(t) : create_own(t);
	else
		rc = m->shared ? tree_shared(t) : tree_own(t);
	if (rc)
		set_abort(t);
}
