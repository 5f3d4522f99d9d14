// SPDX-License-Identifier: GPL-2.0
/*
 * c4_switch - contract C4, directed switch, on the user backend.
 *
 * umcg_switch_to(t) parks the caller and runs t next on the caller's core,
 * without going through the policy: a ping-pong of switches between two
 * workers alternates exactly and stays on one core (and its CPU) while
 * other workers are runnable, which never get that core meanwhile; a target
 * waiting in the policy's queue runs before the workers queued ahead of it;
 * the caller stays PARKED until it is unparked.  Errors: NULL or the
 * caller itself -EINVAL, a DONE target -ESRCH, a RUNNING or BLOCKED target
 * -EBUSY (and it is left alone), a caller that is not a worker -EPERM.
 */
#include "kselftest_harness.h"
#include "contract.h"

#define C4_SWITCHES	200

struct c4_entry {
	char who;
	int i;
	int core;
	int cpu;
};

struct c4_run {
	unsigned int nr_cores;
	int cpu_of_core[CT_MAX_CORES];
	umcg_thread_t *p, *q, *h, *t, *u;
	_Atomic int go;			/* releases the holder */
	_Atomic int switched;		/* P switched to Q at least once */
	_Atomic int active;		/* the ping-pong is on */
	_Atomic int stop;		/* stops the R workers */
	_Atomic int n;
	struct c4_entry log[2 * C4_SWITCHES + 8];
	_Atomic int r_slices, r_slices_active, r_on_pair_core;
	_Atomic int seq;
	_Atomic int p_back, q_unpark;
	_Atomic int err;
	_Atomic int err_line;
};

#define c4_error(r, e) do {						\
	int __zero = 0;							\
	if (atomic_compare_exchange_strong(&(r)->err, &__zero, (e)))	\
		atomic_store(&(r)->err_line, __LINE__);			\
} while (0)

static void c4_log(struct c4_run *r, char who, int i)
{
	int n = atomic_fetch_add(&r->n, 1);

	if (n >= (int)(sizeof(r->log) / sizeof(r->log[0]))) {
		c4_error(r, -ENOSPC);
		return;
	}
	r->log[n].who = who;
	r->log[n].i = i;
	r->log[n].core = umcg_thread_core(umcg_self());
	r->log[n].cpu = sched_getcpu();
}

/* --- ping-pong --------------------------------------------------------- */

static void *c4_holder(void *arg)
{
	struct c4_run *r = arg;

	if (!CT_SPIN_WAIT(atomic_load(&r->go), 5000))
		c4_error(r, -ETIMEDOUT);
	return NULL;
}

static void *c4_ping(void *arg)
{
	struct c4_run *r = arg;

	atomic_store(&r->active, 1);
	for (int i = 0; i < C4_SWITCHES; i++) {
		int ret;

		c4_log(r, 'P', i);
		atomic_store(&r->switched, 1);
		ret = umcg_switch_to(r->q);
		if (ret)
			c4_error(r, ret);
	}
	return NULL;
}

static void *c4_pong(void *arg)
{
	struct c4_run *r = arg;
	int ret;

	while (!atomic_load(&r->switched))
		umcg_park();
	for (int i = 0; i < C4_SWITCHES; i++) {
		c4_log(r, 'Q', i);
		if (umcg_thread_state(r->p) != UMCG_STATE_PARKED)
			c4_error(r, -EPROTO);
		if (umcg_thread_core(r->p) != umcg_thread_core(umcg_self()))
			c4_error(r, -EXDEV);
		if (i == C4_SWITCHES - 1)
			break;
		ret = umcg_switch_to(r->p);
		if (ret)
			c4_error(r, ret);
	}
	atomic_store(&r->active, 0);
	ret = umcg_unpark(r->p);
	if (ret)
		c4_error(r, ret);
	return NULL;
}

