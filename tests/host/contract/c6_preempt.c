// SPDX-License-Identifier: GPL-2.0
/*
 * c6_preempt - contract C6, time-slice preemption, on the user backend.
 *
 * On one core with a 2 ms time slice, two CPU-bound workers that never call
 * libumcg both make progress, interleaved: each sees the other run while it
 * spins; both are re-queued with UMCG_ENQ_PREEMPT and stats count the
 * preemptions.  Without a time slice the first runs to completion before
 * the second starts.  A worker preempted while it is inside a libumcg call
 * that holds a policy lock (umcg_unpark handing a thread to the policy)
 * must not deadlock: with the built-in policies, and with a policy whose
 * enqueue does some work under its lock.
 */
#include <pthread.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "contract.h"

#define C6_CPU_NS	(100 * CT_MS)	/* CPU time each spinner needs */

struct c6_run {
	_Atomic int last;		/* id of the spinner that ran last */
	_Atomic int seen_other[2];	/* times a spinner saw the other ran */
	_Atomic uint64_t start_ns[2], end_ns[2];
	_Atomic int started;
};

struct c6_arg {
	struct c6_run *r;
	int id;				/* 1 or 2 */
};

/* Pure user code: spins until it used C6_CPU_NS of CPU time. */
static void *c6_spinner(void *arg)
{
	struct c6_arg *a = arg;
	struct c6_run *r = a->r;
	uint64_t cpu0 = ct_thread_cpu_ns();

	atomic_store(&r->start_ns[a->id - 1], ct_now_ns());
	atomic_fetch_add(&r->started, 1);
	atomic_store(&r->last, a->id);
	while (ct_thread_cpu_ns() - cpu0 < C6_CPU_NS) {
		if (atomic_load_explicit(&r->last, memory_order_relaxed) != a->id) {
			atomic_fetch_add(&r->seen_other[a->id - 1], 1);
			atomic_store(&r->last, a->id);
		}
	}
	atomic_store(&r->end_ns[a->id - 1], ct_now_ns());
	return NULL;
}

FIXTURE(c6)
{
	bool inited;
	struct c6_run run;
	struct c6_arg arg[2];
};

FIXTURE_VARIANT(c6)
{
	uint64_t time_slice_ns;
};

FIXTURE_VARIANT_ADD(c6, slice_2ms) { .time_slice_ns = 2 * CT_MS };
FIXTURE_VARIANT_ADD(c6, no_slice) { .time_slice_ns = 0 };

FIXTURE_SETUP(c6)
{
	struct umcg_config cfg = ct_config(1, NULL);

	cfg.policy = &ct_recording_fifo;
	cfg.time_slice_ns = variant->time_slice_ns;
	for (int i = 0; i < 2; i++) {
		self->arg[i].r = &self->run;
		self->arg[i].id = i + 1;
	}
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
}

FIXTURE_TEARDOWN(c6)
{
	if (self->inited)
		EXPECT_EQ(0, umcg_fini());
}

