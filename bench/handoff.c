// SPDX-License-Identifier: GPL-2.0
/*
 * handoff - a worker blocks in a plain read(); how long until another
 * worker runs on its core?
 *
 * libumcg: one managed core; worker A makes worker B runnable, notes the
 * time and blocks in read() on an empty pipe; B notes when it gets the
 * core.  On the user backend the gap is the monitor's detection delay; on
 * the kernel backends it is the block hand-off (C2).
 * Stock scheduler (role=base): A and B pinned to one CPU, B runnable
 * (sched_yield() loop) while A blocks in read().
 * read-interposed (user backend): the same, with A's read() the one
 * umcg-run interposes: handoff runs itself under umcg-run (-b user -c 1),
 * whose group it uses instead of setting one up, so that read() is the
 * preloaded library's (libumcg/preload/preload.c), as in any program
 * run under umcg-run.
 * Prints the median gap in microseconds over all samples; then, from one
 * more run with the kernel's counters on, context switches and system calls
 * per sample, less the harness's (main's, and B's report to it).
 */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <umcg.h>

#include "bench.h"

static struct bench_opts opts;
static int samples = 200;
static struct bench_count *counting;	/* the counted run: its counters */
static const char *umcg_run_path;	/* --umcg-run */
static bool child_failed;		/* the read-interposed run failed */
static bool interposed;			/* --interposed: in umcg-run's group */

struct handoff {
	int pipe[2];
	_Atomic uint64_t t0;	/* A is about to block; 0: not armed */
	_Atomic uint32_t done;	/* B measured: main may wake A */
	_Atomic int stop;
	sem_t go;		/* pthread: B waits here between samples */
	umcg_thread_t *a, *b;
	double *gap_us;
	int n;
	long harness_sys;	/* main's system calls in release_loop() */
	_Atomic long reports;	/* B's futex wakes of main */
};

/* Main: for each sample, waits for B's measurement, then wakes A. */
static void release_loop(struct handoff *h)
{
	char c = 'x';

	bench_count_start(counting);
	for (int i = 0; i < samples; i++) {
		while (!atomic_load(&h->done)) {
			bench_futex_wait(&h->done, 0);
			h->harness_sys++;
		}
		atomic_store(&h->done, 0);
		if (i == samples - 1)
			atomic_store(&h->stop, 1);
		if (write(h->pipe[1], &c, 1) != 1)
			bench_die("write: %s", strerror(errno));
		h->harness_sys++;
	}
	bench_count_stop(counting);
}

static void measured(struct handoff *h)
{
	uint64_t now = bench_now_ns(), t0 = atomic_exchange(&h->t0, 0);

	if (t0)
		h->gap_us[h->n++] = (now - t0) / 1e3;
	atomic_store(&h->done, 1);
	atomic_fetch_add(&h->reports, 1);
	bench_futex_wake(&h->done, 1);
}

static void block_in_read(struct handoff *h)
{
	char c;

	atomic_store(&h->t0, bench_now_ns());
	if (read(h->pipe[0], &c, 1) != 1)
		bench_die("read: %s", strerror(errno));
}

/* ---- stock scheduler ---- */

static void *pt_b(void *arg)
{
	struct handoff *h = arg;

	bench_pin_self(0);
	for (;;) {
		while (sem_wait(&h->go))
			;
		if (atomic_load(&h->stop))
			return NULL;
		while (!atomic_load(&h->t0))
			sched_yield();
		/* t0 is set just before read(): spin until A really sleeps. */
		measured(h);
	}
}

static void *pt_a(void *arg)
{
	struct handoff *h = arg;

	bench_pin_self(0);
	while (!atomic_load(&h->stop)) {
		sem_post(&h->go);
		block_in_read(h);
	}
	atomic_store(&h->stop, 1);
	sem_post(&h->go);
	return NULL;
}

/* ---- libumcg ---- */

static void *umcg_b(void *arg)
{
	struct handoff *h = arg;

	for (;;) {
		umcg_park();
		if (atomic_load(&h->stop))
			return NULL;
		if (atomic_load(&h->t0))
			measured(h);
	}
}

static void *umcg_a(void *arg)
{
	struct handoff *h = arg;

	while (!atomic_load(&h->stop)) {
		/* Back on a core of our own after the last read (C1, user). */
		umcg_yield();
		umcg_unpark(h->b);	/* B now waits for this core */
		block_in_read(h);
	}
	umcg_unpark(h->b);
	return NULL;
}

