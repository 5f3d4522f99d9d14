// SPDX-License-Identifier: GPL-2.0
/*
 * umcg.bpf.c - the umcg sched_ext scheduler, v0: a global FIFO in partial
 * mode.  The "scx" backend of DESIGN.md builds on it; v0 proves the
 * plumbing (load, opt in, schedule, count, exit).  Threads that register as
 * umcg workers and servers are handled by the enforcer,
 * umcg_enforce.bpf.h (built with UMCG_SCX_ENFORCE), whose hooks run first
 * in the callbacks below and say "not mine" for every other thread; the
 * enforcer also adds SCX_OPS_ENQ_LAST (see its comment, g).  What follows
 * describes v0, i.e. every thread that never registered.
 *
 * a. Who is ours.  SCX_OPS_SWITCH_PARTIAL: only threads whose policy is
 *    SCHED_EXT (7) leave the fair class, each opted in with
 *    sched_setscheduler(tid, SCHED_EXT, ...).  Everything else, the loader
 *    included, stays with EEVDF.  A task gets its per-task counters when it
 *    enters sched_ext (ops.enable), not at fork: the scheduler allocates
 *    nothing for the tasks that never leave the fair class, and no fork on
 *    the machine can fail for it.
 *
 * b. Policy.  One user DSQ, UMCG_SCX_DSQ_FIFO, created in ops.init.
 *    - ops.select_cpu (wake-up of a task that may migrate): the kernel's
 *      default idle-CPU search.  If it found an idle CPU, the task goes
 *      straight to that CPU's local DSQ and never waits in the FIFO; the
 *      kernel wakes that CPU.
 *    - ops.enqueue (a wake-up that found no idle CPU, the wake-up of a task
 *      pinned to one CPU, for which the kernel skips select_cpu, a slice
 *      that ran out while other work waits, a property change): append to
 *      the FIFO, then kick one idle CPU the task may run on.  An idle CPU
 *      does not call ops.dispatch until something wakes it, so without the
 *      kick a task could sit in the FIFO while CPUs idle.
 *    - ops.dispatch (a CPU ran out of local work): move the first FIFO task
 *      that may run on this CPU to its local DSQ.  The kernel skips tasks
 *      whose affinity or migrate_disable() forbids this CPU.  If the FIFO
 *      has nothing for it, the kernel keeps the CPU's current task running
 *      with a fresh slice, without an enqueue (no SCX_OPS_ENQ_LAST).
 *    Every slice is umcg_slice_ns (SCX_SLICE_DFL, 20 ms, unless the loader
 *    says otherwise).  No priorities, no vtime: v0 is FIFO.
 *
 * c. Liveness.  No task is ever held outside a DSQ: enqueue always inserts,
 *    every CPU that runs out of work drains the FIFO, and an idle CPU is
 *    kicked when work arrives.  If that still fails, the watchdog
 *    (timeout_ms, UMCG_SCX_TIMEOUT_MS_DFL by default) ejects the scheduler
 *    and every thread falls back to the fair class, keeping policy 7 (C7).
 *    A runnable task waiting for a CPU that a fair task hogs also counts
 *    against the watchdog: sched_ext sits below the fair class.
 *
 * d. Counters.  Global ones in a PERCPU_ARRAY (each CPU writes only its own
 *    copy, no shared cache line; user space sums), per-task ones in task
 *    storage (written only by the task's own callbacks, which sched_ext
 *    serialises under the task's rq lock; user space looks them up with a
 *    pidfd), created at ops.enable.  A task whose counters could not be
 *    allocated there (the allocation cannot sleep) is scheduled all the
 *    same, uncounted.  Both layouts are in uapi/umcg_scx.h.
 *
 * e. Exit.  ops.exit records the kernel's exit info with UEI_RECORD()
 *    (the kernel's user_exit_info.bpf.h) into "uei" in .data, kind
 *    last, and its debug dump into .data.uei_dump.  A foreground
 *    loader (umcg-scx) polls it to report why we stopped and restarts when
 *    the kernel asks (UEI_ECODE_RESTART()); "umcgctl load" pins .data as
 *    "exit_info", so that "umcgctl status" can report an ejection after
 *    the fact, when no process of ours is left to watch.
 *
 * f. Test hook.  Root can ask for a deliberate ejection through the pinned
 *    ARRAY map "ctl" (struct umcg_scx_ctl): while ctl.eject is set, the next
 *    thread to enter sched_ext (ops.enable, never a hot path) makes the
 *    scheduler exit, gracefully or with scx_bpf_error().  "umcgctl eject"
 *    and the guest tests use it.
 *
 * Trade-offs.  One FIFO DSQ is one lock shared by every CPU: fine for a
 * handful of cores, a contention point beyond.  Per-CPU queues with
 * stealing, and the user-space policy deciding which worker runs on which
 * core, come with the umcg backend proper.
 */
