// SPDX-License-Identifier: GPL-2.0
/*
 * policies - the policy SPI (umcg/policy.h) and the built-in policies, on
 * the user backend.
 *
 * umcg_policy_find() knows "steal", "fifo" and "pinned" and nothing else.
 * fifo runs workers in global FIFO order: 20 workers woken in order run in
 * that order, round after round of yields.  pinned runs every worker on its
 * umcg_attr.core (and that core's CPU) every time, also after sleeps, and a
 * worker without a core is fixed to its first one and still runs.  steal
 * spreads work spawned on one core to the other (stats count the steals)
 * and queues a woken worker on its waker's core.  A user-defined LIFO
 * policy is used (order reversed) and is called as the SPI promises; a
 * table without name, enqueue, pick or remove is refused with -EINVAL, and
 * a failing init fails umcg_init() with its error.
 */
#include <pthread.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "contract.h"

#define P_WORKERS	20
#define P_ROUNDS	3

struct p_run {
	unsigned int nr_cores;
	int cpu_of_core[CT_MAX_CORES];
	umcg_thread_t *t[P_WORKERS];
	_Atomic int released;
	_Atomic int n;
	int log[P_WORKERS * P_ROUNDS + 8];
	_Atomic int stop;
	_Atomic uint32_t cores_used;
	_Atomic int wrong_core, wrong_cpu;
	_Atomic int err;
	_Atomic int err_line;
	void *policy_priv;	/* the releaser's policy word */
};

struct p_arg {
	struct p_run *r;
	int i;
	int core;	/* umcg_attr.core it was given, or -1 */
	int rounds;
};

#define p_error(r, e) do {						\
	int __zero = 0;							\
	if (atomic_compare_exchange_strong(&(r)->err, &__zero, (e)))	\
		atomic_store(&(r)->err_line, __LINE__);			\
} while (0)

static void p_log(struct p_run *r, int v)
{
	int n = atomic_fetch_add(&r->n, 1);

	if (n < (int)(sizeof(r->log) / sizeof(r->log[0])))
		r->log[n] = v;
}

/* Parks until released, then logs its index and yields, @rounds times. */
static void *p_ordered(void *arg)
{
	struct p_arg *a = arg;

	while (!atomic_load(&a->r->released))
		umcg_park();
	for (int k = 0; k < a->rounds; k++) {
		p_log(a->r, a->i);
		if (k + 1 < a->rounds)
			umcg_yield();
	}
	return NULL;
}

/* The worker holding the only core: wakes the workers in index order. */
static void *p_releaser(void *arg)
{
	struct p_run *r = arg;

	r->policy_priv = *umcg_thread_policy_data(umcg_self());
	atomic_store(&r->released, 1);
	for (int i = 0; i < P_WORKERS; i++) {
		int ret = umcg_unpark(r->t[i]);

		if (ret)
			p_error(r, ret);
	}
	return NULL;
}

/*
 * Spawn P_WORKERS p_ordered workers one at a time (each parked before the
 * next), then a releaser that wakes them 0, 1, 2, ... while it holds the
 * only core; return the log once all are done.
 */
static void p_run_ordered(struct __test_metadata *_metadata, struct p_run *r,
			  struct p_arg *args, int rounds)
{
	umcg_thread_t *rel;

	for (int i = 0; i < P_WORKERS; i++) {
		args[i].r = r;
		args[i].i = i;
		args[i].rounds = rounds;
		ASSERT_EQ(0, umcg_spawn(&r->t[i], NULL, p_ordered, &args[i]));
		ASSERT_TRUE(CT_WAIT(umcg_thread_state(r->t[i]) == UMCG_STATE_PARKED, 2000));
	}
	ASSERT_EQ(0, umcg_spawn(&rel, NULL, p_releaser, r));
	ASSERT_EQ(0, ct_join(rel, NULL, 2000));
	for (int i = 0; i < P_WORKERS; i++) {
		ASSERT_EQ(0, ct_join(r->t[i], NULL, 2000));
	}
	ASSERT_EQ(0, atomic_load(&r->err));
	ASSERT_EQ(P_WORKERS * rounds, atomic_load(&r->n));
}

