// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the kernel memory an unprivileged user makes umcg.ko
 * allocate (C8): an idle open of /dev/umcg costs a few hundred bytes, not
 * a group with room for every thread; a bound group with a registered
 * thread costs a few pages, charged to the opener's memory cgroup, so a
 * cgroup's memory.max stops a growing group there (not a machine-wide
 * OOM); and one user can open at most max_groups_per_user files of
 * /dev/umcg (the module parameter), the next open failing with ENOSPC.
 *
 * Every opener here is a child that moved itself into a fresh child
 * cgroup of the root with the memory controller, then became nobody.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <uapi/umcg.h>

#include "kmod_test.h"
#include "kmod_raw.h"

#define CG_ROOT		"/sys/fs/cgroup"
#define CAP_PARAM	"/sys/module/umcg/parameters/max_groups_per_user"
#define NOBODY		65534
/* Another unprivileged uid, for "the cap is per user". */
#define SOMEONE		65533

/* Bytes one idle open of /dev/umcg may cost the kernel, all included. */
#define IDLE_OPEN_MAX	8192

/* Bytes of the shared area (the one valid mmap), set by the fixture. */
static size_t map_len;

static long meminfo_kb(const char *key)
{
	char line[256];
	size_t klen = strlen(key);
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, key, klen) && line[klen] == ':') {
			v = strtol(line + klen + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return v;
}

/* Kernel memory the opens can cost: slab and vmalloc, in bytes. */
static long kernel_bytes(void)
{
	long slab = meminfo_kb("Slab"), vm = meminfo_kb("VmallocUsed");

	return slab < 0 || vm < 0 ? -1 : (slab + vm) * 1024;
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	n = n < 0 ? -errno : 0;
	close(fd);
	return n;
}

static long cg_read(const char *cg, const char *file)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	return umcg_read_number(path);
}

/* The number after @key in the flat keyed file @file of @cg, or -1. */
static long cg_read_key(const char *cg, const char *file, const char *key)
{
	char path[PATH_MAX], k[64];
	unsigned long v;
	long ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", cg, file);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %lu", k, &v) == 2) {
		if (!strcmp(k, key)) {
			ret = v;
			break;
		}
	}
	fclose(f);
	return ret;
}

/*
 * A child: joins @cg, lets @nofile files be open, becomes @uid, then
 * waits for a byte on @go before returning to its caller.
 */
struct kid {
	pid_t pid;
	int to[2];	/* parent -> child */
	int from[2];	/* child -> parent */
};

static int kid_start(struct kid *k, const char *cg, uid_t uid, long nofile)
{
	char path[PATH_MAX];
	char c;

	if (pipe2(k->to, O_CLOEXEC) || pipe2(k->from, O_CLOEXEC))
		return -errno;
	k->pid = fork();
	if (k->pid < 0)
		return -errno;
	if (k->pid)
		return 0;

	close(k->to[1]);
	close(k->from[0]);
	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	if (write_str(path, "0"))
		_exit(10);
	if (nofile) {
		struct rlimit rl = { nofile, nofile };

		if (setrlimit(RLIMIT_NOFILE, &rl))
			_exit(11);
	}
	if (umcg_test_drop_to(uid, uid))
		_exit(12);
	if (read(k->to[0], &c, 1) != 1)
		_exit(13);
	return 1;
}

static int kid_say(int fd, const void *buf, size_t len)
{
	return write(fd, buf, len) == (ssize_t)len ? 0 : -1;
}

static int kid_hear(int fd, void *buf, size_t len)
{
	return read(fd, buf, len) == (ssize_t)len ? 0 : -1;
}

