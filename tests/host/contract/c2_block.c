// SPDX-License-Identifier: GPL-2.0
/*
 * c2_block - contract C2, block hand-off (user backend; kmod in the VM).
 *
 * A worker that blocks in the kernel in a call libumcg does not see (read()
 * on an empty pipe, nanosleep(), a contended pthread mutex) loses its core:
 * the other workers run and finish while it stays blocked, its state reads
 * BLOCKED, stats count the block, and the hand-off comes after blocked_ns
 * (not before) and well before any timer tick would matter (user backend;
 * with a kernel backend it comes while the blocker still sleeps).  When the call
 * returns, the worker's next libumcg call queues it again and it finishes.
 * Under CPU contention from plain threads, hand-offs lose no worker.
 */
#include <pthread.h>

#include "kselftest_harness.h"
#include "contract.h"

#define C2_OTHERS	3
#define C2_ROUNDS	5
#define C2_SLICE_NS	(1 * CT_MS)
#define C2_SLEEP_NS	(500 * CT_MS * CT_SLOW)

enum c2_kind { C2_READ, C2_NANOSLEEP, C2_MUTEX };

struct c2_run {
	enum c2_kind kind;
	int pipefd[2];
	pthread_mutex_t lock;
	_Atomic int entering;		/* blockers about to block */
	_Atomic int returned;		/* blockers back from the call */
	_Atomic uint64_t enter_ns;	/* when the (last) blocker blocked */
	_Atomic int others_started;
	/* when another worker first ran after a blocker set entering */
	_Atomic uint64_t handoff_ns;
	_Atomic int others_done;
	_Atomic int err;		/* first error a worker saw */
	_Atomic int not_running;	/* blocker not RUNNING after requeue */
};

static void c2_error(struct c2_run *r, int err)
{
	int zero = 0;

	atomic_compare_exchange_strong(&r->err, &zero, err);
}

/* Blocks in the kernel without telling libumcg. */
static void c2_block(struct c2_run *r)
{
	struct timespec ts = {
		.tv_sec = C2_SLEEP_NS / 1000000000ULL,
		.tv_nsec = C2_SLEEP_NS % 1000000000ULL,
	};
	char c;

	switch (r->kind) {
	case C2_READ:
		if (read(r->pipefd[0], &c, 1) != 1)
			c2_error(r, -EIO);
		break;
	case C2_NANOSLEEP:
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		break;
	case C2_MUTEX:
		pthread_mutex_lock(&r->lock);
		pthread_mutex_unlock(&r->lock);
		break;
	}
}

static void *c2_blocker(void *arg)
{
	struct c2_run *r = arg;
	int ret;

	atomic_store(&r->enter_ns, ct_now_ns());
	atomic_fetch_add(&r->entering, 1);
	c2_block(r);
	atomic_fetch_add(&r->returned, 1);
	/* Back from the kernel: this call queues us for a core again. */
	ret = umcg_yield();
	if (ret)
		c2_error(r, ret);
	if (umcg_thread_state(umcg_self()) != UMCG_STATE_RUNNING)
		atomic_fetch_add(&r->not_running, 1);
	return NULL;
}

/*
 * An other worker got the core: if a blocker entered its call by now, the
 * first time is the hand-off.  Whether the other was queued before or
 * after the blocker does not matter (a spawned thread queues itself, so
 * spawn order is not queue order).
 */
static void c2_note_start(struct c2_run *r)
{
	uint64_t zero = 0;

	if (atomic_load(&r->entering))
		atomic_compare_exchange_strong(&r->handoff_ns, &zero, ct_now_ns());
}

static void *c2_other(void *arg)
{
	struct c2_run *r = arg;

	c2_note_start(r);
	atomic_fetch_add(&r->others_started, 1);
	for (int i = 0; i < C2_ROUNDS; i++) {
		int ret;

		ct_spin_ns(C2_SLICE_NS);
		ret = umcg_yield();
		if (ret)
			c2_error(r, ret);
		c2_note_start(r);
	}
	atomic_fetch_add(&r->others_done, 1);
	return NULL;
}

FIXTURE(c2)
{
	bool inited, locked;
	struct c2_run run;
};

FIXTURE_VARIANT(c2)
{
	enum c2_kind kind;
	unsigned int nr_cores;
};

