// SPDX-License-Identifier: GPL-2.0
/*
 * native_lib.c - the native-blocking workload's C routine and its feeder
 * thread (native_lib.h says what a step does).
 *
 * Plain C on purpose: no libumcg, no bench.h, so that cgo and JNI build it
 * as it is.  Lock order: nb.qlock is a leaf (nothing is taken under it);
 * a pair's mutex (NB_MUTEX) is held across a push, which takes nb.qlock.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "native_lib.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

struct nb_task {
	_Atomic uint64_t done;
	uint64_t sink;		/* the busy loop's result, so it is not elided */
	int pipe[2];		/* NB_READ, NB_MUTEX: the feeder writes [1] */
	char *page;		/* NB_FAULT: the task's page of the mapping */
} __attribute__((aligned(64)));

struct nb_req {
	uint64_t deadline;	/* CLOCK_MONOTONIC ns */
	int task;
};

static struct {
	int variant, ntasks;
	uint64_t b_ns, iters;
	struct nb_task *t;
	pthread_mutex_t *pair;	/* NB_MUTEX: ntasks / 2 + 1 */
	/* NB_FAULT */
	int memfd, uffd;
	char *map, *src;
	size_t map_len, pagesz;
	/* The feeder's FIFO: every task has at most one request in it. */
	pthread_mutex_t qlock;
	struct nb_req *q;
	uint64_t qhead, qtail, qlast;
	_Atomic uint32_t qseq;
	_Atomic int feeder_stop;
	pthread_t feeder;
	_Atomic int stop;
	_Atomic int err;
	int live;
} nb = { .memfd = -1, .uffd = -1 };

