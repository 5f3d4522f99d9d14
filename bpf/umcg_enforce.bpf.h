/* SPDX-License-Identifier: GPL-2.0 */
/*
 * umcg_enforce.bpf.h - the enforcer of the umcg sched_ext scheduler: the
 * first slice of Documentation/scx.rst, included by umcg.bpf.c when built
 * with UMCG_SCX_ENFORCE.  Threads that never register are scheduled exactly
 * as before (the FIFO of umcg.bpf.c); every hook below returns "not mine"
 * for them after one task-storage lookup.
 *
 * a. Registration.  A thread runs the SEC("syscall") program umcg_register
 *    with BPF_PROG_TEST_RUN.  It runs in the caller's context, so
 *    bpf_get_current_pid_tgid() says who asks (kernel ids, p.): the
 *    caller registers itself, in the group of its own process (tgid), as
 *    a worker or as a server of one CPU.  Its authoritative state is task
 *    storage (enf_tasks, never visible to user space); a slot (slots,
 *    kernel-only) and a group (groups, kernel-only) are claimed with
 *    compare-and-swap.  The scheduler publishes the slot's struct
 *    umcg_task into "shared", an mmapable array that processes map
 *    read-only, and sets the slot's bit in the group's event bitmap on
 *    every move it makes.
 *
 * b. Block.  quiescent(p, SCX_DEQ_SLEEP) of a RUNNING worker: publish
 *    BLOCKED (cpu, blocked_ns, seq, event) and set need_server on that CPU,
 *    whose next ops.dispatch (it comes at once: the CPU lost its task)
 *    moves the CPU's held server to its local DSQ.  No user-space round
 *    trip.
 *
 * c. Servers are SCHED_EXT.  A bell server (registered with
 *    UMCG_SCX_REGISTER_BELL, as libumcg's are where the kernel has
 *    bpf_task_work_schedule_signal()) sleeps in the kernel when it has
 *    nothing to do: in a futex wait on its bell, its slot's word in
 *    shared.bell.  Its group's news for its CPU rings it (enf_bell(): the
 *    group's bell_slot[cpu] names it; one atomic add to the word, then a
 *    TWA_SIGNAL task work for that one task, which ends its wait; the
 *    restarted wait sees the word moved).  Nothing of another process
 *    reaches it: the task is found by its slot's kernel tid and checked
 *    against its task storage.  A doorbell server (UMCG_SCX_REGISTER_
 *    DOORBELL: kernels without that kfunc) sleeps in poll() on the
 *    ringbuf "wake" instead, which a ring wakes with every other doorbell
 *    server of the machine.  enf_server_news() rings (the ring's wake-up
 *    is deferred to irq_work, as the task work is, so any context may
 *    ring) where a held server gets need_server below, and on a worker's
 *    exit; not for a sleep inside libumcg (d.), which publishes no block.
 *    Woken, it goes to its CPU's local DSQ; it is never held.
 *    This is the design, and why: the watchdog (check_rq_for_timeouts())
 *    ejects the scheduler when a task on a runqueue's runnable_list has
 *    not run for timeout_ms since it became runnable (runnable_at; only
 *    running resets it, a dispatch to a local DSQ does not).  In partial
 *    mode sched_ext runs below the fair class, and only the deadline
 *    server rq->ext_server (50 ms per 1 s) runs sched_ext tasks on a CPU
 *    that fair-class threads keep busy.  That server stops when its pick
 *    finds nothing to run (a held thread is not dispatched) or after the
 *    CPU idled for a period, and it is started again only when the
 *    runqueue's count of sched_ext tasks goes from 0 to 1
 *    (enqueue_task_scx()).  A thread held runnable keeps that count above
 *    0: once the server stopped, a busy fair-class thread starves every
 *    sched_ext task of that CPU until the watchdog fires.  Seen: a held
 *    server "failed to run for 5.7 s" while c2_contention spun plain
 *    threads on every CPU, and 117 newly registered workers queued behind
 *    a fair-class thread that was spawning them.  Servers that sleep leave
 *    the count, so it returns to 0 whenever the CPU has nothing of ours
 *    to run.
 *
 *    A server registered without the doorbell (the raw guest tests) never
 *    sleeps for the scheduler: whenever one
 *    is enqueued (it yielded, its slice ended) it is inserted into
 *    UMCG_SCX_DSQ_SERVER(its cpu), runnable but held.  A server that wakes
 *    from a sleep of its own (a lock, a futex) was busy and goes to its
 *    CPU's local DSQ.  dispatch runs it
 *    when need_server is set: its CPU's worker blocked, a worker it serves
 *    woke (news), or the heartbeat timer found it held for
 *    UMCG_SCX_HEARTBEAT_NS (the watchdog must never see it wait).  The
 *    heartbeat and umcg_poke (k) move it to the head of its CPU's local
 *    DSQ themselves (enf_run_server_now()): a CPU whose local DSQ never
 *    runs empty, because workers hand it to each other with umcg_pick,
 *    never calls dispatch.
 *
 * d. Wake holding.  select_cpu of a BLOCKED worker inserts nothing, so the
 *    wake-up reaches runnable(p, SCX_ENQ_WAKEUP): publish RUNNABLE
 *    (woken_ns, seq, event), mark it held and poke its server's CPU; then
 *    enqueue inserts it into UMCG_SCX_DSQ_GROUP(group), which no CPU
 *    consumes.  It runs no user code until picked.  Not a worker registered
 *    with UMCG_SCX_REGISTER_IN_LIB whose sleep began inside libumcg
 *    (quiescent, running as the worker, read its in_lib word non-zero):
 *    its wake-up is published RUNNING and runs on; it may hold what its
 *    server needs (a page fault holds the file page's lock).
 *
 * e. Pick.  The SEC("syscall") program umcg_pick(tid, cpu), run by any
 *    thread of the worker's process, finds the held worker in its group's
 *    DSQ, moves it to SCX_DSQ_LOCAL_ON | cpu (scx_bpf_dsq_move, allowed in
 *    syscall programs), kicks the CPU and publishes RUNNING.  For a worker
 *    that is not held, see i.
 *
 * f. Liveness.  A timer (UMCG_SCX_TIMER_NS) asks for the heartbeat of
 *    servers held too long and releases every worker held longer than
 *    UMCG_SCX_HOLD_MAX_NS (less than half the default watchdog) itself:
 *    to the local DSQ of the CPU it is on, published RUNNING: a late C3,
 *    never an ejection (enf_release_expired()).  Not through a dispatch it
 *    kicks: a kick does not reach a CPU that runs a fair-class task, and a
 *    global flag taken by another CPU's dispatch left the worker held
 *    (seen: a worker held 5.8 s with its CPU idle).
 *
 * g. A RUNNING worker that is preempted or whose slice ends (without a
 *    group time slice, see l.) goes to
 *    UMCG_SCX_DSQ_WORKER(cpu), not to the local DSQ, so that its CPU still
 *    calls dispatch and a due server heartbeat comes first; if nothing
 *    else wants the CPU (SCX_ENQ_LAST) it goes straight back to the local
 *    DSQ.  The scheduler sets SCX_OPS_ENQ_LAST for the servers' sake:
 *    without it the kernel keeps running a server that yields with
 *    nothing else queued, and a held server would in fact spin.  Tasks
 *    that are not ours get SCX_ENQ_LAST enqueues inserted into the local
 *    DSQ, which is what the kernel did for them without the flag.  A
 *    worker queued in UMCG_SCX_DSQ_WORKER(cpu) gets its CPU kicked (only
 *    that CPU's dispatch takes it), and dispatch takes threads that are
 *    not ours (the FIFO) before it, so that a spinning worker cannot keep
 *    them off the CPU.  A RUNNING worker that wakes up (a sleep the
 *    scheduler did not take for a block) goes to the local DSQ, or
 *    behind what waits for its CPU's dispatch (enf_wake_behind()).  A
 *    worker picked (e, i) for a CPU whose server is due (need_server)
 *    goes to that CPU's worker DSQ instead of its local DSQ, so that
 *    dispatch runs the server first (enf_worker_dsq()).
 *
 * h. Exit.  exit_task of a registered thread publishes DONE (an event) and
 *    frees its slot; the group is freed with its last thread.
 *
 * i. Pick of a worker that is not held.  libumcg's scx backend hands a
 *    core over by making the worker's own word RUNNING, futex-waking it,
 *    then running umcg_pick: the wake-up may reach runnable() after the
 *    pick.  So the worker's state is mirrored in its slot (enf_slot.state,
 *    which pick can reach without the task), and pick and runnable()
 *    settle who moves it off BLOCKED with a compare-and-swap there.  Pick
 *    of a BLOCKED worker stores the CPU in pick_cpu, wins the CAS to
 *    RUNNING and publishes RUNNING; runnable() then loses its CAS and does
 *    not hold the worker; select_cpu prefers that CPU and enqueue inserts
 *    it into SCX_DSQ_LOCAL_ON | cpu (if its affinity allows: else the
 *    local DSQ of the CPU it woke on), consuming pick_cpu.  If runnable()
 *    wins, pick takes pick_cpu back and moves the held worker as in e.
 *    Pick of a worker the scheduler sees RUNNING does nothing: the caller's
 *    wake-up found it before it slept (then it does not sleep).  All this
 *    only with UMCG_SCX_PICK_WOKEN ("I just woke it from the sleep it was
 *    in when its slot's seq read args->pad"), and only while the slot's
 *    seq still reads that: a worker that woke by itself and slept again
 *    (a block the caller must not end) is left alone.  Otherwise pick
 *    moves held workers only (-EAGAIN for any other).  A pick's
 *    caller on the target CPU is not kicked: it yields or sleeps next.
 *
 * j. Unregister.  The SEC("syscall") program umcg_unregister: the caller
 *    leaves (published NEW, slot and group reference freed); it should
 *    then switch itself back to SCHED_OTHER.
 *
 * k. Poke.  The SEC("syscall") program umcg_poke(cpu) runs the held server
 *    of @cpu, which must be a server of the caller's process: need_server
 *    and a preempting kick.  need_server stays set until dispatch finds the
 *    server held, so a poke that comes while the server runs is not lost
 *    when the server yields right after it looked.
 *
 * l. Time slice (C6).  A worker registered with UMCG_SCX_REGISTER_SLICE
 *    gets its group's slice at every insert; ops.tick marks it when it
 *    finds that slice used up (slice_out), and as the worker leaves the
 *    CPU, in its own context (the dispatch it calls, enf_keep_prev(), and
 *    the enqueue that puts it back), it is preempted: published RUNNABLE |
 *    UMCG_TF_PREEMPT (no new blocked_ns) and held as in d., also with
 *    SCX_ENQ_LAST; its server hears of it as of a wake-up.  Not while its
 *    in_lib word (bpf_probe_read_user(), as current) reads non-zero, nor
 *    when fair-class tasks are queued and dispatch found nothing else (a
 *    hold there would stop the deadline server, see c.): it runs on for
 *    another slice, published RUNNING | UMCG_TF_PREEMPT with a new seq,
 *    which asks it to yield when it leaves the library (enf_slice_end()).
 *    UMCG_TF_PREEMPT is in the published word only, never in t->state
 *    nor the slot's mirror.
 *
 * m. Faults and other users.  Nothing a thread's owner (or root) may do to
 *    it can eject the scheduler for the machine.  Every insert or move to
 *    SCX_DSQ_LOCAL_ON first asks enf_cpu_ok(): the CPU in the task's
 *    affinity (cpus_ptr: sched_setaffinity(), a cpuset change), no move of
 *    a migration-disabled task off its CPU, the CPU online (n.).  Else:
 *    a server runs where it is (SCX_DSQ_LOCAL), never held, its slot
 *    flagged UMCG_SCX_TF_EVICTED until it is queued on its CPU again; a
 *    held worker released or picked goes to the global DSQ (any CPU it
 *    may run on); pick of a worker for a CPU outside its affinity stays
 *    -EINVAL.  A woken worker that exits, has a fatal signal pending or is
 *    in execve() is not held (enf_dying(), published RUNNING).  A worker
 *    whose mm is no longer the one it registered with (execve(); not
 *    exit_mm(), see enf_task_of()) is dropped as at exit (h., DONE).
 *
 * n. CPU hotplug.  ops.cpu_online/cpu_offline mark the CPU (enf_cpus
 *    offline) and ring its servers' doorbell: the kernel exits a scheduler
 *    without them.  The kernel moves what was queued on an offline CPU to
 *    online ones (our enqueue decides again there); its server is evicted
 *    (m.) until the CPU is back.
 *
 * p. Thread ids and PID namespaces.  Everything the scheduler keeps names
 *    threads and processes by their kernel ids, those of the initial PID
 *    namespace: task->pid and task->tgid, bpf_get_current_pid_tgid() of a
 *    command's caller, enf_task.tid, enf_slot.tid and tgid, enf_group.tgid.
 *    User space names them as it sees them, gettid() in its own namespace:
 *    the tids in the commands' arguments (register's server_tid, pick's
 *    tid) are translated once, on entry, in the caller's namespace
 *    (enf_tid_of(): bpf_task_from_vpid(), then the task's tgid against the
 *    caller's), and an id that names no thread of the caller's process
 *    there is -ESRCH.  What goes back is in the caller's namespace too:
 *    register returns no id, and the server_tid it publishes in the
 *    worker's slot is the one the worker passed.  A process's threads all
 *    share one PID namespace, so the ids of its group mean the same to
 *    every thread of it.
 *
 * Limits.  UMCG_SCX_MAX_CPUS: a server registers only for a CPU below it
 * (-EINVAL), and the load fails (ops.init -E2BIG) on a machine with more
 * possible CPUs, rather than leave those CPUs unenforced.
 *
 * Not yet: switch (fused), park, the policy queueing the
 * next worker per core, clearing events (the map is read-only: the
 * library compares seq), pinned programs for unprivileged processes (the
 * program pins are root-only, scx_pin.h).
 */
