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
 * allocates the directory table, the summary page and a small task hash;
 * registration allocates slots and their shared words a chunk
 * (UMCG_SLOTS_PER_CHUNK) at a time, up to the file's max_tasks, and grows
 * the task hash and the server list as they fill.  One user may have at
 * most max_groups_per_user groups (group.c).
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
#include <linux/seqlock.h>
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
 * How many threads one group (one process) may register: the module
 * parameter max_tasks (group.c), read by open(): a file keeps the value it
 * was opened with (UMCG_IOC_GET_INFO reports it, the mapping is sized by
 * it).  At most UMCG_KMOD_TASKS_LIMIT, so that the per-file state sized by
 * it (the directory of chunks, the summary page) stays small.
 */
#define UMCG_KMOD_TASKS_DEFAULT	131072U
#define UMCG_KMOD_TASKS_LIMIT	(1U << 20)

/*
 * Growth.  Slots come in chunks of UMCG_SLOTS_PER_CHUNK: one page of their
 * struct umcg_task words (64 on 4 KiB pages) and the kernel's struct
 * umcg_slot array.  UMCG_CHUNKS_PER_DIR chunks make a directory (struct
 * umcg_dir, 4096 slots on 4 KiB pages), which also points at the 64-bit
 * words of the event bitmap its slots use; an event page holds the words
 * of UMCG_DIRS_PER_EVPAGE directories.  Everything is allocated by
 * REGISTER when it needs the next chunk, never freed before the group.
 */
#define UMCG_SLOTS_PER_CHUNK	(PAGE_SIZE / sizeof(struct umcg_task))
#define UMCG_CHUNKS_PER_DIR	64U
#define UMCG_SLOTS_PER_DIR	(UMCG_SLOTS_PER_CHUNK * UMCG_CHUNKS_PER_DIR)
#define UMCG_DIRS_PER_EVPAGE	(PAGE_SIZE * BITS_PER_BYTE / UMCG_SLOTS_PER_DIR)
static_assert(PAGE_SIZE % sizeof(struct umcg_task) == 0);
static_assert(UMCG_DIRS_PER_EVPAGE * UMCG_SLOTS_PER_DIR ==
	      PAGE_SIZE * BITS_PER_BYTE);
/* One summary page: a bit for every 64-bit word of the event bitmap. */
static_assert(UMCG_KMOD_TASKS_LIMIT / 64 <= PAGE_SIZE * BITS_PER_BYTE);
/* Slot indices, UMCG_NEXT_SLOT() included, fit in 31 bits. */
static_assert(UMCG_KMOD_TASKS_LIMIT < UMCG_NEXT_TAKEN);

/*
 * A group's task hash (task.c) starts with 1 << UMCG_TASK_HASH_MIN_BITS
 * buckets and grows fourfold whenever it holds more than two slots a
 * bucket, up to 1 << UMCG_TASK_HASH_MAX_BITS.
 */
#define UMCG_TASK_HASH_MIN_BITS	6
#define UMCG_TASK_HASH_MAX_BITS	20

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
 * @srv_listed: in umcg_group.servers[] (under umcg_group.server_lock)
 * @gp:         see @gp_wait (get_state_synchronize_rcu())
 * @free_node:  in umcg_group.free_slots or gp_slots while the slot is free
 * @waitq:      where the thread sleeps: UMCG_IOC_WAIT/SWITCH and the wait
 *              to be picked after a kernel move
 *
 * Slot i is the struct umcg_task at offset i * sizeof(struct umcg_task)
 * of the group's mapping (umcg_task_of()).  Fields other than @work_bits,
 * @in_wait, @gp_wait, @gp and @srv_listed change only under
 * umcg_group.lock, while the slot is in neither the task hash nor
 * umcg_group.tids.  152 bytes on x86-64.
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
	bool			srv_listed;
	unsigned long		gp;
	struct list_head	free_node;
	wait_queue_head_t	waitq;
};

/**
 * struct umcg_dir - UMCG_CHUNKS_PER_DIR chunks of a group's slots
 * @slots:  chunk i's UMCG_SLOTS_PER_CHUNK slots, NULL until allocated
 * @tasks:  chunk i's page of struct umcg_task words, published before
 *          @slots[i]
 * @events: the event bitmap's words of this directory's slots (in an
 *          event page), set before the directory is published
 *
 * Entries go from NULL to a value once (release), under umcg_group.lock,
 * and stay until the group is freed; lock-free readers load them with
 * acquire.
 */
struct umcg_dir {
	struct umcg_slot	*slots[UMCG_CHUNKS_PER_DIR];
	struct umcg_task	*tasks[UMCG_CHUNKS_PER_DIR];
	unsigned long		*events;
};

/**
 * struct umcg_task_table - a group's task hash (task.c)
 * @rcu:   frees a table that was replaced by a bigger one
 * @bits:  1 << @bits buckets
 * @heads: the buckets
 */