#include "umcg_scx_common.bpf.h"
#include "umcg_scx_exit.h"

char _license[] SEC("license") = "GPL";

/*
 * Settings, written by the loader before load (skel->rodata): the slice
 * is the kernel's SCX_SLICE_DFL unless the loader was given one.
 */
const volatile __u64 umcg_slice_ns;

/*
 * The enforcer for threads that register (umcg_enforce.bpf.h, its own
 * design comment).  Built with UMCG_SCX_ENFORCE; without it, or for a
 * thread that never registered, every enf_* hook says "not mine".
 */
#ifdef UMCG_SCX_ENFORCE
#include "umcg_enforce.bpf.h"
#endif

/* Why the scheduler stopped, and the kernel's dump: written by ops.exit. */
UEI_DEFINE(uei);

/* Requests from root (key 0); see struct umcg_scx_ctl and (f) above. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct umcg_scx_ctl);
} ctl SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct umcg_scx_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct umcg_scx_task_stats);
} task_stats SEC(".maps");

/* User space has no vmlinux.h and uses umcg_scx_exit.h's copies of these. */
_Static_assert(UMCG_SCX_EXIT_NONE == SCX_EXIT_NONE, "exit kind");
_Static_assert(UMCG_SCX_EXIT_DONE == SCX_EXIT_DONE, "exit kind");
_Static_assert(UMCG_SCX_EXIT_UNREG == SCX_EXIT_UNREG, "exit kind");
_Static_assert(UMCG_SCX_EXIT_UNREG_BPF == SCX_EXIT_UNREG_BPF, "exit kind");
_Static_assert(UMCG_SCX_EXIT_UNREG_KERN == SCX_EXIT_UNREG_KERN, "exit kind");
_Static_assert(UMCG_SCX_EXIT_SYSRQ == SCX_EXIT_SYSRQ, "exit kind");
_Static_assert(UMCG_SCX_EXIT_ERROR == SCX_EXIT_ERROR, "exit kind");
_Static_assert(UMCG_SCX_EXIT_ERROR_BPF == SCX_EXIT_ERROR_BPF, "exit kind");
_Static_assert(UMCG_SCX_EXIT_ERROR_STALL == SCX_EXIT_ERROR_STALL, "exit kind");

static __always_inline void stat_inc(u32 idx)
{
	u32 zero = 0;
	struct umcg_scx_stats *s = bpf_map_lookup_elem(&stats, &zero);

	/* A PERCPU_ARRAY's element 0 always exists. */
	if (s && idx < UMCG_SCX_NR_STATS)
		s->cnt[idx]++;
}

/* @p's counters, NULL if ops.enable could not allocate them (d). */
static struct umcg_scx_task_stats *task_ctx(struct task_struct *p)
{
	return bpf_task_storage_get(&task_stats, p, 0, 0);
}

