// SPDX-License-Identifier: GPL-2.0
/*
 * wakeup - schbench-style wake-up latency with more runnable threads than
 * cores.
 *
 * A message thread (a plain thread in both cases) wakes W workers at once,
 * noting the time of each wake; each worker notes when it runs, spins for
 * the work time and sleeps again; when all are done the message thread
 * thinks for a while and starts the next round.  The latency is the time
 * from a wake to the worker running: the wake path plus the queueing behind
 * the other workers.  Stock scheduler (role=base): futex wait/wake, all
 * threads unpinned.  libumcg: workers park, the message thread unparks
 * them; all cores managed.  Prints p50, p99 and p99.9 in microseconds over
 * every wake of every repetition; then, from one more run with the
 * kernel's counters on, context switches and system calls per wake-up, less
 * the harness's (the rounds' pacing).
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <umcg.h>

#include "bench.h"

#define MAX_W	1024

static struct bench_opts opts;
static int nr_workers;
static int work_us = 50, think_us = 200;

struct wk {
	_Atomic uint32_t seq;		/* bumped by each wake */
	_Atomic uint64_t woken_ns;
	umcg_thread_t *t;
	int id;
} __attribute__((aligned(64)));

static struct wk wk[MAX_W];
static _Atomic uint32_t round_done;	/* workers done in this round */
static _Atomic int stop;
static bool use_umcg;
static double *lat;			/* latency samples, us */
static _Atomic size_t nr_lat;
static size_t max_lat;
static struct bench_count *counting;	/* the counted run: its counters */
static long rounds, harness_sys;	/* in its window: rounds, pacing calls */

static void wait_for_wake(struct wk *w, uint32_t seen)
{
	while (atomic_load(&w->seq) == seen) {
		if (use_umcg)
			umcg_park();
		else
			bench_futex_wait(&w->seq, seen);
	}
}

static void *worker(void *arg)
{
	struct wk *w = arg;
	uint32_t seen = 0;

	for (;;) {
		wait_for_wake(w, seen);
		seen = atomic_load(&w->seq);
		if (atomic_load(&stop))
			return NULL;
		uint64_t now = bench_now_ns();
		size_t i = atomic_fetch_add(&nr_lat, 1);

		if (i < max_lat)
			lat[i] = (now - atomic_load(&w->woken_ns)) / 1e3;
		bench_spin_ns(work_us * 1000ULL);
		if (atomic_fetch_add(&round_done, 1) + 1 == (uint32_t)nr_workers)
			bench_futex_wake(&round_done, 1);
	}
}

static void wake(struct wk *w)
{
	atomic_store(&w->woken_ns, bench_now_ns());
	atomic_fetch_add(&w->seq, 1);
	if (use_umcg)
		umcg_unpark(w->t);
	else
		bench_futex_wake(&w->seq, 1);
}

static void once(void)
{
	pthread_t th[MAX_W];
	struct timespec think = { 0, think_us * 1000L };
	uint64_t end;
	int ret;

	memset(wk, 0, sizeof(wk));
	atomic_store(&stop, 0);
	for (int i = 0; i < nr_workers; i++) {
		wk[i].id = i;
		if (use_umcg)
			ret = umcg_spawn(&wk[i].t, NULL, worker, &wk[i]);
		else
			ret = -pthread_create(&th[i], NULL, worker, &wk[i]);
		if (ret)
			bench_die("spawn: %s", strerror(-ret));
	}
	rounds = harness_sys = 0;
	bench_count_start(counting);
	end = bench_now_ns() + opts.ms * 1e6;
	while (bench_now_ns() < end && atomic_load(&nr_lat) < max_lat) {
		uint32_t d;

		atomic_store(&round_done, 0);
		for (int i = 0; i < nr_workers; i++)
			wake(&wk[i]);
		while ((d = atomic_load(&round_done)) < (uint32_t)nr_workers) {
			bench_futex_wait(&round_done, d);
			harness_sys++;
		}
		nanosleep(&think, NULL);
		/* That sleep, and the last worker's wake of this thread. */
		harness_sys += 2;
		rounds++;
	}
	bench_count_stop(counting);
	atomic_store(&stop, 1);
	for (int i = 0; i < nr_workers; i++) {
		wake(&wk[i]);
		if (use_umcg)
			umcg_join(wk[i].t, NULL);
		else
			pthread_join(th[i], NULL);
	}
}

