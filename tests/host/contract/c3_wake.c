// SPDX-License-Identifier: GPL-2.0
/*
 * c3_wake - contract C3, wake control.
 *
 * On one core, a worker B that lost its core to a blocking call libumcg did
 * not see (read() on a pipe, nanosleep()) comes back from the kernel while
 * worker A owns the core.  The user backend lets B's own code run until its
 * next libumcg call (the C1 exception); at that call B becomes RUNNABLE, is
 * handed to the policy with UMCG_ENQ_WAKEUP, and runs no more user code
 * until the policy picks it, i.e. after A gives the core up.  With a kernel
 * backend (kmod) B becomes RUNNABLE as its call completes, is handed to the
 * policy with UMCG_ENQ_WAKEUP, and runs no user code at all — not even the
 * rest of its read() call — until A gives the core up.  The policy is
 * ct_recording_fifo (contract.h), which records each thread's enqueue flags.
 */
#include "kselftest_harness.h"
#include "contract.h"

#define C3_SLEEP_NS	(100 * CT_MS * CT_SLOW)

enum c3_kind { C3_READ, C3_NANOSLEEP };

/* --- the workers ------------------------------------------------------ */

struct c3_run {
	enum c3_kind kind;
	int pipefd[2];
	_Atomic int seq;		/* orders the events below, from 1 */
	_Atomic int b_entering;
	_Atomic int b_returned;		/* seq: B back from the kernel */
	_Atomic int b_resumed;		/* seq: B past its next libumcg call */
	_Atomic int a_in_slice;
	_Atomic int a_release;
	_Atomic int a_slice_end;	/* seq: A ended the slice B waits on */
	_Atomic int running, max_running;
	_Atomic int err;
};

static void c3_error(struct c3_run *r, int err)
{
	int zero = 0;

	atomic_compare_exchange_strong(&r->err, &zero, err);
}

static void c3_slice(struct c3_run *r, uint64_t ns)
{
	ct_max(&r->max_running, atomic_fetch_add(&r->running, 1) + 1);
	ct_spin_ns(ns);
	atomic_fetch_sub(&r->running, 1);
}

