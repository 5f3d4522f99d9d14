/* SPDX-License-Identifier: GPL-2.0 */
/*
 * umcg_internal.h - what the files of umcg.ko share.
 *
 * Lock order (outermost first):
 *
 *   mmap_lock (held by the mm core around ->mmap)
 *     umcg_group.lock (mutex: registration, binding, mmap)
 *       umcg_groups_lock (mutex)
 *       umcg_hook_lock (mutex, hook.c: arming the block hook)
 *       umcg_group.tids' xa_lock
 *       umcg_group.hash_lock (raw spinlock)
 *         umcg_group_hash_lock (raw spinlock, task.c)
 *       umcg_group.server_lock (spinlock)
 *         umcg_slot.waitq.lock (inside wake_up())
 *   umcg_users_lock (mutex, group.c: the per-user counts; a leaf, taken
 *                    by open() and the group's free with no other lock)
 *
 * The scheduler hook (hook.c) and the task work (kmove.c) take only
 * umcg_group.hash_lock and umcg_group_hash_lock (the hook, at a worker's
 * last schedule), umcg_group.server_lock and wait queue locks, never a
 * mutex; they find their slot under RCU.  No user memory is touched (copy_{to,from}_user,
 * page faults) with a umcg lock held: the shared area is module memory.
 * The tracepoints (umcg_trace.h) take no lock and may fire under any of
 * these.
 *
 * Memory.  What a process makes the module allocate is charged to its
 * memory cgroup (GFP_KERNEL_ACCOUNT) and follows use: open() allocates
 * the small struct umcg_group; binding (the first REGISTER or mmap)
 * allocates the shared area, the server list and the task hash;
 * registration allocates slots UMCG_SLOTS_PER_CHUNK at a time.  One user may have at most
 * max_groups_per_user groups (group.c).
 *
 * Lifetimes.  A group (one per process) is referenced by its file, by
 * every queued task work of its threads, and holds a reference on the
 * module; it is freed from umcg_wq after an RCU grace period, so RCU
 * readers (the hook, tid lookups) may use any slot of a group they found.
 * Slot chunks live as long as their group.  A registered slot holds a
 * reference on its task and its struct pid.
 */
#ifndef _UMCG_INTERNAL_H
#define _UMCG_INTERNAL_H

#include <linux/fs.h>
#include <linux/hashtable.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/spinlock.h>
#include <linux/task_work.h>
#include <linux/types.h>
#include <linux/version.h>
#include <linux/wait.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include <umcg.h>

/*
 * The UMCG_FEATURE_* bits this module implements, as reported by
 * UMCG_IOC_GET_INFO.
 */
#define UMCG_KMOD_FEATURES \
	(UMCG_FEATURE_INFO | UMCG_FEATURE_REGISTER | UMCG_FEATURE_WAIT | \
	 UMCG_FEATURE_SWITCH | UMCG_FEATURE_BLOCK | UMCG_FEATURE_PREEMPT | \
	 UMCG_FEATURE_HANDOFF)

/*
 * Most threads one group (one process) may have registered at once.  Slots
 * are allocated UMCG_SLOTS_PER_CHUNK at a time (8 KiB a chunk on x86-64),
 * when registration needs one.
 */
#define UMCG_KMOD_MAX_TASKS	4096U
#define UMCG_SLOTS_PER_CHUNK	64U
#define UMCG_NR_CHUNKS		(UMCG_KMOD_MAX_TASKS / UMCG_SLOTS_PER_CHUNK)
/*
 * A group's task hash (task.c): 1024 buckets (8 KiB), at most 4 slots a
 * bucket on average in a full group.
 */
#define UMCG_TASK_HASH_BITS	10
static_assert(UMCG_KMOD_MAX_TASKS % UMCG_SLOTS_PER_CHUNK == 0);
/* The event bitmap fills at most its one page. */
static_assert(UMCG_KMOD_MAX_TASKS <= PAGE_SIZE * BITS_PER_BYTE);

/* Bytes of the per-thread state slots; the event bitmap follows. */
#define UMCG_KMOD_TASKS_SIZE \
	PAGE_ALIGN(UMCG_KMOD_MAX_TASKS * sizeof(struct umcg_task))
/* Bytes of the shared area, and so of the one valid mmap. */
#define UMCG_KMOD_AREA_SIZE	(UMCG_KMOD_TASKS_SIZE + PAGE_SIZE)

/*
 * wake_flags for default_wake_function() that ask try_to_wake_up() to
 * put the wakee on the waker's CPU: the kernel's WF_CURRENT_CPU, an
 * internal constant of kernel/sched/sched.h (0x40 since 6.6, where
 * seccomp's synchronous notifications introduced it, through 7.3;
 * default_wake_function() accepts WF_SYNC|WF_CURRENT_CPU).  No exported
 * header carries it, so it is pinned to the versions checked.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 6, 0) && \
	LINUX_VERSION_CODE < KERNEL_VERSION(7, 4, 0)
#define UMCG_WF_CURRENT_CPU	0x40
#else
#define UMCG_WF_CURRENT_CPU	0
#endif

/* Bits of umcg_slot.work_bits: which task works are queued. */
#define UMCG_WORK_RESUME	0
#define UMCG_WORK_PREEMPT	1

