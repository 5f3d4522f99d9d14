// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * sched.c - the switch machinery: cores change hands here.
 *
 * A core is owned by one worker (core->current) or by its server (NULL).
 * Only the owner gives it away: on yield, park, switch or exit the owner
 * picks the next thread from the policy and hands the core over directly
 * (the next thread sleeps on its state word until it reads RUNNING), or,
 * with nothing runnable, hands it back to the server.  The server owns an
 * idle core, and is woken (core->wake_seq) whenever a thread becomes
 * runnable and its core is idle, or when the monitor takes a core back from
 * a worker blocked in the kernel.
 *
 * Whoever takes a thread for a core — back from the policy (pick, remove)
 * or out of a park (claim) — is the only one allowed to make it RUNNING,
 * and does so only after recording the core as the thread's: that is what
 * makes "at most one worker per core" hold.
 *
 * Kernel moves.  With a backend whose kernel moves a worker's word by
 * itself (umcg_backend_ops.kernel_moves: RUNNING -> BLOCKED -> RUNNABLE,
 * RUNNING -> RUNNABLE on preemption, -> DONE at exit; uapi/umcg.h), the
 * servers learn of the moves from UMCG_EV_MOVED events, possibly several
 * servers about the same thread at once, possibly several moves in one
 * event, possibly an event that comes after the move was acted on.  Each
 * *run* of a thread — from the moment it is made RUNNING until it is made
 * RUNNING again — needs at most: its core freed once (if the kernel moved
 * it off RUNNING), and it queued once (if the kernel left it RUNNABLE).
 * The kernel moves a thread only off RUNNING and only in the thread's own
 * context, and a thread the kernel moved runs no user code until it is
 * made RUNNING again, so in one run either the thread leaves RUNNING
 * itself (yield, park, switch, exit) or the kernel moves it, never both.
 *
 * t->kmove numbers the runs (bits 8-63) and says, in bits 0-7, what
 * happened in the current one: UMCG_KMOVE_LIB, the thread left RUNNING
 * itself (set just before its compare-and-swap); STARTING, the run is
 * being started (its word may not read RUNNING yet); and which duties
 * were done.  Whoever makes a thread RUNNING starts a run before and ends
 * STARTING after the store (umcg_run_begin(), umcg_run_started()).  Run
 * numbers are taken by compare-and-swap, never reused: a thread taking
 * RUNNING back for itself races a claim or an unpark of its word, and the
 * loser's abandoned start must not mark the winner's run
 * (umcg_run_begin_self(), umcg_run_abort()).  A
 * server that finds no LIB and no STARTING knows that a word off RUNNING
 * was moved by the kernel in the current run; it claims a duty with a
 * compare-and-swap of t->kmove under the lock of the thread's core, so
 * each duty is done once, in the run it belongs to.
 *
 * Staged next worker.  With a backend whose kernel runs a core's next
 * worker itself when the core's worker blocks (umcg_backend_ops.stage_*:
 * kmod with UMCG_FEATURE_HANDOFF), each busy core may have one thread
 * taken from the policy and *staged*: offered to the kernel, which on the
 * owner's block makes it RUNNING and runs it there in one context switch,
 * without waking the server.  Whoever changes the run queue refills the
 * stage (umcg_core_refill(): a waker after its enqueue, the server after a
 * pick), one refiller per core at a time (core->refilling), only with a
 * policy whose pick stays right as threads are enqueued (UMCG_POLICY_STAGE)
 * and only while no core of the group is idle (an idle core's server takes
 * work from the policy instead).  A staged thread is held by the stage, as a picked one
 * by its picker: its run is begun when it is staged (STAGED in t->kmove
 * instead of STARTING: its word reads RUNNABLE until it runs), and it
 * leaves the stage in one of three ways, each under core->lock: the
 * kernel ran it, which the next holder of the lock acknowledges and
 * records (umcg_core_sync_locked(): it becomes core->current, its run has
 * started); a pick takes it back first (umcg_pick(): the stage is the head
 * of the core's queue; an idle core's server may take another core's, when
 * the policy pins nothing, UMCG_POLICY_ANY_CORE); or
 * a directed switch claims it (umcg_claim()).  Every path that changes or
 * reads a core's owner under core->lock syncs first, so core->current is
 * stale only in the one way that does no harm: it names the worker that
 * blocked while its successor already runs.
 *
 * Lock order: core->lock is a leaf, but for one core's lock taken inside
 * another's never.  It is never held across a policy callback; a backend's
 * server_wake() may be called under it.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "backend.h"
#include "internal.h"
#include "probes.h"

