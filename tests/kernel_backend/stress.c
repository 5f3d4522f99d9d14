// SPDX-License-Identifier: GPL-2.0
/*
 * stress - a kernel backend's event handling under churn (kernel_backend.h:
 * "kmod" or "scx"): workers that block behind libumcg's back (nanosleep,
 * read from a pipe a plain thread feeds), yield, park with a timeout,
 * unpark and switch to each other,
 * with and without a short time slice, so that kernel moves (blocks,
 * wakes, preemptions) race the library's own moves and several servers
 * report the same worker.  No worker is lost (all finish); none is queued
 * twice (libumcg aborts when the policy hands out a thread that is not
 * RUNNABLE); a worker that runs user code reads RUNNING; and, without a
 * time slice, no core ever runs two workers' busy loops at once (with one,
 * a worker preempted mid-loop legitimately lets another start its own).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "kselftest_harness.h"

#include <umcg.h>
#include <umcg/policy.h>

#include "kernel_backend.h"
#include "umcg_test_churn.h"
#include "umcg_test_feeder.h"

#define ST_WORKERS	8
#define ST_RUN_NS	(1500 * KB_MS)
#define ST_MAX_CORES	2

struct st_run {
	unsigned int nr_cores;
	int pipefd[2];
	umcg_thread_t *t[ST_WORKERS];
	_Atomic int ready;
	_Atomic int on_core[ST_MAX_CORES];
	_Atomic int max_on_core;
	_Atomic int running, max_running;
	_Atomic long ops;
	_Atomic int not_running;	/* user code ran while not RUNNING */
	_Atomic int err, err_op;
	_Atomic int done;
};

struct st_arg {
	struct st_run *r;
	unsigned int id;
};

static void st_max(_Atomic int *max, int v)
{
	int cur = atomic_load(max);

	while (cur < v && !atomic_compare_exchange_weak(max, &cur, v))
		;
}

static void st_slice(struct st_run *r)
{
	int core = umcg_thread_core(umcg_self());

	st_max(&r->max_running, atomic_fetch_add(&r->running, 1) + 1);
	if (core >= 0 && core < (int)r->nr_cores)
		st_max(&r->max_on_core, atomic_fetch_add(&r->on_core[core], 1) + 1);
	for (int i = 0; i < 10; i++) {
		if (umcg_thread_state(umcg_self()) != UMCG_STATE_RUNNING)
			atomic_fetch_add(&r->not_running, 1);
		kb_spin_ns(3 * 1000);
	}
	if (core >= 0 && core < (int)r->nr_cores)
		atomic_fetch_sub(&r->on_core[core], 1);
	atomic_fetch_sub(&r->running, 1);
}

static void st_error(struct st_run *r, int op, int err)
{
	int zero = 0;

	if (atomic_compare_exchange_strong(&r->err, &zero, err))
		atomic_store(&r->err_op, op);
}

static void *st_worker(void *arg)
{
	struct st_arg *a = arg;
	struct st_run *r = a->r;
	unsigned int seed = a->id * 7919 + 1;
	uint64_t end;

	while (atomic_load(&r->ready) < ST_WORKERS)
		umcg_yield();
	end = kb_now_ns() + ST_RUN_NS;
	while (kb_now_ns() < end) {
		umcg_thread_t *peer = r->t[rand_r(&seed) % ST_WORKERS];
		int op = rand_r(&seed) % (UMCG_CHURN_NOTHING + 1);
		int ret = umcg_test_churn(op, r->pipefd[0], peer);

		if (ret)
			st_error(r, op, ret);
		st_slice(r);
		atomic_fetch_add(&r->ops, 1);
	}
	/* Whoever parks waiting for an unpark from us: let it go. */
	for (int i = 0; i < ST_WORKERS; i++)
		umcg_unpark(r->t[i]);
	/* Last: the joins, which free the handles unparked above, wait for it. */
	atomic_fetch_add(&r->done, 1);
	return NULL;
}

FIXTURE(st)
{
	bool inited;
	struct umcg_test_feeder feeder;
	struct st_run run;
	struct st_arg args[ST_WORKERS];
};

FIXTURE_VARIANT(st)
{
	unsigned int nr_cores;
	const char *policy;
	uint64_t time_slice_ns;
};

