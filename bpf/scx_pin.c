// SPDX-License-Identifier: GPL-2.0
/*
 * scx_pin.c - the pinned umcg scheduler: prepare the bpffs directory, read
 * the pinned maps, unload; see scx_pin.h.  Pinning itself needs the
 * skeleton and lives in scx_loader.c (umcg_scx_pin()).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/magic.h>

#include "scx_maps.h"
#include "scx_pin.h"

const struct umcg_scx_pin_spec umcg_scx_pinned_maps[] = {
	{ UMCG_SCX_PIN_STATS,		UMCG_SCX_PIN_PUBLIC, NULL },
	{ UMCG_SCX_PIN_TASK_STATS,	UMCG_SCX_PIN_PUBLIC, NULL },
	{ UMCG_SCX_PIN_EXIT_INFO,	UMCG_SCX_PIN_PUBLIC, ".data" },
	{ UMCG_SCX_PIN_CTL,		UMCG_SCX_PIN_ROOT, NULL },
#ifdef UMCG_HAVE_SCX_ENFORCE
	{ UMCG_SCX_PIN_SHARED,		UMCG_SCX_PIN_USE_RW, NULL },
	/*
	 * The doorbell ring: whoever maps it can write its consumer page
	 * (and so make every sleeper's poll() return at once), so root's
	 * only.  Where others may use the scheduler the kernel has bells
	 * (umcg_scx_kernel_has_bells()) and their servers need no doorbell.
	 */
	{ UMCG_SCX_PIN_WAKE,		UMCG_SCX_PIN_ROOT, NULL },
	{ UMCG_SCX_PIN_ENF_STATS,	UMCG_SCX_PIN_PUBLIC, NULL },
	/*
	 * Pinned for its user reference only: the kernel frees the timers of
	 * a map that no process holds and no pin holds ("maps with timers
	 * must be either held by user space or pinned in bpffs", -EPERM from
	 * bpf_timer_init()), so without it the heartbeat and the hold
	 * release stopped when "umcgctl load" exited.
	 */
	{ UMCG_SCX_PIN_TIMER,		UMCG_SCX_PIN_ROOT, NULL },
	/*
	 * The same for the bells: bpf_task_work_schedule_signal() refuses
	 * (-EBUSY) to queue work for a map with no user reference.
	 */
	{ UMCG_SCX_PIN_BELLS,		UMCG_SCX_PIN_ROOT, NULL },
#endif
	{ NULL, 0, NULL }
};

const struct umcg_scx_pin_spec umcg_scx_pinned_progs[] = {
#ifdef UMCG_HAVE_SCX_ENFORCE
	{ "umcg_register",	UMCG_SCX_PIN_USE_R, NULL },
	{ "umcg_pick",		UMCG_SCX_PIN_USE_R, NULL },
	{ "umcg_unregister",	UMCG_SCX_PIN_USE_R, NULL },
	{ "umcg_poke",		UMCG_SCX_PIN_USE_R, NULL },
#endif
	{ NULL, 0, NULL }
};

mode_t umcg_scx_pin_mode(enum umcg_scx_pin_kind kind,
			 const struct umcg_scx_access *acc)
{
	enum umcg_scx_users users = acc ? acc->users : UMCG_SCX_USERS_ROOT;

	switch (kind) {
	case UMCG_SCX_PIN_PUBLIC:
		return 0444;
	case UMCG_SCX_PIN_USE_R:
		return users == UMCG_SCX_USERS_ALL ? 0644 :
		       users == UMCG_SCX_USERS_GROUP ? 0640 : 0600;
	case UMCG_SCX_PIN_USE_RW:
		return users == UMCG_SCX_USERS_ALL ? 0666 :
		       users == UMCG_SCX_USERS_GROUP ? 0660 : 0600;
	case UMCG_SCX_PIN_ROOT:
	default:
		return 0600;
	}
}

int umcg_scx_pin_set_access(const char *path, enum umcg_scx_pin_kind kind,
			    const struct umcg_scx_access *acc)
{
	bool group = acc && acc->users == UMCG_SCX_USERS_GROUP &&
		     (kind == UMCG_SCX_PIN_USE_R || kind == UMCG_SCX_PIN_USE_RW);

	/* 0600 until the group is right: never open to the wrong one. */
	if (chmod(path, 0600) || chown(path, 0, group ? acc->gid : 0) ||
	    chmod(path, umcg_scx_pin_mode(kind, acc)))
		return -errno;
	return 0;
}

/* Does @st (a USE pin of @kind) let others (@shift 0) or its group (3) in? */
static bool pin_lets_in(const struct stat *st, enum umcg_scx_pin_kind kind,
			int shift)
{
	mode_t need = kind == UMCG_SCX_PIN_USE_RW ? 06 : 04;

	return ((st->st_mode >> shift) & need) == need;
}

