// SPDX-License-Identifier: GPL-2.0
/*
 * c7_faults - contract C7, faults and teardown, on the user backend.
 *
 * A worker that returns, or leaves through pthread_exit(), frees its core
 * for the next one and can be joined (with its value).  umcg_fini() with
 * workers still alive (parked, queued or running) returns 0 and releases
 * them: they go on as plain threads, umcg_self() is NULL for them, every
 * libumcg call they make returns -ESRCH, and they can still be joined.  A
 * detached worker runs and frees itself; a handle that holds a reference
 * keeps its memory, and calls on it then get -ESRCH.  The group's life: init twice
 * -EBUSY, fini twice -ESRCH, fini from a worker -EDEADLK, init after fini
 * works, and the thread that called init can be attached as a worker and
 * still tear the group down.
 */
#include <pthread.h>

#include "kselftest_harness.h"
#include "contract.h"

#define C7_PARKED	3

struct c7_run {
	_Atomic int flag;
	_Atomic int holding;		/* holders inside their spin loop */
	_Atomic int ran;
	_Atomic int parked_ret[C7_PARKED];
	/* What a released worker's calls returned. */
	struct c7_after {
		_Atomic int done;
		_Atomic int self_null;
		_Atomic int yield, park, park_timeout, sleep, unpark, switch_to;
		_Atomic int spawn, nr_cores, stats, fini;
	} after[C7_PARKED + 2];
	umcg_thread_t *t[C7_PARKED + 2];
	_Atomic int err;
};

static void *c7_nothing(void *arg)
{
	return arg;
}

/* Every call a released worker can make: all must say -ESRCH. */
static void c7_calls_after_release(struct c7_run *r, int i)
{
	struct c7_after *a = &r->after[i];
	umcg_thread_t *spawned = NULL;
	struct umcg_stats st;

	atomic_store(&a->self_null, umcg_self() == NULL);
	atomic_store(&a->yield, umcg_yield());
	atomic_store(&a->park, umcg_park());
	atomic_store(&a->park_timeout, umcg_park_timeout(1000));
	atomic_store(&a->sleep, umcg_sleep_ns(1000));
	atomic_store(&a->unpark, umcg_unpark(r->t[(i + 1) % C7_PARKED]));
	atomic_store(&a->switch_to, umcg_switch_to(r->t[(i + 1) % C7_PARKED]));
	atomic_store(&a->spawn, umcg_spawn(&spawned, NULL, c7_nothing, NULL));
	atomic_store(&a->nr_cores, umcg_nr_cores());
	atomic_store(&a->stats, umcg_stats(&st));
	atomic_store(&a->fini, umcg_fini());
	atomic_store(&a->done, 1);
}

#define C7R_WORKERS	8
#define C7R_TRIES	2000

struct c7_race {
	_Atomic int done;
	_Atomic int spawned;		/* spawns that succeeded: must be 0 */
	_Atomic int child_ran;
};

struct c7_race_arg {
	struct c7_race *rc;
	int i;
};

struct c7_arg {
	struct c7_run *r;
	int i;
};

static void *c7_parker(void *arg)
{
	struct c7_arg *a = arg;

	atomic_store(&a->r->parked_ret[a->i], umcg_park());
	/* Released: wait until umcg_fini() has returned. */
	CT_SPIN_WAIT(atomic_load(&a->r->flag), 5000);
	c7_calls_after_release(a->r, a->i);
	return (void *)(long)(a->i + 100);
}

static void *c7_spin_then_calls(void *arg)
{
	struct c7_arg *a = arg;

	CT_SPIN_WAIT(atomic_load(&a->r->flag), 5000);
	c7_calls_after_release(a->r, a->i);
	return (void *)(long)(a->i + 100);
}

FIXTURE(c7)
{
	bool inited;
	struct c7_run run;
	struct c7_arg arg[C7_PARKED + 2];
	struct c7_race race;
	struct c7_race_arg rarg[C7R_WORKERS];
};

FIXTURE_VARIANT(c7)
{
	unsigned int nr_cores;
};

