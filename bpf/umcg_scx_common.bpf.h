/* SPDX-License-Identifier: GPL-2.0 */
/*
 * umcg_scx_common.bpf.h - what every BPF unit of the umcg scheduler
 * includes first: the kernel's own sched_ext headers (scx/common.bpf.h,
 * which brings compat.bpf.h, user_exit_info.bpf.h and the enum shims;
 * extracted from linux-source at build time, bpf/CMakeLists.txt), then
 * uapi/umcg.h.
 *
 * vmlinux.h is generated from the newest target kernel with sched_ext and
 * marks every struct preserve_access_index, so field accesses are CO-RE
 * relocated against the running kernel's BTF.  The SCX_* enum constants
 * of enums.autogen.bpf.h are read-only globals that the loader fills in
 * from the running kernel's BTF before load (SCX_ENUM_INIT(), scx_loader.c).
 */
#ifndef UMCG_SCX_COMMON_BPF_H
#define UMCG_SCX_COMMON_BPF_H

#include <scx/common.bpf.h>
#include <bpf/bpf_core_read.h>
#include <asm-generic/errno-base.h>

/*
 * uapi/umcg.h includes <linux/types.h>, whose typedefs clash with the ones
 * vmlinux.h already has: mark it as included before including umcg.h.
 */
#define _LINUX_TYPES_H
#include "umcg.h"

/*
 * Kfuncs the scheduler calls that scx/common.bpf.h does not declare (it
 * defines BPF_NO_KFUNC_PROTOTYPES, so vmlinux.h declares none).
 * bpf_task_from_vpid(): Linux 6.13, every kernel with sched_ext this
 * builds for; a kernel without it refuses to load the scheduler.
 */
struct task_struct *bpf_task_from_vpid(s32 vpid) __ksym;
/*
 * bpf_task_work_schedule_signal(): Linux 6.18, the bells of the servers
 * (umcg_enforce.bpf.h, c.).  Weak: where the kernel has none the scheduler
 * still loads, and servers register with the doorbell instead.
 */
int bpf_task_work_schedule_signal(struct task_struct *task, struct bpf_task_work *tw,
				  void *map__const_map,
				  bpf_task_work_callback_t callback) __ksym __weak;

#endif /* UMCG_SCX_COMMON_BPF_H */
