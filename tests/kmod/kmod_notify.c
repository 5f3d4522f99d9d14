// SPDX-License-Identifier: GPL-2.0
/*
 * Description: what is no signal does not look like one.
 *
 *   preempt_epoll   UMCG_IOC_PREEMPT of a RUNNING|UMCG_TF_INLIB worker
 *                   asleep in epoll_wait() (library code: neither moved
 *                   nor preempted) must not cut that sleep short: it
 *                   times out, it does not fail with EINTR;
 *   wait_task_work  io_uring task work queued (TWA_SIGNAL) on a thread
 *                   asleep in UMCG_IOC_WAIT, untimed and with an absolute
 *                   timeout, runs (the completion is posted) and the
 *                   wait goes on: no EINTR; a WAKE then ends it with 0;
 *   wait_signal     a real signal (a handler) still ends WAIT with EINTR.
 *
 * Raw ioctls (kmod_raw.h), raw io_uring system calls.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <uapi/umcg.h>

#include "kmod_test.h"
#include "kmod_raw.h"

#define READY_MS	60000
#define EPOLL_MS	1500

FIXTURE(n) {
	struct umcg_kmod_dev d;
};

FIXTURE_SETUP(n)
{
	umcg_kmod_dev_open(_metadata, &self->d);
}

FIXTURE_TEARDOWN(n)
{
	umcg_kmod_dev_close(_metadata, &self->d);
}

struct ring;

struct thr {
	int fd;
	struct umcg_task *map;
	__u32 flags;		/* REGISTER as */
	__u64 abs_ns;		/* WAIT's absolute timeout, 0 none */
	struct ring *ring;	/* io_uring to poll through, or NULL */
	int pipe_rd;
	_Atomic pid_t tid;
	struct umcg_task *task;
	_Atomic int phase;	/* 1 about to sleep, 2 returned */
	int ret, err;
	__u64 t0, t1;
};

/* RUNNING|INLIB worker: epoll_wait() on an empty pipe for EPOLL_MS. */
static void *epoll_fn(void *arg)
{
	struct thr *t = arg;
	struct epoll_event ev = { .events = EPOLLIN };
	__u64 off = 0;
	int ep;

	t->ret = umcg_reg(t->fd, UMCG_REGISTER_WORKER, 0, 0, &off);
	if (t->ret) {
		t->phase = 2;
		return NULL;
	}
	t->task = &t->map[umcg_slot_idx(off)];
	ep = epoll_create1(EPOLL_CLOEXEC);
	epoll_ctl(ep, EPOLL_CTL_ADD, t->pipe_rd, &ev);
	umcg_state_store(t->task, UMCG_TASK_RUNNING | UMCG_TF_INLIB);
	t->tid = umcg_gettid();
	t->t0 = umcg_now_ns();
	t->phase = 1;
	t->ret = epoll_wait(ep, &ev, 1, EPOLL_MS);
	t->err = errno;
	t->t1 = umcg_now_ns();
	umcg_state_store(t->task, UMCG_TASK_RUNNING);
	t->phase = 2;
	umcg_unreg(t->fd);
	close(ep);
	return NULL;
}

TEST_F(n, preempt_epoll)
{
	struct thr t = { .fd = self->d.fd, .map = self->d.map };
	int p[2];
	pthread_t th;

	ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
	t.pipe_rd = p[0];
	ASSERT_EQ(0, pthread_create(&th, NULL, epoll_fn, &t));
	ASSERT_TRUE(umcg_poll_ms(t.phase >= 1, READY_MS));
	ASSERT_EQ(0, t.ret);
	ASSERT_TRUE(umcg_poll_ms(umcg_proc_state(0, t.tid) == 'S', READY_MS));
	ASSERT_EQ(0, umcg_preempt(self->d.fd, t.tid));
	ASSERT_TRUE(umcg_poll_ms(t.phase == 2, READY_MS));
	pthread_join(th, NULL);
	EXPECT_EQ(0, t.ret) TH_LOG("epoll_wait: %d, %s after %llu ms", t.ret,
				    strerror(t.err),
				    (t.t1 - t.t0) / UMCG_MS);
	EXPECT_LE((EPOLL_MS - 50) * UMCG_MS, t.t1 - t.t0);
	close(p[0]);
	close(p[1]);
}

/* ---- io_uring, raw ---- */

struct ring {
	int fd;
	void *sq, *cq;
	size_t sq_len, cq_len;
	struct io_uring_sqe *sqes;
	size_t sqes_len;
	struct io_uring_params p;
};

static int ring_init(struct ring *r)
{
	memset(r, 0, sizeof(*r));
	r->fd = syscall(__NR_io_uring_setup, 4, &r->p);
	if (r->fd < 0)
		return -errno;
	r->sq_len = r->p.sq_off.array + r->p.sq_entries * sizeof(__u32);
	r->cq_len = r->p.cq_off.cqes +
		    r->p.cq_entries * sizeof(struct io_uring_cqe);
	r->sq = mmap(NULL, r->sq_len, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQ_RING);
	r->cq = mmap(NULL, r->cq_len, PROT_READ | PROT_WRITE,
		     MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_CQ_RING);
	r->sqes_len = r->p.sq_entries * sizeof(struct io_uring_sqe);
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
	if (r->sq == MAP_FAILED || r->cq == MAP_FAILED ||
	    r->sqes == MAP_FAILED)
		return -ENOMEM;
	return 0;
}

static void ring_fini(struct ring *r)
{
	munmap(r->sq, r->sq_len);
	munmap(r->cq, r->cq_len);
	munmap(r->sqes, r->sqes_len);
	close(r->fd);
}

