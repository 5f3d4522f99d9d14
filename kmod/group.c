// SPDX-License-Identifier: GPL-2.0
/*
 * group.c - per-process group state: allocation, binding to its owner
 * process, and teardown.
 *
 * Lock order (outermost first):
 *
 *   mmap_lock (only when called from ->mmap)
 *     umcg_group.lock
 *       umcg_groups_lock
 *   umcg_users_lock (a leaf: open() and the group's free, no other lock)
 *
 * A group is allocated unbound by open().  The first REGISTER or mmap
 * through its file binds it to the calling process: its mm (the key of
 * umcg_groups, one group per mm) and its thread group.  From then on only
 * threads of that thread group with that mm may use it (C8): a forked child,
 * a process the fd was passed to, or the process after execve() get -EPERM.
 *
 * Memory (C8: charged to the caller, bounded).  Every allocation is
 * GFP_KERNEL_ACCOUNT, charged to the memory cgroup of the thread that
 * makes it, and follows use: open() allocates struct umcg_group (under
 * 1 KiB); binding the directory table (8 bytes per UMCG_SLOTS_PER_DIR of
 * max_tasks: 256 bytes at the default), the summary page and the first
 * task hash (64 buckets); the first registration in a directory that
 * directory (1 KiB) and, for the first of UMCG_DIRS_PER_EVPAGE directories,
 * an event page; every UMCG_SLOTS_PER_CHUNK-th registration a chunk: one
 * page of shared words plus the slots (152 bytes each: three pages).
 * The task hash grows fourfold past two slots a bucket, the server list
 * doubles.  A group holds at most its file's max_tasks slots (the module
 * parameter, at most UMCG_KMOD_TASKS_LIMIT; REGISTER then fails with
 * -ENOSPC).  One user (the real uid of the opener) may have at most
 * max_groups_per_user groups at once; the next open() fails with -ENOSPC.
 * CAP_SYS_RESOURCE is exempt from that cap, not from max_tasks.
 *
 * Growth of the shared area.  The owner maps the whole area once, sized by
 * max_tasks (mmap.c); its pages are inserted by the fault handler, which
 * finds them with umcg_group_page() and fails with SIGBUS where nothing is
 * allocated yet.  Only REGISTER grows a group (umcg_group_grow(), under
 * umcg_group.lock, so one grower at a time), and it only ever adds: it
 * zeroes each new page and publishes it with a release store, in the
 * order event page, directory, page of words, slots; the readers (the
 * fault handler, the hook, tid lookups, umcg_slot_at()) load with acquire
 * and see each object initialised.  Nothing is unpublished before the
 * group is freed, which happens only once its file is released, i.e.
 * after the last mapping is gone.
 *
 * References: the file holds one from open() to release (its last fd
 * closed and its last mapping unmapped, which a killed process does in
 * do_exit()); each queued task work of its threads holds one.  The last
 * put frees the group, after an RCU grace period for the lock-free
 * readers: at once from sleepable context, from umcg_wq when it comes
 * from atomic context (the scheduler hook); module exit destroys umcg_wq,
 * which waits for a free in progress.
 */
#include <linux/capability.h>
#include <linux/cred.h>
#include <linux/errno.h>
#include <linux/hashtable.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/rcupdate.h>
#include <linux/sched.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <linux/wait.h>

#include "umcg_internal.h"

/* The bound groups, at most one per mm. */
static LIST_HEAD(umcg_groups);
static DEFINE_MUTEX(umcg_groups_lock);

static unsigned int umcg_max_tasks = UMCG_KMOD_TASKS_DEFAULT;

static int umcg_max_tasks_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n;
	int ret;

	ret = kstrtouint(val, 0, &n);
	if (ret)
		return ret;
	if (!n || n > UMCG_KMOD_TASKS_LIMIT)
		return -EINVAL;
	WRITE_ONCE(umcg_max_tasks, n);
	return 0;
}