static double once(bool umcg, struct handoff *h)
{
	pthread_t a, b;
	int ret;

	memset(h, 0, sizeof(*h));
	h->gap_us = calloc(samples, sizeof(*h->gap_us));
	if (!h->gap_us || pipe(h->pipe))
		bench_die("out of memory or pipes");
	if (umcg) {
		struct timespec ms = { 0, 100000 };

		ret = umcg_spawn(&h->b, NULL, umcg_b, h);
		while (!ret && umcg_thread_state(h->b) != UMCG_STATE_PARKED)
			nanosleep(&ms, NULL);
		if (!ret)
			ret = umcg_spawn(&h->a, NULL, umcg_a, h);
		if (ret)
			bench_die("umcg_spawn: %s", strerror(-ret));
	} else {
		sem_init(&h->go, 0, 0);
		if (pthread_create(&b, NULL, pt_b, h) || pthread_create(&a, NULL, pt_a, h))
			bench_die("pthread_create failed");
	}
	release_loop(h);
	if (umcg) {
		umcg_join(h->a, NULL);
		umcg_join(h->b, NULL);
	} else {
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		sem_destroy(&h->go);
	}
	close(h->pipe[0]);
	close(h->pipe[1]);
	return bench_median(h->gap_us, h->n);
}

/*
 * The counts, from a run of their own.  Not the operation, subtracted: all
 * of main's context switches and system calls (it only paces the samples)
 * and B's futex wake of main after each measurement.
 */
static void counted(bool umcg, const char *impl, const char *backend, const char *variant,
		    const char *role)
{
	struct bench_count c;
	struct handoff h;

	if (umcg)
		bench_umcg_fini();
	bench_count_begin(&c, umcg ? backend : NULL, 1);
	counting = &c;
	once(umcg, &h);
	counting = NULL;
	bench_count_end(&c, umcg ? backend : NULL);
	free(h.gap_us);
	bench_count_result(&c, "handoff", impl, backend, variant, "-", role, samples,
			   c.self_ctxsw, h.harness_sys + atomic_load(&h.reports));
	if (umcg)
		bench_umcg_init(backend, 1);
}

static void run(bool umcg, const char *impl, const char *backend, const char *variant,
		const char *role)
{
	struct umcg_stats st0 = { 0 }, st1 = { 0 };
	struct handoff h;
	double med[1000], p90[1000];

	if (umcg)
		umcg_stats(&st0);
	for (int r = 0; r < opts.reps; r++) {
		med[r] = once(umcg, &h);
		p90[r] = bench_percentile(h.gap_us, h.n, 90);
		free(h.gap_us);
	}
	bench_result("handoff", impl, backend, variant, "-", "us_to_next", true,
		     bench_median(med, opts.reps), (long)opts.reps * samples, role);
	bench_result("handoff", impl, backend, variant, "-", "us_to_next_p90", true,
		     bench_median(p90, opts.reps), (long)opts.reps * samples, role);
	/*
	 * Kernel backends: blocks whose core the kernel gave to the staged
	 * worker itself (one context switch each; the others go through the
	 * server: two).
	 */
	if (umcg && strcmp(backend, "user") && !umcg_stats(&st1) && st1.blocks > st0.blocks)
		bench_result("handoff", impl, backend, variant, "-", "kernel_handoffs_per_block",
			     false, (double)(st1.handoffs - st0.handoffs) /
			     (double)(st1.blocks - st0.blocks),
			     (long)(st1.blocks - st0.blocks), role);
	/* The counted run sets up a group of its own: not in umcg-run's. */
	if (!interposed)
		counted(umcg, impl, backend, variant, role);
}

/*
 * read-interposed: this program again, under umcg-run with the user
 * backend and one core, with --interposed: its lines are the child's.
 */