FIXTURE_VARIANT_ADD(c7, one_core) { .nr_cores = 1 };
FIXTURE_VARIANT_ADD(c7, two_cores) { .nr_cores = 2 };

FIXTURE_SETUP(c7)
{
	struct umcg_config cfg = ct_config(variant->nr_cores, NULL);

	if (ct_nr_cpus() < (int)variant->nr_cores)
		SKIP(return, "needs %u CPUs", variant->nr_cores);
	for (int i = 0; i < C7_PARKED + 2; i++) {
		self->arg[i].r = &self->run;
		self->arg[i].i = i;
	}
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
}

FIXTURE_TEARDOWN(c7)
{
	atomic_store(&self->run.flag, 1);
	if (self->inited)
		EXPECT_EQ(0, umcg_fini());
}

/* --- exit frees the core ---------------------------------------------- */

/*
 * Hold the core until r->flag.  The first pass of the loop touches every
 * page it runs on (code, stack, vDSO) before @holding is raised: a page
 * fault that sleeps (on mmap_lock, say, which the main thread's next
 * spawn takes to map a stack) is a block on the kernel backends, and a
 * block gives the core away.
 */
static void c7_hold(struct c7_run *r)
{
	(void)CT_SPIN_WAIT(atomic_load(&r->flag), 0);
	atomic_fetch_add(&r->holding, 1);
	CT_SPIN_WAIT(atomic_load(&r->flag), 5000);
}

static void *c7_hold_then_return(void *arg)
{
	c7_hold(arg);
	return (void *)0x11;
}

static void *c7_hold_then_pthread_exit(void *arg)
{
	c7_hold(arg);
	pthread_exit((void *)0x22);
}

static void *c7_mark(void *arg)
{
	struct c7_run *r = arg;

	atomic_fetch_add(&r->ran, 1);
	return (void *)0x33;
}

/* Every core is held by a worker; each exits and a queued one runs. */
static void c7_exit_frees_core(struct __test_metadata *_metadata, struct c7_run *r,
			       unsigned int nr, void *(*holder)(void *), void *want)
{
	umcg_thread_t *h[CT_MAX_CORES], *m[CT_MAX_CORES];
	struct umcg_stats st;
	void *v;

	for (unsigned int i = 0; i < nr; i++) {
		struct umcg_attr a = ct_attr(i);

		ASSERT_EQ(0, umcg_spawn(&h[i], &a, holder, r));
		ASSERT_TRUE(CT_WAIT(umcg_thread_state(h[i]) == UMCG_STATE_RUNNING, 2000));
	}
	ASSERT_TRUE(CT_WAIT(atomic_load(&r->holding) == (int)nr, 2000));
	for (unsigned int i = 0; i < nr; i++) {
		ASSERT_EQ(0, umcg_spawn(&m[i], NULL, c7_mark, r));
	}
	usleep(10000);
	ASSERT_EQ(0, atomic_load(&r->ran));
	atomic_store(&r->flag, 1);
	ASSERT_TRUE(CT_WAIT(atomic_load(&r->ran) == (int)nr, 2000));
	for (unsigned int i = 0; i < nr; i++) {
		v = NULL;
		EXPECT_EQ(0, ct_join(h[i], &v, 2000));
		EXPECT_EQ(want, v);
		v = NULL;
		EXPECT_EQ(0, ct_join(m[i], &v, 2000));
		EXPECT_EQ((void *)0x33, v);
	}
	ASSERT_EQ(0, umcg_stats(&st));
	EXPECT_EQ(2 * nr, st.exited);
	EXPECT_EQ(0, st.live);
}

TEST_F(c7, return_frees_the_core)
{
	c7_exit_frees_core(_metadata, &self->run, variant->nr_cores,
			   c7_hold_then_return, (void *)0x11);
}

TEST_F(c7, pthread_exit_frees_the_core)
{
	c7_exit_frees_core(_metadata, &self->run, variant->nr_cores,
			   c7_hold_then_pthread_exit, (void *)0x22);
}

/* --- umcg_fini() with live workers ------------------------------------- */