/* Runnable bystanders: short slices and yields until stopped. */
static void *c4_bystander(void *arg)
{
	struct c4_run *r = arg;

	while (!atomic_load(&r->stop)) {
		int active = atomic_load(&r->active);

		atomic_fetch_add(&r->r_slices, 1);
		if (active) {
			atomic_fetch_add(&r->r_slices_active, 1);
			/* The pair's core is 0 (pinned); not r->p's: it may be joined. */
			if (umcg_thread_core(umcg_self()) == 0)
				atomic_fetch_add(&r->r_on_pair_core, 1);
		}
		ct_spin_ns(50 * CT_US);
		umcg_yield();
	}
	return NULL;
}

FIXTURE(c4)
{
	bool inited;
	struct c4_run run;
};

FIXTURE_VARIANT(c4)
{
	unsigned int nr_cores;
};

FIXTURE_VARIANT_ADD(c4, one_core) { .nr_cores = 1 };
FIXTURE_VARIANT_ADD(c4, two_cores) { .nr_cores = 2 };

FIXTURE_SETUP(c4)
{
	/* Pinned: no core steals P or Q from core 0 before they meet. */
	struct umcg_config cfg = ct_config(variant->nr_cores, "pinned");

	if (ct_nr_cpus() < (int)variant->nr_cores)
		SKIP(return, "needs %u CPUs", variant->nr_cores);
	self->run.nr_cores = variant->nr_cores;
	ASSERT_EQ(0, ct_core_cpus(self->run.cpu_of_core, variant->nr_cores));
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
}

FIXTURE_TEARDOWN(c4)
{
	if (self->inited)
		EXPECT_EQ(0, umcg_fini());
}

/*
 * P and Q switch back and forth C4_SWITCHES times on core 0 while two
 * bystanders are runnable: queued behind P on one core, or sharing the
 * other core.  The log is exactly P0 Q0 P1 Q1 ...; the pair never leaves
 * its core; no bystander gets that core during the ping-pong.
 */
TEST_F(c4, ping_pong_exact)
{
	struct c4_run *r = &self->run;
	struct umcg_attr a0 = ct_attr(0), alast = ct_attr(r->nr_cores - 1);
	umcg_thread_t *by[2];
	int n;

	ASSERT_EQ(0, umcg_spawn(&r->q, &a0, c4_pong, r));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(r->q) == UMCG_STATE_PARKED, 2000));
	ASSERT_EQ(0, umcg_spawn(&r->h, &a0, c4_holder, r));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(r->h) == UMCG_STATE_RUNNING, 2000));
	/* On one core, P is queued ahead of the bystanders. */
	ASSERT_EQ(0, umcg_spawn(&r->p, &a0, c4_ping, r));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(r->p) == UMCG_STATE_RUNNABLE, 2000));
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, umcg_spawn(&by[i], &alast, c4_bystander, r));
		ASSERT_TRUE(CT_WAIT(umcg_thread_state(by[i]) == UMCG_STATE_RUNNABLE ||
				    umcg_thread_state(by[i]) == UMCG_STATE_RUNNING, 2000));
	}
	if (r->nr_cores == 1) {
		/* Everybody but the holder waits for core 0. */
		EXPECT_EQ(0, atomic_load(&r->r_slices));
	}
	atomic_store(&r->go, 1);

	EXPECT_EQ(0, ct_join(r->p, NULL, 10000));
	EXPECT_EQ(0, ct_join(r->q, NULL, 2000));
	EXPECT_EQ(0, ct_join(r->h, NULL, 2000));
	/* The bystanders run too (on a loaded machine maybe only by now). */
	EXPECT_TRUE(CT_WAIT(atomic_load(&r->r_slices) > 0, 5000));
	atomic_store(&r->stop, 1);
	for (int i = 0; i < 2; i++) {
		EXPECT_EQ(0, ct_join(by[i], NULL, 2000));
	}
	EXPECT_EQ(0, atomic_load(&r->err))
		TH_LOG("error at line %d", atomic_load(&r->err_line));

	n = atomic_load(&r->n);
	ASSERT_EQ(2 * C4_SWITCHES, n);
	for (int k = 0; k < n; k++) {
		struct c4_entry *e = &r->log[k];

		ASSERT_EQ(k % 2 ? 'Q' : 'P', e->who) TH_LOG("entry %d", k);
		ASSERT_EQ(k / 2, e->i) TH_LOG("entry %d", k);
		ASSERT_EQ(0, e->core) TH_LOG("entry %d (%c%d)", k, e->who, e->i);
		ASSERT_EQ(r->cpu_of_core[0], e->cpu) TH_LOG("entry %d (%c%d)", k, e->who, e->i);
	}
	if (r->nr_cores == 1)
		EXPECT_EQ(0, atomic_load(&r->r_slices_active));
	EXPECT_EQ(0, atomic_load(&r->r_on_pair_core));
	EXPECT_LT(0, atomic_load(&r->r_slices));
}

