// SPDX-License-Identifier: GPL-2.0
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
		if (uid != (uid_t)-1 &&
		    (setgroups(0, NULL) || setresgid(gid, gid, gid) ||
		     setresuid(uid, uid, uid))) {
			fprintf(stderr, "cannot become uid %d gid %d: %m\n", (int)uid, (int)gid);
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

	if (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
		return -errno;
	if (syscall(SYS_capget, &h, d))
		return -errno;
	/* setresuid() away from root clears the permitted and effective sets. */
	if (d[0].effective || d[1].effective || d[0].permitted || d[1].permitted)
		return -EPERM;
	return 0;
}
