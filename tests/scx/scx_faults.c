// SPDX-License-Identifier: GPL-2.0
/*
 * scx_faults - the umcg sched_ext scheduler under faults and other users'
 * ordinary commands (issue 14, section 3).  Each must leave the scheduler
 * enabled for the whole machine and the libumcg process finishing its
 * work.
 *
 * fault.work_finishes (variants): a forked libumcg process on scx (2 cores,
 * FA_WORKERS workers that yield, sleep, block in read(), switch to and
 * unpark each other) while
 *   affinity  every thread of it is pinned to CPU 0, as "taskset -a -p 1
 *             PID" does: the server of core 1 loses its CPU;
 *   cpuset    it is moved into a cgroup v2 whose cpuset.cpus is "0";
 *   hotplug   CPU 1, which core 1 manages, goes offline and online again,
 *             under FA_MANY_WORKERS busy workers (FA_MANY=1 in the
 *             environment: as many in every variant);
 * then the workers do FA_ROUNDS more operations each and are joined.  The
 * scheduler must still be enabled, with the same enable_seq (never
 * ejected), and the process must say "scx", not "scx-fallback".
 *
 * reload_is_seen: a process that ran a group on scx, after "umcgctl
 * unload" and "load", starts another group: it must use the new instance
 * (blocks of its workers are seen), not the dead descriptors of the old
 * one.
 *
 * killed_worker_is_not_held: a libumcg process whose worker blocks in
 * read() is killed (SIGKILL): the woken worker must not be held for
 * servers that die with it; the process is reaped within FA_KILL_MS.
 *
 * exec_drops_registration: a registered worker (SCHED_EXT) that is not
 * the leader calls execve() of sleep(1): neither its wait in de_thread()
 * nor the new image's sleeps may be held as blocks of the old
 * registration (no server of the process is left to pick them); it
 * finishes within FA_EXEC_MS.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "kselftest_harness.h"

#include <umcg.h>
#include <uapi/umcg_scx.h>

#include "scx_loader.h"
#include "scx_test.h"
#include "umcg_test.h"
#include "umcg_test_crowd.h"

#define FA_WORKERS		64
#define FA_MANY_WORKERS		1000
#define FA_ROUNDS		20
#define FA_FINISH_S		90
/* A killed process is reaped within this (a hold lasts 2 s). */
#define FA_KILL_MS		1000
/* sleep 0.3 after execve() finishes within this. */
#define FA_EXEC_MS		1500
#define FA_CGROUP		"/sys/fs/cgroup"
#define FA_PIN_DIR		"/sys/fs/bpf/umcg"

static int fa_write(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY), ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) != (ssize_t)strlen(val))
		ret = -errno;
	close(fd);
	return ret;
}

/* Skip unless we can load ours; load it unless it runs. */
static bool fa_prepare(struct __test_metadata *_metadata)
{
	const char *why = scx_cannot_load();

	if (why)
		SKIP(return false, "%s", why);
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return false, "needs 2 CPUs");
	return scx_ensure_loaded();
}

/* ---- the child's workload ---- */

/*
 * The child: @nr workers; one byte to @ready_fd once all run, then waits
 * for one on @go_fd, finishes, joins.  Exit 0 when all work is done and
 * the backend still says "scx".
 */
