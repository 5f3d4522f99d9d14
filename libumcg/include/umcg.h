/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * umcg.h - libumcg: user-space scheduling of real kernel threads.
 *
 * A group of *servers*, one per managed core, runs *workers*: real kernel
 * threads (native code, TLS, gdb, perf and signals all work) of which at
 * most one executes on each core at a time.  Which runnable worker goes next
 * on a core is decided in user space by a *policy* (umcg/policy.h).  When a
 * worker blocks, parks, yields or exits, its core goes to the next worker at
 * once.  The kernel's help comes from a *backend*: "scx" (the umcg sched_ext
 * scheduler), "kmod" (umcg.ko) or "user" (none: futex hand-off and a monitor
 * thread that takes back the core of a worker blocked in a call libumcg did
 * not see).
 *
 * Every call returns 0 (or a non-negative value where documented) or a
 * negative errno; none sets errno.  One group per process.
 *
 * Calls marked "worker only" return -EPERM from a thread that is not a
 * worker of the group.
 */
#ifndef UMCG_H
#define UMCG_H

#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UMCG_VERSION_MAJOR	0
#define UMCG_VERSION_MINOR	1

typedef struct umcg_thread umcg_thread_t;
struct umcg_policy_ops;

/* Thread states, as umcg_thread_state() returns them (uapi values). */
#define UMCG_STATE_NEW		0
#define UMCG_STATE_RUNNABLE	1
#define UMCG_STATE_RUNNING	2
#define UMCG_STATE_BLOCKED	3
#define UMCG_STATE_PARKED	4
#define UMCG_STATE_DONE		5

/* Flags of struct umcg_config. */
/* Make the thread calling umcg_init() a worker of the group. */
#define UMCG_CONFIG_ATTACH_CALLER	(1U << 0)

/**
 * struct umcg_config - how umcg_init() sets the group up
 * @size:          sizeof(struct umcg_config); the struct grows at its end
 * @flags:         UMCG_CONFIG_*
 * @nr_cores:      managed cores; 0: every CPU in the caller's affinity mask
 * @first_cpu:     the managed cores are the first @nr_cores CPUs of the
 *                 caller's affinity mask at or above this CPU
 * @policy:        NULL for the default (per-core FIFO with work stealing),
 *                 or a built-in one from umcg_policy_find(), or your own
 * @backend:       "scx", "kmod", "user", or NULL: $UMCG_BACKEND if set,
 *                 else the best available (scx, then kmod, then user)
 * @time_slice_ns: preempt a worker that runs longer than this; 0: never (C6)
 * @blocked_ns:    user backend: how long a worker may sit in a blocking call
 *                 that libumcg did not see before the monitor gives its core
 *                 to another worker; 0: the default (50 us)
 */
struct umcg_config {
	uint32_t size;
	uint32_t flags;
	uint32_t nr_cores;
	uint32_t first_cpu;
	const struct umcg_policy_ops *policy;
	const char *backend;
	uint64_t time_slice_ns;
	uint64_t blocked_ns;
};

/* Flags of struct umcg_attr. */
/* The thread frees itself when done; it cannot be joined. */
#define UMCG_ATTR_DETACHED	(1U << 0)

/**
 * struct umcg_attr - how umcg_spawn() creates a worker
 * @size:       sizeof(struct umcg_attr)
 * @flags:      UMCG_ATTR_*
 * @core:       preferred core (0 .. nr_cores - 1), -1 for none; the
 *              "pinned" policy always runs the worker there
 * @stack_size: 0: the pthread default
 * @name:       thread name (at most 15 characters), NULL for none
 */
struct umcg_attr {
	uint32_t size;
	uint32_t flags;
	int32_t core;
	uint32_t pad;
	uint64_t stack_size;
	const char *name;
};

/*
 * Sets up the calling process's group.  @cfg NULL: all CPUs, default
 * policy, automatic backend.  -EBUSY if already set up, -EINVAL for a bad
 * config, -ENODEV if the backend asked for is not available.
 */
int umcg_init(const struct umcg_config *cfg);

