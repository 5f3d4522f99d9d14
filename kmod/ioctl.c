// SPDX-License-Identifier: GPL-2.0
/*
 * ioctl.c - /dev/umcg ioctls: argument validation and dispatch.
 *
 * Lock order: none taken here; task.c takes umcg_group.lock, wait.c only
 * wait queue locks.  User memory is copied in before and out after, never
 * under a lock; WAIT and SWITCH sleep holding none.
 *
 * Every argument is an extensible struct that starts with "__u32 size;
 * __u32 flags;" (uapi/umcg.h).  The size the caller was built with, usize,
 * is _IOC_SIZE(cmd).  A command is recognised by the direction, type and
 * number of cmd, with usize at least its *_SIZE_VER0; any other cmd is
 * -ENOTTY.  Then, in this order:
 *
 *   copy_struct_from_user()         -EFAULT; -E2BIG when the caller's struct
 *                                   is bigger and its extra bytes are not 0
 *   size field != usize             -EINVAL
 *   unknown flags, non-zero pad
 *   or reserved fields              -EINVAL
 *
 * and only then the command itself.  A command that returns a result
 * copies back min(usize, sizeof(kernel struct)) bytes, on success only.
 *
 * Each handler is umcg_<obj>_<verb>().
 */
#include <linux/build_bug.h>
#include <linux/errno.h>
#include <linux/fs.h>
#include <linux/minmax.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/stddef.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "umcg_internal.h"

/* umcg_args_copy_in() reads the size field at offset 0 of every argument. */
static_assert(offsetof(struct umcg_info, size) == 0);
static_assert(offsetof(struct umcg_register_args, size) == 0);
static_assert(offsetof(struct umcg_unregister_args, size) == 0);
static_assert(offsetof(struct umcg_wait_args, size) == 0);
static_assert(offsetof(struct umcg_wake_args, size) == 0);
static_assert(offsetof(struct umcg_switch_args, size) == 0);
static_assert(offsetof(struct umcg_preempt_args, size) == 0);

/*
 * Is @cmd the command @ref, at any size from @ver0 up?  The same test as
 * extensible_ioctl_valid(), which 6.12 does not have.
 */
static bool umcg_ioc_match(unsigned int cmd, unsigned int ref, size_t ver0)
{
	return _IOC_DIR(cmd) == _IOC_DIR(ref) &&
	       _IOC_TYPE(cmd) == _IOC_TYPE(ref) &&
	       _IOC_NR(cmd) == _IOC_NR(ref) &&
	       _IOC_SIZE(cmd) >= ver0;
}

/*
 * Copy the caller's @usize-byte argument at @uarg into the kernel's
 * @ksize-byte struct @karg, and check that its size field says @usize.
 * Return: 0, -EFAULT, -E2BIG or -EINVAL.
 */
static int umcg_args_copy_in(void *karg, size_t ksize,
			     const void __user *uarg, size_t usize)
{
	const u32 *size = karg;
	int ret;

	ret = copy_struct_from_user(karg, ksize, uarg, usize);
	if (ret)
		return ret;
	return *size == usize ? 0 : -EINVAL;
}

static long umcg_info_get(struct file *file, void __user *uarg, size_t usize)
{
	struct umcg_info info;
	int ret;

	ret = umcg_args_copy_in(&info, sizeof(info), uarg, usize);
	if (ret)
		return ret;
	if (info.flags || memchr_inv(info.reserved, 0, sizeof(info.reserved)))
		return -EINVAL;

	info.api_version = UMCG_API_VERSION;
	info.max_tasks = ((struct umcg_group *)file->private_data)->max_tasks;
	info.features = UMCG_KMOD_FEATURES;
	if (copy_to_user(uarg, &info, min(usize, sizeof(info))))
		return -EFAULT;
	return 0;
}

static long umcg_task_register(struct file *file, void __user *uarg,
			       size_t usize)
{
	struct umcg_register_args args;
	int ret;

	ret = umcg_args_copy_in(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags != UMCG_REGISTER_WORKER &&
	    args.flags != UMCG_REGISTER_SERVER)
		return -EINVAL;
	if (memchr_inv(args.reserved, 0, sizeof(args.reserved)))
		return -EINVAL;
	/* A dying thread would stay registered, a server a dead poke target. */
	if ((current->flags & PF_EXITING) || fatal_signal_pending(current))
		return -ESRCH;

	ret = umcg_task_add(file->private_data, &args, &args.task_off);
	if (ret)
		return ret;
	if (copy_to_user(uarg, &args, min(usize, sizeof(args)))) {
		umcg_task_del(file->private_data);
		return -EFAULT;
	}
	return 0;
}

