// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the machine's own stops reach every umcg thread (C10): a
 * process whose worker is held waiting to be picked (after a block's
 * return, and after a preemption), whose other worker sleeps in
 * UMCG_IOC_WAIT and whose server sleeps in UMCG_IOC_WAIT
 *
 *   cgroup_v2     is frozen by cgroup.freeze (cgroup.events reads
 *                 "frozen 1" within FROZEN_MS), three times in a row;
 *   pm_freezer    is frozen by the system-suspend freezer
 *                 (/sys/power/pm_test = freezer, then "freeze" or "mem"
 *                 into /sys/power/state: the write fails with EBUSY when
 *                 a task refused to freeze);
 *   group_stop    stops on SIGSTOP (waitpid() reports it);
 *
 * and after each thaw nothing is lost: the held workers are still held
 * (they run no user code) until the server picks them, then both run, and
 * the worker in WAIT returns when woken.  Then the process is killed and
 * the module must empty.
 *
 * Everything in the child is raw ioctls (kmod_raw.h); the parent sees the
 * child through a shared anonymous mapping.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <uapi/umcg.h>

#include "kmod_test.h"
#include "kmod_raw.h"

/* How long the child may take to get ready (TCG, loaded host). */
#define READY_MS	60000
/* How long a freeze or a stop may take. */
#define FROZEN_MS	5000
/* How long a held worker is watched for running unpicked. */
#define HELD_MS		300

/* What parent and child share. */
struct shared {
	_Atomic int ready;	/* 1 ready, -1 failed */
	int line;
	char msg[200];
	_Atomic pid_t held_tid, pre_tid, wait_tid, server_tid;
	_Atomic int held_after;	/* the held worker returned to user space */
	_Atomic unsigned long pre_spins;	/* the preempted worker's */
	_Atomic int wait_after;	/* the waiting worker left WAIT */
	_Atomic int pick;	/* parent: server, pick everyone now */
	_Atomic int picked;	/* the server did */
};

static struct shared *sh;

/* ---- The child ---- */

static int cfd = -1;
static struct umcg_task *cmap;
static struct umcg_task *srv_task, *held_task, *pre_task, *wait_task;
static int pipefd[2];

static void __attribute__((noreturn)) child_fail(int line, const char *msg)
{
	if (!sh->ready) {
		snprintf(sh->msg, sizeof(sh->msg), "%s (%s)", msg,
			 strerror(errno));
		sh->line = line;
		sh->ready = -1;
	}
	_exit(1);
}

#define CHECK(cond) do {						\
	if (!(cond))							\
		child_fail(__LINE__, #cond);				\
} while (0)

static __u32 state_of(struct umcg_task *t)
{
	return umcg_state_load(t) & UMCG_TASK_STATE_MASK;
}

static struct umcg_task *reg(__u32 flags)
{
	__u64 off = 0;

	CHECK(umcg_reg(cfd, flags, flags == UMCG_REGISTER_WORKER ?
		       sh->server_tid : 0, 0, &off) == 0);
	return &cmap[umcg_slot_idx(off)];
}

