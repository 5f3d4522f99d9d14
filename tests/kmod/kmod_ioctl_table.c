// SPDX-License-Identifier: GPL-2.0
/*
 * Description: table-driven error checks of every /dev/umcg command and of
 * its mmap, each row against the error uapi/umcg.h documents (C8).  This
 * complements kmod_abi.c, whose umcg_cmd fixture feeds every command, as an
 * unregistered caller of a fresh file, sizes below VER0, size fields other
 * than _IOC_SIZE(), bigger structs with zero and non-zero tails, unknown
 * flags, non-zero pad and reserved fields, NULL and half-unmapped pointers.
 * Here:
 *
 *   pointers   NULL, unmapped, kernel (text, direct map), non-canonical and
 *              wrapping addresses: -EFAULT, whatever the caller's standing
 *              (a registered thread, a foreign process); a result that
 *              cannot be copied back is -EFAULT too and a REGISTER that
 *              fails so leaves the thread unregistered
 *   order      argument checks come first: a malformed argument is -ENOTTY
 *              (_IOC_SIZE below VER0), -EINVAL or -E2BIG also from a
 *              registered thread and from a process that does not own the
 *              file, never -EPERM, -ENOENT or -ESRCH
 *   tids       WAKE, SWITCH, PREEMPT and a worker's REGISTER server_tid:
 *              0, negative, above INT_MAX, nonexistent, init, an unregistered
 *              thread of the caller, a dead registered thread, the registered
 *              server and worker of ANOTHER process (registered in that
 *              process's own group): -ESRCH; a registered server is no
 *              worker to PREEMPT and a worker no server to REGISTER under
 *   foreign    the file used from a forked child: -EPERM from every command
 *              but GET_INFO, and from mmap
 *   mmap       wrong lengths, offsets, MAP_PRIVATE: -EINVAL
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <uapi/umcg.h>

#include "kmod_test.h"
#include "kmod_raw.h"

/* Room for any argument, with a tail. */
#define ARG_MAX_SIZE	256

/* ---- The commands ---- */

struct cmd {
	const char *name;
	unsigned int nr;	/* ioctl number */
	size_t ver0;
	__u32 flags;		/* valid flags */
	unsigned int tid_off;	/* offset of a tid field, 0 if none */
	unsigned int bad_off;	/* a field whose 1 is -EINVAL */
};

static const struct cmd cmds[] = {
	{ "GET_INFO", UMCG_IOC_GET_INFO, UMCG_INFO_SIZE_VER0, 0, 0,
	  offsetof(struct umcg_info, flags) },
	{ "REGISTER", UMCG_IOC_REGISTER, UMCG_REGISTER_SIZE_VER0,
	  UMCG_REGISTER_WORKER, offsetof(struct umcg_register_args, server_tid),
	  offsetof(struct umcg_register_args, reserved) },
	{ "UNREGISTER", UMCG_IOC_UNREGISTER, UMCG_UNREGISTER_SIZE_VER0, 0, 0,
	  offsetof(struct umcg_unregister_args, flags) },
	{ "WAIT", UMCG_IOC_WAIT, UMCG_WAIT_SIZE_VER0, 0, 0,
	  offsetof(struct umcg_wait_args, flags) },
	{ "WAKE", UMCG_IOC_WAKE, UMCG_WAKE_SIZE_VER0, 0,
	  offsetof(struct umcg_wake_args, tid),
	  offsetof(struct umcg_wake_args, pad) },
	{ "SWITCH", UMCG_IOC_SWITCH, UMCG_SWITCH_SIZE_VER0, 0,
	  offsetof(struct umcg_switch_args, next_tid),
	  offsetof(struct umcg_switch_args, pad) },
	{ "PREEMPT", UMCG_IOC_PREEMPT, UMCG_PREEMPT_SIZE_VER0, 0,
	  offsetof(struct umcg_preempt_args, tid),
	  offsetof(struct umcg_preempt_args, pad) },
};

