/* SPDX-License-Identifier: GPL-2.0 */
/*
 * umcg_scx.h - types shared by the umcg sched_ext scheduler (umcg.bpf.c) and
 * its user space (scx_loader.c, umcg_scx.c, the guest tests).
 *
 * Included on both sides of the boundary: in BPF after vmlinux.h, which
 * already defines the __u32/__u64 family, in user space with
 * <linux/types.h>.  Fixed-width types only, naturally aligned, explicit
 * padding, no enums: these structs are the values of BPF maps, read also
 * through the pins of "umcgctl load" (scx_pin.h), so both sides must agree
 * on every byte.
 *
 * The stable interface between the scheduler and the rest of umcg is still
 * uapi/umcg.h (UMCG_SCX_OPS_NAME); this header is internal to bpf/ and its
 * tests and may change with the scheduler.
 */
#ifndef UMCG_SCX_H
#define UMCG_SCX_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Watchdog default: a task runnable but not run for this long ejects us. */
#define UMCG_SCX_TIMEOUT_MS_DFL		5000
/* The kernel refuses anything above 30 s (-E2BIG at attach). */
#define UMCG_SCX_TIMEOUT_MS_MAX		30000

/* The one user DSQ of v0: a global FIFO created in ops.init. */
#define UMCG_SCX_DSQ_FIFO		0

/*
 * Global counters: one struct umcg_scx_stats per CPU in the PERCPU_ARRAY
 * "stats" (a single element, key 0).  Each CPU bumps only its own copy, so
 * no counter shares a cache line between CPUs; user space sums the copies.
 */
#define UMCG_SCX_STAT_ENQUEUE	0	/* ops.enqueue: task put on the FIFO */
#define UMCG_SCX_STAT_DIRECT	1	/* select_cpu put a task straight on an idle CPU */
#define UMCG_SCX_STAT_DISPATCH	2	/* ops.dispatch moved a task off the FIFO */
#define UMCG_SCX_STAT_RUNNING	3	/* ops.running: a task got a CPU */
#define UMCG_SCX_STAT_BLOCK	4	/* ops.quiescent with SCX_DEQ_SLEEP: a task blocked */
#define UMCG_SCX_STAT_KICK	5	/* enqueue kicked an idle CPU */
#define UMCG_SCX_STAT_ENABLE	6	/* ops.enable: a task entered sched_ext */
#define UMCG_SCX_STAT_DISABLE	7	/* ops.disable: a task left sched_ext */
#define UMCG_SCX_NR_STATS	8

struct umcg_scx_stats {
	__u64	cnt[UMCG_SCX_NR_STATS];
};

/**
 * struct umcg_scx_task_stats - per-task counters, value of the TASK_STORAGE
 * map "task_stats"
 * @enqueue:  ops.enqueue calls: times the task was put on the FIFO
 * @dispatch: times the policy handed the task to a CPU: a direct insert
 *            from select_cpu, or leaving the FIFO (counted when it next runs)
 * @running:  ops.running calls: times the task got a CPU
 * @block:    ops.quiescent with SCX_DEQ_SLEEP: times the task blocked
 * @enable:   ops.enable calls: times the task entered sched_ext
 * @queued:   internal: 1 from ops.enqueue until the task next runs
 * @pad:      zero
 *
 * Created for every task by ops.init_task (the kernel calls it for every
 * task, also in partial mode), so a task that never opted in has an entry
 * with all counters zero.  Only the task's own callbacks write it, and
 * sched_ext serialises those under the task's runqueue lock.  User space
 * reads it with a pidfd of the thread as the key.
 */
struct umcg_scx_task_stats {
	__u64	enqueue;
	__u64	dispatch;
	__u64	running;
	__u64	block;
	__u64	enable;
	__u32	queued;
	__u32	pad;
};

/*
 * Values of the kernel's enum scx_exit_kind, for user space, which has no
 * vmlinux.h.  Unchanged since 6.12; umcg.bpf.c checks them against the
 * vmlinux.h it is built with.
 */