static const struct kernel_param_ops umcg_max_tasks_ops = {
	.set	= umcg_max_tasks_set,
	.get	= param_get_uint,
};
module_param_cb(max_tasks, &umcg_max_tasks_ops, &umcg_max_tasks, 0644);
MODULE_PARM_DESC(max_tasks,
		 "most threads one process may register, 1 to 1048576 (default 131072); a file keeps the value it was opened with");

static unsigned int max_groups_per_user = 128;
module_param(max_groups_per_user, uint, 0644);
MODULE_PARM_DESC(max_groups_per_user,
		 "most open files of /dev/umcg one user may have (default 128; CAP_SYS_RESOURCE is exempt)");

/* A user that has groups, and how many. */
struct umcg_user {
	struct hlist_node	node;
	kuid_t			uid;
	unsigned int		nr_groups;
};

static DEFINE_HASHTABLE(umcg_users, 6);
static DEFINE_MUTEX(umcg_users_lock);

/*
 * Count a new group against the calling user's max_groups_per_user.
 * Return: the user; ERR_PTR(-ENOSPC) past the cap, ERR_PTR(-ENOMEM).
 */
static struct umcg_user *umcg_user_get(void)
{
	kuid_t uid = current_uid();
	struct umcg_user *u, *fresh;

	fresh = kzalloc(sizeof(*fresh), GFP_KERNEL_ACCOUNT);
	mutex_lock(&umcg_users_lock);
	hash_for_each_possible(umcg_users, u, node, __kuid_val(uid))
		if (uid_eq(u->uid, uid))
			goto found;
	if (!fresh) {
		mutex_unlock(&umcg_users_lock);
		return ERR_PTR(-ENOMEM);
	}
	u = fresh;
	fresh = NULL;
	u->uid = uid;
	hash_add(umcg_users, &u->node, __kuid_val(uid));
found:
	if (u->nr_groups >= READ_ONCE(max_groups_per_user) &&
	    !capable(CAP_SYS_RESOURCE)) {
		if (!u->nr_groups) {
			hash_del(&u->node);
			kfree(u);
		}
		u = ERR_PTR(-ENOSPC);
	} else {
		u->nr_groups++;
	}
	mutex_unlock(&umcg_users_lock);
	kfree(fresh);
	return u;
}

static void umcg_user_put(struct umcg_user *u)
{
	mutex_lock(&umcg_users_lock);
	if (!--u->nr_groups) {
		hash_del(&u->node);
		kfree(u);
	}
	mutex_unlock(&umcg_users_lock);
}

/*
 * A chunk's slots: whole pages (alloc_pages_exact(), three on x86-64),
 * where kmalloc() would round 9.5 KiB up to 16.
 */
#define UMCG_CHUNK_SLOTS_SIZE	(UMCG_SLOTS_PER_CHUNK * sizeof(struct umcg_slot))

static unsigned int umcg_nr_dirs(const struct umcg_group *grp)
{
	return DIV_ROUND_UP(grp->max_tasks, UMCG_SLOTS_PER_DIR);
}

static unsigned int umcg_nr_ev_pages(const struct umcg_group *grp)
{
	return DIV_ROUND_UP(umcg_nr_dirs(grp), UMCG_DIRS_PER_EVPAGE);
}

static void umcg_group_free(struct umcg_group *grp)
{
	struct umcg_slot *slot;
	struct umcg_dir *dir;
	unsigned int i, c;

	for (i = 0; (slot = umcg_slot_at(grp, i)); i++)
		if (slot->task)
			umcg_slot_free(grp, slot);
	/*
	 * Hook and tid lookups that found a slot before it left; a group
	 * that never had a slot was never visible to them (and closing many
	 * idle files does not wait a grace period each).
	 */
	if (grp->nr_chunks)
		synchronize_rcu();

	if (grp->mm) {
		mutex_lock(&umcg_groups_lock);
		list_del(&grp->node);
		mutex_unlock(&umcg_groups_lock);
		mmdrop(grp->mm);
		put_pid(grp->tgid);
	}
	for (i = 0; grp->dirs && i < umcg_nr_dirs(grp); i++) {
		dir = grp->dirs[i];
		if (!dir)
			break;
		for (c = 0; c < UMCG_CHUNKS_PER_DIR; c++) {
			if (dir->slots[c])
				free_pages_exact(dir->slots[c],
						 UMCG_CHUNK_SLOTS_SIZE);
			if (dir->tasks[c])
				put_page(virt_to_page(dir->tasks[c]));
		}
		kfree(dir);
	}
	for (i = 0; grp->ev_pages && i < umcg_nr_ev_pages(grp); i++)
		if (grp->ev_pages[i])
			put_page(grp->ev_pages[i]);
	if (grp->summary_page)
		put_page(grp->summary_page);
	xa_destroy(&grp->tids);
	/* No reader is left: the grace period above, or never bound. */
	kvfree(rcu_dereference_protected(grp->task_hash, true));
	kvfree(grp->servers);
	kvfree(grp->dirs);
	kvfree(grp->ev_pages);
	umcg_user_put(grp->user);
	mutex_destroy(&grp->lock);
	kfree(grp);
	atomic_dec(&umcg_nr_groups);
	module_put(THIS_MODULE);
}

