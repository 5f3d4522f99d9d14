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
 * (wait.c nests the per-slot wait queue locks inside umcg_group.lock.)
 *
 * A group is allocated unbound by open().  The first REGISTER or mmap
 * through its file binds it to the calling process: its mm (the key of
 * umcg_groups, one group per mm) and its thread group.  From then on only
 * threads of that thread group with that mm may use it (C8): a forked child,
 * a process the fd was passed to, or the process after execve() get -EPERM.
 * The group is freed with the file, when its last fd is closed and its last
 * mapping unmapped, which a killed process does in do_exit().
 */
#include <linux/errno.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/pid.h>
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

struct umcg_group *umcg_group_alloc(void)
{
	struct umcg_group *grp;
	unsigned int i;

	grp = kvzalloc(sizeof(*grp), GFP_KERNEL);
	if (!grp)
		return NULL;
	mutex_init(&grp->lock);
	for (i = 0; i < UMCG_KMOD_MAX_TASKS; i++)
		init_waitqueue_head(&grp->waitq[i]);
	INIT_LIST_HEAD(&grp->node);
	return grp;
}

/* Called from ->release: no other user of @grp is left. */
void umcg_group_free(struct umcg_group *grp)
{
	unsigned int i;

	if (grp->mm) {
		mutex_lock(&umcg_groups_lock);
		list_del(&grp->node);
		mutex_unlock(&umcg_groups_lock);
		mmdrop(grp->mm);
		put_pid(grp->tgid);
	}
	for (i = 0; i < UMCG_KMOD_MAX_TASKS; i++)
		put_pid(grp->slots[i].pid);
	vfree(grp->tasks);
	mutex_destroy(&grp->lock);
	kvfree(grp);
}

/* Is the caller a thread of the process @grp is bound to?  grp->lock held. */
bool umcg_group_owned(const struct umcg_group *grp)
{
	return grp->mm && grp->mm == current->mm &&
	       grp->tgid == task_tgid(current);
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

	tasks = vmalloc_user(UMCG_KMOD_TASKS_SIZE);
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
	grp->mm = current->mm;
	grp->tgid = get_pid(task_tgid(current));
	grp->tasks = tasks;
	list_add(&grp->node, &umcg_groups);
	mutex_unlock(&umcg_groups_lock);
	return 0;
}
