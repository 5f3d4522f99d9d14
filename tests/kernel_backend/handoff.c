// SPDX-License-Identifier: GPL-2.0
/*
 * handoff - a worker blocked in a plain read() on a pipe hands its core to
 * another worker at once (C2), and when a plain pthread (not a worker)
 * writes the pipe, the woken worker runs no user code until the policy
 * picks it (C3): it becomes RUNNABLE and stays so while the core's owner
 * keeps the core.  One managed core, "fifo" policy, a kernel backend
 * (kernel_backend.h: "kmod" or "scx").
 * Asserted by the order of CLOCK_MONOTONIC timestamps, never by durations.
 *
 * staged_next_runs_without_the_server (kmod): a worker that blocks while
 * another is staged next on its core gives the core to it in the kernel,
 * without waking the server: counted by umcg_stats().handoffs and by the
 * server thread's own context switches (/proc), never by time.
 */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>

#include "kselftest_harness.h"

#include <umcg.h>
#include <umcg/policy.h>

#include "kernel_backend.h"

struct ho_run {
	int pipefd[2];
	_Atomic uint64_t b_enter_ns;	/* B about to read() */
	_Atomic uint64_t b_return_ns;	/* B back in its code */
	_Atomic uint64_t a_start_ns;	/* A got the core */
	_Atomic uint64_t a_end_ns;	/* A is about to give it up */
	_Atomic uint64_t write_ns;	/* the plain thread wrote */
	_Atomic int a_release;
	_Atomic int b_state_at_a_start;
	_Atomic int err;
	umcg_thread_t *b;
};

static void *ho_b(void *arg)
{
	struct ho_run *r = arg;
	char c;

	atomic_store(&r->b_enter_ns, kb_now_ns());
	if (read(r->pipefd[0], &c, 1) != 1)
		atomic_store(&r->err, -EIO);
	atomic_store(&r->b_return_ns, kb_now_ns());
	return NULL;
}

static void *ho_a(void *arg)
{
	struct ho_run *r = arg;
	uint64_t end = kb_now_ns() + 60000 * KB_MS;

	atomic_store(&r->b_state_at_a_start, umcg_thread_state(r->b));
	atomic_store(&r->a_start_ns, kb_now_ns());
	/* Keep the core: busy, no libumcg call, no sleep. */
	while (!atomic_load(&r->a_release) && kb_now_ns() < end)
		;
	atomic_store(&r->a_end_ns, kb_now_ns());
	return NULL;
}

static void *ho_writer(void *arg)
{
	struct ho_run *r = arg;

	atomic_store(&r->write_ns, kb_now_ns());
	if (write(r->pipefd[1], "x", 1) != 1)
		atomic_store(&r->err, -EIO);
	return NULL;
}

/* Plain thread: poll @cond every ms for up to 20 s (emulated guests). */
#define HO_WAIT(cond) ({						\
	uint64_t __end = kb_now_ns() + 20000 * KB_MS;			\
	while (!(cond) && kb_now_ns() < __end)				\
		usleep(1000);						\
	!!(cond);							\
})

FIXTURE(handoff)
{
	bool inited;
	struct ho_run run;
};

FIXTURE_SETUP(handoff)
{
	struct umcg_config cfg = { .size = sizeof(cfg) };
	const char *why = kb_backend_get();

	self->run.pipefd[0] = self->run.pipefd[1] = -1;
	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, pipe(self->run.pipefd));
	cfg.nr_cores = 1;
	cfg.backend = KB_BACKEND;
	cfg.policy = umcg_policy_find("fifo");
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
	ASSERT_STREQ(KB_BACKEND, umcg_backend_name());
}

FIXTURE_TEARDOWN(handoff)
{
	if (self->inited) {
		EXPECT_EQ(0, umcg_fini());
		KB_EXPECT_BACKEND_KEPT();
	}
	if (self->run.pipefd[0] >= 0) {
		close(self->run.pipefd[0]);
		close(self->run.pipefd[1]);
	}
}

TEST_F_TIMEOUT(handoff, read_blocks_then_waits_for_the_policy, 100)
{
	struct ho_run *r = &self->run;
	umcg_thread_t *a;
	pthread_t w;
	struct umcg_stats st;

	ASSERT_EQ(0, umcg_spawn(&r->b, NULL, ho_b, r));
	/* B owns the only core, then blocks in read(): BLOCKED, core freed. */
	ASSERT_TRUE(HO_WAIT(umcg_thread_state(r->b) == UMCG_STATE_BLOCKED))
		TH_LOG("B state %d", umcg_thread_state(r->b));
	ASSERT_EQ(0, umcg_spawn(&a, NULL, ho_a, r));
	ASSERT_TRUE(HO_WAIT(atomic_load(&r->a_start_ns) != 0));
	EXPECT_EQ(UMCG_STATE_BLOCKED, atomic_load(&r->b_state_at_a_start));
	EXPECT_EQ(0, atomic_load(&r->b_return_ns));
	ASSERT_EQ(0, umcg_stats(&st));
	EXPECT_LE(1, st.blocks);

	/* A plain thread writes: B's read() completes, B is queued, held. */
	ASSERT_EQ(0, pthread_create(&w, NULL, ho_writer, r));
	ASSERT_EQ(0, pthread_join(w, NULL));
	EXPECT_TRUE(HO_WAIT(umcg_thread_state(r->b) == UMCG_STATE_RUNNABLE))
		TH_LOG("B state %d", umcg_thread_state(r->b));
	usleep(50000);
	EXPECT_EQ(UMCG_STATE_RUNNABLE, umcg_thread_state(r->b));
	EXPECT_EQ(UMCG_STATE_RUNNING, umcg_thread_state(a));
	EXPECT_EQ(0, atomic_load(&r->b_return_ns));

	/* A gives the core up: only now does B run. */
	atomic_store(&r->a_release, 1);
	ASSERT_TRUE(HO_WAIT(umcg_thread_state(r->b) == UMCG_STATE_DONE &&
			    umcg_thread_state(a) == UMCG_STATE_DONE)) {
		umcg_dump(stderr);
	}
	EXPECT_EQ(0, umcg_join(a, NULL));
	EXPECT_EQ(0, umcg_join(r->b, NULL));
	EXPECT_EQ(0, atomic_load(&r->err));
	EXPECT_LT(atomic_load(&r->b_enter_ns), atomic_load(&r->a_start_ns));
	EXPECT_LT(atomic_load(&r->a_start_ns), atomic_load(&r->write_ns));
	EXPECT_LT(atomic_load(&r->write_ns), atomic_load(&r->a_end_ns));
	EXPECT_LT(atomic_load(&r->a_end_ns), atomic_load(&r->b_return_ns));
}

