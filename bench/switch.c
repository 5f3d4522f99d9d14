// SPDX-License-Identifier: GPL-2.0
/*
 * switch - two threads hand a token back and forth.
 *
 * Stock scheduler: futex wake+wait with both threads unpinned (as users run
 * it, role=base), the same pinned to one CPU, and a pipe pair.  libumcg:
 * umcg_switch_to() between two workers on one managed core, on every
 * backend that works.  Prints nanoseconds per switch (one hand-off of the
 * token), the median of the repetitions.
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
	t0 = bench_now_ns();
	end = t0 + opts.ms * 1e6;
	do {
		for (int i = 0; i < 16; i++)
			if (write(pp.pipe_ab[1], &c, 1) != 1 || read(pp.pipe_ba[0], &c, 1) != 1)
				bench_die("pipe ping-pong: %s", strerror(errno));
		n += 16;
		t = bench_now_ns();
	} while (t < end);
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
	s->n = n;
	s->ns = bench_now_ns() - t0;
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

static double median_of(enum kind k)
{
	double v[1000];

	for (int r = 0; r < opts.reps; r++) {
		switch (k) {
		case FUTEX: v[r] = futex_once(-1); break;
		case FUTEX_PINNED: v[r] = futex_once(0); break;
		case PIPE: v[r] = pipe_once(); break;
		case UMCG: v[r] = umcg_once(); break;
		}
	}
	return bench_median(v, opts.reps);
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
		bench_result("switch", "pthread", "stock", "futex", "-", "ns_per_switch",
			     true, median_of(FUTEX), opts.reps, "base");
		bench_result("switch", "pthread", "stock", "futex-pinned", "-",
			     "ns_per_switch", true, median_of(FUTEX_PINNED), opts.reps, NULL);
		bench_result("switch", "pthread", "stock", "pipe", "-", "ns_per_switch",
			     true, median_of(PIPE), opts.reps, NULL);
	}
	for (int i = 0; i < nb; i++) {
		if (why[i][0]) {
			bench_result_na("switch", names[i], why[i]);
			continue;
		}
		bench_umcg_init(names[i], 1);
		bench_result("switch", "umcg", names[i], "switch_to", "-", "ns_per_switch",
			     true, median_of(UMCG), opts.reps, NULL);
		bench_umcg_fini();
	}
	return 0;
}