static int fa_child(int nr, int ready_fd, int go_fd)
{
	struct umcg_config cfg = { .size = sizeof(cfg) };
	static struct umcg_test_crowd crowd;
	struct pollfd pfd = { .fd = go_fd, .events = POLLIN };
	const char *name;
	char c;

	cfg.nr_cores = 2;
	cfg.backend = "scx";
	if (umcg_init(&cfg)) {
		printf("# child: umcg_init on scx failed\n");
		return 1;
	}
	umcg_dump_on_signal(SIGUSR1);
	if (umcg_test_crowd_start(&crowd, nr, FA_ROUNDS))
		return 1;
	umcg_test_crowd_wait_started(&crowd);
	if (write(ready_fd, "r", 1) != 1)
		return 1;
	if (poll(&pfd, 1, 300 * 1000) != 1 || read(go_fd, &c, 1) != 1) {
		printf("# child: the parent never said go on\n");
		return 1;
	}
	if (umcg_test_crowd_finish(&crowd))
		return 1;
	name = umcg_backend_name();
	printf("# child: %ld operations, first error %d, backend \"%s\"\n",
	       atomic_load(&crowd.ops), atomic_load(&crowd.err), name ? name : "(null)");
	fflush(stdout);
	if (atomic_load(&crowd.err) || !name || strcmp(name, "scx"))
		return 1;
	return umcg_fini() ? 1 : 0;
}

/* sched_setaffinity() of every thread of @pid to @cpu ("taskset -a -p"). */
static int fa_pin_all(pid_t pid, int cpu)
{
	char path[64];
	cpu_set_t set;
	struct dirent *de;
	DIR *d;
	int n = 0;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		pid_t tid = atoi(de->d_name);

		if (tid > 0 && !sched_setaffinity(tid, sizeof(set), &set))
			n++;
	}
	closedir(d);
	return n;
}

enum fa_how { FA_NONE, FA_AFFINITY, FA_CPUSET, FA_HOTPLUG };

FIXTURE(fault) {
	pid_t child;
	char cgroup[96];
	bool cpu1_offlined;
};

FIXTURE_VARIANT(fault) {
	enum fa_how how;
	int workers;	/* FA_MANY=1: FA_MANY_WORKERS whatever this says */
};

/* The control: the same work with no fault. */
FIXTURE_VARIANT_ADD(fault, none) { .how = FA_NONE, .workers = FA_WORKERS };
FIXTURE_VARIANT_ADD(fault, affinity) { .how = FA_AFFINITY, .workers = FA_WORKERS };
FIXTURE_VARIANT_ADD(fault, cpuset) { .how = FA_CPUSET, .workers = FA_WORKERS };
FIXTURE_VARIANT_ADD(fault, hotplug) { .how = FA_HOTPLUG, .workers = FA_MANY_WORKERS };

FIXTURE_SETUP(fault)
{
	char buf[256];

	self->child = -1;
	self->cgroup[0] = '\0';
	self->cpu1_offlined = false;
	if (variant->how == FA_CPUSET) {
		if (umcg_test_read_line(FA_CGROUP "/cgroup.controllers", buf, sizeof(buf)) ||
		    !strstr(buf, "cpuset"))
			SKIP(return, "no cgroup v2 with the cpuset controller at " FA_CGROUP);
	}
	if (variant->how == FA_HOTPLUG &&
	    access("/sys/devices/system/cpu/cpu1/online", W_OK))
		SKIP(return, "CPU 1 cannot be taken offline here");
	if (!fa_prepare(_metadata) && _metadata->exit_code != KSFT_SKIP)
		ASSERT_TRUE(false) TH_LOG("the umcg scheduler did not load");
}

FIXTURE_TEARDOWN(fault)
{
	if (self->child > 0) {
		kill(self->child, SIGKILL);
		waitpid(self->child, NULL, 0);
	}
	if (self->cpu1_offlined)
		fa_write("/sys/devices/system/cpu/cpu1/online", "1");
	if (self->cgroup[0])
		rmdir(self->cgroup);
	scx_restore_loaded();
}

