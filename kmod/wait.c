// SPDX-License-Identifier: GPL-2.0
/*
 * wait.c - UMCG_IOC_WAIT, WAKE, SWITCH and PREEMPT: a registered thread
 * sleeps until its state word reads RUNNING; another thread of its
 * process, having written RUNNING into that word through the mapping,
 * wakes it; SWITCH does both in one call, asking for the caller's CPU.
 *
 * Lock order: only umcg_slot.waitq.lock, inside wake_up() or
 * umcg_wake_slot() (kmove.c).  No mutex is taken, so a RUNNING worker
 * calling WAKE or PREEMPT does not sleep in them (which the block hook
 * would count as a block).
 *
 * Lookups are lock-free (task.c): the caller's own slot by task, the
 * target by tid, under RCU.  The caller's slot cannot change while it
 * sleeps (only the thread itself unregisters; a slot is reaped only once
 * its thread is dead).  The target may unregister or die meanwhile: then
 * nothing sleeps on its queue, and waking it does nothing.  The group
 * outlives the ioctl: the file is held by fdget() for its duration.
 *
 * Ordering: the waker stores RUNNING before its ioctl; the wait queue
 * lock and try_to_wake_up() order that store before the sleeper's
 * re-check, as for any wait_event()/wake_up() pair.
 */
#include <linux/errno.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/signal.h>
#include <linux/timekeeping.h>
#include <linux/wait.h>

#include "umcg_internal.h"
#include "umcg_trace.h"

/* Is the state in @task's word RUNNING? */
static bool umcg_task_running(const struct umcg_task *task)
{
	return (READ_ONCE(task->state) & UMCG_TASK_STATE_MASK) ==
	       UMCG_TASK_RUNNING;
}

/*
 * The calling thread's slot in @grp.
 * Return: the slot; ERR_PTR(-EPERM) (the group belongs to another
 * process); ERR_PTR(-ENOENT) (the caller is not registered).
 */
static struct umcg_slot *umcg_self_find(struct umcg_group *grp)
{
	struct umcg_slot *slot;

	if (!umcg_group_owned(grp))
		return ERR_PTR(READ_ONCE(grp->mm) ? -EPERM : -ENOENT);
	rcu_read_lock();
	slot = umcg_slot_of_current(grp);
	rcu_read_unlock();
	/* Only current unregisters its own slot: it stays valid. */
	if (!slot)
		return ERR_PTR(-ENOENT);
	return slot;
}

/*
 * Is a signal queued for current that it does not block?  What else sets
 * TIF_SIGPENDING (a freezer or stop request) or wakes an interruptible
 * sleep (TIF_NOTIFY_SIGNAL: task work of io_uring and others) is no
 * signal.  Under siglock, as senders queue under it.
 */
static bool umcg_signal_queued(void)
{
	struct task_struct *t = current;
	sigset_t pend;
	bool ret;

	spin_lock_irq(&t->sighand->siglock);
	sigorsets(&pend, &t->pending.signal, &t->signal->shared_pending.signal);
	sigandnsets(&pend, &pend, &t->blocked);
	ret = !sigisemptyset(&pend);
	spin_unlock_irq(&t->sighand->siglock);
	return ret;
}

/*
 * Sleep as @self (current's slot in @grp) until RUNNING, a signal or the
 * timeout.  Marked as a umcg wait for the block hook: the word may read
 * RUNNING by the time this thread calls schedule() (its picker stored it
 * after the condition was checked), which is no block.
 *
 * Only a queued signal ends the wait with -EINTR.  Anything else that
 * interrupts it (task work queued with TWA_SIGNAL, a freezer or a stop)
 * must run before the wait goes on, which only the way out of the system
 * call does: without a timeout or with an absolute one the ioctl returns
 * -ERESTARTNOINTR and is issued again with the same arguments once that
 * work is done, which the caller does not see.  A relative timeout cannot
 * be restarted so: task work waits until the wait ends (at the latest at
 * the timeout), and a freezer or stop request ends the wait with -EINTR.
 */
static int umcg_sleep(struct umcg_group *grp, struct umcg_slot *self,
		      u32 flags, u64 timeout_ns)
{
	struct umcg_task *task = umcg_task_of(self);
	bool timed = timeout_ns && timeout_ns <= KTIME_MAX;
	bool relative = timed && !(flags & UMCG_WAIT_ABSTIME);
	bool deferred = false;
	ktime_t deadline = 0, timeout;
	int ret;

	if (relative)
		deadline = ktime_add_safe(ktime_get(), ns_to_ktime(timeout_ns));
	else if (timed)
		deadline = ns_to_ktime(timeout_ns);

	WRITE_ONCE(self->in_wait, true);
	for (;;) {
		if (!timed) {
			ret = wait_event_interruptible(self->waitq,
						       umcg_task_running(task));
		} else {
			timeout = ktime_sub(deadline, ktime_get());
			if (ktime_before(timeout, 0))
				timeout = 0;
			ret = wait_event_interruptible_hrtimeout(self->waitq,
							umcg_task_running(task),
							timeout);
		}
		if (ret != -ERESTARTSYS)
			break;
		if (umcg_signal_queued()) {
			ret = -EINTR;
			break;
		}
		if (!relative) {
			ret = -ERESTARTNOINTR;
			break;
		}
		if (task_sigpending(current)) {
			ret = -EINTR;
			break;
		}
		/* Only task work: it runs when this bounded wait ends. */
		clear_thread_flag(TIF_NOTIFY_SIGNAL);
		deferred = true;
	}
	WRITE_ONCE(self->in_wait, false);
	if (deferred)
		set_thread_flag(TIF_NOTIFY_SIGNAL);
	if (ret == -ETIME)
		return -ETIMEDOUT;
	return ret;
}

