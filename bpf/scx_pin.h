/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_pin.h - the umcg sched_ext scheduler as "umcgctl load" leaves it:
 * attached, with no process holding it, through pins in a bpffs directory.
 *
 * Layout of UMCG_SCX_PIN_DIR (/sys/fs/bpf/umcg), mode 0755:
 *
 *   link        0600  the struct_ops link.  While it is pinned the
 *                     scheduler stays registered; BPF_LINK_DETACH on it
 *                     unregisters it.  Whoever can open it can unload the
 *                     scheduler, so root only.
 *   stats       0444  PERCPU_ARRAY, struct umcg_scx_stats per CPU
 *   task_stats  0444  TASK_STORAGE, struct umcg_scx_task_stats; key: a
 *                     pidfd of the thread
 *   exit_info   0444  ARRAY, struct umcg_scx_exit_info: why the scheduler
 *                     stopped, kept after the kernel ejected it
 *   ctl         0600  ARRAY, struct umcg_scx_ctl: root's requests (the
 *                     ejection test hook)
 *   shared      0666  the enforcer's mmapable ARRAY, struct
 *                     umcg_scx_shared (umcg_scx_enforce.h), only with
 *                     UMCG_SCX_ENFORCE.  Frozen at load (BPF_MAP_FREEZE):
 *                     no descriptor can update it or map it writable, so
 *                     it is read-only for every process although the pin
 *                     is 0666.  It has to be: a BPF_F_RDONLY descriptor
 *                     cannot be mmapped at all, because mmap drops
 *                     VM_SHARED for a file opened without write access and
 *                     BPF refuses a mapping without it (-EINVAL on 7.3).
 *   wake        0600  the enforcer's doorbell, a RINGBUF
 *                     (UMCG_SCX_WAKE_RING_SZ in umcg_scx_enforce.h), only
 *                     with UMCG_SCX_ENFORCE: libumcg's servers sleep in
 *                     poll() on it and drain it (its consumer page is
 *                     writable, so root only, like the commands).
 *   enf_timer   0600  the enforcer's timer (heartbeat, hold release), only
 *                     with UMCG_SCX_ENFORCE, pinned for the user reference
 *                     a map with a timer needs: the kernel frees its
 *                     timers when no process and no pin holds it.
 *   umcg_register, umcg_pick, umcg_unregister, umcg_poke
 *               0600  the enforcer's SEC("syscall") commands
 *                     (umcg_scx_enforce.h), only with UMCG_SCX_ENFORCE,
 *                     for libumcg's scx backend, which opens them with
 *                     BPF_OBJ_GET and runs them with BPF_PROG_TEST_RUN.
 *                     Root only for now: the commands check who calls
 *                     them, but whether unprivileged BPF_PROG_TEST_RUN of
 *                     a syscall program works is not settled yet.
 *
 * The link pin is the mark of "loaded by umcgctl": the maps are pinned
 * first and the link last, and unloading removes the link first.  A
 * directory without a link pin is a leftover of a failed load or unload.
 * The pins outlive the scheduler: when the kernel ejects it (watchdog,
 * runtime error, SysRq-S), exit_info says why until "umcgctl unload".
 *
 * Unprivileged readers open the 0444 maps read-only (BPF_OBJ_GET with
 * BPF_F_RDONLY).  That needs search permission on every directory on the
 * way, so umcg_scx_bpffs_prepare() gives others search (not read)
 * permission on the bpffs root, which systemd mounts 0700, and the kernel
 * must allow BPF_OBJ_GET and map lookups without CAP_BPF.  Current kernels
 * do, even with kernel.unprivileged_bpf_disabled set, which only blocks
 * creating maps and loading programs (verified on Debian's 7.3 by the
 * guest test scx_loader; see Documentation/umcgctl.md, PERMISSIONS).
 *
 * Functions return 0 or -errno unless said otherwise; @dir is the pin
 * directory, normally UMCG_SCX_PIN_DIR.
 */
#ifndef UMCG_SCX_PIN_H
#define UMCG_SCX_PIN_H

#include <stdbool.h>
#include <sys/types.h>

#include "umcg_scx.h"

#define UMCG_SCX_BPFFS		"/sys/fs/bpf"
#define UMCG_SCX_PIN_DIR	UMCG_SCX_BPFFS "/umcg"

