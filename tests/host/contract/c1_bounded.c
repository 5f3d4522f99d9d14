// SPDX-License-Identifier: GPL-2.0
/*
 * c1_bounded - contract C1, bounded concurrency (user backend; kmod in the
 * VM).
 *
 * CPU-bound workers that never block, each doing slices of work separated
 * by umcg_yield(), never run more than nr_cores at a time and never two on
 * one core; each slice runs on the CPU of the core the worker was given and
 * stays on that core.  With two cores both are used.  For every built-in
 * policy (steal, fifo, pinned), on one and on two cores.
 */
#include "kselftest_harness.h"
#include "contract.h"

#define C1_WORKERS	6
#define C1_ROUNDS	8
#define C1_SLICE_NS	(1 * CT_MS)
#define C1_SPREAD_MS	2000

struct c1_run {
	unsigned int nr_cores;
	int cpu_of_core[CT_MAX_CORES];
	_Atomic int running, max_running;
	_Atomic int on_core[CT_MAX_CORES];
	_Atomic int max_on_core;
	_Atomic uint32_t cores_used;	/* bit per core a slice ran on */
	_Atomic int slices;
	_Atomic int bad_core;		/* umcg_thread_core() out of range */
	_Atomic int moved;		/* core changed during a slice */
	_Atomic int wrong_cpu;		/* slice not on its core's CPU */
	_Atomic int yield_err;
};

/*
 * C1_ROUNDS slices each; then, while some core has run nothing yet (its
 * server may be slow to get a CPU on a loaded machine), more slices, for
 * at most C1_SPREAD_MS: "every core gets work" must not depend on timing.
 */
static bool c1_more(struct c1_run *r, int i, uint64_t deadline)
{
	if (i < C1_ROUNDS)
		return true;
	return atomic_load(&r->cores_used) != (1U << r->nr_cores) - 1 &&
	       ct_now_ns() < deadline;
}

static void *c1_worker(void *arg)
{
	struct c1_run *r = arg;
	uint64_t deadline = ct_now_ns() + C1_SPREAD_MS * CT_MS;

	for (int i = 0; c1_more(r, i, deadline); i++) {
		int core = umcg_thread_core(umcg_self());
		int ret;

		ct_max(&r->max_running, atomic_fetch_add(&r->running, 1) + 1);
		if (core < 0 || core >= (int)r->nr_cores) {
			atomic_fetch_add(&r->bad_core, 1);
		} else {
			ct_max(&r->max_on_core, atomic_fetch_add(&r->on_core[core], 1) + 1);
			atomic_fetch_or(&r->cores_used, 1U << core);
			if (sched_getcpu() != r->cpu_of_core[core])
				atomic_fetch_add(&r->wrong_cpu, 1);
		}
		ct_spin_ns(C1_SLICE_NS);
		if (umcg_thread_core(umcg_self()) != core)
			atomic_fetch_add(&r->moved, 1);
		if (core >= 0 && core < (int)r->nr_cores)
			atomic_fetch_sub(&r->on_core[core], 1);
		atomic_fetch_sub(&r->running, 1);
		atomic_fetch_add(&r->slices, 1);
		ret = umcg_yield();
		if (ret)
			atomic_store(&r->yield_err, ret);
	}
	return NULL;
}

FIXTURE(c1)
{
	bool inited;
	struct c1_run run;
};

FIXTURE_VARIANT(c1)
{
	const char *policy;
	unsigned int nr_cores;
};

FIXTURE_VARIANT_ADD(c1, steal_1) { .policy = "steal", .nr_cores = 1 };
FIXTURE_VARIANT_ADD(c1, steal_2) { .policy = "steal", .nr_cores = 2 };
FIXTURE_VARIANT_ADD(c1, fifo_1) { .policy = "fifo", .nr_cores = 1 };
FIXTURE_VARIANT_ADD(c1, fifo_2) { .policy = "fifo", .nr_cores = 2 };
FIXTURE_VARIANT_ADD(c1, pinned_1) { .policy = "pinned", .nr_cores = 1 };
FIXTURE_VARIANT_ADD(c1, pinned_2) { .policy = "pinned", .nr_cores = 2 };

FIXTURE_SETUP(c1)
{
	struct umcg_config cfg = ct_config(variant->nr_cores, variant->policy);

	if (ct_nr_cpus() < (int)variant->nr_cores)
		SKIP(return, "needs %u CPUs", variant->nr_cores);
	ASSERT_NE(NULL, cfg.policy);
	ASSERT_EQ(0, ct_core_cpus(self->run.cpu_of_core, variant->nr_cores));
	self->run.nr_cores = variant->nr_cores;
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
	ASSERT_STREQ(ct_backend(), umcg_backend_name());
}

