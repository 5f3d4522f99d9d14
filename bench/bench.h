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
 * value=n/a and reason= (the rest of the line).  Progress and diagnostics go
 * to stderr.  Nothing here judges a timing.
 */
#ifndef BENCH_H
#define BENCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	"      --backends LIST  libumcg backends to try (default user,kmod; scx\n" \
	"                       only when listed: it needs umcgctl load); an unavailable\n" \
	"                       one is printed as value=n/a\n" \
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

double bench_median(double *v, int n);
/* Sorts @v and returns the @p-th percentile (0..100), nearest rank. */
double bench_percentile(double *v, size_t n, double p);
void bench_sort(double *v, size_t n);

#endif /* BENCH_H */
