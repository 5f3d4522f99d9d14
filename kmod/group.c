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
 *
 * A group is allocated unbound by open().  The first REGISTER or mmap
 * through its file binds it to the calling process: its mm (the key of
 * umcg_groups, one group per mm) and its thread group.  From then on only
 * threads of that thread group with that mm may use it (C8): a forked child,
 * a process the fd was passed to, or the process after execve() get -EPERM.
 *
 * References: the file holds one from open() to release (its last fd
 * closed and its last mapping unmapped, which a killed process does in
 * do_exit()); each queued task work of its threads holds one.  The last
 * put frees the group, after an RCU grace period for the lock-free
 * readers: at once from sleepable context, from umcg_wq when it comes
 * from atomic context (the scheduler hook); module exit destroys umcg_wq,
 * which waits for a free in progress.
 */
#include <linux/errno.h>
#include <linux/list.h>
#include <linux/module.h>
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

static void umcg_group_free(struct umcg_group *grp)
{
	unsigned int i;

	for (i = 0; i < UMCG_KMOD_MAX_TASKS; i++)
		if (grp->slots[i].task)
			umcg_slot_free(grp, &grp->slots[i]);
	/* Hook and tid lookups that found a slot before it left. */
	synchronize_rcu();

	if (grp->mm) {
		mutex_lock(&umcg_groups_lock);
		list_del(&grp->node);
		mutex_unlock(&umcg_groups_lock);
		mmdrop(grp->mm);
		put_pid(grp->tgid);
	}
	vfree(grp->tasks);
	mutex_destroy(&grp->lock);
	kvfree(grp);
	atomic_dec(&umcg_nr_groups);
	module_put(THIS_MODULE);
}

static void umcg_group_free_work(struct work_struct *work)
{
	umcg_group_free(container_of(work, struct umcg_group, free_work));
}

struct umcg_group *umcg_group_alloc(void)
{
	struct umcg_group *grp;
	unsigned int i;

	grp = kvzalloc(sizeof(*grp), GFP_KERNEL);
	if (!grp)
		return NULL;
	kref_init(&grp->ref);
	mutex_init(&grp->lock);
	spin_lock_init(&grp->server_lock);
	hash_init(grp->tid_hash);
	for (i = 0; i < UMCG_KMOD_MAX_TASKS; i++) {
		grp->slots[i].grp = grp;
		grp->slots[i].idx = i;
		umcg_slot_init_works(&grp->slots[i]);
		init_waitqueue_head(&grp->waitq[i]);
	}
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
	unsigned int i;

	WRITE_ONCE(grp->dying, true);
	smp_mb();
	for (i = 0; i < UMCG_KMOD_MAX_TASKS; i++)
		wake_up_all(&grp->waitq[i]);
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

	lockdep_assert_held(&grp->lock);

	if (grp->mm)
		return umcg_group_owned(grp) ? 0 : -EPERM;
	if (!current->mm || (current->flags & PF_EXITING))
		return -EPERM;

	tasks = vmalloc_user(UMCG_KMOD_AREA_SIZE);
	if (!tasks)
		return -ENOMEM;

	mutex_lock(&umcg_groups_lock);
	list_for_each_entry(other, &umcg_groups, node) {
		if (other->mm == current->mm) {
			mutex_unlock(&umcg_groups_lock);
			vfree(tasks);
			return -EBUSY;
		}
	}
	mmgrab(current->mm);
	grp->tgid = get_pid(task_tgid(current));
	grp->tasks = tasks;
	grp->events = (unsigned long *)((char *)tasks + UMCG_KMOD_TASKS_SIZE);
	/* Readers test mm first: publish the rest before it. */
	smp_store_release(&grp->mm, current->mm);
	list_add(&grp->node, &umcg_groups);
	mutex_unlock(&umcg_groups_lock);
	return 0;
}
