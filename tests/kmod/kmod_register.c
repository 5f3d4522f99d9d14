// SPDX-License-Identifier: GPL-2.0
/*
 * Description: UMCG_IOC_REGISTER / UMCG_IOC_UNREGISTER and the mmap of
 * /dev/umcg: per-process groups, per-thread state in module memory, the
 * max_tasks limit, isolation between processes (C8), cleanup of a
 * killed process with the module unloadable afterwards (C7), and REGISTER
 * refused to a thread that is being killed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/membarrier.h>

#include "kselftest_harness.h"

#include <uapi/umcg.h>

#include "kmod_test.h"
#include "kmod_raw.h"

static bool all_zero(const void *p, size_t len)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++)
		if (b[i])
			return false;
	return true;
}

/* ---- One process, module loaded by whoever ---- */

FIXTURE(reg) {
	int fd;
	bool loaded;
	unsigned int max_tasks;
	size_t len;
	struct umcg_task *map;
};

FIXTURE_SETUP(reg)
{
	int max;

	self->fd = -1;
	self->map = MAP_FAILED;
	if (!umcg_kmod_get(_metadata, &self->loaded))
		return;
	self->fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open: %s", strerror(errno));
	max = umcg_max_tasks(self->fd);
	ASSERT_LT(0, max);
	self->max_tasks = max;
	self->len = umcg_map_len(max);
}

FIXTURE_TEARDOWN(reg)
{
	if (self->map != MAP_FAILED)
		EXPECT_EQ(0, munmap(self->map, self->len));
	if (self->fd >= 0)
		EXPECT_EQ(0, close(self->fd));
	if (self->loaded)
		EXPECT_EQ(0, umcg_test_kmod_unload(UMCG_KMOD_NAME));
}

static void reg_map(struct __test_metadata *_metadata,
		    FIXTURE_DATA(reg) *self)
{
	self->map = umcg_map(self->fd, self->len);
	ASSERT_NE(MAP_FAILED, self->map) TH_LOG("mmap: %s", strerror(errno));
}

#define BPFTRACE	"/usr/bin/bpftrace"
#define DYING_COMM	"umcg_regdie"

/*
 * The child: its own device file, then a REGISTER as a server, at whose
 * system call entry the bpftrace script sends it SIGKILL
 * (bpf_send_signal()), so that the module sees the call with a fatal
 * signal pending.  It never returns to user space; an exit status says it
 * did.
 */
static void dying_child(void)
{
	__u64 off;
	int fd;

	prctl(PR_SET_NAME, DYING_COMM);
	fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		_exit(20);
	_exit(umcg_reg(fd, UMCG_REGISTER_SERVER, 0, 0, &off) ? 21 : 22);
}

/*
 * A thread with a fatal signal pending (killed while it enters REGISTER)
 * is refused with -ESRCH: registered, it would stay a poke target of its
 * group while it dies.  bpftrace makes the signal land at the ioctl's
 * system call entry and reports its return value, from the syscalls
 * tracepoints: no probe on the module's own text, which the fixture
 * unloads.  SKIP without bpftrace or those tracepoints.
 */
TEST_F_TIMEOUT(reg, dying_thread_refused, 240)
{
	char script[512], line[256], path[] = "/tmp/umcg_regdie.XXXXXX";
	char *argv[] = { BPFTRACE, "--unsafe", "-B", "line", path, NULL };
	int out[2], status, ret = 1000;
	bool attached = false;
	pid_t bt, child;
	FILE *f;
	int tfd;

	if (access(BPFTRACE, X_OK))
		SKIP(return, BPFTRACE " is not installed");
	snprintf(script, sizeof(script),
		 "BEGIN { printf(\"attached\\n\"); }\n"
		 "tracepoint:syscalls:sys_enter_ioctl /comm == \"" DYING_COMM "\" && "
		 "(uint32)args.cmd == %lu/ { @in[tid] = 1; signal(\"KILL\"); }\n"
		 "tracepoint:syscalls:sys_exit_ioctl /@in[tid]/ "
		 "{ printf(\"ret=%%d\\n\", (int32)args.ret); exit(); }\n",
		 (unsigned long)UMCG_IOC_REGISTER);
	tfd = mkstemp(path);
	ASSERT_LE(0, tfd);
	ASSERT_EQ((ssize_t)strlen(script), write(tfd, script, strlen(script)));
	close(tfd);
	ASSERT_EQ(0, pipe(out));
	bt = fork();
	ASSERT_LE(0, bt);
	if (bt == 0) {
		dup2(out[1], STDOUT_FILENO);
		dup2(out[1], STDERR_FILENO);
		close(out[0]);
		close(out[1]);
		execv(BPFTRACE, argv);
		_exit(127);
	}
	close(out[1]);
	f = fdopen(out[0], "r");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f)) {
		TH_LOG("bpftrace: %s", strtok(line, "\n") ?: "");
		if (!strncmp(line, "attached", 8)) {
			attached = true;
			break;
		}
	}
	if (!attached) {
		fclose(f);
		waitpid(bt, &status, 0);
		unlink(path);
		SKIP(return, "bpftrace could not attach to the ioctl tracepoints (status %#x)",
		     status);
	}
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0)
		dying_child();
	ASSERT_EQ(child, waitpid(child, &status, 0));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "ret=%d", &ret) == 1)
			break;
		TH_LOG("bpftrace: %s", strtok(line, "\n") ?: "");
	}
	fclose(f);
	kill(bt, SIGTERM);
	waitpid(bt, NULL, 0);
	unlink(path);
	EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		TH_LOG("child: status %#x (exit 22: REGISTER returned 0 to it)", status);
	EXPECT_EQ(-ESRCH, ret) TH_LOG("REGISTER of the dying thread returned %d", ret);
	TH_LOG("REGISTER with SIGKILL pending: %d", ret);
}

