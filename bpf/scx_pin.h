/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_pin.h - the umcg sched_ext scheduler as "umcgctl load" leaves it:
 * attached, with no process holding it, through pins in a bpffs directory.
 *
 * Layout of UMCG_SCX_PIN_DIR (/sys/fs/bpf/umcg), mode 0755.  Modes by kind
 * of pin (enum umcg_scx_pin_kind); USE pins follow the load's access
 * (struct umcg_scx_access, "umcgctl load --group GROUP | --users"):
 *
 *                     kind    root   group GROUP   users
 *   link              -       0600   0600          0600
 *   stats, task_stats,
 *   exit_info,
 *   enf_stats         PUBLIC  0444   0444          0444
 *   ctl, enf_timer,
 *   bells             ROOT    0600   0600          0600
 *   umcg_register, umcg_pick,
 *   umcg_unregister,
 *   umcg_poke         USE_R   0600   0640 root:G   0644
 *   shared, wake      USE_RW  0600   0660 root:G   0666
 *
 *   link        the struct_ops link.  While it is pinned the scheduler
 *               stays registered; BPF_LINK_DETACH on it unregisters it.
 *               Whoever can open it can unload the scheduler, so root only.
 *   stats       PERCPU_ARRAY, struct umcg_scx_stats per CPU
 *   enf_stats   PERCPU_ARRAY, struct umcg_scx_enf_stats per CPU: the
 *               enforcer's counters, only with UMCG_SCX_ENFORCE
 *   task_stats  TASK_STORAGE, struct umcg_scx_task_stats; key: a pidfd of
 *               the thread
 *   exit_info   the scheduler's .data, which holds struct user_exit_info
 *               "uei" (UEI_DEFINE()): why the scheduler stopped, kept
 *               after the kernel ejected it
 *   ctl         ARRAY, struct umcg_scx_ctl: root's requests (the ejection
 *               test hook)
 *   shared      the enforcer's mmapable ARRAY, struct umcg_scx_shared
 *               (uapi/umcg_scx.h), only with UMCG_SCX_ENFORCE.  Frozen
 *               at load (BPF_MAP_FREEZE): no descriptor can update it or
 *               map it writable, so it is read-only for every process
 *               although its users open it read-write.  They must: a
 *               BPF_F_RDONLY descriptor cannot be mmapped at all, because
 *               mmap drops VM_SHARED for a file opened without write access
 *               and bpf_map_mmap() refuses a mapping without it (-EINVAL).
 *   wake        the enforcer's doorbell, a RINGBUF (UMCG_SCX_WAKE_RING_SZ
 *               in uapi/umcg_scx.h), only with UMCG_SCX_ENFORCE: servers
 *               registered with UMCG_SCX_REGISTER_DOORBELL sleep in poll()
 *               on it and drain it, so its users map its consumer page
 *               writable: read-write.  libumcg opens it only where the
 *               kernel has no bells.
 *   enf_timer   the enforcer's timer (heartbeat, hold release), only with
 *               UMCG_SCX_ENFORCE, pinned for the user reference a map with
 *               a timer needs: the kernel frees its timers when no process
 *               and no pin holds it.
 *   bells       the enforcer's ARRAY of the bell servers' task works, only
 *               with UMCG_SCX_ENFORCE, pinned for its user reference as
 *               well: bpf_task_work_schedule_signal() queues nothing for a
 *               map that no process and no pin holds.
 *   umcg_register, umcg_pick, umcg_unregister, umcg_poke
 *               the enforcer's SEC("syscall") commands (uapi/umcg_scx.h),
 *               only with UMCG_SCX_ENFORCE, for libumcg's scx backend,
 *               which opens them with BPF_OBJ_GET and BPF_F_RDONLY (a
 *               program's descriptor is read-write whatever the flags:
 *               bpf_obj_get_user()) and runs them with BPF_PROG_TEST_RUN,
 *               which checks no capability.  The commands check who calls
 *               them: a caller registers itself only, in its own process's
 *               group, and picks and pokes only its own process's threads.
 *
 * Documentation/scx.rst, Permissions, has the kernel's rules behind these
 * modes, verified on Debian's 7.3.
 *
 * The link pin is the mark of "loaded by umcgctl": the maps are pinned
 * first and the link last, and unloading removes the link first.  A
 * directory without a link pin is a leftover of a failed load or unload.
 * The pins outlive the scheduler: when the kernel ejects it (watchdog,
 * runtime error, SysRq-S), exit_info says why until "umcgctl unload".
 *
 * Unprivileged processes open the PUBLIC maps read-only (BPF_OBJ_GET with
 * BPF_F_RDONLY), and the USE pins as above when the access lets them.
 * That needs search permission on every directory on the way, so
 * umcg_scx_bpffs_prepare() gives others search (not read) permission on
 * the bpffs root, which systemd mounts 0700.  The sysctl
 * kernel.unprivileged_bpf_disabled blocks only creating maps and loading
 * programs (map_create(), bpf_prog_load()), not BPF_OBJ_GET, lookups,
 * mmap or BPF_PROG_TEST_RUN.  The default is root only: a user let in can
 * take every slot and group of the machine and freeze the doorbell, though
 * not touch another process's threads (Documentation/scx.rst).
 *
 * Functions return 0 or -errno unless said otherwise; @dir is the pin
 * directory, normally UMCG_SCX_PIN_DIR.
 */