TEST_F(c6, two_spinners_on_one_core)
{
	struct c6_run *r = &self->run;
	umcg_thread_t *t[2];
	uintptr_t flags[2];
	struct umcg_stats st;

	/* The first runs before the second exists. */
	ASSERT_EQ(0, umcg_spawn(&t[0], NULL, c6_spinner, &self->arg[0]));
	ASSERT_TRUE(CT_WAIT(atomic_load(&r->started) == 1, 2000));
	ASSERT_EQ(0, umcg_spawn(&t[1], NULL, c6_spinner, &self->arg[1]));
	for (int i = 0; i < 2; i++) {
		ASSERT_TRUE(CT_WAIT(umcg_thread_state(t[i]) == UMCG_STATE_DONE, 10000));
		flags[i] = ct_enq_flags(t[i]);	/* before join frees it */
		ASSERT_EQ(0, umcg_join(t[i], NULL));
	}
	ASSERT_EQ(0, umcg_stats(&st));
	TH_LOG("seen other: %d and %d, preempts %llu", atomic_load(&r->seen_other[0]),
	       atomic_load(&r->seen_other[1]), (unsigned long long)st.preempts);

	if (variant->time_slice_ns) {
		/* Interleaved: each ran while the other was mid-spin. */
		EXPECT_LT(0, atomic_load(&r->seen_other[0]));
		EXPECT_LT(0, atomic_load(&r->seen_other[1]));
		EXPECT_LT(atomic_load(&r->start_ns[1]), atomic_load(&r->end_ns[0]));
		EXPECT_LT(1, st.preempts);
		EXPECT_NE(0, flags[0] & UMCG_ENQ_PREEMPT);
		EXPECT_NE(0, flags[1] & UMCG_ENQ_PREEMPT);
	} else {
		/* Run to completion, in order. */
		EXPECT_EQ(0, atomic_load(&r->seen_other[0]));
		EXPECT_EQ(0, atomic_load(&r->seen_other[1]));
		EXPECT_LE(atomic_load(&r->end_ns[0]), atomic_load(&r->start_ns[1]));
		EXPECT_EQ(0, st.preempts);
		EXPECT_EQ(0, flags[0] & UMCG_ENQ_PREEMPT);
		EXPECT_EQ(0, flags[1] & UMCG_ENQ_PREEMPT);
	}
}

/* --- preemption inside libumcg ----------------------------------------- */

#define C6U_PARKERS	8
#define C6U_RUN_NS	(300 * CT_MS)

struct c6_unpark {
	umcg_thread_t *p[C6U_PARKERS];
	_Atomic int stop;
	_Atomic long wakeups;
	_Atomic long unparks;
	_Atomic int done;
	_Atomic int err;
};

static void *c6_parker(void *arg)
{
	struct c6_unpark *u = arg;

	while (!atomic_load(&u->stop)) {
		umcg_park();
		atomic_fetch_add(&u->wakeups, 1);
	}
	atomic_fetch_add(&u->done, 1);
	return NULL;
}

/*
 * Unparks the parkers in a loop: most of its time is spent inside
 * umcg_unpark(), which hands threads to the policy under its queue lock.
 */
static void *c6_unparker(void *arg)
{
	struct c6_unpark *u = arg;
	uint64_t end = ct_now_ns() + C6U_RUN_NS;

	while (ct_now_ns() < end) {
		for (int i = 0; i < C6U_PARKERS; i++) {
			int ret = umcg_unpark(u->p[i]);

			if (ret)
				atomic_store(&u->err, ret);
			atomic_fetch_add(&u->unparks, 1);
		}
	}
	atomic_store(&u->stop, 1);
	for (int i = 0; i < C6U_PARKERS; i++)
		umcg_unpark(u->p[i]);
	atomic_fetch_add(&u->done, 1);
	return NULL;
}

/*
 * "slow-fifo": fifo behind a lock of its own, whose enqueue also does 20 us
 * of work under that lock (think of a priority queue insert).  Busy, not
 * blocked: the SPI allows it.  It makes a preemption inside enqueue likely.
 */
struct c6_slow {
	pthread_mutex_t lock;
	void *fifo;
};

static int c6_slow_init(void **priv, unsigned int nr_cores)
{
	struct c6_slow *s = calloc(1, sizeof(*s));
	int ret;

	if (!s)
		return -ENOMEM;
	ret = umcg_policy_find("fifo")->init(&s->fifo, nr_cores);
	if (ret) {
		free(s);
		return ret;
	}
	pthread_mutex_init(&s->lock, NULL);
	*priv = s;
	return 0;
}

