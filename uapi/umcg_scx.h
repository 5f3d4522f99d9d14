/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note OR MIT */
/*
 * umcg_scx.h - the ABI of the umcg sched_ext scheduler (bpf/): what its
 * BPF side shares with libumcg's scx backend, umcgctl and the tests.  The
 * layouts of the maps user space reads (the shared area, the counters,
 * "ctl") and the arguments of the SEC("syscall") programs a thread runs
 * with BPF_PROG_TEST_RUN: "umcg_register", "umcg_pick", "umcg_unregister"
 * and "umcg_poke", through their pins under /sys/fs/bpf/umcg.
 *
 * Included on both sides: in user space on its own, in BPF after vmlinux.h
 * (which has the __u32 family: mark <linux/types.h>, which uapi/umcg.h
 * includes, as included first).  Rules as for uapi/umcg.h: __u32 and
 * __u64 fields only, naturally aligned, explicit padding that must be zero,
 * no enums, bitfields, pointers or "long"; every struct's size is asserted
 * below.
 *
 * Versioning.  The scheduler publishes UMCG_SCX_ABI_MAGIC and
 * UMCG_SCX_ABI_VERSION at the head of its shared area (struct
 * umcg_scx_shared) when it starts.  User space maps that area first and
 * uses nothing else of the scheduler's unless both words are the ones it
 * was built with: any change to a struct, a flag or a limit below moves
 * the version.
 *
 * Thread ids.  Every tid a process passes in the commands' arguments
 * (struct umcg_scx_register_args.server_tid, struct umcg_scx_pick_args.tid)
 * is the thread's id as the calling thread sees it: gettid() in the
 * caller's PID namespace, whichever that is.  A tid that names no thread
 * of the caller's process in that namespace (an id of another namespace,
 * such as the parent namespace's view of one of the caller's own threads)
 * is -ESRCH, as any tid of another process is.  What the scheduler gives
 * back is in the caller's namespace as well: the server_tid published in a
 * worker's slot is the one the worker registered with.  Inside, the
 * scheduler keeps kernel (initial namespace) ids only and translates a
 * command's tids on entry (bpf/umcg_enforce.bpf.h, p.); other processes'
 * slots in the shared area hold ids of those processes' namespaces.
 */
#ifndef _UAPI_UMCG_SCX_H
#define _UAPI_UMCG_SCX_H

#include "umcg.h"

/* The head of struct umcg_scx_shared: "umcg", then the version. */
#define UMCG_SCX_ABI_MAGIC		0x67636d75U
#define UMCG_SCX_ABI_VERSION		3

/* Limits of one scheduler instance (all processes together). */
#define UMCG_SCX_MAX_TASKS		4096	/* registered threads, power of 2 */
#define UMCG_SCX_MAX_GROUPS		16	/* registered processes, power of 2 */
#define UMCG_SCX_MAX_CPUS		64	/* CPUs a server can manage, power of 2 */
#define UMCG_SCX_EVENT_WORDS		(UMCG_SCX_MAX_TASKS / 64)

/* Watchdog default: a task runnable but not run for this long ejects it. */
#define UMCG_SCX_TIMEOUT_MS_DFL		5000
/* The kernel refuses anything above 30 s (-E2BIG at attach). */
#define UMCG_SCX_TIMEOUT_MS_MAX		30000

/*
 * The doorbell: BPF_MAP_TYPE_RINGBUF "wake".  The scheduler writes a
 * record (the CPU whose server has news, a __u64) with BPF_RB_FORCE_WAKEUP
 * whenever a server registered with UMCG_SCX_REGISTER_DOORBELL has news: a
 * worker blocked, a worker woke and is held, umcg_poke, a worker exited.
 * Such servers sleep in poll() on the ring's descriptor and drain the ring
 * (consumer position := producer position) before they look for news.
 * Every record wakes every sleeping server of every process: a server that
 * finds nothing for itself sleeps again.  Servers registered with
 * UMCG_SCX_REGISTER_BELL get their news through their own bell instead
 * (struct umcg_scx_shared.bell), which wakes no other thread.
 */