#define NR_WORKERS	8

struct worker {
	int fd;
	struct umcg_task *map;
	size_t len;
	__u32 server_tid;
	pthread_barrier_t *barrier;
	/* results */
	pid_t tid;
	int reg_ret;
	__u64 off;
	bool zeroed;
	bool kept;
	int unreg_ret;
	int unreg2_ret;
};

static void *worker_fn(void *arg)
{
	struct worker *w = arg;
	struct umcg_task *t;

	w->tid = umcg_gettid();
	w->reg_ret = umcg_reg(w->fd, UMCG_REGISTER_WORKER, w->server_tid, 0, &w->off);
	if (!w->reg_ret && w->off % sizeof(*t) == 0 &&
	    w->off + sizeof(*t) <= w->len) {
		t = w->map + w->off / sizeof(*t);
		w->zeroed = all_zero(t, sizeof(*t));
		t->next_tid = w->tid;
		t->seq = ~(__u64)w->tid;
	}
	/* Everybody is registered at once here. */
	pthread_barrier_wait(w->barrier);
	if (!w->reg_ret && w->off % sizeof(*t) == 0 &&
	    w->off + sizeof(*t) <= w->len) {
		t = w->map + w->off / sizeof(*t);
		w->kept = t->next_tid == (__u32)w->tid &&
			  t->seq == ~(__u64)w->tid;
	}
	pthread_barrier_wait(w->barrier);
	w->unreg_ret = umcg_unreg(w->fd);
	w->unreg2_ret = umcg_unreg(w->fd);
	return NULL;
}

TEST_F(reg, server_and_workers)
{
	struct worker w[NR_WORKERS];
	pthread_t th[NR_WORKERS];
	pthread_barrier_t barrier;
	struct umcg_task *map2;
	__u64 soff;

	reg_map(_metadata, self);
	ASSERT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0, &soff));
	ASSERT_EQ(0, soff % sizeof(struct umcg_task));
	ASSERT_GE(self->len, soff + sizeof(struct umcg_task));

	ASSERT_EQ(0, pthread_barrier_init(&barrier, NULL, NR_WORKERS + 1));
	for (int i = 0; i < NR_WORKERS; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].fd = self->fd;
		w[i].map = self->map;
		w[i].len = self->len;
		w[i].server_tid = umcg_gettid();
		w[i].barrier = &barrier;
		ASSERT_EQ(0, pthread_create(&th[i], NULL, worker_fn, &w[i]));
	}
	pthread_barrier_wait(&barrier);

	/* A second mapping shows the same module memory. */
	map2 = umcg_map(self->fd, self->len);
	ASSERT_NE(MAP_FAILED, map2);
	for (int i = 0; i < NR_WORKERS; i++) {
		struct umcg_task *t;

		ASSERT_EQ(0, w[i].reg_ret) TH_LOG("worker %d: %s", i,
						  strerror(-w[i].reg_ret));
		EXPECT_EQ(0, w[i].off % sizeof(struct umcg_task));
		EXPECT_GE(self->len, w[i].off + sizeof(struct umcg_task));
		EXPECT_NE(soff, w[i].off);
		for (int j = 0; j < i; j++) {
			EXPECT_NE(w[j].off, w[i].off) TH_LOG("%d and %d", i, j);
		}
		EXPECT_TRUE(w[i].zeroed) TH_LOG("worker %d", i);
		t = map2 + w[i].off / sizeof(*t);
		EXPECT_EQ((__u32)w[i].tid, t->next_tid);
		EXPECT_EQ(~(__u64)w[i].tid, t->seq);
	}
	EXPECT_EQ(0, munmap(map2, self->len));
	pthread_barrier_wait(&barrier);

	for (int i = 0; i < NR_WORKERS; i++) {
		ASSERT_EQ(0, pthread_join(th[i], NULL));
		EXPECT_TRUE(w[i].kept) TH_LOG("worker %d", i);
		EXPECT_EQ(0, w[i].unreg_ret) TH_LOG("worker %d", i);
		EXPECT_EQ(-ENOENT, w[i].unreg2_ret) TH_LOG("worker %d", i);
	}
	pthread_barrier_destroy(&barrier);
	EXPECT_EQ(0, umcg_unreg(self->fd));
	EXPECT_EQ(-ENOENT, umcg_unreg(self->fd));
}

