/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note OR MIT */
/*
 * umcg.h - the one ABI header of umcg: user-managed concurrency groups.
 *
 * Shared, never copied, by the kernel module (kmod/), the sched_ext
 * scheduler (bpf/) and the library (libumcg/).  Rules, as for any uapi
 * header: only fixed-width __u32/__u64 fields, naturally aligned, explicit
 * padding that must be zero, no enums, bitfields, pointers or "long".
 *
 * Extension is by size, never by version field: every argument struct starts
 * with a published size (UMCG_*_SIZE_VER0).  The size a caller was built
 * with travels in _IOC_SIZE() of the ioctl number; the module reads it with
 * copy_struct_from_user(), so a newer caller's trailing fields must be zero
 * (-E2BIG otherwise) and an older caller's missing fields read as zero.
 *
 * Kernel-side errors: unknown flags, non-zero pad or reserved fields, a size
 * field other than _IOC_SIZE(cmd) (so also one below VER0): -EINVAL.
 * Unknown trailing bytes: -E2BIG.  Unknown command: -ENOTTY; a command is
 * known by the direction, type and number of its ioctl number, with an
 * _IOC_SIZE() of at least its VER0 (as the kernel's extensible_ioctl_valid()).
 *
 * "r", "w", "r/w" tags on fields are from the kernel's point of view.
 */
#ifndef _UAPI_UMCG_H
#define _UAPI_UMCG_H

#include <linux/types.h>
#include <linux/ioctl.h>

/* Version of this header's ABI; reported by UMCG_IOC_GET_INFO. */
#define UMCG_API_VERSION	1

/* The misc device the module creates. */
#define UMCG_DEVICE_NAME	"umcg"
#define UMCG_DEVICE_PATH	"/dev/umcg"

/* sched_ext scheduler name, as in /sys/kernel/sched_ext/root/ops. */
#define UMCG_SCX_OPS_NAME	"umcg"

/*
 * Per-thread state word.
 *
 * Bits 0-7 hold the state, bits 8-15 flags, bits 16-31 are reserved and
 * must be zero.  The state machine, with who makes each move:
 *
 *   NEW      -> RUNNABLE   library: thread registered, handed to the policy
 *   RUNNABLE -> RUNNING    library: the policy picked it for a core
 *   RUNNING  -> BLOCKED    kernel:  the thread blocked in the kernel
 *   BLOCKED  -> RUNNABLE   kernel:  the blocking call completed (C3: it runs
 *                                   no user code until picked again)
 *   RUNNING  -> RUNNABLE   library: yield; kernel: preemption
 *                                   (UMCG_IOC_PREEMPT, UMCG_TF_PREEMPT)
 *   RUNNING  -> PARKED     library: park; PARKED -> RUNNABLE on unpark
 *   any      -> DONE       library or kernel: the thread exited
 *   DONE     -> NEW        library: done with the slot of a thread that
 *                                   exited registered (see REGISTER)
 *
 * With a kernel backend (UMCG_FEATURE_BLOCK) the kernel makes the moves
 * marked "kernel" on a registered worker by itself:
 *
 *   - RUNNING -> BLOCKED when the worker is about to sleep in the kernel
 *     (any sleep: a syscall, a page fault, a lock), unless it sleeps in
 *     a umcg command; its server (@server_tid of its struct umcg_task) is
 *     then poked (below).
 *   - BLOCKED -> RUNNABLE on its way back to user space, after which it
 *     sleeps in the kernel, running no user code, until its state reads
 *     RUNNING (the library picked it and woke it with UMCG_IOC_WAKE or
 *     UMCG_IOC_SWITCH).  Non-fatal signals wait until then; fatal ones
 *     end the wait.  A sleep that turns out not to happen (a signal
 *     arrived first) still makes the two moves.
 *   - RUNNING -> RUNNABLE at its next return to user space after
 *     UMCG_IOC_PREEMPT, then it waits to be picked as above.
 *   - RUNNING or BLOCKED -> DONE when it exits registered, where the
 *     kernel sees exits (the module's "hook" attribute reads tracepoint;
 *     with the kprobe hook only if it sleeps on the way out).
 *
 * The wait to be picked also ends when the group's file is released (the
 * process closed its last fd and mapping of /dev/umcg: nobody is left to
 * pick it) or the thread runs another program after execve(); the thread
 * then runs on as a plain thread.
 *
 * Each such move sets the worker's bit in the group's event bitmap and
 * then its word's bit in the summary (see UMCG_MMAP_EVENTS_OFF,
 * UMCG_MMAP_SUMMARY_OFF), increments @seq, and pokes a server: the kernel
 * stores RUNNING into the server's state word and, if it did not read
 * RUNNING there, wakes the server from UMCG_IOC_WAIT.  A server thus uses
 * its own word as its doorbell: it stores RUNNABLE, looks for work
 * (clearing summary bits, then the event words under them, with atomic
 * exchanges), and sleeps in
 * UMCG_IOC_WAIT only if there is none.  The poked server is the worker's
 * @server_tid if that is a registered server of the group, else the
 * group's first registered server.
 */