int nb_feeder_fifo;

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static uint64_t spin(uint64_t n, uint64_t x)
{
	while (n--) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

double nb_iters_per_us(void)
{
	static double rate;
	const uint64_t n = 200000;
	uint64_t best = UINT64_MAX, sink = 1;

	if (rate)
		return rate;
	/* The thread's CPU clock: time it lost to others does not count. */
	for (int i = 0; i < 7; i++) {
		uint64_t t0 = now_ns(CLOCK_THREAD_CPUTIME_ID), d;

		sink = spin(n, sink | 1);
		d = now_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
		if (d && d < best)
			best = d;
	}
	rate = (double)n / ((double)best / 1e3) + (double)(sink & 0);
	return rate;
}

int nb_variant(const char *name)
{
	for (int v = 0; v < NB_NR_VARIANTS; v++)
		if (!strcmp(name, nb_variant_name(v)))
			return v;
	return -1;
}

const char *nb_variant_name(int variant)
{
	static const char *const names[] = { "read", "mutex", "fault" };

	return variant >= 0 && variant < NB_NR_VARIANTS ? names[variant] : "?";
}

static void futex_wait(_Atomic uint32_t *w, uint32_t val)
{
	syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, val, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void fail(int err)
{
	int zero = 0;

	atomic_compare_exchange_strong(&nb.err, &zero, err);
}

/* Asks the feeder to release @task B us from now. */
static void push(int task)
{
	uint64_t d = now_ns(CLOCK_MONOTONIC) + nb.b_ns;
	bool was_empty;

	pthread_mutex_lock(&nb.qlock);
	if (d < nb.qlast)	/* keep the FIFO in deadline order */
		d = nb.qlast;
	nb.qlast = d;
	nb.q[nb.qtail % nb.ntasks] = (struct nb_req){ d, task };
	was_empty = nb.qtail++ == nb.qhead;
	if (was_empty)
		atomic_fetch_add(&nb.qseq, 1);
	pthread_mutex_unlock(&nb.qlock);
	if (was_empty)
		futex_wake(&nb.qseq);
}

static void serve(const struct nb_req *r)
{
	struct nb_task *t = &nb.t[r->task];

	if (nb.variant == NB_FAULT) {
		struct uffdio_copy c = {
			.dst = (uintptr_t)t->page, .src = (uintptr_t)nb.src,
			.len = nb.pagesz, .mode = 0,
		};

		while (ioctl(nb.uffd, UFFDIO_COPY, &c) && errno != EEXIST) {
			if (errno != EAGAIN && errno != EINTR) {
				fail(-errno);
				return;
			}
			c.copy = 0;
		}
		return;
	}
	while (write(t->pipe[1], "x", 1) != 1)
		if (errno != EINTR) {
			fail(-errno);
			return;
		}
}

static void *feeder(void *arg)
{
	struct sched_param sp = { .sched_priority = 1 };

	(void)arg;
	prctl(PR_SET_TIMERSLACK, 1UL);
	/*
	 * The feeder stands for a device: its wake-ups should not wait behind
	 * the tasks (or the rest of a loaded machine), for any implementation.
	 * SCHED_FIFO where allowed (root); else it runs as a normal thread.
	 */
	nb_feeder_fifo = !pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
	pthread_setname_np(pthread_self(), "nb-feeder");
	for (;;) {
		struct nb_req r;
		struct timespec ts;
		uint32_t seq;

		pthread_mutex_lock(&nb.qlock);
		if (nb.qhead == nb.qtail) {
			seq = atomic_load(&nb.qseq);
			pthread_mutex_unlock(&nb.qlock);
			if (atomic_load(&nb.feeder_stop))
				return NULL;
			futex_wait(&nb.qseq, seq);
			continue;
		}
		r = nb.q[nb.qhead % nb.ntasks];
		pthread_mutex_unlock(&nb.qlock);
		/* Only the feeder pops: the head stays until it does. */
		if (now_ns(CLOCK_MONOTONIC) < r.deadline) {
			ts.tv_sec = r.deadline / 1000000000ull;
			ts.tv_nsec = r.deadline % 1000000000ull;
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			continue;
		}
		pthread_mutex_lock(&nb.qlock);
		nb.qhead++;
		pthread_mutex_unlock(&nb.qlock);
		serve(&r);
	}
}

void nb_compute(int task)
{
	struct nb_task *t = &nb.t[task];

	t->sink = spin(nb.iters, t->sink | 1);
}

int nb_block_read(int task)
{
	struct nb_task *t = &nb.t[task];
	char c;

	push(task);
	while (read(t->pipe[0], &c, 1) != 1)
		if (errno != EINTR) {
			fail(-errno);
			return -errno;
		}
	return 0;
}

static int block_fault(int task)
{
	struct nb_task *t = &nb.t[task];

	/* Out of the file: the next touch is a missing-page fault. */
	if (madvise(t->page, nb.pagesz, MADV_REMOVE)) {
		fail(-errno);
		return -errno;
	}
	push(task);
	t->sink += *(volatile char *)t->page;
	return 0;
}

int nb_count(int task)
{
	atomic_fetch_add_explicit(&nb.t[task].done, 1, memory_order_relaxed);
	return atomic_load_explicit(&nb.stop, memory_order_relaxed) ? 1 : 0;
}

int nb_step(int task)
{
	int ret;

	nb_compute(task);
	switch (nb.variant) {
	case NB_MUTEX: {
		pthread_mutex_t *m = &nb.pair[task / 2];

		pthread_mutex_lock(m);
		ret = nb_block_read(task);
		pthread_mutex_unlock(m);
		break;
	}
	case NB_FAULT:
		ret = block_fault(task);
		break;
	default:
		ret = nb_block_read(task);
	}
	return ret ? ret : nb_count(task);
}

void nb_stop(void)
{
	atomic_store(&nb.stop, 1);
}

void nb_snapshot(uint64_t *done, uint64_t *cpu_ns, uint64_t *wall_ns, long *ctxsw)
{
	struct rusage ru;
	uint64_t sum = 0;

	for (int i = 0; i < nb.ntasks; i++)
		sum += atomic_load_explicit(&nb.t[i].done, memory_order_relaxed);
	*done = sum;
	*cpu_ns = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	*wall_ns = now_ns(CLOCK_MONOTONIC);
	getrusage(RUSAGE_SELF, &ru);
	*ctxsw = ru.ru_nvcsw + ru.ru_nivcsw;
}

static int setup_fault(char *why, size_t len)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };

	nb.pagesz = sysconf(_SC_PAGESIZE);
	nb.map_len = nb.pagesz * nb.ntasks;
	nb.memfd = memfd_create("nb-fault", MFD_CLOEXEC);
	if (nb.memfd < 0 || ftruncate(nb.memfd, nb.map_len)) {
		snprintf(why, len, "memfd: %s", strerror(errno));
		return -errno;
	}
	nb.map = mmap(NULL, nb.map_len, PROT_READ | PROT_WRITE, MAP_SHARED, nb.memfd, 0);
	nb.src = mmap(NULL, nb.pagesz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		      -1, 0);
	if (nb.map == MAP_FAILED || nb.src == MAP_FAILED) {
		snprintf(why, len, "mmap: %s", strerror(errno));
		return -ENOMEM;
	}
	memset(nb.src, 'x', nb.pagesz);
	/* Faults from user mode are all it needs: allowed unprivileged. */
	nb.uffd = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	if (nb.uffd < 0 && errno == EINVAL)
		nb.uffd = syscall(SYS_userfaultfd, O_CLOEXEC);
	if (nb.uffd < 0) {
		snprintf(why, len, "userfaultfd: %s", strerror(errno));
		return -errno;
	}
	if (ioctl(nb.uffd, UFFDIO_API, &api)) {
		snprintf(why, len, "UFFDIO_API: %s", strerror(errno));
		return -errno;
	}
	reg.range.start = (uintptr_t)nb.map;
	reg.range.len = nb.map_len;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(nb.uffd, UFFDIO_REGISTER, &reg)) {
		snprintf(why, len, "UFFDIO_REGISTER (shmem, missing): %s", strerror(errno));
		return -errno;
	}
	for (int i = 0; i < nb.ntasks; i++)
		nb.t[i].page = nb.map + (size_t)i * nb.pagesz;
	return 0;
}

