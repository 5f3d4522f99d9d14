// SPDX-License-Identifier: GPL-2.0
/*
 * unpicked - a block of a worker that the policy has queued (kernel_backend.h:
 * "kmod" or "scx").  One core: a hog yields in a loop for longer than
 * the scheduler holds a woken worker (UMCG_SCX_HOLD_MAX_NS); a sleeper,
 * asleep in a raw futex wait (no libumcg call around it), is woken
 * meanwhile, so the policy queues it behind the hog.  On scx its hold ends
 * at the timer: it runs unpicked, goes back to its futex and blocks again,
 * owning no core.  When the hog returns, the policy picks the sleeper, which
 * sleeps in the kernel: its core must go on at once, to a third worker.
 * With that block dropped, the core stayed with the sleeper until its next
 * wake-up.  On kmod the sleeper stays held until its pick; the test then
 * checks only that the core goes on.  A second test wraps the sleeper's
 * wait in umcg_blocking_enter()/_leave(), as umcg-run's hooks do: then
 * the sleeper, its hold ended, waits in umcg_blocking_leave() for its
 * pick instead of running its own code while the hog owns the core.
 */
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <umcg.h>
#include <umcg/policy.h>

#include "kernel_backend.h"

/* Past the longest hold (2 s) with the hold timer's period to spare. */
#define UP_HOG_MS	3500
/* How long the third worker may take to get the core once the hog is done. */
#define UP_NEXT_MS	2000

struct up_run {
	bool announced;			/* sleeper wraps its wait as umcg-run does */
	_Atomic uint32_t word;		/* sleeper's futex: 0 sleep, 1 wake, 2 stop */
	_Atomic int hogging;
	_Atomic int sleeper_waits;	/* futex waits the sleeper began */
	_Atomic int ran_unpicked;	/* sleeper ran while the hog spun */
	_Atomic int state_unpicked;	/* ... its libumcg state then */
	_Atomic uint64_t hog_done_ns;
	_Atomic uint64_t next_ran_ns;
};

static void up_futex_wait(_Atomic uint32_t *w, uint32_t val)
{
	syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void up_futex_wake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *up_sleeper(void *arg)
{
	struct up_run *r = arg;
	uint32_t v;

	for (;;) {
		atomic_fetch_add(&r->sleeper_waits, 1);
		while ((v = atomic_load(&r->word)) == 0) {
			if (r->announced && umcg_blocking_enter(0))
				return NULL;
			up_futex_wait(&r->word, 0);
			if (r->announced)
				umcg_blocking_leave();
		}
		if (v == 2)
			return NULL;
		if (atomic_load(&r->hogging)) {
			atomic_store(&r->ran_unpicked, 1);
			atomic_store(&r->state_unpicked, umcg_thread_state(umcg_self()));
		}
		atomic_store(&r->word, 0);	/* and sleep again */
	}
}

static void *up_hog(void *arg)
{
	struct up_run *r = arg;
	uint64_t end = kb_now_ns() + UP_HOG_MS * KB_MS;

	atomic_store(&r->hogging, 1);
	/*
	 * sched_yield(), no block: the core stays ours, and the server of
	 * its CPU gets to run and queue the sleeper once it is woken.
	 */
	while (kb_now_ns() < end)
		sched_yield();
	atomic_store(&r->hogging, 0);
	atomic_store(&r->hog_done_ns, kb_now_ns());
	return NULL;
}

static void *up_next(void *arg)
{
	struct up_run *r = arg;

	atomic_store(&r->next_ran_ns, kb_now_ns());
	return NULL;
}

FIXTURE(up)
{
	bool inited;
	struct up_run run;
};

FIXTURE_SETUP(up)
{
	const char *why = kb_backend_get();

	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, kb_init(1, "fifo"));
	self->inited = true;
}

FIXTURE_TEARDOWN(up)
{
	if (self->inited) {
		EXPECT_EQ(0, umcg_fini());
		KB_EXPECT_BACKEND_KEPT();
	}
}

