// SPDX-License-Identifier: GPL-2.0
/*
 * switch - two threads hand a token back and forth.
 *
 * Stock scheduler: futex wake+wait with both threads unpinned (as users run
 * it, role=base), the same pinned to one CPU, and a pipe pair.  libumcg:
 * umcg_switch_to() between two workers on one managed core, on every
 * backend that works.  Prints nanoseconds per switch (one hand-off of the
 * token), the median of the repetitions; then, from one more run with the
 * kernel's counters on, context switches and system calls per switch.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <umcg.h>

#include "bench.h"

static struct bench_opts opts;
static struct bench_count *counting;	/* the counted run: its counters */
static double counted_ops;		/* the switches in its window */

/* ---- futex ping-pong ---- */

struct pingpong {
	_Atomic uint32_t word;	/* 1: B's turn, 0: A's turn */
	_Atomic int stop;
	int pin;		/* CPU to pin both to, or -1 */
	int pipe_ab[2], pipe_ba[2];
};

static void *futex_b(void *arg)
{
	struct pingpong *pp = arg;

	if (pp->pin >= 0)
		bench_pin_self(pp->pin);
	for (;;) {
		while (atomic_load(&pp->word) == 0)
			bench_futex_wait(&pp->word, 0);
		if (atomic_load(&pp->stop))
			return NULL;
		atomic_store(&pp->word, 0);
		bench_futex_wake(&pp->word, 1);
	}
}

static double futex_once(int pin)
{
	struct pingpong pp = { .pin = pin };
	uint64_t t0, t, end, n = 0;
	cpu_set_t saved;
	pthread_t b;

	if (pthread_create(&b, NULL, futex_b, &pp))
		bench_die("pthread_create failed");
	sched_getaffinity(0, sizeof(saved), &saved);
	if (pin >= 0)
		bench_pin_self(pin);
	bench_count_start(counting);
	t0 = bench_now_ns();
	end = t0 + opts.ms * 1e6;
	do {
		for (int i = 0; i < 16; i++) {
			atomic_store(&pp.word, 1);
			bench_futex_wake(&pp.word, 1);
			while (atomic_load(&pp.word) == 1)
				bench_futex_wait(&pp.word, 1);
		}
		n += 16;
		t = bench_now_ns();
	} while (t < end);
	bench_count_stop(counting);
	counted_ops = 2 * n;
	atomic_store(&pp.stop, 1);
	atomic_store(&pp.word, 1);
	bench_futex_wake(&pp.word, 1);
	pthread_join(b, NULL);
	sched_setaffinity(0, sizeof(saved), &saved);
	return (double)(t - t0) / (2 * n);
}

static void *pipe_b(void *arg)
{
	struct pingpong *pp = arg;
	char c;

	while (read(pp->pipe_ab[0], &c, 1) == 1)
		if (write(pp->pipe_ba[1], &c, 1) != 1)
			break;
	return NULL;
}

static double pipe_once(void)
{
	struct pingpong pp = { .pin = -1 };
	uint64_t t0, t, end, n = 0;
	pthread_t b;
	char c = 'x';

	if (pipe(pp.pipe_ab) || pipe(pp.pipe_ba))
		bench_die("pipe: %s", strerror(errno));
	if (pthread_create(&b, NULL, pipe_b, &pp))
		bench_die("pthread_create failed");
	bench_count_start(counting);
	t0 = bench_now_ns();
	end = t0 + opts.ms * 1e6;
	do {
		for (int i = 0; i < 16; i++)
			if (write(pp.pipe_ab[1], &c, 1) != 1 || read(pp.pipe_ba[0], &c, 1) != 1)
				bench_die("pipe ping-pong: %s", strerror(errno));
		n += 16;
		t = bench_now_ns();
	} while (t < end);
	bench_count_stop(counting);
	counted_ops = 2 * n;
	close(pp.pipe_ab[1]);
	pthread_join(b, NULL);
	close(pp.pipe_ab[0]);
	close(pp.pipe_ba[0]);
	close(pp.pipe_ba[1]);
	return (double)(t - t0) / (2 * n);
}

/* ---- umcg_switch_to ---- */

struct sw {
	umcg_thread_t *a, *b;
	_Atomic int stop;
	uint64_t n, ns;
	int errors;
};

static int switch_to(struct sw *s, umcg_thread_t *t)
{
	int ret;

	/* -EBUSY: @t is still on its way to parking; let it get there. */
	while ((ret = umcg_switch_to(t)) == -EBUSY)
		umcg_yield();
	return ret;
}