/*
 * Tears the group down.  Call it from a thread that is not a worker (or
 * from the attached caller, which is detached first), and not concurrently
 * with umcg_init(), umcg_spawn(), umcg_stats() or umcg_dump().  Workers
 * still alive are released: a park in progress returns, they keep running
 * as plain threads under the kernel's scheduler, the worker-only calls they
 * make after that return -ESRCH, and their umcg_thread_t stay valid for
 * umcg_join().  While any is alive the group's memory is kept (until the
 * process exits) and the policy's fini is not called.  Returns -EDEADLK when
 * called by a worker other than the attached caller, -ESRCH without a group.
 */
int umcg_fini(void);

/*
 * The backend in use: "scx", "kmod" or "user"; NULL without a group.
 * "scx-fallback": the group started on "scx" and libumcg has seen the
 * sched_ext scheduler go away since (unloaded, ejected, or loaded anew):
 * every thread runs on under the kernel's normal scheduler, no wake-up is
 * lost, C1 is best effort and C2 is lost.  Sticky for the group: never
 * "scx" again.  A call that would say "scx" checks first, so the change
 * shows at most one call late.  Any thread; a static string.
 */
const char *umcg_backend_name(void);

/* Number of managed cores; -ESRCH before umcg_init(). */
int umcg_nr_cores(void);

/*
 * Creates a worker running @fn(@arg), RUNNABLE until the policy picks it.
 * @attr may be NULL.  *@t is set before the worker can run.  A joinable
 * worker's handle stays valid until umcg_join() returns; a detached one
 * (UMCG_ATTR_DETACHED) frees itself when it is done, but the handle given
 * in *@t (which may then be NULL) holds a reference: the thread's memory
 * stays, DONE, until umcg_thread_put(*@t).
 */
int umcg_spawn(umcg_thread_t **t, const struct umcg_attr *attr,
	       void *(*fn)(void *), void *arg);

/*
 * References on a handle, so that it stays valid past the thread's end:
 * calls on a thread that is DONE then fail with -ESRCH (umcg_unpark(),
 * umcg_switch_to()) or report DONE (umcg_thread_state()), where a handle
 * without one would be a use after free.  umcg_thread_get() needs a handle
 * known to be valid at the time (the caller's own umcg_self(), a worker
 * not yet joined or not yet done, a handle the caller holds a reference
 * on); each get needs one put.  A joinable worker's memory goes at the
 * later of umcg_join() and the last put.  0, or -EINVAL for NULL.
 */
int umcg_thread_get(umcg_thread_t *t);
int umcg_thread_put(umcg_thread_t *t);

/*
 * Waits until @t is DONE, stores its return value (or pthread_exit()'s) in
 * *@ret (if @ret is not NULL) and frees it.  A worker waiting here gives up
 * its core.  -EINVAL for a detached or attached thread or when another
 * worker already joins it, -EDEADLK for the caller itself.  At most one
 * thread may join a worker.
 */
int umcg_join(umcg_thread_t *t, void **ret);

/* The calling worker, or NULL if the caller is not a worker. */
umcg_thread_t *umcg_self(void);

/*
 * Makes the calling pthread a worker (it waits for a core first), or,
 * detach, turns it back into a plain thread; an attached thread that exits
 * without umcg_detach() is detached at its exit.  For code that does not
 * start its threads with umcg_spawn(), such as umcg-run.
 */
int umcg_attach(umcg_thread_t **t);
int umcg_detach(void);

/* Worker only: gives the core to the next runnable worker, if any. */
int umcg_yield(void);

/*
 * Worker only: parks until umcg_unpark() (LockSupport semantics: an unpark
 * that came first is a permit, and park consumes it at once).  May return
 * spuriously, for instance when umcg_fini() releases the caller.  _timeout:
 * -ETIMEDOUT after @ns nanoseconds (-EINVAL above UINT64_MAX / 2).
 */
int umcg_park(void);
int umcg_park_timeout(uint64_t ns);

/* Makes @t runnable if parked, else gives it a permit. -ESRCH if DONE. */
int umcg_unpark(umcg_thread_t *t);

/*
 * Worker only: parks the caller and runs @t on the caller's core at once,
 * without a trip through the server (C4).  @t must be PARKED, or RUNNABLE
 * and held by the policy: -EBUSY if it is new, running, blocked or being
 * picked by a server, -ESRCH if it is done, -EINVAL for the caller itself.
 * Switching is not an unpark: @t's permit is untouched.  With a permit of
 * its own pending, the caller consumes it and stays runnable (a yield to
 * @t).  Returns when the caller is unparked and picked again.
 */