#ifndef UMCG_ENFORCE_BPF_H
#define UMCG_ENFORCE_BPF_H

#include <uapi/umcg_scx.h>

/* User DSQs besides UMCG_SCX_DSQ_FIFO, created in ops.init. */
#define UMCG_SCX_DSQ_SERVER(cpu)	(0x100ULL + (cpu))  /* held servers of a CPU */
#define UMCG_SCX_DSQ_WORKER(cpu)	(0x200ULL + (cpu))  /* a CPU's preempted worker */
#define UMCG_SCX_DSQ_GROUP(g)		(0x300ULL + (g))    /* a group's held workers */

/* Period of the timer that checks heartbeats and hold times (f). */
#define UMCG_SCX_TIMER_NS	(200ULL * 1000 * 1000)

#define ENF_ROLE_WORKER		1
#define ENF_ROLE_SERVER		2

/* Per-thread state: authoritative, kernel-only. */
struct enf_task {
	u32	role;		/* ENF_ROLE_*, 0: not registered */
	u32	group;		/* index into groups, events */
	u32	slot;		/* index into slots, shared.task */
	u32	state;		/* UMCG_TASK_* as published */
	u32	cpu;		/* server: its CPU; worker: its server's CPU */
	u32	held;		/* worker: in its group DSQ, waiting for pick */
	u32	tid;		/* the tid it registered with: its slot's key */
	u32	doorbell;	/* server: sleeps, woken by the doorbell */
	u64	held_ns;	/* worker: when it was held */
	u64	slice_ns;	/* worker: its group's time slice; 0: none */
	u64	in_lib;		/* worker: address of its in-library word */
	u32	slice_out;	/* worker: a tick found its slice used up */
	u16	lib_nohold;	/* worker: UMCG_SCX_REGISTER_IN_LIB */
	u16	lib_sleep;	/* worker: asleep since in_lib read non-zero */
	u64	mm;		/* its address space at register (m.) */
	u32	evicted;	/* server: its CPU was out of its reach (m.) */
	u32	bell;		/* server: sleeps on its own bell (c.) */
};

struct enf_slot {
	u32	tid;		/* 0: free */
	u32	tgid;
	u32	role;
	u32	cpu;
	/*
	 * Worker: its state as published, where umcg_pick (which cannot
	 * reach the task's storage) and runnable() settle who moves it off
	 * BLOCKED, by compare-and-swap (see i. in the design comment).
	 */
	u32	state;
	u32	pick_cpu;	/* picked while asleep: its CPU + 1; 0: none */
	u32	group;		/* its group: the DSQ pick looks in */
	u32	pad;
};

struct enf_group {
	u32	tgid;		/* 0: free */
	u32	nr;		/* registered threads */
	/* Per CPU: slot + 1 of the group's bell server of that CPU, 0: none. */
	u32	bell_slot[UMCG_SCX_MAX_CPUS];
};

/* A bell server's wake-up (c.), by slot: only the task work lives here. */
struct enf_bell {
	struct bpf_task_work	tw;
};

struct enf_cpu {
	u64	server_ns;	/* last time dispatch ran the held server */
	u32	need_server;	/* dispatch: run the held server next */
	u32	nr_held;	/* registered servers held in sched_yield() */
	u32	nr_doorbell;	/* registered servers woken by the doorbell */
	u32	offline;	/* ops.cpu_offline came last (n.) */
	u64	dispatch_ns;	/* last time this CPU called ops.dispatch */
};

struct enf_timer {
	struct bpf_timer	timer;
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct enf_task);
} enf_tasks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UMCG_SCX_MAX_TASKS);
	__type(key, u32);
	__type(value, struct enf_slot);
} slots SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UMCG_SCX_MAX_GROUPS);
	__type(key, u32);
	__type(value, struct enf_group);
} groups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UMCG_SCX_MAX_CPUS);
	__type(key, u32);
	__type(value, struct enf_cpu);
} enf_cpus SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, u32);
	__type(value, struct umcg_scx_shared);
} shared SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct umcg_scx_enf_stats);
} enf_stats SEC(".maps");

/* The doorbell of servers that sleep (c, UMCG_SCX_WAKE_RING_SZ). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, UMCG_SCX_WAKE_RING_SZ);
} wake SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, UMCG_SCX_MAX_TASKS);
	__type(key, u32);
	__type(value, struct enf_bell);
} bells SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct enf_timer);
} enf_timer SEC(".maps");

/* Set by ops.exit: the timer stops re-arming. */
__u32 enf_stopped;

/*
 * The bound of the searches by tid over slots (register, pick, poke), so
 * that they cost the slots in use, not UMCG_SCX_MAX_TASKS: one word, its
 * low 32 bits the bound ("hwm", at most UMCG_SCX_MAX_TASKS), its high 32
 * bits a generation that every raise bumps.
 *
 * Invariant: a search for a tid that another thread learnt from a
 * register that returned covers that tid's slot while the registration
 * lasts.  Slots are claimed lowest free first (enf_slot_get()), so hwm
 * stays near the number of threads registered.
 *
 * Who changes it:
 *  - a register, after claiming slot i (CAS of its tid from 0: R1), raises
 *    hwm to at least i + 1 and bumps the generation, with a CAS (R2),
 *    before it returns; always, even when hwm is above i already;
 *  - whoever frees a slot (unregister, enf_drop(), a register giving its
 *    slot back), after storing its tid 0 (F1), lowers hwm past every free
 *    slot at the top (enf_slot_shrink()): it reads the word with an
 *    atomic fetch-or of 0 (F2), reads the slots below its hwm downwards
 *    (F3) and stores the lower hwm with the generation it read, with a CAS
 *    from the word it read (F4); retried from F2 when that fails.
 * Any number of each may run at once, on any CPU, in hooks and commands;
 * the searches only READ_ONCE() the word.  The BPF atomics that return a
 * value (CAS, fetch-or) are full barriers, which is what the reasoning
 * below needs (the atomics without a result are not).
 *
 * A shrinker that lowers hwm to n <= i while slot i is claimed would break
 * the invariant.  Its F4 succeeded, so the word did not change between
 * its F2 and F4, and a register of slot i did its R2 either
 *  - before F2: then R1 is before F2 too, and F3 comes after F2 (barriers
 *    at R2 and F2), so F3 sees slot i claimed and stops above it;
 *  - after F4: R2 reads a word at or after F4 and raises hwm past i;
 *  - between F2 and F4: it changed the word (the generation) and F4
 *    fails; a generation cannot come round again within one shrink.
 * Shrinkers only lower hwm within a generation, so none of them brings
 * back a word that another one read.  Two slots freed at once, the top
 * one and one below it, do not leave hwm above the lower one: each freer
 * does F1, a barrier (F2), then F3; of the two, at least one sees the
 * other's F1 and lowers hwm past both.
 */
__u64 enf_slot_hwm;

#define ENF_HWM(word)	((u32)(word))
#define ENF_HWM_GEN	(1ULL << 32)

/* The bound of a search over claimed slots. */
static __always_inline int enf_slots_used(void)
{
	u32 n = ENF_HWM(READ_ONCE(enf_slot_hwm));

	return n < UMCG_SCX_MAX_TASKS ? (int)n : UMCG_SCX_MAX_TASKS;
}

/*
 * Lower hwm past every free slot at the top, after a slot was freed (its
 * tid stored 0): F2 to F4 of enf_slot_hwm.  Each failed CAS saw another
 * raise or shrink; after UMCG_SCX_MAX_TASKS of them hwm stays where it
 * is, which only costs the searches time.  Not inlined: it is called from
 * enf_drop(), which every hook inlines.
 */
static __attribute__((noinline)) int enf_slot_shrink(void)
{
	u64 old, new;
	u32 top, n;
	int k, i;

	bpf_for(k, 0, UMCG_SCX_MAX_TASKS) {
		old = __sync_fetch_and_or(&enf_slot_hwm, 0);
		top = ENF_HWM(old);
		if (top > UMCG_SCX_MAX_TASKS)
			top = UMCG_SCX_MAX_TASKS;
		n = top;
		bpf_for(i, 0, top) {
			u32 idx = top - 1 - i;
			struct enf_slot *s = bpf_map_lookup_elem(&slots, &idx);

			if (!s || READ_ONCE(s->tid))
				break;
			n = idx;
		}
		if (n >= ENF_HWM(old))
			return 0;
		new = (old & ~(ENF_HWM_GEN - 1)) | n;
		if (__sync_val_compare_and_swap(&enf_slot_hwm, old, new) == old)
			return 0;
	}
	return 0;
}

