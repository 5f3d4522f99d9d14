// SPDX-License-Identifier: GPL-2.0
/*
 * mmap.c - mapping the per-thread state area of /dev/umcg.
 *
 * Lock order: mmap_lock (held by the caller of ->mmap), then
 * umcg_group.lock, then what group.c takes under it.  The fault handler
 * runs under mmap_lock or the VMA's lock, and takes no umcg lock.
 *
 * The one valid mapping is MAP_SHARED, at offset 0, of exactly
 * umcg_group_map_size() bytes (UMCG_MMAP_SIZE() of the file's max_tasks:
 * the struct umcg_tasks, the event bitmap, the summary page); anything
 * else is -EINVAL.  The memory is the module's (pages allocated and
 * zeroed by group.c), so the scheduler hooks never fault on it.
 *
 * The area is reserved whole and filled on demand: ->mmap inserts nothing;
 * the fault handler asks group.c for the page at the faulting offset and
 * inserts it (vm_insert_page(), legal under the mmap or VMA read lock on
 * a VM_MIXEDMAP mapping), or raises SIGBUS if the group has not allocated
 * it yet (group.c, "Growth of the shared area": pages are published with
 * release stores and never taken back while a mapping exists, as a
 * mapping holds the file and so the group).  Two threads faulting on one
 * page race in vm_insert_page(), whose loser gets -EBUSY: the page is
 * there either way.
 *
 * The mapping binds the group like REGISTER does, is not inherited across
 * fork (VM_DONTCOPY) and cannot grow (VM_DONTEXPAND).  VM_IO keeps it so:
 * madvise(MADV_DOFORK), which would clear VM_DONTCOPY and let a child's
 * copy keep the group alive, fails with -EINVAL on a VM_IO mapping (6.12
 * tests VM_IO only; later kernels any VM_SPECIAL flag, VM_DONTEXPAND
 * included).  It also refuses get_user_pages() on the area (ptrace peeks,
 * O_DIRECT, shared futexes); private futexes on its words, which libumcg
 * uses, need no pages pinned.  MADV_DONTNEED zaps the page table entries
 * only: the next touch faults the same page in again.
 */
#include <linux/errno.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/mutex.h>

#include "umcg_internal.h"

static vm_fault_t umcg_vm_fault(struct vm_fault *vmf)
{
	struct umcg_group *grp = vmf->vma->vm_file->private_data;
	struct page *page = umcg_group_page(grp, vmf->pgoff);
	int ret;

	if (!page)
		return VM_FAULT_SIGBUS;
	ret = vm_insert_page(vmf->vma, vmf->address & PAGE_MASK, page);
	if (!ret || ret == -EBUSY)
		return VM_FAULT_NOPAGE;
	return ret == -ENOMEM ? VM_FAULT_OOM : VM_FAULT_SIGBUS;
}

static const struct vm_operations_struct umcg_vm_ops = {
	.fault	= umcg_vm_fault,
};

int umcg_mmap(struct file *file, struct vm_area_struct *vma)
{
	struct umcg_group *grp = file->private_data;
	int ret;

	if (vma->vm_pgoff ||
	    vma->vm_end - vma->vm_start != umcg_group_map_size(grp))
		return -EINVAL;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;

	mutex_lock(&grp->lock);
	ret = umcg_group_bind(grp);
	if (!ret) {
		vm_flags_set(vma, VM_DONTCOPY | VM_DONTEXPAND | VM_DONTDUMP |
			     VM_IO | VM_MIXEDMAP);
		vma->vm_ops = &umcg_vm_ops;
	}
	mutex_unlock(&grp->lock);
	return ret;
}