FIXTURE_VARIANT_ADD(c2, read_1) { .kind = C2_READ, .nr_cores = 1 };
FIXTURE_VARIANT_ADD(c2, read_2) { .kind = C2_READ, .nr_cores = 2 };
FIXTURE_VARIANT_ADD(c2, nanosleep_1) { .kind = C2_NANOSLEEP, .nr_cores = 1 };
FIXTURE_VARIANT_ADD(c2, mutex_1) { .kind = C2_MUTEX, .nr_cores = 1 };
FIXTURE_VARIANT_ADD(c2, mutex_2) { .kind = C2_MUTEX, .nr_cores = 2 };

FIXTURE_SETUP(c2)
{
	struct umcg_config cfg = ct_config(variant->nr_cores, NULL);

	if (ct_nr_cpus() < (int)variant->nr_cores)
		SKIP(return, "needs %u CPUs", variant->nr_cores);
	self->run.kind = variant->kind;
	ASSERT_EQ(0, pipe(self->run.pipefd));
	ASSERT_EQ(0, pthread_mutex_init(&self->run.lock, NULL));
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
}

FIXTURE_TEARDOWN(c2)
{
	if (self->locked)
		pthread_mutex_unlock(&self->run.lock);
	if (self->inited)
		EXPECT_EQ(0, umcg_fini());
	close(self->run.pipefd[0]);
	close(self->run.pipefd[1]);
}

/*
 * One blocker per core, each blocked until the test releases it (or, for
 * nanosleep, for C2_SLEEP_NS): the other workers still get every core.
 */
TEST_F(c2, others_run_while_blocked)
{
	struct c2_run *r = &self->run;
	unsigned int nr = variant->nr_cores;
	umcg_thread_t *b[CT_MAX_CORES], *o[C2_OTHERS];
	struct umcg_stats st;

	if (r->kind == C2_MUTEX) {
		ASSERT_EQ(0, pthread_mutex_lock(&r->lock));
		self->locked = true;
	}
	for (unsigned int i = 0; i < nr; i++) {
		struct umcg_attr a = ct_attr(i);

		ASSERT_EQ(0, umcg_spawn(&b[i], &a, c2_blocker, r));
	}
	ASSERT_TRUE(CT_WAIT(atomic_load(&r->entering) == (int)nr, 2000));
	for (unsigned int i = 0; i < nr; i++) {
		ASSERT_TRUE(CT_WAIT(umcg_thread_state(b[i]) == UMCG_STATE_BLOCKED, 2000))
			TH_LOG("blocker %u state %d", i, umcg_thread_state(b[i]));
	}

	for (int i = 0; i < C2_OTHERS; i++) {
		ASSERT_EQ(0, umcg_spawn(&o[i], NULL, c2_other, r));
	}
	ASSERT_TRUE(CT_WAIT(atomic_load(&r->others_done) == C2_OTHERS, 5000)) {
		umcg_dump(stderr);
	}
	/* Every other worker finished while every blocker was still blocked. */
	EXPECT_EQ(0, atomic_load(&r->returned));
	for (unsigned int i = 0; i < nr; i++) {
		EXPECT_EQ(UMCG_STATE_BLOCKED, umcg_thread_state(b[i]));
	}
	/*
	 * Counted just after the blocker's state turns BLOCKED and its core
	 * is freed (umcg_take_core_locked()): the count may trail both.
	 */
	EXPECT_TRUE(CT_WAIT(!umcg_stats(&st) && st.blocks >= nr, 2000))
		TH_LOG("blocks %llu, want %u", (unsigned long long)st.blocks, nr);
	for (int i = 0; i < C2_OTHERS; i++) {
		EXPECT_EQ(0, ct_join(o[i], NULL, 2000));
	}

	/* Release the blockers: each comes back and finishes. */
	if (r->kind == C2_READ) {
		for (unsigned int i = 0; i < nr; i++) {
			ASSERT_EQ(1, write(r->pipefd[1], "x", 1));
		}
	} else if (r->kind == C2_MUTEX) {
		self->locked = false;
		ASSERT_EQ(0, pthread_mutex_unlock(&r->lock));
	}
	for (unsigned int i = 0; i < nr; i++) {
		EXPECT_EQ(0, ct_join(b[i], NULL, 5000));
	}
	EXPECT_EQ((int)nr, atomic_load(&r->returned));
	EXPECT_EQ(0, atomic_load(&r->err));
	EXPECT_EQ(0, atomic_load(&r->not_running));
	ASSERT_EQ(0, umcg_stats(&st));
	EXPECT_EQ(0, st.live);
}