/*
 * Let an RCU grace period pass: MEMBARRIER_CMD_GLOBAL waits for one
 * (synchronize_rcu()) on a machine with more than one CPU.
 */
static int grace_period(void)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		return -1;
	return syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0);
}

/* A slot that was used is zeroed when it is reused (after a grace period). */
TEST_F(reg, zeroed_at_register)
{
	__u64 off = 0, off2 = 0;
	struct umcg_task *t;

	if (grace_period())
		SKIP(return, "no membarrier(MEMBARRIER_CMD_GLOBAL) grace period");
	reg_map(_metadata, self);
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_WORKER, 0, 0, &off));
		ASSERT_GE(self->len, off + sizeof(*t));
		t = self->map + off / sizeof(*t);
		ASSERT_TRUE(all_zero(t, sizeof(*t))) TH_LOG("round %d", i);
		memset(t, 0xff, sizeof(*t));
		ASSERT_EQ(0, umcg_unreg(self->fd));
		ASSERT_EQ(0, grace_period());
	}
	ASSERT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0, &off2));
	EXPECT_EQ(off, off2);
	EXPECT_TRUE(all_zero(self->map + off2 / sizeof(*t), sizeof(*t)));
	EXPECT_EQ(0, umcg_unreg(self->fd));
}

/*
 * A slot just unregistered is not reused while another is free: lock-free
 * lookups may still be on its hash node until a grace period ends, and
 * hashing it again at once would lead them into another bucket, where
 * they miss the threads of their own (a spurious -ESRCH).  After a grace
 * period the slot freed last is the first reused.
 */
TEST_F(reg, reuse_after_grace_period)
{
	__u64 off = 0, off2 = 0, off3 = 0;

	if (grace_period())
		SKIP(return, "no membarrier(MEMBARRIER_CMD_GLOBAL) grace period");
	reg_map(_metadata, self);
	ASSERT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_WORKER, 0, 0, &off));
	ASSERT_EQ(0, umcg_unreg(self->fd));
	ASSERT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_WORKER, 0, 0, &off2));
	EXPECT_NE(off, off2);
	ASSERT_EQ(0, umcg_unreg(self->fd));
	ASSERT_EQ(0, grace_period());
	ASSERT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_WORKER, 0, 0, &off3));
	EXPECT_EQ(off2, off3);
	EXPECT_EQ(0, umcg_unreg(self->fd));
}

TEST_F(reg, double_register)
{
	ASSERT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_WORKER, 0, 0, NULL));
	EXPECT_EQ(-EBUSY, umcg_reg(self->fd, UMCG_REGISTER_WORKER, 0, 0, NULL));
	EXPECT_EQ(-EBUSY, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0, NULL));
	EXPECT_EQ(0, umcg_unreg(self->fd));
	EXPECT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0, NULL));
	EXPECT_EQ(0, umcg_unreg(self->fd));
}

/* One group per process: a second file of the device cannot bind. */
TEST_F(reg, second_file_busy)
{
	int fd2;

	ASSERT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_WORKER, 0, 0, NULL));
	fd2 = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd2);
	EXPECT_EQ(-EBUSY, umcg_reg(fd2, UMCG_REGISTER_SERVER, 0, 0, NULL));
	EXPECT_EQ(MAP_FAILED, umcg_map(fd2, self->len));
	EXPECT_EQ(EBUSY, errno);
	EXPECT_EQ(-ENOENT, umcg_unreg(fd2));
	EXPECT_EQ(0, close(fd2));
	EXPECT_EQ(0, umcg_unreg(self->fd));
}

TEST_F(reg, unregister_unregistered)
{
	EXPECT_EQ(-ENOENT, umcg_unreg(self->fd));
	/* ... also once the group exists. */
	reg_map(_metadata, self);
	EXPECT_EQ(-ENOENT, umcg_unreg(self->fd));
}