/* @nr with its size bits replaced by @size. */
static unsigned int cmd_sized(unsigned int nr, size_t size)
{
	return _IOC(_IOC_DIR(nr), _IOC_TYPE(nr), _IOC_NR(nr), size);
}

/* Store @v at byte @off of @arg. */
static void put32(void *arg, size_t off, __u32 v)
{
	memcpy((char *)arg + off, &v, sizeof(v));
}

static __u32 get32(const void *arg, size_t off)
{
	__u32 v;

	memcpy(&v, (const char *)arg + off, sizeof(v));
	return v;
}

/* A valid @usize-byte argument of @c, with @tid in its tid field. */
static void arg_init(const struct cmd *c, void *arg, size_t usize, __u32 tid)
{
	memset(arg, 0, usize);
	put32(arg, 0, usize);
	put32(arg, 4, c->flags);
	if (c->tid_off)
		put32(arg, c->tid_off, tid);
}

/* ioctl() of @c at @arg; 0 or -errno. */
static int cmd_call(int fd, const struct cmd *c, size_t usize, void *arg)
{
	return ioctl(fd, cmd_sized(c->nr, usize), arg) ? -errno : 0;
}

/* ---- Rows that malform the argument: the same error anywhere ---- */

enum malform {
	M_NULL, M_UNMAPPED, M_KTEXT, M_KDIRECT, M_NONCANON, M_TOP, M_WRAP,
	M_FLAGS, M_BAD_FIELD, M_SIZE_SMALL, M_SIZE_BIG, M_TAIL, M_IOC_SMALL,
	M_NR
};

static const struct {
	const char *name;
	int err;
} malforms[M_NR] = {
	[M_NULL]	= { "NULL", EFAULT },
	[M_UNMAPPED]	= { "unmapped page", EFAULT },
	[M_KTEXT]	= { "kernel text address", EFAULT },
	[M_KDIRECT]	= { "kernel direct-map address", EFAULT },
	[M_NONCANON]	= { "non-canonical address", EFAULT },
	[M_TOP]		= { "last page of the address space", EFAULT },
	[M_WRAP]	= { "argument wrapping around 0", EFAULT },
	[M_FLAGS]	= { "unknown flag bit 31", EINVAL },
	[M_BAD_FIELD]	= { "non-zero pad, reserved or flags bit 30", EINVAL },
	[M_SIZE_SMALL]	= { "size field below VER0", EINVAL },
	[M_SIZE_BIG]	= { "size field above _IOC_SIZE", EINVAL },
	[M_TAIL]	= { "bigger struct, non-zero tail", E2BIG },
	[M_IOC_SMALL]	= { "_IOC_SIZE below VER0 (size field agrees)", ENOTTY },
};

/*
 * Call @c with malformation @m; @unmapped is a PROT_NONE page.  The valid
 * parts of the argument name @tid.
 */
static int call_malformed(int fd, const struct cmd *c, enum malform m,
			  void *unmapped, __u32 tid)
{
	__u64 buf[ARG_MAX_SIZE / 8];
	size_t usize = c->ver0;
	void *arg = buf;

	arg_init(c, buf, usize, tid);
	switch (m) {
	case M_NULL:
		arg = NULL;
		break;
	case M_UNMAPPED:
		arg = unmapped;
		break;
	case M_KTEXT:
		arg = (void *)0xffffffff81000000UL;
		break;
	case M_KDIRECT:
		arg = (void *)0xffff888000000000UL;
		break;
	case M_NONCANON:
		arg = (void *)0x8000000000000000UL;
		break;
	case M_TOP:
		arg = (void *)(0UL - 4096);
		break;
	case M_WRAP:
		arg = (void *)(0UL - 8);
		break;
	case M_FLAGS:
		put32(buf, 4, get32(buf, 4) | 1U << 31);
		break;
	case M_BAD_FIELD:
		put32(buf, c->bad_off, 1U << 30);
		break;
	case M_SIZE_SMALL:
		put32(buf, 0, c->ver0 - 4);
		break;
	case M_SIZE_BIG:
		put32(buf, 0, c->ver0 + 8);
		break;
	case M_TAIL:
		usize = c->ver0 + 16;
		arg_init(c, buf, usize, tid);
		((char *)buf)[usize - 1] = 1;
		break;
	case M_IOC_SMALL:
		usize = c->ver0 - 4;
		put32(buf, 0, usize);
		break;
	default:
		break;
	}
	return cmd_call(fd, c, usize, arg);
}

