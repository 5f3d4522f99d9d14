// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uapi/umcg.h>
#include <uapi/umcg_scx.h>

#include "umcg_test.h"

const char *umcg_test_build_dir(void)
{
	static char dir[PATH_MAX];
	const char *env = getenv("UMCG_BUILD_DIR");
	ssize_t n;

	if (env && *env)
		return env;
	if (dir[0])
		return dir;
	n = readlink("/proc/self/exe", dir, sizeof(dir) - 1);
	if (n < 0)
		return ".";
	dir[n] = '\0';
	/* <build>/tests/guest/<test> */
	for (int i = 0; i < 3; i++)
		dirname(dir);
	return dir;
}

int umcg_test_kernel_path(char *buf, size_t len, const char *subdir, const char *file)
{
	struct utsname u;
	int n;

	if (uname(&u))
		return -errno;
	n = snprintf(buf, len, "%s/%s/%s/%s", umcg_test_build_dir(), subdir,
		     u.release, file);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int umcg_test_kmod_load_params(const char *path, const char *params)
{
	int fd, ret = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (syscall(SYS_finit_module, fd, params ? params : "", 0))
		ret = -errno;
	close(fd);
	return ret;
}

int umcg_test_kmod_load(const char *path)
{
	const char *params = getenv("UMCG_TEST_KMOD_PARAMS");

	return umcg_test_kmod_load_params(path, params ? params : "");
}

int umcg_test_kmod_unload(const char *name)
{
	return syscall(SYS_delete_module, name, O_NONBLOCK) ? -errno : 0;
}

int umcg_test_kmod_loaded(const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "/sys/module/%s", name);
	return stat(path, &st) == 0;
}