TEST_F(reg, register_args)
{
	pid_t me = umcg_gettid();

	EXPECT_EQ(-EINVAL, umcg_reg(self->fd, UMCG_REGISTER_SERVER, me, 0, NULL));
	EXPECT_EQ(-EINVAL, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, UINT32_MAX,
			       NULL));
	EXPECT_EQ(-EINVAL, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 1U << 20,
			       NULL));
	EXPECT_EQ(-EINVAL, umcg_reg(self->fd, UMCG_REGISTER_WORKER, 0, 1, NULL));
	/* The server must be a registered server of this process. */
	EXPECT_EQ(-ESRCH, umcg_reg(self->fd, UMCG_REGISTER_WORKER, me, 0, NULL));
	EXPECT_EQ(-ESRCH, umcg_reg(self->fd, UMCG_REGISTER_WORKER, 1, 0, NULL));
	/* None of them registered the thread. */
	EXPECT_EQ(-ENOENT, umcg_unreg(self->fd));
	ASSERT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_WORKER, 0, 0, NULL));
	ASSERT_EQ(0, umcg_unreg(self->fd));
}

static void *worker_of_fn(void *arg)
{
	struct worker *w = arg;

	w->reg_ret = umcg_reg(w->fd, UMCG_REGISTER_WORKER, w->server_tid, 0, NULL);
	if (!w->reg_ret)
		w->unreg_ret = umcg_unreg(w->fd);
	return NULL;
}

/* A worker registered as server is no server. */
TEST_F(reg, worker_needs_server)
{
	struct worker w = { .fd = self->fd, .server_tid = umcg_gettid() };
	pthread_t th;

	ASSERT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_WORKER, 0, 0, NULL));
	ASSERT_EQ(0, pthread_create(&th, NULL, worker_of_fn, &w));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(-ESRCH, w.reg_ret);
	ASSERT_EQ(0, umcg_unreg(self->fd));

	ASSERT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0, NULL));
	ASSERT_EQ(0, pthread_create(&th, NULL, worker_of_fn, &w));
	ASSERT_EQ(0, pthread_join(th, NULL));
	EXPECT_EQ(0, w.reg_ret);
	EXPECT_EQ(0, w.unreg_ret);
	ASSERT_EQ(0, umcg_unreg(self->fd));
}

/* Exit status of a child: 0, or the number of the first failed step. */
static int child_status(pid_t child)
{
	int status;

	if (waitpid(child, &status, 0) != child)
		return -1;
	if (!WIFEXITED(status))
		return -2;
	return WEXITSTATUS(status);
}

/* A forked child inherits neither the registration nor the mapping. */
TEST_F(reg, fork_child)
{
	__u64 off = 0;
	pid_t child;

	reg_map(_metadata, self);
	ASSERT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0, &off));
	self->map[off / sizeof(*self->map)].next_tid = 42;

	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		int fd2;

		if (umcg_unreg(self->fd) != -EPERM)
			_exit(1);
		if (umcg_reg(self->fd, UMCG_REGISTER_WORKER, 0, 0, NULL) != -EPERM)
			_exit(2);
		if (umcg_map(self->fd, self->len) != MAP_FAILED ||
		    errno != EPERM)
			_exit(3);
		/* The parent's mapping is not there. */
		if (madvise(self->map, self->len, MADV_NORMAL) != -1 ||
		    errno != ENOMEM)
			_exit(4);
		/* Its own file gives it its own group. */
		fd2 = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
		if (fd2 < 0)
			_exit(5);
		if (umcg_reg(fd2, UMCG_REGISTER_SERVER, 0, 0, NULL))
			_exit(6);
		if (umcg_unreg(fd2))
			_exit(7);
		_exit(0);
	}
	EXPECT_EQ(0, child_status(child));
	/* The parent is still registered, its memory untouched. */
	EXPECT_EQ(42, self->map[off / sizeof(*self->map)].next_tid);
	EXPECT_EQ(-EBUSY, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0, NULL));
	EXPECT_EQ(0, umcg_unreg(self->fd));
}

/*
 * madvise(MADV_DOFORK) cannot undo the mapping's VM_DONTCOPY: it fails, and
 * a child forked afterwards has no copy, so the group goes with the
 * parent's file and mapping while the child lives on.
 */
TEST_F(reg, madv_dofork_refused)
{
	int p[2], groups;
	pid_t child;
	char c;

	reg_map(_metadata, self);
	groups = umcg_sys_count("groups");
	ASSERT_LT(0, groups);
	EXPECT_EQ(-1, madvise(self->map, self->len, MADV_DOFORK));
	EXPECT_EQ(EINVAL, errno);

	ASSERT_EQ(0, pipe2(p, O_CLOEXEC));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		close(p[1]);
		/* Its copy of the descriptor would keep the file: only that. */
		close(self->fd);
		/* No copy of the parent's mapping here. */
		if (madvise(self->map, self->len, MADV_NORMAL) != -1 ||
		    errno != ENOMEM)
			_exit(1);
		/* Live until the parent has checked. */
		if (read(p[0], &c, 1) < 0)
			_exit(2);
		_exit(0);
	}
	close(p[0]);
	EXPECT_EQ(0, munmap(self->map, self->len));
	self->map = MAP_FAILED;
	EXPECT_EQ(0, close(self->fd));
	self->fd = -1;
	/* The child holds no mapping of the file: the group is freed. */
	EXPECT_TRUE(umcg_poll_ms(umcg_sys_count("groups") == groups - 1, 5000))
		TH_LOG("groups: %ld, was %d", umcg_sys_count("groups"), groups);
	close(p[1]);
	EXPECT_EQ(0, child_status(child));
}

