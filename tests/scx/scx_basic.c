// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the umcg sched_ext scheduler (bpf/umcg.bpf.c) attaches in
 * partial mode, runs and counts exactly the threads that opt in with
 * SCHED_EXT, detaches with exit kind UNREG, leaves opted-in threads running
 * in the fair class, and refuses a second scheduler with -EBUSY.  A
 * SCHED_EXT thread that never sleeps keeps running beside a fair-class
 * thread that never sleeps, without a watchdog ejection.  Skips on kernels
 * without sched_ext.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "scx_loader.h"
#include <uapi/umcg.h>

#ifndef SCHED_EXT
#define SCHED_EXT	7
#endif

/*
 * Rounds of each half of a worker's work phase; each round spins, yields
 * and sleeps once.  In the first half the worker may run anywhere, so its
 * wake-ups mostly go through ops.select_cpu to an idle CPU.  In the second
 * half it is pinned to one CPU: the kernel skips select_cpu for a task
 * that cannot migrate, so every wake-up goes through ops.enqueue, the FIFO
 * and ops.dispatch.
 */
#define NR_ROUNDS	20
/* Generous: TCG is slow and the machine may be busy. */
#define WAIT_MS		20000

struct worker {
	pthread_t	thread;
	bool		opt_in;		/* sched_setscheduler(0, SCHED_EXT) first */
	atomic_int	setsched_errno;	/* its errno, 0 on success */
	atomic_int	pin_errno;	/* sched_setaffinity's errno, 0 on success */
	atomic_int	tid;		/* set once opted in */
	atomic_bool	done;		/* the NR_ROUNDS rounds are over */
	atomic_bool	release;	/* set by the test: return now */
	atomic_ulong	progress;	/* bumped in every round, also after done */
};

static long long elapsed_us(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000000LL +
	       (t.tv_nsec - t0->tv_nsec) / 1000;
}

static void spin_us(long long us)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (elapsed_us(&t0) < us)
		;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct sched_param sp = { 0 };

	if (w->opt_in && sched_setscheduler(0, SCHED_EXT, &sp))
		w->setsched_errno = errno;
	w->tid = gettid();
	for (int i = 0; i < 2 * NR_ROUNDS; i++) {
		if (i == NR_ROUNDS) {
			cpu_set_t one;

			CPU_ZERO(&one);
			CPU_SET(sched_getcpu(), &one);
			if (sched_setaffinity(0, sizeof(one), &one))
				w->pin_errno = errno;
		}
		spin_us(200);
		sched_yield();
		usleep(1000);
		w->progress++;
	}
	w->done = true;
	while (!w->release) {
		usleep(1000);
		w->progress++;
	}
	return NULL;
}

/* 0 or -errno. */
static int worker_start(struct worker *w, bool opt_in)
{
	memset(w, 0, sizeof(*w));
	w->opt_in = opt_in;
	return -pthread_create(&w->thread, NULL, worker_main, w);
}

static void worker_stop(struct worker *w)
{
	w->release = true;
	pthread_join(w->thread, NULL);
}

/* True once @w's work phase is over, false after WAIT_MS. */
static bool worker_wait_done(struct worker *w)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!w->done) {
		if (elapsed_us(&t0) > WAIT_MS * 1000LL)
			return false;
		usleep(1000);
	}
	return true;
}

/* True once @w makes progress, false if it stays stuck for WAIT_MS. */
static bool worker_progresses(struct worker *w)
{
	unsigned long p0 = w->progress;
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (w->progress == p0) {
		if (elapsed_us(&t0) > WAIT_MS * 1000LL)
			return false;
		usleep(1000);
	}
	return true;
}

/* "ext.enabled" of /proc/self/task/@tid/sched: 0 or 1, -1 if absent. */
static int ext_enabled(pid_t tid)
{
	char path[64], line[256];
	int val = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/sched", tid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "ext.enabled", 11) || !colon)
			continue;
		val = atoi(colon + 1);
		break;
	}
	fclose(f);
	return val;
}

/* True once /sys/kernel/sched_ext/state reads @want, false after WAIT_MS. */
static bool state_becomes(const char *want)
{
	struct timespec t0;
	char state[32];

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (!umcg_scx_sysfs_read("state", state, sizeof(state)) &&
		    !strcmp(state, want))
			return true;
		if (elapsed_us(&t0) > WAIT_MS * 1000LL)
			return false;
		usleep(1000);
	}
}

/* The scheduler's exit, as text, for a failed "still attached" check. */
static const char *exit_text(const struct umcg_scx *s)
{
	static char buf[UEI_REASON_LEN + UEI_MSG_LEN + 64];
	struct user_exit_info ei;

	umcg_scx_exit_info(s, &ei);
	snprintf(buf, sizeof(buf), "%s (%d): %s: %s",
		 umcg_scx_exit_kind_name(ei.kind), ei.kind, ei.reason, ei.msg);
	return buf;
}

