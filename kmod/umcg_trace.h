/* SPDX-License-Identifier: GPL-2.0 */
/*
 * umcg_trace.h - the tracepoints of umcg.ko (trace system "umcg"):
 * /sys/kernel/tracing/events/umcg/, perf's umcg:*.  Documented, with
 * their use, in Documentation/tracing.md.
 *
 * Every event records, from data the caller has at hand:
 *
 *   tid     the thread the event is about, as the kernel's pid_nr() (the
 *           initial pid namespace: what sched_switch and perf show), or
 *           the caller of the ioctl for pick, switch and preempt
 *   cpu     the CPU the event is recorded on
 *   group   the group: the tgid (pid_nr()) of the process it is bound to
 *   state   the thread's state word (UMCG_TASK_* | UMCG_TF_*) as it reads
 *           when the event is recorded
 *
 * and, where there is one, the other thread (next, next_state): the
 * staged worker a block handed its core to, the worker picked, the target
 * of a switch or of a preemption.  pick and preempt have no state of the
 * caller: any thread of the process may call UMCG_IOC_WAKE and
 * UMCG_IOC_PREEMPT, registered or not, and its word is not looked up.
 *
 * Callers: task.c (register, exit: a registration ends), kmove.c (block,
 * wake, hold; exit: a worker seen exiting), wait.c (pick, switch,
 * preempt).  Some run in the block hook (hook.c), possibly inside an
 * ftrace handler: what TP_fast_assign does is inline, and the probes
 * TRACE_EVENT() generates are notrace.  No event takes a lock.
 *
 * trace.c defines them (CREATE_TRACE_POINTS); kbuild compiles it with
 * the module's own directory on the include path (kmod/CMakeLists.txt),
 * which TRACE_INCLUDE_PATH below needs.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM umcg

#if !defined(_UMCG_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _UMCG_TRACE_H

#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/smp.h>
#include <linux/tracepoint.h>

#include "umcg_internal.h"

/*
 * Why a worker is held (umcg_hold): its blocking call completed (after
 * umcg_wake), it was preempted (UMCG_IOC_PREEMPT), or it is held again
 * after a stop (the freezer, SIGSTOP, ptrace) that made it leave a hold.
 */
#define UMCG_TRACE_HOLD_WAKE		0
#define UMCG_TRACE_HOLD_PREEMPT		1
#define UMCG_TRACE_HOLD_AGAIN		2

/*
 * What umcg_exit reports: the kernel saw a registered worker exit and
 * moved its word to DONE (where the hook sees exits, hook.c); the thread
 * unregistered itself; or the slot of a dead thread was freed (by a later
 * REGISTER, or with its group).  One registration ends with one
 * unregister or reaped event; a worker that exits registered may have a
 * done event before its reaped one.
 */
#define UMCG_TRACE_EXIT_DONE		0
#define UMCG_TRACE_EXIT_UNREGISTER	1
#define UMCG_TRACE_EXIT_REAPED		2

/*
 * The values of uapi/umcg.h's states and flags, spelt as plain numbers:
 * they are copied into the events' format files, which perf and
 * libtraceevent parse (trace.c asserts they match).
 */
#define umcg_show_state(s)						\
	__print_symbolic((s) & 0xff,					\
			 { 0, "NEW" }, { 1, "RUNNABLE" },		\
			 { 2, "RUNNING" }, { 3, "BLOCKED" },		\
			 { 4, "PARKED" }, { 5, "DONE" })
#define umcg_show_flags(s)						\
	__print_flags((s) & 0xff00, "|",				\
		      { 0x100, "PREEMPT" }, { 0x200, "PERMIT" },	\
		      { 0x400, "INLIB" })

/* A slot's thread, its group's process, its word. */
#define umcg_trace_tid(slot)	pid_nr(READ_ONCE((slot)->pid))
#define umcg_trace_group(slot)	pid_nr(READ_ONCE((slot)->grp->tgid))
#define umcg_trace_state(slot)	\
	READ_ONCE(umcg_task_of(slot)->state)

TRACE_EVENT(umcg_register,

	TP_PROTO(struct umcg_slot *slot),

	TP_ARGS(slot),

	TP_STRUCT__entry(
		__field(pid_t,		tid)
		__field(int,		cpu)
		__field(pid_t,		group)
		__field(u32,		state)
		__field(u16,		kind)
		__field(u32,		srv_cpu)
	),

	TP_fast_assign(
		__entry->tid		= umcg_trace_tid(slot);
		__entry->cpu		= raw_smp_processor_id();
		__entry->group		= umcg_trace_group(slot);
		__entry->state		= umcg_trace_state(slot);
		__entry->kind		= slot->flags;
		__entry->srv_cpu	= slot->cpu;
	),

	TP_printk("tid=%d cpu=%d group=%d state=0x%x (%s%s%s) kind=%s srv_cpu=%u",
		  __entry->tid, __entry->cpu, __entry->group, __entry->state,
		  umcg_show_state(__entry->state),
		  __entry->state & 0xff00 ? "|" : "",
		  umcg_show_flags(__entry->state),
		  __print_symbolic(__entry->kind,
				   { 1, "worker" }, { 2, "server" }),
		  __entry->srv_cpu)
);