TEST_F_TIMEOUT(fault, work_finishes, 280)
{
	int nr = getenv("FA_MANY") ? FA_MANY_WORKERS : variant->workers;
	unsigned long long seq = scx_enable_seq();
	struct pollfd pfd;
	int ready[2], go[2], status = 0, ret;
	long long t0;
	pid_t pid = 0;
	char c, path[160], buf[64];

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(go));
	self->child = fork();
	ASSERT_LE(0, self->child);
	if (!self->child) {
		close(ready[0]);
		close(go[1]);
		_exit(fa_child(nr, ready[1], go[0]));
	}
	close(ready[1]);
	close(go[0]);
	pfd.fd = ready[0];
	pfd.events = POLLIN;
	ASSERT_EQ(1, poll(&pfd, 1, 120 * 1000)) TH_LOG("the workers never all ran");
	ASSERT_EQ(1, read(ready[0], &c, 1)) TH_LOG("the child died before its workers ran");
	close(ready[0]);

	switch (variant->how) {
	case FA_NONE:
		sleep(3);
		break;
	case FA_AFFINITY:
		/* taskset -a -p 1 PID, twice: threads started meanwhile too. */
		ret = fa_pin_all(self->child, 0);
		ASSERT_LT(0, ret) TH_LOG("sched_setaffinity of the child's threads: %d", ret);
		TH_LOG("pinned %d threads to CPU 0", ret);
		sleep(1);
		fa_pin_all(self->child, 0);
		sleep(2);
		break;
	case FA_CPUSET:
		snprintf(self->cgroup, sizeof(self->cgroup), FA_CGROUP "/umcg-faults-%d",
			 getpid());
		ASSERT_EQ(0, mkdir(self->cgroup, 0755)) TH_LOG("mkdir %s: %m", self->cgroup);
		/* Already enabled is fine: the write then changes nothing. */
		fa_write(FA_CGROUP "/cgroup.subtree_control", "+cpuset");
		snprintf(path, sizeof(path), "%s/cgroup.procs", self->cgroup);
		snprintf(buf, sizeof(buf), "%d", self->child);
		ASSERT_EQ(0, fa_write(path, buf)) TH_LOG("moving the child into %s", path);
		snprintf(path, sizeof(path), "%s/cpuset.cpus", self->cgroup);
		ASSERT_EQ(0, fa_write(path, "0")) TH_LOG("writing %s", path);
		TH_LOG("the child's cgroup has cpuset.cpus 0");
		sleep(3);
		break;
	case FA_HOTPLUG:
		ASSERT_EQ(0, fa_write("/sys/devices/system/cpu/cpu1/online", "0"))
			TH_LOG("offlining CPU 1: %m");
		self->cpu1_offlined = true;
		TH_LOG("CPU 1 offline");
		sleep(2);
		ASSERT_TRUE(scx_enabled()) TH_LOG("the scheduler went with CPU 1");
		ASSERT_EQ(0, fa_write("/sys/devices/system/cpu/cpu1/online", "1"))
			TH_LOG("onlining CPU 1");
		self->cpu1_offlined = false;
		TH_LOG("CPU 1 online again");
		sleep(2);
		break;
	}
	ASSERT_TRUE(scx_enabled()) TH_LOG("the scheduler was ejected");
	ASSERT_EQ(seq, scx_enable_seq()) TH_LOG("the scheduler was ejected and reloaded");

	ASSERT_EQ(1, write(go[1], "g", 1));
	close(go[1]);
	t0 = scx_now_ns();
	while (scx_now_ns() - t0 < FA_FINISH_S * 1000000000LL) {
		pid = waitpid(self->child, &status, WNOHANG);
		if (pid)
			break;
		usleep(10 * 1000);
	}
	if (!pid) {
		kill(self->child, SIGUSR1);
		sleep(2);
	}
	ASSERT_EQ(self->child, pid) TH_LOG("work not done %d s after the fault", FA_FINISH_S);
	self->child = -1;
	TH_LOG("finished %llu ms after the fault",
	       (unsigned long long)(scx_now_ns() - t0) / 1000000);
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("child status 0x%x", status);
	ASSERT_EQ(0, WEXITSTATUS(status));
	ASSERT_TRUE(scx_enabled()) TH_LOG("the scheduler was ejected");
	ASSERT_EQ(seq, scx_enable_seq());
}