/* --- how soon the hand-off comes ------------------------------------- */

struct c2_lat {
	struct c2_run run;
	_Atomic int go;
};

static void *c2_holder(void *arg)
{
	struct c2_lat *l = arg;

	CT_SPIN_WAIT(atomic_load(&l->go), 5000);
	return NULL;
}

FIXTURE(c2_latency)
{
	bool inited;
	struct c2_lat lat;
	uint64_t blocked_ns;
};

FIXTURE_VARIANT(c2_latency)
{
	uint64_t blocked_ns;	/* 0: the default, 50 us */
};

FIXTURE_VARIANT_ADD(c2_latency, default_blocked_ns) { .blocked_ns = 0 };
FIXTURE_VARIANT_ADD(c2_latency, blocked_ns_5ms) { .blocked_ns = 5 * CT_MS };

FIXTURE_SETUP(c2_latency)
{
	struct umcg_config cfg = ct_config(1, "fifo");

	cfg.blocked_ns = variant->blocked_ns > CT_BLOCKED_NS ? variant->blocked_ns :
							       CT_BLOCKED_NS;
	self->blocked_ns = cfg.blocked_ns ? cfg.blocked_ns : 50 * CT_US;
	self->lat.run.kind = C2_READ;
	ASSERT_EQ(0, pipe(self->lat.run.pipefd));
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
}

FIXTURE_TEARDOWN(c2_latency)
{
	if (self->inited)
		EXPECT_EQ(0, umcg_fini());
	close(self->lat.run.pipefd[0]);
	close(self->lat.run.pipefd[1]);
}

/*
 * One core: a blocker and another worker queued behind a holder (in
 * either order: each queues itself); once the blocker entered read(), the
 * other gets the core at least blocked_ns and at most blocked_ns + 100 ms
 * later (user backend), or while the blocker is still in read() (kernel
 * backends).
 */
TEST_F(c2_latency, handoff_after_blocked_ns)
{
	struct c2_run *r = &self->lat.run;
	uint64_t blocked = self->blocked_ns;
	umcg_thread_t *h, *b, *o;
	uint64_t lat;

	ASSERT_EQ(0, umcg_spawn(&h, NULL, c2_holder, &self->lat));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(h) == UMCG_STATE_RUNNING, 2000));
	ASSERT_EQ(0, umcg_spawn(&b, NULL, c2_blocker, r));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(b) == UMCG_STATE_RUNNABLE, 2000));
	ASSERT_EQ(0, umcg_spawn(&o, NULL, c2_other, r));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(o) == UMCG_STATE_RUNNABLE, 2000));
	atomic_store(&self->lat.go, 1);

	ASSERT_TRUE(CT_WAIT(atomic_load(&r->handoff_ns) != 0, 2000));
	ASSERT_EQ(1, atomic_load(&r->entering));
	lat = atomic_load(&r->handoff_ns) - atomic_load(&r->enter_ns);
	TH_LOG("hand-off %llu us after read(), blocked_ns %llu us",
	       (unsigned long long)lat / 1000, (unsigned long long)blocked / 1000);
	if (ct_kernel_backend()) {
		/*
		 * The kernel reports the block itself: blocked_ns plays no
		 * part, and under emulation times mean little; the hand-off
		 * came while the blocker still sat in read().
		 */
		EXPECT_EQ(0, atomic_load(&r->returned));
	} else {
		EXPECT_LE(blocked - blocked / 10, lat);
		EXPECT_GT(blocked + 100 * CT_MS * CT_SLOW, lat);
	}

	ASSERT_EQ(1, write(r->pipefd[1], "x", 1));
	EXPECT_EQ(0, ct_join(h, NULL, 2000));
	EXPECT_EQ(0, ct_join(o, NULL, 2000));
	EXPECT_EQ(0, ct_join(b, NULL, 2000));
	EXPECT_EQ(0, atomic_load(&r->err));
}

/* --- hand-offs under CPU contention ----------------------------------- */

#define C2S_YIELDERS	4
#define C2S_RUN_NS	(600 * CT_MS)

struct c2_stress {
	_Atomic int stop_hogs;
	_Atomic int running, max_running;
	_Atomic int done;
	_Atomic long rounds;
	_Atomic int err;
};

struct c2_hog {
	struct c2_stress *s;
	int cpu;
};

