// SPDX-License-Identifier: GPL-2.0
/*
 * A thread that is no worker of ours, on the CPU of a managed core, keeps
 * getting that CPU while two workers switch to each other there without
 * pause (umcg_switch_to(): a futex wake of the other, then a sleep).
 *
 * On scx the bystander is SCHED_EXT too (sched_setscheduler() of its own;
 * the scheduler queues it on its FIFO), and each wake-up of the switching
 * workers used to go straight to the CPU's local DSQ, so the CPU never ran
 * empty, never called ops.dispatch, and the bystander waited until the
 * watchdog ejected the scheduler ("runnable task stall").  On kmod it is a
 * plain fair-class thread beside them.  Either way its longest wait for
 * the CPU must stay far below the watchdog's timeout, and the backend must
 * still be ours afterwards.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <umcg.h>
#include <umcg/policy.h>

#include "kernel_backend.h"

#ifndef SCHED_EXT
#define SCHED_EXT	7
#endif

/* Longer than the scheduler's watchdog timeout (5 s). */
#define BY_SWITCH_MS	8000
/* The longest the bystander may wait for its CPU. */
#define BY_GAP_MAX_MS	1000

struct by_run {
	umcg_thread_t *a, *b;
	_Atomic int cpu;		/* the managed core's CPU, -1 until known */
	_Atomic int go;			/* 1: switch; 2: stop */
	_Atomic int ready;		/* the bystander runs on that CPU */
	_Atomic uint64_t switches;
	_Atomic uint64_t rounds;	/* the bystander's loops */
	_Atomic uint64_t gap_max_ns;	/* its longest wait for the CPU */
};

static struct by_run by;

static void *by_worker(void *arg)
{
	umcg_thread_t **other = arg;
	int ret;

	atomic_store(&by.cpu, sched_getcpu());
	while (atomic_load(&by.go) == 0)
		umcg_yield();
	while (atomic_load(&by.go) == 1) {
		ret = umcg_switch_to(*other);
		if (ret && ret != -EBUSY && ret != -EAGAIN)
			break;
		atomic_fetch_add(&by.switches, 1);
	}
	/* Let the other one out of its wait too. */
	umcg_unpark(*other);
	return NULL;
}

static void *by_bystander(void *arg)
{
	struct sched_param sp = { 0 };
	cpu_set_t set;
	uint64_t last, now, gap;

	(void)arg;
	CPU_ZERO(&set);
	CPU_SET(atomic_load(&by.cpu), &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		return (void *)1;
#ifdef KB_BACKEND_SCX
	if (sched_setscheduler(0, SCHED_EXT, &sp))
		return (void *)2;
#else
	(void)sp;
#endif
	atomic_store(&by.ready, 1);
	last = kb_now_ns();
	while (atomic_load(&by.go) != 2) {
		now = kb_now_ns();
		gap = now - last;
		if (atomic_load(&by.go) == 1 && gap > atomic_load(&by.gap_max_ns))
			atomic_store(&by.gap_max_ns, gap);
		last = now;
		atomic_fetch_add(&by.rounds, 1);
	}
	return NULL;
}

FIXTURE(by)
{
	bool inited;
};

FIXTURE_SETUP(by)
{
	const char *why = kb_backend_get();

	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, kb_init(1, "fifo"));
	self->inited = true;
}

FIXTURE_TEARDOWN(by)
{
	if (self->inited) {
		EXPECT_EQ(0, umcg_fini());
		KB_EXPECT_BACKEND_KEPT();
	}
}

TEST_F_TIMEOUT(by, fifo_thread_runs_beside_switching_workers, 60)
{
	uint64_t end, rounds0, rounds1;
	pthread_t bt;
	void *bret;

	atomic_store(&by.cpu, -1);
	ASSERT_EQ(0, umcg_spawn(&by.a, NULL, by_worker, &by.b));
	ASSERT_EQ(0, umcg_spawn(&by.b, NULL, by_worker, &by.a));
	end = kb_now_ns() + 10000 * KB_MS;
	while (atomic_load(&by.cpu) < 0 && kb_now_ns() < end)
		usleep(1000);
	ASSERT_LE(0, atomic_load(&by.cpu));
	ASSERT_EQ(0, pthread_create(&bt, NULL, by_bystander, NULL));
	while (!atomic_load(&by.ready) && kb_now_ns() < end)
		usleep(1000);
	ASSERT_EQ(1, atomic_load(&by.ready));

	atomic_store(&by.go, 1);
	rounds0 = atomic_load(&by.rounds);
	usleep(BY_SWITCH_MS * 1000);
	rounds1 = atomic_load(&by.rounds);
	atomic_store(&by.go, 2);
	EXPECT_EQ(0, umcg_join(by.a, NULL));
	EXPECT_EQ(0, umcg_join(by.b, NULL));
	EXPECT_EQ(0, pthread_join(bt, &bret));
	EXPECT_EQ(NULL, bret) TH_LOG("bystander set-up failed at step %ld", (long)bret);

	TH_LOG("CPU %d: %llu switches, bystander %llu rounds, longest wait %llu ms",
	       atomic_load(&by.cpu), (unsigned long long)atomic_load(&by.switches),
	       (unsigned long long)(rounds1 - rounds0),
	       (unsigned long long)(atomic_load(&by.gap_max_ns) / KB_MS));
	EXPECT_LT(1000, atomic_load(&by.switches)) TH_LOG("the workers hardly switched");
	EXPECT_LT(0, rounds1 - rounds0) TH_LOG("the bystander never ran");
	EXPECT_GT(BY_GAP_MAX_MS * KB_MS, atomic_load(&by.gap_max_ns));
	EXPECT_STREQ(KB_BACKEND, umcg_backend_name());
}

TEST_HARNESS_MAIN