static void *c3_b(void *arg)
{
	struct c3_run *r = arg;
	struct timespec ts = {
		.tv_sec = C3_SLEEP_NS / 1000000000ULL,
		.tv_nsec = C3_SLEEP_NS % 1000000000ULL,
	};
	char c;
	int ret;

	atomic_store(&r->b_entering, 1);
	if (r->kind == C3_READ) {
		if (read(r->pipefd[0], &c, 1) != 1)
			c3_error(r, -EIO);
	} else {
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	/* Running beside A here is the user backend's C1 exception only. */
	atomic_store(&r->b_returned, atomic_fetch_add(&r->seq, 1) + 1);
	ret = umcg_yield();
	if (ret)
		c3_error(r, ret);
	atomic_store(&r->b_resumed, atomic_fetch_add(&r->seq, 1) + 1);
	c3_slice(r, 1 * CT_MS);
	return NULL;
}

static void *c3_a(void *arg)
{
	struct c3_run *r = arg;

	ct_max(&r->max_running, atomic_fetch_add(&r->running, 1) + 1);
	atomic_store(&r->a_in_slice, 1);
	if (!CT_SPIN_WAIT(atomic_load(&r->a_release), 5000))
		c3_error(r, -ETIMEDOUT);
	atomic_store(&r->a_slice_end, atomic_fetch_add(&r->seq, 1) + 1);
	atomic_fetch_sub(&r->running, 1);
	for (int i = 0; i < 3; i++) {
		int ret = umcg_yield();

		if (ret)
			c3_error(r, ret);
		c3_slice(r, 1 * CT_MS);
	}
	return NULL;
}

FIXTURE(c3)
{
	bool inited;
	struct c3_run run;
};

FIXTURE_VARIANT(c3)
{
	enum c3_kind kind;
};

FIXTURE_VARIANT_ADD(c3, read) { .kind = C3_READ };
FIXTURE_VARIANT_ADD(c3, nanosleep) { .kind = C3_NANOSLEEP };

FIXTURE_SETUP(c3)
{
	struct umcg_config cfg = ct_config(1, NULL);

	cfg.policy = &ct_recording_fifo;
	self->run.kind = variant->kind;
	atomic_store(&self->run.seq, 1);
	ASSERT_EQ(0, pipe(self->run.pipefd));
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
}

FIXTURE_TEARDOWN(c3)
{
	if (self->inited)
		EXPECT_EQ(0, umcg_fini());
	close(self->run.pipefd[0]);
	close(self->run.pipefd[1]);
}

TEST_F(c3, woken_worker_waits_for_the_policy)
{
	struct c3_run *r = &self->run;
	umcg_thread_t *a, *b;

	ASSERT_EQ(0, umcg_spawn(&b, NULL, c3_b, r));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(b) == UMCG_STATE_BLOCKED, 2000))
		TH_LOG("B state %d", umcg_thread_state(b));
	ASSERT_EQ(UMCG_ENQ_NEW, ct_enq_flags(b));

	/* A takes the core and keeps it until released. */
	ASSERT_EQ(0, umcg_spawn(&a, NULL, c3_a, r));
	ASSERT_TRUE(CT_WAIT(atomic_load(&r->a_in_slice), 2000));
	if (r->kind == C3_READ) {
		/* Still blocked: nothing woke it yet. */
		usleep(10000);
		EXPECT_EQ(0, atomic_load(&r->b_returned));
		EXPECT_EQ(UMCG_STATE_BLOCKED, umcg_thread_state(b));
		ASSERT_EQ(1, write(r->pipefd[1], "x", 1));
	}
	if (ct_kernel_backend()) {
		/* Woken: RUNNABLE, queued, and held in the kernel. */
		EXPECT_TRUE(CT_WAIT(umcg_thread_state(b) == UMCG_STATE_RUNNABLE &&
				    ct_enq_flags(b) == (UMCG_ENQ_NEW | UMCG_ENQ_WAKEUP),
				    2000 + C3_SLEEP_NS / CT_MS))
			TH_LOG("B state %d, enqueue flags %#lx", umcg_thread_state(b),
			       (unsigned long)ct_enq_flags(b));
		EXPECT_EQ(0, atomic_load(&r->b_returned));
		goto queued;
	}
	ASSERT_TRUE(CT_WAIT(atomic_load(&r->b_returned), 2000));

	/*
	 * B's next libumcg call: RUNNABLE, handed to the policy as a wake-up.
	 * B's state turns RUNNABLE before its enqueue (umcg_reacquire():
	 * the state CAS, then umcg_make_runnable()), so wait for both.
	 */
	EXPECT_TRUE(CT_WAIT(umcg_thread_state(b) == UMCG_STATE_RUNNABLE &&
			    ct_enq_flags(b) == (UMCG_ENQ_NEW | UMCG_ENQ_WAKEUP), 2000))
		TH_LOG("B state %d, enqueue flags %#lx", umcg_thread_state(b),
		       (unsigned long)ct_enq_flags(b));

queued:
	/* ... and it stays queued while A owns the core. */
	usleep(20000);
	EXPECT_EQ(0, atomic_load(&r->b_resumed));
	if (ct_kernel_backend())
		EXPECT_EQ(0, atomic_load(&r->b_returned));
	EXPECT_EQ(UMCG_STATE_RUNNABLE, umcg_thread_state(b));
	EXPECT_EQ(UMCG_STATE_RUNNING, umcg_thread_state(a));

	atomic_store(&r->a_release, 1);
	EXPECT_EQ(0, ct_join(a, NULL, 5000));
	EXPECT_EQ(0, ct_join(b, NULL, 5000));
	EXPECT_NE(0, atomic_load(&r->b_resumed));
	EXPECT_LT(atomic_load(&r->a_slice_end), atomic_load(&r->b_resumed));
	if (ct_kernel_backend())
		EXPECT_LT(atomic_load(&r->a_slice_end), atomic_load(&r->b_returned));
	EXPECT_EQ(1, atomic_load(&r->max_running));
	EXPECT_EQ(0, atomic_load(&r->err));
}

TEST_HARNESS_MAIN