/* ---- reload ---- */

#define FA_RELOAD_WORKERS	8
#define FA_RELOAD_READS		20

static int fa_reload_pipe[2];

static void *fa_reader(void *arg)
{
	char c;

	for (int i = 0; i < FA_RELOAD_READS; i++)
		if (read(fa_reload_pipe[0], &c, 1) != 1)
			return (void *)1;
	return NULL;
}

/* One group on scx whose workers block in read(): its block count, or -1. */
static long fa_reload_group(void)
{
	struct umcg_config cfg = { .size = sizeof(cfg), .nr_cores = 2,
				   .backend = "scx" };
	struct umcg_test_feeder feeder = { 0 };
	umcg_thread_t *t[FA_RELOAD_WORKERS];
	struct umcg_stats st;
	const char *name;
	long ret = 0;
	int i;

	if (umcg_init(&cfg)) {
		printf("# child: umcg_init on scx failed\n");
		return -1;
	}
	name = umcg_backend_name();
	if (!name || strcmp(name, "scx")) {
		printf("# child: backend \"%s\"\n", name ? name : "(null)");
		ret = -1;
	}
	umcg_test_feeder_start(&feeder, fa_reload_pipe[1], 1000);
	for (i = 0; i < FA_RELOAD_WORKERS; i++)
		if (umcg_spawn(&t[i], NULL, fa_reader, NULL))
			return -1;
	for (i = 0; i < FA_RELOAD_WORKERS; i++) {
		void *res;

		if (umcg_join(t[i], &res) || res)
			ret = -1;
	}
	umcg_test_feeder_stop(&feeder);
	if (umcg_stats(&st))
		ret = -1;
	if (umcg_fini())
		ret = -1;
	printf("# child: group on \"%s\": %llu blocks seen\n", name ? name : "(null)",
	       (unsigned long long)st.blocks);
	fflush(stdout);
	return ret ? ret : (long)st.blocks;
}

/* The tests below need nothing but the scheduler (fa_prepare()). */
FIXTURE(misc) {
	int unused;
};

FIXTURE_SETUP(misc)
{
}

FIXTURE_TEARDOWN(misc)
{
	scx_restore_loaded();
}

TEST_F_TIMEOUT(misc, reload_is_seen, 200)
{
	int to_parent[2], to_child[2], status;
	pid_t kid;
	char c;

	if (!fa_prepare(_metadata)) {
		if (_metadata->exit_code != KSFT_SKIP)
			ASSERT_TRUE(false) TH_LOG("the umcg scheduler did not load");
		return;
	}
	ASSERT_EQ(0, pipe(to_parent));
	ASSERT_EQ(0, pipe(to_child));
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		long first, second;

		if (pipe(fa_reload_pipe))
			_exit(2);
		first = fa_reload_group();
		if (write(to_parent[1], "1", 1) != 1 || read(to_child[0], &c, 1) != 1)
			_exit(2);
		second = fa_reload_group();
		printf("# child: blocks seen before the reload %ld, after %ld\n",
		       first, second);
		fflush(stdout);
		_exit(first > 0 && second > 0 ? 0 : 1);
	}
	ASSERT_EQ(1, read(to_parent[0], &c, 1)) TH_LOG("the first group failed");
	umcg_test_umcgctl("unload", false);
	umcg_test_umcgctl("load", false);
	ASSERT_TRUE(scx_enabled());
	ASSERT_EQ(1, write(to_child[1], "2", 1));
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("status %#x", status);
	EXPECT_TRUE(scx_enabled());
}

/* ---- a killed worker ---- */