static __always_inline void enf_stat(u32 idx)
{
	u32 zero = 0;
	struct umcg_scx_enf_stats *s = bpf_map_lookup_elem(&enf_stats, &zero);

	if (s && idx < UMCG_SCX_NR_ENF_STATS)
		s->cnt[idx]++;
}

/* @p's registration as stored, whatever became of @p since (see enf_task_of()). */
static __always_inline struct enf_task *enf_task_get(struct task_struct *p)
{
	struct enf_task *t = bpf_task_storage_get(&enf_tasks, p, 0, 0);

	return t && t->role ? t : NULL;
}

static __always_inline struct enf_cpu *enf_cpu_of(u32 cpu)
{
	return bpf_map_lookup_elem(&enf_cpus, &cpu);
}

static __always_inline struct umcg_scx_shared *enf_shared(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&shared, &zero);
}

static __always_inline struct enf_slot *enf_slot_of(struct enf_task *t)
{
	u32 idx = t->slot;

	return bpf_map_lookup_elem(&slots, &idx);
}

/*
 * Open a publish of @slot: its begin counter (UMCG_SCX_TASK_BEGIN) goes one
 * ahead of seq before any field of the slot is written; enf_announce()
 * closes it.  Atomic, so a full barrier, and concurrent publishes of one
 * slot (a hook and umcg_pick) each count: begin reads seq again only when
 * every publish that began has been announced.
 */
static __always_inline void enf_publish_begin(struct umcg_scx_shared *sh, u32 slot)
{
	__sync_fetch_and_add(&sh->task[slot & (UMCG_SCX_MAX_TASKS - 1)]
				      .reserved[UMCG_SCX_TASK_BEGIN], 1);
}

/*
 * Close the publish of @slot opened by enf_publish_begin(): bump its seq
 * and set its bit in group @g's bitmap, after its fields.
 */
static __always_inline void enf_announce(struct umcg_scx_shared *sh, u32 slot,
					 u32 g)
{
	slot &= UMCG_SCX_MAX_TASKS - 1;
	g &= UMCG_SCX_MAX_GROUPS - 1;
	__sync_fetch_and_add(&sh->task[slot].seq, 1);
	__sync_fetch_and_or(&sh->events[g][slot / 64], 1ULL << (slot % 64));
}

/*
 * Publish @t's new @state into its slot: begin (enf_publish_begin()), the
 * word, then the timestamp, then seq (atomic: a full barrier), then the
 * group's event bit (atomic OR, after everything it announces).
 */
#define ENF_TS_NONE	0
#define ENF_TS_BLOCKED	1	/* also set @cpu */
#define ENF_TS_WOKEN	2
#define ENF_TS_CPU	3	/* @cpu only: a sleep that is no block */

static __always_inline void enf_publish(struct enf_task *t, u32 state,
					int which_ns, u32 cpu)
{
	struct umcg_scx_shared *sh = enf_shared();
	u32 slot = t->slot & (UMCG_SCX_MAX_TASKS - 1);
	u32 g = t->group & (UMCG_SCX_MAX_GROUPS - 1);
	struct enf_slot *s = enf_slot_of(t);
	struct umcg_task *ut;

	/* UMCG_TF_PREEMPT (time slice, see UMCG_SCX_REGISTER_SLICE): published only. */
	t->state = state & UMCG_TASK_STATE_MASK;
	if (s)
		WRITE_ONCE(s->state, state & UMCG_TASK_STATE_MASK);
	if (!sh)
		return;
	ut = &sh->task[slot];
	enf_publish_begin(sh, slot);
	WRITE_ONCE(ut->state, state);
	if (which_ns == ENF_TS_BLOCKED) {
		ut->cpu = cpu;
		ut->blocked_ns = bpf_ktime_get_ns();
	} else if (which_ns == ENF_TS_CPU) {
		ut->cpu = cpu;
	} else if (which_ns == ENF_TS_WOKEN) {
		ut->woken_ns = bpf_ktime_get_ns();
	}
	enf_announce(sh, slot, g);
}

/*
 * May @p go to @cpu's local DSQ (m.)?  The kernel ejects the scheduler, for
 * every process, when an insert or move to SCX_DSQ_LOCAL_ON names a CPU
 * outside the task's affinity (cpus_ptr) or moves a migration-disabled
 * task to another CPU (task_can_run_on_remote_rq()).  An offline CPU
 * (n.) is no error for the kernel, which falls back to the global DSQ,
 * but is no CPU to run on either.  Stable under @p's rq lock (hooks); for
 * a move from a timer or syscall program, an affinity change since this
 * check dequeued @p, and the move fails (the iterator lost it).
 */
static __always_inline bool enf_cpu_ok(struct task_struct *p, u32 cpu)
{
	struct enf_cpu *c;

	if (cpu >= UMCG_SCX_MAX_CPUS || cpu >= scx_bpf_nr_cpu_ids())
		return false;
	if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr))
		return false;
	if (p->migration_disabled && scx_bpf_task_cpu(p) != (s32)cpu)
		return false;
	c = enf_cpu_of(cpu);
	return !c || !READ_ONCE(c->offline);
}

/*
 * Server @t could (@evicted false) or could not run on its CPU when it was
 * last queued: published in its slot's UMCG_SCX_TASK_FLAGS word
 * (UMCG_SCX_TF_EVICTED), counted once per change.
 */
static __always_inline void enf_set_evicted(struct enf_task *t, bool evicted)
{
	struct umcg_scx_shared *sh;
	u32 slot = t->slot & (UMCG_SCX_MAX_TASKS - 1);

	if (t->evicted == (u32)evicted)
		return;
	t->evicted = evicted;
	sh = enf_shared();
	if (sh) {
		if (evicted)
			__sync_fetch_and_or(&sh->task[slot].reserved[UMCG_SCX_TASK_FLAGS],
					    UMCG_SCX_TF_EVICTED);
		else
			__sync_fetch_and_and(&sh->task[slot].reserved[UMCG_SCX_TASK_FLAGS],
					     ~UMCG_SCX_TF_EVICTED);
	}
	if (evicted)
		enf_stat(UMCG_SCX_ENF_EVICTED);
}

/*
 * The local DSQ a worker picked for @cpu goes to: @cpu's own, unless its
 * server is due (need_server), which only dispatch runs: then @cpu's
 * worker DSQ, which dispatch takes after the server.
 */
static __always_inline u64 enf_worker_dsq(u32 cpu)
{
	struct enf_cpu *c = enf_cpu_of(cpu);

	if (c && READ_ONCE(c->need_server) && cpu < UMCG_SCX_MAX_CPUS)
		return UMCG_SCX_DSQ_WORKER(cpu);
	return SCX_DSQ_LOCAL_ON | cpu;
}

/* The bell's task work: its wake-up of the server was the point. */
static int enf_bell_cb(struct bpf_map *map, void *key, void *value)
{
	return 0;
}

/*
 * Ring the bell of group @gi's bell server of @cpu, if it has one: add one
 * to its count in the shared area, then, unless it runs, end the sleep it
 * is in with a TWA_SIGNAL task work (queued through irq_work: safe under
 * any rq lock).
 * The server is found by its slot's kernel tid and must still be that
 * group's server of that slot; nothing else wakes.  A task work already on
 * its way (-EBUSY) ends the sleep all the same, and the restarted wait
 * finds the new count.  True if it rang.
 */
static __always_inline bool enf_bell(u32 gi, u32 cpu)
{
	struct enf_group *g = bpf_map_lookup_elem(&groups, &gi);
	struct umcg_scx_shared *sh = enf_shared();
	struct task_struct *p;
	struct enf_bell *b;
	struct enf_slot *s;
	struct enf_task *t;
	u32 slot1, slot, tid;
	bool rang = false;

	if (!g || !sh || cpu >= UMCG_SCX_MAX_CPUS ||
	    !bpf_ksym_exists(bpf_task_work_schedule_signal))
		return false;
	/* The verifier must see the masks (the compiler drops them). */
	barrier_var(cpu);
	slot1 = READ_ONCE(g->bell_slot[cpu & (UMCG_SCX_MAX_CPUS - 1)]);
	if (!slot1)
		return false;
	slot = (slot1 - 1) & (UMCG_SCX_MAX_TASKS - 1);
	s = bpf_map_lookup_elem(&slots, &slot);
	b = bpf_map_lookup_elem(&bells, &slot);
	if (!s || !b)
		return false;
	tid = READ_ONCE(s->tid);
	if (!tid)
		return false;
	p = bpf_task_from_pid(tid);
	if (!p)
		return false;
	t = bpf_task_storage_get(&enf_tasks, p, 0, 0);
	if (t && READ_ONCE(t->role) == ENF_ROLE_SERVER && t->bell &&
	    t->group == gi && t->slot == slot) {
		int ret;

		barrier_var(slot);
		__sync_fetch_and_add(&sh->bell[slot & (UMCG_SCX_MAX_TASKS - 1)], 1);
		enf_stat(UMCG_SCX_ENF_BELL);
		rang = true;
		/*
		 * A server still running (TASK_RUNNING, read after the add's
		 * full barrier) has not set its state for the futex wait,
		 * which it does with a full barrier before the wait compares
		 * the bell: that compare sees the add, no wake-up needed.
		 */
		if (READ_ONCE(p->__state) != 0) {
			ret = bpf_task_work_schedule_signal(p, &b->tw, &bells,
							    enf_bell_cb);
			enf_stat(!ret ? UMCG_SCX_ENF_BELL_WAKE :
				 ret == -EBUSY ? UMCG_SCX_ENF_BELL_PENDING :
						 UMCG_SCX_ENF_BELL_FAILED);
		}
	}
	bpf_task_release(p);
	return rang;
}

/*
 * News for group @gi's server of @cpu: its bell if it has a bell server
 * there, else the doorbell if a doorbell server of @cpu (of any process)
 * sleeps on it.  The doorbell's wake-up itself is deferred by the ring
 * (irq_work), so this is safe under any rq lock.  A full ring loses the
 * record: the servers drain it whenever they wake, and sleep with a
 * timeout (libumcg), so the loss costs time, not a hang.
 */
static __always_inline bool enf_ring(u32 gi, u32 cpu)
{
	struct enf_cpu *c = enf_cpu_of(cpu);
	u64 rec = cpu;

	if (enf_bell(gi, cpu))
		return true;
	if (!c || !READ_ONCE(c->nr_doorbell))
		return false;
	if (bpf_ringbuf_output(&wake, &rec, sizeof(rec), BPF_RB_FORCE_WAKEUP))
		enf_stat(UMCG_SCX_ENF_DOORBELL_FULL);
	else
		enf_stat(UMCG_SCX_ENF_DOORBELL);
	return true;
}

