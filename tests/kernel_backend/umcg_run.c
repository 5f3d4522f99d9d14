// SPDX-License-Identifier: GPL-2.0
/*
 * umcg_run - umcg-run on a kernel backend: what an unmodified program
 * (tests/host/umcg-run/machine.c) sees there, as the host's umcg_run.sh
 * machine checks it on the user backend.
 *
 *   affinity   sched_getaffinity()/pthread_getaffinity_np() of a worker
 *              report the group's CPUs (2 under --cores 2), a worker's own
 *              set of one CPU fails with EINVAL, of all of them works
 *   children   system(), popen(), posix_spawn() and fork() children of a
 *              worker under --cores 1 get every CPU of this process and
 *              SCHED_OTHER (on scx the worker is in SCHED_EXT); a program
 *              the worker executes itself, every CPU
 *   sigwait    a SIGTERM the program blocks and takes with sigwait() in a
 *              signal thread reaches it, 5 runs of 5
 *   spin       4 threads spinning on a flag a fifth sets finish on one
 *              core under umcg-run's default time slice
 *   refused    (its own program, kmod_backend_umcg_run_limit and
 *              scx_backend_umcg_run_limit: thousands of threads take a
 *              while under TCG) a program with more threads than the
 *              backend takes (kmod: umcg.ko's max_tasks per process, set
 *              low for the test; scx: UMCG_SCX_MAX_TASKS on the machine):
 *              umcg-run says once on stderr that a thread runs unmanaged,
 *              and the dump counts the refused ones.  On scx it is also
 *              the test of a block of a worker that ran unpicked
 *              (Documentation/scx.rst): with such blocks dropped, every
 *              run stalled with a core's owner asleep
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <umcg.h>

#include "kernel_backend.h"
#ifdef KB_BACKEND_SCX
#include <uapi/umcg_scx.h>
#endif

/*
 * Runs "umcg-run --backend B ARGS -- machine MODE..." with its output (and,
 * if @err, stderr) in @out; @timeout_s at most.  Returns the exit status,
 * 124 on timeout, -1 if it could not run.
 */
static int ur_run(char *out, size_t len, bool with_err, int timeout_s, const char *const *args)
{
	char *argv[32];
	int fd[2], n = 0, st;
	size_t used = 0;
	pid_t pid;
	uint64_t end = kb_now_ns() + (uint64_t)timeout_s * 1000 * KB_MS;

	argv[n++] = UMCG_RUN_BIN;
	argv[n++] = "--backend";
	argv[n++] = KB_BACKEND;
	for (; *args && n < 30; args++)
		argv[n++] = (char *)*args;
	argv[n] = NULL;
	if (pipe2(fd, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(fd[1], 1);
		if (with_err)
			dup2(fd[1], 2);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	out[0] = '\0';
	for (;;) {
		struct pollfd p = { .fd = fd[0], .events = POLLIN };
		int left = (int)((end - kb_now_ns()) / KB_MS);
		ssize_t r;

		if (kb_now_ns() >= end || poll(&p, 1, left > 0 ? left : 0) <= 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			close(fd[0]);
			return 124;
		}
		r = read(fd[0], out + used, len - 1 - used);
		if (r <= 0)
			break;
		used += (size_t)r;
		out[used] = '\0';
		if (used == len - 1)
			break;
	}
	close(fd[0]);
	waitpid(pid, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The value of "NAME=" in @out, or -1000. */
static long ur_val(const char *out, const char *name)
{
	char key[64];
	const char *p;
	size_t k;

	snprintf(key, sizeof(key), "%s=", name);
	k = strlen(key);
	for (p = out; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, k))
			return strtol(p + k, NULL, 10);
	return -1000;
}

static inline bool ur_has(const char *out, const char *line)
{
	return strstr(out, line) != NULL;
}

FIXTURE(ur)
{
	int ncpu;
};

FIXTURE_SETUP(ur)
{
	const char *why = kb_backend_get();
	cpu_set_t set;

	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(set), &set));
	self->ncpu = CPU_COUNT(&set);
}

FIXTURE_TEARDOWN(ur)
{
}

/* UR_LIMIT: only the refused case (its own program: it takes a while). */
#ifndef UR_LIMIT
TEST_F(ur, affinity)
{
	char out[4096];
	const char *cores = self->ncpu >= 2 ? "2" : "1";
	const char *args[] = { "--cores", cores, "--", MACHINE_BIN, "affinity", NULL };
	long c = self->ncpu >= 2 ? 2 : 1;

	ASSERT_EQ(0, ur_run(out, sizeof(out), false, 60, args)) TH_LOG("%s", out);
	TH_LOG("%s", out);
	EXPECT_EQ(c, ur_val(out, "main_cpus"));
	EXPECT_EQ(c, ur_val(out, "main_pcpus"));
	EXPECT_EQ(c, ur_val(out, "thread_cpus"));
	EXPECT_EQ(c, ur_val(out, "thread_pcpus"));
	EXPECT_EQ(c, ur_val(out, "pid_cpus"));
	EXPECT_TRUE(ur_has(out, "set_one=EINVAL\n"));
	EXPECT_TRUE(ur_has(out, "affinity=ok\n"));
}

TEST_F(ur, children)
{
	static const char *const how[] = { "system", "popen", "posix_spawn", "fork", "exec" };
	const char *args[] = { "--cores", "1", "--", MACHINE_BIN, "spawn", NULL };
	char out[4096], name[64];

	ASSERT_EQ(0, ur_run(out, sizeof(out), false, 60, args)) TH_LOG("%s", out);
	TH_LOG("%s", out);
	for (int i = 0; i < 5; i++) {
		snprintf(name, sizeof(name), "%s_cpus", how[i]);
		EXPECT_EQ(self->ncpu, ur_val(out, name)) TH_LOG("%s", name);
		/* An exec with no fork keeps the worker's class (scx: SCHED_EXT). */
		if (!strcmp(how[i], "exec"))
			continue;
		snprintf(name, sizeof(name), "%s_policy", how[i]);
		EXPECT_EQ(SCHED_OTHER, ur_val(out, name)) TH_LOG("%s", name);
	}
}

TEST_F_TIMEOUT(ur, sigwait, 200)
{
	const char *cores = self->ncpu >= 2 ? "2" : "1";

	for (int run = 0; run < 5; run++) {
		char *argv[] = { UMCG_RUN_BIN, "--backend", KB_BACKEND, "--cores", (char *)cores,
				 "--", MACHINE_BIN, "sigwait", NULL };
		char buf[256] = "";
		size_t used = 0;
		int fd[2], st;
		pid_t pid;

		ASSERT_EQ(0, pipe2(fd, O_CLOEXEC));
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			dup2(fd[1], 1);
			execv(argv[0], argv);
			_exit(127);
		}
		close(fd[1]);
		while (!strstr(buf, "ready\n") && used < sizeof(buf) - 1) {
			struct pollfd p = { .fd = fd[0], .events = POLLIN };
			ssize_t r;

			if (poll(&p, 1, 30000) <= 0)
				break;
			r = read(fd[0], buf + used, sizeof(buf) - 1 - used);
			if (r <= 0)
				break;
			used += (size_t)r;
			buf[used] = '\0';
		}
		ASSERT_TRUE(strstr(buf, "ready\n") != NULL) TH_LOG("run %d: %s", run, buf);
		ASSERT_EQ(0, kill(pid, SIGTERM));
		for (;;) {
			ssize_t r = read(fd[0], buf + used, sizeof(buf) - 1 - used);

			if (r <= 0)
				break;
			used += (size_t)r;
			buf[used] = '\0';
		}
		close(fd[0]);
		ASSERT_EQ(pid, waitpid(pid, &st, 0));
		EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0)
			TH_LOG("run %d: status %#x: %s", run, st, buf);
		EXPECT_TRUE(strstr(buf, "sigwait=SIGTERM\n") != NULL) TH_LOG("run %d: %s", run, buf);
	}
}

