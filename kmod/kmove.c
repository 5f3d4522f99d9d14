// SPDX-License-Identifier: GPL-2.0
/*
 * kmove.c - the state moves the kernel makes on a worker by itself
 * (uapi/umcg.h: "kernel moves"), the event bits and server pokes that
 * report them, and the wait of a moved worker until the library picks it.
 *
 * Lock order (outermost first):
 *
 *   umcg_group.server_lock
 *     umcg_slot.waitq.lock (wake_up() of the poked server)
 *   umcg_slot.waitq.lock (the staged worker's, woken by a hand-off;
 *                             taken with no other umcg lock held)
 *
 * Contexts:
 *   umcg_worker_sleeping()  the scheduler hook (hook.c), in the worker,
 *                           preemption off, interrupts on, RCU-sched
 *   umcg_task_resume()      task work (TWA_RESUME) in the worker on its
 *                           way back to user space: sleepable
 *   umcg_task_preempted()   task work (TWA_SIGNAL) likewise
 *   umcg_worker_preempt()   UMCG_IOC_PREEMPT, another thread, RCU
 *
 * Every move of a slot's state word is made by the slot's own thread (the
 * hook and the task works run in it), so they never race each other; the
 * library's own moves race them and every kernel move is a cmpxchg from
 * the state it expects.  The one exception is the hand-off
 * (umcg_handoff()): a blocking worker moves the staged worker RUNNABLE ->
 * RUNNING, after claiming it from its server's @next_slot; a staged worker
 * sleeps in a umcg wait (or is on its way into one, in libumcg), so it
 * makes no move of its own meanwhile.
 *
 * Why the wait to be picked is TASK_KILLABLE: task_work_run() runs work
 * queued by a running callback before it returns, so a callback cannot
 * end an interruptible wait on a signal and be run again after the signal
 * is delivered (it would spin until picked).  Non-fatal signals therefore
 * wait until the worker is picked; fatal ones end the wait.  TASK_KILLABLE
 * sleeps are not reported by the hung-task detector.
 *
 * References: a queued task work holds one on the group (so the slot and
 * its wait queue live until it ran) and is counted in umcg_nr_works.  It
 * cannot be cancelled (task_work_cancel() is not exported); it runs at the
 * latest when its thread exits (PF_EXITING, then it only drops its
 * reference).
 */
#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/spinlock.h>
#include <linux/task_work.h>
#include <linux/timekeeping.h>
#include <linux/wait.h>

#include "umcg_internal.h"

/*
 * Wake whoever sleeps on slot @idx's wait queue, with @wake_flags for
 * try_to_wake_up() (0, or UMCG_WF_CURRENT_CPU).  The sleepers re-check
 * their condition.  Any context that may take a spinlock.
 */
void umcg_wake_slot(struct umcg_group *grp, unsigned int idx, int wake_flags)
{
	struct wait_queue_head *wq = &umcg_slot_at(grp, idx)->waitq;
	struct wait_queue_entry *curr, *next;
	unsigned long irqflags;

	if (!wake_flags) {
		wake_up(wq);
		return;
	}
	spin_lock_irqsave(&wq->lock, irqflags);
	list_for_each_entry_safe(curr, next, &wq->head, entry)
		curr->func(curr, TASK_NORMAL, wake_flags, NULL);
	spin_unlock_irqrestore(&wq->lock, irqflags);
}

/*
 * The slot index of the server the kernel pokes about worker @slot: the
 * one in its server_tid if that is a registered server of the group, else
 * (@exact false) the group's first; -1 if none.  grp->server_lock held.
 */
static int umcg_server_of(struct umcg_slot *slot, bool exact)
{
	struct umcg_group *grp = slot->grp;
	u32 stid = READ_ONCE(grp->tasks[slot->idx].server_tid);
	unsigned int i;

	for (i = 0; i < grp->nr_servers; i++)
		if (umcg_slot_at(grp, grp->servers[i])->tid == stid)
			return grp->servers[i];
	return !exact && grp->nr_servers ? grp->servers[0] : -1;
}