static void p_format_log(struct p_run *r, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (int k = 0; k < atomic_load(&r->n) && off + 4 < len; k++)
		off += snprintf(buf + off, len - off, "%d ", r->log[k]);
}

/* --- umcg_policy_find --------------------------------------------------- */

TEST(find_builtin_policies)
{
	static const char *const names[] = { "steal", "fifo", "pinned" };

	for (int i = 0; i < 3; i++) {
		const struct umcg_policy_ops *p = umcg_policy_find(names[i]);

		ASSERT_NE(NULL, p) TH_LOG("%s", names[i]);
		EXPECT_STREQ(names[i], p->name);
		EXPECT_NE(NULL, p->enqueue);
		EXPECT_NE(NULL, p->pick);
		EXPECT_NE(NULL, p->remove);
	}
	EXPECT_EQ(NULL, umcg_policy_find("lifo"));
	EXPECT_EQ(NULL, umcg_policy_find(""));
	EXPECT_EQ(NULL, umcg_policy_find(NULL));
	EXPECT_EQ(NULL, umcg_policy_find("fifo "));
}

/* --- fifo ------------------------------------------------------------------ */

FIXTURE(fifo)
{
	bool inited;
	struct p_run run;
	struct p_arg args[P_WORKERS];
};

FIXTURE_SETUP(fifo)
{
	struct umcg_config cfg = ct_config(1, "fifo");

	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
}

FIXTURE_TEARDOWN(fifo)
{
	if (self->inited)
		EXPECT_EQ(0, umcg_fini());
}

/* Woken 0..19 on one core: they run 0..19, then again 0..19 after yields. */
TEST_F(fifo, global_order)
{
	struct p_run *r = &self->run;
	char buf[512];

	p_run_ordered(_metadata, r, self->args, P_ROUNDS);
	p_format_log(r, buf, sizeof(buf));
	for (int k = 0; k < P_WORKERS * P_ROUNDS; k++) {
		ASSERT_EQ(k % P_WORKERS, r->log[k]) TH_LOG("at %d: %s", k, buf);
	}
}

/* --- pinned -------------------------------------------------------------- */

FIXTURE(pinned)
{
	bool inited;
	struct p_run run;
	struct p_arg args[P_WORKERS];
};

FIXTURE_SETUP(pinned)
{
	struct umcg_config cfg = ct_config(2, "pinned");

	if (ct_nr_cpus() < 2)
		SKIP(return, "needs 2 CPUs");
	self->run.nr_cores = 2;
	ASSERT_EQ(0, ct_core_cpus(self->run.cpu_of_core, 2));
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
}

FIXTURE_TEARDOWN(pinned)
{
	if (self->inited)
		EXPECT_EQ(0, umcg_fini());
}

/* Checks each round that it runs on its core and CPU; yields and sleeps. */
static void *p_pinned_worker(void *arg)
{
	struct p_arg *a = arg;
	struct p_run *r = a->r;

	for (int k = 0; k < a->rounds; k++) {
		int core = umcg_thread_core(umcg_self());

		if (core != a->core)
			atomic_fetch_add(&r->wrong_core, 1);
		if (core >= 0 && core < (int)r->nr_cores) {
			atomic_fetch_or(&r->cores_used, 1U << core);
			if (sched_getcpu() != r->cpu_of_core[core])
				atomic_fetch_add(&r->wrong_cpu, 1);
		}
		ct_spin_ns(200 * CT_US);
		if (k % 2)
			umcg_yield();
		else
			umcg_sleep_ns(100 * CT_US);
	}
	return NULL;
}