/* A plain thread (not a worker) eating one CPU. */
static void *c2_hog_main(void *arg)
{
	struct c2_hog *h = arg;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(h->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	while (!atomic_load(&h->s->stop_hogs))
		;
	return NULL;
}

static void *c2_yielder(void *arg)
{
	struct c2_stress *s = arg;
	uint64_t end = ct_now_ns() + C2S_RUN_NS;

	while (ct_now_ns() < end) {
		int ret;

		ct_max(&s->max_running, atomic_fetch_add(&s->running, 1) + 1);
		ct_spin_ns(20 * CT_US);
		atomic_fetch_sub(&s->running, 1);
		ret = umcg_yield();
		if (ret)
			atomic_store(&s->err, ret);
		atomic_fetch_add(&s->rounds, 1);
	}
	atomic_fetch_add(&s->done, 1);
	return NULL;
}

/*
 * Blocks for 25 ms (plus twice blocked_ns) at a time without telling
 * libumcg: long enough for the monitor to notice even at its slowest
 * sampling (10 ms).
 */
static void *c2_napper(void *arg)
{
	struct c2_stress *s = arg;
	uint64_t end = ct_now_ns() + C2S_RUN_NS;

	while (ct_now_ns() < end) {
		int ret;

		usleep(25000 + 2 * CT_BLOCKED_NS / 1000);
		ret = umcg_yield();
		if (ret)
			atomic_store(&s->err, ret);
	}
	atomic_fetch_add(&s->done, 1);
	return NULL;
}

FIXTURE(c2_contention)
{
	bool inited;
	struct c2_stress s;
	pthread_t hogs[2];
	struct c2_hog hog_arg[2];
	int nr_hogs;
};

FIXTURE_SETUP(c2_contention)
{
	struct umcg_config cfg = ct_config(2, NULL);
	int cpus[2];

	if (ct_nr_cpus() < 2)
		SKIP(return, "needs 2 CPUs");
	ASSERT_EQ(0, ct_core_cpus(cpus, 2));
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
	for (int i = 0; i < 2; i++) {
		self->hog_arg[i].s = &self->s;
		self->hog_arg[i].cpu = cpus[i];
		ASSERT_EQ(0, pthread_create(&self->hogs[i], NULL, c2_hog_main,
					    &self->hog_arg[i]));
		self->nr_hogs++;
	}
}

FIXTURE_TEARDOWN(c2_contention)
{
	atomic_store(&self->s.stop_hogs, 1);
	for (int i = 0; i < self->nr_hogs; i++)
		pthread_join(self->hogs[i], NULL);
	if (self->inited)
		EXPECT_EQ(0, umcg_fini());
}

/*
 * Two cores, each shared with a plain thread that spins: workers and
 * servers are preempted by the kernel at any point of a hand-off, and the
 * monitor keeps taking cores from a worker that naps.  No worker is lost
 * (all finish) and the yielders never exceed the cores.
 */
TEST_F(c2_contention, no_worker_lost)
{
	struct c2_stress *s = &self->s;
	umcg_thread_t *y[C2S_YIELDERS], *n;
	struct umcg_stats st;

	for (int i = 0; i < C2S_YIELDERS; i++) {
		ASSERT_EQ(0, umcg_spawn(&y[i], NULL, c2_yielder, s));
	}
	ASSERT_EQ(0, umcg_spawn(&n, NULL, c2_napper, s));
	ASSERT_TRUE(CT_WAIT(atomic_load(&s->done) == C2S_YIELDERS + 1, 10000)) {
		TH_LOG("%d of %d workers done, %ld rounds", atomic_load(&s->done),
		       C2S_YIELDERS + 1, atomic_load(&s->rounds));
		umcg_dump(stderr);
	}
	for (int i = 0; i < C2S_YIELDERS; i++) {
		EXPECT_EQ(0, ct_join(y[i], NULL, 2000));
	}
	EXPECT_EQ(0, ct_join(n, NULL, 2000));
	EXPECT_EQ(0, atomic_load(&s->err));
	EXPECT_GE(2, atomic_load(&s->max_running));
	ASSERT_EQ(0, umcg_stats(&st));
	TH_LOG("%ld yield rounds, %llu blocks, %llu switches", atomic_load(&s->rounds),
	       (unsigned long long)st.blocks, (unsigned long long)st.switches);
	EXPECT_LT(0, st.blocks);
	EXPECT_EQ(0, st.live);
}

TEST_HARNESS_MAIN