#define UMCG_SCX_PIN_LINK	"link"
#define UMCG_SCX_PIN_STATS	"stats"
#define UMCG_SCX_PIN_TASK_STATS	"task_stats"
#define UMCG_SCX_PIN_EXIT_INFO	"exit_info"
#define UMCG_SCX_PIN_CTL	"ctl"
#define UMCG_SCX_PIN_SHARED	"shared"
#define UMCG_SCX_PIN_WAKE	"wake"
#define UMCG_SCX_PIN_TIMER	"enf_timer"

#define UMCG_SCX_PIN_DIR_MODE	0755
#define UMCG_SCX_PIN_LINK_MODE	0600

/**
 * struct umcg_scx_pin_spec - one pinned map
 * @name: the map's name in umcg.bpf.c, also the pin's file name
 * @mode: the pin's permission bits
 */
struct umcg_scx_pin_spec {
	const char	*name;
	mode_t		mode;
};

/* The maps that umcg_scx_pin() pins; the array ends with a NULL name. */
extern const struct umcg_scx_pin_spec umcg_scx_pinned_maps[];
/* The programs it pins (by program name); ends with a NULL name. */
extern const struct umcg_scx_pin_spec umcg_scx_pinned_progs[];

struct bpf_object;

/*
 * Pin umcg_scx_pinned_progs of @obj (the loaded scheduler) into @dir, for
 * umcg_scx_pin(), before the link.  -ENOENT: a program is missing.  Pins
 * made before an error stay: the caller removes @dir.
 */
int umcg_scx_pin_progs(struct bpf_object *obj, const char *dir);

/* Report of umcg_scx_bpffs_prepare(): what it changed on the system. */
#define UMCG_SCX_BPFFS_MOUNTED	0x1	/* mounted bpffs on the parent */
#define UMCG_SCX_BPFFS_CHMOD	0x2	/* gave others search permission on it */

/*
 * Make sure @dir's parent is a bpffs that others can search, for
 * umcg_scx_pin(), which makes @dir.  If the parent is not a bpffs and is
 * UMCG_SCX_BPFFS, mount one there (mode 0711); if it does not let others
 * search it, add g+x and o+x.  *@did (may be NULL) gets UMCG_SCX_BPFFS_*
 * bits.  Root only.  -ENOTDIR: the parent is not a bpffs and is not
 * UMCG_SCX_BPFFS.
 */
int umcg_scx_bpffs_prepare(const char *dir, unsigned int *did);

/*
 * Serialise loaders: take an exclusive flock on @dir's parent (the bpffs
 * root), waiting for it.  Returns the descriptor that holds the lock
 * (close it to unlock) or -errno.
 */
int umcg_scx_pin_lock(const char *dir);

/* 1: the link is pinned at @dir.  0: nothing loaded there.  -errno: cannot tell. */
int umcg_scx_pinned(const char *dir);

/* A descriptor of pin @name in @dir, read-only if @rdonly; or -errno. */
int umcg_scx_pin_open(const char *dir, const char *name, bool rdonly);

/* The exit info of the scheduler pinned at @dir; kind NONE: it runs. */
int umcg_scx_pinned_exit_info(const char *dir, struct umcg_scx_exit_info *ei);

/*
 * The counters of the scheduler pinned at @dir: see
 * umcg_scx_stats_read_fd() (scx_maps.h) for @sum, @percpu and @nr_cpus.
 */
int umcg_scx_pinned_stats(const char *dir, struct umcg_scx_stats *sum,
			  struct umcg_scx_stats *percpu, int nr_cpus);

/*
 * Ask the scheduler pinned at @dir to eject itself (the test hook, struct
 * umcg_scx_ctl): @how is UMCG_SCX_EJECT_EXIT or UMCG_SCX_EJECT_ERROR.  It
 * happens when the next thread enters sched_ext.  Root only.
 */
int umcg_scx_pinned_request_eject(const char *dir, __u32 how);

/*
 * Unregister the scheduler pinned at @dir, synchronously: on return
 * ops.exit has run.  @ei gets its exit info: kind UNREG, or the earlier
 * exit if the kernel had ejected it.  Then remove every pin of @dir and
 * @dir itself.  -ENOENT: no link pinned at @dir (nothing is removed).
 * Root only.
 */
int umcg_scx_pinned_unload(const char *dir, struct umcg_scx_exit_info *ei);

/*
 * Remove every file of @dir, then @dir.  0 also when @dir does not exist.
 * Removing the link pin this way unregisters the scheduler only once the
 * kernel frees the inode, later; use umcg_scx_pinned_unload() for that.
 */
int umcg_scx_unpin(const char *dir);

#endif /* UMCG_SCX_PIN_H */