/*
 * Tell the library that slot @slot's state moved: set its event bit, then
 * poke its server (umcg_server_of()): store RUNNING into the server's word
 * and wake it if it read otherwise.  The bit is set before the poke, and
 * both are full barriers, so a server that stored RUNNABLE into its word
 * and then found no bit is woken.
 */
static void umcg_event(struct umcg_slot *slot)
{
	struct umcg_group *grp = slot->grp;
	struct umcg_task *st;
	int sidx;
	u32 s;

	set_bit(slot->idx, grp->events);
	smp_mb__after_atomic();

	spin_lock(&grp->server_lock);
	sidx = umcg_server_of(slot, false);
	if (sidx >= 0) {
		st = &grp->tasks[sidx];
		s = READ_ONCE(st->state);
		while (umcg_state_of(s) != UMCG_TASK_RUNNING &&
		       !try_cmpxchg(&st->state, &s,
				    (s & ~UMCG_TASK_STATE_MASK) |
				    UMCG_TASK_RUNNING))
			;
		if (umcg_state_of(s) != UMCG_TASK_RUNNING)
			umcg_wake_slot(grp, sidx, 0);
	}
	spin_unlock(&grp->server_lock);
}

/*
 * Is slot @idx of @grp a live registered worker whose word reads
 * RUNNABLE?  Under RCU(-sched): the slot's task is reached through its
 * struct pid, which task.c puts only after a grace period.
 */
static bool umcg_slot_stageable(struct umcg_group *grp, u32 idx)
{
	struct umcg_slot *slot = umcg_slot_at(grp, idx);
	struct pid *pid = slot ? READ_ONCE(slot->pid) : NULL;
	struct task_struct *tsk = pid ? pid_task(pid, PIDTYPE_PID) : NULL;

	return tsk && tsk == READ_ONCE(slot->task) &&
	       READ_ONCE(slot->flags) == UMCG_REGISTER_WORKER &&
	       !(tsk->flags & PF_EXITING) &&
	       umcg_state_of(READ_ONCE(grp->tasks[idx].state)) ==
	       UMCG_TASK_RUNNABLE;
}

/*
 * Worker @slot (current) has just moved to BLOCKED: give its core to the
 * worker staged on its server's word (uapi/umcg.h, "The staged next
 * worker"), if any.  Claims the stage with one compare-and-swap, makes the
 * staged worker RUNNING and wakes it on this CPU.  Returns true if it did:
 * the block's event is then queued without a poke.
 */
static bool umcg_handoff(struct umcg_slot *slot)
{
	struct umcg_group *grp = slot->grp;
	struct umcg_task *st, *tt;
	u32 next, idx, s;
	int sidx;

	spin_lock(&grp->server_lock);
	sidx = umcg_server_of(slot, true);
	spin_unlock(&grp->server_lock);
	if (sidx < 0)
		return false;
	st = &grp->tasks[sidx];
	next = READ_ONCE(st->next_slot);
	if (!next || (next & UMCG_NEXT_TAKEN))
		return false;
	idx = UMCG_NEXT_IDX(next);
	if (idx >= UMCG_KMOD_MAX_TASKS || idx == slot->idx ||
	    !umcg_slot_stageable(grp, idx))
		return false;
	if (!try_cmpxchg(&st->next_slot, &next, next | UMCG_NEXT_TAKEN))
		return false;	/* taken back by the library meanwhile */

	tt = &grp->tasks[idx];
	s = READ_ONCE(tt->state);
	do {
		if (umcg_state_of(s) != UMCG_TASK_RUNNABLE) {
			/* The library broke the protocol: undo, poke. */
			WRITE_ONCE(st->next_slot, next);
			return false;
		}
	} while (!try_cmpxchg(&tt->state, &s,
			      (s & ~(UMCG_TASK_STATE_MASK | UMCG_TF_PREEMPT)) |
			      UMCG_TASK_RUNNING));
	WRITE_ONCE(tt->seq, READ_ONCE(tt->seq) + 1);
	umcg_wake_slot(grp, idx, UMCG_WF_CURRENT_CPU);
	return true;
}