/* A slot's event with nothing else: umcg_wake. */
DECLARE_EVENT_CLASS(umcg_task_class,

	TP_PROTO(struct umcg_slot *slot),

	TP_ARGS(slot),

	TP_STRUCT__entry(
		__field(pid_t,		tid)
		__field(int,		cpu)
		__field(pid_t,		group)
		__field(u32,		state)
	),

	TP_fast_assign(
		__entry->tid		= umcg_trace_tid(slot);
		__entry->cpu		= raw_smp_processor_id();
		__entry->group		= umcg_trace_group(slot);
		__entry->state		= umcg_trace_state(slot);
	),

	TP_printk("tid=%d cpu=%d group=%d state=0x%x (%s%s%s)",
		  __entry->tid, __entry->cpu, __entry->group, __entry->state,
		  umcg_show_state(__entry->state),
		  __entry->state & 0xff00 ? "|" : "",
		  umcg_show_flags(__entry->state))
);

/* The worker's blocking call completed: BLOCKED -> RUNNABLE (kmove.c). */
DEFINE_EVENT(umcg_task_class, umcg_wake,
	TP_PROTO(struct umcg_slot *slot),
	TP_ARGS(slot)
);

/*
 * A running worker went to sleep in the kernel: RUNNING -> BLOCKED.
 * @next: the staged worker it handed its core to (now RUNNING), or NULL:
 * its server was poked.
 */
TRACE_EVENT(umcg_block,

	TP_PROTO(struct umcg_slot *slot, struct umcg_slot *next),

	TP_ARGS(slot, next),

	TP_STRUCT__entry(
		__field(pid_t,		tid)
		__field(int,		cpu)
		__field(pid_t,		group)
		__field(u32,		state)
		__field(pid_t,		next)
		__field(u32,		next_state)
	),

	TP_fast_assign(
		__entry->tid		= umcg_trace_tid(slot);
		__entry->cpu		= raw_smp_processor_id();
		__entry->group		= umcg_trace_group(slot);
		__entry->state		= umcg_trace_state(slot);
		__entry->next		= next ? umcg_trace_tid(next) : 0;
		__entry->next_state	= next ? umcg_trace_state(next) : 0;
	),

	TP_printk("tid=%d cpu=%d group=%d state=0x%x (%s%s%s) next=%d next_state=0x%x",
		  __entry->tid, __entry->cpu, __entry->group, __entry->state,
		  umcg_show_state(__entry->state),
		  __entry->state & 0xff00 ? "|" : "",
		  umcg_show_flags(__entry->state),
		  __entry->next, __entry->next_state)
);

/*
 * A RUNNABLE worker starts its wait in the kernel until the library picks
 * it (kmove.c, umcg_hold()); @reason: UMCG_TRACE_HOLD_*.
 */
TRACE_EVENT(umcg_hold,

	TP_PROTO(struct umcg_slot *slot, int reason),

	TP_ARGS(slot, reason),

	TP_STRUCT__entry(
		__field(pid_t,		tid)
		__field(int,		cpu)
		__field(pid_t,		group)
		__field(u32,		state)
		__field(int,		reason)
	),

	TP_fast_assign(
		__entry->tid		= umcg_trace_tid(slot);
		__entry->cpu		= raw_smp_processor_id();
		__entry->group		= umcg_trace_group(slot);
		__entry->state		= umcg_trace_state(slot);
		__entry->reason		= reason;
	),

	TP_printk("tid=%d cpu=%d group=%d state=0x%x (%s%s%s) reason=%s",
		  __entry->tid, __entry->cpu, __entry->group, __entry->state,
		  umcg_show_state(__entry->state),
		  __entry->state & 0xff00 ? "|" : "",
		  umcg_show_flags(__entry->state),
		  __print_symbolic(__entry->reason,
				   { UMCG_TRACE_HOLD_WAKE, "wake" },
				   { UMCG_TRACE_HOLD_PREEMPT, "preempt" },
				   { UMCG_TRACE_HOLD_AGAIN, "again" }))
);

/*
 * An ioctl of current on another thread of its group, @next: tid is the
 * caller, next and next_state the target.
 */