TEST_F(pinned, every_run_on_its_core)
{
	struct p_run *r = &self->run;
	umcg_thread_t *t[6];

	for (int i = 0; i < 6; i++) {
		struct umcg_attr a = ct_attr(i % 2);

		self->args[i].r = r;
		self->args[i].core = i % 2;
		self->args[i].rounds = 20;
		ASSERT_EQ(0, umcg_spawn(&t[i], &a, p_pinned_worker, &self->args[i]));
	}
	for (int i = 0; i < 6; i++) {
		EXPECT_EQ(0, ct_join(t[i], NULL, 5000));
	}
	EXPECT_EQ(0, atomic_load(&r->wrong_core));
	EXPECT_EQ(0, atomic_load(&r->wrong_cpu));
	EXPECT_EQ(3U, atomic_load(&r->cores_used));
}

static void *p_first_core_kept(void *arg)
{
	struct p_arg *a = arg;
	int c0 = umcg_thread_core(umcg_self());

	a->core = c0;
	umcg_park();
	if (umcg_thread_core(umcg_self()) != c0)
		atomic_fetch_add(&a->r->wrong_core, 1);
	return NULL;
}

/*
 * Workers spawned by the main thread without a core: each still runs, is
 * fixed to the core it first ran on, and comes back there after a park.
 * Several, one after the other, so that they land on both cores.
 */
TEST_F(pinned, worker_without_a_core_runs)
{
	struct p_run *r = &self->run;
	umcg_thread_t *t;

	for (int i = 0; i < 6; i++) {
		self->args[i].r = r;
		self->args[i].core = -1;
		ASSERT_EQ(0, umcg_spawn(&t, NULL, p_first_core_kept, &self->args[i]));
		ASSERT_TRUE(CT_WAIT(umcg_thread_state(t) == UMCG_STATE_PARKED, 2000))
			TH_LOG("worker %d (tid %d) state %d core %d", i, umcg_thread_tid(t),
			       umcg_thread_state(t), umcg_thread_core(t));
		ASSERT_EQ(0, umcg_unpark(t));
		ASSERT_EQ(0, ct_join(t, NULL, 2000));
	}
	EXPECT_EQ(0, atomic_load(&r->wrong_core));
}

/* --- steal --------------------------------------------------------------- */

FIXTURE(steal)
{
	bool inited;
	struct p_run run;
	struct p_arg args[P_WORKERS];
	umcg_thread_t *t, *s, *w;
	_Atomic int t_core_before, t_core_woken;
};

FIXTURE_SETUP(steal)
{
	struct umcg_config cfg = ct_config(2, "steal");

	if (ct_nr_cpus() < 2)
		SKIP(return, "needs 2 CPUs");
	self->run.nr_cores = 2;
	ASSERT_EQ(0, ct_core_cpus(self->run.cpu_of_core, 2));
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
}

FIXTURE_TEARDOWN(steal)
{
	atomic_store(&self->run.stop, 1);
	if (self->inited)
		EXPECT_EQ(0, umcg_fini());
}

/*
 * 5 slices; then, while core 1 has run nothing yet (its server may be slow
 * to get a CPU on a loaded machine, under TSan), more, for at most 2 s:
 * that core 1 steals must not depend on timing.
 */
static void *p_busy(void *arg)
{
	struct p_arg *a = arg;
	uint64_t deadline = ct_now_ns() + 2000 * CT_MS;

	for (int k = 0; k < 5 || (atomic_load(&a->r->cores_used) != 3U &&
				  ct_now_ns() < deadline); k++) {
		atomic_fetch_or(&a->r->cores_used, 1U << umcg_thread_core(umcg_self()));
		ct_spin_ns(2 * CT_MS);
		umcg_yield();
	}
	return NULL;
}

/* Eight CPU-bound workers, all queued on core 0: core 1 takes some. */
TEST_F(steal, idle_core_steals)
{
	struct p_run *r = &self->run;
	umcg_thread_t *t[8];
	struct umcg_stats st;

	for (int i = 0; i < 8; i++) {
		struct umcg_attr a = ct_attr(0);

		self->args[i].r = r;
		ASSERT_EQ(0, umcg_spawn(&t[i], &a, p_busy, &self->args[i]));
	}
	for (int i = 0; i < 8; i++) {
		EXPECT_EQ(0, ct_join(t[i], NULL, 5000));
	}
	ASSERT_EQ(0, umcg_stats(&st));
	EXPECT_LT(0, st.steals);
	EXPECT_EQ(3U, atomic_load(&r->cores_used));
}

