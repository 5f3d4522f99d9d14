// SPDX-License-Identifier: GPL-2.0
/*
 * bench.c - the shared part of the benchmarks (see bench.h).
 */
#include <errno.h>
#include <getopt.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <umcg.h>

#include "bench.h"

const char *bench_prog = "bench";
static char **bench_argv;

void bench_opts_init(struct bench_opts *o, const char *prog, char **argv)
{
	bench_prog = prog;
	bench_argv = argv;
	memset(o, 0, sizeof(*o));
	o->reps = 5;
	o->ms = 200;
	/* scx only when listed: it needs the scheduler loaded (umcgctl load). */
	o->backends = "user,kmod";
	setvbuf(stdout, NULL, _IOLBF, 0);
	opterr = 0;
}

static void vmsg(const char *kind, const char *fmt, va_list ap)
{
	fprintf(stderr, "%s: %s", bench_prog, kind);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void bench_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("error: ", fmt, ap);
	va_end(ap);
	fprintf(stderr, "Try '%s --help'.\n", bench_prog);
	exit(2);
}

void bench_die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("error: ", fmt, ap);
	va_end(ap);
	exit(1);
}

void bench_progress(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vmsg("", fmt, ap);
	va_end(ap);
}

long bench_parse_long(const char *opt, const char *arg, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max)
		bench_usage_error("%s: expected a number from %ld to %ld, got '%s'",
				  opt, min, max, arg);
	return v;
}

int bench_parse_list(const char *opt, char *list, long *out, int nr, long min,
		     long max)
{
	char *save, *tok;
	int n = 0;

	for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == nr)
			bench_usage_error("%s: at most %d values", opt, nr);
		out[n++] = bench_parse_long(opt, tok, min, max);
	}
	if (!n)
		bench_usage_error("%s: empty list", opt);
	return n;
}

int bench_opt(struct bench_opts *o, int c, const char *arg)
{
	switch (c) {
	case '?':
		bench_usage_error("unknown option or missing value: '%s'",
				  bench_argv[optind - 1]);
	case 'r':
		o->reps = bench_parse_long("--reps", arg, 1, 1000);
		return 1;
	case 't':
		o->ms = bench_parse_long("--ms", arg, 1, 600000);
		return 1;
	case BENCH_OPT_BASE + 0:
		o->smoke = true;
		o->reps = 1;
		o->ms = 20;
		return 1;
	case BENCH_OPT_BASE + 1:
		if (!*arg)
			bench_usage_error("--backends: empty list");
		o->backends = arg;
		return 1;
	case BENCH_OPT_BASE + 2:
		o->no_pthread = true;
		return 1;
	case BENCH_OPT_BASE + 3:
		o->no_umcg = true;
		return 1;
	}
	return 0;
}

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

void bench_spin_ns(uint64_t ns)
{
	uint64_t end = bench_now_ns() + ns;

	while (bench_now_ns() < end)
		;
}

int bench_pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

int bench_nr_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return CPU_COUNT(&set);
}

long bench_raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return -1;
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	getrlimit(RLIMIT_NOFILE, &rl);
	return rl.rlim_cur;
}

void bench_futex_wait(_Atomic uint32_t *w, uint32_t val)
{
	syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

void bench_futex_wake(_Atomic uint32_t *w, int nr)
{
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, nr, NULL, NULL, 0);
}

