/* SPDX-License-Identifier: GPL-2.0 */
/*
 * umcg_internal.h - what the files of umcg.ko share.
 *
 * Lock order (outermost first; see group.c):
 *
 *   mmap_lock (held by the mm core around ->mmap)
 *     umcg_group.lock
 *       umcg_groups_lock
 *       umcg_group.waitq[i].lock (wake_up() in wait.c)
 *
 * No user memory is touched (copy_{to,from}_user, page faults) with a umcg
 * lock held.
 */
#ifndef _UMCG_INTERNAL_H
#define _UMCG_INTERNAL_H

#include <linux/fs.h>
#include <linux/list.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/types.h>
#include <linux/wait.h>

#include <umcg.h>

/*
 * The UMCG_FEATURE_* bits this module implements, as reported by
 * UMCG_IOC_GET_INFO.  A command whose bit is clear validates its argument
 * and then fails with -EOPNOTSUPP.
 */
#define UMCG_KMOD_FEATURES \
	(UMCG_FEATURE_INFO | UMCG_FEATURE_REGISTER | UMCG_FEATURE_WAIT)

/* Most threads one group (one process) may have registered at once. */
#define UMCG_KMOD_MAX_TASKS	256U

/* Bytes of the per-thread state area, and so of the one valid mmap. */
#define UMCG_KMOD_TASKS_SIZE \
	PAGE_ALIGN(UMCG_KMOD_MAX_TASKS * sizeof(struct umcg_task))

/**
 * struct umcg_slot - one registered thread of a group
 * @pid:        the thread's struct pid (a reference), NULL if the slot is free
 * @flags:      UMCG_REGISTER_WORKER or UMCG_REGISTER_SERVER
 * @server_tid: a worker's server, as registered
 * @cpu:        a server's CPU, as registered
 *
 * Slot i is the struct umcg_task at offset i * sizeof(struct umcg_task) of
 * the group's mapping.  A struct pid, not a task_struct, so that a thread
 * that exits without unregistering pins no task and its tid, once reused,
 * never matches the slot.
 */
struct umcg_slot {
	struct pid	*pid;
	u32		flags;
	u32		server_tid;
	u32		cpu;
};

/**
 * struct umcg_group - the state of one process: one per open file of
 * /dev/umcg, bound to the process that first registers or mmaps through it.
 * @lock:     serialises binding, registration and mmap of this group
 * @node:     in umcg_groups once bound (under umcg_groups_lock)
 * @mm:       owner's mm (mmgrab()), NULL until bound; the key of umcg_groups
 * @tgid:     owner's thread group (a reference), NULL until bound
 * @tasks:    UMCG_KMOD_TASKS_SIZE zeroed bytes of vmalloc_user() memory,
 *            mapped into the owner by mmap; NULL until bound
 * @nr_tasks: slots in use
 * @slots:    the registered threads
 * @waitq:    per slot, where its thread sleeps in UMCG_IOC_WAIT (wait.c);
 *            initialised once by umcg_group_alloc(), never reset with the
 *            slot
 *
 * Lives from open() to the release of the file, i.e. until the last fd
 * and the last mapping of it are gone; a dying process closes both, so it
 * frees everything.  While it lives the file pins the module.
 */
struct umcg_group {
	struct mutex		lock;	/* see the kernel-doc above */
	struct list_head	node;
	struct mm_struct	*mm;
	struct pid		*tgid;
	struct umcg_task	*tasks;
	unsigned int		nr_tasks;
	struct umcg_slot	slots[UMCG_KMOD_MAX_TASKS];
	wait_queue_head_t	waitq[UMCG_KMOD_MAX_TASKS];
};

/* group.c: lifetime and ownership. */
struct umcg_group *umcg_group_alloc(void);
void umcg_group_free(struct umcg_group *grp);
int umcg_group_bind(struct umcg_group *grp);
bool umcg_group_owned(const struct umcg_group *grp);

/* task.c: registration of the calling thread. */
int umcg_task_add(struct umcg_group *grp,
		  const struct umcg_register_args *args, u64 *task_off);
int umcg_task_del(struct umcg_group *grp);

/* wait.c: UMCG_IOC_WAIT of the calling thread, UMCG_IOC_WAKE. */
int umcg_task_sleep(struct umcg_group *grp, u32 flags, u64 timeout_ns);
int umcg_task_wakeup(struct umcg_group *grp, u32 tid);

/* mmap.c: the .mmap of /dev/umcg. */
int umcg_mmap(struct file *file, struct vm_area_struct *vma);

/* ioctl.c: the .unlocked_ioctl of /dev/umcg. */
long umcg_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

#endif /* _UMCG_INTERNAL_H */