static void *sw_b(void *arg)
{
	struct sw *s = arg;

	umcg_park();		/* until A's first switch */
	while (!atomic_load(&s->stop))
		if (switch_to(s, s->a)) {
			s->errors++;
			break;
		}
	return NULL;
}

static void *sw_a(void *arg)
{
	struct sw *s = arg;
	uint64_t t0, t, end, n = 0;

	bench_count_start(counting);
	t0 = bench_now_ns();
	end = t0 + opts.ms * 1e6;
	do {
		for (int i = 0; i < 16; i++)
			if (switch_to(s, s->b)) {
				s->errors++;
				goto out;
			}
		n += 16;
		t = bench_now_ns();
	} while (t < end);
out:
	s->ns = bench_now_ns() - t0;
	bench_count_stop(counting);
	counted_ops = 2 * n;
	s->n = n;
	atomic_store(&s->stop, 1);
	umcg_unpark(s->b);
	return NULL;
}

static double umcg_once(void)
{
	struct timespec ms = { 0, 100000 };
	struct sw s = { 0 };
	int ret;

	ret = umcg_spawn(&s.b, NULL, sw_b, &s);
	if (ret)
		bench_die("umcg_spawn: %s", strerror(-ret));
	while (umcg_thread_state(s.b) != UMCG_STATE_PARKED)
		nanosleep(&ms, NULL);
	ret = umcg_spawn(&s.a, NULL, sw_a, &s);
	if (ret)
		bench_die("umcg_spawn: %s", strerror(-ret));
	umcg_join(s.a, NULL);
	umcg_join(s.b, NULL);
	if (s.errors || !s.n)
		bench_die("umcg_switch_to failed");
	return (double)s.ns / (2 * s.n);
}

/* ---- driver ---- */

enum kind { FUTEX, FUTEX_PINNED, PIPE, UMCG };

static double once(enum kind k)
{
	switch (k) {
	case FUTEX: return futex_once(-1);
	case FUTEX_PINNED: return futex_once(0);
	case PIPE: return pipe_once();
	default: return umcg_once();
	}
}

static double median_of(enum kind k)
{
	double v[1000];

	for (int r = 0; r < opts.reps; r++)
		v[r] = once(k);
	return bench_median(v, opts.reps);
}

/* The ns_per_switch line, then the counts from a run of their own. */
static void measure(enum kind k, const char *impl, const char *backend, const char *variant,
		    const char *role)
{
	struct bench_count c;
	bool umcg = k == UMCG;

	if (umcg)
		bench_umcg_init(backend, 1);
	bench_result("switch", impl, backend, variant, "-", "ns_per_switch", true,
		     median_of(k), opts.reps, role);
	if (umcg)
		bench_umcg_fini();
	bench_count_begin(&c, umcg ? backend : NULL, 1);
	counting = &c;
	once(k);
	counting = NULL;
	bench_count_end(&c, umcg ? backend : NULL);
	bench_count_result(&c, "switch", impl, backend, variant, "-", role, counted_ops, 0, 0);
}

static void usage(void)
{
	printf("Usage: %s [OPTIONS]\n\n"
	       "Two threads hand a token back and forth; prints ns per switch for\n"
	       "futex wake+wait (unpinned, the baseline, and both pinned to CPU 0),\n"
	       "a pipe pair, and umcg_switch_to() on one managed core per backend.\n\n"
	       "Options:\n" BENCH_COMMON_HELP, bench_prog);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = { BENCH_COMMON_LONGOPTS, { 0 } };
	const char *names[BENCH_MAX_BACKENDS];
	char why[BENCH_MAX_BACKENDS][200];
	int c, nb;

	bench_opts_init(&opts, "switch", argv);
	while ((c = getopt_long(argc, argv, BENCH_COMMON_SHORTOPTS, lo, NULL)) != -1) {
		if (c == 'h') {
			usage();
			return 0;
		}
		if (!bench_opt(&opts, c, optarg))
			bench_usage_error("unknown option '%s'", argv[optind - 1]);
	}
	if (optind < argc)
		bench_usage_error("unexpected argument '%s'", argv[optind]);

	nb = bench_backends(&opts, names, why);
	if (!opts.no_pthread) {
		measure(FUTEX, "pthread", "stock", "futex", "base");
		measure(FUTEX_PINNED, "pthread", "stock", "futex-pinned", NULL);
		measure(PIPE, "pthread", "stock", "pipe", NULL);
	}
	for (int i = 0; i < nb; i++) {
		if (why[i][0]) {
			bench_result_na("switch", names[i], why[i]);
			continue;
		}
		measure(UMCG, "umcg", names[i], "switch_to", NULL);
	}
	return 0;
}