/*
 * Group @gi's server of @cpu has news.  One that sleeps gets its bell or
 * the doorbell (enf_ring()); one held in sched_yield() is run by @cpu's
 * next dispatch (need_server), and @cpu is kicked with @kick_flags unless
 * they are 0 (the caller's CPU is about to dispatch anyway).  True if a
 * sleeping server was rung.
 */
static __always_inline bool enf_server_news(u32 gi, u32 cpu, u64 kick_flags)
{
	struct enf_cpu *c = enf_cpu_of(cpu);
	bool rang;

	if (!c)
		return false;
	rang = enf_ring(gi, cpu);
	if (!READ_ONCE(c->nr_held))
		return rang;
	WRITE_ONCE(c->need_server, 1);
	if (kick_flags)
		scx_bpf_kick_cpu(cpu, kick_flags);
	return rang;
}

/* Ask @cpu's next dispatch for its held server; kick it if it idles. */
static __always_inline void enf_poke_server(u32 cpu, u64 kick_flags)
{
	struct enf_cpu *c = enf_cpu_of(cpu);

	if (!c)
		return;
	WRITE_ONCE(c->need_server, 1);
	scx_bpf_kick_cpu(cpu, kick_flags);
}

/*
 * Server @t joins (@delta 1) or leaves (-1) the count of its CPU's servers
 * of its kind, which says whether news for that CPU needs need_server, the
 * doorbell, or both.
 */
static __always_inline void enf_server_count(struct enf_task *t, int delta)
{
	struct enf_cpu *c = enf_cpu_of(t->cpu);

	if (!c)
		return;
	if (t->doorbell)
		__sync_fetch_and_add(&c->nr_doorbell, delta);
	else
		__sync_fetch_and_add(&c->nr_held, delta);
}

/*
 * Slot @slot becomes group @gi's bell server of @cpu: 0, or -EBUSY when
 * the group has one there already.
 */
static __always_inline int enf_bell_claim(u32 gi, u32 cpu, u32 slot)
{
	struct enf_group *g = bpf_map_lookup_elem(&groups, &gi);

	if (!g || cpu >= UMCG_SCX_MAX_CPUS)
		return -EINVAL;
	barrier_var(cpu);
	if (__sync_val_compare_and_swap(&g->bell_slot[cpu & (UMCG_SCX_MAX_CPUS - 1)],
					0, slot + 1))
		return -EBUSY;
	return 0;
}

/* Server @t, leaving, gives its place as its group's bell server back. */
static __always_inline void enf_bell_unclaim(struct enf_task *t)
{
	u32 gi = t->group, cpu = t->cpu;
	struct enf_group *g;

	if (!t->bell || cpu >= UMCG_SCX_MAX_CPUS)
		return;
	g = bpf_map_lookup_elem(&groups, &gi);
	barrier_var(cpu);
	if (g)
		__sync_val_compare_and_swap(&g->bell_slot[cpu & (UMCG_SCX_MAX_CPUS - 1)],
					    t->slot + 1, 0);
}

/* Drop group reference @gi of process @tgid (the last one frees it). */
static __always_inline void enf_group_put(u32 gi, u32 tgid)
{
	struct enf_group *g = bpf_map_lookup_elem(&groups, &gi);

	/*
	 * Known race, first slice: a thread of the same process registering
	 * right now can find the group before it is freed and keep using a
	 * group another process may then claim.
	 */
	if (g && __sync_fetch_and_add(&g->nr, -1) == 1)
		__sync_val_compare_and_swap(&g->tgid, tgid, 0);
}

/*
 * @p's registration ends without an unregister (h., m.): it exited, or its
 * address space is not the one it registered with (execve()).  Published DONE, its server told, slot and group
 * reference freed.  Whoever takes t->role first does it: the task's own
 * hooks, or a timer or command that found it in a DSQ.
 */
static __always_inline void enf_drop(struct task_struct *p, struct enf_task *t)
{
	u32 role = t->role, idx;
	struct enf_slot *s;

	if (!role || __sync_val_compare_and_swap(&t->role, role, 0) != role)
		return;
	enf_publish(t, UMCG_TASK_DONE, ENF_TS_NONE, 0);
	enf_stat(UMCG_SCX_ENF_EXIT);
	if (role == ENF_ROLE_SERVER) {
		enf_server_count(t, -1);
		enf_bell_unclaim(t);
	} else {
		enf_ring(t->group, t->cpu);	/* its server looks for DONE */
	}
	t->held = 0;
	enf_group_put(t->group, p->tgid);
	idx = t->slot;
	s = bpf_map_lookup_elem(&slots, &idx);
	if (!s)
		return;
	/*
	 * Only this thread frees its slot, and it held it until now.  The
	 * slot is keyed by the tid the thread registered with, not by its
	 * pid now: a thread that is not the leader and calls execve() takes
	 * the leader's tid, and the leader gets the old one (de_thread), so
	 * p->pid may legitimately differ.  Comparing with p->pid made any
	 * process able to eject the scheduler for everyone that way.
	 */
	if (s->tid != t->tid) {
		scx_bpf_error("umcg: slot %u of %d (tid %u) owned by %u", idx,
			      p->pid, t->tid, s->tid);
		return;
	}
	WRITE_ONCE(s->pick_cpu, 0);
	WRITE_ONCE(s->state, UMCG_TASK_NEW);
	WRITE_ONCE(s->tid, 0);
	enf_slot_shrink();
}

/*
 * @p's registration, NULL for a thread that is not ours.  One that is no
 * longer the program that registered (m.: another mm, after execve()) is
 * dropped here: nothing of the old registration applies to the new image.
 * Not a thread past exit_mm() (no mm): it keeps its slot until exit_task,
 * which comes once its tid is gone, as libumcg tells a thread that exited
 * from a live one that lost its slot (a live one keeps its tid); its
 * wake-ups are not held meanwhile (enf_dying()).
 */
static __always_inline struct enf_task *enf_task_of(struct task_struct *p)
{
	struct enf_task *t = enf_task_get(p);

	if (t && p->mm && t->mm != (u64)p->mm) {
		enf_drop(p, t);
		return NULL;
	}
	return t;
}

/*
 * Time slice (C6): workers registered with UMCG_SCX_REGISTER_SLICE.  Their
 * sched_ext slice is their group's (every insert of enf_enqueue(), kept
 * by moves); ops.tick, which comes right after the kernel charged the
 * running task, marks a worker whose slice it found used up (slice_out):
 * a slice that a kick (SCX_KICK_PREEMPT zeroes it) or sched_yield() ended
 * is no slice end.  What follows is decided in the worker's own context,
 * by the dispatch that it called with the CPU (enf_keep_prev()) and by
 * the enqueue that puts it back (enf_enqueue()): see
 * UMCG_SCX_REGISTER_SLICE for what is published.
 */
#define ENF_SLICE_NONE		0	/* no slice end: schedule as ever */
#define ENF_SLICE_DEFER		1	/* runs on, asked to yield (published) */
#define ENF_SLICE_PREEMPT	2	/* to be held (enf_enqueue()) */

/* ops.tick */
static __always_inline void enf_tick(struct task_struct *p)
{
	struct enf_task *t;

	if (p->scx.slice)
		return;
	t = enf_task_of(p);
	if (t && t->role == ENF_ROLE_WORKER && t->slice_ns &&
	    t->state == UMCG_TASK_RUNNING && !t->held)
		t->slice_out = 1;
}

/*
 * Worker @p's in_lib word: 1 non-zero, 0 zero (or no word registered), -1
 * unknown.  Read from the worker's own memory, so only when it is current
 * (its dispatch, its enqueue from put_prev, its quiescent as it falls
 * asleep); unknown otherwise, or if it cannot be read without a fault.
 */
static __always_inline int enf_in_lib_word(struct task_struct *p,
					   struct enf_task *t)
{
	u32 v = 0;

	if (!t->in_lib)
		return 0;
	if ((u32)bpf_get_current_pid_tgid() != (u32)p->pid ||
	    bpf_probe_read_user(&v, sizeof(v), (void *)t->in_lib))
		return -1;
	return v != 0;
}

/*
 * Is worker @p inside the code its in_lib word guards?  Unknown counts as
 * inside: a preemption there could hold it with a lock its server needs,
 * while a deferred one costs a slice.
 */
static __always_inline bool enf_in_lib(struct task_struct *p,
				       struct enf_task *t)
{
	return enf_in_lib_word(p, t) != 0;
}

/*
 * Does worker @p's in_lib word read non-zero?  Unknown counts as outside:
 * a hold is then the default.
 */
static __always_inline bool enf_in_lib_read(struct task_struct *p,
					    struct enf_task *t)
{
	return enf_in_lib_word(p, t) > 0;
}

/* Fair-class tasks are queued on the runqueue being dispatched for. */
static __always_inline bool enf_fair_queued(void)
{
	struct rq *rq = scx_bpf_locked_rq();

	return rq && rq->cfs.h_nr_queued;
}

/*
 * Worker @t (task @p) goes off its CPU: did its time slice end, and may it
 * be held for that now?  @may_hold false: not now (see
 * UMCG_SCX_REGISTER_SLICE): it is asked to yield instead.
 */
static __always_inline int enf_slice_end(struct task_struct *p,
					 struct enf_task *t, bool may_hold)
{
	if (t->role != ENF_ROLE_WORKER || !t->slice_ns || !t->slice_out ||
	    t->held || t->state != UMCG_TASK_RUNNING || p->scx.slice)
		return ENF_SLICE_NONE;
	if (may_hold && !enf_in_lib(p, t))
		return ENF_SLICE_PREEMPT;
	t->slice_out = 0;
	enf_publish(t, UMCG_TASK_RUNNING | UMCG_TF_PREEMPT, ENF_TS_NONE, 0);
	enf_stat(UMCG_SCX_ENF_SLICE_DEFER);
	return ENF_SLICE_DEFER;
}

/*
 * Must a RUNNING worker's wake-up on @cpu queue behind what waits for
 * @cpu's dispatch (threads that are not ours in the FIFO, a preempted
 * worker in UMCG_SCX_DSQ_WORKER(cpu)) instead of going to its local DSQ?
 * A CPU runs dispatch only when its local DSQ is empty; workers that wake
 * each other there (a umcg_switch_to() is a futex wake, then a sleep)
 * keep it from ever being empty, and what waits would wait until the
 * watchdog ejects the scheduler (tests/kernel_backend/bystander.c: a
 * SCHED_EXT thread beside two workers switching on its CPU "failed to run
 * for 7.5 s").  So once @cpu has not called dispatch for a slice while
 * something waits for it, the wake-up queues behind it and runs at the
 * next dispatch, after it (umcg_dispatch(): the FIFO, then
 * enf_dispatch_preempted()): the switching workers and what waits share
 * the CPU a slice each, as round robin would.
 */