#define UMCG_TASK_NEW		0x00U
#define UMCG_TASK_RUNNABLE	0x01U
#define UMCG_TASK_RUNNING	0x02U
#define UMCG_TASK_BLOCKED	0x03U
#define UMCG_TASK_PARKED	0x04U
#define UMCG_TASK_DONE		0x05U
#define UMCG_TASK_STATE_MASK	0x000000ffU

/* Preemption requested: leave the core at the next safe point. */
#define UMCG_TF_PREEMPT		0x00000100U
/* Unpark permit: an unpark that arrived before the park (C5). */
#define UMCG_TF_PERMIT		0x00000200U
/*
 * The thread runs library code (libumcg), where it may hold locks its
 * servers need: the kernel neither moves it to BLOCKED when it sleeps nor
 * takes its core on UMCG_IOC_PREEMPT.  Set and cleared by the thread itself;
 * the library yields on its way out if preemption was asked meanwhile.
 */
#define UMCG_TF_INLIB		0x00000400U
#define UMCG_TF_MASK		0x0000ff00U

#define UMCG_TASK_RESERVED_MASK	0xffff0000U

#define UMCG_TASK_ALIGN		64

/**
 * struct umcg_task - per-thread state shared by libumcg and the kernel side
 * @state:      r/w: UMCG_TASK_* | UMCG_TF_*; the futex word for hand-off
 * @server_tid: r: tid of the server whose core this thread uses, 0 if none;
 *              the server the kernel pokes about this worker
 * @next_tid:   r: directed-switch target set by the library, 0 if none
 * @cpu:        w: the CPU this thread ran on when it last blocked
 * @blocked_ns: w: CLOCK_MONOTONIC time of the last RUNNING -> BLOCKED
 * @woken_ns:   w: CLOCK_MONOTONIC time of the last BLOCKED -> RUNNABLE
 * @seq:        w: incremented on every state change made by the kernel,
 *              after the change: a count, not a version of @state
 * @next_slot:  r/w, a server's word only: the worker staged to run next
 *              on the server's core (UMCG_FEATURE_HANDOFF, below)
 * @pad:        must be zero
 * @reserved:   must be zero
 *
 * One per thread, UMCG_TASK_ALIGN-aligned so that no two threads' words
 * share a cache line.  The kernel side owns the memory (mmap of the device
 * or a BPF map), so its hooks never fault on user memory.
 */
struct umcg_task {
	__u32	state;
	__u32	server_tid;
	__u32	next_tid;
	__u32	cpu;
	__u64	blocked_ns;
	__u64	woken_ns;
	__u64	seq;
	__u32	next_slot;
	__u32	pad;
	__u64	reserved[2];
};