/* Record a kernel move of @task to @state (from @old); the caller owns it. */
static bool umcg_move(struct umcg_task *task, u32 *old, u32 state,
		      u32 clear)
{
	u32 new = (*old & ~(UMCG_TASK_STATE_MASK | clear)) | state;

	if (!try_cmpxchg(&task->state, old, new))
		return false;
	WRITE_ONCE(task->seq, READ_ONCE(task->seq) + 1);
	return true;
}

/* Queue @work (bit @bit of slot->work_bits) on current; refs taken here. */
static void umcg_work_queue(struct umcg_slot *slot, struct task_struct *tsk,
			    struct callback_head *work, int bit,
			    enum task_work_notify_mode mode)
{
	if (test_and_set_bit(bit, &slot->work_bits))
		return;
	/* A group whose file is gone and no work holds is being freed. */
	if (READ_ONCE(slot->grp->dying) ||
	    !kref_get_unless_zero(&slot->grp->ref)) {
		clear_bit(bit, &slot->work_bits);
		return;
	}
	atomic_inc(&umcg_nr_works);
	if (task_work_add(tsk, work, mode)) {
		/* @tsk is past exit_task_work(): nothing will run it. */
		atomic_dec(&umcg_nr_works);
		clear_bit(bit, &slot->work_bits);
		umcg_group_put_atomic(slot->grp);
	}
}

/* End of a task work: the reference it held. */
static void umcg_work_done(struct umcg_slot *slot, int bit)
{
	struct umcg_group *grp = slot->grp;

	clear_bit(bit, &slot->work_bits);
	atomic_dec(&umcg_nr_works);
	umcg_group_put(grp);
}

/*
 * current, registered worker @slot, is about to sleep in the kernel.  If
 * its word reads RUNNING, move it to BLOCKED, report it and queue the
 * resume work; an exiting worker is moved to DONE instead.
 */
void umcg_worker_sleeping(struct umcg_slot *slot)
{
	struct umcg_task *task = &slot->grp->tasks[slot->idx];
	u32 s = READ_ONCE(task->state);

	/* Asleep in a umcg wait: whatever the word says, not a block. */
	if (READ_ONCE(slot->in_wait))
		return;
	if (current->flags & PF_EXITING) {
		do {
			if (umcg_state_of(s) != UMCG_TASK_RUNNING &&
			    umcg_state_of(s) != UMCG_TASK_BLOCKED)
				return;
		} while (!umcg_move(task, &s, UMCG_TASK_DONE, 0));
		umcg_event(slot);
		return;
	}

	do {
		if (umcg_state_of(s) != UMCG_TASK_RUNNING ||
		    (s & UMCG_TF_INLIB))
			return;
	} while (!umcg_move(task, &s, UMCG_TASK_BLOCKED, 0));
	WRITE_ONCE(task->cpu, raw_smp_processor_id());
	WRITE_ONCE(task->blocked_ns, ktime_get_ns());
	if (umcg_handoff(slot))
		set_bit(slot->idx, slot->grp->events);
	else
		umcg_event(slot);
	umcg_work_queue(slot, current, &slot->resume_work, UMCG_WORK_RESUME,
			TWA_RESUME);
}

/*
 * Sleep until the library moves current's word (slot @slot) off RUNNABLE,
 * a fatal signal, or the group's file is released (nobody is left to
 * pick it: it runs on unmanaged).
 */