/*
 * C7_PARKED parked workers, one running (spinning) and one queued behind
 * it (or behind the second core's spinner): fini returns 0 and every one of
 * them, released, gets -ESRCH from every call and can be joined.
 */
TEST_F(c7, fini_releases_live_workers)
{
	struct c7_run *r = &self->run;
	unsigned int nr = variant->nr_cores;
	int nt = C7_PARKED + 2;
	umcg_thread_t *extra[CT_MAX_CORES];
	int nextra = 0;

	for (int i = 0; i < C7_PARKED; i++) {
		ASSERT_EQ(0, umcg_spawn(&r->t[i], NULL, c7_parker, &self->arg[i]));
		ASSERT_TRUE(CT_WAIT(umcg_thread_state(r->t[i]) == UMCG_STATE_PARKED, 2000));
	}
	/* Spinners on every core but the last, which gets the one we watch. */
	for (unsigned int c = 0; c + 1 < nr; c++) {
		struct umcg_attr a = ct_attr(c);

		ASSERT_EQ(0, umcg_spawn(&extra[nextra], &a, c7_hold_then_return, r));
		ASSERT_TRUE(CT_WAIT(umcg_thread_state(extra[nextra]) == UMCG_STATE_RUNNING,
				    2000));
		nextra++;
	}
	ASSERT_EQ(0, umcg_spawn(&r->t[C7_PARKED], NULL, c7_spin_then_calls,
				&self->arg[C7_PARKED]));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(r->t[C7_PARKED]) == UMCG_STATE_RUNNING, 2000));
	ASSERT_EQ(0, umcg_spawn(&r->t[C7_PARKED + 1], NULL, c7_spin_then_calls,
				&self->arg[C7_PARKED + 1]));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(r->t[C7_PARKED + 1]) == UMCG_STATE_RUNNABLE,
			    2000));

	self->inited = false;
	ASSERT_EQ(0, umcg_fini());
	EXPECT_EQ(NULL, umcg_backend_name());
	atomic_store(&r->flag, 1);

	/* All done first: they pass each other's handles to unpark/switch_to. */
	for (int i = 0; i < nt; i++) {
		ASSERT_TRUE(CT_WAIT(atomic_load(&r->after[i].done), 2000)) TH_LOG("worker %d", i);
	}
	for (int i = 0; i < nt; i++) {
		struct c7_after *a = &r->after[i];
		void *v = NULL;

		EXPECT_EQ(1, atomic_load(&a->self_null)) TH_LOG("worker %d", i);
		EXPECT_EQ(-ESRCH, atomic_load(&a->yield)) TH_LOG("worker %d", i);
		EXPECT_EQ(-ESRCH, atomic_load(&a->park)) TH_LOG("worker %d", i);
		EXPECT_EQ(-ESRCH, atomic_load(&a->park_timeout)) TH_LOG("worker %d", i);
		EXPECT_EQ(-ESRCH, atomic_load(&a->sleep)) TH_LOG("worker %d", i);
		EXPECT_EQ(-ESRCH, atomic_load(&a->unpark)) TH_LOG("worker %d", i);
		EXPECT_EQ(-ESRCH, atomic_load(&a->switch_to)) TH_LOG("worker %d", i);
		EXPECT_EQ(-ESRCH, atomic_load(&a->spawn)) TH_LOG("worker %d", i);
		EXPECT_EQ(-ESRCH, atomic_load(&a->nr_cores)) TH_LOG("worker %d", i);
		EXPECT_EQ(-ESRCH, atomic_load(&a->stats)) TH_LOG("worker %d", i);
		EXPECT_EQ(-ESRCH, atomic_load(&a->fini)) TH_LOG("worker %d", i);
		EXPECT_EQ(0, umcg_join(r->t[i], &v)) TH_LOG("worker %d", i);
		EXPECT_EQ((void *)(long)(i + 100), v) TH_LOG("worker %d", i);
	}
	for (int i = 0; i < C7_PARKED; i++) {
		EXPECT_EQ(0, atomic_load(&r->parked_ret[i]));
	}
	for (int i = 0; i < nextra; i++) {
		EXPECT_EQ(0, umcg_join(extra[i], NULL));
	}
}