#define UMCG_SCX_EXIT_NONE		0
#define UMCG_SCX_EXIT_DONE		1
#define UMCG_SCX_EXIT_UNREG		64	/* user space detached (link closed) */
#define UMCG_SCX_EXIT_UNREG_BPF		65	/* the BPF side called scx_bpf_exit() */
#define UMCG_SCX_EXIT_UNREG_KERN	66	/* the kernel unloaded it (e.g. hotplug) */
#define UMCG_SCX_EXIT_SYSRQ		67	/* SysRq-S */
#define UMCG_SCX_EXIT_PARENT		68	/* 7.1+: the parent scheduler exits */
#define UMCG_SCX_EXIT_PARENT_KILL	69	/* 7.1+: killed by the parent scheduler */
#define UMCG_SCX_EXIT_ERROR		1024	/* runtime error; kinds >= this are errors */
#define UMCG_SCX_EXIT_ERROR_BPF		1025	/* scx_bpf_error() */
#define UMCG_SCX_EXIT_ERROR_STALL	1026	/* watchdog: a runnable task was not run */
#define UMCG_SCX_EXIT_ERROR_REENQ	1027	/* 7.x: a task hit the re-enqueue limit */
#define UMCG_SCX_EXIT_ERROR_RESCUE	1028	/* 7.x: ejected for overloading rescue */

/* Bit of the exit code that asks user space to load the scheduler again. */
#define UMCG_SCX_ECODE_ACT_RESTART	(1ULL << 48)

#define UMCG_SCX_EXIT_REASON_LEN	128
#define UMCG_SCX_EXIT_MSG_LEN		1024

/**
 * struct umcg_scx_exit_info - why the scheduler stopped, recorded by ops.exit
 * into the ARRAY map "exit_info" (a single element, key 0)
 * @kind:      UMCG_SCX_EXIT_*; UMCG_SCX_EXIT_NONE while it runs.  Written
 *             last, with a full barrier: once the disable is over (the
 *             detach returned, or sysfs state left "enabled"), a copy of
 *             the element with a non-zero kind is complete.
 * @pad:       zero
 * @exit_code: the kernel's or scx_bpf_exit()'s exit code
 * @reason:    the kernel's short reason, NUL-terminated
 * @msg:       the detailed message (e.g. scx_bpf_error()'s), NUL-terminated
 */
struct umcg_scx_exit_info {
	__s32	kind;
	__u32	pad;
	__s64	exit_code;
	char	reason[UMCG_SCX_EXIT_REASON_LEN];
	char	msg[UMCG_SCX_EXIT_MSG_LEN];
};

/* struct umcg_scx_ctl.eject */
#define UMCG_SCX_EJECT_NONE	0
#define UMCG_SCX_EJECT_EXIT	1	/* scx_bpf_exit(): kind UNREG_BPF, code below */
#define UMCG_SCX_EJECT_ERROR	2	/* scx_bpf_error(): kind ERROR_BPF */
/* The exit code and message of a requested ejection. */
#define UMCG_SCX_EJECT_CODE	42
#define UMCG_SCX_EJECT_MSG	"umcg: ejected on request (test hook ctl.eject)"

/**
 * struct umcg_scx_ctl - requests to the running scheduler: the ARRAY map
 * "ctl" (a single element, key 0), writable by root only
 * @eject: test hook: UMCG_SCX_EJECT_EXIT or _ERROR makes the next thread
 *         that enters sched_ext (ops.enable) unload the scheduler with
 *         UMCG_SCX_EJECT_MSG, as UNREG_BPF with exit code
 *         UMCG_SCX_EJECT_CODE or as ERROR_BPF.  0: no request.
 * @pad:   zero
 */
struct umcg_scx_ctl {
	__u32	eject;
	__u32	pad;
};

#endif /* UMCG_SCX_H */