static __u64 stat_delta(const struct umcg_scx_stats *before,
			const struct umcg_scx_stats *after, unsigned int i)
{
	return after->cnt[i] - before->cnt[i];
}

FIXTURE(scx) {
	struct umcg_scx *s;
};

FIXTURE_SETUP(scx)
{
	struct umcg_scx_opts opts = { .timeout_ms = UMCG_SCX_TIMEOUT_MS_DFL };
	char ops[64] = "";
	int ret;

	self->s = NULL;
	ret = umcg_scx_probe();
	if (ret == -ENOENT)
		SKIP(return, "no sched_ext in this kernel (/sys/kernel/sched_ext is missing)");
	if (ret == -EPERM)
		SKIP(return, "loading a sched_ext scheduler needs root");
	umcg_scx_sysfs_read("root/ops", ops, sizeof(ops));
	ASSERT_EQ(0, ret) TH_LOG("sched_ext is not free (\"%s\" loaded?): %s",
				 ops, strerror(-ret));
	ASSERT_EQ(0, umcg_scx_open(&self->s, &opts));
	ASSERT_EQ(0, umcg_scx_attach(self->s));
}

FIXTURE_TEARDOWN(scx)
{
	umcg_scx_close(self->s);
}

TEST_F_TIMEOUT(scx, attached, 60)
{
	char buf[64];

	ASSERT_EQ(0, umcg_scx_sysfs_read("state", buf, sizeof(buf)));
	ASSERT_STREQ("enabled", buf);
	ASSERT_EQ(0, umcg_scx_sysfs_read("root/ops", buf, sizeof(buf)));
	ASSERT_STREQ(UMCG_SCX_OPS_NAME, buf);
	ASSERT_FALSE(umcg_scx_exited(self->s));
	ASSERT_EQ(-EBUSY, umcg_scx_probe());
}

TEST_F_TIMEOUT(scx, opted_in_thread_is_scheduled_by_bpf, 60)
{
	struct umcg_scx_stats before, after;
	struct umcg_scx_task_stats ts;
	struct worker w;
	pid_t tid;

	ASSERT_EQ(0, umcg_scx_read_stats(self->s, &before));
	ASSERT_EQ(0, worker_start(&w, true));
	ASSERT_TRUE(worker_wait_done(&w));
	ASSERT_EQ(0, w.setsched_errno) TH_LOG("sched_setscheduler(SCHED_EXT): %s",
					      strerror(w.setsched_errno));
	ASSERT_EQ(0, w.pin_errno);
	tid = w.tid;
	ASSERT_EQ(SCHED_EXT, sched_getscheduler(tid));
	ASSERT_EQ(1, ext_enabled(tid));

	ASSERT_EQ(0, umcg_scx_read_task_stats(self->s, tid, &ts));
	ASSERT_EQ(0, umcg_scx_read_stats(self->s, &after));
	TH_LOG("task %d: enable=%llu enqueue=%llu dispatch=%llu running=%llu block=%llu",
	       tid, (unsigned long long)ts.enable, (unsigned long long)ts.enqueue,
	       (unsigned long long)ts.dispatch, (unsigned long long)ts.running,
	       (unsigned long long)ts.block);
	for (unsigned int i = 0; i < UMCG_SCX_NR_STATS; i++)
		TH_LOG("global %s: +%llu", umcg_scx_stat_name(i),
		       (unsigned long long)stat_delta(&before, &after, i));

	ASSERT_EQ(1, ts.enable);
	/* Every sleep is a block, and every wake-up a trip through BPF. */
	ASSERT_GE(ts.block, (__u64)2 * NR_ROUNDS);
	ASSERT_GE(ts.running, (__u64)2 * NR_ROUNDS);
	/* Pinned, every wake-up went through the FIFO. */
	ASSERT_GE(ts.enqueue, (__u64)NR_ROUNDS);
	ASSERT_GE(ts.dispatch, (__u64)NR_ROUNDS);
	/* The per-CPU sums saw at least this task's events. */
	ASSERT_GE(stat_delta(&before, &after, UMCG_SCX_STAT_ENABLE), ts.enable);
	ASSERT_GE(stat_delta(&before, &after, UMCG_SCX_STAT_ENQUEUE), ts.enqueue);
	ASSERT_GE(stat_delta(&before, &after, UMCG_SCX_STAT_RUNNING), ts.running);
	ASSERT_GE(stat_delta(&before, &after, UMCG_SCX_STAT_BLOCK), ts.block);
	/* Only ops.dispatch takes a task off the FIFO. */
	ASSERT_GE(stat_delta(&before, &after, UMCG_SCX_STAT_DISPATCH),
		  (__u64)NR_ROUNDS);
	/* Nothing stalled: the watchdog did not eject us. */
	ASSERT_FALSE(umcg_scx_exited(self->s)) TH_LOG("%s", exit_text(self->s));

	worker_stop(&w);
}