static void umcg_group_free_work(struct work_struct *work)
{
	umcg_group_free(container_of(work, struct umcg_group, free_work));
}

/*
 * A new unbound group for open(), counted against the caller's user.
 * Return: the group, or NULL with *@err -ENOSPC (max_groups_per_user) or
 * -ENOMEM.
 */
struct umcg_group *umcg_group_alloc(int *err)
{
	struct umcg_group *grp;
	struct umcg_user *u;

	u = umcg_user_get();
	if (IS_ERR(u)) {
		*err = PTR_ERR(u);
		return NULL;
	}
	grp = kzalloc(sizeof(*grp), GFP_KERNEL_ACCOUNT);
	if (!grp) {
		umcg_user_put(u);
		*err = -ENOMEM;
		return NULL;
	}
	grp->user = u;
	grp->max_tasks = READ_ONCE(umcg_max_tasks);
	kref_init(&grp->ref);
	mutex_init(&grp->lock);
	spin_lock_init(&grp->server_lock);
	raw_spin_lock_init(&grp->hash_lock);
	seqcount_raw_spinlock_init(&grp->hash_seq, &grp->hash_lock);
	INIT_LIST_HEAD(&grp->free_slots);
	INIT_LIST_HEAD(&grp->gp_slots);
	INIT_HLIST_NODE(&grp->hash_node);
	xa_init(&grp->tids);
	INIT_LIST_HEAD(&grp->node);
	INIT_WORK(&grp->free_work, umcg_group_free_work);
	__module_get(THIS_MODULE);
	atomic_inc(&umcg_nr_groups);
	return grp;
}

static void umcg_group_release(struct kref *ref)
{
	umcg_group_free(container_of(ref, struct umcg_group, ref));
}

static void umcg_group_release_deferred(struct kref *ref)
{
	struct umcg_group *grp = container_of(ref, struct umcg_group, ref);

	queue_work(umcg_wq, &grp->free_work);
}

/*
 * Drop a reference from a context that may sleep (file release, task
 * work): the last one frees the group before returning, so the module
 * can be unloaded as soon as its last user is gone.
 */
void umcg_group_put(struct umcg_group *grp)
{
	might_sleep();
	kref_put(&grp->ref, umcg_group_release);
}

/*
 * The file of @grp is released: nobody can pick its workers any more.  Let
 * those waiting to be picked go, queue no new task works, drop the file's
 * reference.
 */
void umcg_group_release_file(struct umcg_group *grp)
{
	struct umcg_slot *slot;
	unsigned int i;

	WRITE_ONCE(grp->dying, true);
	smp_mb();
	for (i = 0; (slot = umcg_slot_at(grp, i)); i++)
		wake_up_all(&slot->waitq);
	umcg_group_put(grp);
}

/* Drop a reference from any context; the last one frees on umcg_wq. */
void umcg_group_put_atomic(struct umcg_group *grp)
{
	kref_put(&grp->ref, umcg_group_release_deferred);
}

