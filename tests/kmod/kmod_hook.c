// SPDX-License-Identifier: GPL-2.0
/*
 * Description: what the block hook costs a process that does not use
 * umcg (C9).  With no worker registered the hook is not registered with
 * the kernel at all (hook_armed reads 0, and another process's sleeps do
 * not call it: hook_calls stays put); the first worker's registration
 * arms it, and hook_linger_ms after the last worker's slot is freed it is
 * disarmed again.  While armed, only workers' sleeps find a slot
 * (hook_hits), and what a sleep of a process that uses no umcg costs in
 * table entries examined (hook_entries) does not grow with the workers
 * another user registers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <uapi/umcg.h>

#include "kmod_test.h"
#include "kmod_raw.h"

#define SYSFS		"/sys/class/misc/umcg/"
#define LINGER_PARAM	"/sys/module/umcg/parameters/hook_linger_ms"
#define GROUPS_PARAM	"/sys/module/umcg/parameters/max_groups_per_user"
#define SLEEPS		200
#define NOBODY		65534

static long attr(const char *name)
{
	char path[256];

	snprintf(path, sizeof(path), SYSFS "%s", name);
	return umcg_read_number(path);
}

/*
 * A process that uses no umcg sleeps SLEEPS times; returns its status.
 * Its voluntary context switches, the sleeps that really reached
 * schedule() (a 100 us nanosleep() whose timer fired before it does not),
 * go to *@slept.
 */
