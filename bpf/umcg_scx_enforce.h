/* SPDX-License-Identifier: GPL-2.0 */
/*
 * umcg_scx_enforce.h - the enforcing part of the umcg sched_ext scheduler
 * (umcg_enforce.bpf.h) as its user space sees it: the layout of the shared
 * area it publishes state words into, and the arguments of its commands,
 * the SEC("syscall") programs a thread runs with BPF_PROG_TEST_RUN.
 *
 * Included on both sides, like umcg_scx.h: in BPF after vmlinux.h and
 * uapi/umcg.h, in user space after <uapi/umcg.h>.  Used by bpf/, its
 * tests, and libumcg's scx backend (libumcg/src/backend_scx.c), which runs
 * the programs through their pins (scx_pin.h).
 */
#ifndef UMCG_SCX_ENFORCE_H
#define UMCG_SCX_ENFORCE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Limits of one scheduler instance (all processes together). */
#define UMCG_SCX_MAX_TASKS	4096	/* registered threads, power of 2 */
#define UMCG_SCX_MAX_GROUPS	16	/* registered processes, power of 2 */
#define UMCG_SCX_MAX_CPUS	64	/* CPUs a server can manage, power of 2 */
#define UMCG_SCX_EVENT_WORDS	(UMCG_SCX_MAX_TASKS / 64)

/* User DSQs besides UMCG_SCX_DSQ_FIFO (umcg_scx.h), created in ops.init. */
#define UMCG_SCX_DSQ_SERVER(cpu)	(0x100ULL + (cpu))  /* held servers of a CPU */
#define UMCG_SCX_DSQ_WORKER(cpu)	(0x200ULL + (cpu))  /* a CPU's preempted worker */
#define UMCG_SCX_DSQ_GROUP(g)		(0x300ULL + (g))    /* a group's held workers */

/*
 * The doorbell: BPF_MAP_TYPE_RINGBUF "wake", pinned 0600.  The scheduler
 * writes a record (the CPU whose server has news, a __u64) with
 * BPF_RB_FORCE_WAKEUP whenever a server registered with
 * UMCG_SCX_REGISTER_DOORBELL has news: a worker blocked, a worker woke and
 * is held, umcg_poke, a worker exited.  Such servers sleep in poll() on the
 * ring's descriptor, in the kernel, where the watchdog does not look, and
 * drain the ring (consumer position := producer position) before they look
 * for news.  Every record wakes every sleeping server: a server that finds
 * nothing for itself sleeps again.
 */
#define UMCG_SCX_WAKE_RING_SZ	(64 * 1024)

/* A held server runs at least this often: well under the watchdog. */
#define UMCG_SCX_HEARTBEAT_NS	(1000ULL * 1000 * 1000)
/* A held worker is released (late C3) after this long. */
#define UMCG_SCX_HOLD_MAX_NS	(2000ULL * 1000 * 1000)
/* Period of the timer that checks the two above. */
#define UMCG_SCX_TIMER_NS	(200ULL * 1000 * 1000)

/**
 * struct umcg_scx_shared - value (key 0) of the BPF_F_MMAPABLE ARRAY
 * "shared", mapped read-only by processes
 * @task:   one struct umcg_task per slot (uapi/umcg.h); the scheduler
 *          writes @state, @server_tid, @cpu, @blocked_ns, @woken_ns, @seq
 *          and reserved[UMCG_SCX_TASK_BEGIN], the begin counter: every
 *          publish adds one to it (atomic) before it writes the slot's
 *          fields and one to @seq (atomic) after, so a reader that reads
 *          @seq, then the fields, then begin, and finds begin equal to
 *          that @seq, read the fields of that one publish, whole.  (Seq
 *          alone cannot tell: a publish in progress has written its
 *          word but not yet moved @seq, and the word would be taken for
 *          the move before it.)
 * @events: per group, one bit per slot, set (atomic OR, after the state
 *          word and @seq) when the scheduler moves that slot's state
 *
 * Read-only for processes, so nothing a process does to it can reach the
 * scheduler; the library learns its slot and group from register.  Events
 * cannot be cleared by the library yet (the map is read-only): it compares
 * @seq instead.
 */
#define UMCG_SCX_TASK_BEGIN	0	/* index into umcg_task.reserved */

struct umcg_scx_shared {
	struct umcg_task	task[UMCG_SCX_MAX_TASKS];
	__u64			events[UMCG_SCX_MAX_GROUPS][UMCG_SCX_EVENT_WORDS];
};