TEST_F_TIMEOUT(scx, fair_thread_is_not_counted, 60)
{
	struct umcg_scx_stats before, after;
	struct umcg_scx_task_stats ts;
	struct worker w;
	pid_t tid;

	ASSERT_EQ(0, umcg_scx_read_stats(self->s, &before));
	ASSERT_EQ(0, worker_start(&w, false));
	ASSERT_TRUE(worker_wait_done(&w));
	ASSERT_EQ(0, w.pin_errno);
	tid = w.tid;
	ASSERT_EQ(SCHED_OTHER, sched_getscheduler(tid));
	ASSERT_EQ(0, ext_enabled(tid));

	/* The scheduler allocated nothing for it: no counters at all. */
	ASSERT_EQ(-ENOENT, umcg_scx_read_task_stats(self->s, tid, &ts));
	ASSERT_EQ(0, umcg_scx_read_stats(self->s, &after));
	/* Partial mode: with no SCHED_EXT thread about, BPF saw nothing. */
	for (unsigned int i = 0; i < UMCG_SCX_NR_STATS; i++) {
		ASSERT_EQ(0, stat_delta(&before, &after, i))
			TH_LOG("global counter %s moved", umcg_scx_stat_name(i));
	}

	worker_stop(&w);
}

TEST_F_TIMEOUT(scx, detach_reports_unreg, 60)
{
	struct user_exit_info ei;
	struct worker w;
	pid_t tid;

	ASSERT_EQ(0, worker_start(&w, true));
	ASSERT_TRUE(worker_wait_done(&w));
	ASSERT_EQ(0, w.setsched_errno);
	tid = w.tid;
	ASSERT_EQ(1, ext_enabled(tid));
	ASSERT_FALSE(umcg_scx_exited(self->s));

	ASSERT_EQ(0, umcg_scx_detach(self->s));
	ASSERT_TRUE(umcg_scx_exited(self->s));
	umcg_scx_exit_info(self->s, &ei);
	TH_LOG("exit: %s (%d) code %lld reason \"%s\" msg \"%s\"",
	       umcg_scx_exit_kind_name(ei.kind), ei.kind,
	       (long long)ei.exit_code, ei.reason, ei.msg);
	ASSERT_EQ(UMCG_SCX_EXIT_UNREG, ei.kind);
	ASSERT_EQ(0, ei.exit_code);
	ASSERT_TRUE(state_becomes("disabled"));
	ASSERT_EQ(0, umcg_scx_probe());

	/* C7: the thread keeps policy 7, moves to the fair class, runs on. */
	ASSERT_EQ(SCHED_EXT, sched_getscheduler(tid));
	ASSERT_EQ(0, ext_enabled(tid));
	ASSERT_TRUE(worker_progresses(&w));

	ASSERT_EQ(-ENOTCONN, umcg_scx_detach(self->s));
	worker_stop(&w);
}

TEST_F_TIMEOUT(scx, second_scheduler_is_refused, 60)
{
	struct umcg_scx_stats before, after;
	struct umcg_scx *s2 = NULL;
	struct worker w;
	char buf[64];
	int ret;

	ASSERT_EQ(-EBUSY, umcg_scx_probe());
	ASSERT_EQ(-EALREADY, umcg_scx_attach(self->s));

	/* Loading is fine; registering a second root scheduler is not. */
	ASSERT_EQ(0, umcg_scx_open(&s2, NULL));
	ret = umcg_scx_attach(s2);
	umcg_scx_close(s2);
	ASSERT_EQ(-EBUSY, ret) TH_LOG("second attach: %s", strerror(-ret));

	/* The first one is untouched and still schedules. */
	ASSERT_FALSE(umcg_scx_exited(self->s)) TH_LOG("%s", exit_text(self->s));
	ASSERT_EQ(0, umcg_scx_sysfs_read("state", buf, sizeof(buf)));
	ASSERT_STREQ("enabled", buf);
	ASSERT_EQ(0, umcg_scx_sysfs_read("root/ops", buf, sizeof(buf)));
	ASSERT_STREQ(UMCG_SCX_OPS_NAME, buf);

	ASSERT_EQ(0, umcg_scx_read_stats(self->s, &before));
	ASSERT_EQ(0, worker_start(&w, true));
	ASSERT_TRUE(worker_wait_done(&w));
	ASSERT_EQ(0, w.setsched_errno);
	ASSERT_EQ(0, umcg_scx_read_stats(self->s, &after));
	ASSERT_GE(stat_delta(&before, &after, UMCG_SCX_STAT_RUNNING),
		  (__u64)2 * NR_ROUNDS);
	ASSERT_FALSE(umcg_scx_exited(self->s)) TH_LOG("%s", exit_text(self->s));
	worker_stop(&w);
}