/* --- released while umcg_fini() runs ----------------------------------- */

static void *c7_race_child(void *arg)
{
	struct c7_race *rc = arg;

	atomic_fetch_add(&rc->child_ran, 1);
	return NULL;
}

/* Parks; once released by umcg_fini(), at once tries to spawn, again and again. */
static void *c7_race_parker(void *arg)
{
	struct c7_race_arg *a = arg;
	struct c7_race *rc = a->rc;

	umcg_park();
	for (int k = 0; k < C7R_TRIES; k++) {
		umcg_thread_t *c = NULL;

		if (umcg_spawn(&c, NULL, c7_race_child, rc))
			break;
		atomic_fetch_add(&rc->spawned, 1);
	}
	atomic_fetch_add(&rc->done, 1);
	return NULL;
}

/*
 * Released workers call umcg_spawn() while umcg_fini() is still tearing
 * the group down: umcg.h says every call of a released worker returns
 * -ESRCH, and nothing may crash.
 */
TEST_F(c7, spawn_while_fini_runs)
{
	struct c7_race *rc = &self->race;
	umcg_thread_t *t[C7R_WORKERS];

	for (int i = 0; i < C7R_WORKERS; i++) {
		self->rarg[i].rc = rc;
		self->rarg[i].i = i;
		ASSERT_EQ(0, umcg_spawn(&t[i], NULL, c7_race_parker, &self->rarg[i]));
		ASSERT_TRUE(CT_WAIT(umcg_thread_state(t[i]) == UMCG_STATE_PARKED, 2000));
	}
	self->inited = false;
	ASSERT_EQ(0, umcg_fini());
	ASSERT_TRUE(CT_WAIT(atomic_load(&rc->done) == C7R_WORKERS, 5000));
	for (int i = 0; i < C7R_WORKERS; i++) {
		EXPECT_EQ(0, umcg_join(t[i], NULL));
	}
	EXPECT_EQ(0, atomic_load(&rc->spawned))
		TH_LOG("children that ran: %d", atomic_load(&rc->child_ran));
	/* Let any child that did get spawned run into what it finds. */
	usleep(50000);
}

/* --- detached workers -------------------------------------------------- */

static void *c7_detached(void *arg)
{
	struct c7_run *r = arg;

	while (!atomic_load(&r->flag))
		umcg_park();
	atomic_fetch_add(&r->ran, 1);
	return NULL;
}

static void *c7_detached_quick(void *arg)
{
	struct c7_run *r = arg;

	atomic_fetch_add(&r->ran, 1);
	return NULL;
}

TEST_F(c7, detached_worker_frees_itself)
{
	struct c7_run *r = &self->run;
	struct umcg_attr a = ct_attr(-1);
	umcg_thread_t *t;
	struct umcg_stats st;

	a.flags = UMCG_ATTR_DETACHED;
	/* Without a handle... */
	atomic_store(&r->flag, 1);
	ASSERT_EQ(0, umcg_spawn(NULL, &a, c7_detached, r));
	ASSERT_TRUE(CT_WAIT(atomic_load(&r->ran) == 1, 2000));
	ASSERT_TRUE(CT_WAIT(umcg_stats(&st) == 0 && st.live == 0, 2000));
	EXPECT_EQ(1, st.exited);

	/* ...and with one, which cannot be joined. */
	atomic_store(&r->flag, 0);
	ASSERT_EQ(0, umcg_spawn(&t, &a, c7_detached, r));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(t) == UMCG_STATE_PARKED, 2000));
	EXPECT_EQ(-EINVAL, umcg_join(t, NULL));
	atomic_store(&r->flag, 1);
	ASSERT_EQ(0, umcg_unpark(t));
	ASSERT_TRUE(CT_WAIT(atomic_load(&r->ran) == 2, 2000));
	ASSERT_TRUE(CT_WAIT(umcg_stats(&st) == 0 && st.live == 0, 2000));
	EXPECT_EQ(2, st.exited);
	EXPECT_EQ(2, st.spawned);
	/* The handle's reference kept its memory: it is freed here. */
	EXPECT_EQ(0, umcg_thread_put(t));
}

