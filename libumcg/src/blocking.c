// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * blocking.c - blocking calls announced by the worker that makes them
 * (umcg-run's interposed calls), for a backend whose kernel does not tell
 * the library that a worker blocked (user).  Go's runtime is the model:
 * entersyscall, entersyscallblock and exitsyscall.
 *
 *   may block   umcg_blocking_enter(0) stores the call's number with
 *               UMCG_BLK_IN in t->blocking: no system call, the core stays
 *               the caller's.  The monitor (backend_user.c) that sees the
 *               same call in two samples in a row, with no CPU time used
 *               between them, takes the core at once, without waiting for
 *               blocked_ns and without reading /proc.
 *   will block  umcg_blocking_enter(UMCG_BLOCKING_NOW): the caller makes
 *               itself BLOCKED and gives its core to the policy's next
 *               thread, or to the server, before the call
 *               (umcg_sched_block()).
 *   way out     umcg_blocking_leave() clears t->blocking and reads the
 *               state: BLOCKED (the core was taken or given away) means it
 *               queues for a core and waits for one before it returns to
 *               the caller's code (C1, C3), the umcg_reacquire() path;
 *               RUNNABLE (a kernel hold ended before the policy's pick:
 *               runs_unpicked) means it waits for that pick.
 *
 * Exactly one of the monitor and the returning worker keeps the core.  The
 * monitor, under the core's lock, moves the state RUNNING -> BLOCKED and
 * only then t->blocking IN -> TAKEN (compare-and-swap, the "asleep" check
 * of umcg_take_core_locked()); the worker exchanges t->blocking for 0 and
 * only then reads its state.  If the worker's exchange came first, the
 * monitor's second step fails and it gives RUNNING back, unless the worker
 * read BLOCKED and queued already, in which case the monitor frees the
 * core as for any block.  If the monitor's came first, the worker reads
 * BLOCKED.
 *
 * With the monitor in a long sleep (it backs off while nothing happens),
 * announcing a call that may block wakes it (group->monitor_idle), as Go's
 * entersyscall wakes sysmon: one futex wake per long sleep, not per call.
 *
 * With a kernel backend (scx, kmod) the kernel sees every block: both calls
 * only keep count of the nesting, and the way out re-queues a worker whose
 * word reads BLOCKED, or waits for the pick of one that reads RUNNABLE, as
 * any libumcg call does.
 *
 * A pair inside another pair (a signal handler's wrapped call while its
 * worker is in one), or made while the worker is inside libumcg (a handler
 * that interrupted a park), is only counted: taking the core there could
 * re-enter the runtime's locks, and the outer call or libumcg call has the
 * core's fate in hand.
 */
#include <errno.h>
#include <limits.h>

#include "backend.h"
#include "internal.h"

/* Does the kernel tell the library about blocks (scx, kmod)? */
static bool umcg_kernel_sees_blocks(const struct umcg_group *g)
{
	return g->backend->poll_events;
}

/* The monitor sleeps long: wake it, once per sleep. */
static void umcg_monitor_poke(struct umcg_group *g)
{
	if (!atomic_load(&g->monitor_idle) || !atomic_exchange(&g->monitor_idle, 0))
		return;
	atomic_fetch_add(&g->monitor_seq, 1);
	umcg_futex_wake_counted(&g->monitor_seq, &g->monitor_sleepers, 1);
}

/*
 * If @self lost its core since its last libumcg call, get one back; if it
 * runs unpicked (a kernel hold ended while the policy had it queued:
 * RUNNABLE), wait for its pick (C1).
 */
static void umcg_blocking_reacquire(struct umcg_thread *self)
{
	if (umcg_state_of(umcg_thread_load_state(self)) != UMCG_TASK_RUNNING) {
		umcg_lib_enter(self);
		umcg_lib_leave(self);
	}
}

int umcg_blocking_enter(unsigned int flags)
{
	struct umcg_thread *self = umcg_current;
	struct umcg_group *g;
	uint32_t depth;
	uint64_t nr;
	int ret;

	if (flags & ~UMCG_BLOCKING_NOW)
		return -EINVAL;
	if (!self)
		return -EPERM;
	if (atomic_load(&self->flags) & UMCG_THREAD_RELEASED)
		return -ESRCH;
	/* Only the thread and its signal handlers touch it: no RMW needed. */
	depth = atomic_load_explicit(&self->blocking_depth, memory_order_relaxed);
	atomic_store_explicit(&self->blocking_depth, depth + 1, memory_order_relaxed);
	/*
	 * A call inside a call, or a signal handler's call while the thread
	 * is inside libumcg (parked, say, or holding a core's lock): only
	 * counted.
	 */
	if (depth || atomic_load(&self->in_lib))
		return 0;
	g = self->group;
	if (umcg_kernel_sees_blocks(g))
		return 0;
	umcg_blocking_reacquire(self);
	nr = ++self->blocking_nr << UMCG_BLK_SHIFT;
	if (!(flags & UMCG_BLOCKING_NOW)) {
		/* Pairs with the monitor's store of monitor_idle: see above. */
		atomic_store(&self->blocking, nr | UMCG_BLK_IN);
		umcg_monitor_poke(g);
		return 0;
	}
	umcg_in_lib_get(self);
	ret = umcg_sched_block(self);
	/* A preemption due now is served: the core is given away. */
	atomic_store(&self->preempt_pending, 0);
	umcg_in_lib_dec(self);
	if (ret) {
		atomic_store_explicit(&self->blocking_depth, 0, memory_order_relaxed);
		return ret;
	}
	atomic_store_explicit(&self->blocking, nr | UMCG_BLK_GAVE, memory_order_relaxed);
	return 0;
}

int umcg_blocking_leave(void)
{
	struct umcg_thread *self = umcg_current;
	uint32_t depth;

	if (!self)
		return -EPERM;
	depth = atomic_load_explicit(&self->blocking_depth, memory_order_relaxed);
	if (!depth)
		return -EINVAL;
	atomic_store_explicit(&self->blocking_depth, depth - 1, memory_order_relaxed);
	if (depth > 1 || atomic_load(&self->in_lib))
		return 0;	/* only counted: see umcg_blocking_enter() */
	if (atomic_load_explicit(&self->blocking, memory_order_relaxed))
		atomic_exchange(&self->blocking, 0);
	if (atomic_load(&self->flags) & UMCG_THREAD_RELEASED)
		return -ESRCH;
	umcg_blocking_reacquire(self);
	return 0;
}
