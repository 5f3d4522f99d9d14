/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * umcg/policy.h - the policy SPI: which runnable worker runs next on a core.
 *
 * A policy is a table of callbacks handed to umcg_init() in
 * struct umcg_config.policy.  The runtime owns the threads and their
 * states; the policy owns only the order of the runnable ones.
 *
 * Synchronisation table (who may call what concurrently):
 *
 *   init, fini       once each, from umcg_init() / umcg_fini(), with no
 *                    other callback running
 *   enqueue          any thread, concurrently with every callback but
 *                    init/fini
 *   pick, remove     any thread, concurrently with every callback but
 *                    init/fini
 *
 * The runtime guarantees: a thread is enqueued only when RUNNABLE and not
 * already held by the policy; each thread handed to enqueue is given back
 * exactly once, by pick or by a remove that returns 1.  The policy must
 * make pick and remove atomic with respect to each other (a thread cannot
 * be both picked and removed) and must never block in them for long: they
 * run on the switch path — and in the preemption signal handler (SIGURG),
 * so they must not call malloc(), stdio or anything else that is not
 * async-signal-safe.  The handler calls them only for a worker it
 * interrupted outside libumcg, hence never inside a callback: a lock that
 * only the callbacks take is never held by the code it interrupted (the
 * built-in policies take one per queue in pick and remove, none in
 * enqueue, which is wait-free).  A thread the policy holds may be passed to
 * umcg_thread_policy_data() for a private word.  fini is not called if
 * workers were still alive at umcg_fini().
 *
 * A thread counts as held once its enqueue has returned.  A pick may miss
 * a thread whose enqueue is still in progress, and a FIFO made of
 * liburcu's wait-free queue (urcu/wfcqueue.h, as the built-in policies
 * are) may also miss those enqueued behind it until that enqueue links
 * its node; remove may answer 0 for them too.  No work is lost by it:
 * after every enqueue returns, the runtime wakes a server to pick (or
 * relies on one already looking, which picks again).  A pick must not
 * miss a thread whose enqueue, and every enqueue before it, returned.
 *
 * Memory ordering: the runtime publishes a thread's state before enqueue
 * and reads it, through the pointer pick or remove returned, after; a
 * policy whose queues are protected by a lock, or are liburcu's queues
 * (cds_wfcq_enqueue() issues a full barrier before it links the node,
 * and a dequeue reads the node through the pointer it loaded), needs
 * nothing more.
 */
#ifndef UMCG_POLICY_H
#define UMCG_POLICY_H

#include <umcg.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Why a thread is enqueued (flags of enqueue). */
#define UMCG_ENQ_NEW		(1U << 0)	/* spawned or attached */
#define UMCG_ENQ_WAKEUP		(1U << 1)	/* unparked, or back from a block */
#define UMCG_ENQ_YIELD		(1U << 2)	/* it yielded its core */
#define UMCG_ENQ_PREEMPT	(1U << 3)	/* its time slice ran out */

/**
 * struct umcg_policy_ops - a scheduling policy
 * @name:    short name, as umcg-run --policy and umcg_policy_find() take it
 * @init:    set up for @nr_cores cores, storing private state in *@priv;
 *           0 or -errno (umcg_init() fails with it)
 * @fini:    free what init made; no thread is held any more
 * @enqueue: take runnable @t; @core is the core of the thread that made it
 *           runnable (the waker's, or its own on yield/preempt), or -1 when
 *           not called from a core (e.g. a timer or a plain thread).
 *           Returns the core that should run @t: its server is woken if that
 *           core is idle, else the server of another idle core (which may
 *           find nothing it can run); -1 when any core may.  Once @t is
 *           queued it must not be touched: another core may run it, and it
 *           may exit
 * @pick:    the next thread to run on @core, no longer held, or NULL
 * @remove:  if @t is held, stop holding it and return 1; else return 0
 * @flags:   UMCG_POLICY_* below; 0 for none
 */
struct umcg_policy_ops {
	const char *name;
	int (*init)(void **priv, unsigned int nr_cores);
	void (*fini)(void *priv);
	int (*enqueue)(void *priv, umcg_thread_t *t, int core, unsigned int flags);
	umcg_thread_t *(*pick)(void *priv, int core);
	int (*remove)(void *priv, umcg_thread_t *t);
	unsigned int flags;
};

/*
 * Flags of struct umcg_policy_ops.
 *
 * UMCG_POLICY_STAGE: the thread pick() returns for a core stays the right
 * next one for it while more threads are enqueued (FIFO orders: yes; LIFO
 * or priorities: no).  Then, with a kernel that can run a staged next
 * worker (kmod), libumcg picks a busy core's next thread early and stages
 * it, so that the core's worker blocking hands the core over in the kernel,
 * in one context switch.
 * UMCG_POLICY_ANY_CORE: a thread pick() returned for one core may run on
 * another (no pinning): an idle core may take a thread staged on another,
 * and pick() for any core returns a thread whenever one is queued, so
 * that libumcg wakes an idle core's server only when no other server is
 * already looking for work (as Go's scheduler does).
 */
#define UMCG_POLICY_STAGE	(1U << 0)
#define UMCG_POLICY_ANY_CORE	(1U << 1)

/*
 * The built-in policies:
 *   "steal"   per-core FIFO with work stealing (the default): a woken thread
 *             goes to the waker's core first; an idle core takes the oldest
 *             thread of another core's queue (ForkJoinPool's model)
 *   "fifo"    one global FIFO for all cores
 *   "pinned"  a thread always runs on one core: its umcg_attr.core, else
 *             its spawner's core, else one chosen by its tid; no stealing
 * Returns NULL for an unknown name.
 */
const struct umcg_policy_ops *umcg_policy_find(const char *name);

#ifdef __cplusplus
}
#endif

#endif /* UMCG_POLICY_H */
