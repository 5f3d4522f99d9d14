// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * runqueue.c - FIFO run queues for the built-in policies.
 *
 * Lock order: one queue lock at a time; a leaf under every runtime lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runqueue.h"

int umcg_rq_alloc(struct umcg_rq_set **setp, unsigned int nr)
{
	size_t size = sizeof(struct umcg_rq_set) + nr * sizeof(struct umcg_rq);
	struct umcg_rq_set *set;

	size = (size + UMCG_CACHELINE - 1) & ~(size_t)(UMCG_CACHELINE - 1);
	set = aligned_alloc(UMCG_CACHELINE, size);
	if (!set)
		return -ENOMEM;
	memset(set, 0, size);
	set->nr = nr;
	for (unsigned int i = 0; i < nr; i++) {
		pthread_mutex_init(&set->rq[i].lock, NULL);
		CDS_INIT_LIST_HEAD(&set->rq[i].head);
	}
	*setp = set;
	return 0;
}

void umcg_rq_free(struct umcg_rq_set *set)
{
	for (unsigned int i = 0; set && i < set->nr; i++)
		pthread_mutex_destroy(&set->rq[i].lock);
	free(set);
}

int umcg_rq_push(struct umcg_rq_set *set, unsigned int q, struct umcg_thread *t)
{
	struct umcg_rq *rq = &set->rq[q % set->nr];

	pthread_mutex_lock(&rq->lock);
	cds_list_add_tail(&t->policy_node, &rq->head);
	__atomic_store_n(&t->policy_queue, (int32_t)(q % set->nr), __ATOMIC_RELAXED);
	atomic_fetch_add_explicit(&rq->len, 1, memory_order_relaxed);
	pthread_mutex_unlock(&rq->lock);
	return (int)(q % set->nr);
}

struct umcg_thread *umcg_rq_pop(struct umcg_rq_set *set, unsigned int q)
{
	struct umcg_rq *rq = &set->rq[q % set->nr];
	struct umcg_thread *t = NULL;

	/* Cheap look first: the switch path pops empty queues often. */
	if (!atomic_load_explicit(&rq->len, memory_order_relaxed))
		return NULL;
	pthread_mutex_lock(&rq->lock);
	if (!cds_list_empty(&rq->head)) {
		t = cds_list_first_entry(&rq->head, struct umcg_thread, policy_node);
		cds_list_del_init(&t->policy_node);
		__atomic_store_n(&t->policy_queue, -1, __ATOMIC_RELAXED);
		atomic_fetch_sub_explicit(&rq->len, 1, memory_order_relaxed);
	}
	pthread_mutex_unlock(&rq->lock);
	return t;
}

int umcg_rq_remove(struct umcg_rq_set *set, struct umcg_thread *t)
{
	for (;;) {
		int32_t q = __atomic_load_n(&t->policy_queue, __ATOMIC_RELAXED);
		struct umcg_rq *rq;

		if (q < 0 || (unsigned int)q >= set->nr)
			return 0;
		rq = &set->rq[q];
		pthread_mutex_lock(&rq->lock);
		if (t->policy_queue == q) {
			cds_list_del_init(&t->policy_node);
			t->policy_queue = -1;
			atomic_fetch_sub_explicit(&rq->len, 1, memory_order_relaxed);
			pthread_mutex_unlock(&rq->lock);
			return 1;
		}
		pthread_mutex_unlock(&rq->lock);	/* moved meanwhile: retry */
	}
}
