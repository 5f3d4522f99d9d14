// SPDX-License-Identifier: GPL-2.0
/*
 * main.c - umcg.ko entry points, the misc device /dev/umcg and its
 * read-only attributes in /sys/class/misc/umcg/.
 *
 * Lock order: none; this file takes no locks itself.
 *
 * Module references: misc_open() takes one on umcg_fops.owner for every
 * open file of /dev/umcg, and every group holds one until it is freed
 * (group.c), which outlives its file while task works of its threads are
 * queued.  So delete_module() fails with -EWOULDBLOCK while any group
 * exists.  Exit then disarms the hook, waits for RCU callbacks
 * (task.c's deferred puts), destroys umcg_wq, which waits for a group
 * free still returning, and waits for a Tasks RCU grace period: a thread
 * whose task work made the last put may still run the module's code on
 * its way out of the callback.
 *
 * Attributes (decimal, for tests and the curious):
 *   groups   allocated groups (one per open file of /dev/umcg)
 *   tasks    registered threads, all groups
 *   workers  registered workers, all groups
 *   works    queued task works (block resume, preemption)
 *   hook     the block detection in use: tracepoint or kprobe
 *   hook_armed  1 while the hook is registered with the kernel (while a
 *            worker is registered, and for hook_linger_ms after), else 0
 *   hook_calls  calls of the hook since load, by any task's sleep
 *   hook_hits   those that found the sleeping task registered
 *   hook_entries  table entries those calls examined, all tables
 */
#include <linux/device.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/rcupdate.h>
#include <linux/sysfs.h>
#include <linux/workqueue.h>

#include "umcg_internal.h"

struct workqueue_struct *umcg_wq;
atomic_t umcg_nr_groups = ATOMIC_INIT(0);
atomic_t umcg_nr_tasks = ATOMIC_INIT(0);
atomic_t umcg_nr_workers = ATOMIC_INIT(0);
atomic_t umcg_nr_works = ATOMIC_INIT(0);

static int umcg_open(struct inode *inode, struct file *file)
{
	int err;
	struct umcg_group *grp = umcg_group_alloc(&err);

	if (!grp)
		return err;
	file->private_data = grp;
	return 0;
}

static int umcg_release(struct inode *inode, struct file *file)
{
	umcg_group_release_file(file->private_data);
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

#define UMCG_COUNT_ATTR(name, counter)					\
static ssize_t name##_show(struct device *dev,				\
			   struct device_attribute *attr, char *buf)	\
{									\
	return sysfs_emit(buf, "%d\n", atomic_read(&(counter)));	\
}									\
static DEVICE_ATTR_RO(name)

UMCG_COUNT_ATTR(groups, umcg_nr_groups);
UMCG_COUNT_ATTR(tasks, umcg_nr_tasks);
UMCG_COUNT_ATTR(workers, umcg_nr_workers);
UMCG_COUNT_ATTR(works, umcg_nr_works);

static ssize_t hook_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%s\n", umcg_hook_name());
}
static DEVICE_ATTR_RO(hook);

static ssize_t hook_armed_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%d\n", umcg_hook_armed());
}
static DEVICE_ATTR_RO(hook_armed);

static ssize_t hook_calls_show(struct device *dev,
			       struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", umcg_hook_calls());
}
static DEVICE_ATTR_RO(hook_calls);

static ssize_t hook_hits_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", umcg_hook_hits());
}
static DEVICE_ATTR_RO(hook_hits);

static ssize_t hook_entries_show(struct device *dev,
				 struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%llu\n", umcg_hook_entries());
}
static DEVICE_ATTR_RO(hook_entries);

static struct attribute *umcg_attrs[] = {
	&dev_attr_groups.attr,
	&dev_attr_tasks.attr,
	&dev_attr_workers.attr,
	&dev_attr_works.attr,
	&dev_attr_hook.attr,
	&dev_attr_hook_armed.attr,
	&dev_attr_hook_calls.attr,
	&dev_attr_hook_hits.attr,
	&dev_attr_hook_entries.attr,
	NULL,
};
ATTRIBUTE_GROUPS(umcg);

/*
 * Open to everyone: every command acts on the caller's own threads only
 * (C8), and libumcg must find the device from unprivileged processes.
 */
static struct miscdevice umcg_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= UMCG_DEVICE_NAME,
	.fops	= &umcg_fops,
	.mode	= 0666,
	.groups	= umcg_groups,
};

static int __init umcg_init(void)
{
	int ret;

	/*
	 * On PREEMPT_RT, spinlock_t and the wait queue locks of wake_up()
	 * sleep, and the block hook takes them from inside the scheduler
	 * (preemption off): refuse rather than schedule while atomic.
	 */
	if (IS_ENABLED(CONFIG_PREEMPT_RT)) {
		pr_err("umcg: PREEMPT_RT kernels are not supported: the block hook takes sleeping locks inside the scheduler\n");
		return -EOPNOTSUPP;
	}
	umcg_wq = alloc_workqueue("umcg", WQ_UNBOUND, 0);
	if (!umcg_wq)
		return -ENOMEM;
	ret = umcg_hook_init();
	if (ret)
		goto out_wq;
	ret = misc_register(&umcg_misc);
	if (ret)
		goto out_hook;
	pr_info("umcg: /dev/%s, ABI %d, block detection by %s\n",
		UMCG_DEVICE_NAME, UMCG_API_VERSION, umcg_hook_name());
	return 0;

out_hook:
	umcg_hook_exit();
out_wq:
	destroy_workqueue(umcg_wq);
	return ret;
}

static void __exit umcg_exit(void)
{
	misc_deregister(&umcg_misc);
	umcg_hook_exit();
	rcu_barrier();
	destroy_workqueue(umcg_wq);
	/*
	 * A task work's last group put can be what let this exit run: its
	 * thread may still be returning through module text, or be preempted
	 * there.  Tasks RCU waits until every task has switched voluntarily or
	 * run in user space since, which such a thread does only once out.
	 */
	synchronize_rcu_tasks();
}

module_init(umcg_init);
module_exit(umcg_exit);

MODULE_DESCRIPTION("umcg: kernel side of user-managed concurrency groups");
MODULE_LICENSE("GPL");
