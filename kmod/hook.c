// SPDX-License-Identifier: GPL-2.0
/*
 * hook.c - block detection: a call into kmove.c when a registered worker
 * is about to sleep in the kernel.
 *
 * Lock order: none taken here; umcg_worker_sleeping() takes
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
 * Both run in every task that schedules, so the filter is cheap: a global
 * count of registered workers, then a hash lookup of current under
 * RCU-sched.  Waking another task from both positions is legal (no rq or
 * pi lock is held), which umcg_worker_sleeping() relies on.
 */
#include <linux/kprobes.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/string.h>
#include <linux/version.h>

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

enum umcg_hook_kind { UMCG_HOOK_NONE, UMCG_HOOK_TP, UMCG_HOOK_KPROBE };
static enum umcg_hook_kind umcg_hook_kind;

/* current is about to sleep: act if it is a running worker of its group. */
static __always_inline void umcg_sched_sleeping(void)
{
	struct umcg_slot *slot;

	if (!atomic_read(&umcg_nr_workers))
		return;
	rcu_read_lock_sched_notrace();
	slot = umcg_slot_of_task(current);
	/*
	 * Not after execve() (another mm); an exiting thread has dropped
	 * its mm by its last schedule.
	 */
	if (slot && slot->flags == UMCG_REGISTER_WORKER &&
	    (current->mm == READ_ONCE(slot->grp->mm) ||
	     (current->flags & PF_EXITING)))
		umcg_worker_sleeping(slot);
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

static struct kprobe umcg_schedule_kp = {
	.symbol_name	= "schedule",
	.pre_handler	= umcg_schedule_pre,
};

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

int umcg_hook_init(void)
{
	int ret;

	if (!strcmp(hook, "auto"))
		hook = UMCG_HAVE_SCHED_ENTRY_TP ? "tracepoint" : "kprobe";

	if (!strcmp(hook, "tracepoint")) {
#if UMCG_HAVE_SCHED_ENTRY_TP
		ret = register_trace_sched_entry_tp(umcg_sched_entry, NULL);
		if (ret)
			return ret;
		umcg_hook_kind = UMCG_HOOK_TP;
		return 0;
#else
		pr_err("umcg: hook=tracepoint: this kernel has no sched_entry_tp\n");
		return -EINVAL;
#endif
	}
	if (!strcmp(hook, "kprobe")) {
		ret = register_kprobe(&umcg_schedule_kp);
		if (ret) {
			pr_err("umcg: kprobe on schedule: %d\n", ret);
			return ret;
		}
		umcg_hook_kind = UMCG_HOOK_KPROBE;
		return 0;
	}
	pr_err("umcg: hook=%s: not auto, tracepoint or kprobe\n", hook);
	return -EINVAL;
}

void umcg_hook_exit(void)
{
	switch (umcg_hook_kind) {
	case UMCG_HOOK_TP:
#if UMCG_HAVE_SCHED_ENTRY_TP
		unregister_trace_sched_entry_tp(umcg_sched_entry, NULL);
		tracepoint_synchronize_unregister();
#endif
		break;
	case UMCG_HOOK_KPROBE:
		unregister_kprobe(&umcg_schedule_kp);
		break;
	default:
		break;
	}
	umcg_hook_kind = UMCG_HOOK_NONE;
}