#define UMCG_SCX_WAKE_RING_SZ		(64 * 1024)

/* A held server runs at least this often: well under the watchdog. */
#define UMCG_SCX_HEARTBEAT_NS		(1000ULL * 1000 * 1000)
/* A held worker is released (late C3) after this long. */
#define UMCG_SCX_HOLD_MAX_NS		(2000ULL * 1000 * 1000)

/**
 * struct umcg_scx_shared - value (key 0) of the BPF_F_MMAPABLE ARRAY
 * "shared", frozen at load and mapped read-only by processes
 * @abi_magic:   UMCG_SCX_ABI_MAGIC, written by the scheduler's ops.init
 * @abi_version: UMCG_SCX_ABI_VERSION, written with @abi_magic
 * @pad:         zero
 * @task:        one struct umcg_task per slot (uapi/umcg.h); the scheduler
 *               writes @state, @server_tid, @cpu, @blocked_ns, @woken_ns,
 *               @seq and reserved[UMCG_SCX_TASK_BEGIN], the begin counter:
 *               every publish adds one to it (atomic) before it writes the
 *               slot's fields and one to @seq (atomic) after, so a reader
 *               that reads @seq, then the fields, then begin, and finds
 *               begin equal to that @seq, read the fields of that one
 *               publish, whole
 * @events:      per group, one bit per slot, set (atomic OR, after the
 *               state word and @seq) when the scheduler moves that slot's
 *               state; never cleared (the map is read-only for processes):
 *               readers compare @seq
 * @bell:        per slot: the bell of a server registered with
 *               UMCG_SCX_REGISTER_BELL, a count the scheduler adds one to
 *               (atomic) whenever that server has news, then, if the
 *               server is not running, wakes that server alone from the
 *               sleep it is in (a TWA_SIGNAL task work,
 *               bpf_task_work_schedule_signal()), which makes the sleep's
 *               system call return or restart.  The server sleeps
 *               in a futex wait on its bell (FUTEX_WAITV, private, with
 *               the count it read before it looked for news): a ring
 *               after the read fails the wait's compare, or ends the wait
 *               and fails the compare of its restart.  Zero for every other
 *               slot
 *
 * Nothing a process does to it can reach the scheduler; the library learns
 * its slot and group from register.
 */
#define UMCG_SCX_TASK_BEGIN		0	/* index into umcg_task.reserved */
/*
 * reserved[UMCG_SCX_TASK_FLAGS] of a slot: UMCG_SCX_TF_* bits, written by
 * the scheduler (atomic OR / AND) outside the publish protocol.
 * UMCG_SCX_TF_EVICTED: a server whose CPU is out of its reach (its
 * affinity or cpuset lost it, or the CPU is offline) when it was last
 * queued: it runs wherever it may, never held, until it can go back.
 */
#define UMCG_SCX_TASK_FLAGS		1
#define UMCG_SCX_TF_EVICTED		(1ULL << 0)

struct umcg_scx_shared {
	__u32			abi_magic;
	__u32			abi_version;
	__u32			pad[14];
	struct umcg_task	task[UMCG_SCX_MAX_TASKS];
	__u64			events[UMCG_SCX_MAX_GROUPS][UMCG_SCX_EVENT_WORDS];
	__u32			bell[UMCG_SCX_MAX_TASKS];
};

