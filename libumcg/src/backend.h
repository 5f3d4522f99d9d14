/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * backend.h - what a backend gives the runtime: registration, sleeping and
 * waking on a thread's state word, and the server's sleep.
 *
 * The runtime (sched.c) decides every state change; a backend only makes
 * threads sleep and wake, and tells the runtime what the kernel saw (a
 * worker blocked, preempted or woken) by calling umcg_worker_blocked() and
 * friends.  A new backend is one file here plus its kernel side, added to
 * umcg_backends[] in backend.c.
 *
 * Concurrency: wait, switch_to and server_wait are called by the thread
 * that sleeps; wake and server_wake by any thread, concurrently.  All other
 * callbacks run once, from umcg_init()/umcg_fini() or from the thread being
 * (un)registered.
 */
#ifndef UMCG_BACKEND_H
#define UMCG_BACKEND_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* What a kernel backend reports about a worker (struct umcg_event.type). */
#define UMCG_EV_BLOCKED		1	/* blocked in the kernel: free its core */
#define UMCG_EV_WOKEN		2	/* its blocking call completed (C3) */
#define UMCG_EV_EXITED		3	/* died without umcg's exit path (C7) */
#define UMCG_EV_PREEMPTED	4	/* the kernel took its core (C6) */
/*
 * The kernel moved the thread's state word by itself (UMCG_FEATURE_BLOCK:
 * RUNNING -> BLOCKED -> RUNNABLE, RUNNING -> RUNNABLE on preemption,
 * -> DONE at exit).  The runtime reads the word and does what the moves
 * need — free the core, queue the thread, report an exit — exactly once
 * per move, however many servers report the same thread.  The backend
 * holds a reference on the thread (umcg_ref_get()), which
 * umcg_apply_event() drops.
 */
#define UMCG_EV_MOVED		5

struct umcg_event {
	uint32_t type;
	struct umcg_thread *thread;
};

/* Apply one event; called by the server of @c, which polled it. */
void umcg_apply_event(struct umcg_core *c, const struct umcg_event *ev);

/**
 * struct umcg_backend_ops - a backend
 * @name:        "scx", "kmod" or "user"
 * @probe:       0 when usable here; else -errno and *@why says why
 * @init:        set the backend up for @g (before any server starts)
 * @fini:        undo init (after every server stopped)
 * @worker_register:   the calling thread becomes worker @t; t->ut points
 *                     at t->task, its state word, unless the backend maps
 *                     its own (then it must carry the word's value over)
 * @worker_unregister: the calling thread (@t) stops being a worker
 * @server_start:      the calling thread is the server of core @c
 * @wait:        sleep while @self's state word equals @seen (or, for a
 *               kernel backend, until it reads RUNNING), at most until
 *               CLOCK_MONOTONIC @abs_ns (0: no limit); 0, -ETIMEDOUT or
 *               -EINTR; may return early
 * @wake:        @t's state was just made RUNNING: let it run
 * @switch_to:   wake(@next), umcg_ref_put(@next), then wait(@self, @seen, 0);
 *               fused where the kernel can do it in one step
 * @server_wait: sleep while @c->wake_seq equals @seen
 * @server_wake: wake @c's server after its wake_seq changed
 * @poll_events: what the kernel saw since the last call, for servers to
 *               apply (umcg_apply_event()): up to @max into @ev, returns the
 *               number; NULL for a backend that learns nothing from the
 *               kernel (user: its monitor acts directly)
 * @worker_reserve:    optional: room for one more worker, taken before its
 *                     thread is created (0 or -EAGAIN when the kernel side
 *                     is full); given back by worker_unregister, or by
 *                     worker_unreserve if the thread never registered
 * @worker_unreserve:  optional: give back a reservation
 * @worker_release:    optional: umcg_fini() let @t go (it is a plain thread
 *                     from now on); under group->threads_lock, after every
 *                     server stopped.  The backend makes the kernel leave it
 *                     alone and ends any wait of it
 * @worker_gone:       optional: the kernel reported @t's exit (it exited
 *                     without umcg's exit path): forget it; @t's word must
 *                     stay readable (DONE) until umcg_join() frees it
 * @report_name:       optional: the name umcg_backend_name() reports for
 *                     @g, when it can change while @g lives (scx: its
 *                     fall-back); any thread, any time; NULL: @name
 * @pin_by_waker:      the thread that makes a worker RUNNING sets its CPU
 *                     affinity first (the worker may resume in its own code,
 *                     not in libumcg, e.g. after the kernel made it wait)
 * @kernel_moves:      the kernel moves workers' words itself (UMCG_EV_MOVED)
 * @runs_unpicked:     the kernel may let a worker the runtime holds queued
 *                     (RUNNABLE) run before it is picked (scx: a hold that
 *                     lasted too long is released, lest the watchdog eject
 *                     the scheduler); such a worker waits for its pick at
 *                     its next libumcg call
 * @wake_prepare:      optional: called by the thread about to make @t
 *                     RUNNING (and then wake() it), before it does: @t
 *                     cannot have run on since it was queued or parked
 *                     (scx: the hold that wake() may end is the one seen
 *                     here; the waker can lose its CPU before wake(), and
 *                     @t may run, block and be held again meanwhile)
 * @stage_free:        optional (a kernel that runs a staged next worker
 *                     itself when the core's worker blocks, sched.c "Staged
 *                     next worker"): true when @c can take a staged worker
 *                     now (its server's word is registered, nothing is
 *                     staged or awaits acknowledgement); any thread
 * @stage:             offer @t, RUNNABLE and held by the caller (the one
 *                     refiller of @c), as @c's next worker; called only
 *                     after stage_free() said true, and cannot fail
 * @stage_ran:         under @c->lock: the staged worker the kernel has run
 *                     on @c since it was staged (its word reads RUNNING or
 *                     later), the record acknowledged; NULL if none
 * @unstage:           under @c->lock: take back the worker still staged on
 *                     @c if it is @want (NULL: whichever), which the caller
 *                     then holds; NULL if none (or the kernel ran it: see
 *                     stage_ran)
 * @preempt_deferred:  optional: called by @self as it leaves libumcg; true
 *                     when the kernel found @self's time slice used up
 *                     while it was inside and let it run on (scx): it
 *                     yields now (C6).  True once per such finding
 * @missed_news:       optional: times a server found news only when its
 *                     bounded sleep ended, with no wake-up for it (a
 *                     kernel notification that never came); the dump
 *                     prints it, tests expect 0
 */