/* ---- The fixture: a bound file, this thread its registered server ---- */

FIXTURE(tbl) {
	int fd;
	bool loaded;
	unsigned int max_tasks;
	size_t len;
	struct umcg_task *map;
	struct umcg_task *me;	/* this thread's slot, RUNNING */
	void *unmapped;
	long page;
};

FIXTURE_SETUP(tbl)
{
	__u64 off = 0;
	int max;

	self->fd = -1;
	self->map = MAP_FAILED;
	self->unmapped = MAP_FAILED;
	self->page = sysconf(_SC_PAGESIZE);
	if (!umcg_kmod_get(_metadata, &self->loaded))
		return;
	self->fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	ASSERT_LE(0, self->fd) TH_LOG("open: %s", strerror(errno));
	max = umcg_max_tasks(self->fd);
	ASSERT_LT(0, max);
	self->max_tasks = max;
	self->len = umcg_map_len(max);
	self->map = umcg_map(self->fd, self->len);
	ASSERT_NE(MAP_FAILED, self->map) TH_LOG("mmap: %s", strerror(errno));
	ASSERT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0, &off));
	self->me = &self->map[umcg_slot_idx(off)];
	/* WAIT and SWITCH of this thread return at once. */
	umcg_state_store(self->me, UMCG_TASK_RUNNING);
	self->unmapped = mmap(NULL, self->page, PROT_NONE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->unmapped);
}

FIXTURE_TEARDOWN(tbl)
{
	if (self->unmapped != MAP_FAILED)
		munmap(self->unmapped, self->page);
	if (self->fd >= 0)
		umcg_unreg(self->fd);
	if (self->map != MAP_FAILED)
		EXPECT_EQ(0, munmap(self->map, self->len));
	if (self->fd >= 0)
		EXPECT_EQ(0, close(self->fd));
	if (self->loaded)
		EXPECT_EQ(0, umcg_test_kmod_unload(UMCG_KMOD_NAME));
}

/* Every command, every malformation, from a registered thread. */
TEST_F(tbl, malformed_registered)
{
	int n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++) {
		for (int m = 0; m < M_NR; m++) {
			int ret = call_malformed(self->fd, &cmds[i], m,
						 self->unmapped,
						 umcg_gettid());

			EXPECT_EQ(-malforms[m].err, ret)
				TH_LOG("%s, %s: %s", cmds[i].name,
				       malforms[m].name, strerror(-ret));
			n++;
		}
	}
	/* None of them unregistered this thread or registered it twice. */
	EXPECT_EQ(-EBUSY, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0,
				   NULL));
	ASSERT_EQ(ARRAY_SIZE(cmds) * M_NR, n);
}

/* ... and from a process that does not own the file: never -EPERM. */
TEST_F(tbl, malformed_foreign)
{
	pid_t child, parent = umcg_gettid();
	int status;

	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		for (size_t i = 0; i < ARRAY_SIZE(cmds); i++) {
			for (int m = 0; m < M_NR; m++) {
				int ret = call_malformed(self->fd, &cmds[i], m,
							 self->unmapped,
							 parent);

				if (ret != -malforms[m].err) {
					fprintf(stderr, "# %s, %s: %s\n",
						cmds[i].name, malforms[m].name,
						strerror(-ret));
					_exit(1);
				}
			}
		}
		_exit(0);
	}
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("child status %#x", status);
}

/*
 * Results that cannot be copied back: GET_INFO and REGISTER read a
 * read-only argument fine but fail to write it; the REGISTER is undone.
 */
