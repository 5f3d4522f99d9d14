// SPDX-License-Identifier: GPL-2.0
/*
 * task.c - registration of the calling thread in its process's group.
 *
 * Lock order: umcg_group.lock, then what group.c takes under it.
 *
 * A thread registers only itself: the slot records task_pid(current), and
 * only a thread of the group's owner process gets that far (group.c).  A
 * thread that exits without unregistering keeps its slot until a later
 * REGISTER finds its struct pid without a task and reclaims it, or until
 * the group is freed.
 */
#include <linux/cpumask.h>
#include <linux/errno.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/string.h>

#include "umcg_internal.h"

/* Free @slot if its thread is gone.  grp->lock held. */
static void umcg_slot_reap(struct umcg_group *grp, struct umcg_slot *slot)
{
	if (!slot->pid || pid_has_task(slot->pid, PIDTYPE_PID))
		return;
	put_pid(slot->pid);
	memset(slot, 0, sizeof(*slot));
	grp->nr_tasks--;
}

/* The server of @grp whose tid (in the caller's namespace) is @tid. */
static bool umcg_server_find(struct umcg_group *grp, u32 tid)
{
	unsigned int i;

	for (i = 0; i < UMCG_KMOD_MAX_TASKS; i++) {
		struct umcg_slot *slot = &grp->slots[i];

		if (slot->pid && slot->flags == UMCG_REGISTER_SERVER &&
		    pid_vnr(slot->pid) == tid)
			return true;
	}
	return false;
}

static int umcg_args_check(struct umcg_group *grp,
			   const struct umcg_register_args *args)
{
	if (args->flags == UMCG_REGISTER_SERVER) {
		if (args->server_tid)
			return -EINVAL;
		if (args->cpu >= nr_cpu_ids || !cpu_possible(args->cpu))
			return -EINVAL;
		return 0;
	}
	if (args->cpu)
		return -EINVAL;
	if (args->server_tid && !umcg_server_find(grp, args->server_tid))
		return -ESRCH;
	return 0;
}

/*
 * Register the calling thread as args->flags says; its struct umcg_task
 * is zeroed and its offset in the mapping stored in @task_off.
 *
 * Return: 0; -EPERM (not the group's process); -EBUSY (already registered,
 * or the process has a group on another file); -EINVAL (server_tid of a
 * server, cpu of a worker, impossible cpu of a server); -ESRCH (a worker's
 * server_tid is no server of the group); -ENOSPC (UMCG_KMOD_MAX_TASKS
 * threads registered); -ENOMEM.
 */
int umcg_task_add(struct umcg_group *grp,
		  const struct umcg_register_args *args, u64 *task_off)
{
	struct pid *pid = task_pid(current);
	struct umcg_slot *slot = NULL;
	unsigned int i;
	int ret;

	mutex_lock(&grp->lock);
	ret = umcg_group_bind(grp);
	if (ret)
		goto out;

	for (i = 0; i < UMCG_KMOD_MAX_TASKS; i++) {
		struct umcg_slot *s = &grp->slots[i];

		umcg_slot_reap(grp, s);
		if (s->pid == pid) {
			ret = -EBUSY;
			goto out;
		}
		if (!s->pid && !slot)
			slot = s;
	}
	ret = umcg_args_check(grp, args);
	if (ret)
		goto out;
	if (!slot) {
		ret = -ENOSPC;
		goto out;
	}

	i = slot - grp->slots;
	memset(&grp->tasks[i], 0, sizeof(grp->tasks[i]));
	slot->pid = get_pid(pid);
	slot->flags = args->flags;
	slot->server_tid = args->server_tid;
	slot->cpu = args->cpu;
	grp->nr_tasks++;
	*task_off = (u64)i * sizeof(struct umcg_task);
out:
	mutex_unlock(&grp->lock);
	return ret;
}

/*
 * Unregister the calling thread.
 *
 * Return: 0; -EPERM (the group belongs to another process); -ENOENT (the
 * caller is not registered).
 */
int umcg_task_del(struct umcg_group *grp)
{
	struct pid *pid = task_pid(current);
	unsigned int i;
	int ret = -ENOENT;

	mutex_lock(&grp->lock);
	if (grp->mm && !umcg_group_owned(grp)) {
		ret = -EPERM;
		goto out;
	}
	for (i = 0; i < UMCG_KMOD_MAX_TASKS; i++) {
		struct umcg_slot *slot = &grp->slots[i];

		if (slot->pid != pid)
			continue;
		put_pid(slot->pid);
		memset(slot, 0, sizeof(*slot));
		grp->nr_tasks--;
		ret = 0;
		break;
	}
out:
	mutex_unlock(&grp->lock);
	return ret;
}
