// SPDX-License-Identifier: GPL-2.0
/*
 * scale - many live workers at once, on the user backend (C1/C5 at scale).
 *
 * 10,000 workers (64 KiB stacks) on two cores are alive together: each runs
 * once and parks; when all are parked, stats count them live and parked;
 * the main thread unparks every one, each exits, all are joined, and the
 * live count goes back to 0 with every worker counted exited.  Where the
 * kernel hashes a process's futexes in a table of its own (6.16 and
 * later), libumcg has grown that table to a bucket per worker: the
 * kernel's size (16 buckets on two CPUs) made every unpark walk hundreds
 * of parked waiters.
 */
#include <sys/prctl.h>
#include <sys/resource.h>

#include "kselftest_harness.h"
#include "contract.h"

#if defined(__SANITIZE_THREAD__)
/* ThreadSanitizer keeps at most 8128 threads alive. */
#define S_WORKERS	4000
#else
#define S_WORKERS	10000
#endif
#define S_STACK		(64 * 1024)

#ifndef PR_FUTEX_HASH
#define PR_FUTEX_HASH			78
#define PR_FUTEX_HASH_GET_SLOTS		2
#endif

struct s_run {
	_Atomic int ran, parked_back;
	_Atomic int err;
	_Atomic int go;			/* main has unparked them all */
};

static void *s_worker(void *arg)
{
	struct s_run *r = arg;
	int ret;

	atomic_fetch_add(&r->ran, 1);
	ret = umcg_park();
	if (ret)
		atomic_store(&r->err, ret);
	/* Park may return spuriously: only main's unpark counts. */
	while (!atomic_load(&r->go))
		umcg_park();
	atomic_fetch_add(&r->parked_back, 1);
	return NULL;
}

FIXTURE(scale)
{
	bool inited;
	struct s_run run;
	umcg_thread_t **t;
};

FIXTURE_SETUP(scale)
{
	struct umcg_config cfg = ct_config(2, NULL);
	struct rlimit rl;

	if (ct_nr_cpus() < 2)
		SKIP(return, "needs 2 CPUs");
	if (!getrlimit(RLIMIT_NPROC, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < S_WORKERS + 100)
		SKIP(return, "RLIMIT_NPROC %llu is below %d threads",
		     (unsigned long long)rl.rlim_cur, S_WORKERS + 100);
	self->t = calloc(S_WORKERS, sizeof(*self->t));
	ASSERT_NE(NULL, self->t);
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
}

FIXTURE_TEARDOWN(scale)
{
	atomic_store(&self->run.go, 1);
	if (self->inited)
		EXPECT_EQ(0, umcg_fini());
	free(self->t);
}

TEST_F_TIMEOUT(scale, ten_thousand_live_workers, 90)
{
	struct s_run *r = &self->run;
	struct umcg_attr a = ct_attr(-1);
	struct umcg_stats st;
	uint64_t t0 = ct_now_ns();
	int slots;

	a.stack_size = S_STACK;
	for (int i = 0; i < S_WORKERS; i++) {
		int ret = umcg_spawn(&self->t[i], &a, s_worker, r);

		ASSERT_EQ(0, ret) TH_LOG("spawn %d of %d", i, S_WORKERS);
	}
	ASSERT_TRUE(CT_WAIT(umcg_stats(&st) == 0 && st.parks >= S_WORKERS, 30000)) {
		TH_LOG("%d ran, %llu parks", atomic_load(&r->ran),
		       (unsigned long long)st.parks);
	}
	/* All alive at once, all parked. */
	EXPECT_EQ(S_WORKERS, atomic_load(&r->ran));
	EXPECT_EQ(S_WORKERS, st.live);
	EXPECT_EQ(S_WORKERS, st.spawned);
	EXPECT_EQ(0, st.exited);
	for (int i = 0; i < S_WORKERS; i += 997) {
		EXPECT_EQ(UMCG_STATE_PARKED, umcg_thread_state(self->t[i])) TH_LOG("worker %d", i);
	}
	TH_LOG("%d workers spawned and parked in %llu ms", S_WORKERS,
	       (unsigned long long)(ct_now_ns() - t0) / CT_MS);
	slots = prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_GET_SLOTS, 0, 0, 0);
	if (slots < 0) {
		TH_LOG("no private futex hash in this kernel: %s", strerror(errno));
	} else {
		EXPECT_LE(S_WORKERS, slots) TH_LOG("futex hash slots");
		TH_LOG("private futex hash: %d slots", slots);
	}

	atomic_store(&r->go, 1);
	for (int i = 0; i < S_WORKERS; i++) {
		ASSERT_EQ(0, umcg_unpark(self->t[i])) TH_LOG("worker %d", i);
	}
	for (int i = 0; i < S_WORKERS; i++) {
		ASSERT_EQ(0, ct_join(self->t[i], NULL, 10000)) TH_LOG("worker %d", i);
	}
	ASSERT_EQ(0, umcg_stats(&st));
	EXPECT_EQ(S_WORKERS, atomic_load(&r->parked_back));
	EXPECT_EQ(0, atomic_load(&r->err));
	EXPECT_EQ(0, st.live);
	EXPECT_EQ(S_WORKERS, st.exited);
	TH_LOG("all done in %llu ms", (unsigned long long)(ct_now_ns() - t0) / CT_MS);
}

TEST_HARNESS_MAIN