struct umcg_task_table {
	struct rcu_head		rcu;
	unsigned int		bits;
	struct hlist_head	heads[];
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
 * @hash_seq: odd while the task hash is being moved to a bigger table;
 *            a lock-free lookup that missed retries if it changed
 * @node:     in umcg_groups once bound (under umcg_groups_lock)
 * @mm:       owner's mm (mmgrab()), NULL until bound; the key of umcg_groups
 * @tgid:     owner's thread group (a reference), NULL until bound
 * @signal:   owner's signal_struct, NULL until bound: the key of
 *            umcg_group_hash, only compared (the slots' task references
 *            keep it from being freed while the group is in that hash)
 * @hash_node: in umcg_group_hash (task.c) while @nr_hashed is not 0
 * @task_hash: the registered slots whose thread may still schedule, by
 *            task (RCU; replaced by a bigger table as it fills); NULL
 *            until bound
 * @nr_hashed: the slots in @task_hash
 * @user:     the opener's user, whose max_groups_per_user this counts in
 * @max_tasks: the module's max_tasks when the file was opened: most slots
 *            of this group, and the size of its mapping; constant
 * @nr_chunks: chunks allocated (in order: chunk c holds slots
 *            c * UMCG_SLOTS_PER_CHUNK and on); under @lock
 * @dirs:     DIV_ROUND_UP(@max_tasks, UMCG_SLOTS_PER_DIR) directories,
 *            NULL until allocated; the array is NULL until bound
 * @ev_pages: the event bitmap's pages, NULL until their first directory
 * @summary_page: the summary of the event bitmap, allocated at bind: bit
 *            w is set after a bit of word w of the bitmap (uapi/umcg.h)
 * @summary:  its kernel address
 * @free_slots: the allocated slots without a thread, ready for reuse
 *            (@lock)
 * @gp_slots: those still waiting for their hash node's grace period
 * @reap_pos: where REGISTER's sweep for dead threads' slots goes on
 * @servers:  slot indices of the registered servers (@server_lock), room
 *            for @servers_cap
 * @nr_tasks: slots in use
 * @nr_servers: registered servers, their slot indices in @servers[]
 * @free_work: frees the group (umcg_wq)
 * @tids:     registered slots by tid (RCU lookups)
 */
struct umcg_group {
	struct kref		ref;
	bool			dying;
	struct mutex		lock;	/* see the kernel-doc above */
	spinlock_t		server_lock;	/* ditto */
	raw_spinlock_t		hash_lock;	/* ditto */
	seqcount_raw_spinlock_t	hash_seq;
	struct list_head	node;
	struct mm_struct	*mm;
	struct pid		*tgid;
	struct signal_struct	*signal;
	struct hlist_node	hash_node;
	struct umcg_task_table __rcu *task_hash;
	unsigned int		nr_hashed;
	struct umcg_user	*user;
	unsigned int		max_tasks;
	unsigned int		nr_chunks;
	struct umcg_dir		**dirs;
	struct page		**ev_pages;
	struct page		*summary_page;
	unsigned long		*summary;
	struct list_head	free_slots;
	struct list_head	gp_slots;
	unsigned int		reap_pos;
	u32			*servers;
	unsigned int		servers_cap;
	unsigned int		nr_tasks;
	unsigned int		nr_servers;
	struct work_struct	free_work;
	struct xarray		tids;
};

/*
 * Slot @idx of @grp, or NULL if @idx is out of range or its chunk is not
 * allocated yet.  Any context: a chunk, once published, lives as long as
 * its group.
 */
static inline struct umcg_slot *umcg_slot_at(struct umcg_group *grp,
					     unsigned int idx)
{
	struct umcg_dir **dirs = READ_ONCE(grp->dirs);
	struct umcg_slot *chunk;
	struct umcg_dir *dir;

	if (idx >= grp->max_tasks || !dirs)
		return NULL;
	dir = smp_load_acquire(&dirs[idx / UMCG_SLOTS_PER_DIR]);
	if (!dir)
		return NULL;
	chunk = smp_load_acquire(&dir->slots[idx / UMCG_SLOTS_PER_CHUNK %
					     UMCG_CHUNKS_PER_DIR]);
	return chunk ? &chunk[idx % UMCG_SLOTS_PER_CHUNK] : NULL;
}

/*
 * The shared struct umcg_task of @slot (one umcg_slot_at() returned, so
 * its chunk is published).
 */
static inline struct umcg_task *umcg_task_of(const struct umcg_slot *slot)
{
	struct umcg_dir *dir = READ_ONCE(slot->grp->dirs[slot->idx /
							 UMCG_SLOTS_PER_DIR]);

	return &READ_ONCE(dir->tasks[slot->idx / UMCG_SLOTS_PER_CHUNK %
				     UMCG_CHUNKS_PER_DIR])
		[slot->idx % UMCG_SLOTS_PER_CHUNK];
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
struct page *umcg_group_page(struct umcg_group *grp, unsigned long pgoff);
unsigned long umcg_group_map_size(const struct umcg_group *grp);
void umcg_group_event(struct umcg_group *grp, unsigned int idx);

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