/*
 * The file belongs to the first process that uses it: here a child, so the
 * parent that opened it can no longer register through it.
 */
TEST_F(reg, file_bound_to_first_user)
{
	int pipefd[2];
	pid_t child;
	char c = 0;

	ASSERT_EQ(0, pipe(pipefd));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		close(pipefd[0]);
		if (umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0, NULL))
			_exit(1);
		if (write(pipefd[1], &c, 1) != 1)
			_exit(2);
		/* Hold the registration until the parent checked. */
		pause();
		_exit(3);
	}
	close(pipefd[1]);
	ASSERT_EQ(1, read(pipefd[0], &c, 1));
	EXPECT_EQ(-EPERM, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0, NULL));
	EXPECT_EQ(-EPERM, umcg_unreg(self->fd));
	EXPECT_EQ(MAP_FAILED, umcg_map(self->fd, self->len));
	EXPECT_EQ(EPERM, errno);
	ASSERT_EQ(0, kill(child, SIGKILL));
	ASSERT_EQ(child, waitpid(child, NULL, 0));
	close(pipefd[0]);
	/* Still the child's, even dead. */
	EXPECT_EQ(-EPERM, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0, NULL));
}

TEST_F(reg, mmap_invalid)
{
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	p = mmap(NULL, self->len, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, page);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, self->len + page, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, self->len - page, PROT_READ | PROT_WRITE, MAP_SHARED,
		 self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);
	p = mmap(NULL, self->len, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		 self->fd, 0);
	EXPECT_EQ(MAP_FAILED, p);
	EXPECT_EQ(EINVAL, errno);

	/* The valid one cannot grow. */
	reg_map(_metadata, self);
	p = mremap(self->map, self->len, self->len + page, MREMAP_MAYMOVE);
	EXPECT_EQ(MAP_FAILED, p);
}

#define MAX_TASKS_PARAM	"/sys/module/" UMCG_KMOD_NAME "/parameters/max_tasks"

/* Write @n into umcg.ko's max_tasks; 0 or -errno. */
static int max_tasks_write(long n)
{
	char buf[32];
	FILE *f = fopen(MAX_TASKS_PARAM, "we");
	int ret = 0;

	if (!f)
		return -errno;
	snprintf(buf, sizeof(buf), "%ld\n", n);
	if (fputs(buf, f) < 0)
		ret = -EIO;
	if (fclose(f) && !ret)
		ret = -errno;
	return ret;
}

struct limit_thread {
	int fd;
	struct umcg_task *map;
	pthread_barrier_t *barrier;
	int ret;
	__u64 off;
	bool wrote;
};

static void *limit_fn(void *arg)
{
	struct limit_thread *l = arg;

	l->ret = umcg_reg(l->fd, UMCG_REGISTER_WORKER, 0, 0, &l->off);
	if (!l->ret && l->map) {
		/* The page of its word is mapped once REGISTER returned. */
		struct umcg_task *t = &l->map[umcg_slot_idx(l->off)];

		t->next_tid = umcg_gettid();
		l->wrote = t->next_tid == (__u32)umcg_gettid();
	}
	pthread_barrier_wait(l->barrier);
	pthread_barrier_wait(l->barrier);
	/* Exits registered: the slot is reclaimed once the thread is gone. */
	return NULL;
}

/*
 * @n threads register on @fd (mapped at @map, or NULL) at once and wait;
 * returns how many did, each slot its own and inside @max; then, with them
 * all registered, *@extra gets what one more REGISTER (a server) returns.
 * The threads then exit registered.
 */