/*
 * The staged next worker (UMCG_FEATURE_HANDOFF).  A server's @next_slot
 * names, as UMCG_NEXT_SLOT(i) for slot i, one worker that the library has
 * taken from its run queue for the server's core and that waits (RUNNABLE)
 * to run there; 0 stages nobody.  When a worker whose @server_tid is that
 * server blocks (its move RUNNING -> BLOCKED), the kernel claims the staged
 * worker with one compare-and-swap of @next_slot to UMCG_NEXT_TAKEN | slot,
 * moves the staged worker's word RUNNABLE -> RUNNING (clearing
 * UMCG_TF_PREEMPT, incrementing its @seq), wakes it on the blocker's CPU
 * and sets the blocker's event bit *without* poking the server: the core
 * went from the blocker to the staged worker in one context switch.  With
 * nothing staged (0, or a slot already taken) the block pokes the server
 * as before.
 *
 * Who writes what: the library stages by storing slot over a 0 (one
 * stager per core at a time), takes a staged worker back with a
 * compare-and-swap slot -> 0, and acknowledges a hand-off with
 * UMCG_NEXT_TAKEN | slot -> 0; the kernel only ever moves slot ->
 * UMCG_NEXT_TAKEN | slot.  A staged slot that is not a live registered
 * worker of the group reading RUNNABLE is not run (the block pokes the
 * server, and @next_slot is left as it was).
 */
#define UMCG_NEXT_TAKEN		0x80000000U
#define UMCG_NEXT_SLOT(idx)	((__u32)(idx) + 1)
#define UMCG_NEXT_IDX(next)	(((next) & ~UMCG_NEXT_TAKEN) - 1)

/* Feature bits of struct umcg_info.features. */
#define UMCG_FEATURE_INFO	(1ULL << 0)	/* UMCG_IOC_GET_INFO */
#define UMCG_FEATURE_REGISTER	(1ULL << 1)	/* UMCG_IOC_(UN)REGISTER */
#define UMCG_FEATURE_WAIT	(1ULL << 2)	/* UMCG_IOC_WAIT, UMCG_IOC_WAKE */
#define UMCG_FEATURE_SWITCH	(1ULL << 3)	/* UMCG_IOC_SWITCH */
#define UMCG_FEATURE_BLOCK	(1ULL << 4)	/* kernel moves and events */
#define UMCG_FEATURE_PREEMPT	(1ULL << 5)	/* UMCG_IOC_PREEMPT */
#define UMCG_FEATURE_HANDOFF	(1ULL << 6)	/* struct umcg_task.next_slot */

/**
 * struct umcg_info - argument of UMCG_IOC_GET_INFO
 * @size:        r: sizeof(struct umcg_info) as the caller knows it
 * @flags:       r: must be zero
 * @api_version: w: UMCG_API_VERSION of the module
 * @max_tasks:   w: most threads one process may register through this
 *               file, 0 if unlimited (umcg.ko: its module parameter
 *               max_tasks as it was when the file was opened)
 * @features:    w: UMCG_FEATURE_* the module implements
 * @reserved:    r: must be zero; w: zeroed
 */
struct umcg_info {
	__u32	size;
	__u32	flags;
	__u32	api_version;
	__u32	max_tasks;
	__u64	features;
	__u64	reserved[3];
};
#define UMCG_INFO_SIZE_VER0	48

