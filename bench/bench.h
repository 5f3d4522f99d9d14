/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bench.h - what every benchmark in bench/ shares: options, clocks, the
 * result line, backend probing and statistics.
 *
 * Every benchmark prints one line per result on stdout:
 *
 *   bench=NAME impl=pthread|umcg|epoll backend=stock|user|kmod|scx
 *   variant=V case=C metric=M better=lower|higher value=X n=SAMPLES
 *   [role=base] [reason=TEXT]
 *
 * role=base marks the stock-scheduler line that the other lines of the same
 * bench, case and metric are compared with.  An unavailable backend gets
 * value=n/a and reason= (the rest of the line).  Next to its times a
 * benchmark prints the kernel's counts per operation (metric=ctxsw_per_op
 * and syscalls_per_op, from bench_count_*).  Progress and diagnostics go to
 * stderr.  Nothing here judges a timing.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BENCH_MAX_BACKENDS	3

struct bench_opts {
	int reps;		/* repetitions; the median is reported */
	double ms;		/* length of one timed repetition */
	bool smoke;		/* seconds in all: check it runs, not speed */
	bool no_pthread;	/* skip the stock-scheduler baselines */
	bool no_umcg;		/* skip libumcg */
	const char *backends;	/* comma-separated list to try */
};

/* Common options; BENCH_COMMON_HELP documents them. */
#define BENCH_OPT_BASE	0x1000
#define BENCH_COMMON_LONGOPTS						\
	{ "reps", required_argument, NULL, 'r' },			\
	{ "ms", required_argument, NULL, 't' },				\
	{ "smoke", no_argument, NULL, BENCH_OPT_BASE + 0 },		\
	{ "backends", required_argument, NULL, BENCH_OPT_BASE + 1 },	\
	{ "no-pthread", no_argument, NULL, BENCH_OPT_BASE + 2 },	\
	{ "no-umcg", no_argument, NULL, BENCH_OPT_BASE + 3 },		\
	{ "help", no_argument, NULL, 'h' }
#define BENCH_COMMON_SHORTOPTS	"r:t:h"
#define BENCH_COMMON_HELP						\
	"  -r, --reps N         repetitions, the median is printed (default 5)\n" \
	"  -t, --ms MS          length of one timed repetition in ms (default 200)\n" \
	"      --smoke          a few milliseconds each: checks it runs, not speed\n" \
	"      --backends LIST  libumcg backends to try (default user,kmod,scx);\n" \
	"                       an unavailable one is printed as value=n/a\n" \
	"      --no-pthread     skip the stock-scheduler (pthreads) baselines\n" \
	"      --no-umcg        skip libumcg\n" \
	"  -h, --help           this text\n"

void bench_opts_init(struct bench_opts *o, const char *prog, char **argv);
/*
 * Handles a common option: returns 1 if @c was one, 0 if not; exits with a
 * message on a bad value.
 */
int bench_opt(struct bench_opts *o, int c, const char *arg);
/* Parses a positive integer option value or exits with a message. */
long bench_parse_long(const char *opt, const char *arg, long min, long max);
/*
 * Parses @list, comma-separated numbers from @min to @max, into @out (at
 * most @nr of them); returns how many.  Exits with a message on a bad or
 * empty list or one longer than @nr.  @list is cut up.
 */
int bench_parse_list(const char *opt, char *list, long *out, int nr, long min,
		     long max);
/* Exits 2 with "PROG: error: ..." (a bad flag or value). */
void bench_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* Exits 1 with "PROG: error: ..." (the benchmark itself failed). */
void bench_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void bench_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
extern const char *bench_prog;

uint64_t bench_now_ns(void);
void bench_spin_ns(uint64_t ns);
int bench_pin_self(int cpu);
int bench_nr_cpus(void);
/* Raises RLIMIT_NOFILE to its hard limit; returns the new soft limit. */
long bench_raise_nofile(void);

/* Futex helpers on a 32-bit word. */
void bench_futex_wait(_Atomic uint32_t *w, uint32_t val);
void bench_futex_wake(_Atomic uint32_t *w, int nr);

/*
 * The libumcg backends to measure: fills @names with those of o->backends
 * in order; for each, @why[i] is "" if umcg_init() accepts it, else the
 * reason (libumcg's own message).  Returns the count.
 */
int bench_backends(const struct bench_opts *o, const char *names[BENCH_MAX_BACKENDS],
		   char why[BENCH_MAX_BACKENDS][200]);
