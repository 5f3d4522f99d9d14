/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * kmod_probe.h - ask the kernel module what it implements.
 */
#ifndef UMCG_KMOD_PROBE_H
#define UMCG_KMOD_PROBE_H

#include <uapi/umcg.h>

/**
 * umcg_kmod_get_info() - query the module behind /dev/umcg
 * @info: filled with the module's struct umcg_info
 *
 * Return: 0; -ENOENT when the module is not loaded; another -errno from
 * open() or the ioctl.  Thread-safe: uses a private descriptor.
 */
int umcg_kmod_get_info(struct umcg_info *info);

#endif /* UMCG_KMOD_PROBE_H */