/* Is the caller a thread of the process @grp is bound to? */
bool umcg_group_owned(const struct umcg_group *grp)
{
	/* Pairs with umcg_group_bind()'s release: then @tgid is set. */
	struct mm_struct *mm = smp_load_acquire(&grp->mm);

	return mm && mm == current->mm && grp->tgid == task_tgid(current);
}

/*
 * Bind @grp to the calling process unless it is bound already.  Called with
 * grp->lock held.
 *
 * Return: 0; -EPERM if @grp belongs to another process; -EBUSY if the
 * caller's process has a group on another file; -ENOMEM.
 */
int umcg_group_bind(struct umcg_group *grp)
{
	struct umcg_task_table *task_hash;
	struct umcg_group *other;
	struct page **ev_pages, *summary;
	struct umcg_dir **dirs;

	lockdep_assert_held(&grp->lock);

	if (grp->mm)
		return umcg_group_owned(grp) ? 0 : -EPERM;
	if (!current->mm || (current->flags & PF_EXITING))
		return -EPERM;

	dirs = kvcalloc(umcg_nr_dirs(grp), sizeof(*dirs), GFP_KERNEL_ACCOUNT);
	ev_pages = kvcalloc(umcg_nr_ev_pages(grp), sizeof(*ev_pages),
			    GFP_KERNEL_ACCOUNT);
	summary = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	/* Zeroed heads are empty lists. */
	task_hash = kvzalloc(struct_size(task_hash, heads,
					 1U << UMCG_TASK_HASH_MIN_BITS),
			     GFP_KERNEL_ACCOUNT);
	if (!dirs || !ev_pages || !summary || !task_hash)
		goto nomem;
	task_hash->bits = UMCG_TASK_HASH_MIN_BITS;

	mutex_lock(&umcg_groups_lock);
	list_for_each_entry(other, &umcg_groups, node) {
		if (other->mm == current->mm) {
			mutex_unlock(&umcg_groups_lock);
			kvfree(dirs);
			kvfree(ev_pages);
			put_page(summary);
			kvfree(task_hash);
			return -EBUSY;
		}
	}
	mmgrab(current->mm);
	grp->tgid = get_pid(task_tgid(current));
	grp->signal = current->signal;
	rcu_assign_pointer(grp->task_hash, task_hash);
	grp->ev_pages = ev_pages;
	grp->summary_page = summary;
	grp->summary = page_address(summary);
	WRITE_ONCE(grp->dirs, dirs);
	/* Readers test mm first: publish the rest before it. */
	smp_store_release(&grp->mm, current->mm);
	list_add(&grp->node, &umcg_groups);
	mutex_unlock(&umcg_groups_lock);
	return 0;

nomem:
	kvfree(dirs);
	kvfree(ev_pages);
	if (summary)
		put_page(summary);
	kvfree(task_hash);
	return -ENOMEM;
}

/*
 * Allocate the directory of chunk @c of @grp if it has none yet, with its
 * event page.  grp->lock held.  Return: the directory, or NULL.
 */
static struct umcg_dir *umcg_dir_get(struct umcg_group *grp, unsigned int c)
{
	unsigned int d = c / UMCG_CHUNKS_PER_DIR;
	unsigned int e = d / UMCG_DIRS_PER_EVPAGE;
	struct umcg_dir *dir = grp->dirs[d];
	struct page *ev;

	if (dir)
		return dir;
	ev = grp->ev_pages[e];
	if (!ev) {
		ev = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
		if (!ev)
			return NULL;
		/* The fault handler may map it from now on. */
		smp_store_release(&grp->ev_pages[e], ev);
	}
	dir = kzalloc(sizeof(*dir), GFP_KERNEL_ACCOUNT);
	if (!dir)
		return NULL;
	dir->events = (unsigned long *)page_address(ev) +
		      d % UMCG_DIRS_PER_EVPAGE *
		      (UMCG_SLOTS_PER_DIR / BITS_PER_LONG);
	smp_store_release(&grp->dirs[d], dir);
	return dir;
}

/*
 * Allocate the next chunk of slots of bound group @grp, with its page of
 * shared words, and put its slots on the free list.  grp->lock held.
 * Return: 0; -ENOSPC (max_tasks slots are there); -ENOMEM.
 */