/* umcg_init() with @backend and @nr_cores (0: all), or die. */
void bench_umcg_init(const char *backend, unsigned int nr_cores);
void bench_umcg_fini(void);

/* One result line. @kase may be "-"; @role may be NULL. */
void bench_result(const char *bench, const char *impl, const char *backend,
		  const char *variant, const char *kase, const char *metric,
		  bool lower_better, double value, long n, const char *role);
/* The same with a note at the end of the line (reason=@why), if not NULL. */
void bench_result_why(const char *bench, const char *impl, const char *backend,
		      const char *variant, const char *kase, const char *metric,
		      bool lower_better, double value, long n, const char *role,
		      const char *why);
void bench_result_na(const char *bench, const char *backend, const char *why);
/* A measurement that could not be made, with the reason. */
void bench_result_fail(const char *bench, const char *impl, const char *backend,
		       const char *variant, const char *why);

/*
 * Kernel counts over the measured window of one run: the context switches
 * and the system calls of a process's threads, for the ctxsw_per_op and
 * syscalls_per_op lines (bench/README.md says what each benchmark counts
 * and subtracts).
 *
 * This process (pid 0): context switches from getrusage(RUSAGE_SELF)
 * (ru_nvcsw + ru_nivcsw: every thread of the process, exited ones
 * included); system calls from a perf counter on the raw_syscalls:sys_enter
 * tracepoint with inherit set, opened on the calling thread, so it counts
 * that thread and every thread made after the open from it or from its
 * descendants (libumcg's servers and monitor made in umcg_init(), the
 * workers).  Another process (@pid > 0, made after the open from a stopped
 * fork): both from inherited perf counters on it (context switches:
 * PERF_COUNT_SW_CONTEXT_SWITCHES), opened before it makes any thread.
 *
 * The tracepoint puts every system call of the machine on the slow entry
 * path while it is open, so the benchmarks count in a run of their own, not
 * in the timed repetitions.  A counter that cannot be opened (no tracefs,
 * no permission) leaves its count at -1 and the reason in @why: the line
 * says value=n/a, never a guess.
 */
struct bench_count {
	pid_t pid;		/* 0: this process */
	int sys_fd, cs_fd;	/* perf counters, -1: none */
	char sys_why[160];	/* why sys_fd is -1 */
	char cs_why[160];	/* why context switches are not counted */
	long sys0, cs0, self_cs0, self_vol0;
	/* After bench_count_stop(): */
	long syscalls;		/* -1: not counted */
	long ctxsw;		/* -1: not counted */
	long self_ctxsw;	/* of ctxsw, the calling thread's own (pid 0 only) */
	long self_vol;		/* of those, the voluntary ones (it slept) */
};

/*
 * Opens the counters on @pid (0: this process); before the threads to be
 * counted are made.  Never fails: a counter that cannot be opened says why.
 */
void bench_count_open(struct bench_count *c, pid_t pid);
void bench_count_close(struct bench_count *c);
/*
 * Start and stop of the window, on one thread (any thread for @pid > 0);
 * @c may be NULL (a timed run: nothing is counted).  For this process the
 * stop's own read of the counter is subtracted; nothing else is.
 */
void bench_count_start(struct bench_count *c);
void bench_count_stop(struct bench_count *c);
/*
 * The counted run's set-up: bench_count_open(@c, 0), then
 * bench_umcg_init(@backend, @nr_cores) unless @backend is NULL (the stock
 * scheduler), so that the counter sees libumcg's threads; and its end.
 */
void bench_count_begin(struct bench_count *c, const char *backend, unsigned int nr_cores);
void bench_count_end(struct bench_count *c, const char *backend);
/* The window's counts were not made (the run failed): both n/a, @why. */
void bench_count_fail(struct bench_count *c, const char *why);
/*
 * The two result lines: (count - @sub_ctxsw) / @ops and (count - @sub_sys)
 * / @ops, n= the operations counted; value=n/a with the reason for a count
 * that was not made.
 */
void bench_count_result(const struct bench_count *c, const char *bench, const char *impl,
			const char *backend, const char *variant, const char *kase,
			const char *role, double ops, double sub_ctxsw, double sub_sys);

double bench_median(double *v, int n);
/* Sorts @v and returns the @p-th percentile (0..100), nearest rank. */
double bench_percentile(double *v, size_t n, double p);
void bench_sort(double *v, size_t n);

#endif /* BENCH_H */
