// SPDX-License-Identifier: GPL-2.0
/*
 * Description: umcg.ko loads, creates /dev/umcg, cannot be unloaded while
 * a file of the device is open (C7), unloads cleanly and loads again.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <uapi/umcg.h>

#include "kmod_probe.h"
#include "kmod_test.h"

#define MISC_MAJOR	10

/*
 * Every test starts with umcg.ko unloaded and leaves it as it found it, so
 * that the guest tests that run after this one see the same machine.
 */
FIXTURE(umcg_mod) {
	char path[PATH_MAX];
	bool was_loaded;
};

FIXTURE_SETUP(umcg_mod)
{
	int ret;

	if (!umcg_kmod_find(_metadata, self->path, sizeof(self->path)))
		return;
	self->was_loaded = umcg_test_kmod_loaded(UMCG_KMOD_NAME);
	ret = umcg_test_kmod_unload(UMCG_KMOD_NAME);
	ASSERT_TRUE(ret == 0 || ret == -ENOENT)
		TH_LOG("unloading umcg: %s", strerror(-ret));
	ASSERT_FALSE(umcg_test_kmod_loaded(UMCG_KMOD_NAME));
}

FIXTURE_TEARDOWN(umcg_mod)
{
	int ret;

	if (self->was_loaded) {
		ret = umcg_test_kmod_load(self->path);
		EXPECT_TRUE(ret == 0 || ret == -EEXIST);
	} else {
		ret = umcg_test_kmod_unload(UMCG_KMOD_NAME);
		EXPECT_TRUE(ret == 0 || ret == -ENOENT);
	}
}

TEST_F(umcg_mod, load_creates_misc_device)
{
	struct stat st;
	long ma, mi;
	FILE *f;
	int n;

	ASSERT_EQ(-1, stat(UMCG_DEVICE_PATH, &st));
	EXPECT_EQ(ENOENT, errno);

	ASSERT_EQ(0, umcg_test_kmod_load(self->path));
	ASSERT_TRUE(umcg_test_kmod_loaded(UMCG_KMOD_NAME));

	ASSERT_EQ(0, stat(UMCG_DEVICE_PATH, &st));
	EXPECT_TRUE(S_ISCHR(st.st_mode));
	EXPECT_EQ(MISC_MAJOR, major(st.st_rdev));
	EXPECT_EQ(0666, st.st_mode & 07777);

	/* The node is the device the misc class registered under our name. */
	f = fopen("/sys/class/misc/" UMCG_DEVICE_NAME "/dev", "re");
	ASSERT_NE(NULL, f);
	n = fscanf(f, "%ld:%ld", &ma, &mi);
	fclose(f);
	ASSERT_EQ(2, n);
	EXPECT_EQ(ma, major(st.st_rdev));
	EXPECT_EQ(mi, minor(st.st_rdev));
}

TEST_F(umcg_mod, load_twice_fails)
{
	ASSERT_EQ(0, umcg_test_kmod_load(self->path));
	EXPECT_EQ(-EEXIST, umcg_test_kmod_load(self->path));
	EXPECT_TRUE(umcg_test_kmod_loaded(UMCG_KMOD_NAME));
}

TEST_F(umcg_mod, probe_follows_module)
{
	struct umcg_info info;

	EXPECT_EQ(-ENOENT, umcg_kmod_get_info(&info));

	ASSERT_EQ(0, umcg_test_kmod_load(self->path));
	memset(&info, 0xa5, sizeof(info));
	ASSERT_EQ(0, umcg_kmod_get_info(&info));
	EXPECT_EQ(UMCG_API_VERSION, info.api_version);
	EXPECT_EQ(UMCG_KMOD_TEST_FEATURES, info.features);

	ASSERT_EQ(0, umcg_test_kmod_unload(UMCG_KMOD_NAME));
	EXPECT_EQ(-ENOENT, umcg_kmod_get_info(&info));
}

