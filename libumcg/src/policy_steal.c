// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * policy_steal.c - "steal": per-core FIFO with work stealing, the default.
 *
 * A thread made runnable goes to the queue of the core that made it so (the
 * waker's, or its own on yield and preemption), as in ForkJoinPool; a new
 * thread to its preferred core's.  A core takes from its own queue first,
 * then the oldest thread of the next non-empty queue.
 *
 * Lock order: see runqueue.c.
 */
#include "runqueue.h"

static int steal_init(void **priv, unsigned int nr_cores)
{
	return umcg_rq_alloc((struct umcg_rq_set **)priv, nr_cores);
}

static void steal_fini(void *priv)
{
	umcg_rq_free(priv);
}

static int steal_enqueue(void *priv, umcg_thread_t *t, int core, unsigned int flags)
{
	if (core < 0)
		core = t->pref_core >= 0 ? t->pref_core : atomic_load(&t->core);
	/* Its queue's core first; any idle core may steal it. */
	return umcg_rq_push(priv, core < 0 ? 0 : (unsigned int)core, t);
}

static umcg_thread_t *steal_pick(void *priv, int core)
{
	struct umcg_rq_set *set = priv;
	struct umcg_thread *t = umcg_rq_pop(set, core);
	struct umcg_group *g;

	for (unsigned int i = 1; !t && i < set->nr; i++) {
		t = umcg_rq_pop(set, core + i);
		if (t && (g = atomic_load(&umcg_group)) && (unsigned int)core < g->nr_cores)
			atomic_fetch_add_explicit(&g->cores[core].stats->steals, 1,
						  memory_order_relaxed);
	}
	return t;
}

static int steal_remove(void *priv, umcg_thread_t *t)
{
	return umcg_rq_remove(priv, t);
}

const struct umcg_policy_ops umcg_policy_steal = {
	.name		= "steal",
	.init		= steal_init,
	.fini		= steal_fini,
	.enqueue	= steal_enqueue,
	.pick		= steal_pick,
	.remove		= steal_remove,
	.flags		= UMCG_POLICY_STAGE | UMCG_POLICY_ANY_CORE,
};
