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
 * 1 KiB); binding the shared area (UMCG_KMOD_AREA_SIZE, 260 KiB), the
 * server list (8 KiB) and the task hash (8 KiB); registration a chunk of
 * UMCG_SLOTS_PER_CHUNK slots (8 KiB) when the allocated ones are full.  One user (the real uid of the
 * opener) may have at most max_groups_per_user groups at once; the next
 * open() fails with -ENOSPC.  CAP_SYS_RESOURCE is exempt.
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

static void umcg_group_free(struct umcg_group *grp)
{
	struct umcg_slot *slot;
	unsigned int i;

	for (i = 0; i < UMCG_KMOD_MAX_TASKS; i++) {
		slot = umcg_slot_at(grp, i);
		if (!slot)
			break;
		if (slot->task)
			umcg_slot_free(grp, slot);
	}
	/*
	 * Hook and tid lookups that found a slot before it left; a group
	 * that never had a slot was never visible to them (and closing many
	 * idle files does not wait a grace period each).
	 */
	if (grp->chunks[0])
		synchronize_rcu();

	if (grp->mm) {
		mutex_lock(&umcg_groups_lock);
		list_del(&grp->node);
		mutex_unlock(&umcg_groups_lock);
		mmdrop(grp->mm);
		put_pid(grp->tgid);
	}
	for (i = 0; i < UMCG_NR_CHUNKS; i++)
		kvfree(grp->chunks[i]);
	xa_destroy(&grp->tids);
	kvfree(grp->task_hash);
	kvfree(grp->servers);
	vfree(grp->tasks);
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
	kref_init(&grp->ref);
	mutex_init(&grp->lock);
	spin_lock_init(&grp->server_lock);
	raw_spin_lock_init(&grp->hash_lock);
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
	struct umcg_group *other;
	struct umcg_task *tasks;
	struct hlist_head *task_hash;
	u16 *servers;

	lockdep_assert_held(&grp->lock);

	if (grp->mm)
		return umcg_group_owned(grp) ? 0 : -EPERM;
	if (!current->mm || (current->flags & PF_EXITING))
		return -EPERM;

	/*
	 * Not vmalloc_user(), which cannot be charged: zeroed here, mapped
	 * page by page by umcg_group_map().
	 */
	tasks = __vmalloc(UMCG_KMOD_AREA_SIZE, GFP_KERNEL_ACCOUNT | __GFP_ZERO);
	servers = kvcalloc(UMCG_KMOD_MAX_TASKS, sizeof(*servers),
			   GFP_KERNEL_ACCOUNT);
	/* Zeroed heads are empty lists. */
	task_hash = kvcalloc(1U << UMCG_TASK_HASH_BITS, sizeof(*task_hash),
			     GFP_KERNEL_ACCOUNT);
	if (!tasks || !servers || !task_hash) {
		vfree(tasks);
		kvfree(servers);
		kvfree(task_hash);
		return -ENOMEM;
	}

	mutex_lock(&umcg_groups_lock);
	list_for_each_entry(other, &umcg_groups, node) {
		if (other->mm == current->mm) {
			mutex_unlock(&umcg_groups_lock);
			vfree(tasks);
			kvfree(servers);
			kvfree(task_hash);
			return -EBUSY;
		}
	}
	mmgrab(current->mm);
	grp->tgid = get_pid(task_tgid(current));
	grp->signal = current->signal;
	grp->task_hash = task_hash;
	grp->servers = servers;
	grp->tasks = tasks;
	grp->events = (unsigned long *)((char *)tasks + UMCG_KMOD_TASKS_SIZE);
	/* Readers test mm first: publish the rest before it. */
	smp_store_release(&grp->mm, current->mm);
	list_add(&grp->node, &umcg_groups);
	mutex_unlock(&umcg_groups_lock);
	return 0;
}

/*
 * Allocate the next chunk of slots of bound group @grp.  grp->lock held.
 * Return: 0; -ENOSPC (all UMCG_NR_CHUNKS are there); -ENOMEM.
 */
int umcg_group_grow(struct umcg_group *grp)
{
	struct umcg_slot *chunk;
	unsigned int c, i;

	lockdep_assert_held(&grp->lock);

	for (c = 0; c < UMCG_NR_CHUNKS && grp->chunks[c]; c++)
		;
	if (c == UMCG_NR_CHUNKS)
		return -ENOSPC;
	chunk = kvcalloc(UMCG_SLOTS_PER_CHUNK, sizeof(*chunk),
			 GFP_KERNEL_ACCOUNT);
	if (!chunk)
		return -ENOMEM;
	for (i = 0; i < UMCG_SLOTS_PER_CHUNK; i++) {
		chunk[i].grp = grp;
		chunk[i].idx = c * UMCG_SLOTS_PER_CHUNK + i;
		umcg_slot_init_works(&chunk[i]);
		init_waitqueue_head(&chunk[i].waitq);
	}
	/* Lock-free readers (umcg_slot_at()) see it initialised. */
	smp_store_release(&grp->chunks[c], chunk);
	return 0;
}

/*
 * Map the shared area of bound group @grp into @vma, which covers exactly
 * UMCG_KMOD_AREA_SIZE bytes.  grp->lock held.
 */
int umcg_group_map(struct umcg_group *grp, struct vm_area_struct *vma)
{
	unsigned long off;
	int ret;

	lockdep_assert_held(&grp->lock);

	for (off = 0; off < UMCG_KMOD_AREA_SIZE; off += PAGE_SIZE) {
		ret = vm_insert_page(vma, vma->vm_start + off,
				     vmalloc_to_page((char *)grp->tasks + off));
		if (ret)
			return ret;
	}
	return 0;
}