s32 BPF_STRUCT_OPS(umcg_select_cpu, struct task_struct *p, s32 prev_cpu, u64 wake_flags)
{
	struct umcg_scx_task_stats *t;
	bool is_idle = false;
	s32 cpu;

#ifdef UMCG_SCX_ENFORCE
	if (enf_select_cpu(p, prev_cpu, &cpu))
		return cpu;
#endif
	cpu = scx_bpf_select_cpu_dfl(p, prev_cpu, wake_flags, &is_idle);
	if (is_idle) {
		t = task_ctx(p);
		if (t)
			t->dispatch++;
		stat_inc(UMCG_SCX_STAT_DIRECT);
		/* From select_cpu, SCX_DSQ_LOCAL is the local DSQ of @cpu. */
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, umcg_slice_ns, 0);
	}
	return cpu;
}

void BPF_STRUCT_OPS(umcg_enqueue, struct task_struct *p, u64 enq_flags)
{
	struct umcg_scx_task_stats *t;
	s32 cpu;

#ifdef UMCG_SCX_ENFORCE
	if (enf_enqueue(p, enq_flags, umcg_slice_ns))
		return;
	/*
	 * The enforcer sets SCX_OPS_ENQ_LAST, so that a server that yields
	 * with nothing else to run is held, not kept running.  For every
	 * other task keep v0's behaviour: the last runnable task keeps its
	 * CPU, uncounted, as the kernel would have kept it without the flag.
	 */
	if (enq_flags & SCX_ENQ_LAST) {
		scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, umcg_slice_ns, enq_flags);
		return;
	}
#endif
	t = task_ctx(p);
	if (t) {
		t->enqueue++;
		t->queued = 1;
	}
	stat_inc(UMCG_SCX_STAT_ENQUEUE);
	scx_bpf_dsq_insert(p, UMCG_SCX_DSQ_FIFO, umcg_slice_ns, enq_flags);

	/* Claims the CPU's idle bit, so two enqueues never kick the same one. */
	cpu = scx_bpf_pick_idle_cpu(p->cpus_ptr, 0);
	if (cpu >= 0) {
		scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		stat_inc(UMCG_SCX_STAT_KICK);
	}
}

void BPF_STRUCT_OPS(umcg_dispatch, s32 cpu, struct task_struct *prev)
{
	/*
	 * One task per call: the kernel calls again if the local DSQ is still
	 * empty, and keeps @prev running if the FIFO has nothing for us.  With
	 * the enforcer (SCX_OPS_ENQ_LAST) it is enf_keep_prev() that keeps
	 * @prev, except a held server: a pick of the kernel's deadline server
	 * for sched_ext must not come back empty while @prev is runnable.
	 */
#ifdef UMCG_SCX_ENFORCE
	if (enf_dispatch(cpu))
		return;
#endif
	if (scx_bpf_dsq_move_to_local(UMCG_SCX_DSQ_FIFO, 0)) {
		stat_inc(UMCG_SCX_STAT_DISPATCH);
		return;
	}
#ifdef UMCG_SCX_ENFORCE
	if (enf_dispatch_preempted(cpu) || enf_dispatch_contended(cpu))
		return;
	enf_keep_prev(prev, umcg_slice_ns);
#endif
}

void BPF_STRUCT_OPS(umcg_running, struct task_struct *p)
{
	struct umcg_scx_task_stats *t = task_ctx(p);

	stat_inc(UMCG_SCX_STAT_RUNNING);
	if (!t)
		return;
	t->running++;
	/* It was on the FIFO and a CPU took it: the FIFO's dispatch. */
	if (t->queued) {
		t->queued = 0;
		t->dispatch++;
	}
}

#ifdef UMCG_SCX_ENFORCE
void BPF_STRUCT_OPS(umcg_runnable, struct task_struct *p, u64 enq_flags)
{
	enf_runnable(p, enq_flags);
}

void BPF_STRUCT_OPS(umcg_exit_task, struct task_struct *p, struct scx_exit_task_args *args)
{
	enf_exit_task(p);
}

void BPF_STRUCT_OPS(umcg_tick, struct task_struct *p)
{
	enf_tick(p);
}