TEST_F(tbl, result_not_writable)
{
	const struct cmd *info = &cmds[0], *reg = &cmds[1];
	void *ro;
	int ret;

	ro = mmap(NULL, self->page, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, ro);

	arg_init(info, ro, info->ver0, 0);
	ASSERT_EQ(0, mprotect(ro, self->page, PROT_READ));
	ret = cmd_call(self->fd, info, info->ver0, ro);
	EXPECT_EQ(-EFAULT, ret) TH_LOG("GET_INFO: %s", strerror(-ret));

	/* This thread is registered: unregister it for the REGISTER. */
	ASSERT_EQ(0, umcg_unreg(self->fd));
	ASSERT_EQ(0, mprotect(ro, self->page, PROT_READ | PROT_WRITE));
	arg_init(reg, ro, reg->ver0, 0);
	((struct umcg_register_args *)ro)->flags = UMCG_REGISTER_SERVER;
	ASSERT_EQ(0, mprotect(ro, self->page, PROT_READ));
	ret = cmd_call(self->fd, reg, reg->ver0, ro);
	EXPECT_EQ(-EFAULT, ret) TH_LOG("REGISTER: %s", strerror(-ret));
	/* Not registered by the failed call. */
	EXPECT_EQ(-ENOENT, umcg_unreg(self->fd));
	EXPECT_EQ(0, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0, NULL));
	EXPECT_EQ(0, munmap(ro, self->page));
}

/* ---- tids ---- */

enum tid_kind {
	T_ZERO, T_MINUS1, T_NEG_MIN, T_ABOVE_INT_MAX, T_INT_MAX,
	T_NONEXISTENT, T_INIT, T_SIBLING, T_DEAD_WORKER, T_DEAD_SERVER,
	T_FOREIGN_SERVER, T_FOREIGN_WORKER, T_OWN_SERVER, T_OWN_WORKER,
	T_NR
};

/* Expected errno of WAKE, SWITCH, PREEMPT, REGISTER(worker, server_tid). */
enum { E_WAKE, E_SWITCH, E_PREEMPT, E_REGISTER, E_NR };

static const struct {
	const char *name;
	int err[E_NR];
} tid_rows[T_NR] = {
	[T_ZERO]	   = { "0", { ESRCH, ESRCH, ESRCH, 0 } },
	[T_MINUS1]	   = { "-1", { ESRCH, ESRCH, ESRCH, ESRCH } },
	[T_NEG_MIN]	   = { "INT_MIN", { ESRCH, ESRCH, ESRCH, ESRCH } },
	[T_ABOVE_INT_MAX]  = { "INT_MAX + 2", { ESRCH, ESRCH, ESRCH, ESRCH } },
	[T_INT_MAX]	   = { "INT_MAX", { ESRCH, ESRCH, ESRCH, ESRCH } },
	[T_NONEXISTENT]	   = { "no such pid", { ESRCH, ESRCH, ESRCH, ESRCH } },
	[T_INIT]	   = { "init", { ESRCH, ESRCH, ESRCH, ESRCH } },
	[T_SIBLING]	   = { "unregistered thread of the caller",
			       { ESRCH, ESRCH, ESRCH, ESRCH } },
	[T_DEAD_WORKER]	   = { "dead registered worker",
			       { ESRCH, ESRCH, ESRCH, ESRCH } },
	[T_DEAD_SERVER]	   = { "dead registered server",
			       { ESRCH, ESRCH, ESRCH, ESRCH } },
	[T_FOREIGN_SERVER] = { "another process's registered server",
			       { ESRCH, ESRCH, ESRCH, ESRCH } },
	[T_FOREIGN_WORKER] = { "another process's registered worker",
			       { ESRCH, ESRCH, ESRCH, ESRCH } },
	[T_OWN_SERVER]	   = { "the caller, a registered server",
			       { 0, 0, ESRCH, 0 } },
	[T_OWN_WORKER]	   = { "a registered worker of the caller's group",
			       { 0, 0, 0, ESRCH } },
};

struct helper {
	int fd;
	__u32 flags;
	__u32 server_tid;
	pthread_barrier_t *barrier;	/* NULL: exit at once */
	bool stay;			/* ... or never */
	_Atomic pid_t tid;
	int ret;
};

