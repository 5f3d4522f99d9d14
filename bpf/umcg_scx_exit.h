/* SPDX-License-Identifier: GPL-2.0 */
/*
 * umcg_scx_exit.h - why the umcg sched_ext scheduler stopped, as its
 * loaders (scx_loader.c, umcgctl) read it from the ARRAY "exit_info", and
 * its v0 FIFO's DSQ.  Internal to bpf/, umcgctl and the guest tests; what
 * libumcg shares with the scheduler is uapi/umcg_scx.h.
 */
#ifndef UMCG_SCX_EXIT_H
#define UMCG_SCX_EXIT_H

#include <uapi/umcg_scx.h>

/* The one user DSQ of v0: a global FIFO created in ops.init. */
#define UMCG_SCX_DSQ_FIFO		0

/*
 * Values of the kernel's enum scx_exit_kind, for user space, which has no
 * vmlinux.h.  Unchanged since 6.12; umcg.bpf.c checks them against the
 * vmlinux.h it is built with.
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

/* Bit of the exit code that asks user space to load the scheduler again. */
#define UMCG_SCX_ECODE_ACT_RESTART	(1ULL << 48)

#define UMCG_SCX_EXIT_REASON_LEN	128
#define UMCG_SCX_EXIT_MSG_LEN		1024

/**
 * struct umcg_scx_exit_info - why the scheduler stopped, recorded by ops.exit
 * into the ARRAY map "exit_info" (a single element, key 0)
 * @kind:      UMCG_SCX_EXIT_*; UMCG_SCX_EXIT_NONE while it runs.  Written
 *             last, with a full barrier: once the disable is over (the
 *             detach returned, or sysfs state left "enabled"), a copy of
 *             the element with a non-zero kind is complete.
 * @pad:       zero
 * @exit_code: the kernel's or scx_bpf_exit()'s exit code
 * @reason:    the kernel's short reason, NUL-terminated
 * @msg:       the detailed message (e.g. scx_bpf_error()'s), NUL-terminated
 */
struct umcg_scx_exit_info {
	__s32	kind;
	__u32	pad;
	__s64	exit_code;
	char	reason[UMCG_SCX_EXIT_REASON_LEN];
	char	msg[UMCG_SCX_EXIT_MSG_LEN];
};

_Static_assert(sizeof(struct umcg_scx_exit_info) ==
	       16 + UMCG_SCX_EXIT_REASON_LEN + UMCG_SCX_EXIT_MSG_LEN,
	       "struct umcg_scx_exit_info layout");

#endif /* UMCG_SCX_EXIT_H */