static __always_inline bool enf_wake_behind(u32 cpu)
{
	struct enf_cpu *c;

	if (cpu >= UMCG_SCX_MAX_CPUS ||
	    (scx_bpf_dsq_nr_queued(UMCG_SCX_DSQ_FIFO) <= 0 &&
	     scx_bpf_dsq_nr_queued(UMCG_SCX_DSQ_WORKER(cpu)) <= 0))
		return false;
	c = enf_cpu_of(cpu);
	return !c || bpf_ktime_get_ns() - READ_ONCE(c->dispatch_ns) >= umcg_slice_ns;
}

/* ---- sched_ext hooks; each returns false for threads that are not ours ---- */

/* ops.select_cpu: a BLOCKED worker must not be inserted directly. */
static __always_inline bool enf_select_cpu(struct task_struct *p, s32 prev_cpu,
					   s32 *cpu)
{
	struct enf_task *t = enf_task_of(p);

	if (!t)
		return false;
	if (t->role == ENF_ROLE_SERVER) {
		/* Out of reach (m.): where it was; the kernel corrects that. */
		*cpu = enf_cpu_ok(p, t->cpu) ? (s32)t->cpu : prev_cpu;
		return true;
	}
	if (t->state == UMCG_TASK_BLOCKED) {
		struct enf_slot *s = enf_slot_of(t);
		u32 pc = s ? READ_ONCE(s->pick_cpu) : 0;

		/* Picked while asleep (i): wake up where it was picked for. */
		if (pc && READ_ONCE(s->state) == UMCG_TASK_RUNNING)
			*cpu = pc - 1;
		else
			*cpu = prev_cpu;
		return true;
	}
	/* No direct insert with the default slice: enqueue sets its own. */
	if (t->slice_ns) {
		*cpu = prev_cpu;
		return true;
	}
	return false;
}

#define ENF_PF_EXITING		0x00000004	/* include/linux/sched.h */
#define ENF_SIGKILL		9

/*
 * @p exits, has a fatal signal pending (fatal_signal_pending()), or is in
 * execve() (whose de_thread() sleeps until the other threads, servers
 * included, are gone; the image that follows is no worker of ours: m.).
 */
static __always_inline bool enf_dying(struct task_struct *p)
{
	return (p->flags & ENF_PF_EXITING) ||
	       (p->pending.signal.sig[0] & (1UL << (ENF_SIGKILL - 1))) ||
	       BPF_CORE_READ_BITFIELD_PROBED(p, in_execve);
}

/* ops.runnable */
static __always_inline void enf_runnable(struct task_struct *p, u64 enq_flags)
{
	struct enf_slot *s;
	struct enf_task *t;

	if (!(enq_flags & SCX_ENQ_WAKEUP))
		return;
	t = enf_task_of(p);
	if (!t || t->role != ENF_ROLE_WORKER || t->state != UMCG_TASK_BLOCKED)
		return;
	s = enf_slot_of(t);
	if (s && __sync_val_compare_and_swap(&s->state, UMCG_TASK_BLOCKED,
					     UMCG_TASK_RUNNABLE) !=
		 UMCG_TASK_BLOCKED) {
		/*
		 * umcg_pick got there first (i): it published RUNNING and
		 * left the CPU in s->pick_cpu, which enqueue() consumes.
		 */
		t->state = UMCG_TASK_RUNNING;
		return;
	}
	if (enf_dying(p)) {
		/*
		 * Exiting, or a fatal signal ended the sleep (uapi/umcg.h:
		 * fatal ones end the wait): it runs on to its end, not held
		 * for servers that may be dying with it.
		 */
		t->lib_sleep = 0;
		enf_publish(t, UMCG_TASK_RUNNING, ENF_TS_NONE, 0);
		enf_stat(UMCG_SCX_ENF_DYING_WAKE);
		return;
	}
	if (t->lib_sleep) {
		/*
		 * A sleep inside libumcg (UMCG_SCX_REGISTER_IN_LIB): not
		 * held.  The slot is RUNNABLE now, so a umcg_pick of it that
		 * comes later finds it running on (-ESTALE, its seq moved).
		 */
		t->lib_sleep = 0;
		enf_publish(t, UMCG_TASK_RUNNING, ENF_TS_NONE, 0);
		enf_stat(UMCG_SCX_ENF_LIB_WAKE);
		return;
	}
	t->held = 1;
	t->held_ns = bpf_ktime_get_ns();
	enf_publish(t, UMCG_TASK_RUNNABLE, ENF_TS_WOKEN, 0);
	enf_stat(UMCG_SCX_ENF_WAKE_HELD);
	/*
	 * Preempt: the server must look now even if a worker runs on its
	 * CPU, as another core may be idle for the woken one.
	 */
	enf_server_news(t->group, t->cpu, SCX_KICK_PREEMPT);
}

/* ops.enqueue: true if @p was inserted. */
static __always_inline bool enf_enqueue(struct task_struct *p, u64 enq_flags,
					u64 slice)
{
	struct enf_task *t = enf_task_of(p);

	if (!t)
		return false;
	if (t->role == ENF_ROLE_WORKER && t->slice_ns)
		slice = t->slice_ns;
	if (t->role == ENF_ROLE_SERVER) {
		u64 local = SCX_DSQ_LOCAL_ON | (t->cpu & (UMCG_SCX_MAX_CPUS - 1));

		/*
		 * Its CPU is out of reach (m.): its affinity or cpuset no
		 * longer has it, or it went offline.  It runs where it is,
		 * never held, until it can go back.
		 */
		if (!enf_cpu_ok(p, t->cpu)) {
			enf_set_evicted(t, true);
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice, enq_flags);
			return true;
		}
		enf_set_evicted(t, false);

		/*
		 * A doorbell server is never held: it waits its turn on its
		 * CPU's local DSQ like any thread.  Not preempting the
		 * worker there: with that, c2_latency saw libumcg abort on
		 * every run ("runs in state 1": its blocker ran unpicked
		 * after the server applied its WOKEN; not understood yet).
		 */
		if (t->doorbell) {
			scx_bpf_dsq_insert(p, local, slice, enq_flags);
			return true;
		}
		/*
		 * A server that woke up from its own sleep (a lock, a
		 * futex) was busy: it runs, like any woken thread, on its
		 * CPU.  Otherwise (it yielded, was preempted) it is held.
		 */
		if (enq_flags & SCX_ENQ_WAKEUP)
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL_ON | (t->cpu & (UMCG_SCX_MAX_CPUS - 1)),
					slice, enq_flags);
		else
			scx_bpf_dsq_insert(p, UMCG_SCX_DSQ_SERVER(t->cpu & (UMCG_SCX_MAX_CPUS - 1)),
					slice, enq_flags);
		return true;
	}
	if (t->role == ENF_ROLE_WORKER && !t->held &&
	    (enq_flags & SCX_ENQ_WAKEUP)) {
		struct enf_slot *s = enf_slot_of(t);
		u32 pc = s ? READ_ONCE(s->pick_cpu) : 0;

		if (pc && __sync_val_compare_and_swap(&s->pick_cpu, pc, 0) == pc) {
			u32 cpu = pc - 1;

			/* Picked while asleep (i): straight to its CPU. */
			enf_stat(UMCG_SCX_ENF_PICK_DIRECT);
			if (enf_cpu_ok(p, cpu)) {
				scx_bpf_dsq_insert(p, enf_worker_dsq(cpu), slice,
						enq_flags);
				if (cpu != bpf_get_smp_processor_id())
					scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
			} else {
				scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice, enq_flags);
			}
			return true;
		}
	}
	if (t->held) {
		/* runnable() holds only BLOCKED workers it made RUNNABLE. */
		if (t->state != UMCG_TASK_RUNNABLE)
			scx_bpf_error("umcg: held worker %d in state %u",
				      p->pid, t->state);
		scx_bpf_dsq_insert(p, UMCG_SCX_DSQ_GROUP(t->group & (UMCG_SCX_MAX_GROUPS - 1)),
				slice, enq_flags);
		return true;
	}
	if (t->state == UMCG_TASK_RUNNING) {
		u32 cpu = scx_bpf_task_cpu(p);

		/*
		 * Its time slice ended (C6): preempted, held like a woken
		 * worker until the policy picks it, its server told.  A
		 * worker asked to yield instead goes on below.
		 */
		if (!(enq_flags & SCX_ENQ_WAKEUP) &&
		    enf_slice_end(p, t, true) == ENF_SLICE_PREEMPT) {
			t->slice_out = 0;
			t->held = 1;
			t->held_ns = bpf_ktime_get_ns();
			enf_publish(t, UMCG_TASK_RUNNABLE | UMCG_TF_PREEMPT,
				    ENF_TS_NONE, 0);
			enf_stat(UMCG_SCX_ENF_SLICE_END);
			scx_bpf_dsq_insert(p, UMCG_SCX_DSQ_GROUP(t->group & (UMCG_SCX_MAX_GROUPS - 1)),
					slice, enq_flags);
			enf_server_news(t->group, t->cpu, SCX_KICK_PREEMPT);
			return true;
		}
		/*
		 * Nothing else wants its CPU: it keeps it (see g).  A wake-up
		 * of a RUNNING worker (its sleep was not one the scheduler
		 * holds) runs on the CPU it woke on, but not ahead of what
		 * waits for that CPU's dispatch (enf_wake_behind()).
		 */
		if ((enq_flags & SCX_ENQ_WAKEUP) && enf_wake_behind(cpu)) {
			scx_bpf_dsq_insert(p, UMCG_SCX_DSQ_WORKER(cpu), slice,
					enq_flags);
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
			return true;
		}
		if (enq_flags & (SCX_ENQ_LAST | SCX_ENQ_WAKEUP)) {
			scx_bpf_dsq_insert(p, SCX_DSQ_LOCAL, slice, enq_flags);
			return true;
		}

		if (cpu < UMCG_SCX_MAX_CPUS) {
			scx_bpf_dsq_insert(p, UMCG_SCX_DSQ_WORKER(cpu), slice,
					enq_flags);
			/* Only its CPU's dispatch takes it: make sure one comes. */
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
			return true;
		}
	}
	return false;
}

/*
 * ops.quiescent with SCX_DEQ_SLEEP: @p went to sleep.  Not ops.stopping
 * (runnable=false): that also comes for a running task that is only taken
 * off its runqueue and put back (sched_setaffinity(), sched_setscheduler()
 * of itself), which is no block, and gets no wake-up to end it.
 */
static __always_inline void enf_quiescent(struct task_struct *p)
{
	struct enf_task *t;
	u32 cpu;

	t = enf_task_of(p);
	if (!t || t->role != ENF_ROLE_WORKER || t->state != UMCG_TASK_RUNNING)
		return;
	t->slice_out = 0;
	t->lib_sleep = t->lib_nohold && enf_in_lib_read(p, t);
	cpu = bpf_get_smp_processor_id();
	/*
	 * A sleep inside libumcg is no block: no new blocked_ns, which is
	 * what the library takes for one.  Its servers must not decide that
	 * from the in_lib word when they look: by then the worker may have
	 * woken (not held), left libumcg and run user code, and a block
	 * taken for it gave its core away while it ran (C1, seen in
	 * scx_backend_stress: two workers' loops on one core).
	 */
	enf_publish(t, UMCG_TASK_BLOCKED, t->lib_sleep ? ENF_TS_CPU : ENF_TS_BLOCKED,
		    cpu);
	enf_stat(UMCG_SCX_ENF_BLOCK);
	/*
	 * A sleep inside libumcg is the library's own doing: it handed the
	 * core on, or woke the server it needs, before it slept.  No news.
	 */
	if (t->lib_sleep)
		return;
	/*
	 * This CPU's next dispatch runs its held server: no kick needed.
	 * The group's server of this CPU is rung (its core is free), else
	 * the worker's own server (t->cpu); a doorbell ring wakes every
	 * doorbell server.
	 */
	if ((cpu >= UMCG_SCX_MAX_CPUS || !enf_server_news(t->group, cpu, 0)) &&
	    t->cpu != cpu)
		enf_ring(t->group, t->cpu);
}