/* Registers as told; then waits at the barrier twice, or exits. */
static void *helper_fn(void *arg)
{
	struct helper *h = arg;

	if (h->flags)
		h->ret = umcg_reg(h->fd, h->flags, h->server_tid, 0, NULL);
	h->tid = umcg_gettid();
	while (h->stay)
		pause();
	if (h->barrier) {
		pthread_barrier_wait(h->barrier);
		pthread_barrier_wait(h->barrier);
		if (h->flags && !h->ret)
			umcg_unreg(h->fd);
	}
	return NULL;
}

/* A registered thread that exits registered; returns once its pid is gone. */
static pid_t dead_registered(struct __test_metadata *_metadata, int fd,
			     __u32 flags)
{
	struct helper h = { .fd = fd, .flags = flags };
	pthread_t th;
	int ret = 0;

	if (pthread_create(&th, NULL, helper_fn, &h))
		return 0;
	pthread_join(th, NULL);
	if (h.ret)
		return 0;
	/* pthread_join() returns a little before the kernel detaches it. */
	for (int i = 0; i < 5000; i++) {
		ret = umcg_wake(fd, h.tid);
		if (ret)
			break;
		umcg_sleep_ms(1);
	}
	EXPECT_EQ(-ESRCH, ret);
	return h.tid;
}

static pid_t nonexistent_pid(void)
{
	for (pid_t p = 4194303; p > 2; p--)
		if (kill(p, 0) && errno == ESRCH)
			return p;
	return 0;
}

/* REGISTER a new thread as a worker under @server_tid; 0 or -errno. */
static int reg_worker_under(int fd, __u32 server_tid)
{
	struct helper h = {
		.fd = fd,
		.flags = UMCG_REGISTER_WORKER,
		.server_tid = server_tid,
	};
	pthread_t th;

	if (pthread_create(&th, NULL, helper_fn, &h))
		return -EAGAIN;
	pthread_join(th, NULL);
	/* It exited registered if that worked: reclaimed later. */
	return h.ret;
}

