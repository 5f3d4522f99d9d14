/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * sync_test.h - helpers of the umcg/sync.h tests: group set-up on the user
 * backend, bounded polling of thread states and flags, plain threads.
 */
#ifndef SYNC_TEST_H
#define SYNC_TEST_H

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <umcg.h>
#include <umcg/sync.h>

#define ST_MS		1000000ULL
/* How long a test waits for something that should happen at once. */
#define ST_PATIENCE_MS	3000

/*
 * umcg_init() on the user backend with @nr_cores cores; @blocked_ns 0 for
 * the default.  A long @blocked_ns keeps the monitor from handing the core
 * of a worker blocked in the kernel to others within a test's lifetime.
 */
static inline int st_init(unsigned int nr_cores, uint64_t blocked_ns)
{
	struct umcg_config cfg = {
		.size = sizeof(cfg),
		.nr_cores = nr_cores,
		.backend = "user",
		.blocked_ns = blocked_ns,
	};

	return umcg_init(&cfg);
}

static inline uint64_t st_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Let time pass: parked for a worker (its core runs others), else asleep. */
static inline void st_pause(void)
{
	if (!umcg_self() || umcg_sleep_ns(100000))
		usleep(100);
}

/* Waits up to @ms for @t to be in @state; returns the last state seen. */
static inline int st_wait_state(umcg_thread_t *t, int state, unsigned int ms)
{
	uint64_t end = st_now_ns() + ms * ST_MS;
	int s;

	while ((s = umcg_thread_state(t)) != state && st_now_ns() < end)
		st_pause();
	return s;
}

/* Waits up to @ms for *@v >= @n; returns the last value seen. */
static inline int st_wait_at_least(int *v, int n, unsigned int ms)
{
	uint64_t end = st_now_ns() + ms * ST_MS;
	int x;

	while ((x = __atomic_load_n(v, __ATOMIC_ACQUIRE)) < n && st_now_ns() < end)
		st_pause();
	return x;
}

static inline void st_set(int *v, int x)
{
	__atomic_store_n(v, x, __ATOMIC_RELEASE);
}

static inline int st_get(int *v)
{
	return __atomic_load_n(v, __ATOMIC_ACQUIRE);
}

/* Spawns a worker; 0 or -errno. */
static inline int st_spawn(umcg_thread_t **t, void *(*fn)(void *), void *arg)
{
	return umcg_spawn(t, NULL, fn, arg);
}

/* Starts a plain (non-worker) thread; 0 or -errno. */
static inline int st_pthread(pthread_t *t, void *(*fn)(void *), void *arg)
{
	return -pthread_create(t, NULL, fn, arg);
}

#endif /* SYNC_TEST_H */
