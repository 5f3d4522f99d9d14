// SPDX-License-Identifier: GPL-2.0
/*
 * scale - spawn N workers that stay alive (waiting), then release and join
 * them all, for growing N: spawn and join rates, and the resident memory
 * each live worker costs, user and kernel side, from the kernel's own
 * accounting (VmRSS of /proc/self/status; KernelStack, Slab and PageTables
 * of /proc/meminfo, which are machine-wide: other activity is noise).
 *
 * Stock scheduler (role=base): pthread_create() and a futex wait.
 * libumcg: umcg_spawn() and umcg_park(), all cores managed.  Both use the
 * same stack size.  The ladder stops at the first N that fails (the
 * reason is printed on stderr), that would not fit in the free memory or
 * the thread limits, or that would take longer than the time budget; the
 * largest N that worked is printed as metric max_n.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <umcg.h>

#include "bench.h"

static struct bench_opts opts;
static long stack_kib = 64;
static double budget_s = 60;
static _Atomic long alive;
static _Atomic uint32_t release;
static bool use_umcg;

struct mem {
	long rss, kstack, slab, pt, avail;	/* KiB */
};

static long field(const char *path, const char *name)
{
	char line[256];
	size_t len = strlen(name);
	long v = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, len) && line[len] == ':') {
			v = strtol(line + len + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

static long read_long(const char *path)
{
	long v = -1;
	FILE *f = fopen(path, "r");

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void mem_read(struct mem *m)
{
	m->rss = field("/proc/self/status", "VmRSS");
	m->kstack = field("/proc/meminfo", "KernelStack");
	m->slab = field("/proc/meminfo", "Slab");
	m->pt = field("/proc/meminfo", "PageTables");
	m->avail = field("/proc/meminfo", "MemAvailable");
}

static void *worker(void *arg)
{
	atomic_fetch_add(&alive, 1);
	if (atomic_load(&alive) == (long)(uintptr_t)arg)
		bench_futex_wake((_Atomic uint32_t *)&alive, 1);
	while (!atomic_load(&release)) {
		if (use_umcg)
			umcg_park();
		else
			bench_futex_wait(&release, 0);
	}
	return NULL;
}

struct step {
	double spawn_per_s, join_per_s, kib, kib_user, kib_kernel;
	double secs;
	int err;
};

static void step(long n, struct step *st)
{
	pthread_attr_t pa;
	struct umcg_attr ua = { .size = sizeof(ua), .core = -1,
				.stack_size = stack_kib * 1024 };
	struct timespec ms = { 0, 1000000 };
	umcg_thread_t **ut = NULL;
	pthread_t *pt = NULL;
	struct mem m0, m1;
	uint64_t t0, t1, t2;
	long i, spawned = 0;

	memset(st, 0, sizeof(*st));
	if (use_umcg)
		ut = calloc(n, sizeof(*ut));
	else
		pt = calloc(n, sizeof(*pt));
	if (!ut && !pt)
		bench_die("out of memory");
	pthread_attr_init(&pa);
	pthread_attr_setstacksize(&pa, stack_kib * 1024);
	atomic_store(&alive, 0);
	atomic_store(&release, 0);
	mem_read(&m0);

	t0 = bench_now_ns();
	for (i = 0; i < n; i++) {
		int ret;

		if (use_umcg)
			ret = umcg_spawn(&ut[i], &ua, worker, (void *)(uintptr_t)n);
		else
			ret = -pthread_create(&pt[i], &pa, worker, (void *)(uintptr_t)n);
		if (ret) {
			st->err = ret;
			break;
		}
		spawned++;
	}
	/* Wait until every worker runs (and waits), at most 10 s more. */
	for (int w = 0; atomic_load(&alive) < spawned && w < 10000; w++)
		nanosleep(&ms, NULL);
	t1 = bench_now_ns();
	mem_read(&m1);

	atomic_store(&release, 1);
	if (use_umcg) {
		for (i = 0; i < spawned; i++)
			umcg_unpark(ut[i]);
	} else {
		bench_futex_wake(&release, INT_MAX);
	}
	for (i = 0; i < spawned; i++) {
		if (use_umcg)
			umcg_join(ut[i], NULL);
		else
			pthread_join(pt[i], NULL);
	}
	t2 = bench_now_ns();
	pthread_attr_destroy(&pa);
	free(ut);
	free(pt);
	if (!st->err && atomic_load(&alive) < n)
		st->err = -ETIMEDOUT;
	st->spawn_per_s = spawned / ((t1 - t0) / 1e9);
	st->join_per_s = spawned / ((t2 - t1) / 1e9);
	st->kib_user = (double)(m1.rss - m0.rss) / n;
	st->kib_kernel = (double)(m1.kstack - m0.kstack + m1.slab - m0.slab +
				  m1.pt - m0.pt) / n;
	st->kib = st->kib_user + st->kib_kernel;
	st->secs = (t2 - t0) / 1e9;
}

/* Why @n should not be tried, given the previous step; NULL if it may. */
static const char *too_big(long n, const struct step *prev, long prev_n)
{
	static char why[200];
	long pid_max = read_long("/proc/sys/kernel/pid_max");
	long threads_max = read_long("/proc/sys/kernel/threads-max");
	long maps = read_long("/proc/sys/vm/max_map_count");
	long avail = field("/proc/meminfo", "MemAvailable");

	if (pid_max > 0 && n + 1000 > pid_max)
		snprintf(why, sizeof(why), "kernel.pid_max is %ld (raise: sysctl kernel.pid_max=%ld)",
			 pid_max, 2 * n + 1000);
	else if (threads_max > 0 && n + 1000 > threads_max)
		snprintf(why, sizeof(why),
			 "kernel.threads-max is %ld (raise: sysctl kernel.threads-max=%ld)",
			 threads_max, 2 * n + 1000);
	else if (maps > 0 && 2 * n + 1000 > maps)
		snprintf(why, sizeof(why),
			 "vm.max_map_count is %ld, 2 maps per thread stack (raise: sysctl vm.max_map_count=%ld)",
			 maps, 4 * n + 1000);
	else if (prev && prev->kib > 0 && avail > 0 && prev->kib * n > 0.7 * avail)
		snprintf(why, sizeof(why), "would need about %.0f MiB, %ld MiB available",
			 prev->kib * n / 1024, avail / 1024);
	else if (prev && prev->secs * n / prev_n > budget_s)
		snprintf(why, sizeof(why), "would take about %.0f s, over the %.0f s budget",
			 prev->secs * n / prev_n, budget_s);
	else
		return NULL;
	return why;
}

static void run(bool umcg, const char *impl, const char *backend, const char *role,
		const long *ladder, int nl)
{
	struct step st, prev;
	long best = 0, prev_n = 0;
	char variant[32], stopped[256] = "";

	use_umcg = umcg;
	snprintf(variant, sizeof(variant), "stack%ldk", stack_kib);
	for (int i = 0; i < nl; i++) {
		const char *why = too_big(ladder[i], best ? &prev : NULL, prev_n);
		char kase[32];

		if (why) {
			bench_progress("%s/%s: not trying N=%ld: %s", impl, backend, ladder[i], why);
			snprintf(stopped, sizeof(stopped), "not tried N=%ld: %s", ladder[i], why);
			break;
		}
		bench_progress("%s/%s: N=%ld", impl, backend, ladder[i]);
		step(ladder[i], &st);
		if (st.err) {
			/* pthread_create()'s EAGAIN: a thread limit, not memory. */
			const char *hint = st.err == -EAGAIN ?
				" (RLIMIT_NPROC: ulimit -u; or kernel.threads-max)" : "";

			bench_progress("%s/%s: N=%ld failed: %s%s", impl, backend, ladder[i],
				       strerror(-st.err), hint);
			snprintf(stopped, sizeof(stopped), "N=%ld failed: %s%s", ladder[i],
				 strerror(-st.err), hint);
			break;
		}
		snprintf(kase, sizeof(kase), "n%ld", ladder[i]);
		bench_result("scale", impl, backend, variant, kase, "spawn_per_s", false,
			     st.spawn_per_s, ladder[i], role);
		bench_result("scale", impl, backend, variant, kase, "join_per_s", false,
			     st.join_per_s, ladder[i], role);
		bench_result("scale", impl, backend, variant, kase, "kib_per_worker", true,
			     st.kib, ladder[i], role);
		bench_result("scale", impl, backend, variant, kase, "kib_user", true,
			     st.kib_user, ladder[i], role);
		bench_result("scale", impl, backend, variant, kase, "kib_kernel", true,
			     st.kib_kernel, ladder[i], role);
		best = ladder[i];
		prev = st;
		prev_n = ladder[i];
	}
	bench_result_why("scale", impl, backend, variant, "-", "max_n", false, best, best, role,
			 stopped[0] ? stopped : NULL);
}

static void usage(void)
{
	printf("Usage: %s [OPTIONS]\n\n"
	       "Spawns N live workers, then releases and joins them, for each N of\n"
	       "the ladder until one fails; prints spawn and join rates, KiB per\n"
	       "live worker (user + kernel side, from /proc) and the largest N, for\n"
	       "pthread_create (the baseline) and umcg_spawn on each backend.\n\n"
	       "Options:\n"
	       "  -n, --ladder LIST    N values (default 1000,10000,30000,100000)\n"
	       "      --stack-kib K    stack size of every thread (default 64)\n"
	       "      --budget S       skip an N expected to take longer (default 60)\n"
	       BENCH_COMMON_HELP, bench_prog);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "ladder", required_argument, NULL, 'n' },
		{ "stack-kib", required_argument, NULL, 'S' },
		{ "budget", required_argument, NULL, 'B' },
		BENCH_COMMON_LONGOPTS, { 0 }
	};
	const char *names[BENCH_MAX_BACKENDS];
	char why[BENCH_MAX_BACKENDS][200];
	char list[256] = "1000,10000,30000,100000";
	long ladder[32];
	int nl = 0, c, nb;

	bench_opts_init(&opts, "scale", argv);
	while ((c = getopt_long(argc, argv, "n:" BENCH_COMMON_SHORTOPTS, lo, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage();
			return 0;
		case 'n':
			snprintf(list, sizeof(list), "%s", optarg);
			break;
		case 'S':
			stack_kib = bench_parse_long("--stack-kib", optarg, 16, 1 << 20);
			break;
		case 'B':
			budget_s = bench_parse_long("--budget", optarg, 1, 86400);
			break;
		default:
			if (!bench_opt(&opts, c, optarg))
				bench_usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		bench_usage_error("unexpected argument '%s'", argv[optind]);
	if (opts.smoke)
		snprintf(list, sizeof(list), "100,1000");
	nl = bench_parse_list("--ladder", list, ladder, 32, 1, 10000000);

	nb = bench_backends(&opts, names, why);
	if (!opts.no_pthread)
		run(false, "pthread", "stock", "base", ladder, nl);
	for (int i = 0; i < nb; i++) {
		if (why[i][0]) {
			bench_result_na("scale", names[i], why[i]);
			continue;
		}
		bench_umcg_init(names[i], 0);
		run(true, "umcg", names[i], NULL, ladder, nl);
		bench_umcg_fini();
	}
	return 0;
}