int umcg_group_grow(struct umcg_group *grp)
{
	unsigned int c = grp->nr_chunks, i, idx;
	struct umcg_slot *chunk;
	struct umcg_dir *dir;
	struct page *page;

	lockdep_assert_held(&grp->lock);

	if ((u64)c * UMCG_SLOTS_PER_CHUNK >= grp->max_tasks)
		return -ENOSPC;
	dir = umcg_dir_get(grp, c);
	if (!dir)
		return -ENOMEM;
	page = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!page)
		return -ENOMEM;
	chunk = alloc_pages_exact(UMCG_CHUNK_SLOTS_SIZE,
				  GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	if (!chunk) {
		put_page(page);
		return -ENOMEM;
	}
	/*
	 * First on the free list, lowest index first: ahead of freed slots
	 * that may still wait for their grace period.
	 */
	for (i = UMCG_SLOTS_PER_CHUNK; i-- > 0;) {
		idx = c * UMCG_SLOTS_PER_CHUNK + i;
		chunk[i].grp = grp;
		chunk[i].idx = idx;
		umcg_slot_init_works(&chunk[i]);
		init_waitqueue_head(&chunk[i].waitq);
		INIT_LIST_HEAD(&chunk[i].free_node);
		if (idx < grp->max_tasks)
			list_add(&chunk[i].free_node, &grp->free_slots);
	}
	/* Lock-free readers (umcg_slot_at(), the fault handler) see them zeroed. */
	smp_store_release(&dir->tasks[c % UMCG_CHUNKS_PER_DIR],
			  (struct umcg_task *)page_address(page));
	smp_store_release(&dir->slots[c % UMCG_CHUNKS_PER_DIR], chunk);
	grp->nr_chunks = c + 1;
	return 0;
}

/* Bytes of the one valid mapping of @grp's shared area. */
unsigned long umcg_group_map_size(const struct umcg_group *grp)
{
	return UMCG_MMAP_SIZE(grp->max_tasks, PAGE_SIZE);
}

/*
 * The page at page offset @pgoff of bound group @grp's mapping, or NULL if
 * it is not allocated (yet) or past the end.  Any context (the fault
 * handler): see "Growth of the shared area" above.
 */
struct page *umcg_group_page(struct umcg_group *grp, unsigned long pgoff)
{
	unsigned long nr_task_pages = UMCG_MMAP_TASKS_SIZE(grp->max_tasks,
							   PAGE_SIZE) >> PAGE_SHIFT;
	unsigned long nr_ev_pages = UMCG_MMAP_EVENTS_SIZE(grp->max_tasks,
							  PAGE_SIZE) >> PAGE_SHIFT;
	struct umcg_task *tasks;
	struct umcg_dir *dir;

	/* One page of words per chunk. */
	if (pgoff < nr_task_pages) {
		dir = smp_load_acquire(&grp->dirs[pgoff / UMCG_CHUNKS_PER_DIR]);
		if (!dir)
			return NULL;
		tasks = smp_load_acquire(&dir->tasks[pgoff % UMCG_CHUNKS_PER_DIR]);
		return tasks ? virt_to_page(tasks) : NULL;
	}
	pgoff -= nr_task_pages;
	if (pgoff < nr_ev_pages)
		return smp_load_acquire(&grp->ev_pages[pgoff]);
	pgoff -= nr_ev_pages;
	return pgoff ? NULL : grp->summary_page;
}

/*
 * Set slot @idx's bit in the event bitmap, then its word's bit in the
 * summary (both atomic read-modify-writes, full barriers on x86; the
 * caller orders what follows with smp_mb__after_atomic()).  A library
 * that clears a summary bit before it exchanges the words under it thus
 * never loses a bit.  Any context.
 */
void umcg_group_event(struct umcg_group *grp, unsigned int idx)
{
	struct umcg_dir *dir = READ_ONCE(grp->dirs[idx / UMCG_SLOTS_PER_DIR]);

	set_bit(idx % UMCG_SLOTS_PER_DIR, dir->events);
	smp_mb__after_atomic();
	set_bit(idx / 64, grp->summary);
}
