// SPDX-License-Identifier: GPL-2.0
/*
 * Description: what the block hook costs a process that does not use
 * umcg (C9).  With no worker registered the hook is not registered with
 * the kernel at all (hook_armed reads 0, and another process's sleeps do
 * not call it: hook_calls stays put); the first worker's registration
 * arms it, and hook_linger_ms after the last worker's slot is freed it is
 * disarmed again.  While armed, only workers' sleeps find a slot
 * (hook_hits).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <uapi/umcg.h>

#include "kmod_test.h"
#include "kmod_raw.h"

#define SYSFS		"/sys/class/misc/umcg/"
#define LINGER_PARAM	"/sys/module/umcg/parameters/hook_linger_ms"
#define SLEEPS		200

static long attr(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), SYSFS "%s", name);
	return umcg_read_number(path);
}

/* A process that uses no umcg sleeps SLEEPS times; returns its status. */
static int sleeper(void)
{
	struct timespec ts = { 0, 100000 };
	pid_t pid = fork();
	int status, i;

	if (pid < 0)
		return -1;
	if (!pid) {
		for (i = 0; i < SLEEPS; i++)
			nanosleep(&ts, NULL);
		_exit(0);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

/* Wait until hook_armed reads @want, up to the linger time plus 5 s. */
static bool armed_becomes(long want)
{
	long linger = umcg_read_number(LINGER_PARAM);
	long waited;

	if (linger < 0)
		linger = 0;
	for (waited = 0; waited < linger + 5000; waited += 50) {
		if (attr("hook_armed") == want)
			return true;
		usleep(50000);
	}
	return attr("hook_armed") == want;
}

FIXTURE(hook) {
	bool loaded;
};

FIXTURE_SETUP(hook)
{
	if (!umcg_kmod_get(_metadata, &self->loaded))
		return;
	ASSERT_LE(0, attr("hook_calls")) TH_LOG(SYSFS "hook_calls: missing");
	if (attr("workers"))
		SKIP(return, "another program has umcg workers registered");
}

FIXTURE_TEARDOWN(hook)
{
	if (self->loaded)
		EXPECT_EQ(0, umcg_test_kmod_unload(UMCG_KMOD_NAME));
}

/* Nobody uses the module: another process's sleeps never reach it. */
TEST_F(hook, disarmed_when_unused)
{
	long c0, c1;

	ASSERT_TRUE(armed_becomes(0))
		TH_LOG("hook_armed %ld with no worker", attr("hook_armed"));
	c0 = attr("hook_calls");
	ASSERT_EQ(0, sleeper());
	c1 = attr("hook_calls");
	ksft_print_msg("no worker: %d sleeps, %ld hook calls\n", SLEEPS,
		       c1 - c0);
	EXPECT_EQ(0, c1 - c0);
}

struct worker {
	int fd;
	int pipe[2];
	int reg;	/* REGISTER's result */
	int unreg;	/* UNREGISTER's */
	int registered[2];	/* worker -> test: registered */
	bool stay;	/* exit registered */
};

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	char c;

	w->reg = umcg_reg(w->fd, UMCG_REGISTER_WORKER, 0, 0, NULL);
	if (write(w->registered[1], "r", 1) != 1)
		return NULL;
	if (w->reg)
		return NULL;
	/* A block: one hook hit. */
	if (read(w->pipe[0], &c, 1) != 1)
		c = 0;
	if (!w->stay)
		w->unreg = umcg_unreg(w->fd);
	return NULL;
}

/*
 * A worker arms the hook before its REGISTER returns; while it sleeps,
 * another process's sleeps call the hook but find nothing; after it
 * unregisters, the hook is disarmed and calls stop.
 */
TEST_F(hook, armed_by_worker)
{
	struct worker w = { .reg = -1, .unreg = -1 };
	long h0, h1, c0, c1, armed;
	pthread_t t;
	char c;

	ASSERT_TRUE(armed_becomes(0));
	w.fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, w.fd);
	ASSERT_EQ(0, pipe(w.pipe));
	ASSERT_EQ(0, pipe(w.registered));
	h0 = attr("hook_hits");
	ASSERT_EQ(0, pthread_create(&t, NULL, worker_fn, &w));
	ASSERT_EQ(1, read(w.registered[0], &c, 1));
	armed = attr("hook_armed");
	ASSERT_EQ(0, w.reg) TH_LOG("REGISTER: %s", strerror(-w.reg));
	EXPECT_EQ(1, armed);

	/* The worker is asleep in read() once its hit is counted. */
	for (int i = 0; i < 100 && attr("hook_hits") == h0; i++)
		usleep(20000);
	EXPECT_LT(h0, attr("hook_hits")) TH_LOG("the worker's sleep was no hit");
	usleep(50000);
	h0 = attr("hook_hits");
	c0 = attr("hook_calls");
	ASSERT_EQ(0, sleeper());
	h1 = attr("hook_hits");
	c1 = attr("hook_calls");
	ksft_print_msg("one worker asleep: %d sleeps of another process, %ld hook calls, %ld hits\n",
		       SLEEPS, c1 - c0, h1 - h0);
	EXPECT_LE(SLEEPS, c1 - c0);
	EXPECT_EQ(0, h1 - h0);

	ASSERT_EQ(1, write(w.pipe[1], "x", 1));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, w.unreg);

	EXPECT_TRUE(armed_becomes(0))
		TH_LOG("hook_armed %ld after the last worker left",
		       attr("hook_armed"));
	c0 = attr("hook_calls");
	ASSERT_EQ(0, sleeper());
	c1 = attr("hook_calls");
	EXPECT_EQ(0, c1 - c0);
	close(w.fd);
	close(w.pipe[0]);
	close(w.pipe[1]);
	close(w.registered[0]);
	close(w.registered[1]);
}

/*
 * A worker thread that exits without unregistering keeps its slot until
 * the group ends; closing the file ends the group, and the hook goes.
 */
TEST_F(hook, disarmed_after_group_ends)
{
	struct worker w = { .reg = -1, .unreg = -1, .stay = true };
	pthread_t t;
	char c;

	ASSERT_TRUE(armed_becomes(0));
	w.fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, w.fd);
	ASSERT_EQ(0, pipe(w.pipe));
	ASSERT_EQ(0, pipe(w.registered));
	ASSERT_EQ(0, pthread_create(&t, NULL, worker_fn, &w));
	ASSERT_EQ(1, read(w.registered[0], &c, 1));
	ASSERT_EQ(0, w.reg);
	EXPECT_EQ(1, attr("hook_armed"));
	close(w.pipe[1]);
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(1, attr("workers"));	/* its slot, until the group ends */
	close(w.fd);
	EXPECT_TRUE(armed_becomes(0))
		TH_LOG("hook_armed %ld after the group ended",
		       attr("hook_armed"));
	EXPECT_EQ(0, attr("workers"));
	close(w.pipe[0]);
	close(w.registered[0]);
	close(w.registered[1]);
}

TEST_HARNESS_MAIN
