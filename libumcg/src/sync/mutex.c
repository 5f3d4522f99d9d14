// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * mutex.c - umcg_mutex_t and umcg_cond_t.
 *
 * Mutex: one state word, LOCKED plus WAITERS.  Lock and unlock without
 * waiters are a single compare-and-swap.  Otherwise the wait list and the
 * WAITERS bit change together under the internal lock: a locker that finds
 * the mutex taken sets WAITERS and queues itself; unlock with WAITERS set
 * leaves LOCKED set and hands the mutex to the first waiter (clearing
 * WAITERS when it was the last), so the mutex goes to waiters in FIFO
 * order and nobody barges in between.
 *
 * Cond: a FIFO wait list under its own internal lock.  A waiter queues
 * itself before it releases the mutex, so a signal sent after the
 * predicate changed (under the mutex) finds it.
 */
#include <errno.h>
#include <stddef.h>

#include "sync_internal.h"

#define USYNC_M_LOCKED	1U
#define USYNC_M_WAITERS	2U

struct usync_mutex {
	uint32_t magic;
	uint32_t state;		/* USYNC_M_* */
	uint32_t lock;		/* internal lock: waiters, WAITERS */
	uint32_t pad;
	uintptr_t owner;	/* usync_self_token() of the owner, 0 */
	struct cds_list_head waiters;
	uint64_t reserved[3];
};

struct usync_cond {
	uint32_t magic;
	uint32_t lock;		/* internal lock: waiters */
	uint32_t pad[2];
	struct cds_list_head waiters;
	uint64_t reserved[4];
};

_Static_assert(sizeof(struct usync_mutex) == sizeof(umcg_mutex_t), "umcg_mutex_t size");
_Static_assert(offsetof(struct usync_mutex, magic) == offsetof(umcg_mutex_t, __magic),
	       "umcg_mutex_t magic");
_Static_assert(sizeof(struct usync_cond) == sizeof(umcg_cond_t), "umcg_cond_t size");
_Static_assert(offsetof(struct usync_cond, magic) == offsetof(umcg_cond_t, __magic),
	       "umcg_cond_t magic");

static inline struct usync_mutex *to_mutex(umcg_mutex_t *m)
{
	struct usync_mutex *im = (struct usync_mutex *)m;

	if (!m || __atomic_load_n(&im->magic, __ATOMIC_RELAXED) != UMCG_MUTEX_MAGIC)
		return NULL;
	return im;
}

static inline struct usync_cond *to_cond(umcg_cond_t *c)
{
	struct usync_cond *ic = (struct usync_cond *)c;

	if (!c || __atomic_load_n(&ic->magic, __ATOMIC_RELAXED) != UMCG_COND_MAGIC)
		return NULL;
	return ic;
}

int umcg_mutex_init(umcg_mutex_t *m)
{
	struct usync_mutex *im = (struct usync_mutex *)m;

	if (!m)
		return -EINVAL;
	*im = (struct usync_mutex){ .magic = UMCG_MUTEX_MAGIC };
	CDS_INIT_LIST_HEAD(&im->waiters);
	return 0;
}

int umcg_mutex_destroy(umcg_mutex_t *m)
{
	struct usync_mutex *im = to_mutex(m);
	int ret = 0;

	if (!im)
		return -EINVAL;
	usync_lock(&im->lock);
	if (__atomic_load_n(&im->state, __ATOMIC_RELAXED) || !usync_list_empty(&im->waiters))
		ret = -EBUSY;
	else
		__atomic_store_n(&im->magic, 0, __ATOMIC_RELAXED);
	usync_unlock(&im->lock);
	return ret;
}