/**
 * struct umcg_scx_register_args - context of the "umcg_register" program
 * @flags:      r: exactly one of UMCG_REGISTER_WORKER, UMCG_REGISTER_SERVER;
 *              a server may add UMCG_SCX_REGISTER_DOORBELL or
 *              UMCG_SCX_REGISTER_BELL
 * @server_tid: r: worker: a registered server of the caller's process,
 *              its tid in the caller's PID namespace; server: 0
 * @cpu:        r: server: the CPU it serves (in its affinity); worker: 0
 * @reserved0:  must be zero
 * @slice_ns:   r: with UMCG_SCX_REGISTER_SLICE (worker only): its group's
 *              time slice, 1 .. UMCG_SCX_SLICE_MAX_NS; else zero
 * @in_lib:     r: with UMCG_SCX_REGISTER_SLICE or UMCG_SCX_REGISTER_IN_LIB:
 *              the address of a 32-bit word of the caller's, non-zero
 *              while it runs code in which it must not be preempted nor
 *              held (libumcg: struct umcg_thread's in_lib), or 0 for none
 *              (not with UMCG_SCX_REGISTER_IN_LIB); else zero
 * @slot:       w: the caller's slot: task[@slot] of struct umcg_scx_shared
 * @group:      w: the caller's group: events[@group]
 * @task_off:   w: offsetof the slot's struct umcg_task in the map value
 * @events_off: w: offsetof the group's event bitmap in the map value
 *
 * The calling thread registers itself.  The return value (BPF_PROG_TEST_RUN
 * retval) is 0 or -errno: -EINVAL unknown flags, non-zero reserved fields,
 * a server with a server_tid, a worker with a cpu, a cpu out of range or
 * outside the caller's affinity; -ESRCH server_tid is no registered server
 * of the caller's process (in the caller's PID namespace); -EBUSY the caller is registered; -ENOSPC no slot
 * or group left; -ENOMEM no task storage; -EAGAIN the slot table changed
 * under every one of UMCG_SCX_MAX_TASKS tries to claim a slot (retry).
 * UMCG_SCX_REGISTER_SLICE or
 * UMCG_SCX_REGISTER_IN_LIB with a server, a @slice_ns out of range, @slice_ns
 * without UMCG_SCX_REGISTER_SLICE, @in_lib without either flag, and
 * UMCG_SCX_REGISTER_IN_LIB with no @in_lib are -EINVAL.
 */
struct umcg_scx_register_args {
	__u32	flags;
	__u32	server_tid;
	__u32	cpu;
	__u32	reserved0;
	__u64	slice_ns;
	__u64	in_lib;
	__u32	slot;
	__u32	group;
	__u64	task_off;
	__u64	events_off;
};

/*
 * With UMCG_REGISTER_SERVER: the server sleeps in the kernel (poll() on the
 * doorbell ring, see UMCG_SCX_WAKE_RING_SZ) when it has nothing to do,
 * instead of being held runnable in sched_yield(): the scheduler rings the
 * doorbell for its news and never holds it.
 */
#define UMCG_SCX_REGISTER_DOORBELL	(1U << 8)
/*
 * With UMCG_REGISTER_SERVER, instead of UMCG_SCX_REGISTER_DOORBELL: the
 * server sleeps in a futex wait on its own bell (struct
 * umcg_scx_shared.bell[@slot]) when it has nothing to do, and only its own
 * group's news ring it: a block, wake-up, preemption or exit of a worker
 * of its group on its CPU (or of a worker it serves, where the group has
 * no server of the CPU the worker was on), its CPU going offline or
 * online.  At most one bell server per CPU and group (-EBUSY for a
 * second).  -EOPNOTSUPP where the kernel cannot wake a chosen task from
 * BPF (no bpf_task_work_schedule_signal(), before Linux 6.18): register
 * with UMCG_SCX_REGISTER_DOORBELL then.  Its other threads wake it with a
 * futex wake of their own words (FUTEX_WAITV waits on both).
 */
#define UMCG_SCX_REGISTER_BELL		(1U << 11)

/*
 * With UMCG_REGISTER_WORKER: the worker's group has a time slice (C6),
 * @slice_ns.  The worker's sched_ext slice is that slice; when the kernel
 * finds it used up on a tick (time on a CPU since the worker was last
 * queued, not wall time) the worker is preempted: published
 * UMCG_TASK_RUNNABLE | UMCG_TF_PREEMPT (no new blocked_ns), held like a
 * woken worker until picked, its server's doorbell rung.  Not while the
 * word at @in_lib reads non-zero, nor while fair-class threads are queued
 * on its CPU with nothing else of sched_ext's to run there: then it runs
 * on for another slice, and its slot is published UMCG_TASK_RUNNING |
 * UMCG_TF_PREEMPT with a new seq, a request to yield that the worker
 * honours itself (once per seq) when it leaves the code @in_lib guards.
 */
