// SPDX-License-Identifier: GPL-2.0
/*
 * switch_cpu - C4 on a kernel backend (kernel_backend.h): umcg_switch_to()
 * lands the target on the caller's CPU ("kmod": one UMCG_IOC_SWITCH; "scx":
 * a futex wake, a umcg_pick onto the caller's core's CPU, then the
 * caller's futex wait).  Two workers that
 * start on different cores ping-pong 10,000 switches; before each switch
 * the caller records sched_getcpu(), and the target, back in its code,
 * compares its own.  At least 99% must match.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "kselftest_harness.h"

#include <umcg.h>
#include <umcg/policy.h>

#include "kernel_backend.h"

#define SW_SWITCHES	10000	/* both ways together */

struct sw_run {
	umcg_thread_t *p, *q;
	_Atomic int caller_cpu;
	_Atomic int landings, same;
	_Atomic int err, err_line;
};

static void sw_error(struct sw_run *r, int err, int line)
{
	int zero = 0;

	if (atomic_compare_exchange_strong(&r->err, &zero, err))
		atomic_store(&r->err_line, line);
}

/* Back from a switch: did we land where the switcher was? */
static void sw_land(struct sw_run *r)
{
	if (sched_getcpu() == atomic_load(&r->caller_cpu))
		atomic_fetch_add(&r->same, 1);
	atomic_fetch_add(&r->landings, 1);
}

static void sw_switch(struct sw_run *r, umcg_thread_t *to)
{
	int ret;

	atomic_store(&r->caller_cpu, sched_getcpu());
	ret = umcg_switch_to(to);
	if (ret)
		sw_error(r, ret, __LINE__);
}

static void *sw_q(void *arg)
{
	struct sw_run *r = arg;

	umcg_park();		/* until p's first switch */
	for (int i = 0; i < SW_SWITCHES / 2 && !atomic_load(&r->err); i++) {
		sw_land(r);
		sw_switch(r, r->p);
	}
	return NULL;
}

static void *sw_p(void *arg)
{
	struct sw_run *r = arg;
	uint64_t end = kb_now_ns() + 20000 * KB_MS;

	while (umcg_thread_state(r->q) != UMCG_STATE_PARKED && kb_now_ns() < end)
		umcg_yield();
	for (int i = 0; i < SW_SWITCHES / 2 && !atomic_load(&r->err); i++) {
		sw_switch(r, r->q);
		sw_land(r);
	}
	/* q waits in its last switch to us: let it finish. */
	umcg_unpark(r->q);
	return NULL;
}

FIXTURE(sw)
{
	bool inited;
	struct sw_run run;
};

FIXTURE_SETUP(sw)
{
	struct umcg_config cfg = { .size = sizeof(cfg) };
	const char *why = kb_backend_get();
	cpu_set_t set;

	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(set), &set));
	if (CPU_COUNT(&set) < 2)
		SKIP(return, "needs 2 CPUs");
	cfg.nr_cores = 2;
	cfg.backend = KB_BACKEND;
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
	ASSERT_STREQ(KB_BACKEND, umcg_backend_name());
}

FIXTURE_TEARDOWN(sw)
{
	if (self->inited) {
		EXPECT_EQ(0, umcg_fini());
		KB_EXPECT_BACKEND_KEPT();
	}
}

TEST_F_TIMEOUT(sw, target_lands_on_the_callers_cpu, 110)
{
	struct sw_run *r = &self->run;
	struct umcg_attr a = { .size = sizeof(a) };
	uint64_t end;

	a.core = 1;
	ASSERT_EQ(0, umcg_spawn(&r->q, &a, sw_q, r));
	a.core = 0;
	ASSERT_EQ(0, umcg_spawn(&r->p, &a, sw_p, r));
	end = kb_now_ns() + 100000 * KB_MS;
	while ((umcg_thread_state(r->p) != UMCG_STATE_DONE ||
		umcg_thread_state(r->q) != UMCG_STATE_DONE) && kb_now_ns() < end)
		usleep(10000);
	if (umcg_thread_state(r->p) != UMCG_STATE_DONE ||
	    umcg_thread_state(r->q) != UMCG_STATE_DONE)
		umcg_dump(stderr);
	ASSERT_EQ(UMCG_STATE_DONE, umcg_thread_state(r->p))
		TH_LOG("%d landings", atomic_load(&r->landings));
	ASSERT_EQ(UMCG_STATE_DONE, umcg_thread_state(r->q));
	EXPECT_EQ(0, umcg_join(r->p, NULL));
	EXPECT_EQ(0, umcg_join(r->q, NULL));
	EXPECT_EQ(0, atomic_load(&r->err)) TH_LOG("at line %d", atomic_load(&r->err_line));
	TH_LOG("%d of %d switches landed on the caller's CPU", atomic_load(&r->same),
	       atomic_load(&r->landings));
	EXPECT_EQ(SW_SWITCHES, atomic_load(&r->landings));
	EXPECT_LE(SW_SWITCHES * 99 / 100, atomic_load(&r->same));
}

TEST_HARNESS_MAIN