FIXTURE_TEARDOWN(c1)
{
	if (self->inited)
		EXPECT_EQ(0, umcg_fini());
}

/* Spawned from the main thread (not a worker). */
TEST_F(c1, never_more_than_nr_cores)
{
	struct c1_run *r = &self->run;
	umcg_thread_t *t[C1_WORKERS];
	struct umcg_stats st;

	for (int i = 0; i < C1_WORKERS; i++) {
		/* The pinned policy spreads workers by umcg_attr.core. */
		struct umcg_attr a = ct_attr(i % (int)variant->nr_cores);

		ASSERT_EQ(0, umcg_spawn(&t[i], &a, c1_worker, r));
	}
	for (int i = 0; i < C1_WORKERS; i++) {
		ASSERT_EQ(0, ct_join(t[i], NULL, 5000));
	}

	EXPECT_LE(C1_WORKERS * C1_ROUNDS, atomic_load(&r->slices));
	EXPECT_EQ(0, atomic_load(&r->yield_err));
	EXPECT_EQ(0, atomic_load(&r->bad_core));
	EXPECT_EQ(0, atomic_load(&r->moved));
	EXPECT_EQ(0, atomic_load(&r->wrong_cpu));
	EXPECT_GE((int)variant->nr_cores, atomic_load(&r->max_running));
	EXPECT_EQ(1, atomic_load(&r->max_on_core));
	/* Bounded, but not starved: every core got work. */
	EXPECT_EQ((1U << variant->nr_cores) - 1, atomic_load(&r->cores_used));
	ASSERT_EQ(0, umcg_stats(&st));
	EXPECT_EQ(0, st.live);
	EXPECT_EQ(C1_WORKERS, st.exited);
	EXPECT_LT(0, st.yields);
}

/* The caller starts a slice of user code on its core; returns the core. */
static int c1_enter(struct c1_run *r)
{
	int core = umcg_thread_core(umcg_self());

	ct_max(&r->max_running, atomic_fetch_add(&r->running, 1) + 1);
	if (core < 0 || core >= (int)r->nr_cores)
		atomic_fetch_add(&r->bad_core, 1);
	else
		ct_max(&r->max_on_core, atomic_fetch_add(&r->on_core[core], 1) + 1);
	return core;
}

static void c1_leave(struct c1_run *r, int core)
{
	if (core >= 0 && core < (int)r->nr_cores)
		atomic_fetch_sub(&r->on_core[core], 1);
	atomic_fetch_sub(&r->running, 1);
}

struct c1_spawner {
	struct c1_run *run;
	int ret;
};

static void *c1_spawner_main(void *arg)
{
	struct c1_spawner *sp = arg;
	struct c1_run *r = sp->run;
	/*
	 * Only the busy loops between the spawns are counted, each on the
	 * core the spawner has then: pthread_create() may sleep in the
	 * kernel (TSan's waits for the new thread to start), and then the
	 * core rightly goes on (C2) and the spawner queues for one again.
	 */
	umcg_thread_t *t[C1_WORKERS];
	int core;

	for (int i = 0; i < C1_WORKERS; i++) {
		struct umcg_attr a = ct_attr(i % (int)r->nr_cores);

		sp->ret = umcg_spawn(&t[i], &a, c1_worker, r);
		if (sp->ret)
			break;
		core = c1_enter(r);
		ct_spin_ns(C1_SLICE_NS / 4);
		c1_leave(r, core);
	}
	if (sp->ret)
		return NULL;
	/* The joining worker gives its core up: it does not count. */
	for (int i = 0; i < C1_WORKERS && !sp->ret; i++)
		sp->ret = umcg_join(t[i], NULL);
	return NULL;
}

/* Spawned and joined by a worker, which holds a core while it spawns. */
TEST_F(c1, spawned_by_a_worker)
{
	struct c1_spawner sp = { .run = &self->run, .ret = -1 };
	struct c1_run *r = &self->run;
	struct umcg_attr a = ct_attr(0);
	umcg_thread_t *s;

	ASSERT_EQ(0, umcg_spawn(&s, &a, c1_spawner_main, &sp));
	ASSERT_EQ(0, ct_join(s, NULL, 5000));
	ASSERT_EQ(0, sp.ret);
	EXPECT_LE(C1_WORKERS * C1_ROUNDS, atomic_load(&r->slices));
	EXPECT_EQ(0, atomic_load(&r->yield_err));
	EXPECT_EQ(0, atomic_load(&r->bad_core));
	EXPECT_EQ(0, atomic_load(&r->moved));
	EXPECT_EQ(0, atomic_load(&r->wrong_cpu));
	EXPECT_GE((int)variant->nr_cores, atomic_load(&r->max_running));
	EXPECT_EQ(1, atomic_load(&r->max_on_core));
}

TEST_HARNESS_MAIN