static void umcg_wait_picked(struct umcg_slot *slot)
{
	struct umcg_task *task = &slot->grp->tasks[slot->idx];

	/* Picked between the check and schedule(): no block (see wait.c). */
	WRITE_ONCE(slot->in_wait, true);
	wait_event_killable(slot->waitq,
			    umcg_state_of(READ_ONCE(task->state)) !=
			    UMCG_TASK_RUNNABLE ||
			    READ_ONCE(slot->grp->dying));
	WRITE_ONCE(slot->in_wait, false);
}

/*
 * Is @slot, found from a task work, still current's registration, in the
 * program that registered it?  A worker that blocked in execve() runs the
 * work in the new program, which nobody of the old group can pick.
 */
static bool umcg_work_valid(struct umcg_slot *slot)
{
	return !(current->flags & PF_EXITING) &&
	       READ_ONCE(slot->task) == current &&
	       current->mm == READ_ONCE(slot->grp->mm) &&
	       !fatal_signal_pending(current);
}

/* TWA_RESUME work queued at block time: BLOCKED -> RUNNABLE, then wait. */
static void umcg_task_resume(struct callback_head *work)
{
	struct umcg_slot *slot = container_of(work, struct umcg_slot,
					      resume_work);
	struct umcg_task *task = &slot->grp->tasks[slot->idx];
	u32 s;

	if (umcg_work_valid(slot)) {
		s = READ_ONCE(task->state);
		while (umcg_state_of(s) == UMCG_TASK_BLOCKED) {
			if (umcg_move(task, &s, UMCG_TASK_RUNNABLE, 0)) {
				WRITE_ONCE(task->woken_ns, ktime_get_ns());
				umcg_event(slot);
				umcg_wait_picked(slot);
				break;
			}
		}
	}
	umcg_work_done(slot, UMCG_WORK_RESUME);
}

/* TWA_SIGNAL work of UMCG_IOC_PREEMPT: RUNNING|PREEMPT -> RUNNABLE. */
static void umcg_task_preempted(struct callback_head *work)
{
	struct umcg_slot *slot = container_of(work, struct umcg_slot,
					      preempt_work);
	struct umcg_task *task = &slot->grp->tasks[slot->idx];
	u32 s;

	if (umcg_work_valid(slot)) {
		s = READ_ONCE(task->state);
		while (umcg_state_of(s) == UMCG_TASK_RUNNING &&
		       (s & UMCG_TF_PREEMPT) && !(s & UMCG_TF_INLIB)) {
			if (umcg_move(task, &s, UMCG_TASK_RUNNABLE,
				      UMCG_TF_PREEMPT)) {
				umcg_event(slot);
				umcg_wait_picked(slot);
				break;
			}
		}
	}
	umcg_work_done(slot, UMCG_WORK_PREEMPT);
}

/*
 * UMCG_IOC_PREEMPT of @slot (a worker, found under rcu_read_lock()): make
 * it run the preempt work at its next return to user space, interrupting
 * it if it runs user code now.  Only a worker whose word reads RUNNING is
 * asked.  The task is reached through its struct pid, which RCU keeps
 * valid (task.c defers the slot's puts past a grace period).
 */
void umcg_worker_preempt(struct umcg_slot *slot)
{
	struct umcg_task *task = &slot->grp->tasks[slot->idx];
	struct pid *pid = READ_ONCE(slot->pid);
	struct task_struct *tsk = pid ? pid_task(pid, PIDTYPE_PID) : NULL;

	if (!tsk || tsk != READ_ONCE(slot->task) ||
	    umcg_state_of(READ_ONCE(task->state)) != UMCG_TASK_RUNNING)
		return;
	umcg_work_queue(slot, tsk, &slot->preempt_work, UMCG_WORK_PREEMPT,
			TWA_SIGNAL);
}

void umcg_slot_init_works(struct umcg_slot *slot)
{
	init_task_work(&slot->resume_work, umcg_task_resume);
	init_task_work(&slot->preempt_work, umcg_task_preempted);
}