int umcg_scx_pinned_access(const char *dir, struct umcg_scx_access *acc)
{
	const struct umcg_scx_pin_spec *lists[] = {
		umcg_scx_pinned_maps, umcg_scx_pinned_progs,
	};
	bool all = true, group = true, any = false;
	char path[PATH_MAX];
	gid_t gid = 0;

	for (size_t l = 0; l < sizeof(lists) / sizeof(lists[0]); l++) {
		for (const struct umcg_scx_pin_spec *spec = lists[l]; spec->name; spec++) {
			struct stat st;

			if (spec->kind != UMCG_SCX_PIN_USE_R &&
			    spec->kind != UMCG_SCX_PIN_USE_RW)
				continue;
			if (snprintf(path, sizeof(path), "%s/%s", dir, spec->name) >=
			    (int)sizeof(path))
				return -ENAMETOOLONG;
			if (stat(path, &st))
				return -errno;
			if (!pin_lets_in(&st, spec->kind, 0))
				all = false;
			if (!pin_lets_in(&st, spec->kind, 3) ||
			    (any && st.st_gid != gid))
				group = false;
			gid = st.st_gid;
			any = true;
		}
	}
	if (!any)
		return -ENOENT;
	acc->gid = 0;
	if (all) {
		acc->users = UMCG_SCX_USERS_ALL;
	} else if (group) {
		acc->users = UMCG_SCX_USERS_GROUP;
		acc->gid = gid;
	} else {
		acc->users = UMCG_SCX_USERS_ROOT;
	}
	return 0;
}

int umcg_scx_pin_progs(struct bpf_object *obj, const char *dir,
		       const struct umcg_scx_access *acc)
{
	const struct umcg_scx_pin_spec *spec;
	char path[PATH_MAX];
	int ret;

	for (spec = umcg_scx_pinned_progs; spec->name; spec++) {
		struct bpf_program *prog;
		int fd;

		prog = bpf_object__find_program_by_name(obj, spec->name);
		fd = prog ? bpf_program__fd(prog) : -1;
		if (fd < 0)
			return -ENOENT;
		if (snprintf(path, sizeof(path), "%s/%s", dir, spec->name) >=
		    (int)sizeof(path))
			return -ENAMETOOLONG;
		if (bpf_obj_pin(fd, path))
			return -errno;
		ret = umcg_scx_pin_set_access(path, spec->kind, acc);
		if (ret)
			return ret;
	}
	return 0;
}

/* How long umcg_scx_pinned_unload() waits for a detach by unpinning. */
#define UNLOAD_WAIT_MS	5000