struct umcg_backend_ops {
	const char *name;
	int (*probe)(const char **why);
	int (*init)(struct umcg_group *g);
	void (*fini)(struct umcg_group *g);
	int (*worker_register)(struct umcg_group *g, struct umcg_thread *t);
	void (*worker_unregister)(struct umcg_group *g, struct umcg_thread *t);
	int (*server_start)(struct umcg_group *g, struct umcg_core *c);
	int (*wait)(struct umcg_thread *self, uint32_t seen, uint64_t abs_ns);
	void (*wake)(struct umcg_thread *t);
	int (*switch_to)(struct umcg_thread *self, uint32_t seen, struct umcg_thread *next);
	int (*server_wait)(struct umcg_core *c, uint32_t seen);
	void (*server_wake)(struct umcg_core *c);
	int (*poll_events)(struct umcg_core *c, struct umcg_event *ev, int max);
	int (*worker_reserve)(struct umcg_group *g);
	void (*worker_unreserve)(struct umcg_group *g);
	void (*worker_release)(struct umcg_group *g, struct umcg_thread *t);
	void (*worker_gone)(struct umcg_group *g, struct umcg_thread *t);
	const char *(*report_name)(struct umcg_group *g);
	bool (*preempt_deferred)(struct umcg_thread *self);
	void (*wake_prepare)(struct umcg_thread *t);
	bool (*stage_free)(struct umcg_core *c);
	void (*stage)(struct umcg_core *c, struct umcg_thread *t);
	struct umcg_thread *(*stage_ran)(struct umcg_core *c);
	struct umcg_thread *(*unstage)(struct umcg_core *c, struct umcg_thread *want);
	uint64_t (*missed_news)(void);
	bool pin_by_waker;
	bool kernel_moves;
	bool runs_unpicked;
};

extern const struct umcg_backend_ops umcg_backend_user;
extern const struct umcg_backend_ops umcg_backend_kmod;
extern const struct umcg_backend_ops umcg_backend_scx;

/*
 * The backend to use: @name ("scx", "kmod", "user"), or NULL for
 * $UMCG_BACKEND, else the best one available.  -EINVAL for an unknown
 * name, -ENODEV (with a message on stderr saying why) when the one asked
 * for is not available.
 */
int umcg_backend_select(const char *name, const struct umcg_backend_ops **ops);