/* The child's exit status (exit code, or 128 + signal). */
static int kid_reap(struct kid *k)
{
	int status;

	close(k->to[1]);
	close(k->from[0]);
	if (waitpid(k->pid, &status, 0) != k->pid)
		return -1;
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

FIXTURE(mem) {
	char cg[PATH_MAX];
	bool loaded;
	long cap;
};

FIXTURE_SETUP(mem)
{
	self->cg[0] = 0;
	self->cap = -1;
	/* A child that died (memcg OOM) must not kill us with its pipe. */
	signal(SIGPIPE, SIG_IGN);
	if (!umcg_kmod_get(_metadata, &self->loaded))
		return;
	if (access(CG_ROOT "/cgroup.subtree_control", W_OK))
		SKIP(return, "no writable cgroup2 at " CG_ROOT);
	if (write_str(CG_ROOT "/cgroup.subtree_control", "+memory"))
		SKIP(return, "cannot enable the memory controller at " CG_ROOT);
	snprintf(self->cg, sizeof(self->cg), CG_ROOT "/umcg-kmod-mem-%d",
		 getpid());
	ASSERT_EQ(0, mkdir(self->cg, 0755)) TH_LOG("%s: %s", self->cg,
						      strerror(errno));
	{
		int fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC), max;

		ASSERT_LE(0, fd) TH_LOG("open: %s", strerror(errno));
		max = umcg_max_tasks(fd);
		ASSERT_LT(0, max);
		map_len = umcg_map_len(max);
		close(fd);
	}
	/* Checked by per_user_cap; the others measure without it. */
	self->cap = umcg_read_number(CAP_PARAM);
}

FIXTURE_TEARDOWN(mem)
{
	char buf[32];

	/* idle_open_cost raises it. */
	if (self->cap > 0) {
		snprintf(buf, sizeof(buf), "%ld", self->cap);
		write_str(CAP_PARAM, buf);
	}
	/* The harness may run this twice after a failed assertion. */
	if (self->cg[0] && rmdir(self->cg) && errno != ENOENT)
		TH_LOG("rmdir %s: %s", self->cg, strerror(errno));
	if (self->loaded)
		EXPECT_EQ(0, umcg_test_kmod_unload(UMCG_KMOD_NAME));
}

/*
 * nobody opens /dev/umcg IDLE_OPENS times (max_groups_per_user raised for
 * it) and touches nothing else: the kernel's slab + vmalloc use grows by
 * less than IDLE_OPEN_MAX bytes per open, and what it grows by is charged
 * to the opener's cgroup.  Many opens, because memory.current moves in
 * steps of up to 64 pages per CPU (the charge batch).
 */
#define IDLE_OPENS	2000

TEST_F(mem, idle_open_cost)
{
	long n = IDLE_OPENS, k0, k1, m0, m1, per_open, per_open_cg;
	struct kid k;
	char buf[32];
	int i, opened = 0, err = 0;

	if (self->cap > 0) {
		snprintf(buf, sizeof(buf), "%d", IDLE_OPENS);
		ASSERT_EQ(0, write_str(CAP_PARAM, buf));
	} else {
		n = 200;	/* an old module: 1 MiB an open */
	}

	ASSERT_LE(0, kid_start(&k, self->cg, NOBODY, n + 64));
	if (!k.pid) {
		for (i = 0; i < n; i++) {
			if (open(UMCG_DEVICE_PATH, O_RDWR) < 0) {
				err = errno;
				break;
			}
			opened++;
		}
		kid_say(k.from[1], &opened, sizeof(opened));
		kid_say(k.from[1], &err, sizeof(err));
		kid_hear(k.to[0], &i, 1);
		_exit(0);
	}
	close(k.to[0]);
	close(k.from[1]);
	usleep(100000);
	k0 = kernel_bytes();
	m0 = cg_read(self->cg, "memory.current");
	ASSERT_EQ(1, write(k.to[1], "g", 1));
	ASSERT_EQ(0, kid_hear(k.from[0], &opened, sizeof(opened)));
	ASSERT_EQ(0, kid_hear(k.from[0], &err, sizeof(err)));
	usleep(100000);
	k1 = kernel_bytes();
	m1 = cg_read(self->cg, "memory.current");
	ASSERT_EQ(1, write(k.to[1], "x", 1));
	EXPECT_EQ(0, kid_reap(&k));

	ASSERT_EQ(n, opened) TH_LOG("open %d: %s", opened, strerror(err));
	ASSERT_LE(0, k0);
	ASSERT_LE(0, m0);
	per_open = (k1 - k0) / n;
	per_open_cg = (m1 - m0) / n;
	ksft_print_msg("idle open: %ld bytes of slab+vmalloc, %ld charged to the opener's cgroup (%ld opens)\n",
		       per_open, per_open_cg, n);
	EXPECT_GT(IDLE_OPEN_MAX, per_open);
	/* What the opens cost the kernel, the opener's cgroup paid. */
	EXPECT_LE(per_open / 2, per_open_cg);
}