static void release(void)
{
	if (nb.t && nb.variant != NB_FAULT)
		for (int i = 0; i < nb.ntasks; i++) {
			if (nb.t[i].pipe[0] >= 0)
				close(nb.t[i].pipe[0]);
			if (nb.t[i].pipe[1] >= 0)
				close(nb.t[i].pipe[1]);
		}
	if (nb.pair)
		for (int i = 0; i < nb.ntasks / 2 + 1; i++)
			pthread_mutex_destroy(&nb.pair[i]);
	if (nb.uffd >= 0)
		close(nb.uffd);
	if (nb.map && nb.map != MAP_FAILED)
		munmap(nb.map, nb.map_len);
	if (nb.src && nb.src != MAP_FAILED)
		munmap(nb.src, nb.pagesz);
	if (nb.memfd >= 0)
		close(nb.memfd);
	free(nb.t);
	free(nb.pair);
	free(nb.q);
	memset(&nb, 0, sizeof(nb));
	nb.memfd = nb.uffd = -1;
}

int nb_setup(int variant, int ntasks, long c_us, long b_us, char *why, size_t len)
{
	struct rlimit rl;
	int ret;

	snprintf(why, len, "-");
	if (nb.live) {
		snprintf(why, len, "already set up");
		return -EBUSY;
	}
	if (variant < 0 || variant >= NB_NR_VARIANTS || ntasks < 1 || ntasks > NB_MAX_TASKS ||
	    c_us < 0 || c_us > 10000000 || b_us < 1 || b_us > 10000000) {
		snprintf(why, len, "bad variant, task count, C or B");
		return -EINVAL;
	}
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	nb.variant = variant;
	nb.ntasks = ntasks;
	nb.b_ns = (uint64_t)b_us * 1000;
	nb.iters = (uint64_t)(nb_iters_per_us() * c_us + 0.5);
	nb.t = aligned_alloc(64, sizeof(*nb.t) * ntasks);
	nb.q = calloc(ntasks, sizeof(*nb.q));
	nb.pair = calloc(ntasks / 2 + 1, sizeof(*nb.pair));
	if (!nb.t || !nb.q || !nb.pair) {
		snprintf(why, len, "out of memory");
		ret = -ENOMEM;
		goto out;
	}
	memset(nb.t, 0, sizeof(*nb.t) * ntasks);
	for (int i = 0; i < ntasks / 2 + 1; i++)
		pthread_mutex_init(&nb.pair[i], NULL);
	pthread_mutex_init(&nb.qlock, NULL);
	if (variant == NB_FAULT) {
		ret = setup_fault(why, len);
		if (ret)
			goto out;
	} else {
		for (int i = 0; i < ntasks; i++)
			nb.t[i].pipe[0] = nb.t[i].pipe[1] = -1;
		for (int i = 0; i < ntasks; i++)
			if (pipe2(nb.t[i].pipe, O_CLOEXEC)) {
				ret = -errno;
				snprintf(why, len, "pipe: %s (%d tasks)", strerror(errno), ntasks);
				goto out;
			}
	}
	ret = -pthread_create(&nb.feeder, NULL, feeder, NULL);
	if (ret) {
		snprintf(why, len, "pthread_create (feeder): %s", strerror(-ret));
		goto out;
	}
	nb.live = 1;
	return 0;
out:
	release();
	return ret;
}

int nb_teardown(void)
{
	int err;

	if (!nb.live)
		return -EINVAL;
	atomic_store(&nb.feeder_stop, 1);
	atomic_fetch_add(&nb.qseq, 1);
	futex_wake(&nb.qseq);
	pthread_join(nb.feeder, NULL);
	err = atomic_load(&nb.err);
	release();
	return err;
}
