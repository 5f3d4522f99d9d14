// SPDX-License-Identifier: GPL-2.0
/*
 * Description: UMCG_IOC_WAIT and UMCG_IOC_WAKE: a registered thread sleeps
 * until its state word reads RUNNING and another thread wakes it; a wake
 * that comes first is not lost; relative and absolute timeouts; signals;
 * the errors of unregistered callers, foreign files and foreign or dead
 * tids; a process killed while its threads wait leaves the module
 * unloadable; and many wake/wait rounds between two threads.
 *
 * The threads register as servers: a worker whose word reads RUNNING is
 * moved to BLOCKED by the kernel whenever it sleeps outside a umcg command
 * (a barrier, a join), and held when it returns (kmod_block tests that);
 * a server's WAIT and WAKE are the same commands without the moves.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <uapi/umcg.h>

#include "kmod_test.h"
#include "kmod_raw.h"

#define MS		1000000ULL
/* Generous bounds: the guest runs under TCG. */
#define LONG_NS		(20000 * MS)
#define PROMPT_NS	(5000 * MS)

/* The one valid mapping length of @fd's shared area, 0 if unknown. */
static size_t map_size(int fd)
{
	int max = umcg_max_tasks(fd);

	return max > 0 ? umcg_map_len(max) : 0;
}

/* ---- One process, module loaded by whoever ---- */

FIXTURE(w) {
	int fd;
	bool loaded;
	size_t len;
	struct umcg_task *map;
};

FIXTURE_SETUP(w)
{
	self->fd = -1;
	self->map = MAP_FAILED;
	if (!umcg_kmod_get(_metadata, &self->loaded))
		return;
	self->fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open: %s", strerror(errno));
	self->len = map_size(self->fd);
	ASSERT_LT(0, self->len);
	self->map = umcg_map(self->fd, self->len);
	ASSERT_NE(MAP_FAILED, self->map) TH_LOG("mmap: %s", strerror(errno));
}

FIXTURE_TEARDOWN(w)
{
	if (self->map != MAP_FAILED)
		EXPECT_EQ(0, munmap(self->map, self->len));
	if (self->fd >= 0)
		EXPECT_EQ(0, close(self->fd));
	if (self->loaded)
		EXPECT_EQ(0, umcg_test_kmod_unload(UMCG_KMOD_NAME));
}

/* A thread that registers, says so, and WAITs once. */
struct waiter {
	int fd;
	struct umcg_task *map;
	__u64 timeout_ns;
	bool handler;		/* install a SIGUSR1 handler first */
	/* results */
	_Atomic pid_t tid;
	int reg_ret;
	__u64 off;
	_Atomic bool waiting;	/* about to enter WAIT */
	_Atomic bool done;
	int wait_ret;
	__u64 t_done;
};

static _Atomic int sigusr1_count;

static void sigusr1_handler(int sig)
{
	(void)sig;
	sigusr1_count++;
}

static void *waiter_fn(void *arg)
{
	struct waiter *w = arg;

	if (w->handler) {
		struct sigaction sa = { .sa_handler = sigusr1_handler };

		sigemptyset(&sa.sa_mask);
		sigaction(SIGUSR1, &sa, NULL);
	}
	w->reg_ret = umcg_reg(w->fd, UMCG_REGISTER_SERVER, 0, 0, &w->off);
	w->tid = umcg_gettid();
	if (!w->reg_ret) {
		w->waiting = true;
		w->wait_ret = umcg_wait(w->fd, 0, w->timeout_ns);
		w->t_done = umcg_now_ns();
		umcg_unreg(w->fd);
	}
	w->done = true;
	return NULL;
}

/* Wait until @w is about to WAIT, then give it time to fall asleep. */
static bool waiter_ready(struct waiter *w)
{
	for (int i = 0; i < 20000 && !w->waiting && !w->done; i++)
		umcg_sleep_ms(1);
	if (!w->waiting)
		return false;
	umcg_sleep_ms(200);
	return true;
}

