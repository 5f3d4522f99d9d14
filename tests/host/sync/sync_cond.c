// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Description: umcg_cond_t on the user backend: signal wakes one waiter,
 * broadcast wakes all, timed waits time out (and re-take the mutex) or
 * return early when signalled, workers and plain threads, errors.
 */
#include "kselftest_harness.h"
#include "sync_test.h"

FIXTURE(cond) {
};

FIXTURE_VARIANT(cond) {
	unsigned int nr_cores;
};

FIXTURE_VARIANT_ADD(cond, one_core) {
	.nr_cores = 1,
};

FIXTURE_VARIANT_ADD(cond, two_cores) {
	.nr_cores = 2,
};

FIXTURE_SETUP(cond)
{
	ASSERT_EQ(0, st_init(variant->nr_cores, 0));
}

FIXTURE_TEARDOWN(cond)
{
	umcg_fini();
}

struct gate {
	umcg_mutex_t m;
	umcg_cond_t c;
	int go;			/* under m: how many waiters may pass */
	int waiting;		/* under m, and read atomically */
	int passed;
	int wakeups;		/* returns from umcg_cond_wait() */
	int errors;
};

#define GATE_INIT { .m = UMCG_MUTEX_INITIALIZER, .c = UMCG_COND_INITIALIZER }

/* Waits until a pass is free, takes it. */
static void *gate_fn(void *arg)
{
	struct gate *g = arg;
	int ret = 0;

	umcg_mutex_lock(&g->m);
	__atomic_fetch_add(&g->waiting, 1, __ATOMIC_RELEASE);
	while (!g->go && !ret) {
		ret = umcg_cond_wait(&g->c, &g->m);
		__atomic_fetch_add(&g->wakeups, 1, __ATOMIC_RELEASE);
	}
	if (ret)
		__atomic_fetch_add(&g->errors, 1, __ATOMIC_RELAXED);
	g->go--;
	__atomic_fetch_add(&g->passed, 1, __ATOMIC_RELEASE);
	if (umcg_mutex_unlock(&g->m))	/* the wait gave the mutex back */
		__atomic_fetch_add(&g->errors, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* A signal lets exactly one waiter through; broadcast the rest. */
TEST_F(cond, signal_broadcast)
{
	struct gate g = GATE_INIT;
	umcg_thread_t *w[4];
	pthread_t p;

	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, st_spawn(&w[i], gate_fn, &g));
	ASSERT_EQ(0, st_pthread(&p, gate_fn, &g));
	ASSERT_EQ(5, st_wait_at_least(&g.waiting, 5, ST_PATIENCE_MS));
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(UMCG_STATE_PARKED, st_wait_state(w[i], UMCG_STATE_PARKED,
							   ST_PATIENCE_MS));

	umcg_mutex_lock(&g.m);
	g.go = 1;
	ASSERT_EQ(0, umcg_cond_signal(&g.c));
	umcg_mutex_unlock(&g.m);
	ASSERT_EQ(1, st_wait_at_least(&g.passed, 1, ST_PATIENCE_MS));
	/* One signal woke one waiter, and let nobody else through. */
	usleep(50000);
	EXPECT_EQ(1, st_get(&g.wakeups));
	EXPECT_EQ(1, st_get(&g.passed));

	umcg_mutex_lock(&g.m);
	g.go = 4;
	ASSERT_EQ(0, umcg_cond_broadcast(&g.c));
	umcg_mutex_unlock(&g.m);
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, umcg_join(w[i], NULL));
	ASSERT_EQ(0, pthread_join(p, NULL));
	EXPECT_EQ(5, st_get(&g.passed));
	EXPECT_EQ(5, st_get(&g.wakeups));
	EXPECT_EQ(0, st_get(&g.errors));
	EXPECT_EQ(0, umcg_cond_destroy(&g.c));
	EXPECT_EQ(0, umcg_mutex_destroy(&g.m));
}

/* Producer and consumer workers hand values over one slot. */
struct slot {
	umcg_mutex_t m;
	umcg_cond_t c;
	int full;
	int value;
	int sum;
	int errors;
};

#define NR_VALUES	500

static void *producer_fn(void *arg)
{
	struct slot *s = arg;

	for (int i = 1; i <= NR_VALUES; i++) {
		umcg_mutex_lock(&s->m);
		while (s->full)
			umcg_cond_wait(&s->c, &s->m);
		s->value = i;
		s->full = 1;
		umcg_cond_signal(&s->c);
		umcg_mutex_unlock(&s->m);
	}
	return NULL;
}

static void *consumer_fn(void *arg)
{
	struct slot *s = arg;

	for (int i = 1; i <= NR_VALUES; i++) {
		umcg_mutex_lock(&s->m);
		while (!s->full)
			umcg_cond_wait(&s->c, &s->m);
		if (s->value != i)
			s->errors++;
		s->sum += s->value;
		s->full = 0;
		umcg_cond_signal(&s->c);
		umcg_mutex_unlock(&s->m);
	}
	return NULL;
}

