// SPDX-License-Identifier: GPL-2.0
/*
 * Description: smoke test of unloading umcg.ko while the last reference on
 * a group is dropped by a task work.  A child's worker blocks in read()
 * (its resume work queued, holding the group), the child releases its
 * file (close and munmap), and the pipe is written: the resume work runs,
 * finds the group dying and drops the last reference, which frees the
 * group and the module reference, while the parent tries to unload the
 * module in a loop.  ROUNDS times; the module must unload each time and
 * the kernel log stay clean (the VM runner checks).  A thread returning
 * through freed module text would oops; the window is a few instructions,
 * so this cannot show the race reliably, only that the unload path works
 * with it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <uapi/umcg.h>

#include "kmod_test.h"
#include "kmod_raw.h"

#define ROUNDS		10
#define READY_MS	60000

struct shared {
	_Atomic int phase;	/* child: 1 blocked, 2 released */
	_Atomic int go;		/* parent: write the pipe now */
};

static struct shared *sh;
static int cfd, pfd[2];
static struct umcg_task *cmap;
static _Atomic int blocked;

static void *worker_fn(void *arg)
{
	__u64 off = 0;
	char c;

	(void)arg;
	if (umcg_reg(cfd, UMCG_REGISTER_WORKER, 0, 0, &off))
		_exit(10);
	umcg_state_store(&cmap[umcg_slot_idx(off)], UMCG_TASK_RUNNING);
	blocked = 1;
	if (read(pfd[0], &c, 1) != 1)
		_exit(11);
	/* Unmanaged now (the group is dying): exit. */
	return NULL;
}

static void __attribute__((noreturn)) child(void)
{
	pthread_t th;
	size_t len;
	int max;

	cfd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (cfd < 0)
		_exit(2);
	max = umcg_max_tasks(cfd);
	len = umcg_map_len(max);
	cmap = umcg_map(cfd, len);
	if (cmap == MAP_FAILED)
		_exit(3);
	if (pthread_create(&th, NULL, worker_fn, NULL))
		_exit(4);
	while (!blocked)
		umcg_sleep_ms(1);
	umcg_sleep_ms(50);
	sh->phase = 1;
	/* Release the file: only the queued resume work holds the group. */
	munmap(cmap, len);
	close(cfd);
	sh->phase = 2;
	while (!sh->go)
		umcg_sleep_ms(1);
	if (write(pfd[1], "x", 1) != 1)
		_exit(5);
	pthread_join(th, NULL);
	_exit(0);
}

TEST(unload_while_last_put_from_task_work)
{
	char path[PATH_MAX];
	bool was_loaded;
	int ret, status;

	if (!umcg_kmod_find(_metadata, path, sizeof(path)))
		return;
	was_loaded = umcg_test_kmod_loaded(UMCG_KMOD_NAME);
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	ret = umcg_unload_eventually(10000);
	ASSERT_TRUE(ret == 0 || ret == -ENOENT);

	for (int round = 0; round < ROUNDS; round++) {
		__u64 t0, t1;
		pid_t pid;
		long tries = 0;

		ASSERT_EQ(0, umcg_test_kmod_load(path));
		sh->phase = 0;
		sh->go = 0;
		ASSERT_EQ(0, pipe2(pfd, O_CLOEXEC));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0)
			child();
		close(pfd[0]);
		close(pfd[1]);
		ASSERT_TRUE(umcg_poll_ms(sh->phase == 2, READY_MS));
		EXPECT_EQ(-UMCG_EINUSE, umcg_test_kmod_unload(UMCG_KMOD_NAME));
		EXPECT_EQ(1, umcg_sys_count("works"));
		sh->go = 1;
		/* Unload as soon as the task work's put allows it. */
		t0 = umcg_now_ns();
		do {
			ret = umcg_test_kmod_unload(UMCG_KMOD_NAME);
			tries++;
		} while (ret == -UMCG_EINUSE &&
			 umcg_now_ns() - t0 < 10000 * UMCG_MS);
		t1 = umcg_now_ns();
		EXPECT_EQ(0, ret) TH_LOG("round %d: unload: %s", round,
					 strerror(-ret));
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
			TH_LOG("child status %#x", status);
		if (round == 0)
			TH_LOG("unloaded after %ld tries, %llu ms", tries,
			       (t1 - t0) / UMCG_MS);
		if (_metadata->exit_code)
			break;
	}
	munmap(sh, sizeof(*sh));
	if (was_loaded)
		EXPECT_EQ(0, umcg_test_kmod_load(path));
}

TEST_HARNESS_MAIN