/* futex(2) on a 32-bit word, private to the process. */
int umcg_futex_wait(_Atomic uint32_t *word, uint32_t seen, uint64_t abs_ns);
void umcg_futex_wake(_Atomic uint32_t *word, int nr);

/*
 * Counted futex words: a word with a count of its sleepers beside it, so
 * that a waker skips FUTEX_WAKE while nobody sleeps on the word.
 *
 *   sleeper  umcg_futex_wait_counted(): the count up (a seq_cst RMW), then
 *            FUTEX_WAIT, which reads the word and queues the sleeper
 *            atomically with that read (under the futex hash bucket's
 *            lock); the count down once it returns.
 *   waker    changes the word (a seq_cst store or RMW), or reads with a
 *            seq_cst load the change someone else made (a kernel's move);
 *            then umcg_futex_wake_counted(): a seq_cst RMW of the count
 *            (adding 0), and FUTEX_WAKE only if it read more than 0.
 *
 * No wake-up is lost.  The two RMWs of the count are ordered (its
 * modification order).  If the waker's comes first, it read 0 (or an
 * earlier sleeper's count: then it wakes) and the sleeper's increment
 * reads what the waker's RMW wrote: that synchronises with it, so the
 * change of the word happens before the sleeper's FUTEX_WAIT reads the
 * word, which then differs from the sleeper's @seen and the wait returns
 * at once (EAGAIN).  If the sleeper's comes first, the waker reads at
 * least 1 and calls FUTEX_WAKE, which finds the sleeper queued or finds
 * it not yet in (its read of the word then sees the change), as without
 * the count.  A count above 0 may mean a FUTEX_WAKE for nobody (a sleeper
 * on its way in or out): harmless.  As with any futex, a word changed
 * and changed back before the sleeper reads it is not seen.
 *
 * Every futex wait on a counted word must be a counted one (a sleeper that
 * does not count is never woken by a waker that reads 0); uncounted wakes
 * of a counted word are harmless.  The counted words: each thread's state
 * word (t->sleepers: the thread's own waits in every backend; nobody else
 * sleeps on it), its exit word (t->exit_sleepers: plain joiners in
 * umcg_join()), the user backend's c->wake_seq (c->server_sleepers) and
 * g->monitor_seq (g->monitor_sleepers).  Any thread may call either,
 * concurrently.
 */
int umcg_futex_wait_counted(_Atomic uint32_t *word, _Atomic uint32_t *sleepers,
			    uint32_t seen, uint64_t abs_ns);
void umcg_futex_wake_counted(_Atomic uint32_t *word, _Atomic uint32_t *sleepers, int nr);

/* Sleep on @t's state word while it reads @seen: umcg_futex_wait()'s result. */
static inline int umcg_state_wait(struct umcg_thread *t, uint32_t seen, uint64_t abs_ns)
{
	return umcg_futex_wait_counted((_Atomic uint32_t *)&t->ut->state, &t->sleepers,
				       seen, abs_ns);
}

/* Wake every sleeper on @t's state word, after a change of it. */
static inline void umcg_state_wake(struct umcg_thread *t)
{
	umcg_futex_wake_counted((_Atomic uint32_t *)&t->ut->state, &t->sleepers, INT_MAX);
}

/*
 * @t's state word reads DONE and its exit is accounted for: wake its plain
 * joiners (umcg_join()), who sleep on t->exited, not on the state word.
 * Called once per thread, by whoever reports the exit; the state word
 * needs no wake then: only @t itself sleeps on it, and @t is gone or is
 * the caller.
 */
static inline void umcg_thread_exited_wake(struct umcg_thread *t)
{
	atomic_store(&t->exited, 1);
	umcg_futex_wake_counted(&t->exited, &t->exit_sleepers, INT_MAX);
}
/*
 * Sleep until either word no longer reads its @seen (checked on entry, as
 * umcg_futex_wait() checks its one) or a futex wake of either, at most
 * until CLOCK_MONOTONIC @abs_ns (0: no limit): FUTEX_WAITV, private.  @b
 * may be read-only memory (a futex wait only reads).  0, -ETIMEDOUT or
 * -EINTR; may return early.
 */
int umcg_futex_wait2(const _Atomic uint32_t *a, uint32_t seen_a,
		     const volatile uint32_t *b, uint32_t seen_b, uint64_t abs_ns);

#endif /* UMCG_BACKEND_H */
