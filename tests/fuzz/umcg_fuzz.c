// SPDX-License-Identifier: GPL-2.0
/*
 * umcg_fuzz - structured random calls into the kernel side of umcg, as root
 * and as nobody at once, in the guest.
 *
 *   umcg_fuzz [--calls N] [--seed S] [--threads T] [--stall-ms MS]
 *
 * Two fuzzing processes run side by side, one as root and one as nobody
 * (65534), each with T threads (default 4) and a picker.  Their threads
 * make random calls on /dev/umcg (every ioctl with random sizes, flags,
 * reserved fields, tids of their own, of the other process and garbage;
 * random ioctl numbers of the umcg magic; bad pointers; mmap, mremap,
 * madvise and munmap of the shared area with random lengths and offsets;
 * random stores into the shared area, the words the kernel reads: state,
 * server_tid, next_slot), register and unregister themselves as workers
 * and servers, sleep in the kernel (a block, when registered), exit
 * registered, fork children that call on the inherited
 * descriptors, interrupt each other with signals and reopen the device.
 * With our sched_ext scheduler loaded (the fuzzer loads it "--users" on a
 * kernel with sched_ext when none is), they also run each pinned command
 * program of the scheduler with random contexts and enter SCHED_EXT.
 *
 * A registered worker that blocks in the kernel is held until its word
 * reads RUNNING: each process's picker does what a library would, writing
 * RUNNING over RUNNABLE and waking every thread it knows.  A process that
 * makes no call for --stall-ms (default 3000) is killed with SIGKILL and
 * started again (counted: a hold nobody picked is allowed, an unkillable
 * process is not).
 *
 * Fails (exit 1) when a killed fuzzing process is not reaped within 20 s
 * (a thread the kernel side keeps from dying), when umcg.ko cannot be
 * unloaded after the campaign (a leaked reference), or when the scheduler
 * it found enabled is gone at the end.  Kernel errors (BUG, WARNING, Oops,
 * lockdep, KASAN, a sched_ext error exit) are found by the VM runner
 * (tools/vm/guest-run), which fails the program on any.  Prints the calls
 * made per user and per operation and a histogram of the error codes.
 * SKIPs (exit 4) unless root with umcg.ko built for the running kernel.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/bpf.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <uapi/umcg.h>

#include "umcg_test.h"

#define FZ_SKIP		4
#define FZ_NOBODY	65534
#define FZ_MAX_THREADS	16
#define FZ_MAX_TIDS	(2 * (FZ_MAX_THREADS + 1))
#define FZ_MAX_PROGS	8
#define FZ_MAX_ERRNO	160
#define FZ_SCHED_EXT	7

enum fz_op {
	FZ_INFO, FZ_REGISTER, FZ_UNREGISTER, FZ_WAIT, FZ_WAKE, FZ_SWITCH,
	FZ_PREEMPT, FZ_RAW_IOCTL, FZ_BAD_PTR, FZ_MMAP, FZ_MADVISE, FZ_STORE,
	FZ_SIGNAL, FZ_FORK, FZ_EXIT, FZ_REOPEN, FZ_SCX_RUN, FZ_SCX_POLICY,
	FZ_BLOCK, FZ_NR_OPS
};

static const char *const fz_op_name[FZ_NR_OPS] = {
	"info", "register", "unregister", "wait", "wake", "switch", "preempt",
	"raw_ioctl", "bad_ptr", "mmap", "madvise", "store", "signal", "fork",
	"exit", "reopen", "scx_run", "scx_policy", "block",
};

/* One fuzzing process's counters, in memory shared with the parent. */
struct fz_proc_stats {
	_Atomic uint64_t calls;
	_Atomic uint64_t op[FZ_NR_OPS];
	_Atomic uint64_t err[FZ_MAX_ERRNO + 1];	/* [0]: successes */
	_Atomic uint64_t restarts;	/* stalled: killed, started again */
	_Atomic uint64_t deaths;	/* died by itself: started again */
	_Atomic int tids[FZ_MAX_THREADS + 1];
};

