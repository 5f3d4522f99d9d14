// SPDX-License-Identifier: GPL-2.0
/*
 * hook.c - block detection: a call into kmove.c when a registered worker
 * is about to sleep in the kernel.
 *
 * Lock order: umcg_hook_lock (a mutex, taken in process context only, with
 * at most umcg_group.lock held) around arming and disarming; the hook
 * itself takes umcg_group.hash_lock, then umcg_group_hash_lock, at a
 * worker's last schedule (task.c), and umcg_worker_sleeping()
 * umcg_group.server_lock and a wait queue lock.
 *
 * Which hook, chosen at load time (module parameter "hook"):
 *
 *   tracepoint  sched_entry_tp(preempt), exported since 7.2: the top of
 *               __schedule(), preemption off, interrupts on, no rq lock.
 *               A sleep is !preempt with current not TASK_RUNNING.  It
 *               also sees do_task_dead(), so a worker that exits is seen.
 *   kprobe      a kprobe (ftrace-based) on schedule(), for kernels before
 *               7.2: the same position as the kernel's own
 *               sched_submit_work(), preemption off, interrupts on.  It
 *               misses sleeps that enter __schedule() directly (rt_mutex
 *               waits of PI futexes, do_task_dead()).
 *
 * "auto" (the default) takes the tracepoint where the kernel has it.
 *
 * Armed only while it has something to do (C9): the module loads with
 * the hook unregistered; the first registration of a worker registers it
 * (umcg_hook_get(), before REGISTER returns, so the worker's first block
 * is seen) and the free of the last worker's slot unregisters it,
 * hook_linger_ms later (so a program that registers and unregisters one
 * worker in a loop does not pay a tracepoint or kprobe registration each
 * time).  While armed it runs in every task that schedules, so the filter
 * is cheap and does not grow with what others register: under RCU-sched,
 * one bucket of the groups that have registered threads, keyed by the
 * sleeping task's thread group, and only in its own group one bucket of
 * that group's task hash (task.c).  A worker's slot leaves its task hash
 * at its last schedule (tracepoint) or when its slot is reaped (kprobe).
 * What the hook calls there is inline or notrace (it may run in an ftrace
 * handler).  Waking another task from both positions is legal (no rq or
 * pi lock is held), which umcg_worker_sleeping() relies on.
 *
 * Counters for tests (main.c's hook_calls, hook_hits, hook_entries): per
 * CPU, so that counting costs no shared cache line.
 */
#include <linux/jiffies.h>
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/version.h>
#include <linux/workqueue.h>

#if LINUX_VERSION_CODE >= KERNEL_VERSION(7, 2, 0)
#include <trace/events/sched.h>
#define UMCG_HAVE_SCHED_ENTRY_TP 1
#else
#define UMCG_HAVE_SCHED_ENTRY_TP 0
#endif

#include "umcg_internal.h"

static char *hook = "auto";
module_param(hook, charp, 0444);
MODULE_PARM_DESC(hook, "block detection: auto, tracepoint or kprobe");

static unsigned int hook_linger_ms = 1000;
module_param(hook_linger_ms, uint, 0644);
MODULE_PARM_DESC(hook_linger_ms,
		 "how long the block hook stays armed after the last worker's slot is freed (ms, default 1000)");

enum umcg_hook_kind { UMCG_HOOK_NONE, UMCG_HOOK_TP, UMCG_HOOK_KPROBE };
/* What "hook" chose; set at load. */
static enum umcg_hook_kind umcg_hook_kind;

static DEFINE_MUTEX(umcg_hook_lock);
/* Under umcg_hook_lock: registered workers, and is the hook registered? */
static unsigned int umcg_hook_users;
static bool umcg_hook_on;

static DEFINE_PER_CPU(u64, umcg_hook_ncalls);
static DEFINE_PER_CPU(u64, umcg_hook_nhits);
static DEFINE_PER_CPU(u64, umcg_hook_nentries);

/* current is about to sleep: act if it is a running worker of its group. */
static __always_inline void umcg_sched_sleeping(void)
{
	struct umcg_slot *slot;
	unsigned int seen = 0;

	this_cpu_inc(umcg_hook_ncalls);
	rcu_read_lock_sched_notrace();
	slot = umcg_slot_of_task(current, &seen);
	if (seen)
		this_cpu_add(umcg_hook_nentries, seen);
	/*
	 * Not after execve() (another mm); an exiting thread has dropped
	 * its mm by its last schedule.
	 */
	if (slot && slot->flags == UMCG_REGISTER_WORKER &&
	    (current->mm == READ_ONCE(slot->grp->mm) ||
	     (current->flags & PF_EXITING))) {
		this_cpu_inc(umcg_hook_nhits);
		umcg_worker_sleeping(slot);
	}
	/* Its last schedule: nothing to find it for any more. */
	if (slot && READ_ONCE(current->__state) == TASK_DEAD)
		umcg_slot_unhash_task(slot);
	rcu_read_unlock_sched_notrace();
}

#if UMCG_HAVE_SCHED_ENTRY_TP
static void umcg_sched_entry(void *data, bool preempt)
{
	if (!preempt && !task_is_running(current))
		umcg_sched_sleeping();
}
#endif

static int umcg_schedule_pre(struct kprobe *kp, struct pt_regs *regs)
{
	if (!task_is_running(current))
		umcg_sched_sleeping();
	return 0;
}

