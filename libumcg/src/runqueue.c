// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * runqueue.c - FIFO run queues for the built-in policies: see runqueue.h.
 *
 * liburcu's queue is called through the library (no _LGPL_SOURCE): its
 * inline versions are LGPL-only code, and the calls cost a jump.
 *
 * Lock order: one queue's dequeue lock at a time; a leaf under every
 * runtime lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "runqueue.h"

/*
 * How many times a dequeuer re-reads a node an enqueuer has yet to link
 * before it takes the node's thread as not queued yet (runqueue.h).
 */
#define UMCG_RQ_LINK_SPINS	100

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
		cds_wfcq_init(&set->rq[i].head, &set->rq[i].tail);
		CDS_INIT_LIST_HEAD(&set->rq[i].front);
	}
	*setp = set;
	return 0;
}

void umcg_rq_free(struct umcg_rq_set *set)
{
	for (unsigned int i = 0; set && i < set->nr; i++)
		cds_wfcq_destroy(&set->rq[i].head, &set->rq[i].tail);
	free(set);
}

int umcg_rq_push(struct umcg_rq_set *set, unsigned int q, struct umcg_thread *t)
{
	unsigned int idx = q % set->nr;
	struct umcg_rq *rq = &set->rq[idx];

	/* Release: pairs with the dequeuer's acquire (umcg_rq_dequeue_locked()). */
	__atomic_store_n(&t->policy_queue, (int32_t)idx, __ATOMIC_RELEASE);
	atomic_fetch_add_explicit(&rq->len, 1, memory_order_relaxed);
	cds_wfcq_node_init(&t->policy_qnode);
	cds_wfcq_enqueue(&rq->head, &rq->tail, &t->policy_qnode);
	return (int)idx;
}

/*
 * The first thread of @rq's wfcqueue, under its dequeue lock; NULL if it
 * is empty or its first node is not linked yet.  The acquire load reads
 * the enqueuer's release store of t->policy_queue: in the C11 model (and
 * for ThreadSanitizer, which does not see into liburcu) that, not the
 * wfcqueue's own barriers, orders what the enqueuer wrote before the
 * enqueue before what the dequeuer does after.  Plain moves on x86.
 */
static struct umcg_thread *umcg_rq_dequeue_locked(struct umcg_rq *rq)
{
	struct umcg_thread *t;
	struct cds_wfcq_node *n;

	for (unsigned int spins = 0;; spins++) {
		n = __cds_wfcq_dequeue_nonblocking(&rq->head, &rq->tail);
		if (n != CDS_WFCQ_WOULDBLOCK)
			break;
		if (spins == UMCG_RQ_LINK_SPINS)
			return NULL;
		caa_cpu_relax();
	}
	if (!n)
		return NULL;
	t = caa_container_of(n, struct umcg_thread, policy_qnode);
	(void)__atomic_load_n(&t->policy_queue, __ATOMIC_ACQUIRE);
	return t;
}

/* @t is taken from @rq, under its dequeue lock. */
static void umcg_rq_taken_locked(struct umcg_rq *rq, struct umcg_thread *t)
{
	__atomic_store_n(&t->policy_queue, -1, __ATOMIC_RELAXED);
	atomic_fetch_sub_explicit(&rq->len, 1, memory_order_relaxed);
}

struct umcg_thread *umcg_rq_pop(struct umcg_rq_set *set, unsigned int q)
{
	struct umcg_rq *rq = &set->rq[q % set->nr];
	struct umcg_thread *t;

	/* Cheap look first: the switch path pops empty queues often. */
	if (!atomic_load_explicit(&rq->len, memory_order_relaxed))
		return NULL;
	cds_wfcq_dequeue_lock(&rq->head, &rq->tail);
	if (!cds_list_empty(&rq->front)) {
		t = cds_list_first_entry(&rq->front, struct umcg_thread, policy_node);
		cds_list_del_init(&t->policy_node);
	} else {
		t = umcg_rq_dequeue_locked(rq);
	}
	if (t)
		umcg_rq_taken_locked(rq, t);
	cds_wfcq_dequeue_unlock(&rq->head, &rq->tail);
	return t;
}

/*
 * Unlink @t from @rq, under its dequeue lock: from @front, or from the
 * wfcqueue, whose threads before it go to the end of @front, in order.
 * 1 if found, 0 if @t is not (or not yet: runqueue.h) in @rq.
 */
static int umcg_rq_unlink_locked(struct umcg_rq *rq, struct umcg_thread *t)
{
	struct umcg_thread *o;
	struct cds_list_head *pos;

	cds_list_for_each(pos, &rq->front) {
		if (pos == &t->policy_node) {
			cds_list_del_init(pos);
			return 1;
		}
	}
	while ((o = umcg_rq_dequeue_locked(rq))) {
		if (o == t)
			return 1;
		cds_list_add_tail(&o->policy_node, &rq->front);
	}
	return 0;
}

int umcg_rq_remove(struct umcg_rq_set *set, struct umcg_thread *t)
{
	for (;;) {
		int32_t q = __atomic_load_n(&t->policy_queue, __ATOMIC_RELAXED);
		struct umcg_rq *rq;
		int found;

		if (q < 0 || (unsigned int)q >= set->nr)
			return 0;
		rq = &set->rq[q];
		cds_wfcq_dequeue_lock(&rq->head, &rq->tail);
		if (__atomic_load_n(&t->policy_queue, __ATOMIC_RELAXED) != q) {
			cds_wfcq_dequeue_unlock(&rq->head, &rq->tail);
			continue;	/* moved meanwhile: retry */
		}
		found = umcg_rq_unlink_locked(rq, t);
		if (found)
			umcg_rq_taken_locked(rq, t);
		cds_wfcq_dequeue_unlock(&rq->head, &rq->tail);
		return found;
	}
}
