// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * completion.c - struct umcg_completion and umcg_async_call().
 *
 * The done flag, the result and the wait list change together under the
 * internal lock.  complete() claims every waiter under it, copying the
 * result into each, and wakes them after dropping it: from then on it
 * touches only the waiters, never the completion, so a waiter may free the
 * completion as soon as its wait returns.  A wait that finds the
 * completion done has taken the lock, so the completer has dropped it.
 */
#include <errno.h>
#include <stddef.h>

#include "sync_internal.h"

struct usync_completion {
	uint32_t magic;
	uint32_t lock;		/* internal lock: done, result, waiters */
	uint32_t done;
	uint32_t pad;
	int64_t result;
	struct cds_list_head waiters;
	uint64_t reserved[3];
};

_Static_assert(sizeof(struct usync_completion) == sizeof(struct umcg_completion),
	       "struct umcg_completion size");
_Static_assert(offsetof(struct usync_completion, magic) ==
	       offsetof(struct umcg_completion, __magic), "struct umcg_completion magic");

static inline struct usync_completion *to_completion(struct umcg_completion *c)
{
	struct usync_completion *ic = (struct usync_completion *)c;

	if (!c || __atomic_load_n(&ic->magic, __ATOMIC_RELAXED) != UMCG_COMPLETION_MAGIC)
		return NULL;
	return ic;
}

int umcg_completion_init(struct umcg_completion *c)
{
	struct usync_completion *ic = (struct usync_completion *)c;

	if (!c)
		return -EINVAL;
	*ic = (struct usync_completion){ .magic = UMCG_COMPLETION_MAGIC };
	CDS_INIT_LIST_HEAD(&ic->waiters);
	return 0;
}

int umcg_completion_complete(struct umcg_completion *c, int64_t result)
{
	struct usync_completion *ic = to_completion(c);
	struct cds_list_head woken;

	if (!ic)
		return -EINVAL;
	CDS_INIT_LIST_HEAD(&woken);
	usync_lock(&ic->lock);
	if (ic->done) {
		usync_unlock(&ic->lock);
		return -EALREADY;
	}
	ic->done = 1;
	ic->result = result;
	usync_list_ready(&ic->waiters);
	while (!cds_list_empty(&ic->waiters)) {
		struct usync_waiter *w = cds_list_first_entry(&ic->waiters,
							       struct usync_waiter, node);

		usync_list_move_tail(&w->node, &woken);
		w->value = result;
		usync_claim(w, 0);
	}
	usync_unlock(&ic->lock);
	/* @c may be gone from here on (a woken waiter frees it). */
	usync_wake_list(&woken);
	return 0;
}

static int usync_completion_wait(struct umcg_completion *c, int64_t *result,
				 uint64_t deadline_ns)
{
	struct usync_completion *ic = to_completion(c);
	struct usync_waiter w;
	int ret;

	if (!ic)
		return -EINVAL;
	usync_lock(&ic->lock);
	if (ic->done) {
		w.value = ic->result;
		usync_unlock(&ic->lock);
		goto done;
	}
	usync_waiter_init(&w);
	usync_list_ready(&ic->waiters);
	cds_list_add_tail(&w.node, &ic->waiters);
	usync_unlock(&ic->lock);

	ret = usync_wait(&w, deadline_ns);
	if (ret == -ETIMEDOUT) {
		usync_lock(&ic->lock);
		if (__atomic_load_n(&w.state, __ATOMIC_RELAXED) == USYNC_WAITING) {
			cds_list_del(&w.node);
			usync_unlock(&ic->lock);
			return -ETIMEDOUT;
		}
		/* Completed as we timed out: take the result. */
		usync_unlock(&ic->lock);
		usync_wait(&w, 0);
	}
done:
	if (result)
		*result = w.value;
	return 0;
}

int umcg_completion_wait(struct umcg_completion *c, int64_t *result)
{
	return usync_completion_wait(c, result, 0);
}

int umcg_completion_wait_timeout(struct umcg_completion *c, int64_t *result, uint64_t ns)
{
	return usync_completion_wait(c, result, usync_deadline(ns));
}

int umcg_async_call(int (*start)(void *arg, struct umcg_completion *c), void *arg,
		    int64_t *result)
{
	struct umcg_completion c;
	int ret;

	if (!start)
		return -EINVAL;
	umcg_completion_init(&c);
	ret = start(arg, &c);
	if (ret < 0)
		return ret;
	return umcg_completion_wait(&c, result);
}
