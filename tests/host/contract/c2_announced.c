// SPDX-License-Identifier: GPL-2.0
/*
 * c2_announced - C1 and C2 for blocking calls a worker announces with
 * umcg_blocking_enter() / umcg_blocking_leave() (what umcg-run's interposed
 * calls do), on the user backend, with blocked_ns at 30 s so that the
 * monitor's detection of unannounced blocks cannot act during a test.
 *
 * handoff: on one core, a blocker announces a read() of an empty pipe (or
 * a nanosleep()) and blocks; another worker, queued behind it, must run
 * within a second (C2): at once with UMCG_BLOCKING_NOW, within the
 * monitor's 20 us call sample period without.  The blocker's leave waits
 * for the core again: it and the other never run their own code at the
 * same time (C1), and it reads RUNNING afterwards.
 *
 * ring: 2 cores, 4 workers pass 2 tokens round a ring of pipes, each read
 * announced (every other one with UMCG_BLOCKING_NOW), many times: the races
 * between the monitor taking a core and its owner coming back from the call
 * (exactly one keeps it) never let more than 2 workers run their own code
 * at once, and no token is lost.
 *
 * handler: a signal handler that makes announced calls (with and without
 * UMCG_BLOCKING_NOW) while its worker is parked inside libumcg: only
 * counted there, the worker parks on and returns 0 when unparked.
 */
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>

#include "kselftest_harness.h"
#include "contract.h"

#define CA_BLOCKED_NS	(30000ULL * CT_MS)
#define CA_SLEEP_NS	(200 * CT_MS)
#define CA_RING		4
#define CA_TOKENS	2
#define CA_LAPS		300

enum ca_kind { CA_READ, CA_SLEEP };

struct ca_run {
	enum ca_kind kind;
	unsigned int flags;
	int pipefd[CA_RING][2];
	_Atomic int entering;
	_Atomic uint64_t enter_ns, handoff_ns;
	_Atomic int in_user, max_in_user;
	_Atomic int err, not_running, done;
	_Atomic long passes;
};

static void ca_error(struct ca_run *r, int err)
{
	int zero = 0;

	atomic_compare_exchange_strong(&r->err, &zero, err);
}

/* The caller's own code, counted: C1 is max_in_user <= cores. */
static void ca_user_code(struct ca_run *r, uint64_t ns)
{
	ct_max(&r->max_in_user, atomic_fetch_add(&r->in_user, 1) + 1);
	ct_spin_ns(ns);
	atomic_fetch_sub(&r->in_user, 1);
}

static void *ca_blocker(void *arg)
{
	struct ca_run *r = arg;
	struct timespec ts = { .tv_nsec = CA_SLEEP_NS };
	int ret;
	char c;

	ca_user_code(r, 100 * CT_US);
	atomic_store(&r->enter_ns, ct_now_ns());
	atomic_store(&r->entering, 1);
	ret = umcg_blocking_enter(r->flags);
	if (ret)
		ca_error(r, ret);
	if (r->kind == CA_READ) {
		if (read(r->pipefd[0][0], &c, 1) != 1)
			ca_error(r, -EIO);
	} else {
		nanosleep(&ts, NULL);
	}
	ret = umcg_blocking_leave();
	if (ret)
		ca_error(r, ret);
	if (umcg_thread_state(umcg_self()) != UMCG_STATE_RUNNING)
		atomic_fetch_add(&r->not_running, 1);
	ca_user_code(r, 2 * CT_MS);
	atomic_fetch_add(&r->done, 1);
	return NULL;
}

static void *ca_other(void *arg)
{
	struct ca_run *r = arg;
	uint64_t zero = 0;

	atomic_compare_exchange_strong(&r->handoff_ns, &zero, ct_now_ns());
	for (int i = 0; i < 5; i++) {
		ca_user_code(r, 1 * CT_MS);
		if (i == 0 && r->kind == CA_READ && write(r->pipefd[0][1], "x", 1) != 1)
			ca_error(r, -EIO);
		umcg_yield();
	}
	atomic_fetch_add(&r->done, 1);
	return NULL;
}