static unsigned int limit_run(struct __test_metadata *_metadata, int fd,
			      struct umcg_task *map, unsigned int n,
			      unsigned int max, int *extra)
{
	struct limit_thread *l = calloc(n, sizeof(*l));
	pthread_t *th = calloc(n, sizeof(*th));
	unsigned char *seen = calloc(max, 1);
	pthread_barrier_t barrier;
	pthread_attr_t attr;
	unsigned int ok = 0, dup = 0, wrote = 0;

	EXPECT_TRUE(l && th && seen);
	if (!l || !th || !seen)
		return 0;
	ASSERT_EQ(0, pthread_attr_init(&attr));
	ASSERT_EQ(0, pthread_attr_setstacksize(&attr, 64 * 1024));
	ASSERT_EQ(0, pthread_barrier_init(&barrier, NULL, n + 1));
	for (unsigned int i = 0; i < n; i++) {
		l[i].fd = fd;
		l[i].map = map;
		l[i].barrier = &barrier;
		ASSERT_EQ(0, pthread_create(&th[i], &attr, limit_fn, &l[i]))
			TH_LOG("thread %u", i);
	}
	pthread_barrier_wait(&barrier);
	for (unsigned int i = 0; i < n; i++) {
		unsigned int idx = umcg_slot_idx(l[i].off);

		if (l[i].ret)
			continue;
		ok++;
		wrote += l[i].wrote;
		if (idx >= max || seen[idx]++)
			dup++;
	}
	EXPECT_EQ(0, dup);
	if (map)
		EXPECT_EQ(ok, wrote);
	*extra = umcg_reg(fd, UMCG_REGISTER_SERVER, 0, 0, NULL);
	if (!*extra)
		EXPECT_EQ(0, umcg_unreg(fd));
	pthread_barrier_wait(&barrier);
	for (unsigned int i = 0; i < n; i++)
		ASSERT_EQ(0, pthread_join(th[i], NULL));
	pthread_barrier_destroy(&barrier);
	pthread_attr_destroy(&attr);
	free(seen);
	free(l);
	free(th);
	return ok;
}

/*
 * The limit is the module parameter max_tasks, which a file takes when
 * it is opened: set to LIMIT_TASKS (a chunk past 4096), a file opened then
 * reports it; that many threads register, each in a slot of its own whose
 * word is mapped, the next REGISTER is -ENOSPC, and once the threads that
 * exited registered are reaped their slots come back.  A file opened
 * before the change keeps its own limit.
 */
#define LIMIT_TASKS	(4096 + 64)

TEST_F_TIMEOUT(reg, limit, 280)
{
	long old = umcg_read_number(MAX_TASKS_PARAM);
	unsigned int n = LIMIT_TASKS, ok;
	struct umcg_task *map;
	int fd, extra = 0, ret = 0;

	ASSERT_LT(0, old) TH_LOG("%s", MAX_TASKS_PARAM);
	ASSERT_EQ(-EINVAL, max_tasks_write(0));
	ASSERT_EQ(-EINVAL, max_tasks_write((1L << 20) + 1));
	ASSERT_EQ(0, max_tasks_write(LIMIT_TASKS));
	fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_EQ(0, max_tasks_write(old));
	ASSERT_LE(0, fd);
	ASSERT_EQ(LIMIT_TASKS, umcg_max_tasks(fd));
	EXPECT_EQ(old, umcg_max_tasks(self->fd));
	map = umcg_map(fd, umcg_map_len(LIMIT_TASKS));
	ASSERT_NE(MAP_FAILED, map) TH_LOG("mmap: %s", strerror(errno));

	ok = limit_run(_metadata, fd, map, n, LIMIT_TASKS, &extra);
	EXPECT_EQ(n, ok);
	EXPECT_EQ(-ENOSPC, extra);

	/* The exited threads' slots come back once they are reaped. */
	for (int i = 0; i < 200; i++) {
		ret = umcg_reg(fd, UMCG_REGISTER_SERVER, 0, 0, NULL);
		if (ret != -ENOSPC)
			break;
		umcg_sleep_ms(10);
	}
	EXPECT_EQ(0, ret);
	EXPECT_EQ(0, umcg_unreg(fd));
	EXPECT_EQ(0, munmap(map, umcg_map_len(LIMIT_TASKS)));
	EXPECT_EQ(0, close(fd));
}

/*
 * Past the 4096 threads the module once had room for: MANY_TASKS threads
 * of one process register at once with the default limit, each in a slot
 * of its own with its word mapped, and there is room for more.
 */
#define MANY_TASKS	10000

TEST_F_TIMEOUT(reg, many, 280)
{
	int extra = -1;

	if (self->max_tasks <= MANY_TASKS)
		SKIP(return, "max_tasks %u", self->max_tasks);
	reg_map(_metadata, self);
	EXPECT_EQ(MANY_TASKS, limit_run(_metadata, self->fd, self->map,
					MANY_TASKS, self->max_tasks, &extra));
	EXPECT_EQ(0, extra);
}

struct churn_thread {
	int fd;
	bool unregister;
	int ret;
	__u64 off;
};

static void *churn_fn(void *arg)
{
	struct churn_thread *c = arg;

	c->ret = umcg_reg(c->fd, UMCG_REGISTER_WORKER, 0, 0, &c->off);
	if (!c->ret && c->unregister)
		c->ret = umcg_unreg(c->fd);
	return NULL;
}

/*
 * CHURN_ROUNDS threads, CHURN_AT_ONCE at a time, register and exit (every
 * other one without unregistering): their slots are reused, so the group
 * never needs more than a few chunks (CHURN_SLOTS), and the word of a slot
 * past them would not even be mapped.
 */
#define CHURN_ROUNDS	2000
#define CHURN_AT_ONCE	8
#define CHURN_SLOTS	(3 * 64)