/* --- one core: the target skips the queue; the caller stays parked ---- */

static void *c4_switcher(void *arg)
{
	struct c4_run *r = arg;
	int ret;

	if (!CT_SPIN_WAIT(atomic_load(&r->go), 5000))
		c4_error(r, -ETIMEDOUT);
	ret = umcg_switch_to(r->t);
	if (ret)
		c4_error(r, ret);
	atomic_store(&r->p_back, atomic_fetch_add(&r->seq, 1) + 1);
	c4_log(r, 'H', 0);
	return NULL;
}

static void *c4_target(void *arg)
{
	struct c4_run *r = arg;
	int ret;

	c4_log(r, 'T', 0);
	if (umcg_thread_state(r->h) != UMCG_STATE_PARKED)
		c4_error(r, -EPROTO);
	/* Give the core away for a while: the caller must stay parked. */
	ret = umcg_sleep_ns(20 * CT_MS);
	if (ret)
		c4_error(r, ret);
	if (umcg_thread_state(r->h) != UMCG_STATE_PARKED || atomic_load(&r->p_back))
		c4_error(r, -EPROTO);
	atomic_store(&r->q_unpark, atomic_fetch_add(&r->seq, 1) + 1);
	ret = umcg_unpark(r->h);
	if (ret)
		c4_error(r, ret);
	return NULL;
}

static void *c4_queued(void *arg)
{
	c4_log(arg, 'U', 0);
	return NULL;
}

FIXTURE(c4_one)
{
	bool inited;
	struct c4_run run;
};

FIXTURE_SETUP(c4_one)
{
	struct umcg_config cfg = ct_config(1, "fifo");

	atomic_store(&self->run.seq, 1);
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
}

FIXTURE_TEARDOWN(c4_one)
{
	if (self->inited)
		EXPECT_EQ(0, umcg_fini());
}

/*
 * Queue: U, T.  H switches to T: T runs at once, ahead of U; H is PARKED
 * until T unparks it, even while T sleeps and the core runs U.
 */
TEST_F(c4_one, runnable_target_skips_the_queue)
{
	struct c4_run *r = &self->run;

	ASSERT_EQ(0, umcg_spawn(&r->h, NULL, c4_switcher, r));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(r->h) == UMCG_STATE_RUNNING, 2000));
	ASSERT_EQ(0, umcg_spawn(&r->u, NULL, c4_queued, r));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(r->u) == UMCG_STATE_RUNNABLE, 2000));
	ASSERT_EQ(0, umcg_spawn(&r->t, NULL, c4_target, r));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(r->t) == UMCG_STATE_RUNNABLE, 2000));
	atomic_store(&r->go, 1);

	EXPECT_EQ(0, ct_join(r->h, NULL, 5000));
	EXPECT_EQ(0, ct_join(r->t, NULL, 2000));
	EXPECT_EQ(0, ct_join(r->u, NULL, 2000));
	EXPECT_EQ(0, atomic_load(&r->err))
		TH_LOG("error at line %d", atomic_load(&r->err_line));
	ASSERT_EQ(3, atomic_load(&r->n));
	EXPECT_EQ('T', r->log[0].who);
	EXPECT_EQ('U', r->log[1].who);
	EXPECT_EQ('H', r->log[2].who);
	EXPECT_NE(0, atomic_load(&r->q_unpark));
	EXPECT_LT(atomic_load(&r->q_unpark), atomic_load(&r->p_back));
}

/* --- errors ----------------------------------------------------------- */

