// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

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