int umcg_switch_to(umcg_thread_t *t);

/*
 * Worker only: parks for @ns nanoseconds (its core runs others meanwhile).
 * An unpark that comes meanwhile stays a permit.  -ESRCH if umcg_fini()
 * released the caller before the time was up.
 */
int umcg_sleep_ns(uint64_t ns);

/* Flags of umcg_blocking_enter(). */
/* The call will block (nothing to read, a sleep): give the core away now. */
#define UMCG_BLOCKING_NOW	(1U << 0)

/*
 * Worker only: the caller is about to make a system call that may block
 * (umcg_blocking_enter()), or has made it (umcg_blocking_leave()): for
 * wrappers of blocking calls, such as umcg-run's.  With the user backend a
 * worker blocked in an announced call loses its core as soon as the monitor
 * sees it asleep (two samples 20 us apart, not blocked_ns), or at once with
 * UMCG_BLOCKING_NOW; umcg_blocking_leave() then waits for a core again
 * before it returns, so the caller's code never runs without one (C1).
 * With a kernel backend, which sees every block itself, they only keep
 * count, and umcg_blocking_leave() waits for its pick if the kernel let
 * the caller run on while the policy had it queued (scx, whose hold of a
 * woken worker is bounded).  Neither makes a system call unless the core
 * changes hands, but for one futex wake of the user backend's monitor
 * when it sleeps long.
 * Calls nest (a signal handler's wrapped call inside a wrapped call); only
 * the outermost pair counts, and a pair made inside a libumcg call (by a
 * signal handler) only counts nesting.  Every enter that returned 0 needs
 * its leave.
 * -EPERM from a plain thread, -ESRCH from one umcg_fini() released,
 * -EINVAL for unknown flags, or a leave without its enter.
 */
int umcg_blocking_enter(unsigned int flags);
int umcg_blocking_leave(void);

/* UMCG_STATE_* of @t, or -EINVAL. */
int umcg_thread_state(const umcg_thread_t *t);
/* Kernel thread id of @t (0 until the new thread has started), or -EINVAL. */
int umcg_thread_tid(const umcg_thread_t *t);
/* Core @t runs on or last ran on (0 .. nr_cores - 1), -1 if none yet. */
int umcg_thread_core(const umcg_thread_t *t);
/* Policy-private word of @t, for umcg/policy.h implementations. */
void **umcg_thread_policy_data(umcg_thread_t *t);

/**
 * struct umcg_stats - group counters since umcg_init()
 * @spawned:   workers created or attached
 * @exited:    workers done
 * @switches:  times a worker was given a core
 * @yields:    umcg_yield() calls that gave the core away
 * @parks:     umcg_park*() calls that gave the core away
 * @blocks:    times a worker blocked in the kernel and lost its core
 * @preempts:  time-slice preemptions (C6)
 * @steals:    runnable workers a core took from another core's queue
 * @live:      workers not yet done
 * @handoffs:  blocks whose core the kernel gave straight to the worker
 *             staged next on it, without waking the server (kmod)
 */
struct umcg_stats {
	uint64_t spawned;
	uint64_t exited;
	uint64_t switches;
	uint64_t yields;
	uint64_t parks;
	uint64_t blocks;
	uint64_t preempts;
	uint64_t steals;
	uint64_t live;
	uint64_t handoffs;
};

/* Fills *@st; -ESRCH before umcg_init(). */
int umcg_stats(struct umcg_stats *st);

/*
 * Writes every worker (tid, name, state, core, time in state, switch,
 * block and preempt counts) and the counters to @f, like a JVM thread
 * dump.  Safe to call at any time from any thread.
 */
int umcg_dump(FILE *f);

/*
 * Dumps to stderr whenever the process gets signal @sig (0 to stop).  The
 * dump is written by the monitor thread, not in the handler.  "umcgctl dump
 * PID" sends the signal named in $UMCG_DUMP_SIGNAL (default SIGUSR2).
 */
int umcg_dump_on_signal(int sig);

#ifdef __cplusplus
}
#endif

#endif /* UMCG_H */
