// SPDX-License-Identifier: GPL-2.0
/*
 * pipeline - a message goes round a ring of K threads; each wakes the next
 * and blocks ("A hands x to B, then blocks").  Messages (hops) per second.
 *
 * Stock scheduler: one POSIX semaphore per thread, unpinned (role=base).
 * libumcg, all cores managed: umcg_switch_to() to the next thread (the
 * directed hand-off: B runs on A's core), and umcg_unpark() of the next
 * plus umcg_park() (the generic wake-and-block path).  Then, from one more
 * run with the kernel's counters on, context switches and system calls per
 * message.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <umcg.h>

#include "bench.h"

#define MAX_K	256

static struct bench_opts opts;
static struct bench_count *counting;	/* the counted run: its counters */
static double counted_ops;		/* the messages in its window */

struct ring {
	int k;
	_Atomic int stop;
	_Atomic uint32_t exited;
	uint64_t end_ns, t0, t1, rounds;
	sem_t sem[MAX_K];
	umcg_thread_t *t[MAX_K];
	_Atomic uint64_t inbox[MAX_K];
	int errors;
};

struct member {
	struct ring *r;
	int i;
};

static struct member members[MAX_K];

/* ---- semaphores ---- */

static void *sem_member(void *arg)
{
	struct member *m = arg;
	struct ring *r = m->r;
	int next = (m->i + 1) % r->k;

	for (;;) {
		while (sem_wait(&r->sem[m->i]))
			;
		if (atomic_load(&r->stop)) {
			sem_post(&r->sem[next]);
			return NULL;
		}
		if (m->i == 0) {
			uint64_t now = bench_now_ns();

			if (!r->rounds) {
				r->t0 = now;
				bench_count_start(counting);
			} else if (now >= r->end_ns) {
				r->t1 = now;
				bench_count_stop(counting);
				counted_ops = (double)(r->rounds - 1) * r->k;
				atomic_store(&r->stop, 1);
				sem_post(&r->sem[next]);
				return NULL;
			}
			r->rounds++;
		}
		sem_post(&r->sem[next]);
	}
}

static double sem_once(int k)
{
	static struct ring r;
	pthread_t th[MAX_K];

	memset(&r, 0, sizeof(r));
	r.k = k;
	for (int i = 0; i < k; i++)
		sem_init(&r.sem[i], 0, 0);
	for (int i = 0; i < k; i++) {
		members[i] = (struct member){ &r, i };
		if (pthread_create(&th[i], NULL, sem_member, &members[i]))
			bench_die("pthread_create failed");
	}
	r.end_ns = bench_now_ns() + opts.ms * 1e6;
	sem_post(&r.sem[0]);
	for (int i = 0; i < k; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < k; i++)
		sem_destroy(&r.sem[i]);
	return (r.rounds - 1) * k / ((r.t1 - r.t0) / 1e9);
}

/* ---- umcg_switch_to ---- */

static int switch_to(umcg_thread_t *t)
{
	int ret;

	while ((ret = umcg_switch_to(t)) == -EBUSY)
		umcg_yield();
	return ret;
}

static void *switch_member(void *arg)
{
	struct member *m = arg;
	struct ring *r = m->r;
	int next = (m->i + 1) % r->k;

	if (m->i == 0) {
		bench_count_start(counting);
		r->t0 = bench_now_ns();
		r->end_ns = r->t0 + opts.ms * 1e6;
		do {
			if (switch_to(r->t[next])) {
				r->errors++;
				break;
			}
			r->rounds++;
		} while (bench_now_ns() < r->end_ns);
		r->t1 = bench_now_ns();
		bench_count_stop(counting);
		counted_ops = (double)r->rounds * r->k;
		atomic_store(&r->stop, 1);
		for (int i = 1; i < r->k; i++)
			umcg_unpark(r->t[i]);
		return NULL;
	}
	umcg_park();
	while (!atomic_load(&r->stop))
		if (switch_to(r->t[next])) {
			r->errors++;
			break;
		}
	return NULL;
}

/* ---- umcg_unpark + umcg_park ---- */

static void pass_on(struct ring *r, int next)
{
	atomic_fetch_add(&r->inbox[next], 1);
	umcg_unpark(r->t[next]);
}

static void *unpark_member(void *arg)
{
	struct member *m = arg;
	struct ring *r = m->r;
	int next = (m->i + 1) % r->k;
	uint64_t seen = 0;

	for (;;) {
		while (atomic_load(&r->inbox[m->i]) == seen)
			umcg_park();
		seen++;
		if (atomic_load(&r->stop))
			break;
		if (m->i == 0) {
			uint64_t now = bench_now_ns();

			if (!r->rounds) {
				r->t0 = now;
				r->end_ns = now + opts.ms * 1e6;
				bench_count_start(counting);
			} else if (now >= r->end_ns) {
				r->t1 = now;
				bench_count_stop(counting);
				counted_ops = (double)(r->rounds - 1) * r->k;
				atomic_store(&r->stop, 1);
				break;
			}
			r->rounds++;
		}
		pass_on(r, next);
	}
	if (m->i != r->k - 1)	/* thread 0 has left: nobody to tell */
		pass_on(r, next);
	/* The driver sleeps until the last is out (no polling in the window). */
	if (atomic_fetch_add(&r->exited, 1) + 1 == (uint32_t)r->k)
		bench_futex_wake(&r->exited, 1);
	return NULL;
}