/* ops.dispatch, first: true if it moved something to @cpu's local DSQ. */
static __always_inline bool enf_dispatch(s32 cpu)
{
	struct enf_cpu *c;

	if (cpu < 0 || cpu >= UMCG_SCX_MAX_CPUS)
		return false;
	c = enf_cpu_of(cpu);
	if (!c)
		return false;
	WRITE_ONCE(c->dispatch_ns, bpf_ktime_get_ns());
	if (c->need_server) {
		if (scx_bpf_dsq_move_to_local(UMCG_SCX_DSQ_SERVER(cpu), 0)) {
			c->need_server = 0;
			c->server_ns = bpf_ktime_get_ns();
			enf_stat(UMCG_SCX_ENF_SERVER_RUN);
			return true;
		}
		/*
		 * It runs, or sleeps.  need_server stays set: a server that
		 * yields right after it looked (a poke it could not see yet)
		 * is run again by the next dispatch, not at the heartbeat.
		 */
		enf_stat(UMCG_SCX_ENF_SERVER_MISS);
	}
	return false;
}

/*
 * ops.dispatch, after the FIFO of threads that are not ours (a worker that
 * spins must not keep them off the CPU for good): @cpu's preempted worker.
 */
static __always_inline bool enf_dispatch_preempted(s32 cpu)
{
	if (cpu < 0 || cpu >= UMCG_SCX_MAX_CPUS)
		return false;
	return scx_bpf_dsq_move_to_local(UMCG_SCX_DSQ_WORKER(cpu), 0);
}

/*
 * Take held worker @t out of its hold for a move to a CPU: claim it (a
 * compare-and-swap of t->held, so that of the timer, umcg_pick and
 * dispatch only one moves it) and publish RUNNING *before* the move: once
 * moved, its CPU may run it, and it may block again (which quiescent()
 * reports for RUNNING workers only), before the mover gets past the move.
 * False if another mover has it.
 */
static __always_inline bool enf_unhold(struct enf_task *t)
{
	if (__sync_val_compare_and_swap(&t->held, 1, 0) != 1)
		return false;
	enf_publish(t, UMCG_TASK_RUNNING, ENF_TS_NONE, 0);
	return true;
}

/* The move after enf_unhold() failed: @t is held again (RUNNABLE). */
static __always_inline void enf_rehold(struct enf_task *t)
{
	enf_publish(t, UMCG_TASK_RUNNABLE, ENF_TS_NONE, 0);
	WRITE_ONCE(t->held, 1);
}

/*
 * ops.dispatch, last, with nothing else for @cpu: while fair-class tasks
 * are queued on @cpu's runqueue, run a worker held there (a late C3) rather
 * than nothing.  sched_ext runs below the fair class, so a dispatch then
 * is the pick of the kernel's deadline server for sched_ext (rq->ext_server,
 * after the fair class kept us off the CPU for most of its period): if that
 * pick finds nothing, the server stops (dl_server_stop() in
 * __pick_task_dl()) and is started again only when the runqueue has no
 * sched_ext task at all (enqueue_task_scx()), which the held worker itself
 * prevents; from then on every sched_ext task of the CPU waits for the
 * fair class to go idle, and a busy fair-class thread trips the watchdog.
 * Seen in c2_contention (plain threads spinning on every CPU): a napping
 * worker held on a CPU, then the server and two workers there "failed to
 * run for 7.3 s".  Published RUNNING, like a hold that expired.
 */
static __always_inline bool enf_dispatch_contended(s32 cpu)
{
	struct task_struct *p;
	int g;

	if (!enf_fair_queued())
		return false;
	bpf_for(g, 0, UMCG_SCX_MAX_GROUPS) {
		if (scx_bpf_dsq_nr_queued(UMCG_SCX_DSQ_GROUP(g)) <= 0)
			continue;
		bpf_for_each(scx_dsq, p, UMCG_SCX_DSQ_GROUP(g), 0) {
			struct enf_task *t;
			bool mine;

			if (scx_bpf_task_cpu(p) != cpu)
				continue;
			t = enf_task_of(p);
			/* Not held: another mover's, between its unhold and its move. */
			if (t && !READ_ONCE(t->held))
				continue;
			mine = !!t;
			if (mine && !enf_unhold(t))
				continue;
			if (!scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_LOCAL, 0)) {
				if (mine)
					enf_rehold(t);
				continue;
			}
			enf_stat(UMCG_SCX_ENF_HOLD_CONTENDED);
			return true;
		}
	}
	return false;
}

/*
 * ops.dispatch, when it found nothing for @cpu: keep running @prev, if it
 * is still runnable, with a fresh @slice - what the kernel does without
 * SCX_OPS_ENQ_LAST - unless it is a held server (c, g), which the flag
 * is for.  Not leaving it to the SCX_ENQ_LAST enqueue that follows: the
 * pick has returned nothing by then, and when that pick was the deadline
 * server's (rq->ext_server, which runs sched_ext tasks on a CPU that the
 * fair class keeps busy), that server stops (__pick_task_dl()) and is
 * started again only when the runqueue's count of sched_ext tasks goes
 * from 0 to 1, which @prev, runnable, prevents.  Seen: one SCHED_EXT
 * thread that never sleeps, on a CPU with a spinning fair-class thread,
 * did not run for 6 s (and any thread of ours queued behind it neither).
 */
static __always_inline void enf_keep_prev(struct task_struct *prev, u64 slice)
{
	struct enf_task *t;

	if (!prev || !(prev->scx.flags & SCX_TASK_QUEUED))
		return;
	t = enf_task_of(prev);
	if (t && t->role == ENF_ROLE_SERVER && !t->doorbell)
		return;
	if (t && t->role == ENF_ROLE_WORKER && t->slice_ns) {
		/*
		 * Its time slice ended: the enqueue that follows holds it.
		 * Not with fair-class tasks queued here: the held worker
		 * would keep this CPU's count of sched_ext tasks above 0
		 * after an empty pick (see above), so it is asked to yield.
		 */
		if (enf_slice_end(prev, t, !enf_fair_queued()) ==
		    ENF_SLICE_PREEMPT)
			return;
		slice = t->slice_ns;
	}
	scx_bpf_task_set_slice(prev, slice);
}

/* ops.exit_task */
static __always_inline void enf_exit_task(struct task_struct *p)
{
	struct enf_task *t = enf_task_get(p);

	if (t)
		enf_drop(p, t);
}

/*
 * Put @cpu's held server at the head of @cpu's local DSQ, preempting what
 * runs there.  For the heartbeat and umcg_poke: a CPU whose local DSQ never
 * runs empty (workers handing it to each other with umcg_pick) never calls
 * dispatch, and need_server alone would leave its server to the watchdog.
 * Timer and syscall programs only (scx_bpf_dsq_move outside ops).
 */
static __always_inline bool enf_run_server_now(u32 cpu)
{
	struct task_struct *p;
	bool moved = false;

	if (cpu >= UMCG_SCX_MAX_CPUS)
		return false;
	bpf_for_each(scx_dsq, p, UMCG_SCX_DSQ_SERVER(cpu), 0) {
		/* Out of reach (m.): released, anywhere it may run. */
		if (enf_cpu_ok(p, cpu))
			moved = scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p,
						 SCX_DSQ_LOCAL_ON | cpu,
						 SCX_ENQ_HEAD | SCX_ENQ_PREEMPT);
		else
			moved = scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p,
						 SCX_DSQ_GLOBAL, 0);
		break;
	}
	if (moved) {
		struct enf_cpu *c = enf_cpu_of(cpu);

		if (c) {
			c->server_ns = bpf_ktime_get_ns();
			WRITE_ONCE(c->need_server, 0);
		}
		enf_stat(UMCG_SCX_ENF_SERVER_RUN);
	}
	return moved;
}

/*
 * Release every worker of group DSQ @dsq held since UMCG_SCX_HOLD_MAX_NS
 * before @now: to the local DSQ of the CPU it is on (a late C3, never an
 * ejection), published RUNNING.  From the timer itself, not from a
 * dispatch it would have to kick: a kicked CPU that runs a fair-class task
 * does not dispatch, and the release must not depend on one.  A task in a
 * group DSQ that is not a held worker (impossible; or its task storage was
 * busy for the timer's lookup) is released too: nothing stays in a DSQ no
 * CPU consumes.  Timer only (scx_bpf_dsq_move outside ops).
 */
static __always_inline void enf_release_expired(u64 dsq, u64 now)
{
	struct task_struct *p;

	bpf_for_each(scx_dsq, p, dsq, 0) {
		struct enf_task *t = enf_task_of(p);
		s32 cpu = scx_bpf_task_cpu(p);
		bool mine;

		/*
		 * Signed: @now was read before the walk, and a hold that
		 * began since on another CPU has a later held_ns (unsigned,
		 * now - held_ns wrapped and released it at once, unpicked:
		 * scx_backend_stress, a hold of 0.2 ms released by time).
		 * A worker in the DSQ but not held is another mover's (its
		 * unhold came first, its move comes next): not ours either.
		 */
		if (t && (!READ_ONCE(t->held) ||
			  (s64)(now - READ_ONCE(t->held_ns)) < (s64)UMCG_SCX_HOLD_MAX_NS))
			continue;
		mine = !!t;
		if (mine && !enf_unhold(t))
			continue;
		/* Its CPU out of reach (m.): anywhere it may run. */
		if (!scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p,
				      cpu >= 0 && enf_cpu_ok(p, cpu) ?
				      SCX_DSQ_LOCAL_ON | cpu : SCX_DSQ_GLOBAL, 0)) {
			if (mine)
				enf_rehold(t);
			continue;
		}
		if (cpu >= 0)
			scx_bpf_kick_cpu(cpu, SCX_KICK_IDLE);
		enf_stat(UMCG_SCX_ENF_HOLD_EXPIRED);
	}
}