/*
 * mmap of the device: the caller's group's shared area.  Exactly one
 * layout is valid: MAP_SHARED, offset 0, length
 * UMCG_MMAP_SIZE(max_tasks, page size) with max_tasks from
 * UMCG_IOC_GET_INFO on the same file; anything else is -EINVAL.  The
 * mapping is not inherited across fork.  The memory belongs to the
 * module, not to a file: use FUTEX_PRIVATE_FLAG if you futex on it.
 *
 * The area is reserved whole but filled as the group grows (since
 * UMCG_API_VERSION 1): a page of struct umcg_task is there once REGISTER
 * returned a task_off inside it, a page of the event bitmap once a slot
 * whose bits it holds was allocated, the summary page always.  Touching
 * a page that is not there yet raises SIGBUS.  Slots are allocated a page
 * of struct umcg_task at a time, lowest index first.
 *
 *   UMCG_MMAP_TASKS_OFF   max_tasks struct umcg_task, one per slot, at
 *                         the task_off REGISTER returns; rounded up to
 *                         whole pages
 *   UMCG_MMAP_EVENTS_OFF  the event bitmap: max_tasks bits in __u64
 *                         words; bit (i % 64) of word (i / 64) is set by
 *                         the kernel (an atomic OR, after the move is
 *                         visible) when it moves slot i's state; the
 *                         library takes bits with an atomic exchange.
 *                         Bits of free slots may be set; ignore them.
 *                         Rounded up to whole pages
 *   UMCG_MMAP_SUMMARY_OFF the summary: bit (w % 64) of __u64 word (w / 64)
 *                         is set by the kernel (an atomic OR) after it set
 *                         a bit in event word w.  A reader takes a
 *                         summary word with an atomic exchange, then the
 *                         event words its bits name: a bit set meanwhile
 *                         sets its summary bit again, so none is lost
 *                         (a summary bit may name an empty word).  One
 *                         summary word covers 4096 slots.  One page
 */
#define UMCG_MMAP_TASKS_OFF	0ULL
#define UMCG_MMAP_TASKS_SIZE(max_tasks, page_size) \
	((((__u64)(max_tasks) * sizeof(struct umcg_task)) + (page_size) - 1) / \
	 (page_size) * (page_size))
#define UMCG_MMAP_EVENTS_OFF(max_tasks, page_size) \
	UMCG_MMAP_TASKS_SIZE(max_tasks, page_size)
#define UMCG_MMAP_EVENTS_SIZE(max_tasks, page_size) \
	(((((__u64)(max_tasks) + 63) / 64 * 8) + (page_size) - 1) / \
	 (page_size) * (page_size))
#define UMCG_MMAP_SUMMARY_OFF(max_tasks, page_size) \
	(UMCG_MMAP_EVENTS_OFF(max_tasks, page_size) + \
	 UMCG_MMAP_EVENTS_SIZE(max_tasks, page_size))
#define UMCG_MMAP_SIZE(max_tasks, page_size) \
	(UMCG_MMAP_SUMMARY_OFF(max_tasks, page_size) + (page_size))

/* Flags of struct umcg_register_args. */
#define UMCG_REGISTER_WORKER	(1U << 0)
#define UMCG_REGISTER_SERVER	(1U << 1)

/**
 * struct umcg_register_args - argument of UMCG_IOC_REGISTER
 * @size:       r: sizeof(struct umcg_register_args) as the caller knows it
 * @flags:      r: exactly one of UMCG_REGISTER_WORKER, UMCG_REGISTER_SERVER
 * @server_tid: r: for a worker, the server it starts on; 0 for a server
 * @cpu:        r: for a server, the CPU it manages
 * @task_off:   w: offset of this thread's struct umcg_task in the
 *                 device's mmap
 * @reserved:   must be zero
 *
 * The calling thread registers itself, in the group of its own process.
 * The first REGISTER or mmap through an open file binds that file's group
 * to the calling process; other processes (a forked child, a receiver of
 * the fd, the process after execve) then get -EPERM from REGISTER,
 * UNREGISTER and mmap on it.  A process has at most one group: binding a
 * second file is -EBUSY.  The thread's struct umcg_task is zeroed.
 * Errors: -EBUSY already registered; -EINVAL server with a server_tid,
 * worker with a cpu, or a server's cpu not possible; -ESRCH a worker's
 * server_tid is no registered server of the group; -ENOSPC max_tasks
 * threads registered.  The slot of a thread that exits registered is
 * reclaimed by a later REGISTER once the thread is reaped and its word
 * does not read DONE: a process that reads the exit from the word (the
 * kernel's move to DONE) gives the slot back by storing NEW there after.
 * UNREGISTER of a thread that is not registered: -ENOENT.
 */
