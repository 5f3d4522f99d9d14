/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_loader.h - open, load, attach, watch and detach the umcg sched_ext
 * scheduler (umcg.bpf.c) from user space.  Used by the foreground loader
 * (umcg-scx), "umcgctl load" and the guest tests; later users link the same
 * static library, umcg::scx_loader.
 *
 * Life cycle:
 *
 *   umcg_scx_probe()            is sched_ext here and free?
 *   umcg_scx_open(&s, &opts)    open and load (verify) the BPF object
 *   umcg_scx_attach(s)          register it: SCHED_EXT threads move to it
 *   ... umcg_scx_exited(s), umcg_scx_read_stats(s, ...) ...
 *   umcg_scx_detach(s)          unregister: ops.exit has run on return
 *   umcg_scx_close(s)           detach if needed, free
 *
 * The kernel also unregisters the scheduler by itself (watchdog, runtime
 * error, SysRq-S, hotplug): umcg_scx_exited() turns true, and the caller
 * still detaches and closes.  Closing the process's last file descriptor of
 * the link (e.g. by dying) detaches too, so a crashed loader leaves no
 * scheduler behind - unless umcg_scx_pin() handed the scheduler to pins in
 * a bpffs (scx_pin.h), which keep it attached after the process is gone.
 *
 * Functions return 0 or -errno; errno itself is not meaningful afterwards.
 * A handle is not thread-safe; use it from one thread at a time.
 */
#ifndef UMCG_SCX_LOADER_H
#define UMCG_SCX_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "scx_maps.h"
#include "scx_pin.h"
#include "umcg_scx_exit.h"

struct umcg_scx;

/* Longest ops name, NUL excluded (struct sched_ext_ops.name). */
#define UMCG_SCX_NAME_MAX	127

/**
 * struct umcg_scx_opts - settings of one scheduler instance
 * @slice_ns:   time slice; 0: the kernel's default (SCX_SLICE_DFL, 20 ms)
 * @timeout_ms: watchdog; 0: UMCG_SCX_TIMEOUT_MS_DFL, at most
 *              UMCG_SCX_TIMEOUT_MS_MAX
 * @verbose:    non-zero: libbpf debug messages on stderr (process-wide)
 * @name:       the name sysfs shows in /sys/kernel/sched_ext/root/ops;
 *              NULL: UMCG_SCX_OPS_NAME, the name libumcg looks for.  Tests
 *              give a second instance another name.  Letters, digits, '_'
 *              and '.', at most UMCG_SCX_NAME_MAX of them.
 */
struct umcg_scx_opts {
	__u64		slice_ns;
	__u32		timeout_ms;
	__u32		verbose;
	const char	*name;
};

/*
 * Can a scheduler be attached now?  0: yes.  -ENOENT: the kernel has no
 * sched_ext (/sys/kernel/sched_ext is missing).  -EPERM: not root.
 * -EBUSY: a sched_ext scheduler is loaded (or being loaded or unloaded).
 * Another -errno: reading sysfs failed.  Racy by nature: attach can still
 * fail with -EBUSY.
 */
int umcg_scx_probe(void);

/*
 * Read /sys/kernel/sched_ext/@name (e.g. "state", "root/ops") into @buf,
 * without the trailing newline.  -ENOENT if the file does not exist.
 */
int umcg_scx_sysfs_read(const char *name, char *buf, size_t len);

/*
 * Open and load one instance: the verifier runs here.  @opts may be NULL.
 * -EINVAL: bad @opts.  Other -errno from libbpf: -EPERM without CAP_BPF and
 * CAP_SYS_ADMIN, -EACCES or -EINVAL when the verifier refuses a program
 * (libbpf prints its log on stderr), -ESRCH when a kfunc is missing.
 */
int umcg_scx_open(struct umcg_scx **sp, const struct umcg_scx_opts *opts);

/*
 * Can the enforcer manage every CPU of a machine whose possible CPUs are
 * @possible (the list format of /sys/devices/system/cpu/possible,
 * "0-3,8")?  0, or -E2BIG when one is UMCG_SCX_MAX_CPUS or above (it
 * would run unenforced), or -EINVAL for a list it cannot read.
 * umcg_scx_open() of the enforcer refuses such a machine with -E2BIG and
 * says why on stderr.
 */
int umcg_scx_cpus_check(const char *possible);