/*
 * BOUND_KIDS processes of nobody each open and map /dev/umcg (which binds
 * a group to the process: its summary page and tables) and register their
 * main thread as a server (the first chunk: its page of words, its event
 * page, its slots, three pages) and touch their word: at least
 * GROUP_MIN_BYTES each, all charged to their cgroup.  Many processes,
 * because the cgroup may have had up to 64 pages a CPU in stock.
 */
#define BOUND_KIDS	48
#define GROUP_MIN_BYTES	(6 * 4096L)

static int bind_kid(struct kid *k, const char *cg, bool bind,
		    unsigned int threads);

TEST_F(mem, bound_group_charged)
{
	struct kid k[BOUND_KIDS];
	long k0, k1, m0, m1;
	int i, err;

	k0 = kernel_bytes();
	m0 = cg_read(self->cg, "memory.current");
	for (i = 0; i < BOUND_KIDS; i++) {
		ASSERT_EQ(0, bind_kid(&k[i], self->cg, true, 0));
		close(k[i].to[0]);
		close(k[i].from[1]);
		ASSERT_EQ(1, write(k[i].to[1], "g", 1));
		ASSERT_EQ(0, kid_hear(k[i].from[0], &err, sizeof(err)));
		EXPECT_EQ(0, err) TH_LOG("open+mmap: %s", strerror(err));
	}
	usleep(100000);
	k1 = kernel_bytes();
	m1 = cg_read(self->cg, "memory.current");
	for (i = 0; i < BOUND_KIDS; i++) {
		ASSERT_EQ(1, write(k[i].to[1], "x", 1));
		EXPECT_EQ(0, kid_reap(&k[i]));
	}
	ksft_print_msg("bound group with a thread: %ld bytes of slab+vmalloc, %ld charged to the opener's cgroup (area %zu reserved, %d processes)\n",
		       (k1 - k0) / BOUND_KIDS, (m1 - m0) / BOUND_KIDS, map_len,
		       BOUND_KIDS);
	/*
	 * The groups alone are that many bytes, all charged; less the charge
	 * batches (64 pages a CPU) the cgroup may have had in stock.
	 */
	EXPECT_LE(BOUND_KIDS * GROUP_MIN_BYTES - 2 * 64 * 4096, m1 - m0);
}

/*
 * nobody opens /dev/umcg until it fails: it fails with ENOSPC after
 * exactly max_groups_per_user opens (not at the fd limit, which is
 * higher), while another user can still open; closing one lets nobody
 * open one again.
 */