/* Pick @t (RUNNABLE -> RUNNING), wake @tid. */
static void pick(struct umcg_task *t, pid_t tid)
{
	__u32 s = umcg_state_load(t);

	if ((s & UMCG_TASK_STATE_MASK) == UMCG_TASK_RUNNABLE &&
	    __atomic_compare_exchange_n(&t->state, &s,
					(s & ~UMCG_TASK_STATE_MASK) |
					UMCG_TASK_RUNNING, false,
					__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		umcg_wake(cfd, tid);
}

/* The server: WAIT with a short timeout, pick everyone when told. */
static void *server_fn(void *arg)
{
	(void)arg;
	srv_task = reg(UMCG_REGISTER_SERVER);
	sh->server_tid = umcg_gettid();
	for (;;) {
		umcg_state_store(srv_task, UMCG_TASK_RUNNABLE);
		if (sh->pick && !sh->picked) {
			pick(held_task, sh->held_tid);
			pick(pre_task, sh->pre_tid);
			umcg_state_store(wait_task, UMCG_TASK_RUNNING);
			umcg_wake(cfd, sh->wait_tid);
			sh->picked = 1;
		}
		umcg_wait(cfd, 0, 20 * UMCG_MS);
	}
	return NULL;
}

/* Blocks in read(), is held RUNNABLE when the pipe is written. */
static void *held_fn(void *arg)
{
	char c;

	(void)arg;
	held_task = reg(UMCG_REGISTER_WORKER);
	held_task->server_tid = sh->server_tid;
	umcg_state_store(held_task, UMCG_TASK_RUNNING);
	sh->held_tid = umcg_gettid();
	if (read(pipefd[0], &c, 1) == 1)
		sh->held_after = 1;
	for (;;)
		pause();
	return NULL;
}

/* Spins RUNNING|PREEMPT until preempted, held, picked; spins on. */
static void *pre_fn(void *arg)
{
	(void)arg;
	pre_task = reg(UMCG_REGISTER_WORKER);
	pre_task->server_tid = sh->server_tid;
	umcg_state_store(pre_task, UMCG_TASK_RUNNING | UMCG_TF_PREEMPT);
	sh->pre_tid = umcg_gettid();
	for (;;)
		sh->pre_spins++;
	return NULL;
}

/* Sleeps in UMCG_IOC_WAIT until RUNNING. */
static void *wait_fn(void *arg)
{
	int ret;

	(void)arg;
	wait_task = reg(UMCG_REGISTER_WORKER);
	umcg_state_store(wait_task, UMCG_TASK_RUNNABLE);
	sh->wait_tid = umcg_gettid();
	do {
		ret = umcg_wait(cfd, 0, 0);
	} while (ret == -EINTR && state_of(wait_task) != UMCG_TASK_RUNNING);
	sh->wait_after = ret ? ret : 1;
	for (;;)
		pause();
	return NULL;
}

static bool sleeping(pid_t tid)
{
	char c = umcg_proc_state(0, tid);

	return c == 'S' || c == 'D';
}

static void start(void *(*fn)(void *))
{
	pthread_t th;

	CHECK(pthread_create(&th, NULL, fn, NULL) == 0);
}

static void __attribute__((noreturn)) child_main(const char *procs)
{
	unsigned long spins;
	size_t len;
	int fd, max;

	if (procs) {
		char buf[32];

		fd = open(procs, O_WRONLY | O_CLOEXEC);
		CHECK(fd >= 0);
		snprintf(buf, sizeof(buf), "%d\n", getpid());
		CHECK(write(fd, buf, strlen(buf)) == (ssize_t)strlen(buf));
		close(fd);
	}
	CHECK(pipe2(pipefd, O_CLOEXEC) == 0);
	cfd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	CHECK(cfd >= 0);
	max = umcg_max_tasks(cfd);
	CHECK(max > 0);
	len = umcg_map_len(max);
	cmap = umcg_map(cfd, len);
	CHECK(cmap != MAP_FAILED);

	start(server_fn);
	CHECK(umcg_poll_ms(sh->server_tid != 0, READY_MS));
	start(held_fn);
	start(pre_fn);
	start(wait_fn);
	CHECK(umcg_poll_ms(sh->held_tid && sh->pre_tid && sh->wait_tid,
			   READY_MS));

	/* The reader blocks (BLOCKED), then is held once the pipe has data. */
	CHECK(umcg_poll_ms(state_of(held_task) == UMCG_TASK_BLOCKED &&
			   sleeping(sh->held_tid), READY_MS));
	CHECK(write(pipefd[1], "x", 1) == 1);
	CHECK(umcg_poll_ms(state_of(held_task) == UMCG_TASK_RUNNABLE &&
			   sleeping(sh->held_tid), READY_MS));

	/* The spinner is preempted and held. */
	CHECK(umcg_poll_ms(sh->pre_spins > 1000, READY_MS));
	CHECK(umcg_preempt(cfd, sh->pre_tid) == 0);
	CHECK(umcg_poll_ms(state_of(pre_task) == UMCG_TASK_RUNNABLE &&
			   sleeping(sh->pre_tid), READY_MS));
	spins = sh->pre_spins;
	umcg_sleep_ms(HELD_MS);
	CHECK(sh->pre_spins == spins);

	CHECK(umcg_poll_ms(sleeping(sh->wait_tid), READY_MS));
	CHECK(!sh->held_after && !sh->wait_after);
	sh->ready = 1;
	for (;;)
		pause();
}

/* ---- The parent ---- */

static pid_t fork_child(struct __test_metadata *_metadata, const char *procs)
{
	pid_t pid;

	sh->ready = 0;
	pid = fork();
	if (pid == 0)
		child_main(procs);
	if (pid < 0)
		return -1;
	if (!umcg_poll_ms(sh->ready != 0, READY_MS) || sh->ready < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		TH_LOG("child: line %d: %s", sh->line, sh->msg);
		return -1;
	}
	return pid;
}

/* The held workers run nothing for HELD_MS, then the server picks all. */
static void check_then_pick(struct __test_metadata *_metadata)
{
	unsigned long spins = sh->pre_spins;

	umcg_sleep_ms(HELD_MS);
	EXPECT_EQ(0, sh->held_after) TH_LOG("held worker ran unpicked");
	EXPECT_EQ(spins, sh->pre_spins) TH_LOG("preempted worker ran unpicked");
	EXPECT_EQ(0, sh->wait_after) TH_LOG("WAIT returned %d", sh->wait_after);

	sh->pick = 1;
	ASSERT_TRUE(umcg_poll_ms(sh->picked, READY_MS));
	EXPECT_TRUE(umcg_poll_ms(sh->held_after == 1, FROZEN_MS));
	EXPECT_TRUE(umcg_poll_ms(sh->pre_spins > spins + 1000, FROZEN_MS));
	EXPECT_TRUE(umcg_poll_ms(sh->wait_after != 0, FROZEN_MS));
	EXPECT_EQ(1, sh->wait_after);
}

static void kill_child(struct __test_metadata *_metadata, pid_t pid)
{
	int status;

	kill(pid, SIGKILL);
	kill(pid, SIGCONT);
	EXPECT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(umcg_poll_ms(umcg_sys_empty(), 10000));
}

FIXTURE(f) {
	bool loaded;
};

FIXTURE_SETUP(f)
{
	if (!umcg_kmod_get(_metadata, &self->loaded))
		return;
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
}

FIXTURE_TEARDOWN(f)
{
	if (sh && sh != MAP_FAILED)
		munmap(sh, sizeof(*sh));
	sh = NULL;
	if (self->loaded)
		EXPECT_EQ(0, umcg_unload_eventually(10000));
}

/* A cgroup v2 hierarchy's mount point: the system's, or one of ours. */
static bool cgroup2_root(char *root, size_t len, bool *mounted)
{
	char dev[256], dir[PATH_MAX], type[64];
	bool found = false;
	FILE *f;

	*mounted = false;
	f = fopen("/proc/self/mounts", "re");
	if (f) {
		while (fscanf(f, "%255s %4095s %63s %*[^\n]", dev, dir,
			      type) == 3) {
			if (!strcmp(type, "cgroup2")) {
				snprintf(root, len, "%s", dir);
				found = true;
				break;
			}
		}
		fclose(f);
	}
	if (found)
		return true;
	snprintf(root, len, "/tmp/umcg-freeze-cg2");
	mkdir(root, 0755);
	if (mount("none", root, "cgroup2", 0, NULL))
		return false;
	*mounted = true;
	return true;
}

static int write_file(const char *path, const char *s)
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

/* Does @path (cgroup.events) have the line "frozen @v"? */
static bool events_frozen(const char *path, int v)
{
	char line[128], want[16];
	bool ret = false;
	FILE *f = fopen(path, "re");

	if (!f)
		return false;
	snprintf(want, sizeof(want), "frozen %d\n", v);
	while (fgets(line, sizeof(line), f))
		if (!strcmp(line, want))
			ret = true;
	fclose(f);
	return ret;
}

TEST_F(f, cgroup_v2)
{
	char root[PATH_MAX], cg[PATH_MAX + 64], path[PATH_MAX + 128];
	char events[PATH_MAX + 128];
	bool mounted;
	pid_t pid;

	if (!cgroup2_root(root, sizeof(root), &mounted))
		SKIP(return, "no cgroup v2 hierarchy: %s", strerror(errno));
	snprintf(cg, sizeof(cg), "%s/umcg-freeze-%d", root, getpid());
	ASSERT_EQ(0, mkdir(cg, 0755)) TH_LOG("%s: %s", cg, strerror(errno));
	snprintf(path, sizeof(path), "%s/cgroup.freeze", cg);
	snprintf(events, sizeof(events), "%s/cgroup.events", cg);
	if (access(path, W_OK)) {
		rmdir(cg);
		SKIP(return, "%.200s: %s", path, strerror(errno));
	}

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	pid = fork_child(_metadata, path);
	ASSERT_LT(0, pid);
	snprintf(path, sizeof(path), "%s/cgroup.freeze", cg);
	for (int round = 0; round < 3; round++) {
		__u64 t0 = umcg_now_ns(), t1;
		char held;

		ASSERT_EQ(0, write_file(path, "1"));
		EXPECT_TRUE(umcg_poll_ms(events_frozen(events, 1), FROZEN_MS))
			TH_LOG("round %d: never frozen; held worker %c",
			       round, umcg_proc_state(pid, sh->held_tid));
		t1 = umcg_now_ns();
		held = umcg_proc_state(pid, sh->held_tid);
		EXPECT_EQ(0, sh->held_after);
		ASSERT_EQ(0, write_file(path, "0"));
		EXPECT_TRUE(umcg_poll_ms(events_frozen(events, 0), FROZEN_MS));
		TH_LOG("round %d: frozen in %llu ms (held worker %c), thawed in %llu ms",
		       round, (unsigned long long)(t1 - t0) / 1000000, held,
		       (unsigned long long)(umcg_now_ns() - t1) / 1000000);
		if (_metadata->exit_code)
			break;
	}
	check_then_pick(_metadata);
	kill_child(_metadata, pid);
	EXPECT_TRUE(umcg_poll_ms(rmdir(cg) == 0, 5000));
	if (mounted)
		umount2(root, MNT_DETACH);
}

TEST_F(f, pm_freezer)
{
	char states[128] = "", old_timeout[32] = "";
	const char *state;
	__u64 t0;
	int ret, fd;
	pid_t pid;

	fd = open("/sys/power/state", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, states, sizeof(states) - 1) < 0)
			states[0] = '\0';
		close(fd);
	}
	state = strstr(states, "freeze") ? "freeze" :
		strstr(states, "mem") ? "mem" : NULL;
	if (!state || access("/sys/power/pm_test", W_OK))
		SKIP(return, "no suspend state or pm_test (CONFIG_PM_DEBUG)");

	pid = fork_child(_metadata, NULL);
	ASSERT_LT(0, pid);

	/* A refusal shows in seconds, not the default 20. */
	fd = open("/sys/power/pm_freeze_timeout", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (read(fd, old_timeout, sizeof(old_timeout) - 1) < 0)
			old_timeout[0] = '\0';
		close(fd);
		write_file("/sys/power/pm_freeze_timeout", "5000");
	}
	ASSERT_EQ(0, write_file("/sys/power/pm_test", "freezer"));
	t0 = umcg_now_ns();
	ret = write_file("/sys/power/state", state);
	TH_LOG("suspend freezer test (%s): %s after %llu ms", state,
	       ret ? strerror(-ret) : "frozen and thawed",
	       (unsigned long long)(umcg_now_ns() - t0) / 1000000);
	write_file("/sys/power/pm_test", "none");
	if (old_timeout[0])
		write_file("/sys/power/pm_freeze_timeout", old_timeout);
	EXPECT_EQ(0, ret) TH_LOG("suspend freezer test (%s): %s", state,
				 strerror(-ret));
	EXPECT_EQ(0, sh->held_after);

	check_then_pick(_metadata);
	kill_child(_metadata, pid);
}

TEST_F(f, group_stop)
{
	int status = 0;
	pid_t pid, got = 0;

	pid = fork_child(_metadata, NULL);
	ASSERT_LT(0, pid);

	ASSERT_EQ(0, kill(pid, SIGSTOP));
	EXPECT_TRUE(umcg_poll_ms((got = waitpid(pid, &status,
						WUNTRACED | WNOHANG)) != 0,
				 FROZEN_MS)) TH_LOG("never stopped");
	EXPECT_EQ(pid, got);
	EXPECT_TRUE(WIFSTOPPED(status));
	ASSERT_EQ(0, kill(pid, SIGCONT));

	check_then_pick(_metadata);
	kill_child(_metadata, pid);
}

TEST_HARNESS_MAIN