/*
 * A handle outlives its thread while it holds a reference: a detached
 * worker's from umcg_spawn(), a joinable one's from umcg_thread_get().
 * Calls on it then say the thread is gone (-ESRCH) instead of touching
 * freed memory (which ASan reports).
 */
TEST_F(c7, stale_handle_gets_esrch)
{
	struct c7_run *r = &self->run;
	struct umcg_attr a = ct_attr(-1);
	umcg_thread_t *t, *j;
	struct umcg_stats st;

	a.flags = UMCG_ATTR_DETACHED;
	ASSERT_EQ(0, umcg_spawn(&t, &a, c7_detached_quick, r));
	ASSERT_TRUE(CT_WAIT(atomic_load(&r->ran) == 1, 2000));
	/* Done, and gone from the group: a detached thread has freed itself. */
	ASSERT_TRUE(CT_WAIT(umcg_stats(&st) == 0 && st.live == 0, 2000));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(t) == UMCG_STATE_DONE, 2000));
	EXPECT_EQ(-ESRCH, umcg_unpark(t));
	EXPECT_EQ(-EINVAL, umcg_join(t, NULL));
	EXPECT_EQ(UMCG_STATE_DONE, umcg_thread_state(t));
	EXPECT_EQ(0, umcg_thread_put(t));

	/* A joinable one, with a reference of its own past the join. */
	ASSERT_EQ(0, umcg_spawn(&j, NULL, c7_detached_quick, r));
	ASSERT_EQ(0, umcg_thread_get(j));
	ASSERT_EQ(0, umcg_join(j, NULL));
	EXPECT_EQ(UMCG_STATE_DONE, umcg_thread_state(j));
	EXPECT_EQ(-ESRCH, umcg_unpark(j));
	EXPECT_EQ(-EINVAL, umcg_join(j, NULL));	/* joined once already */
	EXPECT_EQ(0, umcg_thread_put(j));
	EXPECT_EQ(-EINVAL, umcg_thread_get(NULL));
	EXPECT_EQ(-EINVAL, umcg_thread_put(NULL));
}

/*
 * Many detached workers that exit as soon as they get a core: each frees
 * itself while the thread that handed it the core may still be waking it.
 * (A use after free here shows up under ASan/TSan, or as a crash.)
 */
TEST_F(c7, detached_workers_exit_at_once)
{
	struct c7_run *r = &self->run;
	struct umcg_attr a = ct_attr(-1);
	struct umcg_stats st;
	const int n = 300;

	a.flags = UMCG_ATTR_DETACHED;
	a.stack_size = 64 * 1024;
	for (int i = 0; i < n; i++) {
		ASSERT_EQ(0, umcg_spawn(NULL, &a, c7_detached_quick, r));
	}
	ASSERT_TRUE(CT_WAIT(atomic_load(&r->ran) == n, 5000));
	ASSERT_TRUE(CT_WAIT(umcg_stats(&st) == 0 && st.live == 0, 5000));
	EXPECT_EQ((uint64_t)n, st.exited);
}

/*
 * umcg_fini() releases parked detached workers that exit, and free
 * themselves, as soon as its futex wake reaches them: while its release
 * loop goes on to the next thread.  (A loop that read a freed thread's list
 * node shows up under ASan.)  Five rounds.
 */
TEST_F(c7, fini_releases_detached_workers)
{
	struct c7_run *r = &self->run;
	struct umcg_config cfg = ct_config(variant->nr_cores, NULL);
	struct umcg_attr a = ct_attr(-1);
	struct umcg_stats st;
	const int n = 100;

	a.flags = UMCG_ATTR_DETACHED;
	a.stack_size = 64 * 1024;
	for (int round = 0; round < 5; round++) {
		atomic_store(&r->flag, 0);
		atomic_store(&r->ran, 0);
		for (int i = 0; i < n; i++)
			ASSERT_EQ(0, umcg_spawn(NULL, &a, c7_detached, r));
		ASSERT_TRUE(CT_WAIT(umcg_stats(&st) == 0 && st.parks >= (uint64_t)n, 5000))
			TH_LOG("round %d: %llu parks of %d workers", round,
			       (unsigned long long)st.parks, n);
		/* Released, each sees the flag and returns at once. */
		atomic_store(&r->flag, 1);
		self->inited = false;
		ASSERT_EQ(0, umcg_fini());
		ASSERT_TRUE(CT_WAIT(atomic_load(&r->ran) == n, 5000))
			TH_LOG("round %d: %d of %d returned", round, atomic_load(&r->ran), n);
		ASSERT_EQ(0, umcg_init(&cfg));
		self->inited = true;
	}
}