TEST_F(mem, per_user_cap)
{
	struct kid k, other;
	int i, opened = 0, err = 0, again = 0, oerr = 0;
	int *fds;

	ASSERT_LT(0, self->cap) TH_LOG("%s: no per-user cap", CAP_PARAM);
	ASSERT_GT(100000, self->cap);
	ASSERT_LE(0, kid_start(&k, self->cg, NOBODY, self->cap + 64));
	if (!k.pid) {
		fds = calloc(self->cap + 64, sizeof(*fds));
		for (i = 0; fds && i < self->cap + 64; i++) {
			fds[i] = open(UMCG_DEVICE_PATH, O_RDWR);
			if (fds[i] < 0) {
				err = errno;
				break;
			}
			opened++;
		}
		kid_say(k.from[1], &opened, sizeof(opened));
		kid_say(k.from[1], &err, sizeof(err));
		kid_hear(k.to[0], &i, 1);
		if (opened) {
			close(fds[0]);
			again = open(UMCG_DEVICE_PATH, O_RDWR) < 0 ? errno : 0;
		}
		kid_say(k.from[1], &again, sizeof(again));
		kid_hear(k.to[0], &i, 1);
		_exit(0);
	}
	close(k.to[0]);
	close(k.from[1]);
	ASSERT_EQ(1, write(k.to[1], "g", 1));
	ASSERT_EQ(0, kid_hear(k.from[0], &opened, sizeof(opened)));
	ASSERT_EQ(0, kid_hear(k.from[0], &err, sizeof(err)));

	/* Meanwhile another user. */
	ASSERT_LE(0, kid_start(&other, self->cg, SOMEONE, 0));
	if (!other.pid) {
		oerr = open(UMCG_DEVICE_PATH, O_RDWR) < 0 ? errno : 0;
		kid_say(other.from[1], &oerr, sizeof(oerr));
		_exit(0);
	}
	close(other.to[0]);
	close(other.from[1]);
	ASSERT_EQ(1, write(other.to[1], "g", 1));
	ASSERT_EQ(0, kid_hear(other.from[0], &oerr, sizeof(oerr)));
	EXPECT_EQ(0, kid_reap(&other));

	ASSERT_EQ(1, write(k.to[1], "c", 1));
	ASSERT_EQ(0, kid_hear(k.from[0], &again, sizeof(again)));
	ASSERT_EQ(1, write(k.to[1], "x", 1));
	EXPECT_EQ(0, kid_reap(&k));

	ksft_print_msg("nobody: %d opens, then %s; cap %ld\n", opened,
		       strerror(err), self->cap);
	EXPECT_EQ(self->cap, opened);
	EXPECT_EQ(ENOSPC, err);
	EXPECT_EQ(0, oerr) TH_LOG("another user's open: %s", strerror(oerr));
	EXPECT_EQ(0, again) TH_LOG("open after a close: %s", strerror(again));
}

/*
 * Processes of nobody in a cgroup with a memory.max of MEMCG_ROOM bytes
 * above what it holds: MEMCG_KIDS of them fit (checked first), but not
 * with a group of MEMCG_THREADS registered threads each: growing stops
 * inside the cgroup (clone, mmap or REGISTER fails with ENOMEM or EAGAIN,
 * or the cgroup's OOM killer ends a process), not in a machine-wide OOM.
 * Most of a registered thread's cost is the kernel's own (its stack and
 * task_struct, charged too); the group's is a few pages per 64 threads.
 */
#define MEMCG_KIDS	16
#define MEMCG_ROOM	(4L << 20)
#define MEMCG_THREADS	32

struct grow_thread {
	int fd;
	struct umcg_task *map;
	_Atomic int *left;
	_Atomic int *err;
};

/* Register, touch the word, then stay until the process exits. */
static void *grow_fn(void *arg)
{
	struct grow_thread *g = arg;
	__u64 off = 0;
	int ret = umcg_reg(g->fd, UMCG_REGISTER_WORKER, 0, 0, &off);

	if (ret)
		*g->err = -ret;
	else
		__atomic_store_n(&g->map[umcg_slot_idx(off)].next_tid, 1,
				 __ATOMIC_SEQ_CST);
	(*g->left)--;
	for (;;)
		pause();
	return NULL;
}

static int bind_kid(struct kid *k, const char *cg, bool bind,
		    unsigned int threads)
{
	static struct grow_thread g[MEMCG_THREADS];
	static _Atomic int left, gerr;
	size_t len = map_len;
	struct umcg_task *map;
	pthread_attr_t attr;
	pthread_t th;
	int err = 0, r;
	__u64 off = 0;
	char c;

	r = kid_start(k, cg, NOBODY, 0);
	if (r <= 0)
		return r;
	if (bind) {
		int fd = open(UMCG_DEVICE_PATH, O_RDWR);

		map = fd < 0 ? MAP_FAILED :
		      mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED)
			err = errno;
		else if (!threads && (err = -umcg_reg(fd, UMCG_REGISTER_SERVER,
						     0, 0, &off)) == 0)
			__atomic_store_n(&map[umcg_slot_idx(off)].next_tid, 1,
					 __ATOMIC_SEQ_CST);
		left = threads;
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 64 * 1024);
		for (unsigned int i = 0; !err && i < threads; i++) {
			g[i] = (struct grow_thread){ fd, map, &left, &gerr };
			err = pthread_create(&th, &attr, grow_fn, &g[i]);
		}
		while (!err && left)
			usleep(1000);
		if (!err)
			err = gerr;
	}
	kid_say(k->from[1], &err, sizeof(err));
	kid_hear(k->to[0], &c, 1);
	_exit(0);
}

