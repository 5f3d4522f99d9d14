// SPDX-License-Identifier: GPL-2.0
/*
 * switch_cpu - C4 on a kernel backend (kernel_backend.h): umcg_switch_to()
 * lands the target on the caller's CPU ("kmod": one UMCG_IOC_SWITCH; "scx":
 * a futex wake of the target, asleep in libumcg's wait and so not held,
 * then the caller's futex wait).  Before each switch the caller records
 * sched_getcpu(), and the target, back in its code, compares its own.  At
 * least 99% of 10,000 must match, in two cases:
 *
 *   ping_pong   two workers that start on different cores switch to each
 *               other; after the first switch both run on one CPU, so a
 *               target mostly lands where it last ran anyway
 *   crossing    two switchers, one per core, take turns switching to one
 *               target, which switches back to its caller: each switch
 *               moves the target from the other core's CPU, where it
 *               last ran (at least 90% of them must, else the case tests
 *               nothing)
 *
 * On scx, also: the switches ring the scheduler's doorbell (which wakes
 * every sleeping server of every process) fewer than once per hundred: a
 * sleep inside libumcg is no news for any server.
 *
 * What is checked is where the target runs its code, whatever puts it
 * there: on both backends libumcg also sets the target's affinity to the
 * caller's core's CPU before the switch (pin_by_waker), so a switch
 * without scx's pick lands there too (tried on 7.3: 10,000 of 10,000).
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "kselftest_harness.h"

#include <umcg.h>
#include <umcg/policy.h>

#include "kernel_backend.h"
#ifdef KB_BACKEND_SCX
#include <uapi/umcg_scx.h>
#endif

#define SW_SWITCHES	10000	/* both ways together */
#define SW_WAIT_NS	(20000 * KB_MS)	/* emulated guests are slow */