TEST_F(w, wake_after_running)
{
	struct waiter w = { .fd = self->fd, .timeout_ns = LONG_NS };
	struct umcg_task *t;
	pthread_t th;
	__u64 t_wake;

	ASSERT_EQ(0, pthread_create(&th, NULL, waiter_fn, &w));
	ASSERT_TRUE(waiter_ready(&w));
	ASSERT_EQ(0, w.reg_ret);
	t = &self->map[w.off / sizeof(*t)];
	/* Still asleep: nothing said RUNNING. */
	EXPECT_FALSE(w.done);
	/* A WAKE without RUNNING written leaves it asleep. */
	EXPECT_EQ(0, umcg_wake(self->fd, w.tid));
	umcg_sleep_ms(200);
	EXPECT_FALSE(w.done);

	umcg_state_store(t, UMCG_TASK_RUNNING);
	t_wake = umcg_now_ns();
	EXPECT_EQ(0, umcg_wake(self->fd, w.tid));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(0, w.wait_ret) TH_LOG("wait: %s", strerror(-w.wait_ret));
	EXPECT_GT(t_wake + PROMPT_NS, w.t_done)
		TH_LOG("woke after %llu ms",
		       (unsigned long long)(w.t_done - t_wake) / MS);
}

/* Flags in bits 8-15 do not hide RUNNING. */
TEST_F(w, running_with_flags)
{
	struct waiter w = { .fd = self->fd, .timeout_ns = LONG_NS };
	pthread_t th;

	ASSERT_EQ(0, pthread_create(&th, NULL, waiter_fn, &w));
	ASSERT_TRUE(waiter_ready(&w));
	ASSERT_EQ(0, w.reg_ret);
	umcg_state_store(&self->map[w.off / sizeof(struct umcg_task)],
		  UMCG_TASK_RUNNING | UMCG_TF_PREEMPT);
	EXPECT_EQ(0, umcg_wake(self->fd, w.tid));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(0, w.wait_ret) TH_LOG("wait: %s", strerror(-w.wait_ret));
}

TEST_F(w, wake_before_wait)
{
	__u64 off = 0, t0;

	ASSERT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0, &off));
	umcg_state_store(&self->map[off / sizeof(struct umcg_task)],
		  UMCG_TASK_RUNNING);
	EXPECT_EQ(0, umcg_wake(self->fd, umcg_gettid()));
	t0 = umcg_now_ns();
	EXPECT_EQ(0, umcg_wait(self->fd, 0, LONG_NS));
	EXPECT_GT(t0 + PROMPT_NS, umcg_now_ns());
	/* Already RUNNING and no WAKE at all: no sleep either. */
	t0 = umcg_now_ns();
	EXPECT_EQ(0, umcg_wait(self->fd, 0, 0));
	EXPECT_GT(t0 + PROMPT_NS, umcg_now_ns());
	EXPECT_EQ(0, umcg_unreg(self->fd));
}

TEST_F(w, timeout_relative)
{
	__u64 t0, t1;

	ASSERT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0, NULL));
	t0 = umcg_now_ns();
	EXPECT_EQ(-ETIMEDOUT, umcg_wait(self->fd, 0, 300 * MS));
	t1 = umcg_now_ns();
	EXPECT_LE(t0 + 300 * MS, t1);
	EXPECT_GT(t0 + PROMPT_NS, t1);
	/* A WAKE without RUNNING does not end it early either. */
	EXPECT_EQ(0, umcg_wake(self->fd, umcg_gettid()));
	t0 = umcg_now_ns();
	EXPECT_EQ(-ETIMEDOUT, umcg_wait(self->fd, 0, 100 * MS));
	EXPECT_LE(t0 + 100 * MS, umcg_now_ns());
	EXPECT_EQ(0, umcg_unreg(self->fd));
}

TEST_F(w, timeout_absolute)
{
	__u64 t0, abs;

	ASSERT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0, NULL));
	t0 = umcg_now_ns();
	abs = t0 + 300 * MS;
	EXPECT_EQ(-ETIMEDOUT, umcg_wait(self->fd, UMCG_WAIT_ABSTIME, abs));
	EXPECT_LE(abs, umcg_now_ns());
	EXPECT_GT(t0 + PROMPT_NS, umcg_now_ns());
	/* In the past: at once. */
	t0 = umcg_now_ns();
	EXPECT_EQ(-ETIMEDOUT, umcg_wait(self->fd, UMCG_WAIT_ABSTIME, 1));
	EXPECT_GT(t0 + PROMPT_NS, umcg_now_ns());
	/* Absolute, not relative: a deadline 300 ms ago does not wait. */
	t0 = umcg_now_ns();
	EXPECT_EQ(-ETIMEDOUT,
		  umcg_wait(self->fd, UMCG_WAIT_ABSTIME, t0 - 300 * MS));
	EXPECT_GT(t0 + 250 * MS, umcg_now_ns());
	EXPECT_EQ(0, umcg_unreg(self->fd));
}