static int pin_path(char *buf, size_t len, const char *dir, const char *name)
{
	if (snprintf(buf, len, "%s/%s", dir, name) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

/* The parent directory of @dir into @buf. */
static int parent_of(char *buf, size_t len, const char *dir)
{
	char *slash;

	if (snprintf(buf, len, "%s", dir) >= (int)len)
		return -ENAMETOOLONG;
	/* Drop trailing slashes, then the last component. */
	for (size_t n = strlen(buf); n > 1 && buf[n - 1] == '/'; n--)
		buf[n - 1] = '\0';
	slash = strrchr(buf, '/');
	if (!slash)
		return -EINVAL;
	if (slash == buf)
		slash[1] = '\0';
	else
		*slash = '\0';
	return 0;
}

static bool is_bpffs(const char *path)
{
	struct statfs sf;

	return !statfs(path, &sf) && sf.f_type == BPF_FS_MAGIC;
}

int umcg_scx_bpffs_prepare(const char *dir, unsigned int *did)
{
	char parent[PATH_MAX];
	struct stat st;
	int ret;

	if (did)
		*did = 0;
	ret = parent_of(parent, sizeof(parent), dir);
	if (ret)
		return ret;
	if (!is_bpffs(parent)) {
		if (strcmp(parent, UMCG_SCX_BPFFS))
			return -ENOTDIR;
		if (mount("bpf", parent, "bpf", MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  "mode=0711"))
			return -errno;
		if (did)
			*did |= UMCG_SCX_BPFFS_MOUNTED;
	}
	if (stat(parent, &st))
		return -errno;
	/* g+x, o+x */
	if ((st.st_mode & 0011) != 0011) {
		if (chmod(parent, (st.st_mode & 07777) | 0011))
			return -errno;
		if (did)
			*did |= UMCG_SCX_BPFFS_CHMOD;
	}
	return 0;
}

int umcg_scx_pin_lock(const char *dir)
{
	char parent[PATH_MAX];
	int fd, ret;

	ret = parent_of(parent, sizeof(parent), dir);
	if (ret)
		return ret;
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (flock(fd, LOCK_EX)) {
		if (errno == EINTR)
			continue;
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

int umcg_scx_pinned(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;
	int ret;

	ret = pin_path(path, sizeof(path), dir, UMCG_SCX_PIN_LINK);
	if (ret)
		return ret;
	if (!stat(path, &st))
		return 1;
	return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
}

int umcg_scx_pin_open(const char *dir, const char *name, bool rdonly)
{
	LIBBPF_OPTS(bpf_obj_get_opts, opts,
		    .file_flags = rdonly ? BPF_F_RDONLY : 0);
	char path[PATH_MAX];
	int fd, ret;

	ret = pin_path(path, sizeof(path), dir, name);
	if (ret)
		return ret;
	fd = bpf_obj_get_opts(path, &opts);
	return fd < 0 ? -errno : fd;
}

int umcg_scx_pinned_exit_info(const char *dir, struct user_exit_info *ei)
{
	int fd, ret;

	fd = umcg_scx_pin_open(dir, UMCG_SCX_PIN_EXIT_INFO, true);
	if (fd < 0)
		return fd;
	ret = umcg_scx_exit_info_read_fd(fd, ei);
	close(fd);
	return ret;
}

int umcg_scx_pinned_stats(const char *dir, struct umcg_scx_stats *sum,
			  struct umcg_scx_stats *percpu, int nr_cpus)
{
	int fd, ret;

	fd = umcg_scx_pin_open(dir, UMCG_SCX_PIN_STATS, true);
	if (fd < 0)
		return fd;
	ret = umcg_scx_stats_read_fd(fd, sum, percpu, nr_cpus);
	close(fd);
	return ret;
}

int umcg_scx_pinned_request_eject(const char *dir, __u32 how)
{
	struct umcg_scx_ctl c = { .eject = how };
	__u32 zero = 0;
	int fd, ret;

	if (how != UMCG_SCX_EJECT_EXIT && how != UMCG_SCX_EJECT_ERROR)
		return -EINVAL;
	fd = umcg_scx_pin_open(dir, UMCG_SCX_PIN_CTL, false);
	if (fd < 0)
		return fd;
	ret = bpf_map_update_elem(fd, &zero, &c, BPF_ANY) ? -errno : 0;
	close(fd);
	return ret;
}

int umcg_scx_unpin(const char *dir)
{
	struct dirent *de;
	int dfd, ret = 0;
	DIR *d;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : -errno;
	d = fdopendir(dfd);
	if (!d) {
		ret = -errno;
		close(dfd);
		return ret;
	}
	/* The link first: without it the directory no longer means "loaded". */
	if (unlinkat(dfd, UMCG_SCX_PIN_LINK, 0) && errno != ENOENT)
		ret = -errno;
	while (!ret && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (unlinkat(dfd, de->d_name, 0) && errno != ENOENT)
			ret = -errno;
	}
	closedir(d);
	if (!ret && rmdir(dir) && errno != ENOENT)
		ret = -errno;
	return ret;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

int umcg_scx_pinned_unload(const char *dir, struct user_exit_info *ei)
{
	int link_fd, ei_fd, ret;

	memset(ei, 0, sizeof(*ei));
	link_fd = umcg_scx_pin_open(dir, UMCG_SCX_PIN_LINK, false);
	if (link_fd < 0)
		return link_fd;
	ei_fd = umcg_scx_pin_open(dir, UMCG_SCX_PIN_EXIT_INFO, true);
	if (ei_fd < 0) {
		close(link_fd);
		return ei_fd;
	}

	/*
	 * BPF_LINK_DETACH runs the kernel's unregistration, ops.exit
	 * included, before it returns; a scheduler the kernel ejected is
	 * unregistered again harmlessly and keeps its first exit info.
	 * Unpinning alone would unregister only once the inode is freed.
	 */
	ret = bpf_link_detach(link_fd) ? -errno : 0;
	close(link_fd);
	if (ret == -EOPNOTSUPP || ret == -EINVAL) {
		/* A kernel without struct_ops link detach: drop the pins, wait. */
		ret = umcg_scx_unpin(dir);
		for (int ms = 0; !ret && ms < UNLOAD_WAIT_MS; ms += 10) {
			ret = umcg_scx_exit_info_read_fd(ei_fd, ei);
			if (ret || ei->kind != UMCG_SCX_EXIT_NONE)
				break;
			sleep_ms(10);
		}
		if (!ret && ei->kind == UMCG_SCX_EXIT_NONE)
			ret = -ETIMEDOUT;
		close(ei_fd);
		return ret;
	}
	if (!ret)
		ret = umcg_scx_exit_info_read_fd(ei_fd, ei);
	close(ei_fd);
	if (ret)
		return ret;
	return umcg_scx_unpin(dir);
}
