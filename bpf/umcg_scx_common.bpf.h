/* SPDX-License-Identifier: GPL-2.0 */
/*
 * umcg_scx_common.bpf.h - the part of the sched_ext BPF interface that the
 * umcg scheduler uses.  Written for umcg; the scx project's headers are not
 * copied.  libbpf's headers are used as they are.
 *
 * Types and constants come from vmlinux.h, which the build generates from
 * the newest target kernel with sched_ext (bpf/CMakeLists.txt).  vmlinux.h
 * marks every struct preserve_access_index, so field accesses are CO-RE
 * relocated against the running kernel's BTF and the object does not depend
 * on the kernel it was built against.  Enum constants are compiled in; the
 * ones used here have kept their values since sched_ext was merged (6.12).
 *
 * kfuncs.  vmlinux.h's own kfunc prototypes are turned off
 * (BPF_NO_KFUNC_PROTOTYPES) and the ones we call are declared below, so this
 * file is the complete list of kernel symbols the object needs.  Those with
 * the same name since 6.12 are strong: the load fails if they are missing.
 * Those renamed since are __weak, and the wrappers pick one at load time
 * with bpf_ksym_exists(), newest first:
 *
 *   insert into a DSQ      6.12 scx_bpf_dispatch
 *                          6.13 scx_bpf_dsq_insert
 *                          6.19 scx_bpf_dsq_insert___v2 (returns bool)
 *   move a user DSQ's      6.12 scx_bpf_consume
 *   head to the local DSQ  6.13 scx_bpf_dsq_move_to_local
 *                          7.1  scx_bpf_dsq_move_to_local___v2 (+enq_flags)
 *
 * libbpf binds a kfunc by its name up to the last "___", so "X___compat"
 * binds to the kernel's X and "X___v2___compat" to "X___v2".  A __weak kfunc
 * the kernel lacks resolves to 0, libbpf poisons its call, and the verifier
 * drops the branch that bpf_ksym_exists() made dead.
 */
#ifndef UMCG_SCX_COMMON_BPF_H
#define UMCG_SCX_COMMON_BPF_H

#define BPF_NO_KFUNC_PROTOTYPES
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <asm-generic/errno-base.h>

/*
 * uapi/umcg.h includes <linux/types.h>, whose typedefs clash with the ones
 * vmlinux.h already has: mark it as included before including umcg.h.
 */
#define _LINUX_TYPES_H
#include "umcg.h"

/*
 * A sched_ext callback umcg_<op>: UMCG_OPS(enqueue, struct task_struct *p,
 * u64 enq_flags) defines umcg_enqueue, to be wired into the sched_ext_ops
 * struct as .enqueue.  The _SLEEPABLE form is for the callbacks the kernel
 * lets sleep (init, exit, init_task, cpu_online/offline).
 */