/* Ring member @i: reads pipe i, writes pipe i + 1. */
struct ca_member {
	struct ca_run *r;
	int i;
};

static void *ca_ring_member(void *arg)
{
	struct ca_member *m = arg;
	struct ca_run *r = m->r;
	int in = m->i, out = (m->i + 1) % CA_RING;
	char c;

	for (int lap = 0; lap < CA_LAPS; lap++) {
		int ret = umcg_blocking_enter(lap % 2 ? UMCG_BLOCKING_NOW : 0);

		if (ret)
			ca_error(r, ret);
		if (read(r->pipefd[in][0], &c, 1) != 1)
			ca_error(r, -EIO);
		ret = umcg_blocking_leave();
		if (ret)
			ca_error(r, ret);
		ca_user_code(r, 20 * CT_US);
		atomic_fetch_add(&r->passes, 1);
		if (write(r->pipefd[out][1], &c, 1) != 1)
			ca_error(r, -EIO);
	}
	atomic_fetch_add(&r->done, 1);
	return NULL;
}

FIXTURE(ca)
{
	bool inited;
	struct ca_run run;
};

FIXTURE_VARIANT(ca)
{
	enum ca_kind kind;
	unsigned int flags;
};

FIXTURE_VARIANT_ADD(ca, read_now) { .kind = CA_READ, .flags = UMCG_BLOCKING_NOW };
FIXTURE_VARIANT_ADD(ca, read_may) { .kind = CA_READ, .flags = 0 };
FIXTURE_VARIANT_ADD(ca, sleep_now) { .kind = CA_SLEEP, .flags = UMCG_BLOCKING_NOW };
FIXTURE_VARIANT_ADD(ca, sleep_may) { .kind = CA_SLEEP, .flags = 0 };

FIXTURE_SETUP(ca)
{
	memset(&self->run, 0, sizeof(self->run));
	self->run.kind = variant->kind;
	self->run.flags = variant->flags;
	for (int i = 0; i < CA_RING; i++)
		ASSERT_EQ(0, pipe(self->run.pipefd[i]));
	self->inited = false;
}

FIXTURE_TEARDOWN(ca)
{
	if (self->inited)
		umcg_fini();
	for (int i = 0; i < CA_RING; i++) {
		close(self->run.pipefd[i][0]);
		close(self->run.pipefd[i][1]);
	}
}

static int ca_init(unsigned int nr_cores)
{
	struct umcg_config cfg = ct_config(nr_cores, NULL);

	cfg.backend = "user";
	cfg.blocked_ns = CA_BLOCKED_NS;
	return umcg_init(&cfg);
}

TEST_F(ca, handoff)
{
	struct ca_run *r = &self->run;
	umcg_thread_t *b, *o;
	uint64_t gap;

	ASSERT_EQ(0, ca_init(1));
	self->inited = true;
	ASSERT_EQ(0, umcg_spawn(&b, NULL, ca_blocker, r));
	ASSERT_TRUE(CT_WAIT(atomic_load(&r->entering), 2000));
	ASSERT_EQ(0, umcg_spawn(&o, NULL, ca_other, r));
	ASSERT_EQ(0, ct_join(o, NULL, 3000));
	ASSERT_EQ(0, ct_join(b, NULL, 3000));
	EXPECT_EQ(0, atomic_load(&r->err));
	EXPECT_EQ(2, atomic_load(&r->done));
	EXPECT_EQ(0, atomic_load(&r->not_running));
	EXPECT_EQ(1, atomic_load(&r->max_in_user));
	/* Includes main's wait for the block and the spawn of the other. */
	gap = atomic_load(&r->handoff_ns) - atomic_load(&r->enter_ns);
	TH_LOG("the other ran %.1f us after the block", gap / 1e3);
	/* The monitor would take 30 s; the sleep itself is 200 ms. */
	EXPECT_LT(gap, (r->kind == CA_SLEEP ? CA_SLEEP_NS / 2 : 1000 * CT_MS) * CT_SLOW);
}