TEST_F(cond, producer_consumer)
{
	struct slot s = { .m = UMCG_MUTEX_INITIALIZER, .c = UMCG_COND_INITIALIZER };
	umcg_thread_t *p, *c;

	ASSERT_EQ(0, st_spawn(&c, consumer_fn, &s));
	ASSERT_EQ(0, st_spawn(&p, producer_fn, &s));
	ASSERT_EQ(0, umcg_join(p, NULL));
	ASSERT_EQ(0, umcg_join(c, NULL));
	EXPECT_EQ(0, s.errors);
	EXPECT_EQ(NR_VALUES * (NR_VALUES + 1) / 2, s.sum);
}

struct timed {
	umcg_mutex_t m;
	umcg_cond_t c;
	uint64_t ns;
	int ret;
	int held_after;
	uint64_t elapsed;
};

static void *timed_fn(void *arg)
{
	struct timed *t = arg;
	uint64_t start;

	umcg_mutex_lock(&t->m);
	start = st_now_ns();
	t->ret = umcg_cond_timedwait(&t->c, &t->m, t->ns);
	t->elapsed = st_now_ns() - start;
	/* Held again on return: unlock succeeds only for the owner. */
	t->held_after = umcg_mutex_unlock(&t->m) == 0;
	return NULL;
}

TEST_F(cond, timeout)
{
	struct timed t = { .m = UMCG_MUTEX_INITIALIZER, .c = UMCG_COND_INITIALIZER,
			   .ns = 20 * ST_MS };
	umcg_thread_t *w;

	/* A worker. */
	ASSERT_EQ(0, st_spawn(&w, timed_fn, &t));
	ASSERT_EQ(0, umcg_join(w, NULL));
	EXPECT_EQ(-ETIMEDOUT, t.ret);
	EXPECT_LE(20 * ST_MS, t.elapsed);
	EXPECT_GT(2000 * ST_MS, t.elapsed);
	EXPECT_TRUE(t.held_after);

	/* A plain thread (this one). */
	t.ret = 1;
	t.held_after = 0;
	timed_fn(&t);
	EXPECT_EQ(-ETIMEDOUT, t.ret);
	EXPECT_LE(20 * ST_MS, t.elapsed);
	EXPECT_TRUE(t.held_after);
	/* The timed-out waiters left the queue. */
	EXPECT_EQ(0, umcg_cond_destroy(&t.c));
}

TEST_F(cond, timedwait_signalled)
{
	struct timed t = { .m = UMCG_MUTEX_INITIALIZER, .c = UMCG_COND_INITIALIZER,
			   .ns = 10000 * ST_MS, .ret = 1 };
	umcg_thread_t *w;

	ASSERT_EQ(0, st_spawn(&w, timed_fn, &t));
	ASSERT_EQ(UMCG_STATE_PARKED, st_wait_state(w, UMCG_STATE_PARKED, ST_PATIENCE_MS));
	/* Parked with the mutex given back: we can take it. */
	ASSERT_EQ(0, umcg_mutex_lock(&t.m));
	ASSERT_EQ(0, umcg_cond_signal(&t.c));
	ASSERT_EQ(0, umcg_mutex_unlock(&t.m));
	ASSERT_EQ(0, umcg_join(w, NULL));
	EXPECT_EQ(0, t.ret);
	EXPECT_GT(5000 * ST_MS, t.elapsed);
	EXPECT_TRUE(t.held_after);
}

TEST_F(cond, errors)
{
	struct timed t = { .m = UMCG_MUTEX_INITIALIZER, .c = UMCG_COND_INITIALIZER,
			   .ns = 10000 * ST_MS };
	umcg_cond_t zero = { 0 };
	umcg_thread_t *w;

	EXPECT_EQ(-EINVAL, umcg_cond_init(NULL));
	EXPECT_EQ(-EINVAL, umcg_cond_destroy(NULL));
	EXPECT_EQ(-EINVAL, umcg_cond_signal(NULL));
	EXPECT_EQ(-EINVAL, umcg_cond_broadcast(NULL));
	EXPECT_EQ(-EINVAL, umcg_cond_wait(NULL, &t.m));
	EXPECT_EQ(-EINVAL, umcg_cond_wait(&t.c, NULL));
	EXPECT_EQ(-EINVAL, umcg_cond_timedwait(&zero, &t.m, 1));
	EXPECT_EQ(-EINVAL, umcg_cond_signal(&zero));
	/* The mutex must be held. */
	EXPECT_EQ(-EPERM, umcg_cond_wait(&t.c, &t.m));
	EXPECT_EQ(-EPERM, umcg_cond_timedwait(&t.c, &t.m, 1));

	/* Busy while a thread waits. */
	ASSERT_EQ(0, st_spawn(&w, timed_fn, &t));
	ASSERT_EQ(UMCG_STATE_PARKED, st_wait_state(w, UMCG_STATE_PARKED, ST_PATIENCE_MS));
	EXPECT_EQ(-EBUSY, umcg_cond_destroy(&t.c));
	ASSERT_EQ(0, umcg_cond_broadcast(&t.c));
	ASSERT_EQ(0, umcg_join(w, NULL));
	EXPECT_EQ(0, umcg_cond_destroy(&t.c));
	EXPECT_EQ(-EINVAL, umcg_cond_signal(&t.c));
}

TEST_HARNESS_MAIN