uint64_t umcg_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * @t left the core on @cpu blocked in the kernel: count it, once per block.
 * The probe fires before the count, so that whoever sees the count (a
 * tracer's workload waiting for the block) sees the probe's event already
 * written.
 */
static inline void umcg_count_block(struct umcg_core *c, struct umcg_thread *t)
{
	umcg_probe(block, t->tid, c->cpu);
	atomic_fetch_add_explicit(&t->nr_blocks, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->stats->blocks, 1, memory_order_release);
}

/* @t left core @c at the end of its time slice: as above. */
static inline void umcg_count_preempt(struct umcg_core *c, struct umcg_thread *t)
{
	umcg_probe(preempt, t->tid, c->cpu);
	atomic_fetch_add_explicit(&t->nr_preempts, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->stats->preempts, 1, memory_order_release);
}

/* The CPU of core @idx of @g, for the probes; -1 for no core. */
static inline int umcg_core_cpu(const struct umcg_group *g, int idx)
{
	return idx >= 0 && (unsigned int)idx < g->nr_cores ? g->cores[idx].cpu : -1;
}

/*
 * The dump's "time in state": a coarse clock (the last tick's time, a
 * memory read in the vDSO), never later than umcg_now_ns().
 */
static void umcg_set_state_time(struct umcg_thread *t)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	atomic_store_explicit(&t->state_since_ns,
			      (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec,
			      memory_order_relaxed);
}

/* @c's owner changed: its time slice (C6) starts now, if the group has one. */
static void umcg_core_slice_start(struct umcg_core *c)
{
	if (c->group->time_slice_ns)
		atomic_store(&c->run_since_ns, umcg_now_ns());
}

void umcg_server_kick(struct umcg_core *c)
{
	atomic_fetch_add(&c->wake_seq, 1);
	c->group->backend->server_wake(c);
}

/*
 * Looking servers (Go's spinning Ms, nmspinning).  With a policy that lets
 * any core take any queued thread (UMCG_POLICY_ANY_CORE), a server woken
 * to look for work counts in g->nr_looking (its c->looking set, by the
 * one that wakes it) until it stops looking, and an enqueue that finds a
 * server looking wakes nobody: it sets g->kick_owed instead.
 *
 *   enqueue   after the policy's enqueue: the core the policy named, if
 *             idle, has its server woken as a looker; else, if nobody
 *             looks, the first idle core's; else kick_owed = 1, a full
 *             fence, and nr_looking read again: 0 means the lookers
 *             stopped meanwhile, and the enqueue wakes one itself.
 *   looker    stops looking when it found a thread to run, or before it
 *             sleeps (also when its core got an owner meanwhile): c->
 *             looking cleared, nr_looking down, a full fence, then one
 *             more pick if its core is idle; then, if nobody else looks
 *             and kick_owed was set, it clears it and wakes the next
 *             idle core's server as a looker (Go's resetspinning()).
 *
 * No lost work: an enqueue that skipped its wake-up read nr_looking > 0
 * after its enqueue, its kick_owed and a fence; each looker it counted
 * counts down, fences and only then looks again and reads kick_owed.  By
 * the fences, either the enqueue's second read sees nr_looking at 0 (it
 * wakes a server itself) or the last looker's pick sees the thread and
 * its read sees kick_owed: it runs the thread, or wakes another idle
 * server, which picks it.  So a queued thread with an idle core gets a
 * server after at most one pick per looker.  With no idle core, the
 * busy cores' owners pick at their next hand-off, and a core going idle
 * kicks its own server, which picks again.  A server is thus woken per
 * enqueue that finds no looker, and again only when work may remain (an
 * enqueue left its wake-up), not after every pick.
 *
 * With any other policy (a thread may be for one core only) every
 * enqueue wakes the named core's server or the first idle one, and a
 * server that picked wakes the next idle one, which looks or sleeps.
 */
static bool umcg_go_like(const struct umcg_group *g)
{
	return g->policy->flags & UMCG_POLICY_ANY_CORE;
}

/* Wake @c's server; with the looking rule, as a looker. */
static void umcg_kick_looker(struct umcg_group *g, struct umcg_core *c)
{
	if (umcg_go_like(g) && !atomic_exchange(&c->looking, 1))
		atomic_fetch_add(&g->nr_looking, 1);
	umcg_server_kick(c);
}

/* The first idle core from @start (any if < 0), or NULL. */
static struct umcg_core *umcg_first_idle(struct umcg_group *g, int start)
{
	unsigned int n = g->nr_cores;

	if (start < 0 || (unsigned int)start >= n)
		start = 0;
	for (unsigned int i = 0; i < n; i++) {
		struct umcg_core *c = &g->cores[(start + i) % n];

		if (!__atomic_load_n(&c->current, __ATOMIC_SEQ_CST))
			return c;
	}
	return NULL;
}

/*
 * A thread was queued (the policy named @core, or -1): wake the server of
 * an idle core so that it picks, by the rules above; @start: where the
 * search for an idle core begins when @core is busy.
 */
void umcg_core_kick_idle(struct umcg_group *g, int core, int start)
{
	struct umcg_core *c;

	if (core >= 0) {
		c = &g->cores[(unsigned int)core % g->nr_cores];
		if (!__atomic_load_n(&c->current, __ATOMIC_SEQ_CST)) {
			umcg_kick_looker(g, c);
			return;
		}
		start = core;
	}
	if (umcg_go_like(g) && atomic_load(&g->nr_looking)) {
		if (!atomic_load(&g->kick_owed))
			atomic_store(&g->kick_owed, 1);
		atomic_thread_fence(memory_order_seq_cst);
		if (atomic_load(&g->nr_looking))
			return;
	}
	c = umcg_first_idle(g, start);
	if (c)
		umcg_kick_looker(g, c);
}

/*
 * After a looker stopped looking (and looked once more): the wake-up an
 * enqueue left to the lookers, if nobody looks any more.
 */
static void umcg_kick_owed(struct umcg_core *c)
{
	struct umcg_group *g = c->group;
	struct umcg_core *idle;

	if (atomic_load(&g->nr_looking) || !atomic_load(&g->kick_owed) ||
	    !atomic_exchange(&g->kick_owed, 0))
		return;
	idle = umcg_first_idle(g, c->idx + 1);
	if (idle)
		umcg_kick_looker(g, idle);
}

/* @c's server stops looking; true if it was looking. */
static bool umcg_stop_looking(struct umcg_core *c)
{
	if (!atomic_load(&c->looking) || !atomic_exchange(&c->looking, 0))
		return false;
	atomic_fetch_sub(&c->group->nr_looking, 1);
	/* Before the look again: pairs with the enqueue's fence. */
	atomic_thread_fence(memory_order_seq_cst);
	return true;
}

/*
 * The policy's next thread for @c, or NULL.  It stays RUNNABLE, held by
 * nobody, until umcg_core_run() makes it @c's owner and only then RUNNING:
 * a thread must never run before the core is recorded as its.
 */
static struct umcg_thread *umcg_policy_take(struct umcg_core *c)
{
	struct umcg_group *g = c->group;
	struct umcg_thread *t;
	uint32_t s;

	for (int tries = 0;; tries++) {
		t = g->policy->pick(g->policy_priv, c->idx);
		if (!t)
			return NULL;
		s = umcg_thread_load_state(t);
		if (umcg_state_of(s) == UMCG_TASK_RUNNABLE)
			break;
		/*
		 * A policy's mistake (one given to umcg_init()): the thread
		 * is not its to give; counted (umcg_dump()), never run, and
		 * the policy asked again, a few times.
		 */
		atomic_fetch_add_explicit(&g->stats->policy_errors, 1, memory_order_relaxed);
		if (tries == 8)
			return NULL;
	}
	umcg_ref_get(t);	/* dropped once woken: umcg_wake_put() */
	atomic_store(&t->awake, 0);
	return t;
}

/* umcg_policy_take(), the thread's core recorded as @c. */
static struct umcg_thread *umcg_policy_pick(struct umcg_core *c)
{
	struct umcg_thread *t = umcg_policy_take(c);

	if (t)
		atomic_store(&t->core, c->idx);
	return t;
}


/*
 * Let @t, made RUNNING by umcg_core_run(), run; then drop the reference
 * that kept its memory: it may exit and be freed from here on.
 */
static void umcg_wake_put(struct umcg_group *g, struct umcg_thread *t)
{
	g->backend->wake(t);
	umcg_ref_put(t);
}

/* Record @t (NULL: the server) as the owner of @c. */
static void umcg_core_install(struct umcg_core *c, struct umcg_thread *t)
{
	pthread_mutex_lock(&c->lock);
	umcg_core_sync_locked(c);
	__atomic_store_n(&c->current, t, __ATOMIC_SEQ_CST);
	atomic_fetch_add(&c->nr_switches, 1);
	umcg_core_slice_start(c);
	pthread_mutex_unlock(&c->lock);
	if (t) {
		atomic_fetch_add_explicit(&t->nr_switches, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&c->stats->switches, 1, memory_order_relaxed);
		umcg_probe(pick, t->tid, c->cpu);
	}
}

/* t->kmove bits: see "Kernel moves" above. */
#define UMCG_KMOVE_RELEASED	(1ULL << 0)	/* its core was freed */
#define UMCG_KMOVE_QUEUED	(1ULL << 1)	/* it was handed to the policy */
#define UMCG_KMOVE_EXITED	(1ULL << 2)	/* its exit was reported */
#define UMCG_KMOVE_LIB		(1ULL << 3)	/* it left RUNNING itself */
#define UMCG_KMOVE_STARTING	(1ULL << 4)	/* being made RUNNING */
#define UMCG_KMOVE_STAGED	(1ULL << 5)	/* staged: not running yet */
#define UMCG_KMOVE_KHELD	(1ULL << 6)	/* ... out of the kernel's hold */
#define UMCG_KMOVE_RUN_SHIFT	8

/*
 * umcg_thread_core(): the core @t runs on or last ran on.  A staged thread's
 * t->core is already the core it is staged on (the kernel may run it there
 * at any moment, and it must then find its core there); until it runs
 * (its word reads RUNNABLE until the kernel or a pick makes it RUNNING),
 * report the one it had before.
 */
int umcg_thread_core_of(const struct umcg_thread *t)
{
	struct umcg_thread *m = (struct umcg_thread *)t;
	uint64_t k, again = atomic_load(&m->kmove);
	int core;

	/*
	 * A stage sets STAGED before t->core (umcg_run_begin_staged()): a
	 * t->kmove unchanged around the read says the core read is not a
	 * stage's core read without its STAGED.
	 */
	do {
		k = again;
		if ((k & UMCG_KMOVE_STAGED) &&
		    umcg_state_of(umcg_thread_load_state(m)) == UMCG_TASK_RUNNABLE)
			core = atomic_load(&m->core_reported);
		else
			core = atomic_load(&m->core);
		again = atomic_load(&m->kmove);
	} while (again != k);
	return core;
}

static bool umcg_kmoves(const struct umcg_thread *t)
{
	return t->group && t->group->backend->kernel_moves;
}

/* The t->kmove of the run after the one @k numbers, being started. */
static uint64_t umcg_run_next(uint64_t k)
{
	return ((k >> UMCG_KMOVE_RUN_SHIFT) + 1) << UMCG_KMOVE_RUN_SHIFT | UMCG_KMOVE_STARTING;
}

/* Tell the kernel which server to poke about @t's run just begun. */
static void umcg_run_prepare(struct umcg_thread *t)
{
	struct umcg_group *g = t->group;
	struct umcg_task *ut = t->ut;
	int idx = atomic_load(&t->core);

	if (idx >= 0)
		__atomic_store_n(&ut->server_tid,
				 (uint32_t)__atomic_load_n(&g->cores[idx].server_tid,
							   __ATOMIC_RELAXED),
				 __ATOMIC_RELAXED);
	atomic_store(&t->kmove_blocked_ns, __atomic_load_n(&ut->blocked_ns, __ATOMIC_RELAXED));
}

/*
 * @t is about to be made RUNNING by its holder: start a new run (see
 * "Kernel moves" above).  The run number is taken with a compare-and-swap,
 * so no two starts share one and umcg_run_abort() of a start that lost
 * the word never marks this run.  A no-op for the user backend.
 */
static void umcg_run_begin(struct umcg_thread *t)
{
	uint64_t k;

	if (!umcg_kmoves(t))
		return;
	k = atomic_load(&t->kmove);
	while (!atomic_compare_exchange_weak(&t->kmove, &k, umcg_run_next(k)))
		;
	umcg_run_prepare(t);
}

/*
 * @self left RUNNING itself (LIB) and still owns its core, and wants
 * RUNNING back; its word, PARKED or RUNNABLE meanwhile, may be won by a
 * claim or an unpark, whose holder then begins its own run.  Start a run
 * only if none began since @self left.  Returns the t->kmove of the run
 * begun; 0 if another began (@self lost its word), or for the user
 * backend (nothing to begin).
 */
static uint64_t umcg_run_begin_self(struct umcg_thread *self)
{
	uint64_t k, next;

	if (!umcg_kmoves(self))
		return 0;
	k = atomic_load(&self->kmove);
	next = umcg_run_next(k);
	if (!(k & UMCG_KMOVE_LIB) ||
	    !atomic_compare_exchange_strong(&self->kmove, &k, next))
		return 0;
	umcg_run_prepare(self);
	return next;
}

/* @t's word reads RUNNING now: the run has started. */
static void umcg_run_started(struct umcg_thread *t)
{
	if (umcg_kmoves(t))
		atomic_fetch_and(&t->kmove, ~UMCG_KMOVE_STARTING);
}

/*
 * The run @begun (umcg_run_begin_self()) was not started after all: the
 * word is the library's again, unless a holder began a run since.
 */
static void umcg_run_abort(struct umcg_thread *self, uint64_t begun)
{
	uint64_t k = begun;

	atomic_compare_exchange_strong(&self->kmove, &k,
				       (begun & ~UMCG_KMOVE_STARTING) | UMCG_KMOVE_LIB);
}

/* @self is about to leave RUNNING itself (or, @on false, did not after all). */
static void umcg_run_lib(struct umcg_thread *self, bool on)
{
	if (!umcg_kmoves(self))
		return;
	if (on)
		atomic_fetch_or(&self->kmove, UMCG_KMOVE_LIB);
	else
		atomic_fetch_and(&self->kmove, ~UMCG_KMOVE_LIB);
}

/*
 * Backends with pin_by_waker: set @t's affinity to its new core's CPU
 * before it is made RUNNING, as it may resume in its own code (the
 * kernel held it) and never pass umcg_follow_core().  Done by the holder
 * while @t sleeps, so the kernel need not migrate a running thread.
 */
static void umcg_pin_to_core(struct umcg_thread *t)
{
	struct umcg_group *g = t->group;
	int core = atomic_load(&t->core);
	cpu_set_t set;
	int cpu;

	if (!g->backend->pin_by_waker || core < 0)
		return;
	cpu = g->cores[core].cpu;
	if (t->pinned_cpu == cpu)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (!sched_setaffinity(t->tid, sizeof(set), &set))
		t->pinned_cpu = cpu;
}

/* RUNNABLE (held by the caller) -> RUNNING, keeping the flags but PREEMPT. */
static void umcg_set_running(struct umcg_thread *t)
{
	const struct umcg_backend_ops *b = t->group ? t->group->backend : NULL;
	uint32_t s;

	if (b && b->wake_prepare)
		b->wake_prepare(t);
	umcg_pin_to_core(t);
	umcg_run_begin(t);
	s = umcg_thread_load_state(t);

	while (!umcg_state_cas(t, &s, (s & ~(UMCG_TASK_STATE_MASK | UMCG_TF_PREEMPT)) |
				      UMCG_TASK_RUNNING))
		;
	umcg_run_started(t);
	umcg_set_state_time(t);
}

/* Give @c to @t, got from umcg_pick() or umcg_claim(), and wake it. */
static void umcg_core_run(struct umcg_core *c, struct umcg_thread *t)
{
	umcg_core_install(c, t);
	umcg_set_running(t);
	umcg_wake_put(c->group, t);
}

/*
 * Is a RUNNABLE @t, whose t->kmove reads @k, waiting in the kernel's hold
 * (the kernel moved it there in its current run)?
 */
static bool umcg_kmove_kernel_held(uint64_t k)
{
	if (k & UMCG_KMOVE_STAGED)
		return k & UMCG_KMOVE_KHELD;
	return (k >> UMCG_KMOVE_RUN_SHIFT) && !(k & (UMCG_KMOVE_LIB | UMCG_KMOVE_STARTING));
}

/* Begin the run of @t, held by the refiller of @c, as a staged one on @c. */
static void umcg_run_begin_staged(struct umcg_core *c, struct umcg_thread *t)
{
	uint64_t k = atomic_load(&t->kmove), next;

	do {
		next = ((k >> UMCG_KMOVE_RUN_SHIFT) + 1) << UMCG_KMOVE_RUN_SHIFT |
		       UMCG_KMOVE_STAGED |
		       (umcg_kmove_kernel_held(k) ? UMCG_KMOVE_KHELD : 0);
	} while (!atomic_compare_exchange_weak(&t->kmove, &k, next));
	/* After STAGED: umcg_thread_core_of() never reports this core early. */
	atomic_store(&t->core, c->idx);
	umcg_pin_to_core(t);
	atomic_store(&c->stage_run, next >> UMCG_KMOVE_RUN_SHIFT);
	umcg_run_prepare(t);
}

/*
 * Under c->lock: if the kernel ran @c's staged worker (its owner blocked),
 * record it as @c's owner, its run as started, and drop the stage's
 * reference.
 */
void umcg_core_sync_locked(struct umcg_core *c)
{
	struct umcg_group *g = c->group;
	struct umcg_thread *t;
	uint64_t k, run;

	if (!g->backend->stage_ran || !(t = g->backend->stage_ran(c)))
		return;
	run = atomic_load(&c->stage_run);
	k = atomic_load(&t->kmove);
	while ((k >> UMCG_KMOVE_RUN_SHIFT) == run && (k & UMCG_KMOVE_STAGED) &&
	       !atomic_compare_exchange_weak(&t->kmove, &k,
					     k & ~(UMCG_KMOVE_STAGED | UMCG_KMOVE_KHELD)))
		;
	__atomic_store_n(&c->current, t, __ATOMIC_SEQ_CST);
	atomic_fetch_add(&c->nr_switches, 1);
	umcg_core_slice_start(c);
	atomic_fetch_add_explicit(&t->nr_switches, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->stats->switches, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&c->stats->handoffs, 1, memory_order_relaxed);
	umcg_stats_filled(c);
	umcg_set_state_time(t);
	umcg_probe(handoff, t->tid, c->cpu);
	umcg_ref_put(t);
}

/*
 * Take back the thread staged on @c if it is @want (NULL: whichever): the
 * caller holds it (with the stage's reference), as if it had picked it.
 */
static struct umcg_thread *umcg_core_unstage(struct umcg_core *c, struct umcg_thread *want)
{
	const struct umcg_backend_ops *b = c->group->backend;
	struct umcg_thread *t;

	if (!b->unstage)
		return NULL;
	/*
	 * Nothing staged and no hand-off to record: no lock.  A stage made
	 * after this load is one made after the call, as with the lock.
	 */
	if (b->stage_free(c))
		return NULL;
	pthread_mutex_lock(&c->lock);
	umcg_core_sync_locked(c);
	t = b->unstage(c, want);
	pthread_mutex_unlock(&c->lock);
	return t;
}

/* Any core idle (owned by its server)? */
static bool umcg_group_has_idle(struct umcg_group *g)
{
	for (unsigned int i = 0; i < g->nr_cores; i++)
		if (!__atomic_load_n(&g->cores[i].current, __ATOMIC_SEQ_CST))
			return true;
	return false;
}

/*
 * Stage the policy's next thread for @c, if @c is busy, has room, and no
 * core of the group is idle.  Any thread; one refiller per core at once.
 */
void umcg_core_refill(struct umcg_core *c)
{
	struct umcg_group *g = c->group;
	const struct umcg_backend_ops *b = g->backend;
	struct umcg_thread *t;

	if (!b->stage_free || !(g->policy->flags & UMCG_POLICY_STAGE) ||
	    umcg_group_has_idle(g))
		return;
	if (atomic_exchange(&c->refilling, 1))
		return;
	/* After the flag: umcg_stage_drop_all() waits for it or is seen. */
	if (!atomic_load(&g->stopping) && b->stage_free(c) &&
	    (t = umcg_policy_take(c))) {
		/* umcg_thread_core() goes on reporting where it last ran. */
		atomic_store(&t->core_reported, atomic_load(&t->core));
		umcg_run_begin_staged(c, t);
		b->stage(c, t);
		/* @c went idle meanwhile: its server takes the stage. */
		if (!__atomic_load_n(&c->current, __ATOMIC_SEQ_CST))
			umcg_server_kick(c);
	}
	atomic_store(&c->refilling, 0);
}

/*
 * umcg_fini(), every server stopped (g->stopping set): empty every stage.
 * A staged thread the kernel ran is recorded as running; one still staged
 * is left RUNNABLE, held by nobody, for the release of the group's threads
 * (its STAGED run says whether it waits in the kernel's hold).
 */
void umcg_stage_drop_all(struct umcg_group *g)
{
	if (!g->backend->unstage)
		return;
	for (unsigned int i = 0; i < g->nr_cores; i++) {
		struct umcg_core *c = &g->cores[i];
		struct umcg_thread *t;

		while (atomic_load(&c->refilling))
			sched_yield();
		t = umcg_core_unstage(c, NULL);
		if (t)
			umcg_ref_put(t);
	}
}

/*
 * The next thread for @c, held by the caller: @c's staged one, else the
 * policy's, else, for an idle @c (the server picks), another core's staged
 * one.
 */
static struct umcg_thread *umcg_pick(struct umcg_core *c)
{
	struct umcg_group *g = c->group;
	struct umcg_thread *t;

	if (!g->backend->unstage)
		return umcg_policy_pick(c);
	t = umcg_core_unstage(c, NULL);
	if (!t)
		t = umcg_policy_pick(c);
	for (unsigned int i = 1; !t && (g->policy->flags & UMCG_POLICY_ANY_CORE) &&
	     i < g->nr_cores && !__atomic_load_n(&c->current, __ATOMIC_SEQ_CST); i++) {
		t = umcg_core_unstage(&g->cores[(c->idx + i) % g->nr_cores], NULL);
		if (t)
			atomic_store(&t->core, c->idx);
	}
	return t;
}

/*
 * @self owns @c and its state just left RUNNING: give @c to the policy's
 * next thread, or back to the server.
 */
void umcg_core_give(struct umcg_core *c, struct umcg_thread *self)
{
	struct umcg_thread *next = umcg_pick(c);

	if (next) {
		umcg_core_run(c, next);
	} else {
		umcg_core_install(c, NULL);
		umcg_server_kick(c);
	}
}

/*
 * @t was made RUNNABLE by the caller: hand it to the policy.  @t may run
 * (and exit) as soon as it is queued: it is not touched after enqueue.
 */
void umcg_make_runnable(struct umcg_thread *t, int waker_core, unsigned int flags)
{
	struct umcg_group *g = t->group;
	int core;

	umcg_set_state_time(t);
	if (umcg_stats_timing(g))
		atomic_store_explicit(&t->ready_ns, umcg_now_ns(), memory_order_relaxed);
	atomic_store_explicit(&t->ready_why, flags, memory_order_relaxed);
	umcg_probe(wake, t->tid, umcg_core_cpu(g, waker_core), flags);
	core = g->policy->enqueue(g->policy_priv, t, waker_core, flags);
	umcg_core_kick_idle(g, core, waker_core);
	if (core < 0)
		core = waker_core;
	if (g->backend->stage_free && core >= 0 && (unsigned int)core < g->nr_cores)
		umcg_core_refill(&g->cores[core]);
}

/* Run on the CPU of the core we were given (only when it changed). */
static void umcg_follow_core(struct umcg_thread *self)
{
	struct umcg_group *g = self->group;
	int core = atomic_load(&self->core);
	cpu_set_t set;

	if (!g || core < 0 || g->cores[core].cpu == self->pinned_cpu)
		return;
	CPU_ZERO(&set);
	CPU_SET(g->cores[core].cpu, &set);
	if (!sched_setaffinity(0, sizeof(set), &set))
		self->pinned_cpu = g->cores[core].cpu;
}

/*
 * @self was released by umcg_fini(), which may have made its word RUNNING
 * to end its wait: with a kernel that moves RUNNING workers, leave
 * RUNNING, so that the kernel lets the plain thread it now is alone.
 */
static void umcg_released_quiet(struct umcg_thread *self)
{
	uint32_t s = umcg_thread_load_state(self);

	if (!umcg_kmoves(self))
		return;
	while (umcg_state_of(s) == UMCG_TASK_RUNNING &&
	       !umcg_state_cas(self, &s, (s & ~(UMCG_TASK_STATE_MASK | UMCG_TF_PREEMPT)) |
				 UMCG_TASK_PARKED))
		;
}

/*
 * Sleep until the policy gives @self a core (its state reads RUNNING), or
 * until @abs_ns (0: no limit).  0, or -ETIMEDOUT with @self not RUNNING, or
 * -ESRCH at once for a thread the group released (umcg_fini()).
 */
int umcg_wait_for_core(struct umcg_thread *self, uint64_t abs_ns)
{
	for (;;) {
		uint32_t s = umcg_thread_load_state(self);
		struct umcg_group *g;
		int ret;

		if (atomic_load(&self->flags) & UMCG_THREAD_RELEASED) {
			umcg_released_quiet(self);
			return -ESRCH;
		}
		if (umcg_state_of(s) == UMCG_TASK_RUNNING) {
			umcg_follow_core(self);
			atomic_store(&self->awake, 1);
			umcg_stats_handoff_done(self);
			return 0;
		}
		/* Given a core, then taken for blocked before we woke: requeue. */
		if (umcg_state_of(s) == UMCG_TASK_BLOCKED) {
			if (umcg_state_cas(self, &s, (s & ~UMCG_TASK_STATE_MASK) |
						     UMCG_TASK_RUNNABLE))
				umcg_make_runnable(self, -1, UMCG_ENQ_WAKEUP);
			continue;
		}
		g = self->group;
		ret = g->backend->wait(self, s, abs_ns);
		if (ret == -ETIMEDOUT && abs_ns)
			return -ETIMEDOUT;
	}
}

/*
 * A worker that the monitor (or the kernel) marked BLOCKED lost its core;
 * when it comes back into libumcg, or returns from a libumcg call that
 * slept (umcg_spawn()), it queues for one again (C1, C3).  One
 * that runs while queued (a backend with runs_unpicked released it) waits
 * for its pick.
 */
void umcg_reacquire(struct umcg_thread *self)
{
	uint32_t s = umcg_thread_load_state(self);

	if (umcg_state_of(s) == UMCG_TASK_RUNNABLE && self->group &&
	    self->group->backend->runs_unpicked &&
	    !(atomic_load(&self->flags) & UMCG_THREAD_RELEASED)) {
		umcg_wait_for_core(self, 0);
		return;
	}
	while (umcg_state_of(s) == UMCG_TASK_BLOCKED) {
		if (umcg_state_cas(self, &s, (s & ~UMCG_TASK_STATE_MASK) | UMCG_TASK_RUNNABLE)) {
			umcg_make_runnable(self, -1, UMCG_ENQ_WAKEUP);
			umcg_wait_for_core(self, 0);
			return;
		}
	}
}

/*
 * With a backend whose kernel moves workers, UMCG_TF_INLIB tells it that
 * @self runs library code, where it may hold locks the servers need: a
 * sleep there is no block, and a preemption waits for the way out.
 */
void umcg_in_lib_inc(struct umcg_thread *self)
{
	if (atomic_fetch_add(&self->in_lib, 1) == 0 && umcg_kmoves(self))
		atomic_fetch_or((_Atomic uint32_t *)&self->ut->state, UMCG_TF_INLIB);
}

bool umcg_in_lib_dec(struct umcg_thread *self)
{
	if (atomic_load(&self->in_lib) == 1 && umcg_kmoves(self))
		atomic_fetch_and((_Atomic uint32_t *)&self->ut->state, ~UMCG_TF_INLIB);
	return atomic_fetch_sub(&self->in_lib, 1) == 1;
}

void umcg_lib_enter(struct umcg_thread *self)
{
	umcg_in_lib_get(self);
	umcg_reacquire(self);
}

/*
 * The backend's kernel side found @self's time slice used up while @self
 * was in libumcg and let it run on (scx): true once per such request.
 */
static bool umcg_preempt_deferred(struct umcg_thread *self)
{
	struct umcg_group *g = self->group;

	return g && g->backend->preempt_deferred &&
	       !(atomic_load(&self->flags) & UMCG_THREAD_RELEASED) &&
	       g->backend->preempt_deferred(self);
}

void umcg_lib_leave(struct umcg_thread *self)
{
	/* Both: a request of the backend's is used up with the other. */
	if (umcg_in_lib_dec(self) &&
	    (atomic_exchange(&self->preempt_pending, 0) | umcg_preempt_deferred(self)))
		umcg_worker_preempt(self);
}

/*
 * Leave RUNNING for @to (RUNNABLE, PARKED, BLOCKED, DONE) unless @self lost
 * its core meanwhile (BLOCKED), in which case get one back first and retry.
 * Returns the core @self owned.  @permit: for PARKED, a pending permit is consumed
 * instead and -EAGAIN returned.
 */
static int umcg_leave_running(struct umcg_thread *self, uint32_t to, bool permit,
			      struct umcg_core **core)
{
	struct umcg_group *g = self->group;
	uint32_t s = umcg_thread_load_state(self);
	int idx;

	for (;;) {
		switch (umcg_state_of(s)) {
		case UMCG_TASK_BLOCKED:
			umcg_reacquire(self);
			s = umcg_thread_load_state(self);
			continue;
		case UMCG_TASK_RUNNING:
			break;
		default:
			if (atomic_load(&self->flags) & UMCG_THREAD_RELEASED)
				return -ESRCH;	/* umcg_fini() let it go mid-call */
			/* Internal invariant: no caller can make this state. */
			fprintf(stderr, "libumcg: thread %d runs in state %u\n",
				self->tid, umcg_state_of(s));
			abort();
		}
		if (permit && (s & UMCG_TF_PERMIT)) {
			if (umcg_state_cas(self, &s, s & ~UMCG_TF_PERMIT))
				return -EAGAIN;
			continue;
		}
		/*
		 * Our core, read while we are RUNNING: once we are not, a
		 * claim or a pick may move self->core to another core.
		 */
		idx = atomic_load(&self->core);
		umcg_run_lib(self, true);
		if (umcg_state_cas(self, &s, (s & ~(UMCG_TASK_STATE_MASK | UMCG_TF_PREEMPT)) | to))
			break;
		umcg_run_lib(self, false);
	}
	umcg_set_state_time(self);
	*core = &g->cores[idx];
	umcg_stats_vacated(*core, 0);
	return 0;
}

/*
 * Undo umcg_leave_running() after a failed claim: @self still owns @c.
 * If an unpark queued it meanwhile, it can only give @c away and wait.
 */
static void umcg_back_to_running(struct umcg_thread *self, struct umcg_core *c,
				 uint32_t left, bool permit)
{
	uint32_t s = umcg_thread_load_state(self);

	while (umcg_state_of(s) == left) {
		uint32_t run = (s & ~UMCG_TASK_STATE_MASK) | UMCG_TASK_RUNNING;
		uint64_t begun = umcg_run_begin_self(self);

		if (!begun && umcg_kmoves(self)) {
			/* A claim or an unpark won the word: it reads so now. */
			s = umcg_thread_load_state(self);
			continue;
		}
		if (umcg_state_cas(self, &s, permit ? run | UMCG_TF_PERMIT : run)) {
			umcg_run_started(self);
			umcg_stats_filled(c);
			return;
		}
		if (begun)
			umcg_run_abort(self, begun);
	}
	umcg_core_give(c, self);
	umcg_wait_for_core(self, 0);
}

int umcg_sched_yield(struct umcg_thread *self, unsigned int why)
{
	struct umcg_core *c;
	struct umcg_thread *next;

	if (umcg_leave_running(self, UMCG_TASK_RUNNABLE, false, &c))
		return -ESRCH;
	next = umcg_pick(c);
	if (!next) {
		umcg_back_to_running(self, c, UMCG_TASK_RUNNABLE, false);
		return 0;
	}
	if (why & UMCG_ENQ_PREEMPT) {
		umcg_count_preempt(c, self);
	} else {
		atomic_fetch_add_explicit(&c->stats->yields, 1, memory_order_relaxed);
	}
	/* Queued before @next runs: a RUNNABLE thread is always held (C5). */
	umcg_make_runnable(self, c->idx, why);
	umcg_core_run(c, next);
	return umcg_wait_for_core(self, 0);
}

/* Preemption (C6): a yield that says so.  Runs in the signal handler too. */
void umcg_worker_preempt(struct umcg_thread *self)
{
	int saved = errno;

	umcg_in_lib_inc(self);
	umcg_sched_yield(self, UMCG_ENQ_PREEMPT);
	umcg_in_lib_dec(self);
	errno = saved;
}

/*
 * Park @self until unparked or @abs_ns.  0 (also for a consumed permit),
 * or -ETIMEDOUT.
 */
int umcg_sched_park(struct umcg_thread *self, uint64_t abs_ns)
{
	bool timed_out = false;
	struct umcg_core *c;
	uint32_t s;
	int ret;

	ret = umcg_leave_running(self, UMCG_TASK_PARKED, true, &c);
	if (ret)
		return ret == -EAGAIN ? 0 : ret;
	atomic_fetch_add_explicit(&c->stats->parks, 1, memory_order_relaxed);
	umcg_probe(park, self->tid, c->cpu);
	umcg_core_give(c, self);
	ret = umcg_wait_for_core(self, abs_ns);
	if (ret != -ETIMEDOUT)
		return ret;
	/*
	 * Timed out: queue for a core unless an unpark (or a switch) beat us
	 * to it, in which case it was one: 0, lest the caller lose it.
	 */
	s = umcg_thread_load_state(self);
	while (umcg_state_of(s) == UMCG_TASK_PARKED) {
		if (umcg_state_cas(self, &s, (s & ~UMCG_TASK_STATE_MASK) | UMCG_TASK_RUNNABLE)) {
			umcg_make_runnable(self, -1, UMCG_ENQ_WAKEUP);
			timed_out = true;
			break;
		}
	}
	ret = umcg_wait_for_core(self, 0);
	return ret ? ret : timed_out ? -ETIMEDOUT : 0;
}

/*
 * @self is about to make a system call it knows will block (announced
 * with UMCG_BLOCKING_NOW, blocking.c), on a backend whose kernel does not
 * report blocks: leave RUNNING for BLOCKED and give the core to the
 * policy's next thread now (C2), as the monitor would once it saw the call
 * asleep.  @self queues for a core again on its way out, as any BLOCKED
 * worker does (umcg_reacquire()).  0, or -ESRCH for a thread the group
 * released.
 */
int umcg_sched_block(struct umcg_thread *self)
{
	struct umcg_core *c;
	int ret;

	ret = umcg_leave_running(self, UMCG_TASK_BLOCKED, false, &c);
	if (ret)
		return ret;
	umcg_count_block(c, self);
	umcg_core_give(c, self);
	return 0;
}

int umcg_sched_unpark(struct umcg_thread *t, int waker_core)
{
	uint32_t s = umcg_thread_load_state(t);

	for (;;) {
		switch (umcg_state_of(s)) {
		case UMCG_TASK_DONE:
			return -ESRCH;
		case UMCG_TASK_PARKED:
			if (!umcg_state_cas(t, &s, (s & ~(UMCG_TASK_STATE_MASK | UMCG_TF_PERMIT)) |
						   UMCG_TASK_RUNNABLE))
				continue;
			umcg_make_runnable(t, waker_core, UMCG_ENQ_WAKEUP);
			return 0;
		default:
			if (s & UMCG_TF_PERMIT)
				return 0;
			if (umcg_state_cas(t, &s, s | UMCG_TF_PERMIT))
				return 0;
		}
	}
}

/* umcg_claim() of a RUNNABLE @t that is staged on a core: take it back. */
static bool umcg_claim_staged(struct umcg_thread *t)
{
	struct umcg_group *g = t->group;
	int idx = atomic_load(&t->core);

	if (!g->backend->unstage || idx < 0 || !umcg_core_unstage(&g->cores[idx], t))
		return false;
	umcg_ref_put(t);	/* the stage's: the claim holds its own */
	return true;
}

/*
 * Claim @t for a directed switch onto @core: take it from whoever holds it
 * (a park, or the policy), leaving it RUNNABLE and held by the caller, as
 * umcg_pick() does.
 */
static int umcg_claim(struct umcg_thread *t, int core)
{
	struct umcg_group *g = t->group;
	uint32_t s;

	umcg_ref_get(t);
	s = umcg_thread_load_state(t);
	for (;;) {
		switch (umcg_state_of(s)) {
		case UMCG_TASK_PARKED:
			if (!umcg_state_cas(t, &s, (s & ~(UMCG_TASK_STATE_MASK | UMCG_TF_PERMIT)) |
						   UMCG_TASK_RUNNABLE))
				continue;
			break;
		case UMCG_TASK_RUNNABLE:
			if (g->policy->remove(g->policy_priv, t))
				break;
			if (umcg_claim_staged(t))
				break;
			umcg_ref_put(t);
			return -EBUSY;	/* a server is picking it */
		case UMCG_TASK_DONE:
			umcg_ref_put(t);
			return -ESRCH;
		default:
			umcg_ref_put(t);
			return -EBUSY;
		}
		break;
	}
	atomic_store(&t->awake, 0);
	atomic_store(&t->core, core);
	return 0;
}

int umcg_sched_switch(struct umcg_thread *self, struct umcg_thread *t)
{
	struct umcg_group *g = self->group;
	struct umcg_core *c;
	uint32_t seen, left = UMCG_TASK_PARKED;
	bool permit;
	int ret;

	/* A pending permit turns the park into a yield to @t. */
	ret = umcg_leave_running(self, UMCG_TASK_PARKED, true, &c);
	if (ret && ret != -EAGAIN)
		return ret;
	permit = ret == -EAGAIN;
	if (permit) {
		left = UMCG_TASK_RUNNABLE;
		umcg_leave_running(self, UMCG_TASK_RUNNABLE, false, &c);
	}
	ret = umcg_claim(t, c->idx);
	if (ret) {
		umcg_back_to_running(self, c, left, permit);
		return ret;
	}
	if (permit) {
		umcg_probe(switch, self->tid, c->cpu, t->tid);
		umcg_make_runnable(self, c->idx, UMCG_ENQ_YIELD);
		umcg_core_run(c, t);
		return umcg_wait_for_core(self, 0);
	}
	atomic_fetch_add_explicit(&c->stats->parks, 1, memory_order_relaxed);
	umcg_probe(switch, self->tid, c->cpu, t->tid);
	umcg_core_install(c, t);
	umcg_set_running(t);
	seen = umcg_thread_load_state(self);
	if (umcg_state_of(seen) != UMCG_TASK_RUNNING)
		g->backend->switch_to(self, seen, t);	/* puts @t's ref */
	else
		umcg_wake_put(g, t);
	return umcg_wait_for_core(self, 0);
}

/* @self is done: give its core away (if it still has one). */
void umcg_sched_exit(struct umcg_thread *self)
{
	struct umcg_group *g = self->group;
	uint32_t s = umcg_thread_load_state(self);
	bool owns;
	int idx;

	umcg_run_lib(self, true);
	do {
		owns = umcg_state_of(s) == UMCG_TASK_RUNNING && g &&
		       !(atomic_load(&self->flags) & UMCG_THREAD_RELEASED);
		idx = atomic_load(&self->core);
	} while (!umcg_state_cas(self, &s, (s & ~(UMCG_TASK_STATE_MASK | UMCG_TF_PERMIT)) |
					   UMCG_TASK_DONE));
	umcg_set_state_time(self);
	umcg_probe(exit, self->tid);
	if (owns) {
		umcg_stats_vacated(&g->cores[idx], 0);
		umcg_core_give(&g->cores[idx], self);
	}
}

/*
 * The monitor (or a kernel event) saw @t, owner of @c, blocked in the
 * kernel: give @c to the next thread (C2).  @t queues for a core again at
 * its next libumcg call, or at once when a kernel backend says it woke.
 * Called with c->lock held, which keeps @t alive: an owner cannot exit
 * without taking it.  Returns true if @c was taken from @t.  @preempted:
 * the kernel took @c at the end of @t's time slice (counted as a
 * preemption, not a block).
 */
static bool umcg_take_core_locked(struct umcg_core *c, struct umcg_thread *t,
				  bool (*asleep)(struct umcg_thread *t, void *arg),
				  void *arg, bool preempted)
{
	uint32_t s, blocked;

	if (c->current != t)
		return false;
	/* Once BLOCKED, @t may exit without taking c->lock: pin it. */
	umcg_ref_get(t);
	s = umcg_thread_load_state(t);
	do {
		if (umcg_state_of(s) != UMCG_TASK_RUNNING) {
			umcg_ref_put(t);
			return false;
		}
		blocked = (s & ~UMCG_TASK_STATE_MASK) | UMCG_TASK_BLOCKED;
	} while (!umcg_state_cas(t, &s, blocked));
	/*
	 * @t may have woken after the caller looked and before the CAS, and
	 * passed its last look at its state: it would run on beside the core's
	 * next owner.  Look again now that BLOCKED is visible; if it ran, give
	 * RUNNING back (unless it saw BLOCKED and queues for a core already).
	 */
	if (asleep && !asleep(t, arg) && umcg_state_cas(t, &blocked, s)) {
		umcg_ref_put(t);
		return false;
	}
	__atomic_store_n(&c->current, NULL, __ATOMIC_SEQ_CST);
	atomic_fetch_add(&c->nr_switches, 1);
	umcg_stats_vacated(c, preempted ? 0 : __atomic_load_n(&t->ut->blocked_ns, __ATOMIC_RELAXED));
	umcg_set_state_time(t);
	if (preempted) {
		umcg_count_preempt(c, t);
	} else {
		umcg_count_block(c, t);
	}
	umcg_ref_put(t);
	umcg_server_kick(c);
	return true;
}

bool umcg_worker_blocked_locked(struct umcg_core *c, struct umcg_thread *t,
				bool (*asleep)(struct umcg_thread *t, void *arg), void *arg)
{
	return umcg_take_core_locked(c, t, asleep, arg, false);
}

/*
 * The kernel reported @t's exit (it left without umcg's exit path, e.g. a
 * raw exit(2)): do what umcg_thread_finish() would have done for the
 * others — leave the group's list, count it, wake its joiners.
 */
static void umcg_kernel_exited(struct umcg_group *g, struct umcg_thread *t)
{
	struct umcg_thread *joiner;

	pthread_mutex_lock(&g->threads_lock);
	cds_list_del_init(&t->all_node);
	pthread_mutex_unlock(&g->threads_lock);
	if (g->backend->worker_gone)
		g->backend->worker_gone(g, t);
	umcg_set_state_time(t);
	umcg_probe(exit, t->tid);
	joiner = atomic_exchange(&t->joiner, UMCG_JOINER_DONE);
	if (joiner && joiner != UMCG_JOINER_DONE) {
		umcg_sched_unpark(joiner, -1);
		umcg_ref_put(joiner);
	}
	atomic_fetch_add_explicit(&g->stats->exited, 1, memory_order_relaxed);
	atomic_fetch_sub_explicit(&g->stats->live, 1, memory_order_release);
	umcg_thread_exited_wake(t);
}

/*
 * UMCG_EV_EXITED, from a backend whose words the library keeps (scx): the
 * kernel saw @t exit without libumcg's exit path (C7).  Once its core is
 * taken back (BLOCKED), the word goes to DONE - what the kernel writes
 * there on kmod - and the exit is reported as there (umcg_kernel_exited():
 * counted, joiners woken, umcg_join() returns).  The backend sends it at
 * most once per thread.  A thread that is not BLOCKED by then (the kernel
 * ran it while the policy still had it queued, runs_unpicked) stays as it
 * is: taking it out of the policy is not done here.
 */
static void umcg_event_exited(struct umcg_group *g, struct umcg_thread *t)
{
	uint32_t s = umcg_thread_load_state(t);

	do {
		if (umcg_state_of(s) != UMCG_TASK_BLOCKED)
			return;
	} while (!umcg_state_cas(t, &s, (s & ~UMCG_TASK_STATE_MASK) | UMCG_TASK_DONE));
	umcg_kernel_exited(g, t);
}

/*
 * UMCG_EV_MOVED: the kernel moved @t's word (see "Kernel moves" above).
 * Frees the core @t held, queues it if it is RUNNABLE, reports its exit;
 * each at most once per run, whoever else looks at @t meanwhile.
 */
static void umcg_kernel_moved(struct umcg_group *g, struct umcg_thread *t)
{
	bool blocked, freed = false;
	struct umcg_core *tc;
	uint64_t k, want;
	uint32_t s;
	int idx;

	for (;;) {
		idx = atomic_load(&t->core);
		if (idx < 0)
			return;		/* never ran: nothing the kernel moves */
		tc = &g->cores[idx];
		pthread_mutex_lock(&tc->lock);
		umcg_core_sync_locked(tc);
		k = atomic_load(&t->kmove);
		if (k & UMCG_KMOVE_STAGED) {
			/* Still staged (not run): nothing moved in this run. */
			pthread_mutex_unlock(&tc->lock);
			return;
		}
		if (k & UMCG_KMOVE_STARTING) {
			/* Its word is about to read RUNNING: look again then. */
			pthread_mutex_unlock(&tc->lock);
			sched_yield();
			continue;
		}
		if (atomic_load(&t->core) != idx) {
			pthread_mutex_unlock(&tc->lock);
			continue;
		}
		if ((k & UMCG_KMOVE_LIB) || !(k >> UMCG_KMOVE_RUN_SHIFT)) {
			/* It left RUNNING itself, or never ran: not ours. */
			pthread_mutex_unlock(&tc->lock);
			return;
		}
		s = umcg_thread_load_state(t);
		switch (umcg_state_of(s)) {
		case UMCG_TASK_BLOCKED:
			want = UMCG_KMOVE_RELEASED;
			break;
		case UMCG_TASK_RUNNABLE:
			want = UMCG_KMOVE_RELEASED | UMCG_KMOVE_QUEUED;
			break;
		case UMCG_TASK_DONE:
			want = UMCG_KMOVE_RELEASED | UMCG_KMOVE_EXITED;
			break;
		default:
			want = 0;	/* RUNNING: nothing moved in this run yet */
			break;
		}
		if ((k & want) == want) {
			pthread_mutex_unlock(&tc->lock);
			return;
		}
		if (!atomic_compare_exchange_strong(&t->kmove, &k, k | want)) {
			pthread_mutex_unlock(&tc->lock);
			continue;
		}
		/*
		 * Blocked in this run: BLOCKED, or a blocked_ns stamped anew
		 * (the kernel writes it before the move to RUNNABLE).
		 */
		blocked = umcg_state_of(s) == UMCG_TASK_BLOCKED ||
			  __atomic_load_n(&t->ut->blocked_ns, __ATOMIC_RELAXED) !=
			  atomic_load(&t->kmove_blocked_ns);
		if (!(k & UMCG_KMOVE_RELEASED) && tc->current == t) {
			__atomic_store_n(&tc->current, NULL, __ATOMIC_SEQ_CST);
			atomic_fetch_add(&tc->nr_switches, 1);
			umcg_stats_vacated(tc, blocked ? __atomic_load_n(&t->ut->blocked_ns,
									 __ATOMIC_RELAXED) : 0);
			freed = true;
		}
		pthread_mutex_unlock(&tc->lock);
		break;
	}

	want &= ~k;
	if ((want & UMCG_KMOVE_RELEASED) && blocked) {
		umcg_count_block(tc, t);
	}
	if (freed)
		umcg_server_kick(tc);
	if (want & UMCG_KMOVE_QUEUED) {
		if (!blocked) {
			umcg_count_preempt(tc, t);
		}
		umcg_make_runnable(t, idx, blocked ? UMCG_ENQ_WAKEUP : UMCG_ENQ_PREEMPT);
	} else if (want & UMCG_KMOVE_EXITED) {
		umcg_kernel_exited(g, t);
	} else if (umcg_state_of(s) == UMCG_TASK_BLOCKED) {
		umcg_set_state_time(t);
	}
}

/* For a backend's umcg_fini() release: is @t RUNNABLE by the kernel's move? */
bool umcg_kernel_made_runnable(const struct umcg_thread *t)
{
	uint64_t k = atomic_load(&((struct umcg_thread *)t)->kmove);

	return umcg_state_of(umcg_thread_load_state(t)) == UMCG_TASK_RUNNABLE &&
	       umcg_kmove_kernel_held(k);
}

void umcg_apply_event(struct umcg_core *c, const struct umcg_event *ev)
{
	struct umcg_group *g = c->group;
	struct umcg_thread *t = ev->thread;
	int idx = atomic_load(&t->core);
	struct umcg_core *tc = idx >= 0 ? &g->cores[idx] : c;
	uint32_t s;

	switch (ev->type) {
	case UMCG_EV_BLOCKED:
		pthread_mutex_lock(&tc->lock);
		umcg_worker_blocked_locked(tc, t, NULL, NULL);
		pthread_mutex_unlock(&tc->lock);
		break;
	case UMCG_EV_WOKEN:
		s = umcg_thread_load_state(t);
		while (umcg_state_of(s) == UMCG_TASK_BLOCKED) {
			if (umcg_state_cas(t, &s, (s & ~UMCG_TASK_STATE_MASK) | UMCG_TASK_RUNNABLE)) {
				umcg_make_runnable(t, c->idx, UMCG_ENQ_WAKEUP);
				break;
			}
		}
		break;
	case UMCG_EV_MOVED:
		umcg_kernel_moved(g, t);
		umcg_ref_put(t);
		break;
	case UMCG_EV_PREEMPTED:
	case UMCG_EV_EXITED:
		/*
		 * Take the core back as for a block (counted as a preemption
		 * for UMCG_EV_PREEMPTED); an exited thread stays BLOCKED
		 * until umcg_event_exited() reports it.
		 */
		pthread_mutex_lock(&tc->lock);
		umcg_take_core_locked(tc, t, NULL, NULL, ev->type == UMCG_EV_PREEMPTED);
		pthread_mutex_unlock(&tc->lock);
		if (ev->type == UMCG_EV_EXITED)
			umcg_event_exited(g, t);
		if (ev->type == UMCG_EV_PREEMPTED) {
			s = umcg_thread_load_state(t);
			while (umcg_state_of(s) == UMCG_TASK_BLOCKED &&
			       !umcg_state_cas(t, &s, (s & ~UMCG_TASK_STATE_MASK) |
						      UMCG_TASK_RUNNABLE))
				;
			if (umcg_state_of(s) == UMCG_TASK_BLOCKED)
				umcg_make_runnable(t, tc->idx, UMCG_ENQ_PREEMPT);
		}
		break;
	}
}

/* The server of one core: owns the core while no worker does. */
void *umcg_server_main(void *arg)
{
	struct umcg_core *c = arg;
	struct umcg_group *g = c->group;
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(c->cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	__atomic_store_n(&c->server_tid, gettid(), __ATOMIC_RELAXED);
	if (g->backend->server_start)
		g->backend->server_start(g, c);

	for (;;) {
		uint32_t seq = atomic_load(&c->wake_seq);
		struct umcg_thread *t;

		if (atomic_load(&g->stopping))
			break;
		if (g->backend->poll_events) {
			struct umcg_event ev[16];
			int n = g->backend->poll_events(c, ev, 16);

			for (int i = 0; i < n; i++)
				umcg_apply_event(c, &ev[i]);
		}
		if (!__atomic_load_n(&c->current, __ATOMIC_SEQ_CST)) {
			t = umcg_pick(c);
			if (t) {
				umcg_core_run(c, t);
				umcg_core_refill(c);
				if (umcg_go_like(g)) {
					/* See "Looking servers" above. */
					umcg_stop_looking(c);
					umcg_kick_owed(c);
				} else {
					/*
					 * There may be more: let another idle
					 * core look (it takes a thread or
					 * sleeps again).
					 */
					umcg_core_kick_idle(g, -1, c->idx + 1);
				}
				continue;
			}
		} else {
			umcg_core_refill(c);
		}
		/* A looker looks once more after it stopped, then sleeps. */
		if (umcg_stop_looking(c)) {
			if (!__atomic_load_n(&c->current, __ATOMIC_SEQ_CST) &&
			    (t = umcg_pick(c))) {
				umcg_core_run(c, t);
				umcg_core_refill(c);
			}
			umcg_kick_owed(c);
			continue;
		}
		g->backend->server_wait(c, seq);
	}
	return NULL;
}