static int enf_timer_fn(void *map, int *key, struct bpf_timer *timer)
{
	int cpu, g;
	u64 now = bpf_ktime_get_ns();
	u32 nr = scx_bpf_nr_cpu_ids();

	bpf_for(cpu, 0, UMCG_SCX_MAX_CPUS) {
		struct enf_cpu *c;

		if (cpu >= nr)
			break;
		if (scx_bpf_dsq_nr_queued(UMCG_SCX_DSQ_SERVER(cpu)) <= 0)
			continue;
		c = enf_cpu_of(cpu);
		if (!c || now - c->server_ns < UMCG_SCX_HEARTBEAT_NS)
			continue;
		enf_stat(UMCG_SCX_ENF_HEARTBEAT);
		if (!enf_run_server_now(cpu))
			enf_poke_server(cpu, SCX_KICK_PREEMPT);
	}
	bpf_for(g, 0, UMCG_SCX_MAX_GROUPS) {
		if (scx_bpf_dsq_nr_queued(UMCG_SCX_DSQ_GROUP(g)) <= 0)
			continue;
		enf_release_expired(UMCG_SCX_DSQ_GROUP(g), now);
	}
	if (!enf_stopped)
		bpf_timer_start(timer, UMCG_SCX_TIMER_NS, 0);
	return 0;
}

/* ops.init: the DSQs, the timer, and the ABI words of the shared area. */
static __always_inline s32 enf_init(void)
{
	struct umcg_scx_shared *sh;
	struct enf_timer *et;
	u32 zero = 0;
	s32 ret;
	int i;

	/* Limits: CPUs above ours would run unenforced. */
	if (scx_bpf_nr_cpu_ids() > UMCG_SCX_MAX_CPUS) {
		scx_bpf_error("umcg: %u possible CPUs, the enforcer manages %u",
			      scx_bpf_nr_cpu_ids(), UMCG_SCX_MAX_CPUS);
		return -E2BIG;
	}
	bpf_for(i, 0, UMCG_SCX_MAX_CPUS) {
		ret = scx_bpf_create_dsq(UMCG_SCX_DSQ_SERVER(i), -1);
		if (ret)
			return ret;
		ret = scx_bpf_create_dsq(UMCG_SCX_DSQ_WORKER(i), -1);
		if (ret)
			return ret;
	}
	bpf_for(i, 0, UMCG_SCX_MAX_GROUPS) {
		ret = scx_bpf_create_dsq(UMCG_SCX_DSQ_GROUP(i), -1);
		if (ret)
			return ret;
	}
	et = bpf_map_lookup_elem(&enf_timer, &zero);
	if (!et)
		return -ENOENT;
	ret = bpf_timer_init(&et->timer, &enf_timer, CLOCK_MONOTONIC);
	if (ret)
		return ret;
	ret = bpf_timer_set_callback(&et->timer, enf_timer_fn);
	if (ret)
		return ret;
	ret = bpf_timer_start(&et->timer, UMCG_SCX_TIMER_NS, 0);
	if (ret)
		return ret;
	/* Last: user space uses nothing of ours before it reads these. */
	sh = enf_shared();
	if (!sh)
		return -ENOENT;
	WRITE_ONCE(sh->abi_version, UMCG_SCX_ABI_VERSION);
	__sync_lock_test_and_set(&sh->abi_magic, UMCG_SCX_ABI_MAGIC);
	return 0;
}

/*
 * ops.cpu_online / ops.cpu_offline (n.): without them the kernel exits the
 * scheduler on any hotplug.  An offline CPU is out of reach for every
 * insert and move (enf_cpu_ok()); the kernel itself moves the tasks queued
 * there to online CPUs (rq_offline_scx() runs them off its local DSQ and
 * balance_push() migrates them), and our enqueue on the new CPU decides
 * again.  Its servers hear of it (the doorbell), as of news.
 */
static __always_inline void enf_cpu_hotplug(s32 cpu, bool online)
{
	struct enf_cpu *c;
	int g;

	if (cpu < 0 || cpu >= UMCG_SCX_MAX_CPUS)
		return;
	c = enf_cpu_of(cpu);
	if (!c)
		return;
	WRITE_ONCE(c->offline, !online);
	enf_stat(online ? UMCG_SCX_ENF_CPU_ONLINE : UMCG_SCX_ENF_CPU_OFFLINE);
	bpf_for(g, 0, UMCG_SCX_MAX_GROUPS)
		enf_bell(g, cpu);
	enf_ring(UMCG_SCX_MAX_GROUPS, cpu);	/* no group: the doorbell */
}

/*
 * ops.exit: the timer stops re-arming, and every bell server is rung, so
 * that libumcg's servers, asleep on them, see at once that the scheduler
 * is gone.
 */
static __always_inline void enf_exit(void)
{
	int g, cpu;

	enf_stopped = 1;
	bpf_for(g, 0, UMCG_SCX_MAX_GROUPS)
		bpf_for(cpu, 0, UMCG_SCX_MAX_CPUS)
			enf_bell(g, cpu);
}

/* ---- commands ---- */

static __always_inline s32 enf_group_get(u32 tgid)
{
	int i;
	struct enf_group *g;

	bpf_for(i, 0, UMCG_SCX_MAX_GROUPS) {
		g = bpf_map_lookup_elem(&groups, &i);
		if (g && g->tgid == tgid) {
			__sync_fetch_and_add(&g->nr, 1);
			return i;
		}
	}
	bpf_for(i, 0, UMCG_SCX_MAX_GROUPS) {
		g = bpf_map_lookup_elem(&groups, &i);
		if (g && __sync_val_compare_and_swap(&g->tgid, 0, tgid) == 0) {
			__sync_fetch_and_add(&g->nr, 1);
			return i;
		}
	}
	return -ENOSPC;
}

static __always_inline s32 enf_slot_get(u32 tid)
{
	int i;
	struct enf_slot *s;

	bpf_for(i, 0, UMCG_SCX_MAX_TASKS) {
		s = bpf_map_lookup_elem(&slots, &i);
		if (s && __sync_val_compare_and_swap(&s->tid, 0, tid) == 0) {
			u64 old, new;
			int k;

			/*
			 * R2 of enf_slot_hwm: a CAS even when hwm covers slot
			 * @i already, for the generation.  Each failed CAS saw
			 * another raise or shrink; a register that loses
			 * UMCG_SCX_MAX_TASKS of them gives the slot back.
			 */
			bpf_for(k, 0, UMCG_SCX_MAX_TASKS) {
				old = READ_ONCE(enf_slot_hwm);
				new = (old & ~(ENF_HWM_GEN - 1)) + ENF_HWM_GEN;
				new |= ENF_HWM(old) > (u32)i ? ENF_HWM(old) :
							       (u32)i + 1;
				if (__sync_val_compare_and_swap(&enf_slot_hwm,
								old, new) == old)
					return i;
			}
			WRITE_ONCE(s->tid, 0);
			enf_slot_shrink();
			return -EAGAIN;
		}
	}
	return -ENOSPC;
}

/*
 * The kernel's tid (init namespace, task->pid) of the thread that the
 * caller calls @vtid: the commands take tids as their callers see them,
 * gettid() in their own PID namespace, and compare kernel tids (p.).
 * bpf_task_from_vpid() looks @vtid up in the caller's active namespace.
 * -ESRCH when no thread there has that id, or the thread found is not of
 * process @tgid (the caller's, a kernel tgid): an id from another
 * namespace (the parent's view of a thread, say) names no thread of the
 * caller or one of another process, and a command never acts on that.
 */
static __always_inline s32 enf_tid_of(u32 vtid, u32 tgid)
{
	struct task_struct *p;
	s32 tid = -ESRCH;

	if ((s32)vtid <= 0)
		return -ESRCH;
	p = bpf_task_from_vpid((s32)vtid);
	if (!p)
		return -ESRCH;
	if ((u32)p->tgid == tgid)
		tid = p->pid;
	bpf_task_release(p);
	return tid;
}

/* The CPU of registered server @tid of process @tgid, or -ESRCH. */
static __always_inline s32 enf_server_cpu(u32 tid, u32 tgid)
{
	int i;
	struct enf_slot *s;

	bpf_for(i, 0, enf_slots_used()) {
		s = bpf_map_lookup_elem(&slots, &i);
		if (s && s->tid == tid && s->tgid == tgid &&
		    s->role == ENF_ROLE_SERVER)
			return s->cpu;
	}
	return -ESRCH;
}

SEC("syscall")
int umcg_register(struct umcg_scx_register_args *args)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	u64 id = bpf_get_current_pid_tgid();
	u32 tid = (u32)id, tgid = id >> 32;
	u32 flags = args->flags, cpu = args->cpu, server_tid = args->server_tid;
	struct umcg_scx_shared *sh;
	struct enf_task *t;
	struct enf_slot *s;
	const u32 sflags = UMCG_SCX_REGISTER_DOORBELL | UMCG_SCX_REGISTER_BELL;
	s32 g, slot, scpu, stid;
	u32 role, wflags;
	int ret;

	if (args->reserved0)
		return -EINVAL;
	wflags = flags & (UMCG_SCX_REGISTER_SLICE | UMCG_SCX_REGISTER_IN_LIB);
	if (wflags) {
		/* A worker's only; the address is checked as it is read. */
		if ((flags & ~wflags) != UMCG_REGISTER_WORKER)
			return -EINVAL;
		if ((flags & UMCG_SCX_REGISTER_SLICE) ?
		    !args->slice_ns || args->slice_ns > UMCG_SCX_SLICE_MAX_NS :
		    args->slice_ns != 0)
			return -EINVAL;
		if ((flags & UMCG_SCX_REGISTER_IN_LIB) && !args->in_lib)
			return -EINVAL;
		flags &= ~wflags;
	} else if (args->slice_ns || args->in_lib) {
		return -EINVAL;
	}
	if (flags == UMCG_REGISTER_WORKER) {
		if (cpu)
			return -EINVAL;
		stid = enf_tid_of(server_tid, tgid);
		if (stid < 0)
			return stid;
		scpu = enf_server_cpu(stid, tgid);
		if (scpu < 0)
			return scpu;
		cpu = scpu;
		role = ENF_ROLE_WORKER;
	} else if ((flags & ~sflags) == UMCG_REGISTER_SERVER) {
		bool allowed;

		if (server_tid || cpu >= UMCG_SCX_MAX_CPUS ||
		    cpu >= scx_bpf_nr_cpu_ids() || (flags & sflags) == sflags)
			return -EINVAL;
		if ((flags & UMCG_SCX_REGISTER_BELL) &&
		    !bpf_ksym_exists(bpf_task_work_schedule_signal))
			return -EOPNOTSUPP;
		/*
		 * The caller's affinity, cpus_mask, not cpus_ptr: the command
		 * runs with migration disabled (bpf_prog_run_pin_on_cpu()),
		 * and a caller preempted meanwhile has cpus_ptr narrowed to
		 * the CPU it runs on (migrate_disable_switch()).  A sleepable
		 * program reads it under RCU.
		 */
		bpf_rcu_read_lock();
		allowed = bpf_cpumask_test_cpu(cpu, &cur->cpus_mask);
		bpf_rcu_read_unlock();
		if (!allowed)
			return -EINVAL;
		role = ENF_ROLE_SERVER;
	} else {
		return -EINVAL;
	}

	t = bpf_task_storage_get(&enf_tasks, cur, 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!t)
		return -ENOMEM;
	if (t->role)
		return -EBUSY;
	g = enf_group_get(tgid);
	if (g < 0)
		return g;
	slot = enf_slot_get(tid);
	if (slot < 0) {
		enf_group_put(g, tgid);
		return slot;
	}
	s = bpf_map_lookup_elem(&slots, &slot);
	if (!s)
		return -ENOSPC;
	if (flags & UMCG_SCX_REGISTER_BELL) {
		ret = enf_bell_claim(g, cpu, slot);
		if (ret) {
			WRITE_ONCE(s->tid, 0);
			enf_slot_shrink();
			enf_group_put(g, tgid);
			return ret;
		}
	}
	s->tgid = tgid;
	s->role = role;
	s->cpu = cpu;
	s->pick_cpu = 0;
	s->group = g;

	sh = enf_shared();
	if (sh) {
		struct umcg_task *ut = &sh->task[slot & (UMCG_SCX_MAX_TASKS - 1)];

		ut->server_tid = role == ENF_ROLE_WORKER ? server_tid : 0;
		ut->next_tid = 0;
		ut->cpu = cpu;
		ut->blocked_ns = 0;
		ut->woken_ns = 0;
		WRITE_ONCE(ut->reserved[UMCG_SCX_TASK_FLAGS], 0);
	}
	t->group = g;
	t->slot = slot;
	t->cpu = cpu;
	t->held = 0;
	t->held_ns = 0;
	t->tid = tid;
	t->doorbell = !!(flags & (UMCG_SCX_REGISTER_DOORBELL | UMCG_SCX_REGISTER_BELL));
	t->bell = !!(flags & UMCG_SCX_REGISTER_BELL);
	t->slice_ns = args->slice_ns;
	t->in_lib = args->in_lib;
	t->lib_nohold = !!(wflags & UMCG_SCX_REGISTER_IN_LIB);
	t->lib_sleep = 0;
	t->slice_out = 0;
	t->mm = (u64)cur->mm;
	t->evicted = 0;
	t->state = UMCG_TASK_RUNNING;
	if (role == ENF_ROLE_SERVER)
		enf_server_count(t, 1);
	/* Last: from here the hooks treat the caller as ours. */
	WRITE_ONCE(t->role, role);
	enf_publish(t, UMCG_TASK_RUNNING, ENF_TS_NONE, 0);
	enf_stat(UMCG_SCX_ENF_REGISTER);

	args->slot = slot;
	args->group = g;
	args->task_off = __builtin_offsetof(struct umcg_scx_shared, task) +
			 (u64)slot * sizeof(struct umcg_task);
	args->events_off = __builtin_offsetof(struct umcg_scx_shared, events) +
			   (u64)g * UMCG_SCX_EVENT_WORDS * sizeof(u64);
	return 0;
}

