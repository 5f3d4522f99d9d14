// SPDX-License-Identifier: GPL-2.0
/*
 * native - blocking inside native code: the workload where real kernel
 * threads must beat goroutines and virtual threads (issue 17).
 *
 * N tasks (N = a multiple of the managed cores) each repeat one step of
 * native_lib.c: compute C us, then block in the kernel for B us (variant
 * read: a read() of a pipe the feeder thread writes B us later; mutex: a
 * pthread_mutex_lock() of a mutex the partner task holds for its own B us
 * block; fault: a missing-page fault on a shared memfd page that the feeder
 * fills B us later).  The routine knows nothing of libumcg: libumcg does not
 * see these blocks, only the kernel does.
 *
 * Implementations: N pthreads under the stock scheduler (role=base); N
 * libumcg workers on every managed core, on each backend.  bench/peers run
 * the same routine from goroutines (cgo) and Java virtual threads (JNI).
 * Per case: completed steps (tasks) per second, the cores kept busy
 * (process CPU time / wall time over the window), and from one more run
 * with the kernel's counters on, context switches and system calls per
 * step.  libumcg also: blocks per step (umcg_stats: blocks whose core went
 * to another worker).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <umcg.h>

#include "bench.h"
#include "native_lib.h"

#define MAX_LIST	8
#define TASK_STACK	(256 << 10)

static struct bench_opts opts;

struct cfg {
	int variant, mult, n;
	long c_us, b_us;
	char kase[48];
};

struct window {
	double tps, busy, ops;
	uint64_t steps;		/* all steps of the run, warm-up included */
};

static void *task(void *arg)
{
	int i = (int)(intptr_t)arg;

	while (!nb_step(i))
		;
	return NULL;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { ns / 1000000000ull, ns % 1000000000ull };

	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR)
		;
}

/*
 * One run: N tasks, a warm-up of a fifth of the window (at least 10 ms),
 * then the window.  false (and @why) if the workload could not be set up.
 */
static bool once(bool umcg, const struct cfg *k, struct bench_count *cnt, struct window *w,
		 char *why, size_t len)
{
	uint64_t d0, d1, c0, c1, c2, w0, w1, w2, warm = opts.ms * 2e5;
	long x0, x1, x2;
	pthread_t *pt = NULL;
	umcg_thread_t **ut = NULL;
	pthread_attr_t pa;
	struct umcg_attr ua = { .size = sizeof(ua), .core = -1, .stack_size = TASK_STACK };
	int ret;

	ret = nb_setup(k->variant, k->n, k->c_us, k->b_us, why, len);
	if (ret)
		return false;
	if (umcg)
		ut = calloc(k->n, sizeof(*ut));
	else
		pt = calloc(k->n, sizeof(*pt));
	if (!ut && !pt)
		bench_die("out of memory");
	pthread_attr_init(&pa);
	pthread_attr_setstacksize(&pa, TASK_STACK);
	for (int i = 0; i < k->n; i++) {
		if (umcg)
			ret = -umcg_spawn(&ut[i], &ua, task, (void *)(intptr_t)i);
		else
			ret = pthread_create(&pt[i], &pa, task, (void *)(intptr_t)i);
		if (ret)
			bench_die("%s of task %d: %s", umcg ? "umcg_spawn" : "pthread_create", i,
				  strerror(ret));
	}
	pthread_attr_destroy(&pa);
	sleep_ns(warm > 10000000 ? warm : 10000000);
	nb_snapshot(&d0, &c0, &w0, &x0);
	bench_count_start(cnt);
	sleep_ns(opts.ms * 1e6);
	bench_count_stop(cnt);
	nb_snapshot(&d1, &c1, &w1, &x1);
	nb_stop();
	for (int i = 0; i < k->n; i++) {
		if (umcg)
			umcg_join(ut[i], NULL);
		else
			pthread_join(pt[i], NULL);
	}
	nb_snapshot(&w->steps, &c2, &w2, &x2);
	ret = nb_teardown();
	free(ut);
	free(pt);
	if (ret)
		bench_die("the native step failed: %s", strerror(-ret));
	w->ops = (double)(d1 - d0);
	w->tps = w->ops / ((w1 - w0) / 1e9);
	w->busy = (double)(c1 - c0) / (double)(w1 - w0);
	return true;
}