TEST_F(ur, spin)
{
	const char *args[] = { "--cores", "1", "--", MACHINE_BIN, "spin", NULL };
	char out[4096];

	EXPECT_EQ(0, ur_run(out, sizeof(out), true, 60, args)) TH_LOG("%s", out);
	EXPECT_TRUE(ur_has(out, "spin=ok\n")) TH_LOG("%s", out);
}

#endif /* !UR_LIMIT */

#ifdef UR_LIMIT
/*
 * "umcg-run --cores 1 -- machine many @nr" within @timeout_s: it finishes
 * all @nr threads, says once that a thread runs unmanaged, and its dump
 * counts at least 10 refused.
 */
static void ur_check_refused(struct __test_metadata *_metadata, unsigned int nr, int timeout_s)
{
	char n[16], *out, *p;
	const char *args[] = { "--cores", "1", "--", MACHINE_BIN, "many", n, NULL };
	int said = 0;

	snprintf(n, sizeof(n), "%u", nr);
	out = calloc(1, 1 << 20);
	ASSERT_NE(NULL, out);
	ASSERT_EQ(0, ur_run(out, 1 << 20, true, timeout_s, args)) TH_LOG("%.2000s", out);
	for (p = out; (p = strstr(p, "runs unmanaged")); p++)
		said++;
	EXPECT_EQ(1, said) TH_LOG("%.2000s", out);
	p = strstr(out, "umcg: refused ");
	ASSERT_NE(NULL, p) TH_LOG("no dump: %.2000s", out);
	EXPECT_LE(10, strtol(p + strlen("umcg: refused "), NULL, 10)) TH_LOG("%.200s", p);
	EXPECT_EQ((long)nr, ur_val(out, "many"));
	free(out);
}
#endif

#if defined(UR_LIMIT) && !defined(KB_BACKEND_SCX)
#define UR_MAX_TASKS	300

TEST_F_TIMEOUT(ur, refused, 200)
{
	struct umcg_info info = { .size = sizeof(info) };
	long old_max = 0;
	int fd;

	/* A limit a TCG guest reaches quickly (the parameter, at open). */
	ASSERT_EQ(0, kb_max_tasks_set(UR_MAX_TASKS, &old_max));
	fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ioctl(fd, UMCG_IOC_GET_INFO, &info));
	close(fd);
	ASSERT_EQ(UR_MAX_TASKS, info.max_tasks);
	/* One server and main fit; the rest and 10 more do not. */
	ur_check_refused(_metadata, info.max_tasks + 10, 180);
	kb_max_tasks_restore(old_max);
}
#endif

#if defined(UR_LIMIT) && defined(KB_BACKEND_SCX)
/*
 * The scheduler's table is the machine's: UMCG_SCX_MAX_TASKS slots, the
 * server and main included, and another process's threads take slots
 * too (then more are refused).
 */
TEST_F_TIMEOUT(ur, refused, 280)
{
	ur_check_refused(_metadata, UMCG_SCX_MAX_TASKS + 10, 250);
}
#endif

TEST_HARNESS_MAIN