/* A thread that spins on one CPU, in the fair class or in SCHED_EXT. */
struct spinner {
	pthread_t	thread;
	int		cpu;
	bool		ext;		/* sched_setscheduler(0, SCHED_EXT) */
	atomic_int	err;		/* errno of the setup, 0 on success */
	atomic_bool	stop;
	atomic_ulong	rounds;
};

static void *spinner_main(void *arg)
{
	struct spinner *sp = arg;
	struct sched_param param = { 0 };
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(sp->cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) ||
	    (sp->ext && sched_setscheduler(0, SCHED_EXT, &param))) {
		atomic_store(&sp->err, errno);
		return NULL;
	}
	while (!atomic_load_explicit(&sp->stop, memory_order_relaxed))
		atomic_fetch_add_explicit(&sp->rounds, 1, memory_order_relaxed);
	return NULL;
}

/*
 * A SCHED_EXT thread that never sleeps shares one CPU with a fair-class
 * thread that never sleeps, for twice the watchdog's timeout.  The fair
 * class comes first in partial mode, so the SCHED_EXT thread runs only
 * through the kernel's deadline server for sched_ext, which stops for good
 * if the scheduler's dispatch returns nothing while that thread is still
 * runnable (bpf/umcg_enforce.bpf.h, enf_keep_prev()).  It must keep running
 * (also in the second half, past one timeout) and the watchdog must not
 * eject the scheduler: before enf_keep_prev() it did, after about 6 s.
 */
TEST_F_TIMEOUT(scx, ext_spinner_beside_fair_spinner, 90)
{
	struct spinner fair = { .ext = false }, ext = { .ext = true };
	int cpu = (int)sysconf(_SC_NPROCESSORS_ONLN) - 1;
	unsigned long half;

	fair.cpu = ext.cpu = cpu > 0 ? cpu : 0;
	ASSERT_EQ(0, pthread_create(&fair.thread, NULL, spinner_main, &fair));
	usleep(200 * 1000);
	if (pthread_create(&ext.thread, NULL, spinner_main, &ext)) {
		atomic_store(&fair.stop, true);
		pthread_join(fair.thread, NULL);
		ASSERT_TRUE(false) TH_LOG("pthread_create failed");
	}
	usleep(UMCG_SCX_TIMEOUT_MS_DFL * 1000);
	half = atomic_load(&ext.rounds);
	usleep(UMCG_SCX_TIMEOUT_MS_DFL * 1000);
	atomic_store(&ext.stop, true);
	atomic_store(&fair.stop, true);
	pthread_join(ext.thread, NULL);
	pthread_join(fair.thread, NULL);

	ASSERT_EQ(0, fair.err) TH_LOG("fair spinner: %s", strerror(fair.err));
	ASSERT_EQ(0, ext.err) TH_LOG("SCHED_EXT spinner: %s", strerror(ext.err));
	TH_LOG("CPU %d: SCHED_EXT spinner %lu rounds in the first %d ms, %lu in all",
	       fair.cpu, half, UMCG_SCX_TIMEOUT_MS_DFL, atomic_load(&ext.rounds));
	ASSERT_FALSE(umcg_scx_exited(self->s)) TH_LOG("%s", exit_text(self->s));
	ASSERT_LT(half, atomic_load(&ext.rounds));
}

/*
 * The harness exits 0 even when every test skipped; exit status 4
 * (KSFT_SKIP) is what says "skipped" (cmake/guest_tests.cmake), also when
 * the program runs outside tools/vm/guest-run.  A kernel without sched_ext
 * must never look like a pass, so turn an all-skipped run into KSFT_SKIP.
 * Runs in the harness's process only: the per-test children _exit().
 */
static void exit_skip_if_all_skipped(void)
{
	if (ksft_get_xskip_cnt() > 0 && ksft_get_pass_cnt() == 0 &&
	    ksft_get_fail_cnt() == 0 && ksft_get_xfail_cnt() == 0 &&
	    ksft_get_xpass_cnt() == 0 && ksft_get_error_cnt() == 0) {
		fflush(NULL);
		_exit(KSFT_SKIP);
	}
}

int main(int argc, char **argv)
{
	atexit(exit_skip_if_all_skipped);
	return test_harness_run(argc, argv);
}
