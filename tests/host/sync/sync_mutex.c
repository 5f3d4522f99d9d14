// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Description: umcg_mutex_t on the user backend: exclusion under
 * contention from workers and plain threads, a waiting worker parks, FIFO
 * hand-off, plain threads on both sides, argument and state errors.
 */
#include <sched.h>

#include "kselftest_harness.h"
#include "sync_test.h"

FIXTURE(mutex) {
};

FIXTURE_VARIANT(mutex) {
	unsigned int nr_cores;
};

FIXTURE_VARIANT_ADD(mutex, one_core) {
	.nr_cores = 1,
};

FIXTURE_VARIANT_ADD(mutex, two_cores) {
	.nr_cores = 2,
};

FIXTURE_SETUP(mutex)
{
	ASSERT_EQ(0, st_init(variant->nr_cores, 0));
}

FIXTURE_TEARDOWN(mutex)
{
	umcg_fini();
}

#define NR_WORKERS	8
#define NR_PLAIN	2
#define NR_ITERS	2000

struct counter {
	umcg_mutex_t m;
	long value;		/* plain, written only under m */
	int errors;
	int start;		/* set once every thread is there */
};

/* Let the others run (a worker yields its core) until @c starts. */
static void wait_for_start(struct counter *c)
{
	while (!__atomic_load_n(&c->start, __ATOMIC_ACQUIRE)) {
		if (umcg_self())
			umcg_yield();
		else
			sched_yield();
	}
}

