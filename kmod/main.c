// SPDX-License-Identifier: GPL-2.0
/*
 * main.c - umcg.ko entry points and the misc device /dev/umcg.
 *
 * Lock order: none; this file takes no locks itself.
 *
 * misc_open() takes a reference on umcg_fops.owner for every open file of
 * /dev/umcg, so the module cannot be unloaded while it has users (C7):
 * delete_module() fails with -EWOULDBLOCK until the last such file is
 * released.  Each file carries one group (group.c) in ->private_data, from
 * ->open to ->release; a mapping holds the file, so while any group exists
 * the module stays loaded.
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>

#include "umcg_internal.h"

static int umcg_open(struct inode *inode, struct file *file)
{
	struct umcg_group *grp = umcg_group_alloc();

	if (!grp)
		return -ENOMEM;
	file->private_data = grp;
	return 0;
}

static int umcg_release(struct inode *inode, struct file *file)
{
	umcg_group_free(file->private_data);
	return 0;
}

static const struct file_operations umcg_fops = {
	.owner		= THIS_MODULE,
	.open		= umcg_open,
	.release	= umcg_release,
	.mmap		= umcg_mmap,
	.unlocked_ioctl	= umcg_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
};

/*
 * Open to everyone: every command acts on the caller's own threads only
 * (C8), and libumcg must find the device from unprivileged processes.
 */
static struct miscdevice umcg_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= UMCG_DEVICE_NAME,
	.fops	= &umcg_fops,
	.mode	= 0666,
};

module_misc_device(umcg_misc);

MODULE_DESCRIPTION("umcg: kernel side of user-managed concurrency groups");
MODULE_LICENSE("GPL");