TEST_F_TIMEOUT(reg, churn_reuses_slots, 280)
{
	struct churn_thread c[CHURN_AT_ONCE];
	pthread_t th[CHURN_AT_ONCE];
	unsigned int hi = 0, bad = 0;

	reg_map(_metadata, self);
	for (unsigned int r = 0; r < CHURN_ROUNDS / CHURN_AT_ONCE; r++) {
		for (unsigned int i = 0; i < CHURN_AT_ONCE; i++) {
			c[i] = (struct churn_thread){
				.fd = self->fd, .unregister = i % 2,
			};
			ASSERT_EQ(0, pthread_create(&th[i], NULL, churn_fn, &c[i]));
		}
		for (unsigned int i = 0; i < CHURN_AT_ONCE; i++) {
			ASSERT_EQ(0, pthread_join(th[i], NULL));
			bad += c[i].ret != 0;
			if (!c[i].ret && umcg_slot_idx(c[i].off) >= hi)
				hi = umcg_slot_idx(c[i].off) + 1;
		}
	}
	EXPECT_EQ(0, bad);
	ksft_print_msg("churn: %d threads, slots below %u used\n",
		       CHURN_ROUNDS, hi);
	EXPECT_GE(CHURN_SLOTS, hi);
}

struct done_thread {
	int fd;
	struct umcg_task *map;
	int ret;
	__u64 off;
};

/* Registers, reads RUNNING, exits without a word: the kernel says DONE. */
static void *done_fn(void *arg)
{
	struct done_thread *d = arg;

	d->ret = umcg_reg(d->fd, UMCG_REGISTER_WORKER, 0, 0, &d->off);
	if (!d->ret)
		__atomic_store_n(&d->map[d->off / sizeof(*d->map)].state,
				 UMCG_TASK_RUNNING, __ATOMIC_SEQ_CST);
	syscall(SYS_exit, 0);
	return NULL;
}

/*
 * A worker that exits registered, RUNNING: the kernel moves its word to
 * DONE, and its slot is not given to a new thread until the process
 * stored NEW there (uapi: REGISTER); then the next REGISTER reclaims it.
 */
TEST_F(reg, done_slot_kept_until_read)
{
	struct done_thread d = { .fd = self->fd };
	__u64 off = 0;
	char hook[32];
	pthread_t th;
	int ret = 0;

	if (strcmp(umcg_sys_hook(hook, sizeof(hook)), "tracepoint"))
		SKIP(return, "block detection by kprobe does not see exits");
	reg_map(_metadata, self);
	d.map = self->map;
	ASSERT_EQ(0, pthread_create(&th, NULL, done_fn, &d));
	ASSERT_EQ(0, pthread_join(th, NULL));
	ASSERT_EQ(0, d.ret);
	for (int i = 0; i < 200 && (self->map[d.off / sizeof(*self->map)].state &
				    UMCG_TASK_STATE_MASK) != UMCG_TASK_DONE; i++)
		umcg_sleep_ms(10);
	ASSERT_EQ(UMCG_TASK_DONE,
		  self->map[d.off / sizeof(*self->map)].state & UMCG_TASK_STATE_MASK);

	/* Dead, reaped, but its word still reads DONE: not reused. */
	umcg_sleep_ms(100);
	ASSERT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0, &off));
	EXPECT_NE(d.off, off);
	EXPECT_EQ(UMCG_TASK_DONE,
		  self->map[d.off / sizeof(*self->map)].state & UMCG_TASK_STATE_MASK);
	ASSERT_EQ(0, umcg_unreg(self->fd));

	/* Read: the lowest free slot is its again. */
	__atomic_store_n(&self->map[d.off / sizeof(*self->map)].state,
			 UMCG_TASK_NEW, __ATOMIC_SEQ_CST);
	for (int i = 0; i < 200; i++) {
		ret = umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0, &off);
		if (ret || off == d.off)
			break;
		ASSERT_EQ(0, umcg_unreg(self->fd));
		umcg_sleep_ms(10);
	}
	ASSERT_EQ(0, ret);
	EXPECT_EQ(d.off, off);
	EXPECT_EQ(0, umcg_unreg(self->fd));
}

/* ---- Module lifetime: starts with umcg.ko unloaded ---- */

FIXTURE(life) {
	char path[PATH_MAX];
	bool was_loaded;
	size_t len;
};

FIXTURE_SETUP(life)
{
	int ret, fd;

	if (!umcg_kmod_find(_metadata, self->path, sizeof(self->path)))
		return;
	self->was_loaded = umcg_test_kmod_loaded(UMCG_KMOD_NAME);
	ret = umcg_test_kmod_unload(UMCG_KMOD_NAME);
	ASSERT_TRUE(ret == 0 || ret == -ENOENT)
		TH_LOG("unloading umcg: %s", strerror(-ret));
	ASSERT_EQ(0, umcg_test_kmod_load(self->path));
	fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ret = umcg_max_tasks(fd);
	ASSERT_LT(0, ret);
	self->len = umcg_map_len(ret);
	ASSERT_EQ(0, close(fd));
}

