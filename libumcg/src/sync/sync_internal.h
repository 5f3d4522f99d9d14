/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * sync_internal.h - what the primitives of umcg/sync.h share: the internal
 * spin lock, and the waiter that parks a worker or futex-waits a plain
 * thread.
 *
 * Only the public API of umcg.h is used here, so the layer works the same
 * on every backend.
 *
 * The waiter protocol (waiter.c):
 *
 *   A waiter lives on the waiting thread's stack.  It is queued on an
 *   object's list under the object's spin lock, in state WAITING.  A waker
 *   claims it under the same lock: removes it from the list, fills in the
 *   result, and moves it to WAKING.  After dropping the lock the waker
 *   unparks the thread (or futex-wakes it) and only then stores WOKEN.
 *   The waiter leaves only on WOKEN, so the waker's umcg_unpark() never
 *   races with the waiter returning, exiting and being joined; and after
 *   WOKEN nobody touches the waiter any more (a futex wake on its address
 *   is only a key, never a memory access).
 *
 *   A waiter that times out while still WAITING takes the object's lock:
 *   if it is still WAITING (so still queued), it unqueues itself and
 *   reports the timeout; else it was claimed and waits for WOKEN.
 *
 *   Direct hand-off (usync_wake_direct(), for channels): after claiming, a
 *   worker waker publishes HANDOFF with a pointer to a record on its own
 *   stack, unparks the waiter (so that a umcg_park() it is still inside
 *   returns and it reads HANDOFF) and calls umcg_switch_to(waiter).  Whoever of the two decides
 *   first wins a compare-and-swap on that record:
 *     - the waiter, running, sees HANDOFF; it locks the waiter word
 *       (LOOKING) so the waker cannot leave meanwhile, and if the waker is
 *       PARKED (so inside umcg_switch_to(), done with the waiter) it takes
 *       the hand-off (R_TOOK), unparks the waker, marks R_DONE and goes;
 *     - else the waker, back from umcg_switch_to() (-EBUSY, or run again
 *       for another reason), takes it (S_DONE), unparks the waiter and
 *       stores WOKEN as in the plain protocol.
 *   The waker leaves only after R_DONE or its own WOKEN store; the waiter
 *   only after WOKEN or R_DONE.  So neither touches the other's stack or
 *   thread after the other may have gone.
 */
#ifndef UMCG_SYNC_INTERNAL_H
#define UMCG_SYNC_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <urcu/list.h>

#include <umcg.h>
#include <umcg/sync.h>

/* usync_waiter.state */
#define USYNC_WAITING	0U	/* queued; only a lock holder changes it */
#define USYNC_WAKING	1U	/* claimed; the waker is waking it */
#define USYNC_WOKEN	2U	/* done: the waiter may return */
#define USYNC_HANDOFF	3U	/* claimed; the waker is switching to it */
#define USYNC_LOOKING	4U	/* the waiter examines a hand-off */

/* usync_handoff.state */
#define USYNC_H_PENDING	0U
#define USYNC_H_S_DONE	1U	/* the waker woke the waiter the plain way */
#define USYNC_H_R_TOOK	2U	/* the waiter took it, is unparking the waker */
#define USYNC_H_R_DONE	3U	/* ... and is done with the waker */

struct usync_handoff {
	umcg_thread_t *waker;
	uint32_t state;
};

/**
 * struct usync_waiter - one waiting thread
 * @node:   in the object's wait list, under the object's lock
 * @thread: umcg_self() of the waiter, NULL for a plain thread
 * @state:  USYNC_*; the waiter's futex word
 * @result: set by the waker before WAKING (0, -EPIPE, ...)
 * @value:  completion: the result, set by the waker before WAKING
 * @buf:    channel: the element (source for a sender, target for a receiver)
 * @events: I/O: EPOLLIN or EPOLLOUT
 * @hand:   direct hand-off record, valid in HANDOFF and LOOKING
 * @futex:  the waiter fell back to futex waits (its group went away)
 */
struct usync_waiter {
	struct cds_list_head node;
	umcg_thread_t *thread;
	uint32_t state;
	int result;
	int64_t value;
	void *buf;
	uint32_t events;
	bool futex;
	struct usync_handoff *hand;
};

static inline void usync_waiter_init(struct usync_waiter *w)
{
	w->thread = umcg_self();
	w->state = USYNC_WAITING;
	w->result = 0;
	w->value = 0;
	w->buf = NULL;
	w->events = 0;
	w->futex = false;
	w->hand = NULL;
}

/* A waker's claim, under the object's lock, after unqueueing @w. */
static inline void usync_claim(struct usync_waiter *w, int result)
{
	w->result = result;
	__atomic_store_n(&w->state, USYNC_WAKING, __ATOMIC_RELAXED);
}

/*
 * Waits until @w is WOKEN (0) or, with @deadline_ns (CLOCK_MONOTONIC, 0: no
 * limit), until the deadline passes while @w is still WAITING (-ETIMEDOUT;
 * the caller must then resolve it under the object's lock).
 */
int usync_wait(struct usync_waiter *w, uint64_t deadline_ns);

/* Wakes @w, claimed by the caller and no longer queued. */
void usync_wake(struct usync_waiter *w);

/* usync_wake(), switching straight to @w's thread if both are workers. */
void usync_wake_direct(struct usync_waiter *w);

/* Unqueues and wakes every waiter of @list, claimed and moved there by the caller. */
void usync_wake_list(struct cds_list_head *list);

/* Let someone else run: the core for a worker, the CPU in any case. */
void usync_relax(void);

/* futex(2) on a private word; errno is left alone. */
int usync_futex_wait(uint32_t *word, uint32_t seen, uint64_t deadline_ns);
void usync_futex_wake(uint32_t *word, int nr);

uint64_t usync_now_ns(void);

/* A deadline @ns from now, or 0 (none) if it does not fit. */
static inline uint64_t usync_deadline(uint64_t ns)
{
	uint64_t now = usync_now_ns();

	if (ns > UINT64_MAX / 4)
		return 0;
	return now + (ns ? ns : 1);
}

/*
 * The internal lock: a test-and-set spin lock around a few list and copy
 * operations (never around a wait or a libumcg call).  A contender spins
 * briefly, then yields: its core if it is a worker (the holder may be a
 * runnable worker that was preempted), and the CPU.
 */
void usync_lock_slow(uint32_t *l);

static inline void usync_lock(uint32_t *l)
{
	if (__builtin_expect(!__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE), 1))
		return;
	usync_lock_slow(l);
}

static inline void usync_unlock(uint32_t *l)
{
	__atomic_store_n(l, 0, __ATOMIC_RELEASE);
}

/* A wait list whose head is all zero (a static initialiser) is empty. */
static inline void usync_list_ready(struct cds_list_head *h)
{
	if (!h->next)
		CDS_INIT_LIST_HEAD(h);
}

static inline bool usync_list_empty(struct cds_list_head *h)
{
	return !h->next || cds_list_empty(h);
}

static inline void usync_list_move_tail(struct cds_list_head *e, struct cds_list_head *h)
{
	cds_list_del(e);
	cds_list_add_tail(e, h);
}

/* The calling thread's identity as a lock owner (workers are threads too). */
uintptr_t usync_self_token(void);

#endif /* UMCG_SYNC_INTERNAL_H */
