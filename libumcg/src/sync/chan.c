// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * chan.c - umcg_chan_t, a bounded channel with close.
 *
 * One internal lock covers the ring buffer, the two wait lists and the
 * closed flag (Go's hchan has the same shape).  Invariants, under it:
 *  - receivers wait only while the buffer is empty, senders only while it
 *    is full; so at most one of the two lists is non-empty;
 *  - a closed channel has no waiters.
 * A waiter is claimed (element copied, result set) under the lock and
 * woken after it; see sync_internal.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sync_internal.h"

#define USYNC_CHAN_MAGIC	0x5543484eU	/* "UCHN" */

struct umcg_chan {
	uint32_t magic;
	uint32_t lock;
	bool closed;
	size_t capacity;
	size_t elem_size;
	size_t head;			/* oldest buffered element */
	size_t count;			/* buffered elements */
	struct cds_list_head senders;	/* usync_waiter, @buf: the element */
	struct cds_list_head receivers;	/* usync_waiter, @buf: the target */
	unsigned char buf[];
};

static inline unsigned char *chan_slot(struct umcg_chan *c, size_t i)
{
	return c->buf + (i % c->capacity) * c->elem_size;
}

static inline bool chan_ok(struct umcg_chan *c, const void *elem)
{
	return c && __atomic_load_n(&c->magic, __ATOMIC_RELAXED) == USYNC_CHAN_MAGIC &&
	       (elem || !c->elem_size);
}

static inline void chan_copy(struct umcg_chan *c, void *to, const void *from)
{
	if (c->elem_size)
		memcpy(to, from, c->elem_size);
}

int umcg_chan_create(umcg_chan_t **cp, size_t capacity, size_t elem_size)
{
	struct umcg_chan *c;
	size_t bytes;

	if (!cp)
		return -EINVAL;
	if (__builtin_mul_overflow(capacity, elem_size, &bytes) ||
	    __builtin_add_overflow(bytes, sizeof(*c), &bytes))
		return -EINVAL;
	c = calloc(1, bytes);
	if (!c)
		return -ENOMEM;
	c->capacity = capacity;
	c->elem_size = elem_size;
	CDS_INIT_LIST_HEAD(&c->senders);
	CDS_INIT_LIST_HEAD(&c->receivers);
	c->magic = USYNC_CHAN_MAGIC;
	*cp = c;
	return 0;
}

int umcg_chan_destroy(umcg_chan_t *c)
{
	if (!chan_ok(c, ""))
		return -EINVAL;
	usync_lock(&c->lock);
	if (!cds_list_empty(&c->senders) || !cds_list_empty(&c->receivers)) {
		usync_unlock(&c->lock);
		return -EBUSY;
	}
	c->magic = 0;
	usync_unlock(&c->lock);
	free(c);
	return 0;
}

static int chan_send(struct umcg_chan *c, const void *elem, bool wait)
{
	struct usync_waiter *r, w;

	if (!chan_ok(c, elem))
		return -EINVAL;
	usync_lock(&c->lock);
	if (c->closed) {
		usync_unlock(&c->lock);
		return -EPIPE;
	}
	if (!cds_list_empty(&c->receivers)) {
		/* A receiver waits, so the buffer is empty: hand it over. */
		r = cds_list_first_entry(&c->receivers, struct usync_waiter, node);
		cds_list_del(&r->node);
		chan_copy(c, r->buf, elem);
		usync_claim(r, 0);
		usync_unlock(&c->lock);
		usync_wake_direct(r);
		return 0;
	}
	if (c->count < c->capacity) {
		chan_copy(c, chan_slot(c, c->head + c->count), elem);
		c->count++;
		usync_unlock(&c->lock);
		return 0;
	}
	if (!wait) {
		usync_unlock(&c->lock);
		return -EAGAIN;
	}
	usync_waiter_init(&w);
	w.buf = (void *)elem;
	cds_list_add_tail(&w.node, &c->senders);
	usync_unlock(&c->lock);
	usync_wait(&w, 0);
	return w.result;
}

static int chan_recv(struct umcg_chan *c, void *elem, bool wait)
{
	struct usync_waiter *s, w;

	if (!chan_ok(c, elem))
		return -EINVAL;
	usync_lock(&c->lock);
	if (c->count) {
		chan_copy(c, elem, chan_slot(c, c->head));
		c->head = (c->head + 1) % c->capacity;
		c->count--;
		if (cds_list_empty(&c->senders)) {
			usync_unlock(&c->lock);
			return 0;
		}
		/* The buffer was full: the oldest sender's element goes in. */
		s = cds_list_first_entry(&c->senders, struct usync_waiter, node);
		cds_list_del(&s->node);
		chan_copy(c, chan_slot(c, c->head + c->count), s->buf);
		c->count++;
		usync_claim(s, 0);
		usync_unlock(&c->lock);
		usync_wake(s);
		return 0;
	}
	if (!cds_list_empty(&c->senders)) {
		/* Rendezvous: take the element straight from the sender. */
		s = cds_list_first_entry(&c->senders, struct usync_waiter, node);
		cds_list_del(&s->node);
		chan_copy(c, elem, s->buf);
		usync_claim(s, 0);
		usync_unlock(&c->lock);
		usync_wake_direct(s);
		return 0;
	}
	if (c->closed || !wait) {
		usync_unlock(&c->lock);
		return c->closed ? -EPIPE : -EAGAIN;
	}
	usync_waiter_init(&w);
	w.buf = elem;
	cds_list_add_tail(&w.node, &c->receivers);
	usync_unlock(&c->lock);
	usync_wait(&w, 0);
	return w.result;
}

int umcg_chan_send(umcg_chan_t *c, const void *elem)
{
	return chan_send(c, elem, true);
}

int umcg_chan_try_send(umcg_chan_t *c, const void *elem)
{
	return chan_send(c, elem, false);
}

int umcg_chan_recv(umcg_chan_t *c, void *elem)
{
	return chan_recv(c, elem, true);
}

int umcg_chan_try_recv(umcg_chan_t *c, void *elem)
{
	return chan_recv(c, elem, false);
}

int umcg_chan_close(umcg_chan_t *c)
{
	struct cds_list_head woken;

	if (!chan_ok(c, ""))
		return -EINVAL;
	CDS_INIT_LIST_HEAD(&woken);
	usync_lock(&c->lock);
	if (c->closed) {
		usync_unlock(&c->lock);
		return -EPIPE;
	}
	c->closed = true;
	while (!cds_list_empty(&c->receivers)) {
		struct usync_waiter *w = cds_list_first_entry(&c->receivers,
							       struct usync_waiter, node);

		usync_list_move_tail(&w->node, &woken);
		usync_claim(w, -EPIPE);
	}
	while (!cds_list_empty(&c->senders)) {
		struct usync_waiter *w = cds_list_first_entry(&c->senders,
							       struct usync_waiter, node);

		usync_list_move_tail(&w->node, &woken);
		usync_claim(w, -EPIPE);
	}
	usync_unlock(&c->lock);
	usync_wake_list(&woken);
	return 0;
}