struct fz_shared {
	struct fz_proc_stats proc[2];	/* 0 root, 1 nobody */
};

static struct fz_shared *sh;
static unsigned int nr_threads = 4;
static uint64_t seed0;

/* ---- one fuzzing process ---- */

struct fz_proc {
	int who;			/* 0 root, 1 nobody */
	_Atomic int fd[2];		/* the device, opened twice */
	void *area;			/* the picker's mapping, or NULL */
	size_t area_len;
	uint32_t max_tasks;
	/*
	 * Slots below this have their words mapped: the module fills the
	 * area a page of words at a time, lowest first, as REGISTER needs
	 * them (a touch elsewhere is SIGBUS).
	 */
	_Atomic uint32_t present;
	int progs[FZ_MAX_PROGS];	/* scx command programs */
	int nr_progs;
	bool scx;
};

static struct fz_proc P;

static void fz_count(int op, long ret)
{
	struct fz_proc_stats *s = &sh->proc[P.who];
	int e = ret < 0 ? (int)-ret : 0;

	atomic_fetch_add_explicit(&s->calls, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->op[op], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->err[e > FZ_MAX_ERRNO ? FZ_MAX_ERRNO : e], 1,
				  memory_order_relaxed);
}

static uint32_t fz_rand(unsigned int *seed)
{
	return (uint32_t)rand_r(seed) << 16 ^ (uint32_t)rand_r(seed);
}

static void fz_one_child(unsigned int *seed);

static long fz_ret(long r)
{
	return r < 0 ? -errno : r;
}

/* A tid worth trying: ours, the other process's, or garbage. */
static uint32_t fz_tid(unsigned int *seed)
{
	uint32_t r = fz_rand(seed);

	switch (r % 8) {
	case 0: return 0;
	case 1: return r >> 3;
	case 2: return 1;
	case 3: return (uint32_t)syscall(SYS_gettid);
	default:
		return atomic_load(&sh->proc[(r >> 3) & 1].tids[(r >> 4) % (nr_threads + 1)]);
	}
}

/* Mostly zero, sometimes anything: a field that must be zero. */
static uint64_t fz_reserved(unsigned int *seed)
{
	uint32_t r = fz_rand(seed);

	return r % 16 ? 0 : ((uint64_t)fz_rand(seed) << 32 | fz_rand(seed));
}

/* An argument size: mostly right, sometimes short, long or absurd. */
static uint32_t fz_size(unsigned int *seed, uint32_t right)
{
	uint32_t r = fz_rand(seed);

	switch (r % 10) {
	case 0: return 0;
	case 1: return (r >> 4) % 256;
	case 2: return right + 8;
	case 3: return right - 4;
	default: return right;
	}
}

static int fz_fd(unsigned int *seed)
{
	return atomic_load(&P.fd[fz_rand(seed) & 1]);
}

/* An ioctl number of @cmd's type and nr with a random size (extensible). */
static unsigned long fz_cmd(unsigned int *seed, unsigned long cmd, uint32_t size)
{
	if (fz_rand(seed) % 4)
		return cmd;
	return _IOC(_IOC_DIR(cmd), _IOC_TYPE(cmd), _IOC_NR(cmd), size & _IOC_SIZEMASK);
}

static long fz_ioctl(int op, unsigned int *seed, unsigned long cmd, void *arg,
		     uint32_t right)
{
	uint32_t *size = arg;
	long ret;

	*size = fz_size(seed, right);
	ret = fz_ret(ioctl(fz_fd(seed), fz_cmd(seed, cmd, *size), arg));
	fz_count(op, ret);
	return ret;
}

/* A REGISTER returned @task_off: the page of words holding it is there. */
static void fz_present(uint64_t task_off)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t end = (task_off / pg + 1) * pg / sizeof(struct umcg_task);
	uint32_t cur = atomic_load(&P.present);

	if (end > P.max_tasks)
		end = P.max_tasks;
	while (cur < end && !atomic_compare_exchange_weak(&P.present, &cur, (uint32_t)end))
		;
}

