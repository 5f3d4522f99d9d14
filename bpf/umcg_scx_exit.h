/* SPDX-License-Identifier: GPL-2.0 */
/*
 * umcg_scx_exit.h - why the umcg sched_ext scheduler stopped: the kernel's
 * struct user_exit_info (scx/user_exit_info.h, extracted at build time),
 * which ops.exit records with UEI_RECORD() into the scheduler's .data,
 * pinned as "exit_info"; and the values of its kind.  Also the v0 FIFO's
 * DSQ.  Internal to bpf/, umcgctl and the guest tests; what libumcg shares
 * with the scheduler is uapi/umcg_scx.h.
 */
#ifndef UMCG_SCX_EXIT_H
#define UMCG_SCX_EXIT_H

#include <uapi/umcg_scx.h>
#ifndef __BPF__
#include <scx/common.h>		/* struct user_exit_info, UEI_ECODE_*() */
#endif

/* The one user DSQ of v0: a global FIFO created in ops.init. */
#define UMCG_SCX_DSQ_FIFO		0

/*
 * Values of the kernel's enum scx_exit_kind (struct user_exit_info.kind),
 * for user space, which has no vmlinux.h.  Unchanged since 6.12; umcg.bpf.c
 * checks them against the vmlinux.h it is built with.
 */
#define UMCG_SCX_EXIT_NONE		0
#define UMCG_SCX_EXIT_DONE		1
#define UMCG_SCX_EXIT_UNREG		64	/* user space detached (link closed) */
#define UMCG_SCX_EXIT_UNREG_BPF		65	/* the BPF side called scx_bpf_exit() */
#define UMCG_SCX_EXIT_UNREG_KERN	66	/* the kernel unloaded it (e.g. hotplug) */
#define UMCG_SCX_EXIT_SYSRQ		67	/* SysRq-S */
#define UMCG_SCX_EXIT_PARENT		68	/* 7.1+: the parent scheduler exits */
#define UMCG_SCX_EXIT_PARENT_KILL	69	/* 7.1+: killed by the parent scheduler */
#define UMCG_SCX_EXIT_ERROR		1024	/* runtime error; kinds >= this are errors */
#define UMCG_SCX_EXIT_ERROR_BPF		1025	/* scx_bpf_error() */
#define UMCG_SCX_EXIT_ERROR_STALL	1026	/* watchdog: a runnable task was not run */
#define UMCG_SCX_EXIT_ERROR_REENQ	1027	/* 7.x: a task hit the re-enqueue limit */
#define UMCG_SCX_EXIT_ERROR_RESCUE	1028	/* 7.x: ejected for overloading rescue */

#endif /* UMCG_SCX_EXIT_H */
