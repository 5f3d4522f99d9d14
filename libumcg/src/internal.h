/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * internal.h - the runtime's objects: threads, cores, the group.
 *
 * Ownership and synchronisation:
 *
 *   thread state    ut->state, the futex word of the thread.  Changed only by
 *                   compare-and-swap (seq_cst).  Who makes which move is in
 *                   uapi/umcg.h; a RUNNABLE thread is held by the policy,
 *                   and only the one who got it back from pick/remove may
 *                   make it RUNNING.
 *   core->current   the worker that owns the core, or NULL (the server owns
 *                   it).  Written under core->lock only.  The owner gives
 *                   the core away (hand-off to a picked thread, or back to
 *                   the server); the monitor takes it from a blocked owner.
 *   core->wake_seq  the server's futex word: bumped (then futex-woken)
 *                   whenever the server must look again.
 *   t->sleepers, core->server_sleepers, group->monitor_sleepers
 *                   who sleeps on a counted futex word (backend.h): the
 *                   wakers skip FUTEX_WAKE while nobody does.
 *   t->exited       0 -> 1 once, after the state word reads DONE, by
 *                   whoever reports the exit; plain joiners sleep on it.
 *   t->refs         pins a thread's memory across a wake: see struct.
 *   t->kmove        with a backend whose kernel moves words itself: which
 *                   of the current run's kernel moves were acted on (see
 *                   sched.c, "Kernel moves").
 *   group->threads  every live thread, under group->threads_lock; for dump
 *                   and fini only, never on the switch path.
 *
 * Lock order: group->threads_lock, then core->lock; policy locks are leaves
 * (no runtime lock is taken inside a policy callback).
 */
#ifndef UMCG_INTERNAL_H
#define UMCG_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <urcu/list.h>
#include <urcu/wfcqueue.h>

#include <umcg.h>
#include <umcg/policy.h>
#include <uapi/umcg.h>
#include <uapi/umcg_stats.h>

#define UMCG_CACHELINE	64

/* umcg_thread.flags */
#define UMCG_THREAD_DETACHED	(1U << 0)	/* frees itself when done */
#define UMCG_THREAD_ATTACHED	(1U << 1)	/* adopted by umcg_attach() */
#define UMCG_THREAD_RELEASED	(1U << 2)	/* group gone: plain thread now */
#define UMCG_THREAD_JOINED	(1U << 3)	/* umcg_join() took it */

struct umcg_group;

/*
 * The counters, as the runtime updates them (relaxed atomics): the very
 * words of struct umcg_stats_header's spawned_total..policy_errors_total
 * and of struct umcg_stats_core's switches_total..hist
 * (uapi/umcg_stats.h), whose layout the asserts below tie these to.
 */
struct umcg_group_counters {
	_Atomic uint64_t spawned, exited;
	/* blocks, preempts, steals, handoffs: the cores' sums, per snapshot. */
	_Atomic uint64_t blocks, preempts, steals, live, handoffs;
	/* Threads umcg_attach() or umcg_spawn() could not make workers. */
	_Atomic uint64_t refused;
	/* Picks a policy got wrong (a thread not RUNNABLE), ignored. */
	_Atomic uint64_t policy_errors;
};

struct umcg_core_counters {
	_Atomic uint64_t switches, yields, parks;
	/* When the core lost its owner, 0 once sampled (stats.c). */
	_Atomic uint64_t vacated_ns;
	_Atomic uint64_t hist[UMCG_STATS_HIST_BUCKETS];
	/* hist_pad and the core's snapshot, which stats.c writes itself. */
	uint8_t snapshot[32];
	/*
	 * The group's block, preemption, steal and hand-off counts, kept
	 * per core; the header's are their sums at each snapshot.
	 */
	_Atomic uint64_t blocks, preempts, steals, handoffs;
};

