// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the moves umcg.ko makes on a worker by itself, through raw
 * ioctls: a worker that blocks in read() is moved RUNNING -> BLOCKED, its
 * server is poked and its event bit set; when the read completes it is
 * moved BLOCKED -> RUNNABLE and runs no user code until the test picks it
 * (RUNNING + UMCG_IOC_WAKE); UMCG_IOC_PREEMPT moves a spinning worker to
 * RUNNABLE and holds it; a worker sleeping in a umcg command is not moved;
 * SWITCH runs its target on the caller's CPU; a worker exiting RUNNING is
 * moved to DONE where the hook sees exits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <uapi/umcg.h>

#include "kmod_test.h"

#define MS		1000000ULL
/* "Does not happen" window and "does happen" bound; TCG is slow. */
#define QUIET_MS	300
#define PROMPT_MS	20000
/* Switches per worker: 10,000 in all. */
#define SWITCHES	5000

static pid_t gettid_(void)
{
	return syscall(SYS_gettid);
}

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int ioc(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static __u32 load(struct umcg_task *t)
{
	return __atomic_load_n(&t->state, __ATOMIC_SEQ_CST);
}

static void store(struct umcg_task *t, __u32 s)
{
	__atomic_store_n(&t->state, s, __ATOMIC_SEQ_CST);
}

/* Poll until @t's state (bits 0-7) is @state; false after PROMPT_MS. */
static bool await_state(struct umcg_task *t, __u32 state)
{
	for (int i = 0; i < PROMPT_MS; i++) {
		if ((load(t) & UMCG_TASK_STATE_MASK) == state)
			return true;
		sleep_ms(1);
	}
	return false;
}

/* The group: one server slot (the test's main thread) and workers. */
struct grp {
	int fd;
	size_t len;
	struct umcg_task *map;
	__u64 *events;
	pid_t server_tid;
	struct umcg_task *server;
};

static int grp_open(struct grp *g)
{
	struct umcg_info info = { .size = sizeof(info) };
	struct umcg_register_args r = {
		.size = sizeof(r), .flags = UMCG_REGISTER_SERVER, .cpu = 0,
	};
	long page = sysconf(_SC_PAGESIZE);

	g->fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (g->fd < 0)
		return -errno;
	if (ioctl(g->fd, UMCG_IOC_GET_INFO, &info))
		return -errno;
	g->len = UMCG_MMAP_SIZE(info.max_tasks, page);
	g->map = mmap(NULL, g->len, PROT_READ | PROT_WRITE, MAP_SHARED, g->fd,
		      UMCG_MMAP_TASKS_OFF);
	if (g->map == MAP_FAILED)
		return -errno;
	g->events = (__u64 *)((char *)g->map +
			      UMCG_MMAP_EVENTS_OFF(info.max_tasks, page));
	if (ioctl(g->fd, UMCG_IOC_REGISTER, &r))
		return -errno;
	g->server = &g->map[r.task_off / sizeof(struct umcg_task)];
	g->server_tid = gettid_();
	return 0;
}

/* Take and return the event bits of slot @t. */
static bool take_event(struct grp *g, struct umcg_task *t)
{
	unsigned int i = t - g->map;
	__u64 bit = 1ULL << (i % 64);

	return __atomic_fetch_and(&g->events[i / 64], ~bit,
				  __ATOMIC_SEQ_CST) & bit;
}

/*
 * Take @t's event bit, waiting for it up to PROMPT_MS: the kernel sets it
 * just after the move a caller may already have seen.
 */
static bool await_event(struct grp *g, struct umcg_task *t)
{
	for (int i = 0; i < PROMPT_MS; i++) {
		if (take_event(g, t))
			return true;
		sleep_ms(1);
	}
	return false;
}

/* Server: doorbell armed (RUNNABLE), then WAIT until poked. */
static int server_wait(struct grp *g)
{
	struct umcg_wait_args w = {
		.size = sizeof(w), .flags = UMCG_WAIT_ABSTIME,
		.timeout_ns = now_ns() + PROMPT_MS * MS,
	};

	return ioc(g->fd, UMCG_IOC_WAIT, &w);
}

static int wake(struct grp *g, pid_t tid)
{
	struct umcg_wake_args a = { .size = sizeof(a), .tid = tid };

	return ioc(g->fd, UMCG_IOC_WAKE, &a);
}

/* A worker thread: registers, waits to be picked, then runs @fn. */
struct worker {
	struct grp *g;
	void (*fn)(struct worker *w);
	pthread_t th;
	_Atomic pid_t tid;
	struct umcg_task *task;
	int pipe[2];
	_Atomic int phase;		/* set by the worker as it goes */
	_Atomic __u64 spins;
	_Atomic int stop;
	int err;
	int cpu_same, cpu_total;
	struct worker *peer;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct umcg_register_args r = {
		.size = sizeof(r), .flags = UMCG_REGISTER_WORKER,
	};
	struct umcg_wait_args wa = { .size = sizeof(wa) };

	w->err = ioc(w->g->fd, UMCG_IOC_REGISTER, &r);
	if (w->err) {
		w->tid = -1;
		return NULL;
	}
	w->task = &w->g->map[r.task_off / sizeof(struct umcg_task)];
	w->task->server_tid = w->g->server_tid;
	store(w->task, UMCG_TASK_RUNNABLE);
	w->tid = gettid_();
	/* Picked: the test stores RUNNING and wakes us. */
	w->err = ioc(w->g->fd, UMCG_IOC_WAIT, &wa);
	if (!w->err)
		w->fn(w);
	return NULL;
}

static int worker_start(struct grp *g, struct worker *w,
			void (*fn)(struct worker *w))
{
	w->g = g;
	w->fn = fn;
	if (pipe(w->pipe))
		return -errno;
	if (pthread_create(&w->th, NULL, worker_main, w))
		return -EAGAIN;
	while (!w->tid)
		sleep_ms(1);
	return w->tid < 0 ? w->err : 0;
}

/* Pick @w: RUNNING, then WAKE. */
static int pick(struct worker *w)
{
	store(w->task, UMCG_TASK_RUNNING);
	return wake(w->g, w->tid);
}

static void blocker_fn(struct worker *w)
{
	char c;

	w->phase = 1;
	if (read(w->pipe[0], &c, 1) != 1)
		w->err = -errno;
	/* Only after the test picked us again. */
	w->phase = 2;
	store(w->task, UMCG_TASK_DONE);
}

FIXTURE(blk) {
	bool loaded;
	struct grp g;
};

FIXTURE_SETUP(blk)
{
	int ret;

	self->g.fd = -1;
	if (!umcg_kmod_get(_metadata, &self->loaded))
		return;
	ret = grp_open(&self->g);
	ASSERT_EQ(0, ret) TH_LOG("group: %s", strerror(-ret));
}

FIXTURE_TEARDOWN(blk)
{
	if (self->g.fd >= 0) {
		munmap(self->g.map, self->g.len);
		close(self->g.fd);
	}
}

/* read() on an empty pipe: BLOCKED, server poked; then held until picked. */
TEST_F(blk, read_block_and_wake)
{
	struct grp *g = &self->g;
	struct worker w = {};
	__u64 t_write;

	ASSERT_EQ(0, worker_start(g, &w, blocker_fn));
	store(g->server, UMCG_TASK_RUNNABLE);
	ASSERT_EQ(0, pick(&w));

	/* It blocks in read(): the kernel moves it and pokes us. */
	ASSERT_EQ(0, server_wait(g));
	ASSERT_TRUE(await_state(w.task, UMCG_TASK_BLOCKED))
		TH_LOG("state %#x", load(w.task));
	/* The poke follows the move and the event bit. */
	EXPECT_TRUE(await_state(g->server, UMCG_TASK_RUNNING));
	EXPECT_TRUE(await_event(g, w.task));
	EXPECT_NE(0, w.task->blocked_ns);
	EXPECT_EQ(1, w.phase);

	/* Written from outside the group: RUNNABLE, poked, but held. */
	store(g->server, UMCG_TASK_RUNNABLE);
	t_write = now_ns();
	ASSERT_EQ(1, write(w.pipe[1], "x", 1));
	ASSERT_EQ(0, server_wait(g));
	ASSERT_TRUE(await_state(w.task, UMCG_TASK_RUNNABLE))
		TH_LOG("state %#x", load(w.task));
	EXPECT_TRUE(await_event(g, w.task));
	EXPECT_LE(t_write, w.task->woken_ns);
	sleep_ms(QUIET_MS);
	EXPECT_EQ(1, w.phase) TH_LOG("ran user code before it was picked");
	EXPECT_EQ(UMCG_TASK_RUNNABLE, load(w.task) & UMCG_TASK_STATE_MASK);

	ASSERT_EQ(0, pick(&w));
	ASSERT_EQ(0, pthread_join(w.th, NULL));
	EXPECT_EQ(0, w.err);
	EXPECT_EQ(2, w.phase);
}

/* A worker sleeping in UMCG_IOC_WAIT is not moved. */
TEST_F(blk, umcg_wait_not_a_block)
{
	struct grp *g = &self->g;
	struct worker w = {};
	__u32 seq;

	ASSERT_EQ(0, worker_start(g, &w, blocker_fn));
	sleep_ms(QUIET_MS);
	seq = w.task->seq;
	EXPECT_EQ(UMCG_TASK_RUNNABLE, load(w.task) & UMCG_TASK_STATE_MASK);
	EXPECT_FALSE(take_event(g, w.task));
	EXPECT_EQ(0, seq);
	ASSERT_EQ(0, pick(&w));
	/* Now it blocks in read(): that one counts. */
	ASSERT_TRUE(await_state(w.task, UMCG_TASK_BLOCKED));
	ASSERT_EQ(1, write(w.pipe[1], "x", 1));
	ASSERT_TRUE(await_state(w.task, UMCG_TASK_RUNNABLE));
	EXPECT_EQ(2, w.task->seq);
	ASSERT_EQ(0, pick(&w));
	ASSERT_EQ(0, pthread_join(w.th, NULL));
	EXPECT_EQ(2, w.phase);
}

static void spinner_fn(struct worker *w)
{
	w->phase = 1;
	while (!w->stop)
		w->spins++;
	w->phase = 2;
	store(w->task, UMCG_TASK_DONE);
}

/* UMCG_IOC_PREEMPT: RUNNING|TF_PREEMPT -> RUNNABLE, held until picked. */
TEST_F(blk, preempt_spinner)
{
	struct grp *g = &self->g;
	struct umcg_preempt_args p = { .size = sizeof(p) };
	struct worker w = {};
	__u64 spins;

	ASSERT_EQ(0, worker_start(g, &w, spinner_fn));
	ASSERT_EQ(0, pick(&w));
	while (!w.phase)
		sleep_ms(1);

	/* Without the flag, the request is ignored. */
	p.tid = w.tid;
	ASSERT_EQ(0, ioc(g->fd, UMCG_IOC_PREEMPT, &p));
	sleep_ms(QUIET_MS);
	EXPECT_EQ(UMCG_TASK_RUNNING, load(w.task));

	store(g->server, UMCG_TASK_RUNNABLE);
	store(w.task, UMCG_TASK_RUNNING | UMCG_TF_PREEMPT);
	ASSERT_EQ(0, ioc(g->fd, UMCG_IOC_PREEMPT, &p));
	ASSERT_TRUE(await_state(w.task, UMCG_TASK_RUNNABLE));
	EXPECT_EQ(UMCG_TASK_RUNNABLE, load(w.task)) TH_LOG("flag not cleared");
	EXPECT_TRUE(await_event(g, w.task));
	/* The poke follows the move and the event bit. */
	EXPECT_TRUE(await_state(g->server, UMCG_TASK_RUNNING));
	spins = w.spins;
	sleep_ms(QUIET_MS);
	EXPECT_EQ(spins, w.spins) TH_LOG("still spinning while RUNNABLE");

	w.stop = 1;
	ASSERT_EQ(0, pick(&w));
	ASSERT_EQ(0, pthread_join(w.th, NULL));
	EXPECT_EQ(2, w.phase);
}

/*
 * Two workers switch to each other; each, back from SWITCH, looks whether
 * it runs on the CPU its peer switched from (@switch_cpu).
 */
static _Atomic int switch_cpu = -1;

static void switcher_fn(struct worker *w)
{
	struct umcg_switch_args s = { .size = sizeof(s) };
	struct worker *peer = w->peer;

	while (!peer->task)
		sched_yield();
	for (int i = 0; i < SWITCHES && !peer->stop; i++) {
		store(w->task, UMCG_TASK_RUNNABLE);
		store(peer->task, UMCG_TASK_RUNNING);
		s.next_tid = peer->tid;
		switch_cpu = sched_getcpu();
		w->err = ioc(w->g->fd, UMCG_IOC_SWITCH, &s);
		if (w->err || peer->stop)
			break;
		w->cpu_total++;
		if (sched_getcpu() == switch_cpu)
			w->cpu_same++;
	}
	w->stop = 1;
	/* Let the peer out of its last SWITCH (or find it gone). */
	store(peer->task, UMCG_TASK_RUNNING);
	wake(w->g, peer->tid);
	store(w->task, UMCG_TASK_DONE);
}

TEST_F_TIMEOUT(blk, switch_same_cpu, 300)
{
	struct grp *g = &self->g;
	struct worker a = {}, b = {};
	int same, total;

	a.peer = &b;
	b.peer = &a;
	ASSERT_EQ(0, worker_start(g, &a, switcher_fn));
	ASSERT_EQ(0, worker_start(g, &b, switcher_fn));
	/* b waits in WAIT until a switches to it. */
	ASSERT_EQ(0, pick(&a));
	ASSERT_EQ(0, pthread_join(a.th, NULL));
	ASSERT_EQ(0, pthread_join(b.th, NULL));
	EXPECT_EQ(0, a.err);
	EXPECT_EQ(0, b.err);
	same = a.cpu_same + b.cpu_same;
	total = a.cpu_total + b.cpu_total;
	TH_LOG("%d of %d switches landed on the caller's CPU", same, total);
	EXPECT_LE(SWITCHES, total);	/* one worker's, at least */
	EXPECT_LE(total * 99, same * 100);
}

static void exiter_fn(struct worker *w)
{
	w->phase = 1;
	/*
	 * Exit RUNNING and registered, straight into the kernel: glibc's
	 * thread exit could block (RUNNING -> BLOCKED) on the way.
	 */
	syscall(SYS_exit, 0);
}

/* A worker that exits RUNNING is moved to DONE (where the hook sees it). */
TEST_F(blk, exit_running_done)
{
	struct grp *g = &self->g;
	struct worker w = {};
	char hook[32] = "";
	FILE *f = fopen("/sys/class/misc/umcg/hook", "r");

	if (f) {
		if (!fgets(hook, sizeof(hook), f))
			hook[0] = 0;
		fclose(f);
	}
	if (strncmp(hook, "tracepoint", 10))
		SKIP(return, "block detection by %s does not see exits", hook);

	ASSERT_EQ(0, worker_start(g, &w, exiter_fn));
	store(g->server, UMCG_TASK_RUNNABLE);
	ASSERT_EQ(0, pick(&w));
	/* The join returns at exit_mm(), before the thread's last schedule. */
	ASSERT_EQ(0, pthread_join(w.th, NULL));
	EXPECT_TRUE(await_state(w.task, UMCG_TASK_DONE))
		TH_LOG("state %#x", load(w.task));
	EXPECT_TRUE(await_event(g, w.task));
	/* The poke follows the move and the event bit. */
	EXPECT_TRUE(await_state(g->server, UMCG_TASK_RUNNING));
}

TEST_HARNESS_MAIN
