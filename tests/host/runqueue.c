// SPDX-License-Identifier: GPL-2.0
/*
 * runqueue - the built-in policies' run queues (libumcg/src/runqueue.c)
 * on their own: FIFO order across removes, and, with enqueuers, pickers
 * and a remover racing, every thread handed back exactly once and none
 * lost.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kselftest_harness.h"
#include "runqueue.h"

#define RQ_THREADS	64
#define RQ_QUEUES	3
#define RQ_RUN_MS	400

static struct umcg_thread *rq_thread_new(int id)
{
	struct umcg_thread *t = aligned_alloc(UMCG_CACHELINE, sizeof(*t));

	if (t) {
		memset(t, 0, sizeof(*t));
		t->tid = id;
		t->policy_queue = -1;
		CDS_INIT_LIST_HEAD(&t->policy_node);
	}
	return t;
}

TEST(fifo_across_removes)
{
	struct umcg_thread *t[16];
	struct umcg_rq_set *set;
	int want[] = { 0, 2, 4, 6, 8, 9, 10, 11, 12, 13, 14, 15 };
	unsigned int n = 0;

	ASSERT_EQ(0, umcg_rq_alloc(&set, 1));
	for (int i = 0; i < 16; i++) {
		t[i] = rq_thread_new(i);
		ASSERT_NE(NULL, t[i]);
		EXPECT_EQ(0, umcg_rq_push(set, 0, t[i]));
	}
	/* Behind others (they move to the front list), then among them. */
	EXPECT_EQ(1, umcg_rq_remove(set, t[7]));
	EXPECT_EQ(1, umcg_rq_remove(set, t[3]));
	EXPECT_EQ(1, umcg_rq_remove(set, t[1]));
	EXPECT_EQ(1, umcg_rq_remove(set, t[5]));
	EXPECT_EQ(0, umcg_rq_remove(set, t[5]));
	EXPECT_EQ(-1, t[5]->policy_queue);
	/* Re-queued after a remove: at the tail. */
	EXPECT_EQ(0, umcg_rq_push(set, 0, t[3]));
	for (struct umcg_thread *p; (p = umcg_rq_pop(set, 0)); n++) {
		int expect = n < sizeof(want) / sizeof(want[0]) ? want[n] : 3;

		EXPECT_EQ(expect, p->tid);
	}
	EXPECT_EQ(13, n);
	EXPECT_EQ(0, atomic_load(&set->rq[0].len));
	umcg_rq_free(set);
	for (int i = 0; i < 16; i++)
		free(t[i]);
}

struct rq_race {
	struct umcg_rq_set *set;
	struct umcg_thread *t[RQ_THREADS];
	_Atomic uint32_t held[RQ_THREADS];	/* 1 while the queues have it */
	pthread_mutex_t pool_lock;
	int pool[RQ_THREADS];
	unsigned int pool_len;
	_Atomic bool stop;
	_Atomic uint64_t pushed, taken, errors;
};

static int rq_pool_get(struct rq_race *r)
{
	int id = -1;

	pthread_mutex_lock(&r->pool_lock);
	if (r->pool_len)
		id = r->pool[--r->pool_len];
	pthread_mutex_unlock(&r->pool_lock);
	return id;
}

/* @t came back from the queues, by pick or by remove. */
static void rq_taken(struct rq_race *r, struct umcg_thread *t)
{
	if (atomic_exchange(&r->held[t->tid], 0) != 1)
		atomic_fetch_add(&r->errors, 1);
	atomic_fetch_add(&r->taken, 1);
	pthread_mutex_lock(&r->pool_lock);
	r->pool[r->pool_len++] = t->tid;
	pthread_mutex_unlock(&r->pool_lock);
}

static void *rq_enqueuer(void *arg)
{
	struct rq_race *r = arg;
	unsigned int seed = 1;

	while (!atomic_load(&r->stop)) {
		int id = rq_pool_get(r);

		if (id < 0) {
			sched_yield();
			continue;
		}
		/* Held before the push: a picker may have it at once. */
		if (atomic_exchange(&r->held[id], 1) != 0)
			atomic_fetch_add(&r->errors, 1);
		atomic_fetch_add(&r->pushed, 1);
		umcg_rq_push(r->set, rand_r(&seed), r->t[id]);
	}
	return NULL;
}

static void *rq_picker(void *arg)
{
	struct rq_race *r = arg;
	unsigned int seed = 2;

	while (!atomic_load(&r->stop)) {
		struct umcg_thread *t = umcg_rq_pop(r->set, rand_r(&seed));

		if (t)
			rq_taken(r, t);
	}
	return NULL;
}

static void *rq_remover(void *arg)
{
	struct rq_race *r = arg;
	unsigned int seed = 3;

	while (!atomic_load(&r->stop)) {
		struct umcg_thread *t = r->t[rand_r(&seed) % RQ_THREADS];

		if (umcg_rq_remove(r->set, t))
			rq_taken(r, t);
	}
	return NULL;
}

TEST(race_exactly_once)
{
	static struct rq_race r;
	void *(*fn[])(void *) = { rq_enqueuer, rq_enqueuer, rq_picker, rq_picker, rq_remover };
	pthread_t thr[sizeof(fn) / sizeof(fn[0])];
	struct timespec ts = { 0, RQ_RUN_MS * 1000000L };
	struct umcg_thread *t;

	ASSERT_EQ(0, umcg_rq_alloc(&r.set, RQ_QUEUES));
	pthread_mutex_init(&r.pool_lock, NULL);
	for (int i = 0; i < RQ_THREADS; i++) {
		r.t[i] = rq_thread_new(i);
		ASSERT_NE(NULL, r.t[i]);
		r.pool[r.pool_len++] = i;
	}
	for (unsigned int i = 0; i < sizeof(fn) / sizeof(fn[0]); i++)
		ASSERT_EQ(0, pthread_create(&thr[i], NULL, fn[i], &r));
	nanosleep(&ts, NULL);
	atomic_store(&r.stop, true);
	for (unsigned int i = 0; i < sizeof(fn) / sizeof(fn[0]); i++)
		pthread_join(thr[i], NULL);

	/* Every enqueue returned: the queues give back all they hold. */
	for (unsigned int q = 0; q < RQ_QUEUES; q++)
		while ((t = umcg_rq_pop(r.set, q)))
			rq_taken(&r, t);
	EXPECT_EQ(0, atomic_load(&r.errors));
	EXPECT_EQ(atomic_load(&r.pushed), atomic_load(&r.taken));
	EXPECT_EQ(RQ_THREADS, r.pool_len);
	for (unsigned int q = 0; q < RQ_QUEUES; q++)
		EXPECT_EQ(0, atomic_load(&r.set->rq[q].len));
	TH_LOG("%llu pushes", (unsigned long long)atomic_load(&r.pushed));
	umcg_rq_free(r.set);
	for (int i = 0; i < RQ_THREADS; i++)
		free(r.t[i]);
}

TEST_HARNESS_MAIN
