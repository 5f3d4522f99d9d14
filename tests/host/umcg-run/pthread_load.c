// SPDX-License-Identifier: GPL-2.0
/*
 * Description: a plain pthread program (no libumcg calls) for umcg-run's
 * tests.
 *
 *   pthread_load          8 threads, 3 rounds each: wait for a byte on a
 *                         pipe, a CPU-bound section, a mutex-protected
 *                         update, a sleep; then two of them ping-pong with
 *                         sched_yield() spin-waits and one C11 thread runs.
 *                         Prints "max_concurrency=N" (most threads ever in
 *                         their CPU-bound sections at once) and
 *                         "checks=ok"; exits 0 when every result is right.
 *   pthread_load --hold   4 threads block reading a pipe; prints the tids
 *                         of all 5 threads ("tids=..."), then "ready", and
 *                         releases them when its stdin reaches EOF.
 *   pthread_load --exit-spin
 *                         a thread spins forever; main reads a line from
 *                         stdin with stdio (a read libumcg does not see),
 *                         prints "spinner_ran=1" if the spinner got to run
 *                         meanwhile, and returns from main.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#define NR_THREADS	8
#define NR_ROUNDS	3
#define SPIN_NS		4000000ULL	/* one CPU-bound section */
#define PINGPONGS	50
#define NR_HOLD		4

/*
 * ThreadSanitizer does not intercept C11 thrd_create() (glibc creates the
 * thread behind its back and TSan crashes on it): leave that part out there.
 */
#ifdef __SANITIZE_THREAD__
#define WITH_C11_THREAD	0
#else
#define WITH_C11_THREAD	1
#endif

static int pipefd[2];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long shared_count;	/* under lock, on purpose not atomic */
static atomic_int running, max_running;
static atomic_int turn;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Spins for SPIN_NS without a system call, counting who else does. */
static void cpu_section(void)
{
	int n = atomic_fetch_add(&running, 1) + 1;
	int max = atomic_load(&max_running);
	uint64_t end = now_ns() + SPIN_NS;
	volatile unsigned long x = 0;

	while (n > max && !atomic_compare_exchange_weak(&max_running, &max, n))
		;
	while (now_ns() < end)
		for (int i = 0; i < 1000; i++)
			x += (unsigned long)i;
	atomic_fetch_sub(&running, 1);
}

/* Two threads take turns; each waits for its turn with sched_yield(). */
static void ping_pong(int me)
{
	for (int i = 0; i < PINGPONGS; i++) {
		while (atomic_load(&turn) != me)
			sched_yield();
		atomic_store(&turn, !me);
	}
}

static void *worker(void *arg)
{
	int id = (int)(intptr_t)arg;
	char c;

	for (int r = 0; r < NR_ROUNDS; r++) {
		if (read(pipefd[0], &c, 1) != 1)
			return (void *)(intptr_t)-1;
		cpu_section();
		pthread_mutex_lock(&lock);
		shared_count++;
		pthread_mutex_unlock(&lock);
		usleep(500);
	}
	if (id < 2)
		ping_pong(id);
	if (id % 2)
		pthread_exit((void *)(intptr_t)(100 + id));
	return (void *)(intptr_t)(100 + id);
}

static int c11_thread(void *arg)
{
	struct timespec ts = { .tv_nsec = 1000000 };

	nanosleep(&ts, NULL);
	return 42;
}

static int run_load(void)
{
	pthread_t th[NR_THREADS];
	char bytes[NR_THREADS];
	bool ok = true;
	thrd_t c11;
	int c11_ret = 0;

	memset(bytes, 'x', sizeof(bytes));
	for (int i = 0; i < NR_THREADS; i++)
		if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i)) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	if (WITH_C11_THREAD && thrd_create(&c11, c11_thread, NULL) != thrd_success) {
		fprintf(stderr, "thrd_create failed\n");
		return 1;
	}
	/* Each round's bytes wake every thread at once. */
	for (int r = 0; r < NR_ROUNDS; r++) {
		usleep(5000);
		if (write(pipefd[1], bytes, sizeof(bytes)) != sizeof(bytes)) {
			fprintf(stderr, "write failed\n");
			return 1;
		}
	}
	for (int i = 0; i < NR_THREADS; i++) {
		void *ret;

		pthread_join(th[i], &ret);
		if (ret != (void *)(intptr_t)(100 + i)) {
			fprintf(stderr, "thread %d returned %ld\n", i, (long)(intptr_t)ret);
			ok = false;
		}
	}
	if (WITH_C11_THREAD && (thrd_join(c11, &c11_ret) != thrd_success || c11_ret != 42)) {
		fprintf(stderr, "C11 thread returned %d\n", c11_ret);
		ok = false;
	}
	if (shared_count != NR_THREADS * NR_ROUNDS) {
		fprintf(stderr, "count %lu, want %d\n", shared_count, NR_THREADS * NR_ROUNDS);
		ok = false;
	}
	printf("max_concurrency=%d\n", atomic_load(&max_running));
	printf("checks=%s\n", ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}

static pthread_barrier_t hold_barrier;
static pid_t hold_tids[NR_HOLD];

static void *holder(void *arg)
{
	char c;

	hold_tids[(intptr_t)arg] = gettid();
	pthread_barrier_wait(&hold_barrier);
	return read(pipefd[0], &c, 1) == 1 ? NULL : (void *)1;
}

static int run_hold(void)
{
	pthread_t th[NR_HOLD];
	char buf[64], bytes[NR_HOLD] = { 0 };
	int ret = 0;

	pthread_barrier_init(&hold_barrier, NULL, NR_HOLD + 1);
	for (intptr_t i = 0; i < NR_HOLD; i++)
		if (pthread_create(&th[i], NULL, holder, (void *)i))
			return 1;
	pthread_barrier_wait(&hold_barrier);
	printf("tids=%d", gettid());
	for (int i = 0; i < NR_HOLD; i++)
		printf(" %d", hold_tids[i]);
	printf("\nready\n");
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	if (write(pipefd[1], bytes, sizeof(bytes)) != sizeof(bytes))
		return 1;
	for (int i = 0; i < NR_HOLD; i++) {
		void *r;

		pthread_join(th[i], &r);
		ret |= r != NULL;
	}
	return ret;
}

static atomic_int spinner_ran;

static void *spinner(void *arg)
{
	atomic_store(&spinner_ran, 1);
	for (;;)
		cpu_section();
	return NULL;
}

static int run_exit_spin(void)
{
	char line[64];
	pthread_t t;

	if (pthread_create(&t, NULL, spinner, NULL))
		return 1;
	if (!fgets(line, sizeof(line), stdin))
		return 1;
	printf("spinner_ran=%d\n", atomic_load(&spinner_ran));
	return 0;	/* exit() with the spinner still running */
}

int main(int argc, char **argv)
{
	if (pipe(pipefd)) {
		perror("pipe");
		return 1;
	}
	if (argc == 2 && !strcmp(argv[1], "--hold"))
		return run_hold();
	if (argc == 2 && !strcmp(argv[1], "--exit-spin"))
		return run_exit_spin();
	if (argc != 1) {
		fprintf(stderr, "usage: %s [--hold|--exit-spin]\n", argv[0]);
		return 2;
	}
	return run_load();
}