struct p_steal_wake {
	struct p_run *r;
	umcg_thread_t *t;
	_Atomic int t_core_before, t_core_woken;
	_Atomic int w_unparked;
};

static void *p_sleeper(void *arg)
{
	struct p_steal_wake *sw = arg;

	atomic_store(&sw->t_core_before, umcg_thread_core(umcg_self()));
	while (!atomic_load(&sw->w_unparked))
		umcg_park();
	atomic_store(&sw->t_core_woken, umcg_thread_core(umcg_self()));
	atomic_store(&sw->r->stop, 1);
	return NULL;
}

static void *p_spin_until_stop(void *arg)
{
	struct p_steal_wake *sw = arg;

	CT_SPIN_WAIT(atomic_load(&sw->r->stop), 5000);
	return NULL;
}

static void *p_waker(void *arg)
{
	struct p_steal_wake *sw = arg;

	atomic_store(&sw->w_unparked, 1);
	if (umcg_unpark(sw->t))
		p_error(sw->r, -EPROTO);
	/* Our own core's queue holds the woken thread: the yield runs it. */
	umcg_yield();
	return NULL;
}

/*
 * T first runs on some core and parks; a spinner then keeps one core, c,
 * busy.  W on the other core unparks T: T goes to W's core's queue and
 * runs there.
 */
TEST_F(steal, woken_on_the_wakers_core)
{
	struct p_run *r = &self->run;
	struct p_steal_wake sw = { .r = r };
	umcg_thread_t *s, *w;
	struct umcg_attr ac, aw;
	int c;

	ASSERT_EQ(0, umcg_spawn(&sw.t, NULL, p_sleeper, &sw));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(sw.t) == UMCG_STATE_PARKED, 2000));
	c = atomic_load(&sw.t_core_before);
	ASSERT_TRUE(c == 0 || c == 1) TH_LOG("core %d", c);
	ac = ct_attr(c);
	aw = ct_attr(1 - c);
	ASSERT_EQ(0, umcg_spawn(&s, &ac, p_spin_until_stop, &sw));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(s) == UMCG_STATE_RUNNING, 2000));
	/*
	 * The idle other core may have stolen s before c took it: then that
	 * core is the busy one and W goes to c.
	 */
	if (umcg_thread_core(s) != c) {
		c = umcg_thread_core(s);
		ASSERT_TRUE(c == 0 || c == 1) TH_LOG("core %d", c);
		aw = ct_attr(1 - c);
	}
	ASSERT_EQ(0, umcg_spawn(&w, &aw, p_waker, &sw));
	EXPECT_EQ(0, ct_join(w, NULL, 2000));
	EXPECT_EQ(0, ct_join(sw.t, NULL, 2000));
	EXPECT_EQ(0, ct_join(s, NULL, 2000));
	EXPECT_EQ(0, atomic_load(&r->err));
	EXPECT_EQ(1 - c, atomic_load(&sw.t_core_woken));
}

/* --- a user-defined policy: LIFO ------------------------------------------ */

#define LIFO_CAP	256

struct lifo {
	pthread_mutex_t lock;
	umcg_thread_t *stack[LIFO_CAP];
	int top;
	/* What the SPI promises, counted where it is broken. */
	_Atomic int enqueues, picks, removes;
	_Atomic int not_runnable;	/* enqueued while not RUNNABLE */
	_Atomic int twice;		/* enqueued while already held */
	_Atomic int overflow;
	_Atomic int bad_flags;
	unsigned int nr_cores;
};

static int lifo_init(void **priv, unsigned int nr_cores)
{
	struct lifo *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	pthread_mutex_init(&l->lock, NULL);
	l->nr_cores = nr_cores;
	*priv = l;
	return 0;
}

static void lifo_fini(void *priv)
{
	/* Kept for the test to read: freed by it (struct lifo in its policy word). */
}