#define UMCG_SCX_REGISTER_SLICE		(1U << 9)
/*
 * With UMCG_REGISTER_WORKER: a sleep that begins while the word at @in_lib
 * reads non-zero is published BLOCKED with a new seq and cpu but the
 * blocked_ns of the worker's last block (it is no block), and its wake-up
 * is not held: the worker is published RUNNING (new seq) and runs on the
 * CPU it wakes on.  It may hold locks there that its server needs, kernel
 * ones included (a page fault that reads a file page holds the page's
 * lock).
 */
#define UMCG_SCX_REGISTER_IN_LIB	(1U << 10)
/* The longest slice: well under UMCG_SCX_HOLD_MAX_NS and the watchdog. */
#define UMCG_SCX_SLICE_MAX_NS		(1000ULL * 1000 * 1000)

/**
 * struct umcg_scx_pick_args - context of the "umcg_pick" program
 * @tid:   r: a worker of the caller's process, its tid in the caller's
 *         PID namespace
 * @cpu:   r: the CPU it is to run on (in its affinity)
 * @flags: r: 0, UMCG_SCX_PICK_WOKEN or UMCG_SCX_PICK_SEQ
 * @pad:   r: without a flag must be zero; with UMCG_SCX_PICK_WOKEN, the low
 *         32 bits of the worker's slot's seq, read after the caller woke
 *         it; with UMCG_SCX_PICK_SEQ, read when the caller saw it held
 *
 * Return value: 0 when the worker is RUNNING for the scheduler: it was held
 * RUNNABLE and is now on @cpu's local DSQ (the CPU is kicked unless the
 * caller runs on it).  With UMCG_SCX_PICK_WOKEN (the caller has just woken
 * @tid, e.g. with a futex wake) also when it was asleep (BLOCKED): its next
 * wake-up, the one on its way, goes straight to @cpu instead of into the
 * hold (if @cpu is outside its affinity then, it runs on the CPU it wakes
 * on); and when it was running already (nothing to do).  Both only while
 * the slot's seq still reads @pad; the hold of that wake-up (seq @pad + 1)
 * is moved like any held worker.  With UMCG_SCX_PICK_SEQ only the hold
 * published at seq @pad is moved.  With either flag, a worker that moved
 * further since is not touched (-ESTALE): it ran on, and a later hold is
 * a block of its own, which the caller must not end (C3).  -EINVAL bad
 * fields or @cpu (for a held worker: outside its affinity); -ESRCH @tid is
 * no worker of the caller's process (in the caller's PID namespace) (with UMCG_SCX_PICK_WOKEN: or it is
 * exiting); -EAGAIN it is not held (without UMCG_SCX_PICK_WOKEN), or it is
 * between its wake-up and its enqueue, or being released by the hold
 * timer: try again.
 */
struct umcg_scx_pick_args {
	__u32	tid;
	__u32	cpu;
	__u32	flags;
	__u32	pad;
};

#define UMCG_SCX_PICK_WOKEN		(1U << 1)	/* the caller just woke @tid */
#define UMCG_SCX_PICK_SEQ		(1U << 2)	/* only while seq reads @pad */

/**
 * struct umcg_scx_unregister_args - context of the "umcg_unregister" program
 * @flags:    r: must be zero
 * @pad:      must be zero
 * @reserved: must be zero
 *
 * The calling thread stops being a server or worker: its slot is published
 * UMCG_TASK_NEW and freed, its group dropped with its last thread.  The
 * caller should then leave SCHED_EXT (sched_setscheduler(SCHED_OTHER)):
 * until it does, the scheduler runs it like any unregistered thread.
 * Return value: 0; -EINVAL bad fields; -ENOENT the caller is not registered.
 */
struct umcg_scx_unregister_args {
	__u32	flags;
	__u32	pad;
	__u64	reserved;
};