/*
 * The counts, from a run of their own.  Not the operation, subtracted: the
 * message thread's voluntary context switches (its sleeps between rounds)
 * and the rounds' pacing system calls (harness_sys).
 */
static void counted(const char *impl, const char *backend, const char *kase,
		    const char *role)
{
	struct bench_count c;

	if (use_umcg)
		bench_umcg_fini();
	bench_count_begin(&c, use_umcg ? backend : NULL, 0);
	counting = &c;
	atomic_store(&nr_lat, 0);
	once();
	counting = NULL;
	bench_count_end(&c, use_umcg ? backend : NULL);
	bench_count_result(&c, "wakeup", impl, backend, use_umcg ? "park" : "futex", kase,
			   role, (double)rounds * nr_workers, c.self_vol, harness_sys);
	if (use_umcg)
		bench_umcg_init(backend, 0);
}

static void run(bool umcg, const char *impl, const char *backend, const char *role)
{
	size_t n;
	char kase[32];

	use_umcg = umcg;
	atomic_store(&nr_lat, 0);
	for (int r = 0; r < opts.reps; r++)
		once();
	n = atomic_load(&nr_lat);
	if (n > max_lat)
		n = max_lat;
	snprintf(kase, sizeof(kase), "w%d", nr_workers);
	bench_result("wakeup", impl, backend, umcg ? "park" : "futex", kase, "p50_us", true,
		     bench_percentile(lat, n, 50), n, role);
	bench_result("wakeup", impl, backend, umcg ? "park" : "futex", kase, "p99_us", true,
		     bench_percentile(lat, n, 99), n, role);
	bench_result("wakeup", impl, backend, umcg ? "park" : "futex", kase, "p999_us", true,
		     bench_percentile(lat, n, 99.9), n, role);
	counted(impl, backend, kase, role);
}

static void usage(void)
{
	printf("Usage: %s [OPTIONS]\n\n"
	       "schbench-style wake-up latency: a message thread wakes W workers\n"
	       "(more than there are CPUs), each spins for the work time; prints\n"
	       "p50, p99 and p99.9 of the time from wake to running (us), for\n"
	       "futex wait/wake (the baseline) and libumcg park/unpark.\n\n"
	       "Options:\n"
	       "  -w, --workers N      workers (default 4 per CPU, max %d)\n"
	       "      --work-us US     work per wake-up (default 50)\n"
	       "      --think-us US    pause between rounds (default 200)\n"
	       BENCH_COMMON_HELP, bench_prog, MAX_W);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "workers", required_argument, NULL, 'w' },
		{ "work-us", required_argument, NULL, 'W' },
		{ "think-us", required_argument, NULL, 'T' },
		BENCH_COMMON_LONGOPTS, { 0 }
	};
	const char *names[BENCH_MAX_BACKENDS];
	char why[BENCH_MAX_BACKENDS][200];
	int c, nb;

	bench_opts_init(&opts, "wakeup", argv);
	opts.ms = 1000;
	nr_workers = 4 * bench_nr_cpus();
	while ((c = getopt_long(argc, argv, "w:" BENCH_COMMON_SHORTOPTS, lo, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage();
			return 0;
		case 'w':
			nr_workers = bench_parse_long("--workers", optarg, 1, MAX_W);
			break;
		case 'W':
			work_us = bench_parse_long("--work-us", optarg, 0, 1000000);
			break;
		case 'T':
			think_us = bench_parse_long("--think-us", optarg, 0, 999999);
			break;
		default:
			if (!bench_opt(&opts, c, optarg))
				bench_usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		bench_usage_error("unexpected argument '%s'", argv[optind]);
	if (nr_workers > MAX_W)
		nr_workers = MAX_W;
	max_lat = 1000000;
	lat = malloc(max_lat * sizeof(*lat));
	if (!lat)
		bench_die("out of memory");

	nb = bench_backends(&opts, names, why);
	if (!opts.no_pthread)
		run(false, "pthread", "stock", "base");
	for (int i = 0; i < nb; i++) {
		if (why[i][0]) {
			bench_result_na("wakeup", names[i], why[i]);
			continue;
		}
		bench_umcg_init(names[i], 0);
		run(true, "umcg", names[i], NULL);
		bench_umcg_fini();
	}
	return 0;
}
