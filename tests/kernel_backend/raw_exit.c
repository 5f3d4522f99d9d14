// SPDX-License-Identifier: GPL-2.0
/*
 * raw_exit - C7 on a kernel backend (kernel_backend.h: "kmod" or "scx"): a
 * worker that exits without libumcg's exit path (a raw exit(2) of its
 * thread, as a crash of the thread alone would) is reported by the kernel
 * (RUNNING -> DONE): its core goes to the next worker, it reads DONE,
 * counts as exited, and umcg_join() returns for it.  100 rounds, each with
 * a fresh thread registering right after the exit: the exited thread's
 * slot must not go to it while the library has not read the DONE there.
 * Needs block detection that sees exits: on kmod the sched_entry_tp
 * tracepoint (7.2+), so it SKIPs on the kprobe hook; on scx the
 * scheduler's exit_task.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/syscall.h>

#include "kselftest_harness.h"

#include <umcg.h>
#include <umcg/policy.h>

#include "kernel_backend.h"

struct rx_run {
	_Atomic int exiting;
	_Atomic int seen;
	_Atomic int next_ran;
};

static void *rx_exiter(void *arg)
{
	struct rx_run *r = arg;

	atomic_store(&r->seen, umcg_thread_state(umcg_self()));
	atomic_store(&r->exiting, 1);
	syscall(SYS_exit, 0);	/* this thread only, no clean-up */
	return NULL;
}

static void *rx_next(void *arg)
{
	struct rx_run *r = arg;

	atomic_store(&r->next_ran, 1);
	return NULL;
}

FIXTURE(rx)
{
	bool inited;
	struct rx_run run;
};

FIXTURE_SETUP(rx)
{
	struct umcg_config cfg = { .size = sizeof(cfg) };
	const char *why = kb_backend_get();

	if (why)
		SKIP(return, "%s", why);
#ifndef KB_BACKEND_SCX
	{
		char hook[32];

		if (!strcmp(kb_hook(hook, sizeof(hook)), "kprobe"))
			SKIP(return, "block detection by kprobe does not see exits");
	}
#endif
	cfg.nr_cores = 1;
	cfg.backend = KB_BACKEND;
	cfg.policy = umcg_policy_find("fifo");
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
}

FIXTURE_TEARDOWN(rx)
{
	if (self->inited) {
		EXPECT_EQ(0, umcg_fini());
		KB_EXPECT_BACKEND_KEPT();
	}
}

/* Rounds of exit-and-hand-over: a rare lost report shows as a hang. */
#define RX_ROUNDS	100

TEST_F_TIMEOUT(rx, reported_and_joinable, 120)
{
	struct rx_run *r = &self->run;
	umcg_thread_t *x, *n;
	struct umcg_stats st;

	for (int i = 0; i < RX_ROUNDS; i++) {
		uint64_t end = kb_now_ns() + 20000 * KB_MS;

		atomic_store(&r->exiting, 0);
		atomic_store(&r->next_ran, 0);
		/* One core: n runs only once x is gone. */
		ASSERT_EQ(0, umcg_spawn(&x, NULL, rx_exiter, r));
		ASSERT_EQ(0, umcg_spawn(&n, NULL, rx_next, r));
		while ((umcg_thread_state(x) != UMCG_STATE_DONE ||
			!atomic_load(&r->next_ran)) && kb_now_ns() < end)
			usleep(1000);
		if (umcg_thread_state(x) != UMCG_STATE_DONE || !atomic_load(&r->next_ran)) {
			TH_LOG("round %d: exiter state %d (saw %d before exiting), next ran %d",
			       i, umcg_thread_state(x), atomic_load(&r->seen),
			       atomic_load(&r->next_ran));
			umcg_dump(stderr);
		}
		ASSERT_EQ(1, atomic_load(&r->exiting));
		ASSERT_EQ(UMCG_STATE_DONE, umcg_thread_state(x));
		ASSERT_EQ(1, atomic_load(&r->next_ran));
		EXPECT_EQ(0, umcg_join(x, NULL));
		EXPECT_EQ(0, umcg_join(n, NULL));
	}
	ASSERT_EQ(0, umcg_stats(&st));
	EXPECT_EQ(2 * RX_ROUNDS, st.exited);
	EXPECT_EQ(0, st.live);
}

TEST_HARNESS_MAIN