struct umcg_register_args {
	__u32	size;
	__u32	flags;
	__u32	server_tid;
	__u32	cpu;
	__u64	task_off;
	__u64	reserved[2];
};
#define UMCG_REGISTER_SIZE_VER0	40

/**
 * struct umcg_unregister_args - argument of UMCG_IOC_UNREGISTER
 * @size:  r: sizeof(struct umcg_unregister_args)
 * @flags: r: must be zero
 */
struct umcg_unregister_args {
	__u32	size;
	__u32	flags;
};
#define UMCG_UNREGISTER_SIZE_VER0	8

/* Flags of struct umcg_wait_args. */
#define UMCG_WAIT_ABSTIME	(1U << 0)	/* @timeout_ns is absolute */

/**
 * struct umcg_wait_args - argument of UMCG_IOC_WAIT
 * @size:       r: sizeof(struct umcg_wait_args)
 * @flags:      r: UMCG_WAIT_*
 * @timeout_ns: r: CLOCK_MONOTONIC timeout, 0 for none
 *
 * Sleeps until this thread's state (bits 0-7 of its struct umcg_task
 * state word) is RUNNING, a signal or the timeout; returns at once if it
 * already is.  A timeout already past times out at once; one above
 * INT64_MAX is none.
 * Errors: -ETIMEDOUT the timeout passed; -EINTR a signal (not restarted);
 * -ENOENT the calling thread is not registered; -EPERM the file's group
 * belongs to another process.
 */
struct umcg_wait_args {
	__u32	size;
	__u32	flags;
	__u64	timeout_ns;
};
#define UMCG_WAIT_SIZE_VER0	16

/**
 * struct umcg_wake_args - argument of UMCG_IOC_WAKE
 * @size:  r: sizeof(struct umcg_wake_args)
 * @flags: r: must be zero
 * @tid:   r: a registered thread of the caller's process
 * @pad:   must be zero
 *
 * Wakes @tid if it sleeps in UMCG_IOC_WAIT; it returns from there only if
 * its state reads RUNNING, so write that first.  A WAKE of a thread that
 * does not wait does nothing (the RUNNING written is the permit).
 * Errors: -ESRCH @tid is no live registered thread of the caller's group;
 * -EPERM the file's group belongs to another process.
 */
struct umcg_wake_args {
	__u32	size;
	__u32	flags;
	__u32	tid;
	__u32	pad;
};
#define UMCG_WAKE_SIZE_VER0	16

/**
 * struct umcg_switch_args - argument of UMCG_IOC_SWITCH
 * @size:       r: sizeof(struct umcg_switch_args)
 * @flags:      r: UMCG_WAIT_* (the caller waits as in UMCG_IOC_WAIT)
 * @next_tid:   r: the thread to run on the caller's core (C4)
 * @pad:        must be zero
 * @timeout_ns: r: as in struct umcg_wait_args
 *
 * UMCG_IOC_WAKE of @next_tid, asking the scheduler to run it on the
 * caller's CPU (best effort: the kernel's WF_CURRENT_CPU), then
 * UMCG_IOC_WAIT of the caller, in one call.  Store RUNNING into the
 * target's word, and a state other than RUNNING into the caller's, first.
 * Errors: first the caller's own (-EPERM, -ENOENT, as WAIT: nothing is
 * woken), then the target's (as WAKE: the caller does not wait), then
 * those of the wait.
 */