struct sw_run {
	umcg_thread_t *p, *q;
	_Atomic int caller_cpu;
	_Atomic int landings, same;
	_Atomic int err, err_line;
	/* crossing */
	umcg_thread_t *sw[2], *t;
	_Atomic int turn;		/* which switcher's switch to t is next */
	_Atomic int caller;		/* which switched to t last */
	_Atomic int t_cpu;		/* t's CPU before its last switch back */
	_Atomic int crossed;		/* landings not on t_cpu's CPU */
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
	uint64_t end = kb_now_ns() + SW_WAIT_NS;

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

/* crossing: the target, back to whoever switched to it. */
static void *sw_target(void *arg)
{
	struct sw_run *r = arg;

	atomic_store(&r->t_cpu, sched_getcpu());
	umcg_park();		/* until the first switch */
	for (int i = 0; i < SW_SWITCHES && !atomic_load(&r->err); i++) {
		if (sched_getcpu() != atomic_load(&r->t_cpu))
			atomic_fetch_add(&r->crossed, 1);
		sw_land(r);
		atomic_store(&r->t_cpu, sched_getcpu());
		sw_switch(r, r->sw[atomic_load(&r->caller)]);
	}
	return NULL;
}

/* crossing: switcher @id (0, 1), on core @id, in turns with the other. */
static void sw_switcher(struct sw_run *r, int id)
{
	uint64_t end = kb_now_ns() + SW_WAIT_NS;

	while (umcg_thread_state(r->t) != UMCG_STATE_PARKED && kb_now_ns() < end)
		umcg_yield();
	for (int i = 0; i < SW_SWITCHES / 2 && !atomic_load(&r->err); i++) {
		/* Busy, keeping our core, until our turn. */
		end = kb_now_ns() + SW_WAIT_NS;
		while (atomic_load(&r->turn) != id && !atomic_load(&r->err)) {
			if (kb_now_ns() > end) {
				sw_error(r, -ETIMEDOUT, __LINE__);
				break;
			}
		}
		atomic_store(&r->caller, id);
		sw_switch(r, r->t);
		atomic_store(&r->turn, !id);
	}
	/* The last one: t waits in its last switch to us, let it finish. */
	if (id == 1 || atomic_load(&r->err))
		umcg_unpark(r->t);
}

static void *sw_switcher0(void *arg)
{
	sw_switcher(arg, 0);
	return NULL;
}

static void *sw_switcher1(void *arg)
{
	sw_switcher(arg, 1);
	return NULL;
}

/* Until all of @t (@n) are DONE, up to 100 s: 0, or -ETIMEDOUT (dumped). */
static int sw_wait_done(umcg_thread_t **t, int n)
{
	uint64_t end = kb_now_ns() + 100000 * KB_MS;
	int i = 0;

	while (i < n && kb_now_ns() < end) {
		if (umcg_thread_state(t[i]) == UMCG_STATE_DONE)
			i++;
		else
			usleep(10000);
	}
	if (i == n)
		return 0;
	umcg_dump(stderr);
	return -ETIMEDOUT;
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

/*
 * scx: the servers woken so far, by the doorbell or by their bells (-1:
 * none to read, kmod).
 */
static int64_t sw_doorbell(void)
{
#ifdef KB_BACKEND_SCX
	uint64_t v, w;

	if (!umcg_test_scx_enf_stat(UMCG_SCX_ENF_DOORBELL, &v) &&
	    !umcg_test_scx_enf_stat(UMCG_SCX_ENF_BELL_WAKE, &w))
		return (int64_t)(v + w);
#endif
	return -1;
}

/* At most one ring per hundred switches since @before (sw_doorbell()). */
#define SW_EXPECT_FEW_RINGS(before) do {					\
	int64_t _now = sw_doorbell();						\
										\
	if ((before) >= 0 && _now >= 0) {					\
		TH_LOG("doorbell rings: %lld", (long long)(_now - (before)));	\
		EXPECT_GT(SW_SWITCHES / 100, _now - (before));			\
	}									\
} while (0)

TEST_F_TIMEOUT(sw, ping_pong, 110)
{
	struct sw_run *r = &self->run;
	struct umcg_attr a = { .size = sizeof(a) };
	int64_t rings = sw_doorbell();

	a.core = 1;
	ASSERT_EQ(0, umcg_spawn(&r->q, &a, sw_q, r));
	a.core = 0;
	ASSERT_EQ(0, umcg_spawn(&r->p, &a, sw_p, r));
	ASSERT_EQ(0, sw_wait_done((umcg_thread_t *[]){ r->p, r->q }, 2))
		TH_LOG("%d landings", atomic_load(&r->landings));
	EXPECT_EQ(0, umcg_join(r->p, NULL));
	EXPECT_EQ(0, umcg_join(r->q, NULL));
	EXPECT_EQ(0, atomic_load(&r->err)) TH_LOG("at line %d", atomic_load(&r->err_line));
	TH_LOG("%d of %d switches landed on the caller's CPU", atomic_load(&r->same),
	       atomic_load(&r->landings));
	EXPECT_EQ(SW_SWITCHES, atomic_load(&r->landings));
	EXPECT_LE(SW_SWITCHES * 99 / 100, atomic_load(&r->same));
	SW_EXPECT_FEW_RINGS(rings);
}

TEST_F_TIMEOUT(sw, crossing, 110)
{
	struct sw_run *r = &self->run;
	struct umcg_attr a = { .size = sizeof(a) };
	int64_t rings = sw_doorbell();

	a.core = 1;
	ASSERT_EQ(0, umcg_spawn(&r->t, &a, sw_target, r));
	ASSERT_EQ(0, umcg_spawn(&r->sw[1], &a, sw_switcher1, r));
	a.core = 0;
	ASSERT_EQ(0, umcg_spawn(&r->sw[0], &a, sw_switcher0, r));
	ASSERT_EQ(0, sw_wait_done((umcg_thread_t *[]){ r->t, r->sw[0], r->sw[1] }, 3))
		TH_LOG("%d landings", atomic_load(&r->landings));
	EXPECT_EQ(0, umcg_join(r->t, NULL));
	EXPECT_EQ(0, umcg_join(r->sw[0], NULL));
	EXPECT_EQ(0, umcg_join(r->sw[1], NULL));
	EXPECT_EQ(0, atomic_load(&r->err)) TH_LOG("at line %d", atomic_load(&r->err_line));
	TH_LOG("%d of %d switches landed on the caller's CPU, %d moved the target "
	       "from another CPU", atomic_load(&r->same), atomic_load(&r->landings),
	       atomic_load(&r->crossed));
	EXPECT_EQ(SW_SWITCHES, atomic_load(&r->landings));
	EXPECT_LE(SW_SWITCHES * 99 / 100, atomic_load(&r->same));
	EXPECT_LE(SW_SWITCHES * 9 / 10, atomic_load(&r->crossed));
	SW_EXPECT_FEW_RINGS(rings);
}

TEST_HARNESS_MAIN