SEC("syscall")
int umcg_pick(struct umcg_scx_pick_args *args)
{
	int i;
	u32 tgid = bpf_get_current_pid_tgid() >> 32;
	u32 tid, cpu = args->cpu;
	struct task_struct *p;
	struct umcg_scx_shared *sh;
	struct enf_slot *sp;
	int ret = -EAGAIN;
	s32 gi = -1, si = -1;
	u32 st, seq;
	u32 seqf = args->flags & (UMCG_SCX_PICK_WOKEN | UMCG_SCX_PICK_SEQ);

	/* At most one of the two flags; @pad only with one. */
	if ((args->flags & ~seqf) ||
	    seqf == (UMCG_SCX_PICK_WOKEN | UMCG_SCX_PICK_SEQ) ||
	    (args->pad && !seqf) || !args->tid || cpu >= scx_bpf_nr_cpu_ids())
		return -EINVAL;
	/* The caller's group: a tid of another process is -ESRCH. */
	ret = enf_tid_of(args->tid, tgid);
	if (ret < 0)
		return ret;
	tid = ret;
	ret = -EAGAIN;
	bpf_for(i, 0, enf_slots_used()) {
		struct enf_slot *s = bpf_map_lookup_elem(&slots, &i);

		if (s && s->tid == tid) {
			if (s->tgid != tgid || s->role != ENF_ROLE_WORKER)
				return -ESRCH;
			si = i;
			break;
		}
	}
	if (si < 0)
		return -ESRCH;
	/*
	 * Its own group's DSQ (the slot says which): two threads of a
	 * process registering at once may each have claimed a group.
	 */
	sp = bpf_map_lookup_elem(&slots, &si);
	if (!sp)
		return -ESRCH;
	gi = sp->group & (UMCG_SCX_MAX_GROUPS - 1);

	/*
	 * UMCG_SCX_PICK_WOKEN, not held (i): running already, or asleep
	 * with its wake-up coming.
	 */
	st = READ_ONCE(sp->state);
	if (!seqf)
		goto held;
	sh = enf_shared();
	if (!sh)
		return -ESRCH;
	seq = (u32)sh->task[si & (UMCG_SCX_MAX_TASKS - 1)].seq;
	/* Only the hold the caller saw: a later one is not its to end. */
	if (args->flags & UMCG_SCX_PICK_SEQ) {
		if (seq != args->pad)
			return -ESTALE;
		goto held;
	}
	/*
	 * UMCG_SCX_PICK_WOKEN.  One move since the caller woke it: this
	 * wake-up's hold (runnable() published RUNNABLE).  More: the worker
	 * ran on, and a later sleep or hold is not the caller's to end.
	 */
	if (seq == args->pad + 1)
		goto held;
	if (seq != args->pad)
		return -ESTALE;
	if (st == UMCG_TASK_RUNNING)
		return 0;
	if (st == UMCG_TASK_BLOCKED) {
		WRITE_ONCE(sp->pick_cpu, cpu + 1);
		if (__sync_val_compare_and_swap(&sp->state, UMCG_TASK_BLOCKED,
						UMCG_TASK_RUNNING) ==
		    UMCG_TASK_BLOCKED) {
			sh = enf_shared();
			if (sh) {
				enf_publish_begin(sh, si);
				WRITE_ONCE(sh->task[si & (UMCG_SCX_MAX_TASKS - 1)].state,
					   UMCG_TASK_RUNNING);
				enf_announce(sh, si, gi);
			}
			enf_stat(UMCG_SCX_ENF_PICK_ASLEEP);
			return 0;
		}
		/* runnable() held it meanwhile: move it like any held one. */
		__sync_val_compare_and_swap(&sp->pick_cpu, cpu + 1, 0);
	} else if (st != UMCG_TASK_RUNNABLE) {
		return -ESRCH;	/* exiting */
	}
held:

	bpf_rcu_read_lock();
	bpf_for_each(scx_dsq, p, UMCG_SCX_DSQ_GROUP(gi & (UMCG_SCX_MAX_GROUPS - 1)), 0) {
		struct enf_task *t;

		if (p->pid != tid)
			continue;
		t = enf_task_of(p);
		if (!t || !t->held || p->tgid != tgid) {
			ret = -EAGAIN;
			break;
		}
		if (!bpf_cpumask_test_cpu(cpu, p->cpus_ptr)) {
			ret = -EINVAL;
			break;
		}
		if (!enf_unhold(t)) {
			ret = -EAGAIN;	/* the timer or dispatch released it */
			break;
		}
		/*
		 * It cannot go to @cpu now (migration disabled, @cpu offline:
		 * m., n.): anywhere it may run.
		 */
		if ((enf_cpu_ok(p, cpu) &&
		     scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, enf_worker_dsq(cpu), 0)) ||
		    scx_bpf_dsq_move(BPF_FOR_EACH_ITER, p, SCX_DSQ_GLOBAL, 0)) {
			enf_stat(UMCG_SCX_ENF_PICK);
			ret = 0;
		} else {
			enf_rehold(t);
		}
		break;
	}
	bpf_rcu_read_unlock();
	/* A caller on @cpu gives it up itself: it yields or sleeps next. */
	if (!ret && cpu != bpf_get_smp_processor_id())
		scx_bpf_kick_cpu(cpu, SCX_KICK_PREEMPT);
	return ret;
}

SEC("syscall")
int umcg_unregister(struct umcg_scx_unregister_args *args)
{
	struct task_struct *cur = bpf_get_current_task_btf();
	u64 id = bpf_get_current_pid_tgid();
	u32 tgid = id >> 32;
	struct umcg_scx_shared *sh;
	struct enf_task *t;
	struct enf_slot *s;
	u32 idx, role;

	if (args->flags || args->pad || args->reserved)
		return -EINVAL;
	t = enf_task_of(cur);
	if (!t)
		return -ENOENT;
	idx = t->slot;
	s = bpf_map_lookup_elem(&slots, &idx);
	if (!s || s->tid != t->tid) {
		scx_bpf_error("umcg: unregister: slot %u of %d (tid %u) lost",
			      idx, (u32)id, t->tid);
		return -EINVAL;
	}
	/* Published NEW: the slot reads free; no hook looks at it now. */
	role = t->role;
	if (__sync_val_compare_and_swap(&t->role, role, 0) != role)
		return -ENOENT;	/* dropped meanwhile (enf_drop()) */
	if (role == ENF_ROLE_SERVER) {
		enf_server_count(t, -1);
		enf_bell_unclaim(t);
	}
	t->state = UMCG_TASK_NEW;
	t->held = 0;
	sh = enf_shared();
	if (sh) {
		enf_publish_begin(sh, idx);
		WRITE_ONCE(sh->task[idx & (UMCG_SCX_MAX_TASKS - 1)].state,
			   UMCG_TASK_NEW);
		enf_announce(sh, idx, t->group);
	}
	enf_group_put(t->group, tgid);
	WRITE_ONCE(s->pick_cpu, 0);
	WRITE_ONCE(s->state, UMCG_TASK_NEW);
	/* Last: the slot may be claimed again from here. */
	WRITE_ONCE(s->tid, 0);
	enf_slot_shrink();
	enf_stat(UMCG_SCX_ENF_UNREGISTER);
	return 0;
}

SEC("syscall")
int umcg_poke(struct umcg_scx_poke_args *args)
{
	u32 tgid = bpf_get_current_pid_tgid() >> 32;
	u32 cpu = args->cpu;
	int i;

	if (args->flags || args->reserved || cpu >= UMCG_SCX_MAX_CPUS ||
	    cpu >= scx_bpf_nr_cpu_ids())
		return -EINVAL;
	bpf_for(i, 0, enf_slots_used()) {
		struct enf_slot *s = bpf_map_lookup_elem(&slots, &i);

		if (s && s->tid && s->tgid == tgid &&
		    s->role == ENF_ROLE_SERVER && s->cpu == cpu) {
			struct enf_cpu *c = enf_cpu_of(cpu);

			enf_stat(UMCG_SCX_ENF_POKE);
			enf_ring(s->group, cpu);
			if (!c || !READ_ONCE(c->nr_held))
				return 0;
			bpf_rcu_read_lock();
			if (!enf_run_server_now(cpu))
				enf_poke_server(cpu, SCX_KICK_PREEMPT);
			bpf_rcu_read_unlock();
			return 0;
		}
	}
	return -ESRCH;
}

#endif /* UMCG_ENFORCE_BPF_H */
