// SPDX-License-Identifier: GPL-2.0
/*
 * bench.c - the shared part of the benchmarks (see bench.h).
 */
#include <errno.h>
#include <getopt.h>
#include <linux/futex.h>
#include <linux/perf_event.h>
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
	/* Each is tried; one that is not available here prints n/a. */
	o->backends = "user,kmod,scx";
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

/* ---- kernel counts ---- */

static const char *const tp_paths[] = {
	"/sys/kernel/tracing/events/raw_syscalls/sys_enter/id",
	"/sys/kernel/debug/tracing/events/raw_syscalls/sys_enter/id",
};

static int perf_open(uint32_t type, uint64_t config, pid_t pid, const char *what,
		     char *why, size_t len)
{
	struct perf_event_attr a = {
		.size = sizeof(a), .type = type, .config = config, .inherit = 1,
	};
	char paranoid[16] = "?";
	FILE *f;
	int fd;

	fd = syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0)
		return fd;
	snprintf(why, len, "perf_event_open(%s): %s", what, strerror(errno));
	f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	if (f && fscanf(f, "%15s", paranoid) == 1)
		snprintf(why + strlen(why), len - strlen(why), " (perf_event_paranoid %s)",
			 paranoid);
	if (f)
		fclose(f);
	return -1;
}

void bench_count_open(struct bench_count *c, pid_t pid)
{
	long id = -1;

	memset(c, 0, sizeof(*c));
	c->pid = pid;
	c->sys_fd = c->cs_fd = -1;
	for (size_t i = 0; i < sizeof(tp_paths) / sizeof(tp_paths[0]) && id < 0; i++) {
		FILE *f = fopen(tp_paths[i], "r");

		if (f && fscanf(f, "%ld", &id) != 1)
			id = -1;
		if (f)
			fclose(f);
	}
	if (id < 0)
		snprintf(c->sys_why, sizeof(c->sys_why),
			 "no raw_syscalls:sys_enter tracepoint (tracefs not mounted on /sys/kernel/tracing)");
	else
		c->sys_fd = perf_open(PERF_TYPE_TRACEPOINT, id, pid, "raw_syscalls:sys_enter",
				      c->sys_why, sizeof(c->sys_why));
	if (pid)
		c->cs_fd = perf_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, pid,
				     "context-switches", c->cs_why, sizeof(c->cs_why));
}

void bench_count_close(struct bench_count *c)
{
	if (c->sys_fd >= 0)
		close(c->sys_fd);
	if (c->cs_fd >= 0)
		close(c->cs_fd);
	c->sys_fd = c->cs_fd = -1;
}

void bench_count_begin(struct bench_count *c, const char *backend, unsigned int nr_cores)
{
	bench_count_open(c, 0);
	if (backend)
		bench_umcg_init(backend, nr_cores);
}

void bench_count_end(struct bench_count *c, const char *backend)
{
	if (backend)
		bench_umcg_fini();
	bench_count_close(c);
}

/* The count of an inherited counter: the threads alive and those exited. */
static long perf_count(int fd)
{
	uint64_t v;

	if (fd < 0 || read(fd, &v, sizeof(v)) != sizeof(v))
		return -1;
	return (long)v;
}

static void rusage_now(int who, long *all, long *vol)
{
	struct rusage ru;

	getrusage(who, &ru);
	*all = ru.ru_nvcsw + ru.ru_nivcsw;
	if (vol)
		*vol = ru.ru_nvcsw;
}

void bench_count_start(struct bench_count *c)
{
	if (!c)
		return;
	if (c->pid) {
		c->cs0 = perf_count(c->cs_fd);
	} else {
		rusage_now(RUSAGE_SELF, &c->cs0, NULL);
		rusage_now(RUSAGE_THREAD, &c->self_cs0, &c->self_vol0);
	}
	/* Last: this read is counted in sys0, not in the window. */
	c->sys0 = perf_count(c->sys_fd);
}

void bench_count_stop(struct bench_count *c)
{
	long sys1, cs1, self1, vol1;

	if (!c)
		return;
	/* First: the only system call of the counting inside the window. */
	sys1 = perf_count(c->sys_fd);
	c->syscalls = sys1 < 0 || c->sys0 < 0 ? -1 : sys1 - c->sys0 - (c->pid ? 0 : 1);
	if (c->pid) {
		cs1 = perf_count(c->cs_fd);
		c->ctxsw = cs1 < 0 || c->cs0 < 0 ? -1 : cs1 - c->cs0;
		c->self_ctxsw = c->self_vol = 0;
	} else {
		rusage_now(RUSAGE_THREAD, &self1, &vol1);
		rusage_now(RUSAGE_SELF, &cs1, NULL);
		c->ctxsw = cs1 - c->cs0;
		c->self_ctxsw = self1 - c->self_cs0;
		c->self_vol = vol1 - c->self_vol0;
	}
}

void bench_count_fail(struct bench_count *c, const char *why)
{
	c->ctxsw = c->syscalls = -1;
	snprintf(c->cs_why, sizeof(c->cs_why), "%s", why);
	snprintf(c->sys_why, sizeof(c->sys_why), "%s", why);
}

static void count_line(const char *bench, const char *impl, const char *backend,
		       const char *variant, const char *kase, const char *metric,
		       const char *role, long count, double sub, double ops, const char *why)
{
	if (count < 0 || ops <= 0) {
		printf("bench=%s impl=%s backend=%s variant=%s case=%s metric=%s better=lower value=n/a n=0%s%s reason=%s\n",
		       bench, impl, backend, variant, kase ? kase : "-", metric,
		       role ? " role=" : "", role ? role : "",
		       count < 0 ? why : "no operation in the counted run");
		return;
	}
	bench_result(bench, impl, backend, variant, kase, metric, true, (count - sub) / ops,
		     (long)ops, role);
}

void bench_count_result(const struct bench_count *c, const char *bench, const char *impl,
			const char *backend, const char *variant, const char *kase,
			const char *role, double ops, double sub_ctxsw, double sub_sys)
{
	count_line(bench, impl, backend, variant, kase, "ctxsw_per_op", role, c->ctxsw,
		   sub_ctxsw, ops, c->cs_why);
	count_line(bench, impl, backend, variant, kase, "syscalls_per_op", role, c->syscalls,
		   sub_sys, ops, c->sys_why);
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