static void fz_one(unsigned int *seed)
{
	uint32_t r = fz_rand(seed);
	int op = r % FZ_NR_OPS;
	union {
		struct umcg_info info;
		struct umcg_register_args reg;
		struct umcg_unregister_args unreg;
		struct umcg_wait_args wait;
		struct umcg_wake_args wake;
		struct umcg_switch_args sw;
		struct umcg_preempt_args pre;
		unsigned char raw[256];
	} a;

	memset(&a, 0, sizeof(a));
	switch (op) {
	case FZ_INFO:
		a.info.flags = fz_reserved(seed);
		a.info.reserved[fz_rand(seed) % 3] = fz_reserved(seed);
		fz_ioctl(op, seed, UMCG_IOC_GET_INFO, &a, sizeof(a.info));
		break;
	case FZ_REGISTER:
		a.reg.flags = fz_rand(seed) % 8 ? 1U << (fz_rand(seed) % 2) :
			      fz_rand(seed);
		a.reg.server_tid = a.reg.flags == UMCG_REGISTER_SERVER &&
				   fz_rand(seed) % 4 ? 0 : fz_tid(seed);
		a.reg.cpu = fz_rand(seed) % 4 ? fz_rand(seed) % 3 : fz_rand(seed);
		a.reg.task_off = fz_rand(seed);
		a.reg.reserved[fz_rand(seed) % 2] = fz_reserved(seed);
		if (!fz_ioctl(op, seed, UMCG_IOC_REGISTER, &a, sizeof(a.reg)))
			fz_present(a.reg.task_off);
		break;
	case FZ_UNREGISTER:
		a.unreg.flags = fz_reserved(seed);
		fz_ioctl(op, seed, UMCG_IOC_UNREGISTER, &a, sizeof(a.unreg));
		break;
	case FZ_WAIT:
		/* Never a wait without a timeout: nobody would end it. */
		a.wait.flags = fz_rand(seed) % 8 ? 0 : fz_rand(seed) % 4;
		a.wait.timeout_ns = 1 + fz_rand(seed) % 2000000;
		if (a.wait.flags & UMCG_WAIT_ABSTIME)
			a.wait.timeout_ns = fz_rand(seed) % 2 ? 1 : UINT64_MAX;
		if (a.wait.flags & UMCG_WAIT_ABSTIME && a.wait.timeout_ns == UINT64_MAX)
			a.wait.flags = 0, a.wait.timeout_ns = 1000;
		fz_ioctl(op, seed, UMCG_IOC_WAIT, &a, sizeof(a.wait));
		break;
	case FZ_WAKE:
		a.wake.flags = fz_reserved(seed);
		a.wake.tid = fz_tid(seed);
		a.wake.pad = fz_reserved(seed);
		fz_ioctl(op, seed, UMCG_IOC_WAKE, &a, sizeof(a.wake));
		break;
	case FZ_SWITCH:
		a.sw.flags = fz_rand(seed) % 8 ? 0 : fz_rand(seed) % 4;
		a.sw.next_tid = fz_tid(seed);
		a.sw.pad = fz_reserved(seed);
		a.sw.timeout_ns = 1 + fz_rand(seed) % 2000000;
		if (a.sw.flags & UMCG_WAIT_ABSTIME)
			a.sw.timeout_ns = 1;
		fz_ioctl(op, seed, UMCG_IOC_SWITCH, &a, sizeof(a.sw));
		break;
	case FZ_PREEMPT:
		a.pre.flags = fz_reserved(seed);
		a.pre.tid = fz_tid(seed);
		a.pre.pad = fz_reserved(seed);
		fz_ioctl(op, seed, UMCG_IOC_PREEMPT, &a, sizeof(a.pre));
		break;
	case FZ_RAW_IOCTL: {
		unsigned long cmd = _IOC(fz_rand(seed) % 4, fz_rand(seed) % 8 ? UMCG_IOC_MAGIC :
					 fz_rand(seed) & 0xff, fz_rand(seed) % 16,
					 fz_rand(seed) % 256);

		for (unsigned int i = 0; i < sizeof(a.raw); i += 4)
			*(uint32_t *)&a.raw[i] = fz_rand(seed) % 2 ? fz_tid(seed) : fz_rand(seed);
		fz_count(op, fz_ret(ioctl(fz_fd(seed), cmd, &a)));
		break;
	}
	case FZ_BAD_PTR: {
		static const unsigned long cmds[] = {
			UMCG_IOC_GET_INFO, UMCG_IOC_REGISTER, UMCG_IOC_UNREGISTER,
			UMCG_IOC_WAIT, UMCG_IOC_WAKE, UMCG_IOC_SWITCH, UMCG_IOC_PREEMPT,
		};
		void *bad[] = { NULL, (void *)1, (void *)-4096L, (void *)0xffff888000000000UL,
				(char *)&a + sizeof(a) - 2 };

		fz_count(op, fz_ret(ioctl(fz_fd(seed), cmds[fz_rand(seed) % 7],
					  bad[fz_rand(seed) % 5])));
		break;
	}
	case FZ_MMAP: {
		long pg = sysconf(_SC_PAGESIZE);
		size_t right = UMCG_MMAP_SIZE(P.max_tasks ? P.max_tasks : 1, pg);
		size_t len = fz_rand(seed) % 2 ? right : (size_t)(fz_rand(seed) % 512) * (size_t)pg;
		off_t off = fz_rand(seed) % 4 ? 0 : (off_t)(fz_rand(seed) % 8) * pg;
		int prot = fz_rand(seed) % 4 ? PROT_READ | PROT_WRITE : fz_rand(seed) % 8;
		int flags = fz_rand(seed) % 4 ? MAP_SHARED : MAP_PRIVATE;
		void *m = mmap(NULL, len, prot, flags, fz_fd(seed), off);

		fz_count(op, m == MAP_FAILED ? -errno : 0);
		if (m == MAP_FAILED)
			break;
		if (fz_rand(seed) % 2) {
			size_t grown = len + pg * (1 + fz_rand(seed) % 4);
			void *n = mremap(m, len, grown, MREMAP_MAYMOVE);

			fz_count(op, n == MAP_FAILED ? -errno : 0);
			if (n != MAP_FAILED) {
				m = n;
				len = grown;
			}
		}
		if (fz_rand(seed) % 2) {
			int adv[] = { MADV_DOFORK, MADV_DONTFORK, MADV_DONTNEED, MADV_WILLNEED,
				      MADV_DONTDUMP };

			fz_count(op, fz_ret(madvise(m, pg, adv[fz_rand(seed) % 5])));
		}
		fz_count(op, fz_ret(munmap(m, len)));
		break;
	}
	case FZ_MADVISE: {
		/*
		 * On a mapping of its own, so that the picker's stays as it
		 * is (a zapped page of the module's would only be faulted in
		 * again).
		 */
		long pg = sysconf(_SC_PAGESIZE);
		size_t len = UMCG_MMAP_SIZE(P.max_tasks ? P.max_tasks : 1, pg);
		void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fz_fd(seed), 0);
		int adv[] = { MADV_DOFORK, MADV_DONTFORK, MADV_DONTNEED, MADV_WILLNEED,
			      MADV_DODUMP, MADV_REMOVE, MADV_FREE, MADV_COLD };

		fz_count(op, m == MAP_FAILED ? -errno : 0);
		if (m == MAP_FAILED)
			break;
		fz_count(op, fz_ret(madvise((char *)m + (fz_rand(seed) % 4) * pg,
					    pg * (1 + fz_rand(seed) % 4),
					    adv[fz_rand(seed) % 8])));
		fz_count(op, fz_ret(munmap(m, len)));
		break;
	}
	case FZ_STORE:
		if (P.area && atomic_load(&P.present)) {
			struct umcg_task *t = (struct umcg_task *)P.area +
					      fz_rand(seed) % atomic_load(&P.present);
			uint32_t v = fz_rand(seed);

			switch (fz_rand(seed) % 4) {
			case 0: atomic_store((_Atomic uint32_t *)&t->state,
					     v % 2 ? v : (v >> 1) % 7); break;
			case 1: atomic_store((_Atomic uint32_t *)&t->server_tid, fz_tid(seed)); break;
			case 2: atomic_store((_Atomic uint32_t *)&t->next_slot,
					     v % 2 ? v : UMCG_NEXT_SLOT(v % P.max_tasks)); break;
			default: atomic_store((_Atomic uint32_t *)&t->next_tid, fz_tid(seed)); break;
			}
			fz_count(op, 0);
		}
		break;
	case FZ_SIGNAL: {
		uint32_t tid = atomic_load(&sh->proc[P.who].tids[fz_rand(seed) % (nr_threads + 1)]);

		if (tid)
			fz_count(op, fz_ret(syscall(SYS_tgkill, getpid(), tid, SIGUSR1)));
		break;
	}
	case FZ_FORK:
		if (fz_rand(seed) % 16 == 0) {
			pid_t pid = fork();

			if (pid == 0) {
				/* The child: every call on the parent's files is refused. */
				for (int i = 0; i < 8; i++)
					fz_one_child(seed);
				_exit(0);
			}
			fz_count(op, pid < 0 ? -errno : 0);
			if (pid > 0)
				waitpid(pid, NULL, 0);
		}
		break;
	case FZ_REOPEN:
		if (fz_rand(seed) % 8 == 0) {
			int fd = open("/dev/umcg", O_RDWR | O_CLOEXEC), slot = fz_rand(seed) & 1;

			fz_count(op, fd < 0 ? -errno : 0);
			if (fd >= 0) {
				int old = atomic_exchange(&P.fd[slot], fd);

				close(old);
			}
		}
		break;
	case FZ_SCX_RUN:
		if (P.nr_progs) {
			union bpf_attr attr;
			unsigned char ctx[512];
			uint32_t len = fz_rand(seed) % sizeof(ctx);

			for (unsigned int i = 0; i < sizeof(ctx); i += 4)
				*(uint32_t *)&ctx[i] = fz_rand(seed) % 3 ? fz_tid(seed) :
						       fz_rand(seed) % 2 ? fz_rand(seed) % 64 :
						       fz_rand(seed);
			memset(&attr, 0, sizeof(attr));
			attr.test.prog_fd = P.progs[fz_rand(seed) % P.nr_progs];
			attr.test.ctx_in = (uintptr_t)ctx;
			attr.test.ctx_size_in = len;
			if (fz_rand(seed) % 8 == 0)
				attr.test.flags = fz_rand(seed);
			if (fz_rand(seed) % 8 == 0)
				attr.test.cpu = fz_rand(seed) % 4;
			fz_count(op, fz_ret(syscall(SYS_bpf, BPF_PROG_TEST_RUN, &attr,
						    sizeof(attr))));
		}
		break;
	case FZ_SCX_POLICY:
		if (P.scx) {
			struct sched_param sp = { 0 };

			fz_count(op, fz_ret(sched_setscheduler(0, fz_rand(seed) % 3 ?
							       FZ_SCHED_EXT : SCHED_OTHER, &sp)));
		}
		break;
	case FZ_BLOCK: {
		/* A sleep in the kernel: a block of a registered worker. */
		struct timespec ts = { 0, fz_rand(seed) % 200000 };

		fz_count(op, fz_ret(nanosleep(&ts, NULL)));
		break;
	}
	case FZ_EXIT:
		/* Handled by the thread loop: it exits, a new thread replaces it. */
		break;
	}
}

