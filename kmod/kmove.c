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
 *   umcg_task_preempted()   task work (TWA_RESUME) likewise
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
 * The wait to be picked (umcg_hold()) runs inside task_work_run(), which
 * runs work queued by a running callback before it returns: a callback
 * cannot let a signal be delivered and re-queue itself to wait again (it
 * would spin until picked).  So the wait defers what it can and leaves
 * only for what must not wait:
 *
 *   - blockable signals (all but SIGKILL and SIGSTOP): blocked for the
 *     wait's duration (sigprocmask(), which hands process-wide ones to
 *     other threads); delivered once the worker is picked;
 *   - TWA_SIGNAL task work of others (io_uring): TIF_NOTIFY_SIGNAL is
 *     cleared, the work runs when this callback returns;
 *   - the system-suspend freezer (and cgroup v1's): the sleep is
 *     TASK_INTERRUPTIBLE | TASK_FREEZABLE, frozen where it sleeps;
 *   - fatal signals end the hold for good;
 *   - what only get_signal() does by stopping the thread (cgroup v2's
 *     freezer trap, a group stop, SIGSTOP, ptrace traps): the hold is left
 *     with the word still RUNNABLE and @rehold set; the hook sees the stop's
 *     sleep (the word reads RUNNABLE) and queues the resume work again,
 *     which holds the worker again when the stop ends (from the freezer
 *     trap's own task_work_run(), or on the way out).  If the stop is called
 *     off before the thread reached it, the thread returns to user space
 *     RUNNABLE and is held again at its next sleep.
 *
 * Tracepoints (umcg_trace.h): each move is recorded (umcg_block,
 * umcg_wake, umcg_exit; umcg_hold as the wait to be picked begins) before
 * it is reported, so that a server's reaction comes later in the trace.
 *
 * References: a queued task work holds one on the group (so the slot and
 * its wait queue live until it ran) and is counted in umcg_nr_works.  It
 * cannot be cancelled (task_work_cancel() is not exported); it runs at the
 * latest when its thread exits (PF_EXITING, then it only drops its
 * reference).
 */
#include <linux/atomic.h>
#include <linux/bitops.h>
#include <linux/freezer.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/jobctl.h>
#include <linux/sched/signal.h>
#include <linux/signal.h>
#include <linux/spinlock.h>
#include <linux/task_work.h>
#include <linux/timekeeping.h>
#include <linux/wait.h>

#include "umcg_internal.h"
#include "umcg_trace.h"

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
 * Is @slot's thread alive and not exiting (and, if @owner, that task)?
 * The slot's struct pid is put only after a grace period (task.c).
 * Callers run with preemption off, which is already an RCU read-side
 * section, but pid_task()'s lockdep check only knows rcu_read_lock().
 */
static bool umcg_slot_alive(struct umcg_slot *slot, struct task_struct *owner)
{
	struct task_struct *tsk;
	struct pid *pid;
	bool alive;

	rcu_read_lock();
	pid = slot ? READ_ONCE(slot->pid) : NULL;
	tsk = pid ? pid_task(pid, PIDTYPE_PID) : NULL;
	alive = tsk && (!owner || tsk == owner) &&
		!(READ_ONCE(tsk->flags) & PF_EXITING);
	rcu_read_unlock();
	return alive;
}

/*
 * Is server slot @idx of @grp's thread alive, not exiting?  A server that
 * exits registered keeps its slot until a later REGISTER reaps it; it must
 * not be poked (nobody would serve the event) nor handed off through.
 * grp->server_lock held.
 */
static bool umcg_server_live(struct umcg_group *grp, unsigned int idx)
{
	return umcg_slot_alive(umcg_slot_at(grp, idx), NULL);
}

/*
 * The slot index of the server the kernel pokes about worker @slot: the
 * one in its server_tid if that is a live registered server of the group
 * (found by tid, O(1)), else (@exact false) the group's first live one
 * (the first unless servers died registered); -1 if none.
 * grp->server_lock held: a slot is in grp->servers[] (@srv_listed) only
 * while it is a registered server.
 */
static int umcg_server_of(struct umcg_slot *slot, bool exact)
{
	struct umcg_group *grp = slot->grp;
	u32 stid = READ_ONCE(umcg_task_of(slot)->server_tid);
	struct umcg_slot *srv = stid ? xa_load(&grp->tids, stid) : NULL;
	unsigned int i;

	if (srv && srv->srv_listed && srv->tid == stid &&
	    umcg_server_live(grp, srv->idx))
		return srv->idx;
	if (exact)
		return -1;
	for (i = 0; i < grp->nr_servers; i++)
		if (umcg_server_live(grp, grp->servers[i]))
			return grp->servers[i];
	return -1;
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

	umcg_group_event(grp, slot->idx);
	smp_mb__after_atomic();

	spin_lock(&grp->server_lock);
	sidx = umcg_server_of(slot, false);
	if (sidx >= 0) {
		st = umcg_task_of(umcg_slot_at(grp, sidx));
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
 * RUNNABLE?  Preemption off (umcg_slot_alive()).
 */
static bool umcg_slot_stageable(struct umcg_group *grp, u32 idx)
{
	struct umcg_slot *slot = umcg_slot_at(grp, idx);
	/* Pairs with umcg_task_add()'s release: its pid, flags, word. */
	struct task_struct *owner = slot ? smp_load_acquire(&slot->task) : NULL;

	return owner && umcg_slot_alive(slot, owner) &&
	       READ_ONCE(slot->flags) == UMCG_REGISTER_WORKER &&
	       umcg_state_of(READ_ONCE(umcg_task_of(slot)->state)) ==
	       UMCG_TASK_RUNNABLE;
}

/*
 * Worker @slot (current) has just moved to BLOCKED: give its core to the
 * worker staged on its server's word (uapi/umcg.h, "The staged next
 * worker"), if any.  Claims the stage with one compare-and-swap, makes the
 * staged worker RUNNING and wakes it on this CPU.  Returns the staged
 * worker's slot if it did (the block's event is then queued without a
 * poke), else NULL.
 */
static struct umcg_slot *umcg_handoff(struct umcg_slot *slot)
{
	struct umcg_group *grp = slot->grp;
	struct umcg_slot *staged;
	struct umcg_task *st, *tt;
	u32 next, idx, s;
	int sidx;

	spin_lock(&grp->server_lock);
	sidx = umcg_server_of(slot, true);
	spin_unlock(&grp->server_lock);
	if (sidx < 0)
		return NULL;
	st = umcg_task_of(umcg_slot_at(grp, sidx));
	next = READ_ONCE(st->next_slot);
	if (!next || (next & UMCG_NEXT_TAKEN))
		return NULL;
	idx = UMCG_NEXT_IDX(next);
	/* Out of range or not allocated: umcg_slot_at() says NULL. */
	if (idx == slot->idx || !umcg_slot_stageable(grp, idx))
		return NULL;
	if (!try_cmpxchg(&st->next_slot, &next, next | UMCG_NEXT_TAKEN))
		return NULL;	/* taken back by the library meanwhile */

	staged = umcg_slot_at(grp, idx);
	tt = umcg_task_of(staged);
	s = READ_ONCE(tt->state);
	do {
		if (umcg_state_of(s) != UMCG_TASK_RUNNABLE) {
			/* The library broke the protocol: undo, poke. */
			WRITE_ONCE(st->next_slot, next);
			return NULL;
		}
	} while (!try_cmpxchg(&tt->state, &s,
			      (s & ~(UMCG_TASK_STATE_MASK | UMCG_TF_PREEMPT)) |
			      UMCG_TASK_RUNNING));
	WRITE_ONCE(tt->seq, READ_ONCE(tt->seq) + 1);
	umcg_wake_slot(grp, idx, UMCG_WF_CURRENT_CPU);
	return staged;
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
	struct umcg_task *task = umcg_task_of(slot);
	struct umcg_slot *next;
	u32 s = READ_ONCE(task->state);

	/* Asleep in a umcg wait: whatever the word says, not a block. */
	if (READ_ONCE(slot->in_wait))
		return;
	/* A hold left for a stop (the freezer, SIGSTOP): hold again after. */
	if (READ_ONCE(slot->rehold) && !(current->flags & PF_EXITING)) {
		if (umcg_state_of(s) == UMCG_TASK_RUNNABLE) {
			umcg_work_queue(slot, current, &slot->resume_work,
					UMCG_WORK_RESUME, TWA_RESUME);
			return;
		}
		WRITE_ONCE(slot->rehold, false);	/* picked meanwhile */
	}
	if (current->flags & PF_EXITING) {
		do {
			if (umcg_state_of(s) != UMCG_TASK_RUNNING &&
			    umcg_state_of(s) != UMCG_TASK_BLOCKED)
				return;
		} while (!umcg_move(task, &s, UMCG_TASK_DONE, 0));
		trace_umcg_exit(slot, false);
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
	next = umcg_handoff(slot);
	trace_umcg_block(slot, next);
	if (next)
		umcg_group_event(slot->grp, slot->idx);
	else
		umcg_event(slot);
	umcg_work_queue(slot, current, &slot->resume_work, UMCG_WORK_RESUME,
			TWA_RESUME);
}

/* Is the wait to be picked of @slot over: picked, or nobody left to pick? */
static bool umcg_hold_over(struct umcg_slot *slot)
{
	return umcg_state_of(READ_ONCE(umcg_task_of(slot)->state)) !=
	       UMCG_TASK_RUNNABLE || READ_ONCE(slot->grp->dying);
}

/*
 * current, woken in the wait to be picked with a signal pending and all
 * blockable signals blocked: must it leave for get_signal(), which will
 * stop it (the cgroup v2 freezer's trap, a group stop, ptrace)?  If not,
 * mute what woke it (a freezer's fake signal, the flag of a frozen task
 * that was thawed, TWA_SIGNAL work of others) so that it can sleep on; a
 * fatal signal is left alone.  The checks and the clearing are under
 * siglock, as senders set TIF_SIGPENDING and jobctl under it.
 */
static bool umcg_hold_must_stop(void)
{
	struct task_struct *t = current;
	bool stop;

	spin_lock_irq(&t->sighand->siglock);
	stop = (t->jobctl & (JOBCTL_PENDING_MASK | JOBCTL_TRAP_FREEZE)) ||
	       sigismember(&t->pending.signal, SIGSTOP) ||
	       sigismember(&t->signal->shared_pending.signal, SIGSTOP);
	if (!stop && !__fatal_signal_pending(t)) {
		clear_thread_flag(TIF_SIGPENDING);
		/* Queued task works run when this callback returns. */
		clear_thread_flag(TIF_NOTIFY_SIGNAL);
	}
	spin_unlock_irq(&t->sighand->siglock);
	return stop;
}

/*
 * The wait to be picked of current, worker @slot: sleep until the library
 * moves its word off RUNNABLE, a fatal signal, or the group's file is
 * released (nobody is left to pick it: it runs on unmanaged).  Returns
 * true when it left for a stop instead (see the top of this file): the
 * word still reads RUNNABLE and @slot->rehold is set.
 */
static bool umcg_hold(struct umcg_slot *slot)
{
	struct wait_queue_head *wq = &slot->waitq;
	sigset_t all, saved;
	bool stop = false;

	/*
	 * sigprocmask() blocks whatever it is given, SIGKILL and SIGSTOP too
	 * (only set_current_blocked() leaves them out): a SIGKILL blocked
	 * here would not count as pending, and the kill would not end the
	 * hold; a SIGSTOP sent to this thread alone (ptrace's attach, as
	 * gdb -p does) would not wake it, and the attach would wait for a
	 * stop that never comes.
	 */
	sigfillset(&all);
	sigdelset(&all, SIGKILL);
	sigdelset(&all, SIGSTOP);
	sigprocmask(SIG_SETMASK, &all, &saved);
	/* Picked between the check and schedule(): no block (see wait.c). */
	WRITE_ONCE(slot->in_wait, true);
	for (;;) {
		if (!wait_event_freezable(*wq, umcg_hold_over(slot)) ||
		    fatal_signal_pending(current))
			break;
		if (umcg_hold_must_stop()) {
			WRITE_ONCE(slot->rehold, true);
			stop = true;
			break;
		}
	}
	WRITE_ONCE(slot->in_wait, false);
	/* Signals that came meanwhile are delivered now. */
	sigprocmask(SIG_SETMASK, &saved, NULL);
	return stop;
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

/*
 * TWA_RESUME work queued at block time: BLOCKED -> RUNNABLE, then wait;
 * or queued by the hook after a hold was left for a stop: wait again.
 */
static void umcg_task_resume(struct callback_head *work)
{
	struct umcg_slot *slot = container_of(work, struct umcg_slot,
					      resume_work);
	struct umcg_task *task = umcg_task_of(slot);
	bool rehold = READ_ONCE(slot->rehold);
	u32 s;

	WRITE_ONCE(slot->rehold, false);
	if (umcg_work_valid(slot)) {
		s = READ_ONCE(task->state);
		/* Held before a stop, and not picked since: hold again. */
		if (rehold && umcg_state_of(s) == UMCG_TASK_RUNNABLE) {
			trace_umcg_hold(slot, UMCG_TRACE_HOLD_AGAIN);
			umcg_hold(slot);
		}
		while (umcg_state_of(s) == UMCG_TASK_BLOCKED) {
			if (umcg_move(task, &s, UMCG_TASK_RUNNABLE, 0)) {
				WRITE_ONCE(task->woken_ns, ktime_get_ns());
				trace_umcg_wake(slot);
				trace_umcg_hold(slot, UMCG_TRACE_HOLD_WAKE);
				umcg_event(slot);
				umcg_hold(slot);
				break;
			}
		}
	}
	umcg_work_done(slot, UMCG_WORK_RESUME);
}

/* TWA_RESUME work of UMCG_IOC_PREEMPT: RUNNING|PREEMPT -> RUNNABLE. */
static void umcg_task_preempted(struct callback_head *work)
{
	struct umcg_slot *slot = container_of(work, struct umcg_slot,
					      preempt_work);
	struct umcg_task *task = umcg_task_of(slot);
	u32 s;

	if (umcg_work_valid(slot)) {
		s = READ_ONCE(task->state);
		while (umcg_state_of(s) == UMCG_TASK_RUNNING &&
		       (s & UMCG_TF_PREEMPT) && !(s & UMCG_TF_INLIB)) {
			if (umcg_move(task, &s, UMCG_TASK_RUNNABLE,
				      UMCG_TF_PREEMPT)) {
				trace_umcg_hold(slot, UMCG_TRACE_HOLD_PREEMPT);
				umcg_event(slot);
				umcg_hold(slot);
				break;
			}
		}
	}
	umcg_work_done(slot, UMCG_WORK_PREEMPT);
}

/*
 * UMCG_IOC_PREEMPT of @slot (a worker, found under rcu_read_lock()): make
 * it run the preempt work at its next return to user space, interrupting
 * it if it runs user code now (TWA_RESUME kicks a running task with an
 * IPI; unlike TWA_SIGNAL it does not cut short a sleep the worker is in,
 * such as an epoll_wait() of library code).  Only a worker whose word
 * reads RUNNING is asked.  The task is reached through its struct pid, which RCU keeps
 * valid (task.c defers the slot's puts past a grace period).
 */
void umcg_worker_preempt(struct umcg_slot *slot)
{
	struct umcg_task *task = umcg_task_of(slot);
	/* Pairs with umcg_task_add()'s release, as umcg_slot_stageable(). */
	struct task_struct *owner = smp_load_acquire(&slot->task);
	struct pid *pid = READ_ONCE(slot->pid);
	struct task_struct *tsk = pid ? pid_task(pid, PIDTYPE_PID) : NULL;

	if (!tsk || tsk != owner ||
	    umcg_state_of(READ_ONCE(task->state)) != UMCG_TASK_RUNNING)
		return;
	umcg_work_queue(slot, tsk, &slot->preempt_work, UMCG_WORK_PREEMPT,
			TWA_RESUME);
}

void umcg_slot_init_works(struct umcg_slot *slot)
{
	init_task_work(&slot->resume_work, umcg_task_resume);
	init_task_work(&slot->preempt_work, umcg_task_preempted);
}