static int fa_kill_child(int ready_fd)
{
	struct umcg_config cfg = { .size = sizeof(cfg), .nr_cores = 1,
				   .backend = "scx" };
	int never[2];
	umcg_thread_t *t;
	struct umcg_stats st;

	if (pipe(never) || umcg_init(&cfg))
		return 1;
	fa_reload_pipe[0] = never[0];
	if (umcg_spawn(&t, NULL, fa_reader, NULL))
		return 1;
	/* Ready once the worker blocked in read(). */
	for (int i = 0;; i++) {
		usleep(1000);
		if (umcg_stats(&st))
			return 1;
		if (st.blocks)
			break;
		if (i == 10000) {
			printf("# child: the worker's block was never seen\n");
			return 1;
		}
	}
	if (write(ready_fd, "r", 1) != 1)
		return 1;
	pause();
	return 1;
}

TEST_F_TIMEOUT(misc, killed_worker_is_not_held, 120)
{
	long long worst = 0;

	if (!fa_prepare(_metadata)) {
		if (_metadata->exit_code != KSFT_SKIP)
			ASSERT_TRUE(false) TH_LOG("the umcg scheduler did not load");
		return;
	}
	for (int round = 0; round < 3; round++) {
		struct pollfd pfd;
		int ready[2], status;
		long long t0, dt;
		pid_t kid;
		char c;

		ASSERT_EQ(0, pipe(ready));
		kid = fork();
		ASSERT_LE(0, kid);
		if (!kid) {
			close(ready[0]);
			_exit(fa_kill_child(ready[1]));
		}
		close(ready[1]);
		pfd.fd = ready[0];
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 30 * 1000) != 1)
			kill(kid, SIGKILL);
		ASSERT_EQ(1, read(ready[0], &c, 1)) TH_LOG("round %d: the child failed to start",
							 round);
		close(ready[0]);
		usleep(200 * 1000);
		t0 = scx_now_ns();
		ASSERT_EQ(0, kill(kid, SIGKILL));
		ASSERT_EQ(kid, waitpid(kid, &status, 0));
		dt = scx_now_ns() - t0;
		if (dt > worst)
			worst = dt;
		TH_LOG("round %d: reaped %lld ms after SIGKILL", round, dt / 1000000);
	}
	EXPECT_GT(FA_KILL_MS * 1000000LL, worst);
	EXPECT_TRUE(scx_enabled());
}

/* ---- execve() of a registered worker ---- */

struct fa_exec {
	int reg_fd;
	pid_t leader;
	int pipe;
};

/*
 * Non-zero while the worker runs execve(): its sleeps before execve()
 * sets in_execve (opening the file, which takes several on the guest's
 * 9p root) count as sleeps inside a library and are not held, as libumcg
 * marks its own (UMCG_SCX_REGISTER_IN_LIB).  This test has no server
 * that would pick a held worker: what it measures is that the new image
 * is no worker.
 */
static _Atomic uint32_t fa_exec_in_lib = 1;

static void *fa_exec_thread(void *arg)
{
	struct fa_exec *e = arg;
	struct umcg_scx_register_args a = {
		.flags = UMCG_REGISTER_WORKER | UMCG_SCX_REGISTER_IN_LIB,
		.server_tid = (uint32_t)e->leader,
		.in_lib = (uint64_t)(uintptr_t)&fa_exec_in_lib,
	};
	struct sched_param sp = { 0 };
	int ret = sched_setscheduler(0, 7 /* SCHED_EXT */, &sp) ? -errno : 0;

	if (!ret)
		ret = scx_run_prog(e->reg_fd, &a, sizeof(a));
	if (write(e->pipe, &ret, sizeof(ret)) != sizeof(ret) || ret)
		_exit(3);
	/* SCHED_EXT stays across execve(): every sleep of sleep(1) is ours. */
	execl("/usr/bin/sleep", "sleep", "0.3", (char *)NULL);
	execl("/bin/sleep", "sleep", "0.3", (char *)NULL);
	_exit(4);
}