/**
 * struct umcg_scx_register_args - context of the "umcg_register" program
 * @flags:      r: exactly one of UMCG_REGISTER_WORKER, UMCG_REGISTER_SERVER;
 *              a server may add UMCG_SCX_REGISTER_DOORBELL
 * @server_tid: r: worker: a registered server of the caller's process;
 *              server: 0
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
 * of the caller's process; -EBUSY the caller is registered; -ENOSPC no slot
 * or group left; -ENOMEM no task storage.  UMCG_SCX_REGISTER_SLICE or
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
_Static_assert(sizeof(struct umcg_scx_register_args) == 56,
	       "struct umcg_scx_register_args is ABI");

/**
 * struct umcg_scx_pick_args - context of the "umcg_pick" program
 * @tid:   r: a worker of the caller's process
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
 * no worker of the caller's process (with UMCG_SCX_PICK_WOKEN: or it is
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

#define UMCG_SCX_PICK_WOKEN	(1U << 1)	/* the caller just woke @tid */
#define UMCG_SCX_PICK_SEQ	(1U << 2)	/* only while seq reads @pad */

/*
 * With UMCG_REGISTER_SERVER: the server sleeps in the kernel (poll() on the
 * doorbell ring, see UMCG_SCX_WAKE_RING_SZ) when it has nothing to do,
 * instead of being held runnable in sched_yield(): the scheduler rings the
 * doorbell for its news and never holds it.
 */
#define UMCG_SCX_REGISTER_DOORBELL	(1U << 8)

/*
 * With UMCG_REGISTER_WORKER: the worker's group has a time slice (C6),
 * @slice_ns.  The worker's sched_ext slice is that slice; when the kernel
 * finds it used up on a tick (ops.tick: time on a CPU since the worker was
 * last queued, not wall time) the worker is preempted: published
 * UMCG_TASK_RUNNABLE | UMCG_TF_PREEMPT (no new blocked_ns), held like a
 * woken worker until picked, its server's doorbell rung.  Not while the
 * word at @in_lib reads non-zero, nor while fair-class threads are queued
 * on its CPU with nothing else of sched_ext's to run there (a hold would
 * stop the kernel's deadline server for sched_ext, see umcg_enforce.bpf.h
 * c.): then it runs on for another slice, and its slot is published
 * UMCG_TASK_RUNNING | UMCG_TF_PREEMPT with a new seq, a request to yield
 * that the worker honours itself (once per seq) when it leaves the code
 * @in_lib guards.
 */
#define UMCG_SCX_REGISTER_SLICE		(1U << 9)
/*
 * With UMCG_REGISTER_WORKER: a sleep that begins while the word at @in_lib
 * reads non-zero (read in ops.quiescent, which runs as the worker) is
 * published BLOCKED with a new seq and cpu but the blocked_ns of the
 * worker's last block (it is no block), and its wake-up is not held: the worker is
 * published RUNNING (new seq) and runs on the CPU it wakes on.  The worker
 * may hold locks there that its server needs, kernel ones included (a
 * page fault that reads a file page holds the page's lock: a server
 * faulting on the same page waited for a held worker until the hold
 * timer released it); and such a sleep is no block for the library.
 */
#define UMCG_SCX_REGISTER_IN_LIB	(1U << 10)
/* The longest slice: well under UMCG_SCX_HOLD_MAX_NS and the watchdog. */
#define UMCG_SCX_SLICE_MAX_NS		(1000ULL * 1000 * 1000)

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
 * Runs that server soon: a held one (in sched_yield()) is run by its CPU's
 * next dispatch (need_server) and the CPU is kicked (SCX_KICK_PREEMPT); a
 * doorbell server (UMCG_SCX_REGISTER_DOORBELL) asleep is woken by the
 * doorbell.  For a server that another thread of its process has news
 * for.  Return
 * value: 0; -EINVAL bad fields or @cpu; -ESRCH no server of the caller's
 * process serves @cpu.
 */
struct umcg_scx_poke_args {
	__u32	cpu;
	__u32	flags;
	__u64	reserved;
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
#define UMCG_SCX_NR_ENF_STATS		19

struct umcg_scx_enf_stats {
	__u64	cnt[UMCG_SCX_NR_ENF_STATS];
};

#endif /* UMCG_SCX_ENFORCE_H */