TEST_F(umcg_mod, unload_while_open_fails)
{
	struct umcg_info info = { .size = sizeof(info) };
	int fd;

	ASSERT_EQ(0, umcg_test_kmod_load(self->path));
	EXPECT_EQ(0, umcg_read_number("/sys/module/umcg/refcnt"));
	fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	/* One reference for the open file, one for its group. */
	EXPECT_EQ(2, umcg_read_number("/sys/module/umcg/refcnt"));

	EXPECT_EQ(-UMCG_EINUSE, umcg_test_kmod_unload(UMCG_KMOD_NAME));
	EXPECT_TRUE(umcg_test_kmod_loaded(UMCG_KMOD_NAME));
	EXPECT_EQ(0, access(UMCG_DEVICE_PATH, F_OK));
	/* The refused unload left the open file working. */
	EXPECT_EQ(0, ioctl(fd, UMCG_IOC_GET_INFO, &info));
	EXPECT_EQ(UMCG_KMOD_TEST_FEATURES, info.features);

	EXPECT_EQ(0, close(fd));
	EXPECT_EQ(0, umcg_read_number("/sys/module/umcg/refcnt"));
	EXPECT_EQ(0, umcg_test_kmod_unload(UMCG_KMOD_NAME));
}

/* The reference belongs to the open file, not to the process that opened it. */
TEST_F(umcg_mod, unload_while_child_holds_fd_fails)
{
	int fd, pipefd[2], status;
	pid_t child;
	char c;

	ASSERT_EQ(0, umcg_test_kmod_load(self->path));
	ASSERT_EQ(0, pipe(pipefd));
	fd = open(UMCG_DEVICE_PATH, O_RDWR);
	ASSERT_LE(0, fd);

	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		/* Holds fd until the parent closes the pipe's write end. */
		close(pipefd[1]);
		_exit(read(pipefd[0], &c, 1) == 0 ? 0 : 1);
	}
	close(pipefd[0]);
	EXPECT_EQ(0, close(fd));

	EXPECT_EQ(-UMCG_EINUSE, umcg_test_kmod_unload(UMCG_KMOD_NAME));
	EXPECT_TRUE(umcg_test_kmod_loaded(UMCG_KMOD_NAME));

	close(pipefd[1]);
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	EXPECT_EQ(0, umcg_test_kmod_unload(UMCG_KMOD_NAME));
}

TEST_F(umcg_mod, unload_after_close_removes_device)
{
	int fd;

	ASSERT_EQ(0, umcg_test_kmod_load(self->path));
	fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, close(fd));

	ASSERT_EQ(0, umcg_test_kmod_unload(UMCG_KMOD_NAME));
	EXPECT_FALSE(umcg_test_kmod_loaded(UMCG_KMOD_NAME));
	EXPECT_EQ(-1, access(UMCG_DEVICE_PATH, F_OK));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, access("/sys/class/misc/" UMCG_DEVICE_NAME, F_OK));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-1, open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC));
	EXPECT_EQ(ENOENT, errno);
	EXPECT_EQ(-ENOENT, umcg_test_kmod_unload(UMCG_KMOD_NAME));
}

TEST_F(umcg_mod, reload)
{
	for (int i = 0; i < 3; i++) {
		struct umcg_info info = { .size = sizeof(info) };
		int fd;

		ASSERT_EQ(0, umcg_test_kmod_load(self->path)) TH_LOG("load %d", i);
		fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
		ASSERT_LE(0, fd) TH_LOG("open after load %d", i);
		EXPECT_EQ(0, ioctl(fd, UMCG_IOC_GET_INFO, &info));
		EXPECT_EQ(UMCG_KMOD_TEST_FEATURES, info.features);
		ASSERT_EQ(0, close(fd));
		ASSERT_EQ(0, umcg_test_kmod_unload(UMCG_KMOD_NAME))
			TH_LOG("unload %d", i);
		ASSERT_FALSE(umcg_test_kmod_loaded(UMCG_KMOD_NAME));
	}
}

TEST_HARNESS_MAIN