#ifndef UMCG_SCX_PIN_H
#define UMCG_SCX_PIN_H

#include <stdbool.h>
#include <sys/types.h>

#include "umcg_scx_exit.h"

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
#define UMCG_SCX_PIN_BELLS	"bells"
#define UMCG_SCX_PIN_ENF_STATS	"enf_stats"

#define UMCG_SCX_PIN_DIR_MODE	0755
#define UMCG_SCX_PIN_LINK_MODE	0600

/* What a pin is for, which decides its mode (table above). */
enum umcg_scx_pin_kind {
	UMCG_SCX_PIN_ROOT,	/* root's: 0600 */
	UMCG_SCX_PIN_PUBLIC,	/* read-only for everyone: 0444 */
	UMCG_SCX_PIN_USE_R,	/* read by the users of the scheduler */
	UMCG_SCX_PIN_USE_RW,	/* read and written by them */
};

/* Who may use the scheduler: run libumcg's scx backend on it. */
enum umcg_scx_users {
	UMCG_SCX_USERS_ROOT,	/* root only: the default */
	UMCG_SCX_USERS_GROUP,	/* root and the members of one group */
	UMCG_SCX_USERS_ALL,	/* every user */
};

/**
 * struct umcg_scx_access - who may use a pinned scheduler
 * @users: whom the USE pins let in
 * @gid:   the group, with UMCG_SCX_USERS_GROUP
 */
struct umcg_scx_access {
	enum umcg_scx_users	users;
	gid_t			gid;
};

/**
 * struct umcg_scx_pin_spec - one pinned map or program
 * @name: its name in umcg.bpf.c, also the pin's file name
 * @kind: what it is for, which decides its mode
 */
struct umcg_scx_pin_spec {
	const char		*name;
	enum umcg_scx_pin_kind	kind;
	const char		*map;	/* the map's name if not @name */
};

/* The maps that umcg_scx_pin() pins; the array ends with a NULL name. */
extern const struct umcg_scx_pin_spec umcg_scx_pinned_maps[];
/* The programs it pins (by program name); ends with a NULL name. */
extern const struct umcg_scx_pin_spec umcg_scx_pinned_progs[];

/* The permission bits of a pin of @kind under @acc (NULL: root only). */
mode_t umcg_scx_pin_mode(enum umcg_scx_pin_kind kind,
			 const struct umcg_scx_access *acc);

/*
 * Give pin @path its owner root, its group (@acc's for a USE pin with
 * UMCG_SCX_USERS_GROUP) and umcg_scx_pin_mode(); the group first, so the
 * pin is never open to the wrong group.  Root only.
 */
int umcg_scx_pin_set_access(const char *path, enum umcg_scx_pin_kind kind,
			    const struct umcg_scx_access *acc);

/*
 * Who may use the scheduler pinned at @dir, from the modes of its USE
 * pins: everyone when each lets others in, a group when each lets that
 * group in, else root only.  Any user may ask (stat() only).  -ENOENT: no
 * USE pins (nothing pinned, or a scheduler without the enforcer).
 */
int umcg_scx_pinned_access(const char *dir, struct umcg_scx_access *acc);

struct bpf_object;

/*
 * Pin umcg_scx_pinned_progs of @obj (the loaded scheduler) into @dir, for
 * umcg_scx_pin(), before the link, with the modes of @acc.  -ENOENT: a
 * program is missing.  Pins made before an error stay: the caller removes
 * @dir.
 */
int umcg_scx_pin_progs(struct bpf_object *obj, const char *dir,
		       const struct umcg_scx_access *acc);

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
int umcg_scx_pinned_exit_info(const char *dir, struct user_exit_info *ei);

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
int umcg_scx_pinned_unload(const char *dir, struct user_exit_info *ei);

/*
 * Remove every file of @dir, then @dir.  0 also when @dir does not exist.
 * Removing the link pin this way unregisters the scheduler only once the
 * kernel frees the inode, later; use umcg_scx_pinned_unload() for that.
 */
int umcg_scx_unpin(const char *dir);

#endif /* UMCG_SCX_PIN_H */