TEST_F(w, signal_interrupts)
{
	struct waiter w = {
		.fd = self->fd,
		.timeout_ns = LONG_NS,
		.handler = true,
	};
	pthread_t th;
	__u64 t0;

	sigusr1_count = 0;
	ASSERT_EQ(0, pthread_create(&th, NULL, waiter_fn, &w));
	ASSERT_TRUE(waiter_ready(&w));
	ASSERT_EQ(0, w.reg_ret);
	EXPECT_FALSE(w.done);
	t0 = umcg_now_ns();
	ASSERT_EQ(0, pthread_kill(th, SIGUSR1));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(-EINTR, w.wait_ret) TH_LOG("wait: %s", strerror(-w.wait_ret));
	EXPECT_EQ(1, sigusr1_count);
	EXPECT_GT(t0 + PROMPT_NS, w.t_done);
	signal(SIGUSR1, SIG_DFL);
}

/*
 * WAKE @tid until -ESRCH, for at most ~5 s: pthread_join() returns when
 * the thread's tid word is cleared, a little before the kernel detaches
 * its pid.  Returns the last result.
 */
static int wake_until_esrch(int fd, pid_t tid)
{
	int ret = 0;

	for (int i = 0; i < 5000; i++) {
		ret = umcg_wake(fd, tid);
		if (ret != 0)
			break;
		umcg_sleep_ms(1);
	}
	return ret;
}

static void *reg_exit_fn(void *arg)
{
	struct waiter *w = arg;

	w->reg_ret = umcg_reg(w->fd, UMCG_REGISTER_SERVER, 0, 0, NULL);
	w->tid = umcg_gettid();
	return NULL;
}

TEST_F(w, wake_esrch)
{
	struct waiter w = { .fd = self->fd };
	int pipefd[2], status;
	pthread_t th;
	pid_t child, ctid;

	/* Nobody registered: not even the caller. */
	EXPECT_EQ(-ESRCH, umcg_wake(self->fd, umcg_gettid()));
	EXPECT_EQ(-ESRCH, umcg_wake(self->fd, getpid() + 100000));
	ASSERT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0, NULL));
	EXPECT_EQ(0, umcg_wake(self->fd, umcg_gettid()));
	EXPECT_EQ(-ESRCH, umcg_wake(self->fd, 0));
	EXPECT_EQ(-ESRCH, umcg_wake(self->fd, -1));
	EXPECT_EQ(-ESRCH, umcg_wake(self->fd, 1));

	/* A thread that exited registered. */
	ASSERT_EQ(0, pthread_create(&th, NULL, reg_exit_fn, &w));
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(0, w.reg_ret);
	EXPECT_EQ(-ESRCH, wake_until_esrch(self->fd, w.tid));

	/* Another process's registered thread. */
	ASSERT_EQ(0, pipe(pipefd));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		int fd2 = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);

		close(pipefd[0]);
		if (fd2 < 0 || umcg_reg(fd2, UMCG_REGISTER_SERVER, 0, 0, NULL))
			_exit(1);
		ctid = umcg_gettid();
		if (write(pipefd[1], &ctid, sizeof(ctid)) != sizeof(ctid))
			_exit(2);
		for (;;)
			pause();
	}
	close(pipefd[1]);
	ASSERT_EQ(sizeof(ctid), read(pipefd[0], &ctid, sizeof(ctid)));
	close(pipefd[0]);
	EXPECT_EQ(child, ctid);
	EXPECT_EQ(-ESRCH, umcg_wake(self->fd, ctid));
	ASSERT_EQ(0, kill(child, SIGKILL));
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_EQ(0, umcg_unreg(self->fd));
	/* Unregistered now. */
	EXPECT_EQ(-ESRCH, umcg_wake(self->fd, umcg_gettid()));
}

static void *wait_unreg_fn(void *arg)
{
	struct waiter *w = arg;

	w->wait_ret = umcg_wait(w->fd, 0, 0);
	return NULL;
}