struct umcg_group;

/* The state (UMCG_TASK_*) of state word @s. */
static inline u32 umcg_state_of(u32 s)
{
	return s & UMCG_TASK_STATE_MASK;
}

/**
 * struct umcg_slot - one registered thread of a group
 * @task_node:  in the group's @task_hash, keyed by @task (task.c)
 * @task:       the thread (a reference), NULL if the slot is free
 * @pid:        its struct pid (a reference): tells a live thread from a
 *              dead one whose tid may have been reused
 * @grp:        the group, constant
 * @idx:        the slot's index, constant
 * @tid:        the thread's tid in its own pid namespace; the slot is the
 *              entry of umcg_group.tids at @tid while registered, unless
 *              the thread is dead and a new one took its tid
 * @cpu:        a server's CPU, as registered
 * @flags:      UMCG_REGISTER_WORKER or UMCG_REGISTER_SERVER
 * @in_wait:    the thread sleeps in a umcg wait (WAIT, SWITCH, the wait
 *              to be picked): the hook does not count it as a block.
 *              Written and read only by the thread itself
 * @gp_wait:    @task_node left the task hash at @gp: lock-free readers
 *              may still be on it until that grace period ends, so it is
 *              not hashed again before (task.c).  Under umcg_group.hash_lock
 * @resume_work: queued when a worker blocks, runs at its return to user
 * @preempt_work: queued by UMCG_IOC_PREEMPT
 * @work_bits:  UMCG_WORK_*: set while the matching work is queued; a slot
 *              is reused only when no work is queued on it
 * @rehold:     the thread left its wait to be picked for a stop (freezer,
 *              SIGSTOP, ptrace) and is to wait again after it (kmove.c).
 *              Written and read only by the thread itself
 * @gp:         see @gp_wait (get_state_synchronize_rcu())
 * @waitq:      where the thread sleeps: UMCG_IOC_WAIT/SWITCH and the wait
 *              to be picked after a kernel move
 *
 * Slot i is the struct umcg_task at offset i * sizeof(struct umcg_task)
 * of the group's mapping.  Fields other than @work_bits, @in_wait,
 * @gp_wait and @gp change only under umcg_group.lock, while the slot is
 * in neither the task hash nor umcg_group.tids.  128 bytes on x86-64.
 */
struct umcg_slot {
	struct hlist_node	task_node;
	struct task_struct	*task;
	struct pid		*pid;
	struct umcg_group	*grp;
	u32			idx;
	u32			tid;
	u32			cpu;
	u16			flags;
	bool			in_wait;
	bool			gp_wait;
	struct callback_head	resume_work;
	struct callback_head	preempt_work;
	unsigned long		work_bits;
	bool			rehold;
	unsigned long		gp;
	wait_queue_head_t	waitq;
};

struct umcg_user;

/**
 * struct umcg_group - the state of one process: one per open file of
 * /dev/umcg, bound to the process that first registers or mmaps through it.
 * @ref:      file + queued task works; the last put frees the group
 * @dying:    set when the file is released: no new task works, and
 *            workers waiting to be picked go on unmanaged
 * @lock:     serialises binding, registration and mmap of this group
 * @server_lock: guards @servers/@nr_servers for the lock-free pokers
 * @hash_lock: guards @task_hash, @nr_hashed, @hash_node's membership and
 *            the slots' @gp/@gp_wait (a raw spinlock: the hook takes it)
 * @node:     in umcg_groups once bound (under umcg_groups_lock)
 * @mm:       owner's mm (mmgrab()), NULL until bound; the key of umcg_groups
 * @tgid:     owner's thread group (a reference), NULL until bound
 * @signal:   owner's signal_struct, NULL until bound: the key of
 *            umcg_group_hash, only compared (the slots' task references
 *            keep it from being freed while the group is in that hash)
 * @hash_node: in umcg_group_hash (task.c) while @nr_hashed is not 0
 * @task_hash: the registered slots whose thread may still schedule, by
 *            task (1 << UMCG_TASK_HASH_BITS buckets); NULL until bound
 * @nr_hashed: the slots in @task_hash
 * @user:     the opener's user, whose max_groups_per_user this counts in
 * @tasks:    the shared area (UMCG_KMOD_AREA_SIZE zeroed bytes of
 *            vmalloc memory, mapped into the owner): the slots'
 *            struct umcg_task, then @events; NULL until bound
 * @events:   the event bitmap, in the shared area
 * @servers:  slot indices of the registered servers, room for
 *            UMCG_KMOD_MAX_TASKS; NULL until bound
 * @nr_tasks: slots in use
 * @nr_servers: registered servers, their slot indices in @servers[]
 * @free_work: frees the group (umcg_wq)
 * @tids:     registered slots by tid (RCU lookups)
 * @chunks:   the slots, UMCG_SLOTS_PER_CHUNK per chunk, allocated in
 *            order as registration needs them (umcg_slot_at())
 */
