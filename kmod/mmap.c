// SPDX-License-Identifier: GPL-2.0
/*
 * mmap.c - mapping the per-thread state area of /dev/umcg.
 *
 * Lock order: mmap_lock (held by the caller of ->mmap), then
 * umcg_group.lock, then what group.c takes under it.
 *
 * The one valid mapping is MAP_SHARED, at offset 0, of exactly
 * UMCG_KMOD_AREA_SIZE bytes (UMCG_MMAP_SIZE() of UMCG_IOC_GET_INFO's
 * max_tasks: the struct umcg_tasks, then the event bitmap's page);
 * anything else is -EINVAL.  The memory
 * is the module's (vmalloc, zeroed: group.c), so the scheduler hooks never
 * fault on it.  The mapping binds the group like REGISTER does, is not
 * inherited across fork (VM_DONTCOPY) and cannot grow (VM_DONTEXPAND).
 * VM_IO keeps it so: madvise(MADV_DOFORK), which would clear VM_DONTCOPY
 * and let a child's copy keep the group alive, fails with -EINVAL on a
 * VM_IO mapping (6.12 tests VM_IO only; later kernels any VM_SPECIAL flag,
 * VM_DONTEXPAND included).  It also refuses get_user_pages() on the area
 * (ptrace peeks, O_DIRECT, shared futexes); private futexes on its words,
 * which libumcg uses, need no pages pinned.
 */
#include <linux/errno.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mutex.h>
#include <linux/vmalloc.h>

#include "umcg_internal.h"

int umcg_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct umcg_group *grp = file->private_data;
	int ret;

	if (vma->vm_pgoff ||
	    vma->vm_end - vma->vm_start != UMCG_KMOD_AREA_SIZE)
		return -EINVAL;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;

	mutex_lock(&grp->lock);
	ret = umcg_group_bind(grp);
	if (!ret) {
		vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP |
			     VM_IO);
		ret = umcg_group_map(grp, vma);
	}
	mutex_unlock(&grp->lock);
	return ret;
}