static int lifo_enqueue(void *priv, umcg_thread_t *t, int core, unsigned int flags)
{
	struct lifo *l = priv;

	*umcg_thread_policy_data(t) = l;
	atomic_fetch_add(&l->enqueues, 1);
	if (umcg_thread_state(t) != UMCG_STATE_RUNNABLE)
		atomic_fetch_add(&l->not_runnable, 1);
	if (!flags || (flags & ~(UMCG_ENQ_NEW | UMCG_ENQ_WAKEUP | UMCG_ENQ_YIELD |
				 UMCG_ENQ_PREEMPT)))
		atomic_fetch_add(&l->bad_flags, 1);
	pthread_mutex_lock(&l->lock);
	for (int i = 0; i < l->top; i++)
		if (l->stack[i] == t)
			atomic_fetch_add(&l->twice, 1);
	if (l->top < LIFO_CAP)
		l->stack[l->top++] = t;
	else
		atomic_fetch_add(&l->overflow, 1);
	pthread_mutex_unlock(&l->lock);
	return -1;
}

static umcg_thread_t *lifo_pick(void *priv, int core)
{
	struct lifo *l = priv;
	umcg_thread_t *t = NULL;

	pthread_mutex_lock(&l->lock);
	if (l->top)
		t = l->stack[--l->top];
	pthread_mutex_unlock(&l->lock);
	if (t)
		atomic_fetch_add(&l->picks, 1);
	return t;
}

static int lifo_remove(void *priv, umcg_thread_t *t)
{
	struct lifo *l = priv;
	int found = 0;

	pthread_mutex_lock(&l->lock);
	for (int i = 0; i < l->top; i++) {
		if (l->stack[i] == t) {
			memmove(&l->stack[i], &l->stack[i + 1],
				(l->top - i - 1) * sizeof(l->stack[0]));
			l->top--;
			found = 1;
			break;
		}
	}
	pthread_mutex_unlock(&l->lock);
	if (found)
		atomic_fetch_add(&l->removes, 1);
	return found;
}

static const struct umcg_policy_ops lifo_policy = {
	.name		= "test-lifo",
	.init		= lifo_init,
	.fini		= lifo_fini,
	.enqueue	= lifo_enqueue,
	.pick		= lifo_pick,
	.remove		= lifo_remove,
};

FIXTURE(lifo)
{
	bool inited;
	struct p_run run;
	struct p_arg args[P_WORKERS];
	struct lifo *l;
};

FIXTURE_SETUP(lifo)
{
	struct umcg_config cfg = ct_config(1, NULL);

	cfg.policy = &lifo_policy;
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
}

FIXTURE_TEARDOWN(lifo)
{
	if (self->inited)
		EXPECT_EQ(0, umcg_fini());
	free(self->l);
}

/*
 * Woken 0..19 while the releaser holds the core: they run 19..0.  The
 * policy saw only RUNNABLE threads, each at most once at a time, with
 * valid flags, and gave every one back.
 */
TEST_F(lifo, user_policy_is_used)
{
	struct p_run *r = &self->run;
	struct lifo *l;
	char buf[512];

	p_run_ordered(_metadata, r, self->args, 1);
	p_format_log(r, buf, sizeof(buf));
	for (int k = 0; k < P_WORKERS; k++) {
		ASSERT_EQ(P_WORKERS - 1 - k, r->log[k]) TH_LOG("at %d: %s", k, buf);
	}

	l = self->l = r->policy_priv;
	ASSERT_NE(NULL, l);
	EXPECT_EQ(1U, l->nr_cores);
	/* 21 spawned (NEW) + 20 unparked (WAKEUP), at least. */
	EXPECT_LE(2 * P_WORKERS + 1, atomic_load(&l->enqueues));
	EXPECT_EQ(atomic_load(&l->enqueues), atomic_load(&l->picks) + atomic_load(&l->removes));
	EXPECT_EQ(0, l->top);
	EXPECT_EQ(0, atomic_load(&l->not_runnable));
	EXPECT_EQ(0, atomic_load(&l->twice));
	EXPECT_EQ(0, atomic_load(&l->overflow));
	EXPECT_EQ(0, atomic_load(&l->bad_flags));
}