struct umcg_group {
	struct kref		ref;
	bool			dying;
	struct mutex		lock;	/* see the kernel-doc above */
	spinlock_t		server_lock;	/* ditto */
	raw_spinlock_t		hash_lock;	/* ditto */
	struct list_head	node;
	struct mm_struct	*mm;
	struct pid		*tgid;
	struct signal_struct	*signal;
	struct hlist_node	hash_node;
	struct hlist_head	*task_hash;
	unsigned int		nr_hashed;
	struct umcg_user	*user;
	struct umcg_task	*tasks;
	unsigned long		*events;
	u16			*servers;
	unsigned int		nr_tasks;
	unsigned int		nr_servers;
	struct work_struct	free_work;
	struct xarray		tids;
	struct umcg_slot	*chunks[UMCG_NR_CHUNKS];
};

/*
 * Slot @idx of @grp, or NULL if @idx is out of range or its chunk is not
 * allocated yet.  Any context: a chunk, once published, lives as long as
 * its group.
 */
static inline struct umcg_slot *umcg_slot_at(struct umcg_group *grp,
					     unsigned int idx)
{
	struct umcg_slot *chunk;

	if (idx >= UMCG_KMOD_MAX_TASKS)
		return NULL;
	chunk = READ_ONCE(grp->chunks[idx / UMCG_SLOTS_PER_CHUNK]);
	return chunk ? &chunk[idx % UMCG_SLOTS_PER_CHUNK] : NULL;
}

/* main.c: the module's workqueue and what /sys/class/misc/umcg shows. */
extern struct workqueue_struct *umcg_wq;
extern atomic_t umcg_nr_groups;		/* allocated groups */
extern atomic_t umcg_nr_tasks;		/* registered slots, all groups */
extern atomic_t umcg_nr_workers;	/* registered workers, all groups */
extern atomic_t umcg_nr_works;		/* queued task works */

/* group.c: lifetime, ownership, memory. */
struct umcg_group *umcg_group_alloc(int *err);
void umcg_group_put(struct umcg_group *grp);
void umcg_group_put_atomic(struct umcg_group *grp);
void umcg_group_release_file(struct umcg_group *grp);
int umcg_group_bind(struct umcg_group *grp);
bool umcg_group_owned(const struct umcg_group *grp);
int umcg_group_grow(struct umcg_group *grp);
int umcg_group_map(struct umcg_group *grp, struct vm_area_struct *vma);

/* task.c: registration of the calling thread, lookups. */
int umcg_task_add(struct umcg_group *grp,
		  const struct umcg_register_args *args, u64 *task_off);
int umcg_task_del(struct umcg_group *grp);
void umcg_slot_free(struct umcg_group *grp, struct umcg_slot *slot);
void umcg_slot_unhash_task(struct umcg_slot *slot);
struct umcg_slot *umcg_slot_of_task(struct task_struct *tsk,
				    unsigned int *seen);
struct umcg_slot *umcg_slot_of_current(struct umcg_group *grp);
struct umcg_slot *umcg_slot_of_tid(struct umcg_group *grp, u32 tid);

/*
 * hook.c: block detection (sched_entry_tp or a kprobe on schedule), armed
 * while a worker is registered: umcg_hook_get() for each, before it can
 * block; umcg_hook_put() when its slot is freed.
 */
int umcg_hook_init(void);
void umcg_hook_exit(void);
const char *umcg_hook_name(void);
int umcg_hook_get(void);
void umcg_hook_put(void);
bool umcg_hook_armed(void);
u64 umcg_hook_calls(void);
u64 umcg_hook_hits(void);
u64 umcg_hook_entries(void);

/* kmove.c: the moves the kernel makes on workers, events, pokes. */
void umcg_worker_sleeping(struct umcg_slot *slot);
void umcg_worker_preempt(struct umcg_slot *slot);
void umcg_slot_init_works(struct umcg_slot *slot);
void umcg_wake_slot(struct umcg_group *grp, unsigned int idx,
		    int wake_flags);

/* wait.c: UMCG_IOC_WAIT, WAKE, SWITCH, PREEMPT. */
int umcg_task_sleep(struct umcg_group *grp, u32 flags, u64 timeout_ns);
int umcg_task_wakeup(struct umcg_group *grp, u32 tid);
int umcg_task_switch(struct umcg_group *grp, u32 next_tid, u32 flags,
		     u64 timeout_ns);
int umcg_task_preempt(struct umcg_group *grp, u32 tid);

/* mmap.c: the .mmap of /dev/umcg. */
int umcg_mmap(struct file *file, struct vm_area_struct *vma);

/* ioctl.c: the .unlocked_ioctl of /dev/umcg. */
long umcg_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

#endif /* _UMCG_INTERNAL_H */
