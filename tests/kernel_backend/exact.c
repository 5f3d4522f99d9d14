// SPDX-License-Identifier: GPL-2.0
/*
 * exact - C1 is exact on a kernel backend (kernel_backend.h: "kmod" or
 * "scx"): with one managed core no two workers ever execute user code at
 * the same time (with two, never more than two, never two on one core),
 * although the workers keep blocking in
 * the kernel behind libumcg's back and are woken by plain threads:
 *
 *   reader    read() on a pipe a plain thread writes to
 *   sleeper   nanosleep()
 *   waiter    pthread_cond_wait() (a futex inside glibc), signalled by a
 *             plain thread, and the contended pthread_mutex around it
 *   faulter   page faults on a MAP_SHARED file mapping whose page cache
 *             was dropped (the fault reads the file: it sleeps)
 *   spinner   busy, yields between slices: the core is never idle
 *
 * Each worker counts itself in and out of "slices" of user code (a busy
 * loop between the blocking calls); the test fails if two slices ever
 * overlap on a core or more than nr_cores overlap at all.  A woken worker
 * that ran before the policy picked it would overlap the core's owner:
 * under the user backend this test fails (its C1 exception).
 */
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "kselftest_harness.h"

#include <umcg.h>
#include <umcg/policy.h>

#include "kernel_backend.h"

#define EX_ROUNDS	25
#define EX_SLICE_NS	(200 * 1000ULL)
#define EX_MAX_CORES	2

enum ex_kind { EX_READER, EX_SLEEPER, EX_WAITER, EX_FAULTER, EX_SPINNER, EX_KINDS };

static const char *const ex_names[EX_KINDS] = {
	"reader", "sleeper", "waiter", "faulter", "spinner",
};

struct ex_run {
	unsigned int nr_cores;
	int pipefd[2];
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned long tick;		/* under lock */
	const char *map;
	size_t map_len;
	int map_fd;
	_Atomic int stop_feeder;
	_Atomic int running, max_running;
	_Atomic int on_core[EX_MAX_CORES];
	_Atomic int max_on_core;
	_Atomic int bad_core;
	_Atomic int slices[EX_KINDS];
	_Atomic int err;
	_Atomic int err_kind;
	volatile unsigned long sink;
};

struct ex_arg {
	struct ex_run *r;
	enum ex_kind kind;
};

static void ex_max(_Atomic int *max, int v)
{
	int cur = atomic_load(max);

	while (cur < v && !atomic_compare_exchange_weak(max, &cur, v))
		;
}

static void ex_error(struct ex_run *r, enum ex_kind kind, int err)
{
	int zero = 0;

	if (atomic_compare_exchange_strong(&r->err, &zero, err))
		atomic_store(&r->err_kind, kind);
}

/* User code on a core: must never overlap another worker's on that core. */
static void ex_slice(struct ex_run *r, enum ex_kind kind)
{
	int core = umcg_thread_core(umcg_self());

	ex_max(&r->max_running, atomic_fetch_add(&r->running, 1) + 1);
	if (core < 0 || core >= (int)r->nr_cores) {
		atomic_fetch_add(&r->bad_core, 1);
	} else {
		ex_max(&r->max_on_core, atomic_fetch_add(&r->on_core[core], 1) + 1);
	}
	kb_spin_ns(EX_SLICE_NS);
	if (core >= 0 && core < (int)r->nr_cores)
		atomic_fetch_sub(&r->on_core[core], 1);
	atomic_fetch_sub(&r->running, 1);
	atomic_fetch_add(&r->slices[kind], 1);
}

/* One blocking call of @kind, behind libumcg's back. */
static void ex_block(struct ex_run *r, enum ex_kind kind, int round)
{
	struct timespec ts = { 0, 1000000 };
	long page = sysconf(_SC_PAGESIZE);
	unsigned long seen;
	char c;

	switch (kind) {
	case EX_READER:
		if (read(r->pipefd[0], &c, 1) != 1)
			ex_error(r, kind, -EIO);
		break;
	case EX_SLEEPER:
		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
		break;
	case EX_WAITER:
		pthread_mutex_lock(&r->lock);
		seen = r->tick;
		while (r->tick == seen)
			pthread_cond_wait(&r->cond, &r->lock);
		pthread_mutex_unlock(&r->lock);
		break;
	case EX_FAULTER:
		/* Drop the pages and their cache, then fault a few back in. */
		madvise((void *)r->map, r->map_len, MADV_DONTNEED);
		posix_fadvise(r->map_fd, 0, 0, POSIX_FADV_DONTNEED);
		for (size_t off = (size_t)(round % 4) * page; off < r->map_len; off += 4 * page)
			r->sink += (unsigned char)r->map[off];
		break;
	case EX_SPINNER:
		if (umcg_yield())
			ex_error(r, kind, -EPROTO);
		break;
	default:
		break;
	}
}

static void *ex_worker(void *arg)
{
	struct ex_arg *a = arg;

	for (int i = 0; i < EX_ROUNDS; i++) {
		ex_block(a->r, a->kind, i);
		ex_slice(a->r, a->kind);
	}
	return NULL;
}