TEST_F(w, wait_unregistered)
{
	struct waiter w = { .fd = self->fd };
	pthread_t th;
	pid_t child;
	int status;

	EXPECT_EQ(-ENOENT, umcg_wait(self->fd, 0, 0));
	EXPECT_EQ(-ENOENT, umcg_wait(self->fd, UMCG_WAIT_ABSTIME, 1));
	ASSERT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0, NULL));
	/* Another thread of the process, not registered. */
	ASSERT_EQ(0, pthread_create(&th, NULL, wait_unreg_fn, &w));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(-ENOENT, w.wait_ret);

	/* Another process through this process's file: -EPERM. */
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		if (umcg_wait(self->fd, 0, 0) != -EPERM)
			_exit(1);
		if (umcg_wake(self->fd, getppid()) != -EPERM)
			_exit(2);
		_exit(0);
	}
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("child status %#x", status);

	EXPECT_EQ(0, umcg_unreg(self->fd));
	EXPECT_EQ(-ENOENT, umcg_wait(self->fd, 0, 0));
}

/* WAKE racing with the exit of its target: 0 or -ESRCH, never worse. */
TEST_F(w, wake_exiting)
{
	for (int i = 0; i < 20; i++) {
		struct waiter w = { .fd = self->fd };
		pthread_t th;
		int ret, n = 0;

		ASSERT_EQ(0, pthread_create(&th, NULL, reg_exit_fn, &w));
		while (!w.tid)
			;
		do {
			ret = umcg_wake(self->fd, w.tid);
			ASSERT_TRUE(ret == 0 || ret == -ESRCH)
				TH_LOG("wake: %s", strerror(-ret));
		} while (ret == 0 && ++n < 100000);
		ASSERT_EQ(0, pthread_join(th, NULL));
		ASSERT_EQ(0, w.reg_ret);
		EXPECT_EQ(-ESRCH, wake_until_esrch(self->fd, w.tid));
	}
}

#define ROUNDS	1000

struct pp {
	int fd;
	struct umcg_task *map;
	pthread_barrier_t barrier;
	_Atomic pid_t tid[2];
	__u64 off[2];
	int reg_ret[2];
	_Atomic unsigned int turn;	/* incremented by whoever runs */
	int rounds[2];
	int err[2];
};

struct pp_arg {
	struct pp *pp;
	int me;
};

static void *pp_fn(void *arg)
{
	struct pp_arg *a = arg;
	struct pp *pp = a->pp;
	int me = a->me, other = !me;
	struct umcg_task *mine, *theirs;
	int ret;

	pp->reg_ret[me] = umcg_reg(pp->fd, UMCG_REGISTER_SERVER, 0, 0, &pp->off[me]);
	pp->tid[me] = umcg_gettid();
	pthread_barrier_wait(&pp->barrier);
	if (pp->reg_ret[0] || pp->reg_ret[1])
		return NULL;
	mine = &pp->map[pp->off[me] / sizeof(*mine)];
	theirs = &pp->map[pp->off[other] / sizeof(*theirs)];
	/* Thread 0 starts RUNNING (set before the barrier by the test). */
	for (int i = 0; i < ROUNDS; i++) {
		ret = umcg_wait(pp->fd, 0, LONG_NS);
		if (ret) {
			pp->err[me] = ret;
			break;
		}
		/* Strict alternation: 0 runs on even turns, 1 on odd. */
		if (pp->turn % 2 != (unsigned int)me) {
			pp->err[me] = -EPROTO;
			break;
		}
		pp->turn++;
		pp->rounds[me]++;
		umcg_state_store(mine, UMCG_TASK_RUNNABLE);
		umcg_state_store(theirs, UMCG_TASK_RUNNING);
		/* Thread 0 is done (and gone) after its last round. */
		if (me == 1 && i == ROUNDS - 1)
			break;
		ret = umcg_wake(pp->fd, pp->tid[other]);
		if (ret) {
			pp->err[me] = ret;
			break;
		}
	}
	umcg_unreg(pp->fd);
	return NULL;
}

