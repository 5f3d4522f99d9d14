// SPDX-License-Identifier: GPL-2.0
/*
 * capacity - the "kmod" backend and umcg.ko's per-process thread limit:
 * the servers and workers of a process together fit in the module's
 * max_tasks (UMCG_IOC_GET_INFO).  umcg_spawn() of one worker too many
 * fails with -EAGAIN (and makes no thread) instead of misbehaving; the
 * workers that fit all run; once they are joined, spawning works again.
 * The limit is set to CAP_MAX_TASKS for the test (the module parameter
 * max_tasks, which the process's file takes at open): not a multiple of
 * the 64-slot chunks the module grows by, so the last chunk is partly
 * beyond the limit.
 */
#include <fcntl.h>
#include <stdatomic.h>
#include <sys/ioctl.h>

#include "kselftest_harness.h"

#include <umcg.h>

#include "kernel_backend.h"

#define CAP_MAX_TASKS	(4 * 64 + 37)

struct cap_run {
	_Atomic int go;
	_Atomic int ran;
};

static void *cap_worker(void *arg)
{
	struct cap_run *r = arg;

	while (!atomic_load(&r->go))
		umcg_park();
	atomic_fetch_add(&r->ran, 1);
	return NULL;
}

FIXTURE(cap)
{
	bool inited;
	long old_max;
	unsigned int max_tasks;
	struct cap_run run;
};

FIXTURE_SETUP(cap)
{
	struct umcg_config cfg = { .size = sizeof(cfg) };
	struct umcg_info info = { .size = sizeof(info) };
	const char *why = kb_backend_get();
	int fd;

	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, kb_max_tasks_set(CAP_MAX_TASKS, &self->old_max));
	fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, UMCG_IOC_GET_INFO, &info));
	close(fd);
	ASSERT_EQ(CAP_MAX_TASKS, info.max_tasks);
	self->max_tasks = info.max_tasks;
	cfg.nr_cores = 1;
	cfg.backend = KB_BACKEND;
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
	ASSERT_STREQ(KB_BACKEND, umcg_backend_name());
}

FIXTURE_TEARDOWN(cap)
{
	if (self->inited) {
		EXPECT_EQ(0, umcg_fini());
		KB_EXPECT_BACKEND_KEPT();
	}
	kb_max_tasks_restore(self->old_max);
}

TEST_F_TIMEOUT(cap, one_worker_too_many, 110)
{
	unsigned int fit = self->max_tasks - 1;	/* one server */
	struct umcg_attr a = { .size = sizeof(a), .core = -1 };
	struct cap_run *r = &self->run;
	umcg_thread_t **t = calloc(fit + 1, sizeof(*t)), *extra = NULL;
	struct umcg_stats st;
	unsigned int n;
	uint64_t end;
	int ret = 0;

	ASSERT_NE(NULL, t);
	a.stack_size = 128 * 1024;
	for (n = 0; n < fit; n++) {
		ret = umcg_spawn(&t[n], &a, cap_worker, r);
		if (ret)
			break;
	}
	EXPECT_EQ(0, ret) TH_LOG("spawn %u of %u: %s", n + 1, fit, strerror(-ret));
	ASSERT_EQ(-EAGAIN, umcg_spawn(&extra, &a, cap_worker, r));
	EXPECT_EQ(NULL, extra);
	ASSERT_EQ(0, umcg_stats(&st));
	EXPECT_EQ(n, st.live);

	/* Every worker that fit registered and runs. */
	end = kb_now_ns() + 60000 * KB_MS;
	for (unsigned int i = 0; i < n; i++) {
		while (umcg_thread_state(t[i]) != UMCG_STATE_PARKED && kb_now_ns() < end)
			usleep(1000);
		ASSERT_EQ(UMCG_STATE_PARKED, umcg_thread_state(t[i])) TH_LOG("worker %u", i);
	}
	atomic_store(&r->go, 1);
	for (unsigned int i = 0; i < n; i++)
		EXPECT_EQ(0, umcg_unpark(t[i]));
	for (unsigned int i = 0; i < n; i++) {
		while (umcg_thread_state(t[i]) != UMCG_STATE_DONE && kb_now_ns() < end)
			usleep(1000);
		ASSERT_EQ(UMCG_STATE_DONE, umcg_thread_state(t[i])) TH_LOG("worker %u", i);
		EXPECT_EQ(0, umcg_join(t[i], NULL));
	}
	EXPECT_EQ((int)n, atomic_load(&r->ran));

	/* The slots came back. */
	ASSERT_EQ(0, umcg_spawn(&extra, &a, cap_worker, r));
	EXPECT_EQ(0, umcg_join(extra, NULL));
	free(t);
}

TEST_HARNESS_MAIN
