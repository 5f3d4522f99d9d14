/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * runqueue.h - the FIFO run queues the built-in policies are made of.
 *
 * A set of queues, each a liburcu list under its own mutex.  A thread is in
 * at most one queue: t->policy_queue says which (-1: none), written only
 * under that queue's lock.
 *
 * Synchronisation table:
 *   umcg_rq_push, umcg_rq_pop, umcg_rq_remove: any thread, concurrently;
 *   each takes one queue's lock at a time, which gives the full barrier the
 *   policy SPI asks for.  umcg_rq_alloc/umcg_rq_free: no concurrency.
 */
#ifndef UMCG_RUNQUEUE_H
#define UMCG_RUNQUEUE_H

#include "internal.h"

struct umcg_rq {
	pthread_mutex_t lock;
	struct cds_list_head head;
	_Atomic unsigned int len;
} __attribute__((aligned(UMCG_CACHELINE)));

struct umcg_rq_set {
	unsigned int nr;
	struct umcg_rq rq[];
};

int umcg_rq_alloc(struct umcg_rq_set **set, unsigned int nr);
void umcg_rq_free(struct umcg_rq_set *set);
/* Queue @t on queue @q (modulo the number of queues); returns that queue. */
int umcg_rq_push(struct umcg_rq_set *set, unsigned int q, struct umcg_thread *t);
/* The oldest thread of queue @q, or NULL. */
struct umcg_thread *umcg_rq_pop(struct umcg_rq_set *set, unsigned int q);
/* 1 if @t was queued and is no longer, else 0. */
int umcg_rq_remove(struct umcg_rq_set *set, struct umcg_thread *t);

#endif /* UMCG_RUNQUEUE_H */