/* Start MEMCG_KIDS children (binding or not); how many got through. */
static int kids_run(struct __test_metadata *_metadata, const char *cg,
		    bool bind, int *stopped, long *used)
{
	struct kid k[MEMCG_KIDS];
	long m0 = cg_read(cg, "memory.current");
	bool fine[MEMCG_KIDS] = { false };
	int i, err, ok = 0;

	*stopped = 0;
	for (i = 0; i < MEMCG_KIDS; i++) {
		k[i].pid = -1;
		if (bind_kid(&k[i], cg, bind, bind ? MEMCG_THREADS : 0)) {
			(*stopped)++;	/* fork failed in the cgroup */
			continue;
		}
		close(k[i].to[0]);
		close(k[i].from[1]);
		if (write(k[i].to[1], "g", 1) != 1 ||
		    kid_hear(k[i].from[0], &err, sizeof(err)) || err)
			(*stopped)++;	/* OOM-killed, or growing failed */
		else {
			fine[i] = true;
			ok++;
		}
	}
	*used = cg_read(cg, "memory.current") - m0;
	for (i = 0; i < MEMCG_KIDS; i++) {
		if (k[i].pid < 0)
			continue;
		/* Fails for a child already killed. */
		(void)!write(k[i].to[1], "x", 1);
		/* The cgroup's OOM killer may take one that had bound. */
		if (kid_reap(&k[i]) == 128 + SIGKILL && fine[i]) {
			(*stopped)++;
			ok--;
		}
	}
	return ok;
}

TEST_F(mem, memcg_limit_stops_growth)
{
	char buf[64], path[PATH_MAX];
	long m0, ev0, ev1, oom, used_plain, used_bound, max;
	int plain, bound, stopped_plain, stopped;

	m0 = cg_read(self->cg, "memory.current");
	snprintf(buf, sizeof(buf), "%ld", m0 + MEMCG_ROOM);
	snprintf(path, sizeof(path), "%s/memory.max", self->cg);
	ASSERT_EQ(0, write_str(path, buf));
	max = m0 + MEMCG_ROOM;

	plain = kids_run(_metadata, self->cg, false, &stopped_plain,
			 &used_plain);
	ev0 = cg_read_key(self->cg, "memory.events", "max");
	bound = kids_run(_metadata, self->cg, true, &stopped, &used_bound);
	ev1 = cg_read_key(self->cg, "memory.events", "max");
	oom = cg_read_key(self->cg, "memory.events", "oom_kill");
	ksft_print_msg("memory.max +%ld: %d of %d plain children (+%ld bytes), %d bound and lived (+%ld bytes), %d stopped; memory.events max +%ld, oom_kill %ld; peak %ld of %ld\n",
		       MEMCG_ROOM, plain, MEMCG_KIDS, used_plain, bound,
		       used_bound, stopped, ev1 - ev0, oom,
		       cg_read(self->cg, "memory.peak"), max);
	ASSERT_EQ(MEMCG_KIDS, plain) TH_LOG("the children alone do not fit");
	EXPECT_LT(0, stopped);
	EXPECT_LT(0, ev1 - ev0);
	/* A child with its threads is about 1 MiB: some fit. */
	EXPECT_LE(1, bound);
	EXPECT_LE(cg_read(self->cg, "memory.peak"), max);
}

TEST_HARNESS_MAIN