static void measure(const struct cfg *k, const char *backend)
{
	bool umcg = backend != NULL;
	const char *impl = umcg ? "umcg" : "pthread";
	const char *bk = umcg ? backend : "stock";
	const char *role = umcg ? NULL : "base";
	const char *variant = nb_variant_name(k->variant);
	struct umcg_stats st0 = { 0 }, st1 = { 0 };
	double tps[1000], busy[1000];
	uint64_t steps = 0;
	struct bench_count c;
	struct window w = { 0 };
	char why[200];

	bench_progress("%s %s %s %s (N=%d)", impl, bk, variant, k->kase, k->n);
	if (umcg) {
		bench_umcg_init(backend, 0);
		umcg_stats(&st0);
	}
	for (int r = 0; r < opts.reps; r++) {
		if (!once(umcg, k, NULL, &w, why, sizeof(why))) {
			bench_result_fail("native", impl, bk, variant, why);
			if (umcg)
				bench_umcg_fini();
			return;
		}
		tps[r] = w.tps;
		busy[r] = w.busy;
		steps += w.steps;
	}
	bench_result_why("native", impl, bk, variant, k->kase, "tasks_per_s", false,
			 bench_median(tps, opts.reps), opts.reps, role,
			 nb_feeder_fifo ? NULL :
			 "the feeder is not SCHED_FIFO here (no permission): its wake-ups queue with the tasks");
	bench_result("native", impl, bk, variant, k->kase, "cores_busy", false,
		     bench_median(busy, opts.reps), opts.reps, role);
	if (umcg) {
		/* Blocks whose core went to another worker (the kernel saw it,
		 * or, user backend, the monitor did). */
		if (!umcg_stats(&st1) && steps)
			bench_result("native", impl, bk, variant, k->kase, "blocks_per_op", false,
				     (double)(st1.blocks - st0.blocks) / (double)steps,
				     (long)steps, role);
		bench_umcg_fini();
	}
	bench_count_begin(&c, backend, 0);
	if (!once(umcg, k, &c, &w, why, sizeof(why)))
		bench_count_fail(&c, why);
	bench_count_end(&c, backend);
	/* Not the workload's: main's own sleeps in the window. */
	bench_count_result(&c, "native", impl, bk, variant, k->kase, role, w.ops,
			   c.self_ctxsw, 0);
}

