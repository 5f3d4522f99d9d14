// SPDX-License-Identifier: GPL-2.0
/*
 * Description: a server that exits registered is never poked again (C7).
 * Servers S1 then S2 register, and a worker W; S1's thread exits without
 * unregistering (its slot stays until a later REGISTER reaps it).  Then W
 * blocks in read(): the kernel must poke S2, asleep in UMCG_IOC_WAIT,
 *
 *   first_dead   W names no server: the group's first live one is S2;
 *   named_dead   W's server_tid is S1's: it falls back to S2;
 *
 * and S2 picks W when its read returns.  Raw ioctls (kmod_raw.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <uapi/umcg.h>

#include "kmod_test.h"
#include "kmod_raw.h"

#define READY_MS	60000
#define POKE_MS		5000

FIXTURE(s) {
	struct umcg_kmod_dev d;
};

FIXTURE_SETUP(s)
{
	umcg_kmod_dev_open(_metadata, &self->d);
}

FIXTURE_TEARDOWN(s)
{
	umcg_kmod_dev_close(_metadata, &self->d);
}

struct thr {
	int fd;
	struct umcg_task *map;
	int pipe_rd;
	__u32 server_tid;	/* a worker's */
	_Atomic pid_t tid;
	struct umcg_task *task;
	_Atomic int phase;
	_Atomic int quit;
	_Atomic int pokes;	/* a server's WAITs that returned 0 */
	int ret;
};

/* S1: registers as a server and exits registered. */
static void *s1_fn(void *arg)
{
	struct thr *t = arg;
	__u64 off = 0;

	t->ret = umcg_reg(t->fd, UMCG_REGISTER_SERVER, 0, 0, &off);
	t->task = &t->map[umcg_slot_idx(off)];
	t->tid = umcg_gettid();
	t->phase = 1;
	return NULL;
}

/* S2: WAITs (RUNNABLE in its word) until quit; counts the pokes. */
static void *s2_fn(void *arg)
{
	struct thr *t = arg;
	__u64 off = 0;

	t->ret = umcg_reg(t->fd, UMCG_REGISTER_SERVER, 0, 0, &off);
	if (t->ret) {
		t->phase = -1;
		return NULL;
	}
	t->task = &t->map[umcg_slot_idx(off)];
	t->tid = umcg_gettid();
	umcg_state_store(t->task, UMCG_TASK_RUNNABLE);
	t->phase = 1;
	while (!t->quit) {
		if (umcg_wait(t->fd, 0, 50 * UMCG_MS) == 0) {
			t->pokes++;
			umcg_state_store(t->task, UMCG_TASK_RUNNABLE);
		}
	}
	umcg_unreg(t->fd);
	return NULL;
}

/* W: RUNNING, blocks in read(), runs once picked, unregisters. */
static void *w_fn(void *arg)
{
	struct thr *t = arg;
	__u64 off = 0;
	char c;

	t->ret = umcg_reg(t->fd, UMCG_REGISTER_WORKER, 0, 0, &off);
	if (t->ret) {
		t->phase = -1;
		return NULL;
	}
	t->task = &t->map[umcg_slot_idx(off)];
	t->tid = umcg_gettid();
	t->task->server_tid = t->server_tid;
	t->phase = 1;
	while (!t->quit)
		;
	umcg_state_store(t->task, UMCG_TASK_RUNNING);
	t->ret = read(t->pipe_rd, &c, 1) == 1 ? 0 : -errno;
	t->phase = 2;
	umcg_unreg(t->fd);
	return NULL;
}

static void dead_server(struct __test_metadata *_metadata,
			FIXTURE_DATA(s) *self, bool named)
{
	struct thr s1 = { .fd = self->d.fd, .map = self->d.map };
	struct thr s2 = s1, w = s1;
	pthread_t t1, t2, tw;
	int p[2];

	ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
	w.pipe_rd = p[0];

	ASSERT_EQ(0, pthread_create(&t1, NULL, s1_fn, &s1));
	ASSERT_TRUE(umcg_poll_ms(s1.phase == 1, READY_MS));
	ASSERT_EQ(0, s1.ret);
	ASSERT_EQ(0, pthread_create(&t2, NULL, s2_fn, &s2));
	ASSERT_TRUE(umcg_poll_ms(s2.phase != 0, READY_MS));
	ASSERT_EQ(1, s2.phase);
	w.server_tid = named ? s1.tid : 0;
	ASSERT_EQ(0, pthread_create(&tw, NULL, w_fn, &w));
	ASSERT_TRUE(umcg_poll_ms(w.phase != 0, READY_MS));
	ASSERT_EQ(1, w.phase);
	/* S1 is gone, still registered (no REGISTER since to reap it). */
	ASSERT_EQ(0, pthread_join(t1, NULL));
	umcg_sleep_ms(100);
	s2.pokes = 0;

	/* W blocks: its event must reach S2. */
	w.quit = 1;
	ASSERT_TRUE(umcg_poll_ms((umcg_state_load(w.task) &
				  UMCG_TASK_STATE_MASK) == UMCG_TASK_BLOCKED,
				 READY_MS));
	EXPECT_TRUE(umcg_poll_ms(s2.pokes > 0, POKE_MS))
		TH_LOG("S2 never poked: its word %#x", umcg_state_load(s2.task));

	/* The read returns; W is held until S2's side picks it. */
	ASSERT_EQ(1, write(p[1], "x", 1));
	ASSERT_TRUE(umcg_poll_ms((umcg_state_load(w.task) &
				  UMCG_TASK_STATE_MASK) == UMCG_TASK_RUNNABLE,
				 READY_MS));
	umcg_state_store(w.task, UMCG_TASK_RUNNING);
	EXPECT_EQ(0, umcg_wake(self->d.fd, w.tid));
	EXPECT_TRUE(umcg_poll_ms(w.phase == 2, READY_MS));
	ASSERT_EQ(0, pthread_join(tw, NULL));
	EXPECT_EQ(0, w.ret);

	s2.quit = 1;
	ASSERT_EQ(0, pthread_join(t2, NULL));
	close(p[0]);
	close(p[1]);
}

TEST_F(s, first_dead)
{
	dead_server(_metadata, self, false);
}

TEST_F(s, named_dead)
{
	dead_server(_metadata, self, true);
}

TEST_HARNESS_MAIN