TEST(ring)
{
	static struct ca_run run;
	struct ca_run *r = &run;
	struct ca_member m[CA_RING];
	umcg_thread_t *t[CA_RING];

	if (ct_nr_cpus() < 2)
		SKIP(return, "needs 2 CPUs");
	for (int i = 0; i < CA_RING; i++)
		ASSERT_EQ(0, pipe(r->pipefd[i]));
	ASSERT_EQ(0, ca_init(2));
	for (int i = 0; i < CA_RING; i++) {
		m[i] = (struct ca_member){ .r = r, .i = i };
		ASSERT_EQ(0, umcg_spawn(&t[i], NULL, ca_ring_member, &m[i]));
	}
	for (int i = 0; i < CA_TOKENS; i++)
		ASSERT_EQ(1, write(r->pipefd[i * (CA_RING / CA_TOKENS)][1], "t", 1));
	for (int i = 0; i < CA_RING; i++)
		ASSERT_EQ(0, ct_join(t[i], NULL, 30000));
	EXPECT_EQ(0, atomic_load(&r->err));
	EXPECT_EQ((long)CA_RING * CA_LAPS, atomic_load(&r->passes));
	EXPECT_LE(atomic_load(&r->max_in_user), 2);
	EXPECT_EQ(0, umcg_fini());
}

static _Atomic int ca_handler_runs, ca_handler_err;
static _Atomic int ca_parked;

static void ca_handler(int sig)
{
	struct timespec ts = { .tv_nsec = 1000000 };
	int saved = errno;

	for (unsigned int flags = 0; flags <= UMCG_BLOCKING_NOW; flags++) {
		int ret = umcg_blocking_enter(flags);

		nanosleep(&ts, NULL);
		if (ret || umcg_blocking_leave())
			atomic_store(&ca_handler_err, 1);
	}
	atomic_fetch_add(&ca_handler_runs, 1);
	errno = saved;
}

static void *ca_parker(void *arg)
{
	_Atomic int *ret = arg;

	atomic_store(&ca_parked, 1);
	atomic_store(ret, umcg_park());
	return NULL;
}

TEST(handler)
{
	struct sigaction sa = { .sa_handler = ca_handler }, old;
	_Atomic int ret = -1;
	umcg_thread_t *t;

#ifdef __SANITIZE_THREAD__
	/* TSan holds a signal back until its thread leaves the futex wait. */
	SKIP(return, "ThreadSanitizer delivers no signal to a parked worker");
#endif
	ASSERT_EQ(0, ca_init(1));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	ASSERT_EQ(0, sigaction(SIGUSR1, &sa, &old));
	ASSERT_EQ(0, umcg_spawn(&t, NULL, ca_parker, &ret));
	ASSERT_TRUE(CT_WAIT(atomic_load(&ca_parked) &&
			    umcg_thread_state(t) == UMCG_STATE_PARKED, 2000));
	usleep(2000);
	ASSERT_EQ(0, syscall(SYS_tgkill, getpid(), umcg_thread_tid(t), SIGUSR1));
	ASSERT_TRUE(CT_WAIT(atomic_load(&ca_handler_runs) == 1, 2000));
	EXPECT_EQ(0, atomic_load(&ca_handler_err));
	/* The handler's calls left it parked; only the unpark ends the park. */
	EXPECT_EQ(UMCG_STATE_PARKED, umcg_thread_state(t));
	EXPECT_EQ(0, umcg_unpark(t));
	ASSERT_EQ(0, ct_join(t, NULL, 2000));
	EXPECT_EQ(0, atomic_load(&ret));
	sigaction(SIGUSR1, &old, NULL);
	EXPECT_EQ(0, umcg_fini());
}

TEST_HARNESS_MAIN
