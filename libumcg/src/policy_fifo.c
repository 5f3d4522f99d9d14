// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * policy_fifo.c - "fifo": one global FIFO for every core.
 *
 * Lock order: see runqueue.c.
 */
#include "runqueue.h"

static int fifo_init(void **priv, unsigned int nr_cores)
{
	return umcg_rq_alloc((struct umcg_rq_set **)priv, 1);
}

static void fifo_fini(void *priv)
{
	umcg_rq_free(priv);
}

static int fifo_enqueue(void *priv, umcg_thread_t *t, int core, unsigned int flags)
{
	umcg_rq_push(priv, 0, t);
	return -1;
}

static umcg_thread_t *fifo_pick(void *priv, int core)
{
	return umcg_rq_pop(priv, 0);
}

static int fifo_remove(void *priv, umcg_thread_t *t)
{
	return umcg_rq_remove(priv, t);
}

const struct umcg_policy_ops umcg_policy_fifo = {
	.name		= "fifo",
	.init		= fifo_init,
	.fini		= fifo_fini,
	.enqueue	= fifo_enqueue,
	.pick		= fifo_pick,
	.remove		= fifo_remove,
	.flags		= UMCG_POLICY_STAGE | UMCG_POLICY_ANY_CORE,
};