/* In a forked child: the same calls, which must all be refused or harmless. */
static void fz_one_child(unsigned int *seed)
{
	P.area = NULL;	/* not inherited (VM_DONTCOPY) unless madvised back */
	atomic_store(&P.present, 0);
	P.nr_progs = 0;
	fz_one(seed);
}

static void *fz_thread(void *arg);

static void fz_spawn(unsigned int idx)
{
	pthread_t t;
	pthread_attr_t at;

	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256 * 1024);
	if (pthread_create(&t, &at, fz_thread, (void *)(uintptr_t)idx))
		atomic_store(&sh->proc[P.who].tids[idx], 0);
	pthread_attr_destroy(&at);
}

static void *fz_thread(void *arg)
{
	unsigned int idx = (uintptr_t)arg;
	unsigned int seed = (unsigned int)(seed0 ^ (idx * 2654435761U) ^
					   (uint32_t)syscall(SYS_gettid) * 40503U);

	atomic_store(&sh->proc[P.who].tids[idx], (int)syscall(SYS_gettid));
	for (;;) {
		if (fz_rand(&seed) % 4096 == 0) {
			/* Exit, maybe registered: a new thread takes the index. */
			fz_count(FZ_EXIT, 0);
			fz_spawn(idx);
			return NULL;
		}
		fz_one(&seed);
	}
}