int umcg_test_read_line(const char *path, char *buf, size_t len)
{
	FILE *f;

	buf[0] = '\0';
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int scx_sysfs_read(const char *name, char *buf, size_t len)
{
	char path[128];

	snprintf(path, sizeof(path), UMCG_TEST_SCX_SYSFS "/%s", name);
	return umcg_test_read_line(path, buf, len);
}

int umcg_test_scx_state(char *ops, size_t len)
{
	char state[32];

	ops[0] = '\0';
	scx_sysfs_read("state", state, sizeof(state));
	if (strcmp(state, "enabled"))
		return 0;
	scx_sysfs_read("root/ops", ops, len);
	return strcmp(ops, UMCG_SCX_OPS_NAME) ? -1 : 1;
}

static int umcgctl_fd = -1;

int umcg_test_umcgctl_open(void)
{
	char path[PATH_MAX];
	int fd;

	if (umcgctl_fd >= 0)
		return 0;
	if (snprintf(path, sizeof(path), "%s/tools/umcgctl",
		     umcg_test_build_dir()) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	umcgctl_fd = fd;
	return 0;
}

int umcg_test_umcgctl_as(uid_t uid, gid_t gid, char *out, size_t len, const char *args)
{
	char words[512], sink[256], *argv[16] = { "umcgctl" }, *save = NULL, *w;
	int fds[2], argc = 1, status, ret;
	ssize_t r;
	pid_t pid;

	out[0] = '\0';
	ret = umcg_test_umcgctl_open();
	if (ret) {
		snprintf(out, len, "cannot open %s/tools/umcgctl: %s\n",
			 umcg_test_build_dir(), strerror(-ret));
		return ret;
	}
	if (snprintf(words, sizeof(words), "%s", args) >= (int)sizeof(words))
		return -E2BIG;
	for (w = strtok_r(words, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		if (argc == 15)
			return -E2BIG;
		argv[argc++] = w;
	}
	argv[argc] = NULL;

	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		ret = -errno;
		close(fds[0]);
		close(fds[1]);
		return ret;
	}
	if (pid == 0) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		ret = uid == (uid_t)-1 ? 0 : umcg_test_drop_to(uid, gid);
		if (ret) {
			fprintf(stderr, "cannot become uid %d gid %d: %s\n", (int)uid,
				(int)gid, strerror(-ret));
			_exit(126);
		}
		/* Through the descriptor: no path to walk as @uid. */
		syscall(SYS_execveat, umcgctl_fd, "", argv, environ, AT_EMPTY_PATH);
		fprintf(stderr, "exec umcgctl: %m\n");
		_exit(127);
	}
	close(fds[1]);
	umcg_test_read_all(fds[0], out, len);
	while ((r = read(fds[0], sink, sizeof(sink))) != 0)
		if (r < 0 && errno != EINTR)
			break;
	close(fds[0]);
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int umcg_test_umcgctl(const char *verb, bool quiet)
{
	static char out[16384];
	int ret = umcg_test_umcgctl_as((uid_t)-1, (gid_t)-1, out, sizeof(out), verb);

	for (char *line = out, *nl; !quiet && *line; line = nl + 1) {
		nl = strchrnul(line, '\n');
		printf("# %.*s\n", (int)(nl - line), line);
		if (!*nl)
			break;
	}
	fflush(stdout);
	return ret;
}

const char *umcg_test_scx_get(bool *loaded)
{
	static char why[PATH_MAX + 128];
	char ops[64];
	int l;

	*loaded = false;
	if (access(UMCG_TEST_SCX_SYSFS, F_OK))
		return "no sched_ext in this kernel (" UMCG_TEST_SCX_SYSFS " is missing)";
	l = umcg_test_scx_state(ops, sizeof(ops));
	if (l < 0) {
		snprintf(why, sizeof(why), "another sched_ext scheduler (\"%s\") "
			 "is loaded", ops);
		return why;
	}
	if (l)
		return NULL;
	if (umcg_test_umcgctl("load", true) ||
	    umcg_test_scx_state(ops, sizeof(ops)) != 1) {
		snprintf(why, sizeof(why), "the umcg scheduler cannot be loaded "
			 "(%s/tools/umcgctl load)", umcg_test_build_dir());
		return why;
	}
	*loaded = true;
	return NULL;
}

int umcg_test_scx_put(void)
{
	return umcg_test_umcgctl("unload", true) ? -EIO : 0;
}

/* How many CPUs the kernel may ever have: the per-CPU maps' value count. */
static int umcg_test_possible_cpus(void)
{
	char buf[64], *dash;
	int ret = umcg_test_read_line("/sys/devices/system/cpu/possible", buf, sizeof(buf));

	if (ret)
		return ret;
	dash = strrchr(buf, '-');
	return (dash ? atoi(dash + 1) : atoi(buf)) + 1;
}

int umcg_test_scx_enf_stat(unsigned int idx, uint64_t *val)
{
	union bpf_attr a;
	int nr = umcg_test_possible_cpus(), fd, ret = 0;
	struct umcg_scx_enf_stats *per;
	__u32 zero = 0;

	if (idx >= UMCG_SCX_NR_ENF_STATS)
		return -EINVAL;
	if (nr <= 0)
		return nr ? nr : -EINVAL;
	memset(&a, 0, sizeof(a));
	a.pathname = (__u64)(uintptr_t)"/sys/fs/bpf/umcg/enf_stats";
	a.file_flags = BPF_F_RDONLY;
	fd = syscall(SYS_bpf, BPF_OBJ_GET, &a, sizeof(a));
	if (fd < 0)
		return -errno;
	per = calloc(nr, sizeof(*per));
	if (!per) {
		close(fd);
		return -ENOMEM;
	}
	memset(&a, 0, sizeof(a));
	a.map_fd = fd;
	a.key = (__u64)(uintptr_t)&zero;
	a.value = (__u64)(uintptr_t)per;
	if (syscall(SYS_bpf, BPF_MAP_LOOKUP_ELEM, &a, sizeof(a)))
		ret = -errno;
	*val = 0;
	for (int c = 0; !ret && c < nr; c++)
		*val += per[c].cnt[idx];
	free(per);
	close(fd);
	return ret;
}

size_t umcg_test_read_all(int fd, char *buf, size_t len)
{
	size_t n = 0;
	ssize_t r;

	while (n < len - 1 && (r = read(fd, buf + n, len - 1 - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		n += r;
	}
	buf[n] = '\0';
	return n;
}

int umcg_test_drop_to(uid_t uid, gid_t gid)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (chdir("/") || setgroups(0, NULL) || setresgid(gid, gid, gid) ||
	    setresuid(uid, uid, uid))
		return -errno;
	if (syscall(SYS_capget, &h, d))
		return -errno;
	/* setresuid() away from root clears the permitted and effective sets. */
	if (d[0].effective || d[1].effective || d[0].permitted || d[1].permitted)
		return -EPERM;
	return 0;
}

/* Libraries that need libraries: how deep umcg_test_stage_make() follows. */
#define STAGE_DEPTH	4
#define STAGE_NEEDED	32

/* What the dynamic loader looks for on behalf of an ELF file. */
struct stage_deps {
	char	runpath[PATH_MAX];	/* DT_RUNPATH, else DT_RPATH */
	int	nr;
	char	needed[STAGE_NEEDED][NAME_MAX + 1];
};

/*
 * The dependencies of @path: none for a file that is not a dynamically
 * linked 64-bit ELF file (a script, a static program).  0 or -errno
 * (-ENOEXEC: an ELF file whose dynamic section cannot be read).
 */
static int stage_elf_deps(const char *path, struct stage_deps *d)
{
	const Elf64_Shdr *sh, *strsh;
	const Elf64_Ehdr *eh;
	const Elf64_Dyn *dyn;
	char rpath[PATH_MAX] = "";
	const char *strs;
	struct stat st;
	int fd, ret = 0;
	size_t size, n;
	void *m;

	d->runpath[0] = '\0';
	d->nr = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	size = st.st_size;
	if (size < sizeof(*eh)) {
		close(fd);
		return 0;
	}
	m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -errno;
	eh = m;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64)
		goto out;
	ret = -ENOEXEC;
	if (!eh->e_shoff || eh->e_shentsize != sizeof(*sh) ||
	    eh->e_shoff + (size_t)eh->e_shnum * sizeof(*sh) > size)
		goto out;
	sh = (const Elf64_Shdr *)((const char *)m + eh->e_shoff);
	for (int i = 0; i < eh->e_shnum; i++) {
		if (sh[i].sh_type != SHT_DYNAMIC)
			continue;
		if (sh[i].sh_link >= eh->e_shnum ||
		    sh[i].sh_offset + sh[i].sh_size > size)
			goto out;
		strsh = &sh[sh[i].sh_link];
		if (strsh->sh_offset + strsh->sh_size > size)
			goto out;
		strs = (const char *)m + strsh->sh_offset;
		dyn = (const Elf64_Dyn *)((const char *)m + sh[i].sh_offset);
		n = sh[i].sh_size / sizeof(*dyn);
		for (size_t j = 0; j < n && dyn[j].d_tag != DT_NULL; j++) {
			const char *s = strs + dyn[j].d_un.d_val;
			size_t room = strsh->sh_size - dyn[j].d_un.d_val;

			if (dyn[j].d_tag != DT_NEEDED && dyn[j].d_tag != DT_RUNPATH &&
			    dyn[j].d_tag != DT_RPATH)
				continue;
			if (dyn[j].d_un.d_val >= strsh->sh_size || strnlen(s, room) == room)
				goto out;
			if (dyn[j].d_tag == DT_RUNPATH)
				snprintf(d->runpath, sizeof(d->runpath), "%s", s);
			else if (dyn[j].d_tag == DT_RPATH)
				snprintf(rpath, sizeof(rpath), "%s", s);
			else if (d->nr == STAGE_NEEDED) {
				ret = -E2BIG;
				goto out;
			} else {
				snprintf(d->needed[d->nr++], sizeof(d->needed[0]), "%s", s);
			}
		}
		break;
	}
	/* DT_RPATH counts only without a DT_RUNPATH, as for ld.so. */
	if (!d->runpath[0])
		snprintf(d->runpath, sizeof(d->runpath), "%s", rpath);
	ret = 0;
out:
	munmap(m, size);
	return ret;
}

/* The directories of @rel (relative) under @top, mode 0755. */
static int stage_mkdirs(const char *top, const char *rel)
{
	char path[PATH_MAX];

	for (const char *p = strchr(rel, '/'); p; p = strchr(p + 1, '/')) {
		if (snprintf(path, sizeof(path), "%s/%.*s", top, (int)(p - rel), rel) >=
		    (int)sizeof(path))
			return -ENAMETOOLONG;
		if (mkdir(path, 0755) && errno != EEXIST)
			return -errno;
		if (chmod(path, 0755))
			return -errno;
	}
	return 0;
}

/* @src's content (a symbolic link followed) into a new file @dst, 0755. */
static int stage_copy(const char *src, const char *dst)
{
	char buf[16384];
	int in, out, ret = 0;
	ssize_t n;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	if (out < 0) {
		ret = -errno;
		close(in);
		return ret;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write(out, buf, n) != n) {
			ret = n < 0 ? -errno : -EIO;
			break;
		}
	}
	if (!ret && fchmod(out, 0755))
		ret = -errno;
	close(in);
	if (close(out) && !ret)
		ret = -errno;
	return ret;
}

/* @dir into st->libpath, once. */
static int stage_add_libdir(struct umcg_test_stage *st, const char *dir)
{
	size_t len = strlen(dir), used = strlen(st->libpath), room;
	const char *p = st->libpath;
	int n;

	while (*p) {
		if (!strncmp(p, dir, len) && (p[len] == ':' || !p[len]))
			return 0;
		p += strcspn(p, ":");
		if (*p)
			p++;
	}
	room = sizeof(st->libpath) - used;
	n = snprintf(st->libpath + used, room, "%s%s", used ? ":" : "", dir);
	if (n < 0 || (size_t)n >= room) {
		st->libpath[used] = '\0';
		return -ENAMETOOLONG;
	}
	return 0;
}

/*
 * Build output @rel, and each DT_NEEDED of it that the loader finds in a
 * DT_RUNPATH directory inside the build directory ($ORIGIN expanded),
 * into the stage.
 */
static int stage_file(struct umcg_test_stage *st, const char *rel, int depth)
{
	char src[PATH_MAX], dst[PATH_MAX], origin[PATH_MAX], entry[PATH_MAX];
	char real[PATH_MAX], lib[PATH_MAX], runpath[PATH_MAX];
	size_t blen = strlen(st->build);
	struct stage_deps *d;
	int ret;

	if (depth > STAGE_DEPTH)
		return -ELOOP;
	if (snprintf(src, sizeof(src), "%s/%s", st->build, rel) >= (int)sizeof(src) ||
	    snprintf(dst, sizeof(dst), "%s/%s", st->dir, rel) >= (int)sizeof(dst))
		return -ENAMETOOLONG;
	if (!access(dst, F_OK))
		return 0;	/* a library that two need */
	ret = stage_mkdirs(st->dir, rel);
	if (!ret)
		ret = stage_copy(src, dst);
	if (ret)
		return ret;
	d = malloc(sizeof(*d));
	if (!d)
		return -ENOMEM;
	ret = stage_elf_deps(src, d);
	snprintf(origin, sizeof(origin), "%s", src);
	dirname(origin);
	for (int i = 0; !ret && i < d->nr; i++) {
		char *save = NULL, *e;

		snprintf(runpath, sizeof(runpath), "%s", d->runpath);
		for (e = strtok_r(runpath, ":", &save); e; e = strtok_r(NULL, ":", &save)) {
			const char *reldir;

			if (!strncmp(e, "$ORIGIN", 7))
				snprintf(entry, sizeof(entry), "%s%s", origin, e + 7);
			else if (!strncmp(e, "${ORIGIN}", 9))
				snprintf(entry, sizeof(entry), "%s%s", origin, e + 9);
			else
				snprintf(entry, sizeof(entry), "%s", e);
			if (!realpath(entry, real) || strncmp(real, st->build, blen) ||
			    (real[blen] != '/' && real[blen]))
				continue;
			if (snprintf(lib, sizeof(lib), "%s/%s", real, d->needed[i]) >=
			    (int)sizeof(lib) || access(lib, F_OK))
				continue;
			reldir = real[blen] ? real + blen + 1 : "";
			snprintf(lib, sizeof(lib), "%s%s%s", reldir, *reldir ? "/" : "",
				 d->needed[i]);
			ret = stage_file(st, lib, depth + 1);
			if (ret)
				break;
			snprintf(lib, sizeof(lib), "%s%s%s", st->dir, *reldir ? "/" : "",
				 reldir);
			ret = stage_add_libdir(st, lib);
			break;
		}
	}
	free(d);
	return ret;
}

int umcg_test_stage_make(struct umcg_test_stage *st, const char *const *files)
{
	int ret = 0;

	st->dir[0] = '\0';
	st->libpath[0] = '\0';
	if (!realpath(umcg_test_build_dir(), st->build))
		return -errno;
	snprintf(st->dir, sizeof(st->dir), "/tmp/umcg-stage.XXXXXX");
	if (!mkdtemp(st->dir)) {
		ret = -errno;
		st->dir[0] = '\0';
		return ret;
	}
	/* mkdtemp() made it 0700. */
	if (chmod(st->dir, 0755))
		ret = -errno;
	for (; !ret && *files; files++)
		ret = stage_file(st, *files, 0);
	if (ret)
		umcg_test_stage_remove(st);
	return ret;
}

int umcg_test_stage_enter(const struct umcg_test_stage *st)
{
	const char *old = getenv("LD_LIBRARY_PATH");
	char lp[2 * PATH_MAX];

	if (chdir(st->dir) || setenv("UMCG_BUILD_DIR", st->dir, 1))
		return -errno;
	if (!st->libpath[0])
		return 0;
	snprintf(lp, sizeof(lp), "%s%s%s", st->libpath, old && *old ? ":" : "",
		 old ? old : "");
	return setenv("LD_LIBRARY_PATH", lp, 1) ? -errno : 0;
}

static int stage_unlink(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void umcg_test_stage_remove(struct umcg_test_stage *st)
{
	if (!st->dir[0])
		return;
	nftw(st->dir, stage_unlink, 8, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	st->dir[0] = '\0';
}