/* 2 * ROUNDS switches under TCG on a shared host: more than 30 s. */
TEST_F_TIMEOUT(w, ping_pong, 180)
{
	struct pp pp = { .fd = self->fd, .map = self->map };
	struct pp_arg a[2] = { { &pp, 0 }, { &pp, 1 } };
	pthread_t th[2];

	ASSERT_EQ(0, pthread_barrier_init(&pp.barrier, NULL, 3));
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_create(&th[i], NULL, pp_fn, &a[i]));
	/* Both registered (zeroed slots) once the first wait returns. */
	while (!pp.tid[0] || !pp.tid[1])
		umcg_sleep_ms(1);
	pthread_barrier_wait(&pp.barrier);
	ASSERT_EQ(0, pp.reg_ret[0]);
	ASSERT_EQ(0, pp.reg_ret[1]);
	umcg_state_store(&self->map[pp.off[0] / sizeof(struct umcg_task)],
		  UMCG_TASK_RUNNING);
	EXPECT_EQ(0, umcg_wake(self->fd, pp.tid[0]));
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, pthread_join(th[i], NULL));
	EXPECT_EQ(0, pp.err[0]) TH_LOG("thread 0: %s", strerror(-pp.err[0]));
	EXPECT_EQ(0, pp.err[1]) TH_LOG("thread 1: %s", strerror(-pp.err[1]));
	EXPECT_EQ(ROUNDS, pp.rounds[0]);
	EXPECT_EQ(ROUNDS, pp.rounds[1]);
	EXPECT_EQ(2 * ROUNDS, pp.turn);
	pthread_barrier_destroy(&pp.barrier);
}

/* ---- Module lifetime: starts with umcg.ko unloaded ---- */

FIXTURE(life) {
	char path[PATH_MAX];
	bool was_loaded;
};

FIXTURE_SETUP(life)
{
	int ret;

	if (!umcg_kmod_find(_metadata, self->path, sizeof(self->path)))
		return;
	self->was_loaded = umcg_test_kmod_loaded(UMCG_KMOD_NAME);
	ret = umcg_test_kmod_unload(UMCG_KMOD_NAME);
	ASSERT_TRUE(ret == 0 || ret == -ENOENT)
		TH_LOG("unloading umcg: %s", strerror(-ret));
	ASSERT_EQ(0, umcg_test_kmod_load(self->path));
}

FIXTURE_TEARDOWN(life)
{
	int ret;

	if (self->was_loaded) {
		ret = umcg_test_kmod_load(self->path);
		EXPECT_TRUE(ret == 0 || ret == -EEXIST);
	} else {
		ret = umcg_test_kmod_unload(UMCG_KMOD_NAME);
		EXPECT_TRUE(ret == 0 || ret == -ENOENT);
	}
}

#define KILL_WAITERS	4

static void *kill_waiter_fn(void *arg)
{
	int fd = *(int *)arg;

	if (umcg_reg(fd, UMCG_REGISTER_SERVER, 0, 0, NULL))
		_exit(20);
	umcg_wait(fd, 0, 0);
	_exit(21);
}

/* A process whose threads all sleep in WAIT, killed. */
TEST_F(life, sigkill_in_wait)
{
	pthread_t th[KILL_WAITERS];
	int pipefd[2], status;
	pid_t child;
	char c = 0;

	ASSERT_EQ(0, pipe(pipefd));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		int fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
		size_t len;

		close(pipefd[0]);
		if (fd < 0)
			_exit(10);
		len = map_size(fd);
		if (!len || umcg_map(fd, len) == MAP_FAILED)
			_exit(11);
		if (umcg_reg(fd, UMCG_REGISTER_SERVER, 0, 0, NULL))
			_exit(12);
		for (int i = 0; i < KILL_WAITERS; i++)
			if (pthread_create(&th[i], NULL, kill_waiter_fn, &fd))
				_exit(13);
		if (write(pipefd[1], &c, 1) != 1)
			_exit(14);
		umcg_wait(fd, 0, 0);
		_exit(15);
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	close(pipefd[0]);
	/* Give the threads time to register and fall asleep. */
	umcg_sleep_ms(300);
	EXPECT_EQ(-UMCG_EINUSE, umcg_test_kmod_unload(UMCG_KMOD_NAME));
	/* Still there, asleep. */
	EXPECT_EQ(0, waitpid(child, &status, WNOHANG));
	ASSERT_EQ(0, kill(child, SIGKILL));
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		TH_LOG("status %#x", status);
	EXPECT_EQ(0, umcg_unload_eventually(2000));
	EXPECT_FALSE(umcg_test_kmod_loaded(UMCG_KMOD_NAME));
}

TEST_HARNESS_MAIN
