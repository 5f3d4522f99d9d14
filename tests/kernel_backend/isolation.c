// SPDX-License-Identifier: GPL-2.0
/*
 * isolation - one process's blocks reach only its own servers (C8, C9):
 * while this process runs 1,000 workers that block in nanosleep() in a
 * loop, the server of another libumcg process (a forked child, idle, its
 * main thread asleep in read()) is not woken.  Counted by the child's
 * server thread's own context switches (/proc/PID/task/TID/status): no
 * more than the same server makes idle in a window as long, which is what
 * its own bounded sleep costs it (on scx a bell server wakes at most every
 * 50 ms; a machine-wide ring would wake it for each of the thousands of
 * blocks).  On scx the servers sleep on their own bells, which only their
 * group's news rings (bpf/umcg_enforce.bpf.h, c.); the scheduler's count
 * of bells rung must have grown by the blocks (its counter "bell"), so
 * the test cannot pass with the bells unused.
 */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/wait.h>

#include "kselftest_harness.h"

#include <umcg.h>

#include "kernel_backend.h"

#include <uapi/umcg_scx.h>

#define IS_WORKERS	1000
#define IS_ROUNDS	3

/*
 * Voluntary + involuntary context switches of the threads of @pid whose
 * name starts with "umcg-server", summed; -1 if there is none.
 */
static long is_server_switches(pid_t pid)
{
	char path[300], line[128];
	struct dirent *de;
	long sum = -1, n;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/comm", pid, de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(line, sizeof(line), f) || strncmp(line, "umcg-server", 11)) {
			fclose(f);
			continue;
		}
		fclose(f);
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", pid, de->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f)) {
			if (sscanf(line, "voluntary_ctxt_switches: %ld", &n) == 1 ||
			    sscanf(line, "nonvoluntary_ctxt_switches: %ld", &n) == 1)
				sum = (sum < 0 ? 0 : sum) + n;
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return sum;
}

/* The other process: a group with one core, idle until told to go. */
static void is_child(int ready_fd, int go_fd)
{
	struct umcg_config cfg = { .size = sizeof(cfg) };
	char c = 0;

	cfg.nr_cores = 1;
	cfg.backend = KB_BACKEND;
	if (umcg_init(&cfg))
		c = 'E';
	else
		c = 'R';
	if (write(ready_fd, &c, 1) != 1 || c != 'R')
		_exit(1);
	if (read(go_fd, &c, 1) < 0)
		_exit(1);
	_exit(umcg_fini() ? 1 : 0);
}

/* scx: the scheduler's count of bells rung so far; 0 on kmod. */
static uint64_t is_bells(void)
{
	uint64_t v = 0;

#ifdef KB_BACKEND_SCX
	if (umcg_test_scx_enf_stat(UMCG_SCX_ENF_BELL, &v))
		v = 0;
#endif
	return v;
}

static void *is_worker(void *arg)
{
	struct timespec ts = { 0, 100000 };

	(void)arg;
	for (int i = 0; i < IS_ROUNDS; i++)
		nanosleep(&ts, NULL);
	return NULL;
}

FIXTURE(isolation)
{
	bool inited;
	pid_t child;
	int go[2];
};

FIXTURE_SETUP(isolation)
{
	const char *why = kb_backend_get();
	int ready[2];
	char c = 0;

	self->child = -1;
	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(self->go));
	self->child = fork();
	ASSERT_LE(0, self->child);
	if (self->child == 0) {
		close(ready[0]);
		close(self->go[1]);
		is_child(ready[1], self->go[0]);
	}
	close(ready[1]);
	close(self->go[0]);
	ASSERT_EQ(1, read(ready[0], &c, 1));
	close(ready[0]);
	ASSERT_EQ('R', c) TH_LOG("the other process's umcg_init() failed");
}

FIXTURE_TEARDOWN(isolation)
{
	int status = -1;

	if (self->inited)
		EXPECT_EQ(0, umcg_fini());
	if (self->child > 0) {
		close(self->go[1]);
		EXPECT_EQ(self->child, waitpid(self->child, &status, 0));
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
}

TEST_F_TIMEOUT(isolation, blocks_wake_no_other_process, 600)
{
	struct umcg_config cfg = { .size = sizeof(cfg) };
	static umcg_thread_t *t[IS_WORKERS];
	struct umcg_stats st;
	long before, after, idle0, idle1;
	uint64_t bells __attribute__((unused)), t0, window;
	int n;

	cfg.nr_cores = 2;
	cfg.backend = KB_BACKEND;
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
	/* The child's server has gone to sleep once its init returned. */
	usleep(200000);
	before = is_server_switches(self->child);
	ASSERT_LE(0, before);
	bells = is_bells();
	t0 = kb_now_ns();
	for (n = 0; n < IS_WORKERS; n++)
		if (umcg_spawn(&t[n], NULL, is_worker, NULL))
			break;
	ASSERT_EQ(IS_WORKERS, n);
	for (int i = 0; i < n; i++)
		EXPECT_EQ(0, umcg_join(t[i], NULL));
	after = is_server_switches(self->child);
	window = kb_now_ns() - t0;
	/* The same server, as long, with nothing running here. */
	idle0 = is_server_switches(self->child);
	usleep((useconds_t)(window / 1000));
	idle1 = is_server_switches(self->child);
	ASSERT_EQ(0, umcg_stats(&st));
	TH_LOG("%d workers, %llu blocks here in %llu ms; the other process's server switched %ld times, %ld times idle as long",
	       n, (unsigned long long)st.blocks, (unsigned long long)(window / KB_MS),
	       after - before, idle1 - idle0);
	EXPECT_LE(IS_WORKERS, st.blocks);
#ifdef KB_BACKEND_SCX
	bells = is_bells() - bells;
	TH_LOG("bells rung meanwhile: %llu; missed news %ld", (unsigned long long)bells,
	       kb_missed_news());
	/* Our servers heard of the blocks by their bells. */
	EXPECT_LE(IS_WORKERS, bells);
#endif
	/* Not one of those blocks woke it: it woke as often as idle. */
	EXPECT_GE(2 * (idle1 - idle0) + 20, after - before);
	EXPECT_GT(st.blocks / 2, (uint64_t)(after - before));
}

TEST_HARNESS_MAIN
