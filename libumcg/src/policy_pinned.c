// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * policy_pinned.c - "pinned": a thread always runs on one core.
 *
 * Its core is umcg_attr.core, or else the core of the worker that spawned
 * it, or else one chosen by its tid, fixed at its first enqueue.  No
 * stealing: an idle core waits.
 *
 * Lock order: see runqueue.c.
 */
#include "runqueue.h"

static int pinned_init(void **priv, unsigned int nr_cores)
{
	return umcg_rq_alloc((struct umcg_rq_set **)priv, nr_cores);
}

static void pinned_fini(void *priv)
{
	umcg_rq_free(priv);
}

static int pinned_enqueue(void *priv, umcg_thread_t *t, int core, unsigned int flags)
{
	if (t->pref_core < 0) {
		/* Fixed at the first enqueue: the spawner's core, if any. */
		t->pref_core = core >= 0 ? core : (int)((unsigned int)t->tid %
							((struct umcg_rq_set *)priv)->nr);
	}
	return umcg_rq_push(priv, t->pref_core, t);
}

static umcg_thread_t *pinned_pick(void *priv, int core)
{
	return umcg_rq_pop(priv, core);
}

static int pinned_remove(void *priv, umcg_thread_t *t)
{
	return umcg_rq_remove(priv, t);
}

const struct umcg_policy_ops umcg_policy_pinned = {
	.name		= "pinned",
	.init		= pinned_init,
	.fini		= pinned_fini,
	.enqueue	= pinned_enqueue,
	.pick		= pinned_pick,
	.remove		= pinned_remove,
	.flags		= UMCG_POLICY_STAGE,
};