DECLARE_EVENT_CLASS(umcg_target_class,

	TP_PROTO(struct umcg_slot *next),

	TP_ARGS(next),

	TP_STRUCT__entry(
		__field(pid_t,		tid)
		__field(int,		cpu)
		__field(pid_t,		group)
		__field(pid_t,		next)
		__field(u32,		next_state)
		__field(u16,		next_kind)
	),

	TP_fast_assign(
		__entry->tid		= current->pid;
		__entry->cpu		= raw_smp_processor_id();
		__entry->group		= umcg_trace_group(next);
		__entry->next		= umcg_trace_tid(next);
		__entry->next_state	= umcg_trace_state(next);
		__entry->next_kind	= READ_ONCE(next->flags);
	),

	TP_printk("tid=%d cpu=%d group=%d next=%d next_state=0x%x (%s%s%s) next_kind=%s",
		  __entry->tid, __entry->cpu, __entry->group, __entry->next,
		  __entry->next_state, umcg_show_state(__entry->next_state),
		  __entry->next_state & 0xff00 ? "|" : "",
		  umcg_show_flags(__entry->next_state),
		  __print_symbolic(__entry->next_kind,
				   { 0, "none" }, { 1, "worker" },
				   { 2, "server" }))
);

/*
 * UMCG_IOC_WAKE of @next: the library made it run (a worker whose word
 * reads RUNNING is picked; a server is woken to look for work).
 */
DEFINE_EVENT(umcg_target_class, umcg_pick,
	TP_PROTO(struct umcg_slot *next),
	TP_ARGS(next)
);

/* UMCG_IOC_PREEMPT of worker @next (it leaves its core if RUNNING). */
DEFINE_EVENT(umcg_target_class, umcg_preempt,
	TP_PROTO(struct umcg_slot *next),
	TP_ARGS(next)
);

/*
 * UMCG_IOC_SWITCH: @slot (current) wakes @next on its CPU and waits until
 * its own word reads RUNNING.
 */
TRACE_EVENT(umcg_switch,

	TP_PROTO(struct umcg_slot *slot, struct umcg_slot *next),

	TP_ARGS(slot, next),

	TP_STRUCT__entry(
		__field(pid_t,		tid)
		__field(int,		cpu)
		__field(pid_t,		group)
		__field(u32,		state)
		__field(pid_t,		next)
		__field(u32,		next_state)
	),

	TP_fast_assign(
		__entry->tid		= umcg_trace_tid(slot);
		__entry->cpu		= raw_smp_processor_id();
		__entry->group		= umcg_trace_group(slot);
		__entry->state		= umcg_trace_state(slot);
		__entry->next		= umcg_trace_tid(next);
		__entry->next_state	= umcg_trace_state(next);
	),

	TP_printk("tid=%d cpu=%d group=%d state=0x%x (%s%s%s) next=%d next_state=0x%x",
		  __entry->tid, __entry->cpu, __entry->group, __entry->state,
		  umcg_show_state(__entry->state),
		  __entry->state & 0xff00 ? "|" : "",
		  umcg_show_flags(__entry->state),
		  __entry->next, __entry->next_state)
);

/*
 * A registered worker is seen exiting (@freed false: reason done), or a
 * registration ends (@freed true: the slot is about to be freed, its
 * fields are still those of the registration; reason unregister when
 * current is its thread, else reaped).
 */
TRACE_EVENT(umcg_exit,

	TP_PROTO(struct umcg_slot *slot, bool freed),

	TP_ARGS(slot, freed),

	TP_STRUCT__entry(
		__field(pid_t,		tid)
		__field(int,		cpu)
		__field(pid_t,		group)
		__field(u32,		state)
		__field(u16,		kind)
		__field(int,		reason)
	),

	TP_fast_assign(
		__entry->tid		= umcg_trace_tid(slot);
		__entry->cpu		= raw_smp_processor_id();
		__entry->group		= umcg_trace_group(slot);
		__entry->state		= umcg_trace_state(slot);
		__entry->kind		= slot->flags;
		__entry->reason		= !freed ? UMCG_TRACE_EXIT_DONE :
					  READ_ONCE(slot->task) == current ?
					  UMCG_TRACE_EXIT_UNREGISTER :
					  UMCG_TRACE_EXIT_REAPED;
	),

	TP_printk("tid=%d cpu=%d group=%d state=0x%x (%s%s%s) kind=%s reason=%s",
		  __entry->tid, __entry->cpu, __entry->group, __entry->state,
		  umcg_show_state(__entry->state),
		  __entry->state & 0xff00 ? "|" : "",
		  umcg_show_flags(__entry->state),
		  __print_symbolic(__entry->kind,
				   { 1, "worker" }, { 2, "server" }),
		  __print_symbolic(__entry->reason,
				   { UMCG_TRACE_EXIT_DONE, "done" },
				   { UMCG_TRACE_EXIT_UNREGISTER, "unregister" },
				   { UMCG_TRACE_EXIT_REAPED, "reaped" }))
);

#endif /* _UMCG_TRACE_H */

/* An out-of-tree module: found through -I$(src) (kmod/CMakeLists.txt). */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE umcg_trace
#include <trace/define_trace.h>