static double umcg_once(int k, bool directed)
{
	static struct ring r;
	struct timespec ms = { 0, 100000 };
	int ret;

	memset(&r, 0, sizeof(r));
	r.k = k;
	/* Everyone but thread 0 first, parked, so that 0 can switch to them. */
	for (int i = directed ? 1 : 0; i < k; i++) {
		members[i] = (struct member){ &r, i };
		ret = umcg_spawn(&r.t[i], NULL, directed ? switch_member : unpark_member,
				 &members[i]);
		if (ret)
			bench_die("umcg_spawn: %s", strerror(-ret));
	}
	for (int i = directed ? 1 : 0; i < k; i++)
		while (umcg_thread_state(r.t[i]) != UMCG_STATE_PARKED)
			nanosleep(&ms, NULL);
	if (directed) {
		members[0] = (struct member){ &r, 0 };
		ret = umcg_spawn(&r.t[0], NULL, switch_member, &members[0]);
		if (ret)
			bench_die("umcg_spawn: %s", strerror(-ret));
	} else {
		uint32_t e;

		pass_on(&r, 0);
		while ((e = atomic_load(&r.exited)) < (uint32_t)k)
			bench_futex_wait(&r.exited, e);
	}
	for (int i = 0; i < k; i++)
		umcg_join(r.t[i], NULL);
	if (r.errors)
		bench_die("umcg_switch_to failed");
	if (directed)
		return r.rounds * k / ((r.t1 - r.t0) / 1e9);
	return (r.rounds - 1) * k / ((r.t1 - r.t0) / 1e9);
}

/* ---- driver ---- */

enum kind { SEM, SWITCH, UNPARK };

static double once(enum kind kind, int k)
{
	return kind == SEM ? sem_once(k) : umcg_once(k, kind == SWITCH);
}

/* The msgs_per_s line, then the counts from a run of their own. */
static void measure(enum kind kind, int k, const char *kase, const char *backend,
		    const char *variant)
{
	const char *impl = kind == SEM ? "pthread" : "umcg";
	const char *role = kind == SEM ? "base" : NULL;
	const char *umcg = kind == SEM ? NULL : backend;
	struct bench_count c;
	double v[1000];

	if (umcg)
		bench_umcg_init(umcg, 0);
	for (int r = 0; r < opts.reps; r++)
		v[r] = once(kind, k);
	bench_result("pipeline", impl, backend, variant, kase, "msgs_per_s", false,
		     bench_median(v, opts.reps), opts.reps, role);
	if (umcg)
		bench_umcg_fini();
	bench_count_begin(&c, umcg, 0);
	counting = &c;
	once(kind, k);
	counting = NULL;
	bench_count_end(&c, umcg);
	bench_count_result(&c, "pipeline", impl, backend, variant, kase, role, counted_ops,
			   0, 0);
}

static void usage(void)
{
	printf("Usage: %s [OPTIONS]\n\n"
	       "A message goes round a ring of K threads, each waking the next and\n"
	       "blocking; prints messages per second for POSIX semaphores (the\n"
	       "baseline), umcg_switch_to() and umcg_unpark()+umcg_park().\n\n"
	       "Options:\n"
	       "  -k, --threads LIST   ring sizes (default 2,4,8,16,32,64; max %d)\n"
	       "  -V, --variants LIST  libumcg variants: switch_to,unpark (default both)\n"
	       BENCH_COMMON_HELP, bench_prog, MAX_K);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "threads", required_argument, NULL, 'k' },
		{ "variants", required_argument, NULL, 'V' },
		BENCH_COMMON_LONGOPTS, { 0 }
	};
	const char *names[BENCH_MAX_BACKENDS];
	char why[BENCH_MAX_BACKENDS][200];
	char list[256] = "2,4,8,16,32,64";
	long kl[64];
	int ks[64], nk = 0, c, nb;
	bool do_switch = true, do_unpark = true;

	bench_opts_init(&opts, "pipeline", argv);
	while ((c = getopt_long(argc, argv, "k:V:" BENCH_COMMON_SHORTOPTS, lo, NULL)) != -1) {
		if (c == 'h') {
			usage();
			return 0;
		}
		if (c == 'V') {
			char v[64], *sv, *t;

			do_switch = do_unpark = false;
			snprintf(v, sizeof(v), "%s", optarg);
			for (t = strtok_r(v, ",", &sv); t; t = strtok_r(NULL, ",", &sv)) {
				if (!strcmp(t, "switch_to"))
					do_switch = true;
				else if (!strcmp(t, "unpark"))
					do_unpark = true;
				else
					bench_usage_error("--variants: unknown variant '%s' (expected switch_to, unpark)",
							  t);
			}
		} else if (c == 'k')
			snprintf(list, sizeof(list), "%s", optarg);
		else if (!bench_opt(&opts, c, optarg))
			bench_usage_error("unknown option '%s'", argv[optind - 1]);
	}
	if (optind < argc)
		bench_usage_error("unexpected argument '%s'", argv[optind]);
	nk = bench_parse_list("--threads", list, kl, 64, 2, MAX_K);
	for (int j = 0; j < nk; j++)
		ks[j] = (int)kl[j];

	nb = bench_backends(&opts, names, why);
	for (int j = 0; j < nk; j++) {
		char kase[16];

		snprintf(kase, sizeof(kase), "k%d", ks[j]);
		if (!opts.no_pthread)
			measure(SEM, ks[j], kase, "stock", "sem");
		for (int i = 0; i < nb; i++) {
			if (why[i][0]) {
				if (j == 0)
					bench_result_na("pipeline", names[i], why[i]);
				continue;
			}
			if (do_switch)
				measure(SWITCH, ks[j], kase, names[i], "switch_to");
			if (do_unpark)
				measure(UNPARK, ks[j], kase, names[i], "unpark");
		}
	}
	return 0;
}