static void c6_slow_fini(void *priv)
{
	struct c6_slow *s = priv;

	umcg_policy_find("fifo")->fini(s->fifo);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static int c6_slow_enqueue(void *priv, umcg_thread_t *t, int core, unsigned int flags)
{
	struct c6_slow *s = priv;
	int ret;

	pthread_mutex_lock(&s->lock);
	ct_spin_ns(20 * CT_US);
	ret = umcg_policy_find("fifo")->enqueue(s->fifo, t, core, flags);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

static umcg_thread_t *c6_slow_pick(void *priv, int core)
{
	struct c6_slow *s = priv;
	umcg_thread_t *t;

	pthread_mutex_lock(&s->lock);
	t = umcg_policy_find("fifo")->pick(s->fifo, core);
	pthread_mutex_unlock(&s->lock);
	return t;
}

static int c6_slow_remove(void *priv, umcg_thread_t *t)
{
	struct c6_slow *s = priv;
	int ret;

	pthread_mutex_lock(&s->lock);
	ret = umcg_policy_find("fifo")->remove(s->fifo, t);
	pthread_mutex_unlock(&s->lock);
	return ret;
}

static const struct umcg_policy_ops c6_slow_fifo = {
	.name		= "slow-fifo",
	.init		= c6_slow_init,
	.fini		= c6_slow_fini,
	.enqueue	= c6_slow_enqueue,
	.pick		= c6_slow_pick,
	.remove		= c6_slow_remove,
};

FIXTURE(c6_lib)
{
	bool inited;
	bool hung;
	struct c6_unpark u;
};

FIXTURE_VARIANT(c6_lib)
{
	const char *policy;	/* NULL: slow-fifo */
	unsigned int nr_cores;
};

FIXTURE_VARIANT_ADD(c6_lib, fifo_2) { .policy = "fifo", .nr_cores = 2 };
FIXTURE_VARIANT_ADD(c6_lib, steal_2) { .policy = "steal", .nr_cores = 2 };
FIXTURE_VARIANT_ADD(c6_lib, slow_fifo_1) { .policy = NULL, .nr_cores = 1 };
FIXTURE_VARIANT_ADD(c6_lib, slow_fifo_2) { .policy = NULL, .nr_cores = 2 };

FIXTURE_SETUP(c6_lib)
{
	struct umcg_config cfg = ct_config(variant->nr_cores, variant->policy);

	if (ct_nr_cpus() < (int)variant->nr_cores)
		SKIP(return, "needs %u CPUs", variant->nr_cores);
	if (!variant->policy)
		cfg.policy = &c6_slow_fifo;
	cfg.time_slice_ns = 100 * CT_US;
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
}

FIXTURE_TEARDOWN(c6_lib)
{
	atomic_store(&self->u.stop, 1);
	/* A deadlocked group cannot be torn down: leave it to _exit(). */
	if (self->inited && !self->hung)
		EXPECT_EQ(0, umcg_fini());
}

TEST_F(c6_lib, preempted_inside_unpark)
{
	struct c6_unpark *u = &self->u;
	umcg_thread_t *w;
	struct umcg_stats st;

	for (int i = 0; i < C6U_PARKERS; i++) {
		ASSERT_EQ(0, umcg_spawn(&u->p[i], NULL, c6_parker, u));
		ASSERT_TRUE(CT_WAIT(umcg_thread_state(u->p[i]) == UMCG_STATE_PARKED, 2000));
	}
	ASSERT_EQ(0, umcg_spawn(&w, NULL, c6_unparker, u));
	self->hung = !CT_WAIT(atomic_load(&u->done) == C6U_PARKERS + 1, 3000);
	ASSERT_FALSE(self->hung) {
		TH_LOG("%d of %d workers done after %ld unparks, %ld wake-ups",
		       atomic_load(&u->done), C6U_PARKERS + 1, atomic_load(&u->unparks),
		       atomic_load(&u->wakeups));
		umcg_dump(stderr);
	}
	EXPECT_EQ(0, ct_join(w, NULL, 2000));
	for (int i = 0; i < C6U_PARKERS; i++) {
		EXPECT_EQ(0, ct_join(u->p[i], NULL, 2000));
	}
	EXPECT_EQ(0, atomic_load(&u->err));
	ASSERT_EQ(0, umcg_stats(&st));
	TH_LOG("%ld unparks, %ld wake-ups, %llu preemptions", atomic_load(&u->unparks),
	       atomic_load(&u->wakeups), (unsigned long long)st.preempts);
	EXPECT_LT(0, st.preempts);
	EXPECT_LT(0, atomic_load(&u->wakeups));
}

TEST_HARNESS_MAIN