FIXTURE_TEARDOWN(life)
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

/* Unload, retrying while a dead process's files are still being put. */
static int unload_eventually(void)
{
	int ret = -1;

	for (int i = 0; i < 200; i++) {
		ret = umcg_test_kmod_unload(UMCG_KMOD_NAME);
		if (ret != -UMCG_EINUSE)
			break;
		umcg_sleep_ms(10);
	}
	return ret;
}

/* The mapping alone keeps the group, and so the module. */
TEST_F(life, mapping_pins_module)
{
	struct umcg_task *map;
	int fd;

	fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, fd);
	ASSERT_EQ(0, umcg_reg(fd, UMCG_REGISTER_SERVER, 0, 0, NULL));
	map = umcg_map(fd, self->len);
	ASSERT_NE(MAP_FAILED, map);
	EXPECT_EQ(-UMCG_EINUSE, umcg_test_kmod_unload(UMCG_KMOD_NAME));
	ASSERT_EQ(0, close(fd));
	/* The mapping's file, and the group it keeps. */
	EXPECT_EQ(2, umcg_read_number("/sys/module/umcg/refcnt"));
	EXPECT_EQ(-UMCG_EINUSE, umcg_test_kmod_unload(UMCG_KMOD_NAME));
	map[0].state = UMCG_TASK_RUNNABLE;
	EXPECT_EQ(UMCG_TASK_RUNNABLE, map[0].state);
	ASSERT_EQ(0, munmap(map, self->len));
	EXPECT_EQ(0, umcg_read_number("/sys/module/umcg/refcnt"));
	EXPECT_EQ(0, umcg_test_kmod_unload(UMCG_KMOD_NAME));
}

#define KILL_WORKERS	4

static void *kill_worker_fn(void *arg)
{
	int fd = *(int *)arg;

	umcg_reg(fd, UMCG_REGISTER_WORKER, 0, 0, NULL);
	for (;;)
		pause();
	return NULL;
}

/*
 * The child gets as far as @stage, reports it, and is killed:
 *   0 opened, 1 mapped, 2 registered with workers, 3 as 2 but unmapped
 *   and closed again (the group is freed at that close, with its threads
 *   still registered).
 */
static void kill_child_run(int stage, size_t len, int wfd)
{
	pthread_t th[KILL_WORKERS];
	void *map = MAP_FAILED;
	char c = 0;
	int fd;

	fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		_exit(10);
	if (stage >= 1) {
		map = umcg_map(fd, len);
		if (map == MAP_FAILED)
			_exit(11);
	}
	if (stage >= 2) {
		if (umcg_reg(fd, UMCG_REGISTER_SERVER, 0, 0, NULL))
			_exit(12);
		for (int i = 0; i < KILL_WORKERS; i++)
			if (pthread_create(&th[i], NULL, kill_worker_fn, &fd))
				_exit(13);
	}
	if (stage >= 3) {
		if (munmap(map, len) || close(fd))
			_exit(14);
	}
	if (write(wfd, &c, 1) != 1)
		_exit(15);
	for (;;)
		pause();
}

TEST_F(life, sigkill_frees_everything)
{
	for (int stage = 0; stage <= 3; stage++) {
		int pipefd[2], status;
		pid_t child;
		char c;

		if (stage && !umcg_test_kmod_loaded(UMCG_KMOD_NAME))
			ASSERT_EQ(0, umcg_test_kmod_load(self->path));
		ASSERT_EQ(0, pipe(pipefd));
		child = fork();
		ASSERT_LE(0, child);
		if (child == 0) {
			close(pipefd[0]);
			kill_child_run(stage, self->len, pipefd[1]);
		}
		close(pipefd[1]);
		ASSERT_EQ(1, read(pipefd[0], &c, 1)) TH_LOG("stage %d", stage);
		close(pipefd[0]);
		if (stage < 3)
			EXPECT_EQ(-UMCG_EINUSE,
				  umcg_test_kmod_unload(UMCG_KMOD_NAME))
				TH_LOG("stage %d", stage);
		/* Give the workers time to register (stage 2). */
		umcg_sleep_ms(100);
		ASSERT_EQ(0, kill(child, SIGKILL));
		ASSERT_EQ(child, waitpid(child, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			TH_LOG("stage %d: status %#x", stage, status);
		EXPECT_EQ(0, unload_eventually()) TH_LOG("stage %d", stage);
		EXPECT_FALSE(umcg_test_kmod_loaded(UMCG_KMOD_NAME));
	}
}

TEST_HARNESS_MAIN