/*
 * The picker: what a library would do for held workers, so that the
 * fuzzing threads keep going: RUNNABLE -> RUNNING, then wake them all.
 */
static void *fz_picker(void *arg)
{
	unsigned int seed = (unsigned int)seed0 ^ 0x5bd1e995U;

	(void)arg;
	atomic_store(&sh->proc[P.who].tids[nr_threads], (int)syscall(SYS_gettid));
	for (;;) {
		struct timespec ts = { 0, 200000 };

		for (uint32_t i = 0; P.area && i < atomic_load(&P.present); i++) {
			_Atomic uint32_t *w = (_Atomic uint32_t *)&((struct umcg_task *)P.area)[i].state;
			uint32_t s = atomic_load(w);

			if ((s & UMCG_TASK_STATE_MASK) == UMCG_TASK_RUNNABLE)
				atomic_compare_exchange_strong(w, &s,
					(s & ~UMCG_TASK_STATE_MASK) | UMCG_TASK_RUNNING);
		}
		for (unsigned int i = 0; i < nr_threads; i++) {
			struct umcg_wake_args w = {
				.size = sizeof(w),
				.tid = atomic_load(&sh->proc[P.who].tids[i]),
			};

			if (w.tid)
				ioctl(fz_fd(&seed), UMCG_IOC_WAKE, &w);
		}
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void fz_sigusr1(int sig)
{
	(void)sig;
}

/* Open the scheduler's command programs in its pin directory, if we may. */
static void fz_open_progs(void)
{
	const char *dir = "/sys/fs/bpf/umcg";
	struct dirent *e;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((e = readdir(d)) && P.nr_progs < FZ_MAX_PROGS) {
		char path[300];
		union bpf_attr attr;
		struct bpf_prog_info info;
		int fd;

		if (e->d_name[0] == '.' || strcmp(e->d_name, "link") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		memset(&attr, 0, sizeof(attr));
		attr.pathname = (uintptr_t)path;
		attr.file_flags = BPF_F_RDONLY;
		fd = syscall(SYS_bpf, BPF_OBJ_GET, &attr, sizeof(attr));
		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		memset(&attr, 0, sizeof(attr));
		attr.info.bpf_fd = fd;
		attr.info.info_len = sizeof(info);
		attr.info.info = (uintptr_t)&info;
		if (syscall(SYS_bpf, BPF_OBJ_GET_INFO_BY_FD, &attr, sizeof(attr)) == 0 &&
		    info.type == BPF_PROG_TYPE_SYSCALL)
			P.progs[P.nr_progs++] = fd;
		else
			close(fd);
	}
	closedir(d);
}

static void __attribute__((noreturn)) fz_proc_run(int who, bool scx)
{
	struct umcg_info info = { .size = sizeof(info) };
	struct sigaction sa = { .sa_handler = fz_sigusr1 };
	pthread_t picker;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	P.who = who;
	P.scx = scx;
	if (scx)
		fz_open_progs();	/* as root: before dropping privileges */
	if (who == 1) {
		for (int i = 0; i < P.nr_progs; i++)
			close(P.progs[i]);
		P.nr_progs = 0;
		if (umcg_test_drop_to(FZ_NOBODY, FZ_NOBODY))
			_exit(3);
		if (scx)
			fz_open_progs();	/* as nobody: what "--users" gives */
	}
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < 2; i++) {
		int fd = open("/dev/umcg", O_RDWR | O_CLOEXEC);

		if (fd < 0)
			_exit(5);
		atomic_store(&P.fd[i], fd);
	}
	if (ioctl(P.fd[0], UMCG_IOC_GET_INFO, &info) == 0) {
		long pg = sysconf(_SC_PAGESIZE);

		P.max_tasks = info.max_tasks;
		P.area_len = UMCG_MMAP_SIZE(info.max_tasks, pg);
		P.area = mmap(NULL, P.area_len, PROT_READ | PROT_WRITE, MAP_SHARED, P.fd[0], 0);
		if (P.area == MAP_FAILED)
			P.area = NULL;
	}
	pthread_create(&picker, NULL, fz_picker, NULL);
	for (unsigned int i = 0; i < nr_threads; i++)
		fz_spawn(i);
	for (;;)
		pause();
}

/* ---- the parent ---- */

static uint64_t fz_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

/* SIGKILL @pid and reap it within 20 s; false if it would not die. */
static bool fz_kill(pid_t pid)
{
	uint64_t end = fz_now_ms() + 20000;

	if (pid <= 0)
		return true;
	kill(pid, SIGKILL);
	while (fz_now_ms() < end) {
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return true;
		usleep(10000);
	}
	return false;
}

/* Start (again) the fuzzing process of user @w. */
static void fz_start(int w, bool scx, pid_t *pid, uint64_t *start, uint64_t *since)
{
	*start = sh->proc[w].calls;
	*since = fz_now_ms();
	*pid = fork();
	if (*pid == 0)
		fz_proc_run(w, scx);
}

static void fz_report(const char *who, struct fz_proc_stats *s)
{
	char line[2048];
	int n = 0;

	printf("# %s: %llu calls; %llu restarts after a stall, %llu after the process "
	       "died of a fuzzed call\n", who, (unsigned long long)s->calls,
	       (unsigned long long)s->restarts, (unsigned long long)s->deaths);
	for (int i = 0; i < FZ_NR_OPS; i++)
		n += snprintf(line + n, sizeof(line) - n, " %s=%llu", fz_op_name[i],
			      (unsigned long long)s->op[i]);
	printf("#   per operation:%s\n", line);
	n = snprintf(line, sizeof(line), " ok=%llu", (unsigned long long)s->err[0]);
	for (int e = 1; e <= FZ_MAX_ERRNO; e++)
		if (s->err[e])
			n += snprintf(line + n, sizeof(line) - n, " %s=%llu",
				      e == FZ_MAX_ERRNO ? "other" : strerrorname_np(e),
				      (unsigned long long)s->err[e]);
	printf("#   results:%s\n", line);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "calls", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 't' },
		{ "stall-ms", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	uint64_t calls = 20000, stall_ms = 3000, last[2] = { 0 }, since[2];
	uint64_t start[2];
	unsigned int barren[2] = { 0 };
	char path[4096], ops[64];
	bool kmod_loaded = false, scx_loaded = false, scx = false, ok = true;
	pid_t pid[2];
	int c, ret;

	seed0 = (uint64_t)time(NULL);
	while ((c = getopt_long(argc, argv, "n:s:t:S:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n': calls = strtoull(optarg, NULL, 0); break;
		case 's': seed0 = strtoull(optarg, NULL, 0); break;
		case 't':
			nr_threads = strtoul(optarg, NULL, 0);
			if (nr_threads < 1 || nr_threads > FZ_MAX_THREADS) {
				fprintf(stderr, "umcg_fuzz: --threads takes 1 to %d\n",
					FZ_MAX_THREADS);
				return 2;
			}
			break;
		case 'S': stall_ms = strtoull(optarg, NULL, 0); break;
		case 'h':
			printf("Usage: umcg_fuzz [--calls N] [--seed S] [--threads T] "
			       "[--stall-ms MS]\n  N calls as root and N as nobody "
			       "(default 20000 each)\n");
			return 0;
		default:
			return 2;
		}
	}
	printf("TAP version 13\n1..1\n");
	if (geteuid() != 0) {
		printf("ok 1 umcg_fuzz # SKIP needs root (it fuzzes as root and as nobody)\n");
		return FZ_SKIP;
	}
	if (umcg_test_kernel_path(path, sizeof(path), "kmod", "umcg.ko") || access(path, R_OK)) {
		printf("ok 1 umcg_fuzz # SKIP no umcg.ko for this kernel (%s)\n", path);
		return FZ_SKIP;
	}
	ret = umcg_test_kmod_load(path);
	if (ret && ret != -EEXIST) {
		printf("not ok 1 umcg_fuzz # loading %s: %s\n", path, strerror(-ret));
		return 1;
	}
	kmod_loaded = ret == 0;
	if (access(UMCG_TEST_SCX_SYSFS, F_OK) == 0) {
		if (umcg_test_scx_state(ops, sizeof(ops)) == 0) {
			ret = umcg_test_umcgctl("load --users", true);
			scx_loaded = ret == 0;
		}
		scx = umcg_test_scx_state(ops, sizeof(ops)) == 1;
	}
	printf("# seed %llu, %llu calls per user, %u threads per process, sched_ext %s\n",
	       (unsigned long long)seed0, (unsigned long long)calls, nr_threads,
	       scx ? "scheduler loaded: its command programs too" : "not used");
	fflush(stdout);

	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		printf("not ok 1 umcg_fuzz # mmap: %s\n", strerror(errno));
		return 1;
	}
	for (int w = 0; w < 2; w++)
		fz_start(w, scx, &pid[w], &start[w], &since[w]);
	while (ok && (sh->proc[0].calls < calls || sh->proc[1].calls < calls)) {
		usleep(100000);
		for (int w = 0; w < 2 && ok; w++) {
			const char *who = w ? "nobody" : "root";
			uint64_t n = sh->proc[w].calls;
			int status;

			if (pid[w] <= 0)
				continue;
			if (waitpid(pid[w], &status, WNOHANG) == pid[w]) {
				/* Died of a fuzzed call (a signal, a store): again. */
				sh->proc[w].deaths++;
				barren[w] = n == start[w] ? barren[w] + 1 : 0;
				if (barren[w] >= 20) {
					printf("# %s's fuzzing process died 20 times in a row "
					       "before its first call (last status 0x%x)\n",
					       who, status);
					ok = false;
					pid[w] = -1;
					break;
				}
				fz_start(w, scx, &pid[w], &start[w], &since[w]);
				continue;
			}
			if (n >= calls) {
				if (!fz_kill(pid[w]))
					ok = false;
				pid[w] = -1;
				continue;
			}
			if (n != last[w]) {
				last[w] = n;
				since[w] = fz_now_ms();
			} else if (fz_now_ms() - since[w] > stall_ms) {
				sh->proc[w].restarts++;
				if (!fz_kill(pid[w])) {
					printf("# %s's fuzzing process %d did not die within 20 s "
					       "of SIGKILL\n", who, pid[w]);
					ok = false;
					break;
				}
				fz_start(w, scx, &pid[w], &start[w], &since[w]);
			}
		}
	}
	for (int w = 0; w < 2; w++)
		if (pid[w] > 0 && !fz_kill(pid[w]))
			ok = false;
	fz_report("root", &sh->proc[0]);
	fz_report("nobody", &sh->proc[1]);
	printf("# total: %llu calls\n",
	       (unsigned long long)(sh->proc[0].calls + sh->proc[1].calls));

	if (scx && umcg_test_scx_state(ops, sizeof(ops)) != 1) {
		printf("# the umcg sched_ext scheduler is gone after the campaign\n");
		ok = false;
	}
	if (scx_loaded)
		umcg_test_scx_put();
	if (kmod_loaded) {
		uint64_t end = fz_now_ms() + 10000;

		while ((ret = umcg_test_kmod_unload("umcg")) && fz_now_ms() < end)
			usleep(100000);
		if (ret) {
			printf("# umcg.ko cannot be unloaded after the campaign: %s\n",
			       strerror(-ret));
			ok = false;
		}
	}
	printf("%s 1 umcg_fuzz\n", ok ? "ok" : "not ok");
	return ok ? 0 : 1;
}