/* --- refused tables --------------------------------------------------------- */

static int p_failing_init(void **priv, unsigned int nr_cores)
{
	return -EMFILE;
}

FIXTURE(spi)
{
	bool inited;
};

FIXTURE_SETUP(spi)
{
}

FIXTURE_TEARDOWN(spi)
{
	if (self->inited)
		EXPECT_EQ(0, umcg_fini());
}

/*
 * A policy that once hands out a thread that is not RUNNABLE (a parked
 * one): libumcg ignores that pick, counts it and asks again; it neither
 * runs the thread nor aborts.
 */
static umcg_thread_t *_Atomic p_bad_next;
static _Atomic int p_bad_given;

static umcg_thread_t *p_bad_pick(void *priv, int core)
{
	umcg_thread_t *t = atomic_exchange(&p_bad_next, NULL);

	if (t) {
		atomic_fetch_add(&p_bad_given, 1);
		return t;
	}
	return lifo_pick(priv, core);
}

static void p_bad_fini(void *priv)
{
	lifo_fini(priv);
	free(priv);
}

static const struct umcg_policy_ops p_bad_policy = {
	.name		= "test-bad-pick",
	.init		= lifo_init,
	.fini		= p_bad_fini,
	.enqueue	= lifo_enqueue,
	.pick		= p_bad_pick,
	.remove		= lifo_remove,
};

static void *p_park_until(void *arg)
{
	_Atomic int *flag = arg;

	while (!atomic_load(flag))
		umcg_park();
	return NULL;
}

static void *p_mark(void *arg)
{
	atomic_fetch_add((_Atomic int *)arg, 1);
	return NULL;
}

TEST_F(spi, wrong_pick_is_ignored)
{
	struct umcg_config cfg = ct_config(1, NULL);
	_Atomic int flag = 0, ran = 0;
	umcg_thread_t *a, *b;

	cfg.policy = &p_bad_policy;
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
	ASSERT_EQ(0, umcg_spawn(&a, NULL, p_park_until, &flag));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(a) == UMCG_STATE_PARKED, 2000));
	atomic_store(&p_bad_next, a);
	ASSERT_EQ(0, umcg_spawn(&b, NULL, p_mark, &ran));
	ASSERT_TRUE(CT_WAIT(atomic_load(&ran) == 1, 2000));
	EXPECT_EQ(1, atomic_load(&p_bad_given));
	EXPECT_EQ(UMCG_STATE_PARKED, umcg_thread_state(a));
	atomic_store(&flag, 1);
	ASSERT_EQ(0, umcg_unpark(a));
	EXPECT_EQ(0, umcg_join(a, NULL));
	EXPECT_EQ(0, umcg_join(b, NULL));
}

TEST_F(spi, incomplete_tables_refused)
{
	struct umcg_config cfg = ct_config(1, NULL);
	struct umcg_policy_ops bad;

	cfg.policy = &bad;
	bad = lifo_policy;
	bad.pick = NULL;
	EXPECT_EQ(-EINVAL, umcg_init(&cfg));
	bad = lifo_policy;
	bad.enqueue = NULL;
	EXPECT_EQ(-EINVAL, umcg_init(&cfg));
	bad = lifo_policy;
	bad.remove = NULL;
	EXPECT_EQ(-EINVAL, umcg_init(&cfg));
	bad = lifo_policy;
	bad.name = NULL;
	EXPECT_EQ(-EINVAL, umcg_init(&cfg));
	EXPECT_EQ(NULL, umcg_backend_name());

	/* Nothing was left behind: a good table works. */
	cfg.policy = umcg_policy_find("fifo");
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
}

TEST_F(spi, failing_init_fails_umcg_init)
{
	struct umcg_config cfg = ct_config(1, NULL);
	struct umcg_policy_ops bad = lifo_policy;

	bad.init = p_failing_init;
	cfg.policy = &bad;
	EXPECT_EQ(-EMFILE, umcg_init(&cfg));
	EXPECT_EQ(NULL, umcg_backend_name());
	cfg.policy = NULL;
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
}

TEST_HARNESS_MAIN