/* A plain thread (not a worker): wakes the readers and the waiters. */
static void *ex_feeder(void *arg)
{
	struct ex_run *r = arg;

	while (!atomic_load(&r->stop_feeder)) {
		usleep(1000);
		if (write(r->pipefd[1], "x", 1) != 1)
			ex_error(r, EX_READER, -EIO);
		pthread_mutex_lock(&r->lock);
		r->tick++;
		pthread_cond_broadcast(&r->cond);
		pthread_mutex_unlock(&r->lock);
	}
	return NULL;
}

FIXTURE(exact)
{
	bool inited, feeding;
	pthread_t feeder;
	struct ex_run run;
	struct ex_arg args[EX_KINDS * 2];
};

FIXTURE_VARIANT(exact)
{
	unsigned int nr_cores;
};

FIXTURE_VARIANT_ADD(exact, one_core) { .nr_cores = 1 };
FIXTURE_VARIANT_ADD(exact, two_cores) { .nr_cores = 2 };

FIXTURE_SETUP(exact)
{
	struct umcg_config cfg = { .size = sizeof(cfg) };
	struct ex_run *r = &self->run;
	const char *why = kb_backend_get();
	struct stat st;
	cpu_set_t set;

	r->map_fd = -1;
	r->map = MAP_FAILED;
	if (why)
		SKIP(return, "%s", why);
	ASSERT_EQ(0, sched_getaffinity(0, sizeof(set), &set));
	if (CPU_COUNT(&set) < (int)variant->nr_cores)
		SKIP(return, "needs %u CPUs", variant->nr_cores);
	r->nr_cores = variant->nr_cores;
	ASSERT_EQ(0, pipe(r->pipefd));
	ASSERT_EQ(0, pthread_mutex_init(&r->lock, NULL));
	ASSERT_EQ(0, pthread_cond_init(&r->cond, NULL));
	/* The faulter's file: this program. */
	r->map_fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	ASSERT_LE(0, r->map_fd);
	ASSERT_EQ(0, fstat(r->map_fd, &st));
	r->map_len = st.st_size;
	r->map = mmap(NULL, r->map_len, PROT_READ, MAP_SHARED, r->map_fd, 0);
	ASSERT_NE(MAP_FAILED, r->map);

	cfg.nr_cores = variant->nr_cores;
	cfg.backend = KB_BACKEND;
	cfg.policy = umcg_policy_find("fifo");
	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
	ASSERT_STREQ(KB_BACKEND, umcg_backend_name());
	ASSERT_EQ(0, pthread_create(&self->feeder, NULL, ex_feeder, r));
	self->feeding = true;
}

FIXTURE_TEARDOWN(exact)
{
	struct ex_run *r = &self->run;

	if (self->feeding) {
		atomic_store(&r->stop_feeder, 1);
		pthread_join(self->feeder, NULL);
	}
	if (self->inited) {
		EXPECT_EQ(0, umcg_fini());
		KB_EXPECT_BACKEND_KEPT();
	}
	if (r->map != MAP_FAILED)
		munmap((void *)r->map, r->map_len);
	if (r->map_fd >= 0)
		close(r->map_fd);
}

TEST_F_TIMEOUT(exact, woken_workers_wait_for_the_policy, 110)
{
	struct ex_run *r = &self->run;
	umcg_thread_t *t[EX_KINDS * 2];
	struct umcg_stats st;
	int n = 0;

	/* Two of each kind, spread over the cores. */
	for (int k = 0; k < EX_KINDS; k++) {
		for (int j = 0; j < 2; j++, n++) {
			self->args[n].r = r;
			self->args[n].kind = k;
			ASSERT_EQ(0, umcg_spawn(&t[n], NULL, ex_worker, &self->args[n]));
		}
	}
	for (int i = 0; i < n; i++) {
		uint64_t end = kb_now_ns() + 60000 * KB_MS;

		while (umcg_thread_state(t[i]) != UMCG_STATE_DONE && kb_now_ns() < end)
			usleep(1000);
		if (umcg_thread_state(t[i]) != UMCG_STATE_DONE)
			umcg_dump(stderr);
		ASSERT_EQ(UMCG_STATE_DONE, umcg_thread_state(t[i]))
			TH_LOG("%s worker %d never finished", ex_names[self->args[i].kind], i);
		ASSERT_EQ(0, umcg_join(t[i], NULL));
	}
	ASSERT_EQ(0, umcg_stats(&st));
	TH_LOG("%u core(s): %llu blocks, %llu switches; most at once %d, on a core %d",
	       r->nr_cores, (unsigned long long)st.blocks, (unsigned long long)st.switches,
	       atomic_load(&r->max_running), atomic_load(&r->max_on_core));
	EXPECT_EQ(0, atomic_load(&r->err))
		TH_LOG("error %d in a %s", atomic_load(&r->err),
		       ex_names[atomic_load(&r->err_kind)]);
	for (int k = 0; k < EX_KINDS; k++) {
		EXPECT_EQ(2 * EX_ROUNDS, atomic_load(&r->slices[k])) TH_LOG("%s", ex_names[k]);
	}
	EXPECT_EQ(0, atomic_load(&r->bad_core));
	EXPECT_EQ(1, atomic_load(&r->max_on_core));
	EXPECT_GE((int)r->nr_cores, atomic_load(&r->max_running));
	/* The sleepers at least block every round. */
	EXPECT_LE(2 * EX_ROUNDS, st.blocks);
	EXPECT_EQ(0, st.live);
}

TEST_HARNESS_MAIN