/*
 * May the caller act on thread @tid of @grp?  0 if it may look it up;
 * -EPERM (the group belongs to another process); -ESRCH (no such tid can
 * be registered in it).
 */
static int umcg_target_check(struct umcg_group *grp, u32 tid)
{
	if (!umcg_group_owned(grp))
		return READ_ONCE(grp->mm) ? -EPERM : -ESRCH;
	if (!tid || tid > INT_MAX)
		return -ESRCH;
	return 0;
}

/*
 * Wake the thread of @grp whose tid is @tid with @wake_flags: for
 * UMCG_IOC_SWITCH of @self if @sw (a constant: the tracepoint is chosen at
 * compile time), else for UMCG_IOC_WAKE.
 * Return: 0; -EPERM; -ESRCH (no live registered thread of the group).
 */
static __always_inline int umcg_wake(struct umcg_group *grp,
				     struct umcg_slot *self, u32 tid,
				     int wake_flags, const bool sw)
{
	struct umcg_slot *slot;
	int ret = umcg_target_check(grp, tid);

	if (ret)
		return ret;
	ret = -ESRCH;
	rcu_read_lock();
	slot = umcg_slot_of_tid(grp, tid);
	if (slot) {
		if (sw)
			trace_umcg_switch(self, slot);
		else
			trace_umcg_pick(slot);
		umcg_wake_slot(grp, slot->idx, wake_flags);
		ret = 0;
	}
	rcu_read_unlock();
	return ret;
}

/*
 * UMCG_IOC_WAIT: sleep until the caller's state is RUNNING, a signal or
 * the timeout: @timeout_ns CLOCK_MONOTONIC nanoseconds, absolute if
 * @flags has UMCG_WAIT_ABSTIME, relative otherwise; 0 for none.
 *
 * Return: 0; -ETIMEDOUT; -EINTR (a signal; not restarted); -EPERM;
 * -ENOENT.  Task work and freezer or stop requests restart the wait
 * (umcg_sleep()).
 */
int umcg_task_sleep(struct umcg_group *grp, u32 flags, u64 timeout_ns)
{
	struct umcg_slot *self = umcg_self_find(grp);

	if (IS_ERR(self))
		return PTR_ERR(self);
	return umcg_sleep(grp, self, flags, timeout_ns);
}

/*
 * UMCG_IOC_WAKE: wake the thread of the caller's group whose tid, in the
 * caller's pid namespace, is @tid, if it sleeps; it runs on only if its
 * state word reads RUNNING.
 *
 * Return: 0; -EPERM (the group belongs to another process); -ESRCH (no
 * live registered thread of the group has that tid).
 */
int umcg_task_wakeup(struct umcg_group *grp, u32 tid)
{
	return umcg_wake(grp, NULL, tid, 0, false);
}

/*
 * UMCG_IOC_SWITCH: wake @next_tid on the caller's CPU (best effort), then
 * sleep as UMCG_IOC_WAIT.  The wakee is queued on this CPU's runqueue and
 * runs when the caller sleeps, a few instructions later.
 *
 * Return: as umcg_task_wakeup(), then as umcg_task_sleep().
 */
int umcg_task_switch(struct umcg_group *grp, u32 next_tid, u32 flags,
		     u64 timeout_ns)
{
	struct umcg_slot *self = umcg_self_find(grp);
	int ret;

	if (IS_ERR(self))
		return PTR_ERR(self);
	ret = umcg_wake(grp, self, next_tid, UMCG_WF_CURRENT_CPU, true);
	if (ret)
		return ret;
	return umcg_sleep(grp, self, flags, timeout_ns);
}

/*
 * UMCG_IOC_PREEMPT: ask worker @tid to leave its core (kmove.c).
 * Return: 0; -EPERM; -ESRCH (@tid is no live registered worker).
 */
int umcg_task_preempt(struct umcg_group *grp, u32 tid)
{
	struct umcg_slot *slot;
	int ret = umcg_target_check(grp, tid);

	if (ret)
		return ret;
	ret = -ESRCH;
	rcu_read_lock();
	slot = umcg_slot_of_tid(grp, tid);
	if (slot && READ_ONCE(slot->flags) == UMCG_REGISTER_WORKER) {
		trace_umcg_preempt(slot);
		umcg_worker_preempt(slot);
		ret = 0;
	}
	rcu_read_unlock();
	return ret;
}