static void usage(void)
{
	printf("Usage: %s [OPTIONS]\n\n"
	       "N tasks each repeat: compute C us, then block in native code for B us\n"
	       "(a C routine libumcg does not see).  Prints tasks (steps) per second,\n"
	       "the cores kept busy (process CPU time / wall time), blocks per step\n"
	       "(libumcg) and context switches and system calls per step, for\n"
	       "pthreads under the stock scheduler (the baseline) and libumcg on\n"
	       "every managed core on each backend.\n\n"
	       "Options:\n"
	       "  -V, --variants LIST  read,mutex,fault (default all):\n"
	       "                       read:  read() of a pipe a feeder thread writes\n"
	       "                              B us later\n"
	       "                       mutex: pthread_mutex_lock() of a mutex the\n"
	       "                              partner task holds for its B us read\n"
	       "                       fault: a missing-page fault on a memfd page a\n"
	       "                              feeder fills B us later (userfaultfd)\n"
	       "  -m, --mult LIST      N as multiples of the managed cores\n"
	       "                       (default 4,32,256; --smoke: 4)\n"
	       "  -c, --cb LIST        C/B pairs in us (default 10/100,100/1000;\n"
	       "                       --smoke: 10/100)\n"
	       BENCH_COMMON_HELP, bench_prog);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "variants", required_argument, NULL, 'V' },
		{ "mult", required_argument, NULL, 'm' },
		{ "cb", required_argument, NULL, 'c' },
		BENCH_COMMON_LONGOPTS, { 0 }
	};
	const char *names[BENCH_MAX_BACKENDS];
	char why[BENCH_MAX_BACKENDS][200];
	char mlist[128] = "", cblist[256] = "", vlist[64] = "read,mutex,fault";
	long mults[MAX_LIST], cs[MAX_LIST], bs[MAX_LIST];
	int variants[NB_NR_VARIANTS], nv = 0, nm, ncb = 0, c, nb, cores;
	char *sv, *t;

	bench_opts_init(&opts, "native", argv);
	while ((c = getopt_long(argc, argv, "V:m:c:" BENCH_COMMON_SHORTOPTS, lo, NULL)) != -1) {
		if (c == 'h') {
			usage();
			return 0;
		}
		if (c == 'V')
			snprintf(vlist, sizeof(vlist), "%s", optarg);
		else if (c == 'm')
			snprintf(mlist, sizeof(mlist), "%s", optarg);
		else if (c == 'c')
			snprintf(cblist, sizeof(cblist), "%s", optarg);
		else if (!bench_opt(&opts, c, optarg))
			bench_usage_error("unknown option '%s'", argv[optind - 1]);
	}
	if (optind < argc)
		bench_usage_error("unexpected argument '%s'", argv[optind]);
	if (!mlist[0])
		snprintf(mlist, sizeof(mlist), "%s", opts.smoke ? "4" : "4,32,256");
	if (!cblist[0])
		snprintf(cblist, sizeof(cblist), "%s", opts.smoke ? "10/100" : "10/100,100/1000");
	for (t = strtok_r(vlist, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
		int v = nb_variant(t);

		if (v < 0)
			bench_usage_error("--variants: unknown variant '%s' (expected read, mutex, fault)",
					  t);
		if (nv == NB_NR_VARIANTS)
			bench_usage_error("--variants: at most %d", NB_NR_VARIANTS);
		variants[nv++] = v;
	}
	if (!nv)
		bench_usage_error("--variants: empty list");
	nm = bench_parse_list("--mult", mlist, mults, MAX_LIST, 1, 1024);
	for (t = strtok_r(cblist, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
		char *slash = strchr(t, '/');

		if (!slash)
			bench_usage_error("--cb: expected C/B, got '%s'", t);
		if (ncb == MAX_LIST)
			bench_usage_error("--cb: at most %d pairs", MAX_LIST);
		*slash = '\0';
		cs[ncb] = bench_parse_long("--cb (C)", t, 0, 1000000);
		bs[ncb] = bench_parse_long("--cb (B)", slash + 1, 1, 1000000);
		ncb++;
	}
	if (!ncb)
		bench_usage_error("--cb: empty list");
	cores = bench_nr_cpus();
	bench_raise_nofile();
	bench_progress("%d cores, busy loop %.1f iterations/us", cores, nb_iters_per_us());

	nb = bench_backends(&opts, names, why);
	for (int i = 0; i < nb; i++)
		if (why[i][0])
			bench_result_na("native", names[i], why[i]);
	for (int m = 0; m < nm; m++)
		for (int j = 0; j < ncb; j++)
			for (int v = 0; v < nv; v++) {
				struct cfg k = {
					.variant = variants[v], .mult = (int)mults[m],
					.n = (int)mults[m] * cores, .c_us = cs[j], .b_us = bs[j],
				};

				if (k.n > NB_MAX_TASKS)
					bench_usage_error("--mult: %d tasks, at most %d", k.n,
							  NB_MAX_TASKS);
				snprintf(k.kase, sizeof(k.kase), "x%d-c%ld-b%ld", k.mult, k.c_us,
					 k.b_us);
				if (!opts.no_pthread)
					measure(&k, NULL);
				for (int i = 0; i < nb; i++)
					if (!why[i][0])
						measure(&k, names[i]);
			}
	return 0;
}
