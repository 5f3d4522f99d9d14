/* SPDX-License-Identifier: GPL-2.0 */
/*
 * umcg_internal.h - what the files of umcg.ko share.
 *
 * Lock order: none yet; the module keeps no state of its own and takes no
 * locks.
 */
#ifndef _UMCG_INTERNAL_H
#define _UMCG_INTERNAL_H

#include <linux/fs.h>

#include <umcg.h>

/*
 * The UMCG_FEATURE_* bits this module implements, as reported by
 * UMCG_IOC_GET_INFO.  A command whose bit is clear validates its argument
 * and then fails with -EOPNOTSUPP.
 */
#define UMCG_KMOD_FEATURES	UMCG_FEATURE_INFO

/* ioctl.c: the .unlocked_ioctl of /dev/umcg. */
long umcg_ioctl(struct file *file, unsigned int cmd, unsigned long arg);

#endif /* _UMCG_INTERNAL_H */