TEST_F(tbl, tids)
{
	pthread_barrier_t barrier;
	struct helper sib = { .fd = self->fd }, wrk = { .fd = self->fd };
	pthread_t th_sib, th_wrk;
	__u32 tids[T_NR];
	int pipefd[2], status;
	pid_t child, ftid[2];

	ASSERT_EQ(0, pthread_barrier_init(&barrier, NULL, 3));
	sib.barrier = wrk.barrier = &barrier;
	wrk.flags = UMCG_REGISTER_WORKER;
	ASSERT_EQ(0, pthread_create(&th_sib, NULL, helper_fn, &sib));
	ASSERT_EQ(0, pthread_create(&th_wrk, NULL, helper_fn, &wrk));
	pthread_barrier_wait(&barrier);
	ASSERT_EQ(0, wrk.ret);

	/* Another process, its server and worker registered in its group. */
	ASSERT_EQ(0, pipe(pipefd));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		struct helper h = { .flags = UMCG_REGISTER_WORKER };
		pthread_t th;
		pid_t t[2];

		close(pipefd[0]);
		h.fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
		if (h.fd < 0 || umcg_reg(h.fd, UMCG_REGISTER_SERVER, 0, 0, NULL))
			_exit(1);
		h.server_tid = umcg_gettid();
		h.stay = true;
		if (pthread_create(&th, NULL, helper_fn, &h))
			_exit(2);
		while (!h.tid)
			umcg_sleep_ms(1);
		if (h.ret)
			_exit(3);
		t[0] = umcg_gettid();
		t[1] = h.tid;
		if (write(pipefd[1], t, sizeof(t)) != sizeof(t))
			_exit(4);
		for (;;)
			pause();
	}
	close(pipefd[1]);
	ASSERT_EQ(sizeof(ftid), read(pipefd[0], ftid, sizeof(ftid)));
	close(pipefd[0]);

	tids[T_ZERO] = 0;
	tids[T_MINUS1] = -1;
	tids[T_NEG_MIN] = (__u32)INT_MIN;
	tids[T_ABOVE_INT_MAX] = (__u32)INT_MAX + 2;
	tids[T_INT_MAX] = INT_MAX;
	tids[T_NONEXISTENT] = nonexistent_pid();
	tids[T_INIT] = 1;
	tids[T_SIBLING] = sib.tid;
	tids[T_DEAD_WORKER] = dead_registered(_metadata, self->fd,
					      UMCG_REGISTER_WORKER);
	tids[T_DEAD_SERVER] = dead_registered(_metadata, self->fd,
					      UMCG_REGISTER_SERVER);
	tids[T_FOREIGN_SERVER] = ftid[0];
	tids[T_FOREIGN_WORKER] = ftid[1];
	tids[T_OWN_SERVER] = umcg_gettid();
	tids[T_OWN_WORKER] = wrk.tid;
	ASSERT_NE(0, tids[T_NONEXISTENT]);
	ASSERT_NE(0, tids[T_DEAD_WORKER]);
	ASSERT_NE(0, tids[T_DEAD_SERVER]);
	/* The foreign threads are alive, just not ours. */
	ASSERT_EQ(0, kill(ftid[0], 0));

	for (int k = 0; k < T_NR; k++) {
		int got[E_NR];

		got[E_WAKE] = umcg_wake(self->fd, tids[k]);
		got[E_SWITCH] = umcg_switch(self->fd, tids[k], 0, 0);
		got[E_PREEMPT] = umcg_preempt(self->fd, tids[k]);
		got[E_REGISTER] = reg_worker_under(self->fd, tids[k]);
		EXPECT_EQ(-tid_rows[k].err[E_WAKE], got[E_WAKE])
			TH_LOG("WAKE %s (%d): %s", tid_rows[k].name,
			       (int)tids[k], strerror(-got[E_WAKE]));
		EXPECT_EQ(-tid_rows[k].err[E_SWITCH], got[E_SWITCH])
			TH_LOG("SWITCH %s (%d): %s", tid_rows[k].name,
			       (int)tids[k], strerror(-got[E_SWITCH]));
		EXPECT_EQ(-tid_rows[k].err[E_PREEMPT], got[E_PREEMPT])
			TH_LOG("PREEMPT %s (%d): %s", tid_rows[k].name,
			       (int)tids[k], strerror(-got[E_PREEMPT]));
		EXPECT_EQ(-tid_rows[k].err[E_REGISTER], got[E_REGISTER])
			TH_LOG("REGISTER worker under %s (%d): %s",
			       tid_rows[k].name, (int)tids[k],
			       strerror(-got[E_REGISTER]));
		/* Nothing above moved this thread's word. */
		EXPECT_EQ(UMCG_TASK_RUNNING, umcg_state_load(self->me))
			TH_LOG("after %s", tid_rows[k].name);
	}
	/* The other process's threads were not touched either. */
	EXPECT_EQ(0, waitpid(child, &status, WNOHANG));

	ASSERT_EQ(0, kill(child, SIGKILL));
	ASSERT_EQ(child, waitpid(child, &status, 0));
	/* Dead now, and still not ours. */
	EXPECT_EQ(-ESRCH, umcg_wake(self->fd, ftid[0]));
	pthread_barrier_wait(&barrier);
	pthread_join(th_sib, NULL);
	pthread_join(th_wrk, NULL);
	pthread_barrier_destroy(&barrier);
}

/* ---- The file used from a forked child ---- */