/*
 * Register the loaded instance as the system's sched_ext scheduler.
 * -EALREADY: this handle is attached.  -EBUSY: another scheduler is loaded
 * (only one can be).  -EINVAL: the handle already ran once; open a new one.
 * Other -errno from the kernel, e.g. -E2BIG for a timeout over 30 s.
 */
int umcg_scx_attach(struct umcg_scx *s);

/*
 * Unregister.  Synchronous: on return ops.exit has run and, unless the
 * kernel had ejected the scheduler before, the exit kind is
 * UMCG_SCX_EXIT_UNREG.  -ENOTCONN if not attached.
 */
int umcg_scx_detach(struct umcg_scx *s);

/* Detach if attached, then free everything.  NULL is a no-op. */
void umcg_scx_close(struct umcg_scx *s);

/*
 * Has the running kernel bpf_task_work_schedule_signal() (Linux 6.18), with
 * which the scheduler rings a server's own bell?  Without it servers sleep
 * on the machine-wide doorbell ring, whose consumer page every process
 * that maps the ring can write, so umcg_scx_pin() then lets in nobody but
 * root.
 */
bool umcg_scx_kernel_has_bells(void);

/*
 * Pin the attached instance at @dir, on the bpffs that
 * umcg_scx_bpffs_prepare() readied: make @dir (mode 0755), pin the maps of
 * umcg_scx_pinned_maps[] and the programs, with the modes @acc gives them
 * (NULL: root only; scx_pin.h), then the link.  On success the pins hold
 * the scheduler: the handle counts as detached, and umcg_scx_close()
 * leaves the scheduler attached.  On failure @dir is removed and the
 * handle stays attached.  -ENOTCONN: not attached.  -EEXIST: @dir exists
 * (a scheduler is pinned there, or leftovers: umcg_scx_unpin() them).
 * -EOPNOTSUPP: @acc lets in others than root, and the kernel has no bells
 * (umcg_scx_kernel_has_bells()).
 */
int umcg_scx_pin(struct umcg_scx *s, const char *dir,
		 const struct umcg_scx_access *acc);

/* True once the scheduler has stopped, whoever stopped it. */
bool umcg_scx_exited(const struct umcg_scx *s);

/*
 * A copy of the exit info; kind is UMCG_SCX_EXIT_NONE while running (and
 * if the map cannot be read).  Complete once umcg_scx_exited() is true.
 */
void umcg_scx_exit_info(const struct umcg_scx *s, struct user_exit_info *ei);

/*
 * The kernel's debug dump of the exit (UEI_RECORD() into .data.uei_dump),
 * NUL-terminated and empty if there was none; valid until
 * umcg_scx_close().  Only once umcg_scx_exited() is true.
 */
const char *umcg_scx_exit_dump(const struct umcg_scx *s);

/* The global counters, summed over all CPUs. */
int umcg_scx_read_stats(const struct umcg_scx *s, struct umcg_scx_stats *st);

/*
 * The per-task counters of thread @tid, which must be alive: the lookup
 * goes through a pidfd of the thread.  ops.enable creates them when the
 * thread enters sched_ext, and they stay while it lives.  -ESRCH: no such
 * thread.  -ENOENT: no counters: the thread never ran in sched_ext under
 * this instance (or they could not be allocated), or it is exiting.
 */
int umcg_scx_read_task_stats(const struct umcg_scx *s, pid_t tid,
			     struct umcg_scx_task_stats *ts);

/*
 * The descriptor of program or map @name of the loaded instance (still
 * owned by the handle: do not close it), e.g. the enforcer's "umcg_register",
 * "umcg_pick" and "shared" (uapi/umcg_scx.h).  -ENOENT: no such object
 * (a scheduler built without UMCG_SCX_ENFORCE).
 */
int umcg_scx_obj_fd(const struct umcg_scx *s, const char *name);

/*
 * The enforcer's bound of its searches by tid over slots (enf_slot_hwm in
 * bpf/umcg_enforce.bpf.h): one past the highest slot that may be in use,
 * into @hwm.  For tests and diagnostics.  -ENOENT: a scheduler built
 * without UMCG_SCX_ENFORCE, or an instance not loaded.
 */
int umcg_scx_read_slot_hwm(const struct umcg_scx *s, __u32 *hwm);

#endif /* UMCG_SCX_LOADER_H */
