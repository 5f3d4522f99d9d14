// SPDX-License-Identifier: GPL-2.0
/*
 * pipeline - a message goes round a ring of K threads; each wakes the next
 * and blocks ("A hands x to B, then blocks").  Messages (hops) per second.
 *
 * Stock scheduler: one POSIX semaphore per thread, unpinned (role=base).
 * libumcg, all cores managed: umcg_switch_to() to the next thread (the
 * directed hand-off: B runs on A's core), and umcg_unpark() of the next
 * plus umcg_park() (the generic wake-and-block path).
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

struct ring {
	int k;
	_Atomic int stop;
	_Atomic int exited;
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

			if (!r->rounds)
				r->t0 = now;
			else if (now >= r->end_ns) {
				r->t1 = now;
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
			} else if (now >= r->end_ns) {
				r->t1 = now;
				atomic_store(&r->stop, 1);
				break;
			}
			r->rounds++;
		}
		pass_on(r, next);
	}
	if (m->i != r->k - 1)	/* thread 0 has left: nobody to tell */
		pass_on(r, next);
	atomic_fetch_add(&r->exited, 1);
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
		pass_on(&r, 0);
		while (atomic_load(&r.exited) < k)
			nanosleep(&ms, NULL);
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

static double median_of(enum kind kind, int k)
{
	double v[1000];

	for (int r = 0; r < opts.reps; r++)
		v[r] = kind == SEM ? sem_once(k) : umcg_once(k, kind == SWITCH);
	return bench_median(v, opts.reps);
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
			bench_result("pipeline", "pthread", "stock", "sem", kase, "msgs_per_s",
				     false, median_of(SEM, ks[j]), opts.reps, "base");
		for (int i = 0; i < nb; i++) {
			if (why[i][0]) {
				if (j == 0)
					bench_result_na("pipeline", names[i], why[i]);
				continue;
			}
			bench_umcg_init(names[i], 0);
			if (do_switch)
				bench_result("pipeline", "umcg", names[i], "switch_to", kase,
					     "msgs_per_s", false, median_of(SWITCH, ks[j]),
					     opts.reps, NULL);
			if (do_unpark)
				bench_result("pipeline", "umcg", names[i], "unpark", kase,
					     "msgs_per_s", false, median_of(UNPARK, ks[j]),
					     opts.reps, NULL);
			bench_umcg_fini();
		}
	}
	return 0;
}