static const struct kprobe umcg_schedule_kp_init = {
	.symbol_name	= "schedule",
	.pre_handler	= umcg_schedule_pre,
};
/* Reset from umcg_schedule_kp_init before each registration. */
static struct kprobe umcg_schedule_kp;

const char *umcg_hook_name(void)
{
	switch (umcg_hook_kind) {
	case UMCG_HOOK_TP:
		return "tracepoint";
	case UMCG_HOOK_KPROBE:
		return "kprobe";
	default:
		return "none";
	}
}

/* Register the hook with the kernel.  umcg_hook_lock held. */
static int umcg_hook_arm(void)
{
	int ret;

	lockdep_assert_held(&umcg_hook_lock);
	if (umcg_hook_on)
		return 0;
	switch (umcg_hook_kind) {
	case UMCG_HOOK_TP:
#if UMCG_HAVE_SCHED_ENTRY_TP
		ret = register_trace_sched_entry_tp(umcg_sched_entry, NULL);
#else
		ret = -EINVAL;
#endif
		break;
	case UMCG_HOOK_KPROBE:
		umcg_schedule_kp = umcg_schedule_kp_init;
		ret = register_kprobe(&umcg_schedule_kp);
		break;
	default:
		ret = -EINVAL;
		break;
	}
	if (ret) {
		pr_warn_ratelimited("umcg: arming the %s hook: %d\n",
				    umcg_hook_name(), ret);
		return ret;
	}
	umcg_hook_on = true;
	return 0;
}

/*
 * Unregister the hook and wait until no call of it runs any more.
 * umcg_hook_lock held.
 */
static void umcg_hook_disarm(void)
{
	lockdep_assert_held(&umcg_hook_lock);
	if (!umcg_hook_on)
		return;
	switch (umcg_hook_kind) {
	case UMCG_HOOK_TP:
#if UMCG_HAVE_SCHED_ENTRY_TP
		unregister_trace_sched_entry_tp(umcg_sched_entry, NULL);
		tracepoint_synchronize_unregister();
#endif
		break;
	case UMCG_HOOK_KPROBE:
		/* Waits for running handlers. */
		unregister_kprobe(&umcg_schedule_kp);
		break;
	default:
		break;
	}
	umcg_hook_on = false;
}

static void umcg_hook_linger_end(struct work_struct *work)
{
	mutex_lock(&umcg_hook_lock);
	if (!umcg_hook_users)
		umcg_hook_disarm();
	mutex_unlock(&umcg_hook_lock);
}

static DECLARE_DELAYED_WORK(umcg_hook_linger, umcg_hook_linger_end);

/*
 * A worker is about to be registered: arm the hook if it is not.  Process
 * context.  Return: 0, or the error of the registration with the kernel.
 */
int umcg_hook_get(void)
{
	int ret;

	mutex_lock(&umcg_hook_lock);
	ret = umcg_hook_arm();
	if (!ret)
		umcg_hook_users++;
	mutex_unlock(&umcg_hook_lock);
	return ret;
}

/* A worker's slot was freed (or its registration failed).  Process context. */
void umcg_hook_put(void)
{
	mutex_lock(&umcg_hook_lock);
	if (!WARN_ON_ONCE(!umcg_hook_users) && !--umcg_hook_users)
		mod_delayed_work(umcg_wq, &umcg_hook_linger,
				 msecs_to_jiffies(READ_ONCE(hook_linger_ms)));
	mutex_unlock(&umcg_hook_lock);
}

bool umcg_hook_armed(void)
{
	return READ_ONCE(umcg_hook_on);
}

static u64 umcg_hook_sum(u64 __percpu *counter)
{
	u64 sum = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		sum += READ_ONCE(*per_cpu_ptr(counter, cpu));
	return sum;
}

u64 umcg_hook_calls(void)
{
	return umcg_hook_sum(&umcg_hook_ncalls);
}

u64 umcg_hook_hits(void)
{
	return umcg_hook_sum(&umcg_hook_nhits);
}

u64 umcg_hook_entries(void)
{
	return umcg_hook_sum(&umcg_hook_nentries);
}

/* Choose the hook ("hook" parameter); it is armed on first use. */
int umcg_hook_init(void)
{
	if (!strcmp(hook, "auto"))
		hook = UMCG_HAVE_SCHED_ENTRY_TP ? "tracepoint" : "kprobe";

	if (!strcmp(hook, "tracepoint")) {
		if (!UMCG_HAVE_SCHED_ENTRY_TP) {
			pr_err("umcg: hook=tracepoint: this kernel has no sched_entry_tp\n");
			return -EINVAL;
		}
		umcg_hook_kind = UMCG_HOOK_TP;
		return 0;
	}
	if (!strcmp(hook, "kprobe")) {
		umcg_hook_kind = UMCG_HOOK_KPROBE;
		return 0;
	}
	pr_err("umcg: hook=%s: not auto, tracepoint or kprobe\n", hook);
	return -EINVAL;
}

/* Module exit (no group is left): disarm now. */
void umcg_hook_exit(void)
{
	cancel_delayed_work_sync(&umcg_hook_linger);
	mutex_lock(&umcg_hook_lock);
	umcg_hook_disarm();
	mutex_unlock(&umcg_hook_lock);
	umcg_hook_kind = UMCG_HOOK_NONE;
}