static long umcg_task_unregister(struct file *file, void __user *uarg,
				 size_t usize)
{
	struct umcg_unregister_args args;
	int ret;

	ret = umcg_args_copy_in(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags)
		return -EINVAL;

	return umcg_task_del(file->private_data);
}

static long umcg_task_wait(struct file *file, void __user *uarg, size_t usize)
{
	struct umcg_wait_args args;
	int ret;

	ret = umcg_args_copy_in(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags & ~UMCG_WAIT_ABSTIME)
		return -EINVAL;

	return umcg_task_sleep(file->private_data, args.flags,
			       args.timeout_ns);
}

static long umcg_task_wake(struct file *file, void __user *uarg, size_t usize)
{
	struct umcg_wake_args args;
	int ret;

	ret = umcg_args_copy_in(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags || args.pad)
		return -EINVAL;

	return umcg_task_wakeup(file->private_data, args.tid);
}

static long umcg_task_switch_to(struct file *file, void __user *uarg,
				size_t usize)
{
	struct umcg_switch_args args;
	int ret;

	ret = umcg_args_copy_in(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if ((args.flags & ~UMCG_WAIT_ABSTIME) || args.pad)
		return -EINVAL;

	return umcg_task_switch(file->private_data, args.next_tid, args.flags,
				args.timeout_ns);
}

static long umcg_task_preempt_ask(struct file *file, void __user *uarg,
				  size_t usize)
{
	struct umcg_preempt_args args;
	int ret;

	ret = umcg_args_copy_in(&args, sizeof(args), uarg, usize);
	if (ret)
		return ret;
	if (args.flags || args.pad)
		return -EINVAL;

	return umcg_task_preempt(file->private_data, args.tid);
}

long umcg_ioctl(struct file *file, unsigned int cmd, unsigned long arg)
{
	void __user *uarg = (void __user *)arg;
	size_t usize = _IOC_SIZE(cmd);

	switch (_IOC_NR(cmd)) {
	case _IOC_NR(UMCG_IOC_GET_INFO):
		if (!umcg_ioc_match(cmd, UMCG_IOC_GET_INFO, UMCG_INFO_SIZE_VER0))
			break;
		return umcg_info_get(file, uarg, usize);
	case _IOC_NR(UMCG_IOC_REGISTER):
		if (!umcg_ioc_match(cmd, UMCG_IOC_REGISTER,
				    UMCG_REGISTER_SIZE_VER0))
			break;
		return umcg_task_register(file, uarg, usize);
	case _IOC_NR(UMCG_IOC_UNREGISTER):
		if (!umcg_ioc_match(cmd, UMCG_IOC_UNREGISTER,
				    UMCG_UNREGISTER_SIZE_VER0))
			break;
		return umcg_task_unregister(file, uarg, usize);
	case _IOC_NR(UMCG_IOC_WAIT):
		if (!umcg_ioc_match(cmd, UMCG_IOC_WAIT, UMCG_WAIT_SIZE_VER0))
			break;
		return umcg_task_wait(file, uarg, usize);
	case _IOC_NR(UMCG_IOC_WAKE):
		if (!umcg_ioc_match(cmd, UMCG_IOC_WAKE, UMCG_WAKE_SIZE_VER0))
			break;
		return umcg_task_wake(file, uarg, usize);
	case _IOC_NR(UMCG_IOC_SWITCH):
		if (!umcg_ioc_match(cmd, UMCG_IOC_SWITCH, UMCG_SWITCH_SIZE_VER0))
			break;
		return umcg_task_switch_to(file, uarg, usize);
	case _IOC_NR(UMCG_IOC_PREEMPT):
		if (!umcg_ioc_match(cmd, UMCG_IOC_PREEMPT,
				    UMCG_PREEMPT_SIZE_VER0))
			break;
		return umcg_task_preempt_ask(file, uarg, usize);
	}
	return -ENOTTY;
}