/**
 * struct umcg_scx_poke_args - context of the "umcg_poke" program
 * @cpu:      r: a CPU served by a registered server of the caller's process
 * @flags:    r: must be zero
 * @reserved: must be zero
 *
 * Runs that server soon, for a server that another thread of its process
 * has news for: a held one (in sched_yield()) is run by its CPU's next
 * dispatch and the CPU is kicked; a doorbell server
 * (UMCG_SCX_REGISTER_DOORBELL) asleep is woken by the doorbell.  Return
 * value: 0; -EINVAL bad fields or @cpu; -ESRCH no server of the caller's
 * process serves @cpu.
 */
struct umcg_scx_poke_args {
	__u32	cpu;
	__u32	flags;
	__u64	reserved;
};

/*
 * Global counters of the scheduler: one struct umcg_scx_stats per CPU in
 * the PERCPU_ARRAY "stats" (key 0); user space sums the copies.
 */
#define UMCG_SCX_STAT_ENQUEUE		0	/* ops.enqueue: task put on the FIFO */
#define UMCG_SCX_STAT_DIRECT		1	/* select_cpu put a task straight on an idle CPU */
#define UMCG_SCX_STAT_DISPATCH		2	/* ops.dispatch moved a task off the FIFO */
#define UMCG_SCX_STAT_RUNNING		3	/* ops.running: a task got a CPU */
#define UMCG_SCX_STAT_BLOCK		4	/* ops.quiescent with SCX_DEQ_SLEEP: a task blocked */
#define UMCG_SCX_STAT_KICK		5	/* enqueue kicked an idle CPU */
#define UMCG_SCX_STAT_ENABLE		6	/* ops.enable: a task entered sched_ext */
#define UMCG_SCX_STAT_DISABLE		7	/* ops.disable: a task left sched_ext */
#define UMCG_SCX_NR_STATS		8

struct umcg_scx_stats {
	__u64	cnt[UMCG_SCX_NR_STATS];
};

/**
 * struct umcg_scx_task_stats - per-task counters, value of the TASK_STORAGE
 * map "task_stats", looked up with a pidfd of the thread as the key
 * @enqueue:  ops.enqueue calls: times the task was put on the FIFO
 * @dispatch: times the policy handed the task to a CPU: a direct insert
 *            from select_cpu, or leaving the FIFO (counted when it next runs)
 * @running:  ops.running calls: times the task got a CPU
 * @block:    ops.quiescent with SCX_DEQ_SLEEP: times the task blocked
 * @enable:   ops.enable calls: times the task entered sched_ext
 * @queued:   internal: 1 from ops.enqueue until the task next runs
 * @pad:      zero
 *
 * Every task has an entry (ops.init_task runs for every task, also in
 * partial mode): one that never opted in has all counters zero.
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

/* Counters of the enforcer: PERCPU_ARRAY "enf_stats", key 0. */
#define UMCG_SCX_ENF_REGISTER		0	/* a thread registered */
#define UMCG_SCX_ENF_BLOCK		1	/* RUNNING -> BLOCKED published */
#define UMCG_SCX_ENF_WAKE_HELD		2	/* BLOCKED -> RUNNABLE, held */
#define UMCG_SCX_ENF_PICK		3	/* pick moved a held worker */
#define UMCG_SCX_ENF_SERVER_RUN		4	/* dispatch ran a held server */
#define UMCG_SCX_ENF_HEARTBEAT		5	/* timer asked for a server heartbeat */
#define UMCG_SCX_ENF_HOLD_EXPIRED	6	/* a held worker released by time */
#define UMCG_SCX_ENF_EXIT		7	/* a registered thread exited */
#define UMCG_SCX_ENF_SERVER_MISS	8	/* need_server, but no server held */
#define UMCG_SCX_ENF_PICK_ASLEEP	9	/* pick of a BLOCKED worker */
#define UMCG_SCX_ENF_PICK_DIRECT	10	/* its wake-up went to that CPU */
#define UMCG_SCX_ENF_UNREGISTER		11	/* a thread unregistered */
#define UMCG_SCX_ENF_POKE		12	/* umcg_poke ran a server */
#define UMCG_SCX_ENF_DOORBELL		13	/* the doorbell rang */
#define UMCG_SCX_ENF_DOORBELL_FULL	14	/* the doorbell ring was full */
#define UMCG_SCX_ENF_HOLD_CONTENDED	15	/* held worker run: fair class queued */
#define UMCG_SCX_ENF_SLICE_END		16	/* slice used up: preempted, held */
#define UMCG_SCX_ENF_SLICE_DEFER	17	/* slice used up: asked to yield */
#define UMCG_SCX_ENF_LIB_WAKE		18	/* woken in libumcg: not held */
#define UMCG_SCX_ENF_EVICTED		19	/* a server's CPU went out of its reach */
#define UMCG_SCX_ENF_DYING_WAKE		20	/* woken exiting or killed: not held */
#define UMCG_SCX_ENF_CPU_ONLINE		21	/* ops.cpu_online */
#define UMCG_SCX_ENF_CPU_OFFLINE	22	/* ops.cpu_offline */
#define UMCG_SCX_ENF_BELL		23	/* a server's bell rang (its count moved) */
#define UMCG_SCX_ENF_BELL_WAKE		24	/* ... and it slept: its wake-up queued */
#define UMCG_SCX_ENF_BELL_PENDING	25	/* ... its last wake-up still on its way */
#define UMCG_SCX_ENF_BELL_FAILED	26	/* ... its wake-up not queued (no memory) */
#define UMCG_SCX_NR_ENF_STATS		27

