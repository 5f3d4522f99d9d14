/* SPDX-License-Identifier: GPL-2.0 */
/*
 * umcg_test_crowd.h - a crowd of workers that churn (umcg_test_churn.h:
 * yield, nanosleep, read() from a fed pipe, switch to and unpark each
 * other) until told to stop, then make a fixed number of further
 * operations each and finish.  For tests that do something to a busy
 * group (send the scheduler away, pin or offline its CPUs) and check that
 * the work still completes.  Include after <umcg.h>.
 *
 * Use, from one non-worker thread (the process's main thread):
 * umcg_test_crowd_start() after umcg_init(), umcg_test_crowd_wait_started(),
 * then whatever the test does, then umcg_test_crowd_finish().  Workers touch
 * the crowd's atomics only; @t is written before @ready is raised.
 */
#ifndef UMCG_TEST_CROWD_H
#define UMCG_TEST_CROWD_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "umcg_test_churn.h"
#include "umcg_test_feeder.h"

#define UMCG_CROWD_MAX	1000

struct umcg_test_crowd {
	int nr;			/* workers */
	int rounds;		/* operations of each after @stop */
	int pipefd[2];
	struct umcg_test_feeder feeder;
	umcg_thread_t *t[UMCG_CROWD_MAX];
	_Atomic int ready;	/* all spawned: @t is complete */
	_Atomic int stop;
	_Atomic int started;	/* workers past their first operation */
	_Atomic int finished;	/* workers done */
	_Atomic bool done[UMCG_CROWD_MAX];
	_Atomic long ops;	/* operations made */
	_Atomic long ops_after;	/* operations begun after @stop was seen */
	_Atomic int err;	/* the first error of a call that must not fail */
};

static inline void umcg_test_crowd_op(struct umcg_test_crowd *c, unsigned int *seed,
				      int i)
{
	static const enum umcg_test_churn_op ops[] = {
		UMCG_CHURN_YIELD, UMCG_CHURN_NANOSLEEP, UMCG_CHURN_READ,
		UMCG_CHURN_SWITCH, UMCG_CHURN_UNPARK,
	};
	umcg_thread_t *peer = c->t[rand_r(seed) % c->nr];
	int ret = umcg_test_churn(ops[i % 5], c->pipefd[0], peer);

	if (ret) {
		int zero = 0;

		atomic_compare_exchange_strong(&c->err, &zero, ret);
	}
	atomic_fetch_add(&c->ops, 1);
}

static void *umcg_test_crowd_worker(void *arg)
{
	struct umcg_test_crowd *c = arg;
	unsigned int seed = (unsigned int)(uintptr_t)umcg_self() | 1;
	int me, i = 0, after = 0;

	while (atomic_load(&c->ready) < c->nr)
		umcg_yield();
	for (me = 0; me < c->nr && c->t[me] != umcg_self(); me++)
		;
	for (;; i++) {
		bool stop = atomic_load(&c->stop);

		if (stop && after == c->rounds)
			break;
		umcg_test_crowd_op(c, &seed, i);
		if (!i)
			atomic_fetch_add(&c->started, 1);
		if (stop) {
			after++;
			atomic_fetch_add(&c->ops_after, 1);
		}
	}
	if (me < c->nr)
		atomic_store(&c->done[me], true);
	atomic_fetch_add(&c->finished, 1);
	return NULL;
}

/*
 * Feed the pipe and spawn @nr workers (at most UMCG_CROWD_MAX) that make
 * @rounds operations each after the stop.  0, or prints why and returns
 * -1.
 */
static inline int umcg_test_crowd_start(struct umcg_test_crowd *c, int nr, int rounds)
{
	int ret;

	if (nr < 1 || nr > UMCG_CROWD_MAX)
		return -1;
	c->nr = nr;
	c->rounds = rounds;
	if (pipe(c->pipefd)) {
		printf("# crowd: pipe: %s\n", strerror(errno));
		return -1;
	}
	ret = umcg_test_feeder_start(&c->feeder, c->pipefd[1], 100);
	if (ret) {
		printf("# crowd: feeder: %s\n", strerror(ret));
		return -1;
	}
	for (int i = 0; i < nr; i++) {
		ret = umcg_spawn(&c->t[i], NULL, umcg_test_crowd_worker, c);
		if (ret) {
			printf("# crowd: spawn %d: %s\n", i, strerror(-ret));
			return -1;
		}
	}
	atomic_store(&c->ready, nr);
	return 0;
}

/* Wait until every worker made its first operation. */
static inline void umcg_test_crowd_wait_started(struct umcg_test_crowd *c)
{
	while (atomic_load(&c->started) < c->nr)
		usleep(1000);
}

/*
 * Stop the crowd, unpark whoever is not done (a worker that parked
 * switching to a peer needs somebody's unpark) until all are, join them
 * and stop the feeder.  0, or prints why and returns -1.
 */
static inline int umcg_test_crowd_finish(struct umcg_test_crowd *c)
{
	int ret;

	atomic_store(&c->stop, 1);
	while (atomic_load(&c->finished) < c->nr) {
		for (int i = 0; i < c->nr; i++)
			if (!atomic_load(&c->done[i]))
				umcg_unpark(c->t[i]);
		usleep(1000);
	}
	for (int i = 0; i < c->nr; i++) {
		ret = umcg_join(c->t[i], NULL);
		if (ret) {
			printf("# crowd: join %d: %s\n", i, strerror(-ret));
			return -1;
		}
	}
	umcg_test_feeder_stop(&c->feeder);
	return 0;
}

#endif /* UMCG_TEST_CROWD_H */