/* Submit a POLL_ADD (POLLIN) of @fd; returns io_uring_enter()'s. */
static int ring_poll_add(struct ring *r, int fd)
{
	__u32 *tail = (__u32 *)((char *)r->sq + r->p.sq_off.tail);
	__u32 mask = *(__u32 *)((char *)r->sq + r->p.sq_off.ring_mask);
	__u32 *array = (__u32 *)((char *)r->sq + r->p.sq_off.array);
	__u32 t = *tail, i = t & mask;
	struct io_uring_sqe *sqe = &r->sqes[i];

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_POLL_ADD;
	sqe->fd = fd;
	sqe->poll32_events = POLLIN;
	sqe->user_data = 42;
	array[i] = i;
	__atomic_store_n(tail, t + 1, __ATOMIC_RELEASE);
	return syscall(__NR_io_uring_enter, r->fd, 1, 0, 0, NULL, 0);
}

/* Completions posted so far. */
static unsigned int ring_cqes(struct ring *r)
{
	__u32 *tail = (__u32 *)((char *)r->cq + r->p.cq_off.tail);
	__u32 *head = (__u32 *)((char *)r->cq + r->p.cq_off.head);

	return __atomic_load_n(tail, __ATOMIC_ACQUIRE) - *head;
}

static _Atomic int sig_count;

static void on_sig(int sig)
{
	(void)sig;
	sig_count++;
}

/* Registered server: submit a poll on the ring (if any), then WAIT once. */
static void *wait_fn(void *arg)
{
	struct thr *t = arg;
	__u64 off = 0;

	t->ret = umcg_reg(t->fd, UMCG_REGISTER_SERVER, 0, 0, &off);
	if (t->ret) {
		t->phase = 2;
		return NULL;
	}
	t->task = &t->map[umcg_slot_idx(off)];
	umcg_state_store(t->task, UMCG_TASK_RUNNABLE);
	t->tid = umcg_gettid();
	if (t->ring) {
		if (ring_poll_add(t->ring, t->pipe_rd) != 1) {
			t->ret = -errno;
			t->phase = 2;
			return NULL;
		}
	}
	t->phase = 1;
	t->ret = umcg_wait(t->fd, t->abs_ns ? UMCG_WAIT_ABSTIME : 0,
			   t->abs_ns);
	t->phase = 2;
	umcg_unreg(t->fd);
	return NULL;
}

static void wait_task_work(struct __test_metadata *_metadata,
			   FIXTURE_DATA(n) *self, bool abs)
{
	struct thr t = { .fd = self->d.fd, .map = self->d.map };
	struct ring r;
	pthread_t th;
	int p[2], ret;

	ret = ring_init(&r);
	if (ret)
		SKIP(return, "io_uring: %s", strerror(-ret));
	ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
	t.pipe_rd = p[0];
	t.ring = &r;
	t.abs_ns = abs ? umcg_now_ns() + 60000 * UMCG_MS : 0;
	ASSERT_EQ(0, pthread_create(&th, NULL, wait_fn, &t));
	ASSERT_TRUE(umcg_poll_ms(t.phase >= 1, READY_MS));
	ASSERT_EQ(0, t.ret);
	ASSERT_TRUE(umcg_poll_ms(umcg_proc_state(0, t.tid) == 'S', READY_MS));
	umcg_sleep_ms(100);
	EXPECT_EQ(0u, ring_cqes(&r));

	/* The poll fires: io_uring queues its completion as task work. */
	ASSERT_EQ(1, write(p[1], "x", 1));
	EXPECT_TRUE(umcg_poll_ms(ring_cqes(&r) == 1 || t.phase == 2, 10000));
	umcg_sleep_ms(300);
	EXPECT_EQ(1, t.phase) TH_LOG("WAIT returned %d (%s)", t.ret,
				     strerror(-t.ret));
	EXPECT_EQ(1u, ring_cqes(&r));
	EXPECT_TRUE(umcg_poll_ms(umcg_proc_state(0, t.tid) == 'S', 5000));

	umcg_state_store(t.task, UMCG_TASK_RUNNING);
	EXPECT_EQ(0, umcg_wake(self->d.fd, t.tid));
	EXPECT_TRUE(umcg_poll_ms(t.phase == 2, READY_MS));
	pthread_join(th, NULL);
	EXPECT_EQ(0, t.ret);
	ring_fini(&r);
	close(p[0]);
	close(p[1]);
}

TEST_F(n, wait_task_work)
{
	wait_task_work(_metadata, self, false);
}

TEST_F(n, wait_task_work_abstime)
{
	wait_task_work(_metadata, self, true);
}

TEST_F(n, wait_signal)
{
	struct thr t = { .fd = self->d.fd, .map = self->d.map };
	struct sigaction sa = { .sa_handler = on_sig };
	pthread_t th;

	sigemptyset(&sa.sa_mask);
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, NULL));
	ASSERT_EQ(0, pthread_create(&th, NULL, wait_fn, &t));
	ASSERT_TRUE(umcg_poll_ms(t.phase >= 1, READY_MS));
	ASSERT_TRUE(umcg_poll_ms(umcg_proc_state(0, t.tid) == 'S', READY_MS));
	ASSERT_EQ(0, syscall(SYS_tgkill, getpid(), t.tid, SIGUSR1));
	EXPECT_TRUE(umcg_poll_ms(t.phase == 2, READY_MS));
	pthread_join(th, NULL);
	EXPECT_EQ(-EINTR, t.ret);
	EXPECT_EQ(1, sig_count);
}

TEST_HARNESS_MAIN
