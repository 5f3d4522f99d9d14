// SPDX-License-Identifier: GPL-2.0
/*
 * wait.c - UMCG_IOC_WAIT and UMCG_IOC_WAKE: a registered thread sleeps
 * until its state word reads RUNNING; another thread of its process,
 * having written RUNNING into that word through the mapping, wakes it.
 *
 * Lock order (outermost first):
 *
 *   umcg_group.lock
 *     umcg_group.waitq[i].lock (inside wake_up(); then the scheduler's)
 *
 * The waiter holds no umcg lock while it sleeps: it looks up its slot
 * under umcg_group.lock, drops it, and sleeps on the slot's wait queue
 * with wait_event_interruptible_hrtimeout(), whose condition is a
 * READ_ONCE() of its own struct umcg_task.state in the group's vmalloc'ed
 * area: module memory, so no user access and no fault.
 *
 * Lifetime.  The wait queues live in the group, one per slot, initialised
 * at allocation and never reset, so registration and reaping of slots do
 * not touch them.  The group lives as long as its file, and an ioctl in
 * progress holds the file (fdget()), so neither the waiter's nor the
 * waker's group can be freed under it.  A waiter's slot cannot change
 * while it sleeps: only the thread itself unregisters it, and a slot is
 * reaped only once its thread has no task.  No task_struct is referenced:
 * the waker wakes whoever sleeps on the queue; if the target thread is
 * exiting or already gone, the queue is empty (a dying waiter removes
 * itself before returning) and wake_up() does nothing.  A thread killed
 * in WAIT leaves it with -EINTR on the fatal signal and exits normally.
 *
 * Ordering: the waker stores RUNNING before its ioctl; wake_up() orders
 * that store before the waiter's re-check (the waitqueue lock and
 * try_to_wake_up()'s barriers, as for any wait_event()/wake_up() pair).
 */
#include <linux/errno.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/timekeeping.h>
#include <linux/wait.h>

#include "umcg_internal.h"

/* Is the state in @task's word RUNNING? */
static bool umcg_task_running(const struct umcg_task *task)
{
	return (READ_ONCE(task->state) & UMCG_TASK_STATE_MASK) ==
	       UMCG_TASK_RUNNING;
}

/*
 * The slot index of the calling thread in @grp.
 *
 * Return: the index; -EPERM (the group belongs to another process);
 * -ENOENT (the caller is not registered).
 */
static int umcg_self_find(struct umcg_group *grp)
{
	struct pid *pid = task_pid(current);
	unsigned int i;
	int ret = -ENOENT;

	mutex_lock(&grp->lock);
	if (grp->mm && !umcg_group_owned(grp)) {
		ret = -EPERM;
		goto out;
	}
	for (i = 0; i < UMCG_KMOD_MAX_TASKS; i++) {
		if (grp->slots[i].pid == pid) {
			ret = i;
			break;
		}
	}
out:
	mutex_unlock(&grp->lock);
	return ret;
}

/*
 * Sleep until the caller's state is RUNNING, a signal or the timeout:
 * @timeout_ns CLOCK_MONOTONIC nanoseconds, absolute if @flags has
 * UMCG_WAIT_ABSTIME, relative otherwise; 0 for none.
 *
 * Return: 0; -ETIMEDOUT; -EINTR (a signal; not restarted); -EPERM;
 * -ENOENT.
 */
int umcg_task_sleep(struct umcg_group *grp, u32 flags, u64 timeout_ns)
{
	struct umcg_task *task;
	ktime_t timeout;
	int i, ret;

	i = umcg_self_find(grp);
	if (i < 0)
		return i;
	/* Set by the bind that came with the caller's REGISTER. */
	task = &grp->tasks[i];

	if (!timeout_ns || timeout_ns > KTIME_MAX) {
		ret = wait_event_interruptible(grp->waitq[i],
					       umcg_task_running(task));
	} else {
		timeout = ns_to_ktime(timeout_ns);
		if (flags & UMCG_WAIT_ABSTIME)
			timeout = ktime_sub(timeout, ktime_get());
		if (ktime_before(timeout, 0))
			timeout = 0;
		ret = wait_event_interruptible_hrtimeout(grp->waitq[i],
							 umcg_task_running(task),
							 timeout);
	}
	if (ret == -ETIME)
		return -ETIMEDOUT;
	if (ret)
		return -EINTR;
	return 0;
}

/*
 * Wake the thread of the caller's group whose tid, in the caller's pid
 * namespace, is @tid, if it sleeps in UMCG_IOC_WAIT.  It runs on only if
 * its state word reads RUNNING.
 *
 * Return: 0; -EPERM (the group belongs to another process); -ESRCH (no
 * live registered thread of the group has that tid).
 */
int umcg_task_wakeup(struct umcg_group *grp, u32 tid)
{
	unsigned int i;
	int ret = -ESRCH;

	if (!tid || tid > INT_MAX)
		return -ESRCH;

	mutex_lock(&grp->lock);
	if (grp->mm && !umcg_group_owned(grp)) {
		ret = -EPERM;
		goto out;
	}
	for (i = 0; i < UMCG_KMOD_MAX_TASKS; i++) {
		struct umcg_slot *slot = &grp->slots[i];

		/* An exited thread's tid may belong to someone else now. */
		if (!slot->pid || !pid_has_task(slot->pid, PIDTYPE_PID) ||
		    pid_vnr(slot->pid) != tid)
			continue;
		wake_up_interruptible(&grp->waitq[i]);
		ret = 0;
		break;
	}
out:
	mutex_unlock(&grp->lock);
	return ret;
}