TEST_F_TIMEOUT(misc, exec_drops_registration, 120)
{
	struct fa_exec e;
	int fds[2], ret = -1, status;
	long long t0, dt;
	pid_t kid;

	if (!fa_prepare(_metadata)) {
		if (_metadata->exit_code != KSFT_SKIP)
			ASSERT_TRUE(false) TH_LOG("the umcg scheduler did not load");
		return;
	}
	e.reg_fd = bpf_obj_get(FA_PIN_DIR "/umcg_register");
	ASSERT_LE(0, e.reg_fd) TH_LOG(FA_PIN_DIR "/umcg_register: %m");
	ASSERT_EQ(0, pipe(fds));
	t0 = scx_now_ns();
	kid = fork();
	ASSERT_LE(0, kid);
	if (!kid) {
		struct umcg_scx_register_args a = {
			.flags = UMCG_REGISTER_SERVER | UMCG_SCX_REGISTER_DOORBELL,
			.cpu = 0,
		};
		cpu_set_t set;
		pthread_t t;

		close(fds[0]);
		CPU_ZERO(&set);
		CPU_SET(0, &set);
		ret = sched_setaffinity(0, sizeof(set), &set) ? -errno :
		      scx_run_prog(e.reg_fd, &a, sizeof(a));
		if (write(fds[1], &ret, sizeof(ret)) != sizeof(ret) || ret)
			_exit(2);
		e.pipe = fds[1];
		e.leader = (pid_t)syscall(SYS_gettid);
		if (pthread_create(&t, NULL, fa_exec_thread, &e))
			_exit(5);
		pause();
		_exit(6);
	}
	close(fds[1]);
	ASSERT_EQ(sizeof(ret), read(fds[0], &ret, sizeof(ret)));
	ASSERT_EQ(0, ret) TH_LOG("the leader's register: %d", ret);
	ASSERT_EQ(sizeof(ret), read(fds[0], &ret, sizeof(ret)));
	ASSERT_EQ(0, ret) TH_LOG("the worker's register: %d", ret);
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	dt = scx_now_ns() - t0;
	TH_LOG("sleep 0.3 after execve() took %lld ms", dt / 1000000);
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("status %#x", status);
	EXPECT_GT(FA_EXEC_MS * 1000000LL, dt);
	EXPECT_TRUE(scx_enabled());
	close(e.reg_fd);
}

/*
 * CPUs from UMCG_SCX_MAX_CPUS up would run unenforced: the loader refuses
 * such a machine (-E2BIG).  The parser of the possible list, as the load
 * runs it (a machine that large cannot be booted here under TCG).
 */
TEST(cpu_limit_refused)
{
	char buf[64];

	EXPECT_EQ(0, umcg_scx_cpus_check("0\n"));
	EXPECT_EQ(0, umcg_scx_cpus_check("0-1\n"));
	EXPECT_EQ(0, umcg_scx_cpus_check("0-3,8-9"));
	snprintf(buf, sizeof(buf), "0-%d\n", UMCG_SCX_MAX_CPUS - 1);
	EXPECT_EQ(0, umcg_scx_cpus_check(buf));
	snprintf(buf, sizeof(buf), "0-%d\n", UMCG_SCX_MAX_CPUS);
	EXPECT_EQ(-E2BIG, umcg_scx_cpus_check(buf));
	snprintf(buf, sizeof(buf), "0,%d", UMCG_SCX_MAX_CPUS + 6);
	EXPECT_EQ(-E2BIG, umcg_scx_cpus_check(buf));
	EXPECT_EQ(-EINVAL, umcg_scx_cpus_check(""));
	EXPECT_EQ(-EINVAL, umcg_scx_cpus_check("x"));
	EXPECT_EQ(-EINVAL, umcg_scx_cpus_check("3-1"));
	/* This machine loads: every test above did. */
	umcg_test_read_line("/sys/devices/system/cpu/possible", buf, sizeof(buf));
	EXPECT_EQ(0, umcg_scx_cpus_check(buf)) TH_LOG("possible: %s", buf);
}

TEST_HARNESS_MAIN