static int usync_mutex_lock_slow(struct usync_mutex *im, uintptr_t me)
{
	struct usync_waiter w;
	uint32_t s;

	usync_lock(&im->lock);
	usync_list_ready(&im->waiters);
	s = __atomic_load_n(&im->state, __ATOMIC_RELAXED);
	for (;;) {
		if (!(s & USYNC_M_LOCKED)) {
			if (__atomic_compare_exchange_n(&im->state, &s, s | USYNC_M_LOCKED, false,
							__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
				usync_unlock(&im->lock);
				goto owned;
			}
			continue;
		}
		if (s & USYNC_M_WAITERS)
			break;
		/* Set under the lock: unlock then takes the slow path. */
		if (__atomic_compare_exchange_n(&im->state, &s, s | USYNC_M_WAITERS, false,
						__ATOMIC_RELAXED, __ATOMIC_RELAXED))
			break;
	}
	usync_waiter_init(&w);
	cds_list_add_tail(&w.node, &im->waiters);
	usync_unlock(&im->lock);
	/* The unlocker hands the mutex over, LOCKED still set, then wakes us. */
	usync_wait(&w, 0);
owned:
	__atomic_store_n(&im->owner, me, __ATOMIC_RELAXED);
	return 0;
}

int umcg_mutex_lock(umcg_mutex_t *m)
{
	struct usync_mutex *im = to_mutex(m);
	uintptr_t me = usync_self_token();
	uint32_t s = 0;

	if (!im)
		return -EINVAL;
	if (__atomic_compare_exchange_n(&im->state, &s, USYNC_M_LOCKED, false,
					__ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
		__atomic_store_n(&im->owner, me, __ATOMIC_RELAXED);
		return 0;
	}
	if (__atomic_load_n(&im->owner, __ATOMIC_RELAXED) == me)
		return -EDEADLK;
	return usync_mutex_lock_slow(im, me);
}

int umcg_mutex_trylock(umcg_mutex_t *m)
{
	struct usync_mutex *im = to_mutex(m);
	uint32_t s = 0;

	if (!im)
		return -EINVAL;
	if (!__atomic_compare_exchange_n(&im->state, &s, USYNC_M_LOCKED, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return -EBUSY;
	__atomic_store_n(&im->owner, usync_self_token(), __ATOMIC_RELAXED);
	return 0;
}

int umcg_mutex_unlock(umcg_mutex_t *m)
{
	struct usync_mutex *im = to_mutex(m);
	struct usync_waiter *w;
	uint32_t s = USYNC_M_LOCKED;

	if (!im)
		return -EINVAL;
	if (__atomic_load_n(&im->owner, __ATOMIC_RELAXED) != usync_self_token())
		return -EPERM;
	__atomic_store_n(&im->owner, 0, __ATOMIC_RELAXED);
	if (__atomic_compare_exchange_n(&im->state, &s, 0, false,
					__ATOMIC_RELEASE, __ATOMIC_RELAXED))
		return 0;

	/* WAITERS: hand the mutex to the first waiter. */
	usync_lock(&im->lock);
	usync_list_ready(&im->waiters);
	if (cds_list_empty(&im->waiters)) {
		/* Cannot happen: WAITERS is set only with a waiter queued. */
		__atomic_store_n(&im->state, 0, __ATOMIC_RELEASE);
		usync_unlock(&im->lock);
		return 0;
	}
	w = cds_list_first_entry(&im->waiters, struct usync_waiter, node);
	cds_list_del(&w->node);
	if (cds_list_empty(&im->waiters))
		__atomic_store_n(&im->state, USYNC_M_LOCKED, __ATOMIC_RELAXED);
	usync_claim(w, 0);
	usync_unlock(&im->lock);
	usync_wake(w);
	return 0;
}

/* Does the caller own @im?  For the cond, which needs it held. */
static bool usync_mutex_owned(struct usync_mutex *im)
{
	return __atomic_load_n(&im->owner, __ATOMIC_RELAXED) == usync_self_token();
}

int umcg_cond_init(umcg_cond_t *c)
{
	struct usync_cond *ic = (struct usync_cond *)c;

	if (!c)
		return -EINVAL;
	*ic = (struct usync_cond){ .magic = UMCG_COND_MAGIC };
	CDS_INIT_LIST_HEAD(&ic->waiters);
	return 0;
}

int umcg_cond_destroy(umcg_cond_t *c)
{
	struct usync_cond *ic = to_cond(c);
	int ret = 0;

	if (!ic)
		return -EINVAL;
	usync_lock(&ic->lock);
	if (!usync_list_empty(&ic->waiters))
		ret = -EBUSY;
	else
		__atomic_store_n(&ic->magic, 0, __ATOMIC_RELAXED);
	usync_unlock(&ic->lock);
	return ret;
}

static int usync_cond_wait(umcg_cond_t *c, umcg_mutex_t *m, uint64_t deadline_ns)
{
	struct usync_cond *ic = to_cond(c);
	struct usync_mutex *im = to_mutex(m);
	struct usync_waiter w;
	int ret;

	if (!ic || !im)
		return -EINVAL;
	if (!usync_mutex_owned(im))
		return -EPERM;
	usync_waiter_init(&w);
	usync_lock(&ic->lock);
	usync_list_ready(&ic->waiters);
	cds_list_add_tail(&w.node, &ic->waiters);
	usync_unlock(&ic->lock);

	umcg_mutex_unlock(m);
	ret = usync_wait(&w, deadline_ns);
	if (ret == -ETIMEDOUT) {
		usync_lock(&ic->lock);
		if (__atomic_load_n(&w.state, __ATOMIC_RELAXED) == USYNC_WAITING) {
			cds_list_del(&w.node);
			usync_unlock(&ic->lock);
		} else {
			/* A signal claimed us as we timed out: it counts. */
			usync_unlock(&ic->lock);
			ret = usync_wait(&w, 0);
		}
	}
	umcg_mutex_lock(m);
	return ret;
}

int umcg_cond_wait(umcg_cond_t *c, umcg_mutex_t *m)
{
	return usync_cond_wait(c, m, 0);
}

int umcg_cond_timedwait(umcg_cond_t *c, umcg_mutex_t *m, uint64_t ns)
{
	return usync_cond_wait(c, m, usync_deadline(ns));
}

static int usync_cond_wake(umcg_cond_t *c, bool all)
{
	struct usync_cond *ic = to_cond(c);
	struct cds_list_head woken;

	if (!ic)
		return -EINVAL;
	CDS_INIT_LIST_HEAD(&woken);
	usync_lock(&ic->lock);
	usync_list_ready(&ic->waiters);
	while (!cds_list_empty(&ic->waiters)) {
		struct usync_waiter *w = cds_list_first_entry(&ic->waiters,
							       struct usync_waiter, node);

		usync_list_move_tail(&w->node, &woken);
		usync_claim(w, 0);
		if (!all)
			break;
	}
	usync_unlock(&ic->lock);
	usync_wake_list(&woken);
	return 0;
}

int umcg_cond_signal(umcg_cond_t *c)
{
	return usync_cond_wake(c, false);
}

int umcg_cond_broadcast(umcg_cond_t *c)
{
	return usync_cond_wake(c, true);
}
