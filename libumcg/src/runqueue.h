/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * runqueue.h - the FIFO run queues the built-in policies are made of.
 *
 * A set of queues.  Each is liburcu's wait-free concurrent queue
 * (urcu/wfcqueue.h) in front of which sits a short private list, @front:
 *
 *   enqueue   appends to the wfcqueue: wait-free (an exchange and a store,
 *             cds_wfcq_enqueue()), no lock, so a waker never waits for a
 *             picker nor for another waker;
 *   pick      under the queue's dequeue lock (the mutex in the wfcqueue's
 *             head, cds_wfcq_dequeue_lock()): the first thread of @front,
 *             else the wfcqueue's first (__cds_wfcq_dequeue_nonblocking());
 *   remove    under the same lock: unlinks the thread from @front, moving
 *             the wfcqueue's threads in front of it onto @front first (a
 *             wfcqueue cannot drop a node from its middle).
 *
 * @front holds only threads older than every one in the wfcqueue, so the
 * order stays FIFO.  It is empty unless a remove found its thread behind
 * others: on the switch path a queue is the bare wfcqueue.
 *
 * A thread is in at most one queue.  t->policy_queue says which (-1:
 * none): set by enqueue before the thread is appended, reset to -1 by the
 * pick or remove that takes it, under that queue's dequeue lock.
 * @len counts the threads of the queue, those still being appended
 * included: up before the append, down by whoever takes one, under the
 * lock; pick reads it without the lock to skip an empty queue.
 *
 * Enqueues in progress.  A wfcqueue's append first swings the tail, then
 * links the previous node to the new one; between the two, that node and
 * every one appended after it cannot be dequeued yet.  Pick and remove
 * wait for the link a bounded number of spins (it is two instructions
 * away unless the enqueuer was preempted right there), then take such a
 * thread as not yet queued: pick returns NULL, remove 0 (its caller,
 * umcg_claim(), answers -EBUSY, as for a thread a server is picking).
 * No work is lost by it: the enqueuer still has its enqueue to finish and
 * then wakes a server by the runtime's rules (sched.c, "Looking servers"),
 * which picks the whole chain once linked.
 *
 * Synchronisation table (who may call what concurrently):
 *   umcg_rq_push   any thread, concurrently with every call but alloc/free;
 *                  wait-free, async-signal-safe.
 *   umcg_rq_pop, umcg_rq_remove
 *                  any thread, concurrently with every call but alloc/free;
 *                  one queue's dequeue lock at a time, a leaf (no lock is
 *                  taken under it).  A signal handler may call them only
 *                  if the thread it interrupted is not inside one of them:
 *                  libumcg's preemption handler runs policy callbacks only
 *                  for a worker outside libumcg (t->in_lib 0), and the
 *                  runtime calls the policy only inside libumcg.
 *   umcg_rq_alloc, umcg_rq_free
 *                  alone.
 *
 * Barriers (the policy SPI's "memory ordering"): cds_wfcq_enqueue()
 * issues a full barrier before the append, and a dequeue reads the node
 * through the pointer it loaded (cmm_smp_read_barrier_depends()), so
 * whatever the enqueuer wrote before (the thread's state word) is visible
 * to whoever dequeues it.  The same order is also stated in C11 terms,
 * which is what ThreadSanitizer checks (it does not see into liburcu):
 * enqueue's store of t->policy_queue is a release, and every node that
 * leaves the wfcqueue has it read with acquire.  Pickers and removers of
 * one queue are ordered by its lock.  len is a relaxed counter: it only
 * says where to look.
 */
#ifndef UMCG_RUNQUEUE_H
#define UMCG_RUNQUEUE_H

#include "internal.h"

struct umcg_rq {
	/* Dequeuers' side: head.lock is the dequeue lock, over @front too. */
	struct cds_wfcq_head head;
	struct cds_list_head front;
	_Atomic unsigned int len;
	/* Enqueuers' side, a line of its own. */
	struct cds_wfcq_tail tail __attribute__((aligned(UMCG_CACHELINE)));
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
