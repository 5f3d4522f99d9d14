// SPDX-License-Identifier: GPL-2.0
/*
 * main.c - umcg.ko entry points and the misc device /dev/umcg.
 *
 * Lock order: none yet; this file takes no locks.
 *
 * misc_open() takes a reference on umcg_fops.owner for every open file of
 * /dev/umcg, so the module cannot be unloaded while it has users (C7):
 * delete_module() fails with -EWOULDBLOCK until the last such file is
 * released.
 */
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>

#include "umcg_internal.h"

static const struct file_operations umcg_fops = {
	.owner		= THIS_MODULE,
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