struct c4_err {
	int pipefd[2];
	_Atomic int stop;
	umcg_thread_t *done, *blocked, *spinner;
	int ret_null, ret_self, ret_done, ret_running, ret_blocked;
	int state_after;
	int spinner_state, blocked_state;
};

static void *c4_return(void *arg)
{
	return arg;
}

static void *c4_reader(void *arg)
{
	struct c4_err *e = arg;
	char c;

	if (read(e->pipefd[0], &c, 1) != 1)
		return (void *)-1L;
	umcg_yield();
	return NULL;
}

static void *c4_spin(void *arg)
{
	struct c4_err *e = arg;

	CT_SPIN_WAIT(atomic_load(&e->stop), 5000);
	return NULL;
}

static void *c4_bad_switches(void *arg)
{
	struct c4_err *e = arg;

	e->ret_null = umcg_switch_to(NULL);
	e->ret_self = umcg_switch_to(umcg_self());
	e->ret_done = umcg_switch_to(e->done);
	e->ret_running = umcg_switch_to(e->spinner);
	e->spinner_state = umcg_thread_state(e->spinner);
	e->ret_blocked = umcg_switch_to(e->blocked);
	e->blocked_state = umcg_thread_state(e->blocked);
	e->state_after = umcg_thread_state(umcg_self());
	return NULL;
}

FIXTURE(c4_errors)
{
	bool inited;
	struct c4_err e;
};

FIXTURE_SETUP(c4_errors)
{
	struct umcg_config cfg = ct_config(2, "steal");

	if (ct_nr_cpus() < 2)
		SKIP(return, "needs 2 CPUs");
	ASSERT_EQ(0, pipe(self->e.pipefd));
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
}

FIXTURE_TEARDOWN(c4_errors)
{
	atomic_store(&self->e.stop, 1);
	if (self->inited)
		EXPECT_EQ(0, umcg_fini());
	close(self->e.pipefd[0]);
	close(self->e.pipefd[1]);
}

TEST_F(c4_errors, bad_targets_and_callers)
{
	struct c4_err *e = &self->e;
	struct umcg_attr a0 = ct_attr(0), a1 = ct_attr(1);
	umcg_thread_t *w;

	ASSERT_EQ(0, umcg_spawn(&e->done, &a0, c4_return, NULL));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(e->done) == UMCG_STATE_DONE, 2000));
	ASSERT_EQ(0, umcg_spawn(&e->blocked, &a0, c4_reader, e));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(e->blocked) == UMCG_STATE_BLOCKED, 2000));
	ASSERT_EQ(0, umcg_spawn(&e->spinner, &a1, c4_spin, e));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(e->spinner) == UMCG_STATE_RUNNING, 2000));

	/* Not a worker. */
	EXPECT_EQ(-EPERM, umcg_switch_to(e->spinner));
	EXPECT_EQ(-EINVAL, umcg_switch_to(NULL));

	ASSERT_EQ(0, umcg_spawn(&w, &a0, c4_bad_switches, e));
	ASSERT_EQ(0, ct_join(w, NULL, 5000));
	EXPECT_EQ(-EINVAL, e->ret_null);
	EXPECT_EQ(-EINVAL, e->ret_self);
	EXPECT_EQ(-ESRCH, e->ret_done);
	EXPECT_EQ(-EBUSY, e->ret_running);
	EXPECT_EQ(-EBUSY, e->ret_blocked);
	EXPECT_EQ(UMCG_STATE_RUNNING, e->spinner_state);
	EXPECT_EQ(UMCG_STATE_BLOCKED, e->blocked_state);
	EXPECT_EQ(UMCG_STATE_RUNNING, e->state_after);

	atomic_store(&e->stop, 1);
	ASSERT_EQ(1, write(e->pipefd[1], "x", 1));
	EXPECT_EQ(0, ct_join(e->spinner, NULL, 2000));
	EXPECT_EQ(0, ct_join(e->blocked, NULL, 2000));
	EXPECT_EQ(0, ct_join(e->done, NULL, 2000));
}

TEST_HARNESS_MAIN