struct umcg_switch_args {
	__u32	size;
	__u32	flags;
	__u32	next_tid;
	__u32	pad;
	__u64	timeout_ns;
};
#define UMCG_SWITCH_SIZE_VER0	24

/**
 * struct umcg_preempt_args - argument of UMCG_IOC_PREEMPT
 * @size:  r: sizeof(struct umcg_preempt_args)
 * @flags: r: must be zero
 * @tid:   r: a registered worker of the caller's process
 * @pad:   must be zero
 *
 * Asks @tid to leave its core: at its next return to user space (at once
 * if it runs user code: the CPU is interrupted), if its state word then
 * reads RUNNING with UMCG_TF_PREEMPT set, the kernel clears the flag,
 * moves it to RUNNABLE (an event, see above) and makes it wait to be
 * picked.  Set UMCG_TF_PREEMPT first; a worker found in another state is
 * left alone.  Errors: -ESRCH @tid is no live registered worker of the
 * caller's group; -EPERM the file's group belongs to another process.
 */
struct umcg_preempt_args {
	__u32	size;
	__u32	flags;
	__u32	tid;
	__u32	pad;
};
#define UMCG_PREEMPT_SIZE_VER0	16

#define UMCG_IOC_MAGIC		0xE7

#define UMCG_IOC_GET_INFO	_IOWR(UMCG_IOC_MAGIC, 0x00, struct umcg_info)
#define UMCG_IOC_REGISTER	_IOWR(UMCG_IOC_MAGIC, 0x01, struct umcg_register_args)
#define UMCG_IOC_UNREGISTER	_IOW(UMCG_IOC_MAGIC, 0x02, struct umcg_unregister_args)
#define UMCG_IOC_WAIT		_IOW(UMCG_IOC_MAGIC, 0x03, struct umcg_wait_args)
#define UMCG_IOC_WAKE		_IOW(UMCG_IOC_MAGIC, 0x04, struct umcg_wake_args)
#define UMCG_IOC_SWITCH		_IOW(UMCG_IOC_MAGIC, 0x05, struct umcg_switch_args)
#define UMCG_IOC_PREEMPT	_IOW(UMCG_IOC_MAGIC, 0x06, struct umcg_preempt_args)

#ifdef __cplusplus
#define __UMCG_STATIC_ASSERT(e, m) static_assert(e, m)
#else
#define __UMCG_STATIC_ASSERT(e, m) _Static_assert(e, m)
#endif

__UMCG_STATIC_ASSERT(sizeof(struct umcg_task) == UMCG_TASK_ALIGN,
		     "struct umcg_task fills one cache line");
__UMCG_STATIC_ASSERT(sizeof(struct umcg_info) == UMCG_INFO_SIZE_VER0,
		     "struct umcg_info VER0 layout");
__UMCG_STATIC_ASSERT(sizeof(struct umcg_register_args) == UMCG_REGISTER_SIZE_VER0,
		     "struct umcg_register_args VER0 layout");
__UMCG_STATIC_ASSERT(sizeof(struct umcg_unregister_args) == UMCG_UNREGISTER_SIZE_VER0,
		     "struct umcg_unregister_args VER0 layout");
__UMCG_STATIC_ASSERT(sizeof(struct umcg_wait_args) == UMCG_WAIT_SIZE_VER0,
		     "struct umcg_wait_args VER0 layout");
__UMCG_STATIC_ASSERT(sizeof(struct umcg_wake_args) == UMCG_WAKE_SIZE_VER0,
		     "struct umcg_wake_args VER0 layout");
__UMCG_STATIC_ASSERT(sizeof(struct umcg_switch_args) == UMCG_SWITCH_SIZE_VER0,
		     "struct umcg_switch_args VER0 layout");
__UMCG_STATIC_ASSERT(sizeof(struct umcg_preempt_args) == UMCG_PREEMPT_SIZE_VER0,
		     "struct umcg_preempt_args VER0 layout");

#endif /* _UAPI_UMCG_H */