struct st_run {
	int pipefd[2];
	umcg_thread_t *a, *b;
	_Atomic int ran;	/* B's runs, each after A blocked */
	_Atomic int a_not_blocked;	/* B ran while A was not BLOCKED (C1) */
	_Atomic int stop;
	_Atomic int err;
};

#define ST_ROUNDS	200

/* B: parked until A unparks it, then runs once A blocks. */
static void *st_b(void *arg)
{
	struct st_run *r = arg;

	for (;;) {
		umcg_park();
		if (atomic_load(&r->stop))
			return NULL;
		if (umcg_thread_state(r->a) != UMCG_STATE_BLOCKED)
			atomic_fetch_add(&r->a_not_blocked, 1);
		atomic_fetch_add(&r->ran, 1);
	}
}

/* A: stages B (the unpark queues it on A's busy core), then blocks. */
static void *st_a(void *arg)
{
	struct st_run *r = arg;
	char c;

	for (int i = 0; i < ST_ROUNDS; i++) {
		umcg_unpark(r->b);
		if (read(r->pipefd[0], &c, 1) != 1) {
			atomic_store(&r->err, -EIO);
			break;
		}
	}
	atomic_store(&r->stop, 1);
	umcg_unpark(r->b);
	return NULL;
}

/* Voluntary context switches of this process's thread named @comm, -1. */
static long st_thread_nvcsw(const char *comm)
{
	char path[300], line[128];
	struct dirent *de;
	long n = -1;
	DIR *d = opendir("/proc/self/task");

	while (d && n < 0 && (de = readdir(d))) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(line, sizeof(line), f) || strncmp(line, comm, strlen(comm)) ||
		    line[strlen(comm)] != '\n') {
			fclose(f);
			continue;
		}
		fclose(f);
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", de->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1)
				break;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

TEST_F_TIMEOUT(handoff, staged_next_runs_without_the_server, 200)
{
	struct st_run r = { .pipefd = { self->run.pipefd[0], self->run.pipefd[1] } };
	struct umcg_stats before, after;
	long srv0, srv1;
	int i;

#ifdef KB_BACKEND_SCX
	SKIP(return, "the scx backend stages no next worker yet");
#endif
	ASSERT_EQ(0, umcg_spawn(&r.b, NULL, st_b, &r));
	ASSERT_TRUE(HO_WAIT(umcg_thread_state(r.b) == UMCG_STATE_PARKED));
	srv0 = st_thread_nvcsw("umcg-server-0");
	ASSERT_LE(0, srv0);
	ASSERT_EQ(0, umcg_stats(&before));
	ASSERT_EQ(0, umcg_spawn(&r.a, NULL, st_a, &r));
	/* Each round: B ran (A is blocked in read()), then A may go on. */
	for (i = 0; i < ST_ROUNDS; i++) {
		if (!HO_WAIT(atomic_load(&r.ran) > i))
			break;
		ASSERT_EQ(1, write(r.pipefd[1], "x", 1));
	}
	EXPECT_EQ(ST_ROUNDS, i) {
		umcg_dump(stderr);
	}
	ASSERT_EQ(0, umcg_join(r.a, NULL));
	ASSERT_EQ(0, umcg_join(r.b, NULL));
	srv1 = st_thread_nvcsw("umcg-server-0");
	ASSERT_EQ(0, umcg_stats(&after));
	EXPECT_EQ(0, atomic_load(&r.err));
	EXPECT_EQ(0, atomic_load(&r.a_not_blocked));
	TH_LOG("%d rounds: %llu hand-offs in the kernel, %llu blocks, server woke %ld times",
	       ST_ROUNDS, (unsigned long long)(after.handoffs - before.handoffs),
	       (unsigned long long)(after.blocks - before.blocks), srv1 - srv0);
	/* Every round's block went to the staged B in the kernel ... */
	EXPECT_LE(ST_ROUNDS * 9 / 10, after.handoffs - before.handoffs);
	/*
	 * ... so the server runs twice a round (B's park leaves the core
	 * idle; A's wake-up is queued by it), not three times (also to run
	 * B when A blocks) as when it made every hand-off.
	 */
	EXPECT_GT(ST_ROUNDS * 5 / 2, srv1 - srv0);
}

TEST_HARNESS_MAIN