struct umcg_scx_enf_stats {
	__u64	cnt[UMCG_SCX_NR_ENF_STATS];
};

/* struct umcg_scx_ctl.eject */
#define UMCG_SCX_EJECT_NONE		0
#define UMCG_SCX_EJECT_EXIT		1	/* scx_bpf_exit(): kind UNREG_BPF, code below */
#define UMCG_SCX_EJECT_ERROR		2	/* scx_bpf_error(): kind ERROR_BPF */
/* The exit code and message of a requested ejection. */
#define UMCG_SCX_EJECT_CODE		42
#define UMCG_SCX_EJECT_MSG		"umcg: ejected on request (test hook ctl.eject)"

/**
 * struct umcg_scx_ctl - requests to the running scheduler: the ARRAY map
 * "ctl" (key 0), writable by root only
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

__UMCG_STATIC_ASSERT(sizeof(struct umcg_scx_shared) ==
		     64 + UMCG_SCX_MAX_TASKS * sizeof(struct umcg_task) +
		     UMCG_SCX_MAX_GROUPS * UMCG_SCX_EVENT_WORDS * 8 +
		     UMCG_SCX_MAX_TASKS * 4,
		     "struct umcg_scx_shared layout");
__UMCG_STATIC_ASSERT(__builtin_offsetof(struct umcg_scx_shared, task) == 64,
		     "struct umcg_scx_shared: the slots start at the second cache line");
__UMCG_STATIC_ASSERT(sizeof(struct umcg_scx_register_args) == 56,
		     "struct umcg_scx_register_args layout");
__UMCG_STATIC_ASSERT(sizeof(struct umcg_scx_pick_args) == 16,
		     "struct umcg_scx_pick_args layout");
__UMCG_STATIC_ASSERT(sizeof(struct umcg_scx_unregister_args) == 16,
		     "struct umcg_scx_unregister_args layout");
__UMCG_STATIC_ASSERT(sizeof(struct umcg_scx_poke_args) == 16,
		     "struct umcg_scx_poke_args layout");
__UMCG_STATIC_ASSERT(sizeof(struct umcg_scx_stats) == UMCG_SCX_NR_STATS * 8,
		     "struct umcg_scx_stats layout");
__UMCG_STATIC_ASSERT(sizeof(struct umcg_scx_task_stats) == 48,
		     "struct umcg_scx_task_stats layout");
__UMCG_STATIC_ASSERT(sizeof(struct umcg_scx_enf_stats) == UMCG_SCX_NR_ENF_STATS * 8,
		     "struct umcg_scx_enf_stats layout");
__UMCG_STATIC_ASSERT(sizeof(struct umcg_scx_ctl) == 8,
		     "struct umcg_scx_ctl layout");

#endif /* _UAPI_UMCG_SCX_H */