static void up_check(struct __test_metadata *_metadata, struct up_run *r)
{
	umcg_thread_t *s, *h, *n;
	uint64_t end, done, ran;

	ASSERT_EQ(0, umcg_spawn(&s, NULL, up_sleeper, r));
	end = kb_now_ns() + 10000 * KB_MS;
	while (atomic_load(&r->sleeper_waits) < 1 && kb_now_ns() < end)
		usleep(1000);
	ASSERT_EQ(1, atomic_load(&r->sleeper_waits));
	usleep(100 * 1000);	/* asleep in its futex wait */
	ASSERT_EQ(0, umcg_spawn(&h, NULL, up_hog, r));
	while (!atomic_load(&r->hogging) && kb_now_ns() < end)
		usleep(1000);
	ASSERT_EQ(1, atomic_load(&r->hogging));
	/* Woken while the hog owns the core: queued behind it. */
	atomic_store(&r->word, 1);
	up_futex_wake(&r->word);
	/* Queued behind the sleeper: the sleeper's pick comes first. */
	while (!atomic_load(&r->ran_unpicked) && atomic_load(&r->hogging))
		usleep(1000);
	ASSERT_EQ(0, umcg_spawn(&n, NULL, up_next, r));

	end = kb_now_ns() + (UP_HOG_MS + 10000) * KB_MS;
	while (!atomic_load(&r->hog_done_ns) && kb_now_ns() < end)
		usleep(1000);
	ASSERT_NE(0, atomic_load(&r->hog_done_ns));
	end = atomic_load(&r->hog_done_ns) + UP_NEXT_MS * KB_MS;
	while (!atomic_load(&r->next_ran_ns) && kb_now_ns() < end)
		usleep(1000);
	done = atomic_load(&r->hog_done_ns);
	ran = atomic_load(&r->next_ran_ns);
	TH_LOG("sleeper ran unpicked: %d (state %d), waits %d; next ran %lld ms after the hog",
	       atomic_load(&r->ran_unpicked), atomic_load(&r->state_unpicked),
	       atomic_load(&r->sleeper_waits),
	       ran ? (long long)((ran - done) / KB_MS) : -1LL);
	if (!ran)
		umcg_dump(stderr);
#ifdef KB_BACKEND_SCX
	/* What the test plants: the hold ended, the sleeper slept again. */
	if (!r->announced) {
		EXPECT_EQ(1, atomic_load(&r->ran_unpicked));
		EXPECT_EQ(UMCG_STATE_RUNNABLE, atomic_load(&r->state_unpicked));
	}
#endif
	/* Announced: the way out of the call waited for the pick (C1). */
	if (r->announced)
		EXPECT_EQ(0, atomic_load(&r->ran_unpicked))
			TH_LOG("ran its own code while queued, in state %d",
			       atomic_load(&r->state_unpicked));
	EXPECT_EQ(2, atomic_load(&r->sleeper_waits));
	EXPECT_NE(0, ran) TH_LOG("the core stayed with the sleeping worker");

	atomic_store(&r->word, 2);
	up_futex_wake(&r->word);
	EXPECT_EQ(0, umcg_join(s, NULL));
	EXPECT_EQ(0, umcg_join(h, NULL));
	EXPECT_EQ(0, umcg_join(n, NULL));
}

TEST_F_TIMEOUT(up, core_goes_on_past_a_queued_sleeper, 60)
{
	up_check(_metadata, &self->run);
}

/*
 * The sleeper's wait wrapped in umcg_blocking_enter()/_leave(), as
 * umcg-run's hooks wrap a program's calls: once its hold ends it waits in
 * umcg_blocking_leave() for its pick, and runs none of its own code while
 * the hog owns the core.
 */
TEST_F_TIMEOUT(up, announced_call_waits_for_its_pick, 60)
{
	self->run.announced = true;
	up_check(_metadata, &self->run);
}

TEST_HARNESS_MAIN