#define UMCG_COUNTER_AT(type, field, uapi, ufield)				\
	_Static_assert(__builtin_offsetof(struct type, field) ==		\
		       __builtin_offsetof(struct uapi, ufield) -		\
		       __builtin_offsetof(struct uapi, UMCG_COUNTER_BASE_##uapi), \
		       #field " matches " #ufield)
#define UMCG_COUNTER_BASE_umcg_stats_header	spawned_total
#define UMCG_COUNTER_BASE_umcg_stats_core	switches_total
_Static_assert(sizeof(_Atomic uint64_t) == sizeof(__u64), "lock-free 64-bit counters");
UMCG_COUNTER_AT(umcg_group_counters, spawned, umcg_stats_header, spawned_total);
UMCG_COUNTER_AT(umcg_group_counters, exited, umcg_stats_header, exited_total);
UMCG_COUNTER_AT(umcg_group_counters, blocks, umcg_stats_header, blocks_total);
UMCG_COUNTER_AT(umcg_group_counters, preempts, umcg_stats_header, preempts_total);
UMCG_COUNTER_AT(umcg_group_counters, steals, umcg_stats_header, steals_total);
UMCG_COUNTER_AT(umcg_group_counters, live, umcg_stats_header, live);
UMCG_COUNTER_AT(umcg_group_counters, handoffs, umcg_stats_header, handoffs_total);
UMCG_COUNTER_AT(umcg_group_counters, refused, umcg_stats_header, refused_total);
UMCG_COUNTER_AT(umcg_group_counters, policy_errors, umcg_stats_header, policy_errors_total);
UMCG_COUNTER_AT(umcg_core_counters, switches, umcg_stats_core, switches_total);
UMCG_COUNTER_AT(umcg_core_counters, yields, umcg_stats_core, yields_total);
UMCG_COUNTER_AT(umcg_core_counters, parks, umcg_stats_core, parks_total);
UMCG_COUNTER_AT(umcg_core_counters, vacated_ns, umcg_stats_core, vacated_ns);
UMCG_COUNTER_AT(umcg_core_counters, hist, umcg_stats_core, hist);
UMCG_COUNTER_AT(umcg_core_counters, snapshot, umcg_stats_core, hist_pad);
UMCG_COUNTER_AT(umcg_core_counters, blocks, umcg_stats_core, blocks_total);
UMCG_COUNTER_AT(umcg_core_counters, preempts, umcg_stats_core, preempts_total);
UMCG_COUNTER_AT(umcg_core_counters, steals, umcg_stats_core, steals_total);
UMCG_COUNTER_AT(umcg_core_counters, handoffs, umcg_stats_core, handoffs_total);

struct umcg_thread {
	/* Storage of the state word for backends that do not map their own. */
	struct umcg_task task __attribute__((aligned(UMCG_CACHELINE)));
	/* The state word the backend and the runtime use. */
	struct umcg_task *ut;
	/* Its group; the group outlives its threads (see umcg_fini()). */
	struct umcg_group *group;
	/* Threads in a futex wait on the state word (backend.h, counted). */
	_Atomic uint32_t sleepers;
	/*
	 * 1 once the state word reads DONE and the exit is accounted for
	 * (umcg_thread_exited_wake()): what plain threads in umcg_join()
	 * sleep on, so that they are not woken by every change of the state
	 * word; exit_sleepers counts them (backend.h, counted).
	 */
	_Atomic uint32_t exited;
	_Atomic uint32_t exit_sleepers;

	pid_t tid;
	pthread_t pthread;
	_Atomic uint32_t flags;
	int32_t pref_core;		/* umcg_attr.core, or -1 */
	int32_t spawn_core;		/* core of its spawner, or -1 */
	_Atomic int32_t core;		/* core it runs on or last ran on, -1 */
	_Atomic int32_t core_reported;	/* while staged: core before (sched.c) */
	int32_t pinned_cpu;		/* CPU its affinity is set to, -1 */
	char name[16];

	void *(*fn)(void *);
	void *arg;
	void *ret;

	/*
	 * Policy's: the built-in policies queue the thread by policy_qnode
	 * (a wfcqueue) or, after a remove, policy_node (a queue's front
	 * list); see runqueue.h.
	 */
	struct cds_wfcq_node policy_qnode;
	struct cds_list_head policy_node;
	int32_t policy_queue;		/* which queue holds it, -1 none */
	void *policy_data;

	/*
	 * Held by whoever is about to touch the thread after a state change
	 * that lets it run and exit (wake after pick, unpark of a joiner):
	 * umcg_join() frees it only at zero.
	 */
	_Atomic uint32_t refs;
	/*
	 * Owners of the memory (runtime.c, umcg_thread_put()): the thread
	 * itself while it runs if it is detached (else umcg_join()), plus one
	 * per umcg_thread_get() and per handle a detached umcg_spawn() gave
	 * out.  The last put frees it, after refs drops to zero.
	 */
	_Atomic uint32_t handles;

	_Atomic(struct umcg_thread *) joiner;

	/*
	 * 0 from the moment a core is handed to the thread until the thread
	 * itself sees RUNNING: a thread still waking up is not blocked.
	 */
	_Atomic uint32_t awake;

	/*
	 * Kernel moves (sched.c): the run that began when the thread was
	 * last made RUNNING, in bits 8-63, and UMCG_KMOVE_* for what happened
	 * in it, in bits 0-7; ut->blocked_ns as it was when the run began.
	 */
	_Atomic uint64_t kmove;
	_Atomic uint64_t kmove_blocked_ns;

	/* Asynchronous preemption (C6): see sched.c. */
	_Atomic uint32_t in_lib;	/* inside a libumcg call */
	_Atomic uint32_t preempt_pending;

	/*
	 * A blocking call the thread announced (blocking.c): the call's
	 * number from bit UMCG_BLK_SHIFT up, UMCG_BLK_* below it; 0 outside
	 * one.  Stored by the thread; IN -> TAKEN by the monitor only.
	 */
	_Atomic uint64_t blocking;
	uint64_t blocking_nr;		/* the thread's own: calls announced */
	_Atomic uint32_t blocking_depth;	/* the thread's own: nesting */

	/* Statistics; written by whoever changes the state. */
	_Atomic uint64_t state_since_ns;
	/*
	 * When it was last handed to the policy (stamped only while stats.c
	 * samples hand-off latencies: their start), and why (UMCG_ENQ_*:
	 * "woken" in the snapshot).
	 */
	_Atomic uint64_t ready_ns;
	_Atomic uint32_t ready_why;
	_Atomic uint64_t nr_switches;
	_Atomic uint64_t nr_blocks;
	_Atomic uint64_t nr_preempts;

	struct cds_list_head all_node;	/* group->threads */
};

struct umcg_core {
	pthread_mutex_t lock;
	struct umcg_thread *current;	/* under lock */
	_Atomic uint32_t wake_seq;
	/* The user backend's server asleep on wake_seq (backend.h, counted). */
	_Atomic uint32_t server_sleepers;
	/* Its server is one of group->nr_looking (sched.c, "Looking servers"). */
	_Atomic uint32_t looking;
	int idx;
	int cpu;
	pthread_t server;
	pid_t server_tid;
	/* Monitor's view: when current got the core, and a switch counter. */
	_Atomic uint64_t run_since_ns;
	_Atomic uint64_t nr_switches;
	/*
	 * Staged next worker (sched.c): set while one thread refills the
	 * stage; the run number (t->kmove) of the run the stage began.
	 */
	_Atomic uint32_t refilling;
	_Atomic uint64_t stage_run;
	/*
	 * Counters of what happened on this core (umcg_stats() adds them up):
	 * per core, so that no switch writes a cache line shared by all.
	 * They live in the group's statistics area (stats.c).
	 */
	struct umcg_core_counters *stats;
	struct umcg_group *group;
} __attribute__((aligned(UMCG_CACHELINE)));

struct umcg_backend_ops;

struct umcg_group {
	unsigned int nr_cores;
	struct umcg_core *cores;

	const struct umcg_policy_ops *policy;
	void *policy_priv;

	const struct umcg_backend_ops *backend;
	void *backend_priv;

	uint64_t time_slice_ns;
	uint64_t blocked_ns;
	_Atomic bool stopping;

	/*
	 * Looking servers (sched.c): how many are woken to look for work,
	 * and whether an enqueue left its wake-up to them.  Written on
	 * wake-ups only, never on a switch; a line of their own.
	 */
	_Atomic uint32_t nr_looking __attribute__((aligned(UMCG_CACHELINE)));
	_Atomic uint32_t kick_owed;

	pthread_mutex_t threads_lock __attribute__((aligned(UMCG_CACHELINE)));
	struct cds_list_head threads;

	/*
	 * Group-wide counters; the per-switch ones are per core (c->stats).
	 * Both in the statistics area (stats.c), which "umcgctl top" reads.
	 */
	struct umcg_group_counters *stats;
	struct umcg_stats_area *stats_area;

	_Atomic int dump_signal;
	_Atomic uint32_t dump_requested;

	/*
	 * The user backend's monitor: it sleeps on monitor_seq, and says in
	 * monitor_idle that it sleeps longer than its shortest period, so
	 * that a worker announcing a call that may block wakes it
	 * (umcg_blocking_enter()).  Here, not in the backend's own data,
	 * because a released worker may still look after the backend's fini.
	 */
	_Atomic uint32_t monitor_seq;
	_Atomic uint32_t monitor_idle;
	/* The monitor asleep on monitor_seq (backend.h, counted). */
	_Atomic uint32_t monitor_sleepers;

	/* The private futex hash's next resize (futex_hash.c). */
	_Atomic uint64_t futex_grow_at;
	_Atomic bool futex_resizing;
};

/*
 * Live workers from which the private futex hash is kept at one bucket
 * per worker; below, the kernel's own size (16 buckets and up) serves.
 */
#define UMCG_FUTEX_HASH_FIRST	128

/* @live workers now (just counted): grow the futex hash if they outgrew it. */
void umcg_futex_hash_fit(struct umcg_group *g, uint64_t live);

/* umcg_thread.blocking, below UMCG_BLK_SHIFT: see blocking.c. */
#define UMCG_BLK_IN		1ULL	/* in the call; the core is still its */
#define UMCG_BLK_TAKEN		2ULL	/* the monitor took its core */
#define UMCG_BLK_GAVE		3ULL	/* it gave its core away on the way in */
#define UMCG_BLK_MASK		3ULL
#define UMCG_BLK_SHIFT		2

/* t->joiner once @t is done: a joiner that comes later must not park. */
#define UMCG_JOINER_DONE	((struct umcg_thread *)1)

/* The process's group, NULL outside umcg_init() .. umcg_fini(). */
extern struct umcg_group *_Atomic umcg_group;
/* The calling thread's umcg thread, NULL for plain threads. */
extern __thread struct umcg_thread *umcg_current;

static inline uint32_t umcg_state_of(uint32_t word)
{
	return word & UMCG_TASK_STATE_MASK;
}

static inline uint32_t umcg_thread_load_state(const struct umcg_thread *t)
{
	return atomic_load((_Atomic uint32_t *)&t->ut->state);
}

/* Compare-and-swap of the whole state word; updates *old on failure. */
static inline bool umcg_state_cas(struct umcg_thread *t, uint32_t *old, uint32_t new)
{
	return atomic_compare_exchange_strong((_Atomic uint32_t *)&t->ut->state, old, new);
}

uint64_t umcg_now_ns(void);

static inline void umcg_ref_get(struct umcg_thread *t)
{
	atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
}

static inline void umcg_ref_put(struct umcg_thread *t)
{
	atomic_fetch_sub_explicit(&t->refs, 1, memory_order_release);
}

/* sched.c: the switch machinery every backend shares. */
void umcg_server_kick(struct umcg_core *c);
/* A thread of libumcg's own (server, monitor): every signal blocked. */
int umcg_own_thread_create(pthread_t *thr, void *(*fn)(void *), void *arg);
void umcg_core_give(struct umcg_core *c, struct umcg_thread *self);
int umcg_sched_yield(struct umcg_thread *self, unsigned int why);
int umcg_sched_park(struct umcg_thread *self, uint64_t abs_ns);
int umcg_sched_unpark(struct umcg_thread *t, int waker_core);
int umcg_sched_switch(struct umcg_thread *self, struct umcg_thread *t);
void umcg_sched_exit(struct umcg_thread *self);
void umcg_make_runnable(struct umcg_thread *t, int waker_core, unsigned int flags);
void umcg_core_sync_locked(struct umcg_core *c);
void umcg_core_refill(struct umcg_core *c);
void umcg_stage_drop_all(struct umcg_group *g);
int umcg_thread_core_of(const struct umcg_thread *t);
int umcg_wait_for_core(struct umcg_thread *self, uint64_t abs_timeout_ns);
void *umcg_server_main(void *arg);
void umcg_core_kick_idle(struct umcg_group *g, int core, int start);
void umcg_lib_enter(struct umcg_thread *self);
void umcg_reacquire(struct umcg_thread *self);
void umcg_lib_leave(struct umcg_thread *self);

/*
 * @self enters libumcg.  A kernel preemption request (UMCG_TF_PREEMPT,
 * set before UMCG_IOC_PREEMPT) must not take effect in here, where @self
 * may hold the runtime's locks: take it back and yield on the way out
 * instead (preempt_pending).  Pairs with umcg_kmod's check of in_lib
 * after it sets the flag: one of the two sees the other.
 */
/*
 * in_lib up and down; the first entry and the last exit set and clear
 * UMCG_TF_INLIB in the word where the kernel moves workers (sched.c).
 * umcg_in_lib_dec() is true when @self left libumcg for good.
 */
void umcg_in_lib_inc(struct umcg_thread *self);
bool umcg_in_lib_dec(struct umcg_thread *self);

static inline void umcg_in_lib_get(struct umcg_thread *self)
{
	_Atomic uint32_t *w = (_Atomic uint32_t *)&self->ut->state;
	uint32_t s;

	umcg_in_lib_inc(self);
	s = atomic_load(w);
	while (s & UMCG_TF_PREEMPT) {
		if (atomic_compare_exchange_strong(w, &s, s & ~UMCG_TF_PREEMPT)) {
			atomic_store(&self->preempt_pending, 1);
			break;
		}
	}
}

/*
 * For calls that need no core but run policy or runtime code: defer a
 * preemption signal to the way out (the handler would otherwise re-enter
 * locks the interrupted call holds).  Returns the caller's worker or NULL.
 */
static inline struct umcg_thread *umcg_lib_hold(void)
{
	struct umcg_thread *self = umcg_current;

	if (!self || (atomic_load(&self->flags) & UMCG_THREAD_RELEASED))
		return NULL;
	umcg_in_lib_get(self);
	return self;
}

static inline void umcg_lib_unhold(struct umcg_thread *self)
{
	if (self)
		umcg_lib_leave(self);
}
int umcg_sched_block(struct umcg_thread *self);
bool umcg_worker_blocked_locked(struct umcg_core *c, struct umcg_thread *t,
				bool (*asleep)(struct umcg_thread *t, void *arg), void *arg);
void umcg_worker_preempt(struct umcg_thread *self);
bool umcg_kernel_made_runnable(const struct umcg_thread *t);

/* runtime.c */
int umcg_thread_register(struct umcg_group *g, struct umcg_thread *t);

/*
 * stats.c: the statistics area (uapi/umcg_stats.h).  _create() maps it
 * and points g->stats and every core's stats into it (published as
 * /dev/shm/umcg.<pid> unless $UMCG_STATS is "0"; anonymous memory if that
 * fails); -ENOMEM only if no memory at all.  _start() starts the stats
 * thread of a published area, once the group is set up; _unpublish()
 * stops it and removes the name (umcg_fini()); _destroy() unmaps it, when
 * the group's memory goes.
 */
int umcg_stats_area_create(struct umcg_group *g, const char *backend, const char *policy);
int umcg_stats_area_start(struct umcg_group *g);
void umcg_stats_area_unpublish(struct umcg_group *g);
void umcg_stats_area_destroy(struct umcg_group *g);
/* The per-core counters of @g summed into *@st (switches .. handoffs). */
void umcg_stats_core_sums(struct umcg_group *g, struct umcg_stats *st);
/* One more of libumcg's own threads runs (umcg_own_thread_create()). */
void umcg_stats_own_thread(struct umcg_group *g);
/* Are hand-off latencies sampled (a reader asked: see stats.c)? */
bool umcg_stats_timing(const struct umcg_group *g);
/* Core @c lost its owner at @ns (0: now): a hand-off begins, if sampled. */
void umcg_stats_vacated(struct umcg_core *c, uint64_t ns);
/* @c has an owner again that will not sample (kernel-run stage). */
void umcg_stats_filled(struct umcg_core *c);
/* @self, given core @c, is back from its wait: sample the hand-off. */
void umcg_stats_handoff_done(struct umcg_thread *self);

/* policy_*.c */
extern const struct umcg_policy_ops umcg_policy_steal;
extern const struct umcg_policy_ops umcg_policy_fifo;
extern const struct umcg_policy_ops umcg_policy_pinned;

#endif /* UMCG_INTERNAL_H */