/* --- the group's life ---------------------------------------------------- */

static void *c7_fini_from_worker(void *arg)
{
	return (void *)(long)umcg_fini();
}

TEST_F(c7, group_life)
{
	struct umcg_config cfg = ct_config(variant->nr_cores, NULL);
	umcg_thread_t *t;
	void *v = NULL;

	EXPECT_EQ(-EBUSY, umcg_init(&cfg));
	EXPECT_EQ(-EBUSY, umcg_init(NULL));
	EXPECT_STREQ(ct_backend(), umcg_backend_name());

	ASSERT_EQ(0, umcg_spawn(&t, NULL, c7_fini_from_worker, NULL));
	ASSERT_EQ(0, ct_join(t, &v, 2000));
	EXPECT_EQ(-EDEADLK, (int)(long)v);
	EXPECT_EQ((int)variant->nr_cores, umcg_nr_cores());

	self->inited = false;
	ASSERT_EQ(0, umcg_fini());
	EXPECT_EQ(-ESRCH, umcg_fini());
	EXPECT_EQ(-ESRCH, umcg_nr_cores());
	EXPECT_EQ(NULL, umcg_backend_name());

	/* A new group works like the first. */
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
	EXPECT_STREQ(ct_backend(), umcg_backend_name());
	v = NULL;
	ASSERT_EQ(0, umcg_spawn(&t, NULL, c7_mark, &self->run));
	ASSERT_EQ(0, ct_join(t, &v, 2000));
	EXPECT_EQ((void *)0x33, v);
	EXPECT_EQ(1, atomic_load(&self->run.ran));
}

static void *c7_child(void *arg)
{
	struct c7_run *r = arg;

	atomic_fetch_add(&r->ran, 1);
	return (void *)umcg_self();
}

/* The caller of umcg_init() as a worker: it shares the core, then fini. */
TEST_F(c7, attached_caller)
{
	struct umcg_config cfg = ct_config(1, NULL);
	struct c7_run *r = &self->run;
	umcg_thread_t *t;
	void *v = NULL;

	self->inited = false;
	ASSERT_EQ(0, umcg_fini());
	cfg.flags = UMCG_CONFIG_ATTACH_CALLER;
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
	ASSERT_NE(NULL, umcg_self());
	EXPECT_EQ(UMCG_STATE_RUNNING, umcg_thread_state(umcg_self()));
	EXPECT_EQ(0, umcg_thread_core(umcg_self()));

	/*
	 * One core, and we hold it: the child runs when we give it up.  (We
	 * are a worker now: we must not sleep in the kernel, or the monitor
	 * gives our core away.)
	 */
	ASSERT_EQ(0, umcg_spawn(&t, NULL, c7_child, r));
	ASSERT_TRUE(CT_SPIN_WAIT(umcg_thread_state(t) == UMCG_STATE_RUNNABLE, 2000));
	ct_spin_ns(10 * CT_MS);
	EXPECT_EQ(0, atomic_load(&r->ran));
	ASSERT_EQ(0, umcg_yield());
	EXPECT_EQ(1, atomic_load(&r->ran));
	ASSERT_EQ(0, umcg_join(t, &v));
	EXPECT_EQ((void *)t, v);

	self->inited = false;
	EXPECT_EQ(0, umcg_fini());
	EXPECT_EQ(NULL, umcg_self());
	EXPECT_EQ(-EPERM, umcg_yield());
}

TEST_HARNESS_MAIN