void BPF_STRUCT_OPS(umcg_cpu_online, s32 cpu)
{
	enf_cpu_hotplug(cpu, true);
}

void BPF_STRUCT_OPS(umcg_cpu_offline, s32 cpu)
{
	enf_cpu_hotplug(cpu, false);
}
#endif

void BPF_STRUCT_OPS(umcg_quiescent, struct task_struct *p, u64 deq_flags)
{
	struct umcg_scx_task_stats *t;

	if (!(deq_flags & SCX_DEQ_SLEEP))
		return;
#ifdef UMCG_SCX_ENFORCE
	enf_quiescent(p);
#endif
	t = task_ctx(p);
	if (t)
		t->block++;
	stat_inc(UMCG_SCX_STAT_BLOCK);
}

/* The test hook of (f): eject now if root asked for it. */
static void eject_if_requested(void)
{
	u32 zero = 0;
	struct umcg_scx_ctl *c = bpf_map_lookup_elem(&ctl, &zero);

	if (!c)
		return;
	if (c->eject == UMCG_SCX_EJECT_EXIT)
		scx_bpf_exit(UMCG_SCX_EJECT_CODE, UMCG_SCX_EJECT_MSG);
	else if (c->eject == UMCG_SCX_EJECT_ERROR)
		scx_bpf_error(UMCG_SCX_EJECT_MSG);
}

void BPF_STRUCT_OPS(umcg_enable, struct task_struct *p)
{
	struct umcg_scx_task_stats *t;

	/* Kept from an earlier stay in sched_ext, else made now (a, d). */
	t = bpf_task_storage_get(&task_stats, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);

	if (t) {
		t->enable++;
		t->queued = 0;
	}
	stat_inc(UMCG_SCX_STAT_ENABLE);
	eject_if_requested();
}

void BPF_STRUCT_OPS(umcg_disable, struct task_struct *p)
{
	stat_inc(UMCG_SCX_STAT_DISABLE);
}

s32 BPF_STRUCT_OPS_SLEEPABLE(umcg_init)
{
	s32 ret;

	/* Any node: v0 has one FIFO for the whole machine. */
	ret = scx_bpf_create_dsq(UMCG_SCX_DSQ_FIFO, -1);
#ifdef UMCG_SCX_ENFORCE
	if (!ret)
		ret = enf_init();
#endif
	return ret;
}

void BPF_STRUCT_OPS(umcg_exit, struct scx_exit_info *ei)
{
#ifdef UMCG_SCX_ENFORCE
	enf_exit();
#endif
	/* The kind last, with a full barrier: readers take the rest after it. */
	UEI_RECORD(uei, ei);
}

SEC(".struct_ops.link")
struct sched_ext_ops umcg_ops = {
	.select_cpu	= (void *)umcg_select_cpu,
	.enqueue	= (void *)umcg_enqueue,
	.dispatch	= (void *)umcg_dispatch,
	.running	= (void *)umcg_running,
	.quiescent	= (void *)umcg_quiescent,
#ifdef UMCG_SCX_ENFORCE
	.runnable	= (void *)umcg_runnable,
	.exit_task	= (void *)umcg_exit_task,
	.tick		= (void *)umcg_tick,
	.cpu_online	= (void *)umcg_cpu_online,
	.cpu_offline	= (void *)umcg_cpu_offline,
#endif
	.enable		= (void *)umcg_enable,
	.disable	= (void *)umcg_disable,
	.init		= (void *)umcg_init,
	.exit		= (void *)umcg_exit,
#ifdef UMCG_SCX_ENFORCE
	.flags		= SCX_OPS_SWITCH_PARTIAL | SCX_OPS_ENQ_LAST,
#else
	.flags		= SCX_OPS_SWITCH_PARTIAL,
#endif
	.timeout_ms	= UMCG_SCX_TIMEOUT_MS_DFL,
	.name		= UMCG_SCX_OPS_NAME,
};