FIXTURE_VARIANT_ADD(st, fifo_1) { .nr_cores = 1, .policy = "fifo" };
FIXTURE_VARIANT_ADD(st, steal_2) { .nr_cores = 2, .policy = "steal" };
FIXTURE_VARIANT_ADD(st, fifo_1_slice) {
	.nr_cores = 1, .policy = "fifo", .time_slice_ns = 300 * 1000,
};
FIXTURE_VARIANT_ADD(st, steal_2_slice) {
	.nr_cores = 2, .policy = "steal", .time_slice_ns = 300 * 1000,
};

FIXTURE_SETUP(st)
{
	struct umcg_config cfg = { .size = sizeof(cfg) };
	const char *why = kb_backend_get();
	cpu_set_t set;
	int ret;

	self->run.pipefd[0] = self->run.pipefd[1] = -1;
	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(set), &set));
	if (CPU_COUNT(&set) < (int)variant->nr_cores)
		SKIP(return, "needs %u CPUs", variant->nr_cores);
	self->run.nr_cores = variant->nr_cores;
	ASSERT_EQ(0, pipe(self->run.pipefd));
	cfg.nr_cores = variant->nr_cores;
	cfg.backend = KB_BACKEND;
	cfg.policy = umcg_policy_find(variant->policy);
	cfg.time_slice_ns = variant->time_slice_ns;
	ret = umcg_init(&cfg);
#ifdef KB_BACKEND_SCX
	/* Documentation/scx.rst: no time slice (C6) on scx yet. */
	if (ret == -EOPNOTSUPP && variant->time_slice_ns)
		SKIP(return, "the scx backend has no time slice yet (-EOPNOTSUPP)");
#endif
	ASSERT_EQ(0, ret);
	self->inited = true;
	ASSERT_STREQ(KB_BACKEND, umcg_backend_name());
	ASSERT_EQ(0, umcg_test_feeder_start(&self->feeder, self->run.pipefd[1], 200));
}

FIXTURE_TEARDOWN(st)
{
	umcg_test_feeder_stop(&self->feeder);
	if (self->inited) {
		EXPECT_EQ(0, umcg_fini());
		KB_EXPECT_BACKEND_KEPT();
	}
	if (self->run.pipefd[0] >= 0) {
		close(self->run.pipefd[0]);
		close(self->run.pipefd[1]);
	}
}

TEST_F_TIMEOUT(st, nothing_lost_nothing_doubled, 110)
{
	struct st_run *r = &self->run;
	struct umcg_stats st;
	uint64_t end;

	for (int i = 0; i < ST_WORKERS; i++) {
		self->args[i].r = r;
		self->args[i].id = i;
		ASSERT_EQ(0, umcg_spawn(&r->t[i], NULL, st_worker, &self->args[i]));
	}
	atomic_store(&r->ready, ST_WORKERS);
	end = kb_now_ns() + 60000 * KB_MS;
	while (atomic_load(&r->done) < ST_WORKERS && kb_now_ns() < end)
		usleep(10000);
	if (atomic_load(&r->done) < ST_WORKERS)
		umcg_dump(stderr);
	ASSERT_EQ(ST_WORKERS, atomic_load(&r->done)) TH_LOG("%ld operations", atomic_load(&r->ops));
	for (int i = 0; i < ST_WORKERS; i++) {
		while (umcg_thread_state(r->t[i]) != UMCG_STATE_DONE && kb_now_ns() < end)
			usleep(1000);
		ASSERT_EQ(UMCG_STATE_DONE, umcg_thread_state(r->t[i])) {
			umcg_dump(stderr);
		}
		EXPECT_EQ(0, umcg_join(r->t[i], NULL));
	}
	ASSERT_EQ(0, umcg_stats(&st));
	TH_LOG("%ld operations; %llu blocks, %llu preemptions, %llu switches; missed news %ld",
	       atomic_load(&r->ops), (unsigned long long)st.blocks,
	       (unsigned long long)st.preempts, (unsigned long long)st.switches,
	       kb_missed_news());
	EXPECT_EQ(0, atomic_load(&r->err)) TH_LOG("op %d", atomic_load(&r->err_op));
	EXPECT_EQ(0, atomic_load(&r->not_running));
	if (!variant->time_slice_ns) {
		EXPECT_EQ(1, atomic_load(&r->max_on_core));
		EXPECT_GE((int)r->nr_cores, atomic_load(&r->max_running));
	} else {
		EXPECT_LT(0, st.preempts);
	}
	EXPECT_LT(0, st.blocks);
	EXPECT_EQ(0, st.live);
}

TEST_HARNESS_MAIN