static void run_interposed(void)
{
	char self[PATH_MAX], dflt[PATH_MAX + 32], nstr[16], rstr[16];
	const char *run = umcg_run_path;
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int status;
	pid_t pid;

	if (len <= 0)
		bench_die("readlink /proc/self/exe: %s", strerror(errno));
	self[len] = '\0';
	if (!run) {
		char dir[PATH_MAX];

		memcpy(dir, self, len + 1);
		snprintf(dflt, sizeof(dflt), "%s/../tools/umcg-run", dirname(dir));
		run = dflt;
	}
	if (access(run, X_OK)) {
		bench_result_fail("handoff", "umcg", "user", "read-interposed",
				  "no umcg-run here (--umcg-run)");
		return;
	}
	snprintf(nstr, sizeof(nstr), "%d", samples);
	snprintf(rstr, sizeof(rstr), "%d", opts.reps);
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		bench_die("fork: %s", strerror(errno));
	if (pid == 0) {
		execl(run, run, "-b", "user", "-c", "1", "--", self, "--interposed",
		      "--no-pthread", "-n", nstr, "-r", rstr, opts.smoke ? "--smoke" : NULL,
		      (char *)NULL);
		fprintf(stderr, "%s: cannot run %s: %s\n", bench_prog, run, strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		bench_die("waitpid: %s", strerror(errno));
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		bench_result_fail("handoff", "umcg", "user", "read-interposed",
				  "the run under umcg-run failed");
		child_failed = true;
	}
}

/* --interposed: in the group umcg-run's library set up; main leaves it. */
static int interposed_main(void)
{
	const char *backend = umcg_backend_name();
	int ret;

	if (!umcg_self() || !backend)
		bench_usage_error("--interposed: not a worker of a group (run under umcg-run)");
	ret = umcg_detach();
	if (ret)
		bench_die("umcg_detach: %s", strerror(-ret));
	interposed = true;
	run(true, "umcg", backend, "read-interposed", NULL);
	fflush(stdout);
	return 0;
}

static void usage(void)
{
	printf("Usage: %s [OPTIONS]\n\n"
	       "A worker blocks in a plain read(); prints the time until another\n"
	       "worker runs on its core (median and 90th percentile, us), for two\n"
	       "threads pinned to one CPU under the stock scheduler (the baseline)\n"
	       "and for libumcg with one managed core on each backend (variant\n"
	       "read: a read() libumcg does not see).  With the user backend also\n"
	       "variant read-interposed: the read() umcg-run interposes, which\n"
	       "announces the call to libumcg; for it this program runs itself\n"
	       "under umcg-run -b user -c 1 and measures in umcg-run's group.\n\n"
	       "Options:\n"
	       "  -n, --samples N      blocks per repetition (default 200)\n"
	       "      --umcg-run PATH  umcg-run for read-interposed (default: the\n"
	       "                       build tree's, ../tools/umcg-run from here)\n"
	       "      --interposed     measure read-interposed only, in this process,\n"
	       "                       which must run under umcg-run (the way the\n"
	       "                       program runs itself for that variant)\n"
	       BENCH_COMMON_HELP, bench_prog);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "samples", required_argument, NULL, 'n' },
		{ "umcg-run", required_argument, NULL, 'U' },
		{ "interposed", no_argument, NULL, 'I' },
		BENCH_COMMON_LONGOPTS, { 0 }
	};
	bool interposed = false;
	const char *names[BENCH_MAX_BACKENDS];
	char why[BENCH_MAX_BACKENDS][200];
	int c, nb;

	bench_opts_init(&opts, "handoff", argv);
	while ((c = getopt_long(argc, argv, "n:" BENCH_COMMON_SHORTOPTS, lo, NULL)) != -1) {
		if (c == 'h') {
			usage();
			return 0;
		}
		if (c == 'n')
			samples = bench_parse_long("--samples", optarg, 1, 1000000);
		else if (c == 'U')
			umcg_run_path = optarg;
		else if (c == 'I')
			interposed = true;
		else if (!bench_opt(&opts, c, optarg))
			bench_usage_error("unknown option '%s'", argv[optind - 1]);
	}
	if (optind < argc)
		bench_usage_error("unexpected argument '%s'", argv[optind]);
	if (opts.smoke)
		samples = 10;
	if (interposed)
		return interposed_main();

	nb = bench_backends(&opts, names, why);
	if (!opts.no_pthread)
		run(false, "pthread", "stock", "yield-pinned", "base");
	for (int i = 0; i < nb; i++) {
		if (why[i][0]) {
			bench_result_na("handoff", names[i], why[i]);
			continue;
		}
		bench_umcg_init(names[i], 1);
		run(true, "umcg", names[i], "read", NULL);
		bench_umcg_fini();
		if (!strcmp(names[i], "user"))
			run_interposed();
	}
	return child_failed;
}