static void *count_fn(void *arg)
{
	struct counter *c = arg;

	/* All at once: a worker spawned late would find no contention. */
	wait_for_start(c);
	for (int i = 0; i < NR_ITERS; i++) {
		long v;

		if (umcg_mutex_lock(&c->m)) {
			__atomic_fetch_add(&c->errors, 1, __ATOMIC_RELAXED);
			continue;
		}
		v = c->value;
		/* Give others a chance to run inside our critical section. */
		if (i % 8 == 0) {
			if (umcg_self())
				umcg_yield();
			else
				sched_yield();
		}
		c->value = v + 1;
		if (umcg_mutex_unlock(&c->m))
			__atomic_fetch_add(&c->errors, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

TEST_F(mutex, contention)
{
	struct counter c = { .m = UMCG_MUTEX_INITIALIZER };
	umcg_thread_t *w[NR_WORKERS];
	pthread_t p[NR_PLAIN];
	struct umcg_stats st;

	for (int i = 0; i < NR_WORKERS; i++)
		ASSERT_EQ(0, st_spawn(&w[i], count_fn, &c));
	for (int i = 0; i < NR_PLAIN; i++)
		ASSERT_EQ(0, st_pthread(&p[i], count_fn, &c));
	__atomic_store_n(&c.start, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < NR_WORKERS; i++)
		ASSERT_EQ(0, umcg_join(w[i], NULL));
	for (int i = 0; i < NR_PLAIN; i++)
		ASSERT_EQ(0, pthread_join(p[i], NULL));
	EXPECT_EQ(0, c.errors);
	EXPECT_EQ((long)(NR_WORKERS + NR_PLAIN) * NR_ITERS, c.value);
	/* Workers that found it taken parked (their core ran others). */
	ASSERT_EQ(0, umcg_stats(&st));
	EXPECT_LT(0, st.parks);
	EXPECT_EQ(0, umcg_mutex_destroy(&c.m));
}

struct handoff {
	umcg_mutex_t m;
	int holding;		/* the holder has the mutex */
	int release;		/* the holder may unlock */
	int released;		/* the holder unlocked */
	int order[4];
	int nr_order;
	int waiter_saw_released;
	int errors;
};

static void *holder_fn(void *arg)
{
	struct handoff *h = arg;

	if (umcg_mutex_lock(&h->m))
		__atomic_fetch_add(&h->errors, 1, __ATOMIC_RELAXED);
	st_set(&h->holding, 1);
	/* Sleeping parks: the core runs the waiters meanwhile. */
	st_wait_at_least(&h->release, 1, ST_PATIENCE_MS);
	st_set(&h->released, 1);
	if (umcg_mutex_unlock(&h->m))
		__atomic_fetch_add(&h->errors, 1, __ATOMIC_RELAXED);
	return NULL;
}

struct waiter_arg {
	struct handoff *h;
	int id;
};

static void *waiter_fn(void *arg)
{
	struct waiter_arg *a = arg;
	struct handoff *h = a->h;

	if (umcg_mutex_lock(&h->m)) {
		__atomic_fetch_add(&h->errors, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	if (st_get(&h->released))
		h->waiter_saw_released++;
	h->order[h->nr_order++] = a->id;
	umcg_mutex_unlock(&h->m);
	return NULL;
}

/*
 * A worker that finds the mutex taken is PARKED (not running, not blocked
 * in the kernel), and waiters get the mutex in the order they came.
 */
TEST_F(mutex, parks_fifo)
{
	struct handoff h = { .m = UMCG_MUTEX_INITIALIZER };
	struct waiter_arg a[3];
	umcg_thread_t *holder, *w[3];

	ASSERT_EQ(0, st_spawn(&holder, holder_fn, &h));
	ASSERT_EQ(1, st_wait_at_least(&h.holding, 1, ST_PATIENCE_MS));
	for (int i = 0; i < 3; i++) {
		a[i] = (struct waiter_arg){ .h = &h, .id = i };
		ASSERT_EQ(0, st_spawn(&w[i], waiter_fn, &a[i]));
		/* Queued one after the other: FIFO order is then defined. */
		ASSERT_EQ(UMCG_STATE_PARKED, st_wait_state(w[i], UMCG_STATE_PARKED,
							   ST_PATIENCE_MS));
	}
	st_set(&h.release, 1);
	ASSERT_EQ(0, umcg_join(holder, NULL));
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(0, umcg_join(w[i], NULL));
	EXPECT_EQ(0, st_get(&h.errors));
	EXPECT_EQ(3, h.waiter_saw_released);
	ASSERT_EQ(3, h.nr_order);
	EXPECT_EQ(0, h.order[0]);
	EXPECT_EQ(1, h.order[1]);
	EXPECT_EQ(2, h.order[2]);
}

/* A plain thread holds the mutex a worker waits for, and the reverse. */
TEST_F(mutex, plain_thread)
{
	struct handoff h = { .m = UMCG_MUTEX_INITIALIZER };
	struct waiter_arg a = { .h = &h, .id = 7 };
	umcg_thread_t *w, *holder;

	/* Plain owner, worker waiter. */
	ASSERT_EQ(0, umcg_mutex_lock(&h.m));
	ASSERT_EQ(0, st_spawn(&w, waiter_fn, &a));
	ASSERT_EQ(UMCG_STATE_PARKED, st_wait_state(w, UMCG_STATE_PARKED, ST_PATIENCE_MS));
	EXPECT_EQ(0, h.nr_order);
	st_set(&h.released, 1);
	ASSERT_EQ(0, umcg_mutex_unlock(&h.m));
	ASSERT_EQ(0, umcg_join(w, NULL));
	EXPECT_EQ(1, h.nr_order);
	EXPECT_EQ(1, h.waiter_saw_released);

	/* Worker owner, plain waiter (futex wait). */
	h = (struct handoff){ .m = UMCG_MUTEX_INITIALIZER };
	ASSERT_EQ(0, st_spawn(&holder, holder_fn, &h));
	ASSERT_EQ(1, st_wait_at_least(&h.holding, 1, ST_PATIENCE_MS));
	ASSERT_EQ(-EBUSY, umcg_mutex_trylock(&h.m));
	st_set(&h.release, 1);
	ASSERT_EQ(0, umcg_mutex_lock(&h.m));
	EXPECT_EQ(1, st_get(&h.released));
	ASSERT_EQ(0, umcg_mutex_unlock(&h.m));
	ASSERT_EQ(0, umcg_join(holder, NULL));
	EXPECT_EQ(0, st_get(&h.errors));
}

static void *unlock_other_fn(void *arg)
{
	return (void *)(intptr_t)umcg_mutex_unlock(arg);
}

TEST_F(mutex, errors)
{
	umcg_mutex_t m, zero = { 0 };
	pthread_t p;
	void *ret;

	EXPECT_EQ(-EINVAL, umcg_mutex_init(NULL));
	EXPECT_EQ(-EINVAL, umcg_mutex_destroy(NULL));
	EXPECT_EQ(-EINVAL, umcg_mutex_lock(NULL));
	EXPECT_EQ(-EINVAL, umcg_mutex_trylock(NULL));
	EXPECT_EQ(-EINVAL, umcg_mutex_unlock(NULL));
	/* Never initialised. */
	EXPECT_EQ(-EINVAL, umcg_mutex_lock(&zero));
	EXPECT_EQ(-EINVAL, umcg_mutex_unlock(&zero));

	ASSERT_EQ(0, umcg_mutex_init(&m));
	EXPECT_EQ(-EPERM, umcg_mutex_unlock(&m));	/* not locked */
	ASSERT_EQ(0, umcg_mutex_trylock(&m));
	EXPECT_EQ(-EBUSY, umcg_mutex_trylock(&m));
	EXPECT_EQ(-EDEADLK, umcg_mutex_lock(&m));
	EXPECT_EQ(-EBUSY, umcg_mutex_destroy(&m));
	/* Another thread cannot unlock it. */
	ASSERT_EQ(0, st_pthread(&p, unlock_other_fn, &m));
	ASSERT_EQ(0, pthread_join(p, &ret));
	EXPECT_EQ(-EPERM, (int)(intptr_t)ret);
	ASSERT_EQ(0, umcg_mutex_unlock(&m));
	ASSERT_EQ(0, umcg_mutex_destroy(&m));
	/* Destroyed. */
	EXPECT_EQ(-EINVAL, umcg_mutex_lock(&m));
	EXPECT_EQ(-EINVAL, umcg_mutex_destroy(&m));
}

TEST_HARNESS_MAIN