#define UMCG_OPS(op, args...)						\
	SEC("struct_ops/umcg_" #op) BPF_PROG(umcg_##op, ##args)
#define UMCG_OPS_SLEEPABLE(op, args...)					\
	SEC("struct_ops.s/umcg_" #op) BPF_PROG(umcg_##op, ##args)

/* kfuncs with the same name and signature since 6.12. */
extern s32 scx_bpf_create_dsq(u64 dsq_id, s32 node) __ksym;
extern void scx_bpf_kick_cpu(s32 cpu, u64 flags) __ksym;
extern s32 scx_bpf_pick_idle_cpu(const struct cpumask *cpus_allowed,
				 u64 flags) __ksym;
extern s32 scx_bpf_select_cpu_dfl(struct task_struct *p, s32 prev_cpu,
				  u64 wake_flags, bool *is_idle) __ksym;
extern void scx_bpf_error_bstr(char *fmt, unsigned long long *data,
			       u32 data__sz) __ksym;
extern void scx_bpf_exit_bstr(s64 exit_code, char *fmt,
			      unsigned long long *data, u32 data__sz) __ksym;

/* Renamed kfuncs: see the table at the top. */
extern bool scx_bpf_dsq_insert___v2___compat(struct task_struct *p, u64 dsq_id,
					     u64 slice, u64 enq_flags) __ksym __weak;
extern void scx_bpf_dsq_insert___compat(struct task_struct *p, u64 dsq_id,
					u64 slice, u64 enq_flags) __ksym __weak;
extern void scx_bpf_dispatch___compat(struct task_struct *p, u64 dsq_id,
				      u64 slice, u64 enq_flags) __ksym __weak;

extern bool scx_bpf_dsq_move_to_local___v2___compat(u64 dsq_id,
						    u64 enq_flags) __ksym __weak;
extern bool scx_bpf_dsq_move_to_local___compat(u64 dsq_id) __ksym __weak;
extern bool scx_bpf_consume___compat(u64 dsq_id) __ksym __weak;

/*
 * Insert @p into @dsq_id with a @slice ns time slice.  Allowed in
 * ops.select_cpu, ops.enqueue and ops.dispatch.  A failed insert aborts the
 * scheduler from inside the kernel, so there is nothing to return.
 */
static __always_inline void umcg_dsq_insert(struct task_struct *p, u64 dsq_id,
					    u64 slice, u64 enq_flags)
{
	if (bpf_ksym_exists(scx_bpf_dsq_insert___v2___compat))
		scx_bpf_dsq_insert___v2___compat(p, dsq_id, slice, enq_flags);
	else if (bpf_ksym_exists(scx_bpf_dsq_insert___compat))
		scx_bpf_dsq_insert___compat(p, dsq_id, slice, enq_flags);
	else
		scx_bpf_dispatch___compat(p, dsq_id, slice, enq_flags);
}

/*
 * Move the first task of user DSQ @dsq_id that may run on this CPU to this
 * CPU's local DSQ.  ops.dispatch only.  The kernel skips tasks whose
 * affinity or migration-disabled state forbids this CPU.  True if a task
 * was moved.
 */
static __always_inline bool umcg_dsq_move_to_local(u64 dsq_id)
{
	if (bpf_ksym_exists(scx_bpf_dsq_move_to_local___v2___compat))
		return scx_bpf_dsq_move_to_local___v2___compat(dsq_id, 0);
	if (bpf_ksym_exists(scx_bpf_dsq_move_to_local___compat))
		return scx_bpf_dsq_move_to_local___compat(dsq_id);
	return scx_bpf_consume___compat(dsq_id);
}

/*
 * scx_bpf_error(fmt, args...): abort the scheduler with a printf-style
 * message, for states that cannot happen.  At most 12 arguments, each
 * passed as a u64; %s takes a kernel pointer.  The exit kind is
 * SCX_EXIT_ERROR_BPF, the message goes to dmesg and to ops.exit, and every
 * task returns to the fair class.
 *
 * The kfunc takes the format and an array of the arguments; the macro
 * builds both.  The dead call to umcg_printf_check() lets the compiler
 * check the format against the arguments.
 */
static inline __attribute__((format(printf, 1, 2)))
void umcg_printf_check(const char *fmt, ...)
{
}

#define scx_bpf_error(fmt, args...)					\
({									\
	static char ___umcg_fmt[] = fmt;				\
	unsigned long long ___umcg_data[___bpf_narg(args)];		\
									\
	_Pragma("GCC diagnostic push")					\
	_Pragma("GCC diagnostic ignored \"-Wint-conversion\"")		\
	___bpf_fill(___umcg_data, args);				\
	_Pragma("GCC diagnostic pop")					\
	scx_bpf_error_bstr(___umcg_fmt, ___umcg_data,			\
			   sizeof(___umcg_data));			\
	if (0)								\
		umcg_printf_check(fmt, ##args);				\
})

/*
 * scx_bpf_exit(code, fmt, args...): unload the scheduler gracefully, with
 * exit kind SCX_EXIT_UNREG_BPF, exit code @code and a printf-style message
 * for ops.exit.  Arguments as for scx_bpf_error().
 */
#define scx_bpf_exit(code, fmt, args...)				\
({									\
	static char ___umcg_fmt[] = fmt;				\
	unsigned long long ___umcg_data[___bpf_narg(args)];		\
									\
	_Pragma("GCC diagnostic push")					\
	_Pragma("GCC diagnostic ignored \"-Wint-conversion\"")		\
	___bpf_fill(___umcg_data, args);				\
	_Pragma("GCC diagnostic pop")					\
	scx_bpf_exit_bstr(code, ___umcg_fmt, ___umcg_data,		\
			  sizeof(___umcg_data));			\
	if (0)								\
		umcg_printf_check(fmt, ##args);				\
})

#endif /* UMCG_SCX_COMMON_BPF_H */