static int sleeper(long *slept)
{
	struct timespec ts = { 0, 100000 };
	struct rusage ru;
	pid_t pid = fork();
	int status, i;

	if (pid < 0)
		return -1;
	if (!pid) {
		for (i = 0; i < SLEEPS; i++)
			nanosleep(&ts, NULL);
		_exit(0);
	}
	if (wait4(pid, &status, 0, &ru) != pid)
		return -1;
	*slept = ru.ru_nvcsw;
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

#define MAX_HOLDERS	128
#define PAIRS		8
#define PINGS		1000

FIXTURE(hook) {
	bool loaded;
	int nr_holders;		/* other_users_workers' processes */
	int cmd[MAX_HOLDERS];	/* their command pipes */
	pid_t pids[MAX_HOLDERS];
	pid_t pingers[PAIRS];	/* and its ping-pongs */
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
	for (int p = 0; p < PAIRS; p++) {
		if (self->pingers[p] <= 0)
			continue;
		kill(self->pingers[p], SIGKILL);
		waitpid(self->pingers[p], NULL, 0);
	}
	/* EOF on its command pipe ends a holder, and its group with it. */
	for (int h = 0; h < self->nr_holders; h++) {
		close(self->cmd[h]);
		EXPECT_EQ(self->pids[h], waitpid(self->pids[h], NULL, 0));
	}
	for (int i = 0; i < 100 && self->nr_holders && attr("groups"); i++)
		usleep(50000);
	if (self->loaded)
		EXPECT_EQ(0, umcg_test_kmod_unload(UMCG_KMOD_NAME));
}

/* Nobody uses the module: another process's sleeps never reach it. */
TEST_F(hook, disarmed_when_unused)
{
	long c0, c1, slept;

	ASSERT_TRUE(armed_becomes(0))
		TH_LOG("hook_armed %ld with no worker", attr("hook_armed"));
	c0 = attr("hook_calls");
	ASSERT_EQ(0, sleeper(&slept));
	c1 = attr("hook_calls");
	ksft_print_msg("no worker: %ld sleeps, %ld hook calls\n", slept,
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
	long h0, h1, c0, c1, armed, slept;
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
	ASSERT_EQ(0, sleeper(&slept));
	h1 = attr("hook_hits");
	c1 = attr("hook_calls");
	ksft_print_msg("one worker asleep: %ld sleeps of another process, %ld hook calls, %ld hits\n",
		       slept, c1 - c0, h1 - h0);
	/* Every sleep that reached schedule() was seen (and more: all tasks'). */
	EXPECT_LT(SLEEPS / 2, slept);
	EXPECT_LE(slept, c1 - c0);
	EXPECT_EQ(0, h1 - h0);

	ASSERT_EQ(1, write(w.pipe[1], "x", 1));
	ASSERT_EQ(0, pthread_join(t, NULL));
	EXPECT_EQ(0, w.unreg);

	EXPECT_TRUE(armed_becomes(0))
		TH_LOG("hook_armed %ld after the last worker left",
		       attr("hook_armed"));
	c0 = attr("hook_calls");
	ASSERT_EQ(0, sleeper(&slept));
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

/*
 * The other user's side of other_users_workers: one process, one group,
 * run as nobody.  Each int read from @cmd is a count of workers to add;
 * each worker writes 'r' (registered) or 'f' (failed) to @ready and
 * sleeps in read() on a pipe nobody writes.  EOF on @cmd ends it.
 */
struct holder_args {
	int fd;
	int block;
	int ready;
};

static void *holder_worker(void *arg)
{
	struct holder_args *a = arg;
	char c = umcg_reg(a->fd, UMCG_REGISTER_WORKER, 0, 0, NULL) ? 'f' : 'r';

	if (write(a->ready, &c, 1) != 1 || c != 'r')
		return NULL;
	if (read(a->block, &c, 1) < 0)
		return NULL;
	return NULL;
}

static void holder_main(int cmd, int ready)
{
	struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
	static struct holder_args a;
	pthread_attr_t attr;
	int block[2], n;

	if (setrlimit(RLIMIT_NPROC, &rl) || pipe(block) ||
	    umcg_test_drop_to(NOBODY, NOBODY))
		_exit(1);
	a.fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	a.block = block[0];
	a.ready = ready;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	while (read(cmd, &n, sizeof(n)) == sizeof(n)) {
		for (int i = 0; i < n; i++) {
			pthread_t t;
			char c = 'f';

			if (a.fd < 0 ||
			    pthread_create(&t, &attr, holder_worker, &a))
				if (write(ready, &c, 1) != 1)
					_exit(2);
		}
	}
	_exit(0);
}

/*
 * PAIRS pipe ping-pongs between processes that use no umcg, started once
 * and run PINGS round trips each, all at once, at every pingpong(): the
 * same tasks, so the same buckets, every time.
 */

static void pinger_main(int go, int done)
{
	int to[2], from[2];
	char c = 'x';
	pid_t pong;

	if (pipe(to) || pipe(from))
		_exit(1);
	pong = fork();
	if (pong < 0)
		_exit(1);
	if (!pong) {
		close(to[1]);
		close(from[0]);
		while (read(to[0], &c, 1) == 1)
			if (write(from[1], &c, 1) != 1)
				_exit(1);
		_exit(0);
	}
	close(to[0]);
	close(from[1]);
	while (read(go, &c, 1) == 1) {
		for (int i = 0; i < PINGS; i++)
			if (write(to[1], &c, 1) != 1 ||
			    read(from[0], &c, 1) != 1)
				_exit(1);
		if (write(done, &c, 1) != 1)
			_exit(1);
	}
	_exit(0);
}

/*
 * One run of the ping-pongs; the hook's calls and the entries it examined
 * meanwhile in *@calls and *@entries.  Returns 0, or -1 if one failed.
 */
static int pingpong(const int *go, int done, long *calls, long *entries)
{
	long c0 = attr("hook_calls"), e0 = attr("hook_entries");
	char c = 'g';

	for (int p = 0; p < PAIRS; p++)
		if (write(go[p], &c, 1) != 1)
			return -1;
	for (int p = 0; p < PAIRS; p++)
		if (read(done, &c, 1) != 1)
			return -1;
	*calls = attr("hook_calls") - c0;
	*entries = attr("hook_entries") - e0;
	return 0;
}

/* Add @n workers to each of the @nr holders; -1 unless all registered. */
static int holders_add(const int *cmd, int nr, int ready, int n)
{
	long want = (long)nr * n, got = 0, ok = 0;
	char c;

	for (int h = 0; h < nr; h++)
		if (write(cmd[h], &n, sizeof(n)) != sizeof(n))
			return -1;
	while (got < want && read(ready, &c, 1) == 1) {
		got++;
		ok += c == 'r';
	}
	/* The last of them into their read(). */
	usleep(200000);
	return ok == want ? 0 : -1;
}

/*
 * Another user (nobody) holds as many groups as it may (max_groups_per_user,
 * up to 128), first with one worker each, then with 4,096 workers in all,
 * every worker asleep.  The sleeps of processes that use no umcg examine
 * as many table entries per hook call in both cases: their lookup does not
 * depend on how many workers others have registered.
 */
#define OTHER_WORKERS	4096

/* Spawning 4,224 threads takes about a minute under TCG. */
TEST_F_TIMEOUT(hook, other_users_workers, 240)
{
	long limit = umcg_read_number(GROUPS_PARAM);
	long calls1, entries1, calls2, entries2;
	int nr, per, ready[2], done[2], go[PAIRS];
	double r1, r2;

	ASSERT_LE(0, attr("hook_entries")) TH_LOG(SYSFS "hook_entries: missing");
	ASSERT_LT(0, limit);
	/* Their pong ends with the pinger: it holds no end of its pipe. */
	ASSERT_EQ(0, pipe(done));
	for (int p = 0; p < PAIRS; p++) {
		int g[2];

		ASSERT_EQ(0, pipe(g));
		self->pingers[p] = fork();
		ASSERT_LE(0, self->pingers[p]);
		if (!self->pingers[p]) {
			close(g[1]);
			close(done[0]);
			pinger_main(g[0], done[1]);
		}
		close(g[0]);
		go[p] = g[1];
	}
	close(done[1]);

	nr = limit < MAX_HOLDERS ? limit : MAX_HOLDERS;
	per = OTHER_WORKERS / nr;
	ASSERT_EQ(0, pipe(ready));
	for (int h = 0; h < nr; h++) {
		int p[2];
		pid_t pid;

		ASSERT_EQ(0, pipe(p));
		pid = fork();
		ASSERT_LE(0, pid);
		if (!pid) {
			/* Only the test's end of a command pipe may hold it. */
			for (int o = 0; o < h; o++)
				close(self->cmd[o]);
			close(p[1]);
			close(ready[0]);
			holder_main(p[0], ready[1]);
		}
		close(p[0]);
		self->cmd[h] = p[1];
		self->pids[h] = pid;
		self->nr_holders++;
	}
	close(ready[1]);

	ASSERT_EQ(0, holders_add(self->cmd, nr, ready[0], 1))
		TH_LOG("nobody's %d groups: a worker each did not register", nr);
	EXPECT_EQ(1, attr("hook_armed"));
	ASSERT_EQ(0, pingpong(go, done[0], &calls1, &entries1));
	ASSERT_EQ(0, holders_add(self->cmd, nr, ready[0], per - 1))
		TH_LOG("nobody's %d groups: %d workers each did not register",
		       nr, per);
	ASSERT_LE(nr * per, attr("workers"));
	ASSERT_EQ(0, pingpong(go, done[0], &calls2, &entries2));
	close(ready[0]);

	/* At least one sleep a round trip: the hook ran for them. */
	ASSERT_LE(PAIRS * PINGS, calls1);
	ASSERT_LE(PAIRS * PINGS, calls2);
	r1 = (double)entries1 / calls1;
	r2 = (double)entries2 / calls2;
	ksft_print_msg("nobody's %d groups, 1 worker each: %ld hook calls, %ld entries (%.3f a call)\n",
		       nr, calls1, entries1, r1);
	ksft_print_msg("nobody's %d groups, %d workers each: %ld hook calls, %ld entries (%.3f a call)\n",
		       nr, per, calls2, entries2, r2);
	EXPECT_GT(0.25, r2 - r1)
		TH_LOG("a sleep of a process that uses no umcg examines %.3f more entries with %d more workers of another user",
		       r2 - r1, nr * (per - 1));
}

TEST_HARNESS_MAIN