TEST_F(tbl, foreign_process)
{
	pid_t child, parent = umcg_gettid();
	int status;

	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		static const int errs[] = {
			0, EPERM, EPERM, EPERM, EPERM, EPERM, EPERM,
		};
		__u64 buf[ARG_MAX_SIZE / 8];
		int bad = 0;
		void *p;

		for (size_t i = 0; i < ARRAY_SIZE(cmds); i++) {
			const struct cmd *c = &cmds[i];
			int ret;

			arg_init(c, buf, c->ver0, parent);
			if (c->nr == UMCG_IOC_REGISTER)
				((struct umcg_register_args *)buf)->flags =
					UMCG_REGISTER_SERVER;
			ret = cmd_call(self->fd, c, c->ver0, buf);
			if (ret != -errs[i]) {
				fprintf(stderr, "# child: %s: %s\n", c->name,
					strerror(-ret));
				bad++;
			}
		}
		p = umcg_map(self->fd, self->len);
		if (p != MAP_FAILED || errno != EPERM) {
			fprintf(stderr, "# child: mmap: %s\n",
				p == MAP_FAILED ? strerror(errno) : "mapped");
			bad++;
		}
		_exit(bad ? 1 : 0);
	}
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("child status %#x", status);
	/* The parent's registration survived the attempts. */
	EXPECT_EQ(-EBUSY, umcg_reg(self->fd, UMCG_REGISTER_SERVER, 0, 0,
				   NULL));
	EXPECT_EQ(UMCG_TASK_RUNNING, umcg_state_load(self->me));
}

/* ---- mmap ---- */

TEST_F(tbl, mmap_table)
{
	const size_t len = self->len, page = self->page;
	const struct {
		const char *name;
		size_t len;
		off_t off;
		int prot;
		int flags;
		int err;
	} rows[] = {
		{ "valid", len, 0, PROT_READ | PROT_WRITE, MAP_SHARED, 0 },
		{ "valid, read-only", len, 0, PROT_READ, MAP_SHARED, 0 },
		{ "valid, MAP_SHARED_VALIDATE", len, 0, PROT_READ | PROT_WRITE,
		  MAP_SHARED_VALIDATE, 0 },
		{ "one page", page, 0, PROT_READ | PROT_WRITE, MAP_SHARED,
		  EINVAL },
		{ "a page short", len - page, 0, PROT_READ | PROT_WRITE,
		  MAP_SHARED, EINVAL },
		{ "tasks only", UMCG_MMAP_TASKS_SIZE(self->max_tasks, page), 0,
		  PROT_READ | PROT_WRITE, MAP_SHARED, EINVAL },
		{ "a page more", len + page, 0, PROT_READ | PROT_WRITE,
		  MAP_SHARED, EINVAL },
		{ "twice", 2 * len, 0, PROT_READ | PROT_WRITE, MAP_SHARED,
		  EINVAL },
		{ "offset one page", len, page, PROT_READ | PROT_WRITE,
		  MAP_SHARED, EINVAL },
		{ "offset of the events", len - page, len - page,
		  PROT_READ | PROT_WRITE, MAP_SHARED, EINVAL },
		{ "offset len", len, len, PROT_READ | PROT_WRITE, MAP_SHARED,
		  EINVAL },
		{ "offset 1 TiB", len, 1LL << 40, PROT_READ | PROT_WRITE,
		  MAP_SHARED, EINVAL },
		{ "offset not page-aligned", len, 1, PROT_READ | PROT_WRITE,
		  MAP_SHARED, EINVAL },
		{ "MAP_PRIVATE", len, 0, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		  EINVAL },
		{ "MAP_PRIVATE, read-only", len, 0, PROT_READ, MAP_PRIVATE,
		  EINVAL },
		{ "MAP_PRIVATE, offset one page", len, page,
		  PROT_READ | PROT_WRITE, MAP_PRIVATE, EINVAL },
	};

	for (size_t i = 0; i < ARRAY_SIZE(rows); i++) {
		void *p = mmap(NULL, rows[i].len, rows[i].prot, rows[i].flags,
			       self->fd, rows[i].off);
		int err = p == MAP_FAILED ? errno : 0;

		EXPECT_EQ(rows[i].err, err) TH_LOG("%s: %s", rows[i].name,
						   strerror(err));
		if (p == MAP_FAILED)
			continue;
		/* A valid mapping shows the same slots as the fixture's. */
		EXPECT_EQ(umcg_state_load(self->me),
			  umcg_state_load((struct umcg_task *)p +
					  (self->me - self->map)))
			TH_LOG("%s", rows[i].name);
		EXPECT_EQ(0, munmap(p, rows[i].len));
	}
}

TEST_HARNESS_MAIN