/* umcg_init() with stderr captured, so a refusal's reason can be kept. */
static int probe_backend(const char *name, char *why, size_t len)
{
	struct umcg_config cfg = { .size = sizeof(cfg), .nr_cores = 1, .backend = name };
	int fd, saved, ret;
	ssize_t n;

	fflush(stderr);
	fd = memfd_create("bench-probe", 0);
	saved = dup(2);
	if (fd >= 0 && saved >= 0)
		dup2(fd, 2);
	ret = umcg_init(&cfg);
	if (!ret)
		ret = umcg_fini();
	fflush(stderr);
	if (fd >= 0 && saved >= 0) {
		dup2(saved, 2);
		n = pread(fd, why, len - 1, 0);
		why[n > 0 ? n : 0] = '\0';
	} else {
		why[0] = '\0';
	}
	if (fd >= 0)
		close(fd);
	if (saved >= 0)
		close(saved);
	if (!ret) {
		why[0] = '\0';
		return 0;
	}
	/* One line: "libumcg: backend "kmod" is not available: REASON". */
	why[strcspn(why, "\n")] = '\0';
	if (strstr(why, "not available: "))
		memmove(why, strstr(why, "not available: ") + 15,
			strlen(strstr(why, "not available: ") + 15) + 1);
	if (!why[0])
		snprintf(why, len, "umcg_init: %s", strerror(-ret));
	return ret;
}

int bench_backends(const struct bench_opts *o, const char *names[BENCH_MAX_BACKENDS],
		   char why[BENCH_MAX_BACKENDS][200])
{
	static char list[64];
	char *save, *tok;
	int n = 0;

	if (o->no_umcg)
		return 0;
	snprintf(list, sizeof(list), "%s", o->backends);
	for (tok = strtok_r(list, ",", &save); tok && n < BENCH_MAX_BACKENDS;
	     tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "user") && strcmp(tok, "kmod") && strcmp(tok, "scx"))
			bench_usage_error("--backends: unknown backend '%s' (expected user, kmod, scx)",
					  tok);
		names[n] = tok;
		probe_backend(tok, why[n], sizeof(why[n]));
		n++;
	}
	return n;
}

void bench_umcg_init(const char *backend, unsigned int nr_cores)
{
	struct umcg_config cfg = {
		.size = sizeof(cfg), .nr_cores = nr_cores, .backend = backend,
	};
	int ret = umcg_init(&cfg);

	if (ret)
		bench_die("umcg_init(backend %s, %u cores): %s", backend, nr_cores,
			  strerror(-ret));
}

void bench_umcg_fini(void)
{
	int ret = umcg_fini();

	if (ret)
		bench_die("umcg_fini: %s", strerror(-ret));
}

void bench_result_why(const char *bench, const char *impl, const char *backend,
		      const char *variant, const char *kase, const char *metric,
		      bool lower_better, double value, long n, const char *role,
		      const char *why)
{
	printf("bench=%s impl=%s backend=%s variant=%s case=%s metric=%s better=%s value=%.6g n=%ld%s%s%s%s\n",
	       bench, impl, backend, variant, kase ? kase : "-", metric,
	       lower_better ? "lower" : "higher", value, n,
	       role ? " role=" : "", role ? role : "",
	       why ? " reason=" : "", why ? why : "");
}

void bench_result(const char *bench, const char *impl, const char *backend,
		  const char *variant, const char *kase, const char *metric,
		  bool lower_better, double value, long n, const char *role)
{
	bench_result_why(bench, impl, backend, variant, kase, metric, lower_better, value,
			 n, role, NULL);
}

void bench_result_na(const char *bench, const char *backend, const char *why)
{
	printf("bench=%s impl=umcg backend=%s variant=- case=- metric=- better=- value=n/a n=0 reason=%s\n",
	       bench, backend, why);
}

void bench_result_fail(const char *bench, const char *impl, const char *backend,
		       const char *variant, const char *why)
{
	printf("bench=%s impl=%s backend=%s variant=%s case=- metric=- better=- value=n/a n=0 reason=%s\n",
	       bench, impl, backend, variant, why);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

void bench_sort(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
}

double bench_median(double *v, int n)
{
	if (n <= 0)
		return 0;
	bench_sort(v, n);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double bench_percentile(double *v, size_t n, double p)
{
	size_t i;

	if (!n)
		return 0;
	bench_sort(v, n);
	i = (size_t)(p / 100.0 * n + 0.999999);
	if (i < 1)
		i = 1;
	if (i > n)
		i = n;
	return v[i - 1];
}
