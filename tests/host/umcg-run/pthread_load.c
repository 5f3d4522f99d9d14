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
 *   pthread_load --handoff
 *                         for each interposed blocking call (read, poll,
 *                         select, epoll_wait, accept, a sleep, a condition
 *                         variable, a semaphore, a contended mutex, a write
 *                         to a full pipe): thread A makes the call, which
 *                         only thread B can end, and B starts only once A
 *                         is in it; main joins both.  On one core, B runs
 *                         only if A's core changes hands while A is blocked
 *                         (C2).  Prints "handoff_CALL_ms=N" for each and
 *                         "checks=ok" when every call returned as it should.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/un.h>
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

/* --handoff: see the top.  A sets a_in just before its call. */
static atomic_int a_in, b_done;
static atomic_bool h_ok = true;
static pthread_mutex_t h_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t h_cond = PTHREAD_COND_INITIALIZER;
static bool h_flag;
static sem_t h_sem;
static int h_listen, h_epoll;
static struct sockaddr_un h_addr = { .sun_family = AF_UNIX };

#define H_PIPE_BYTES	(1 << 20)	/* more than a pipe holds */

static void h_check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "handoff: %s failed\n", what);
		atomic_store(&h_ok, false);
	}
}

static void h_enter(void)
{
	atomic_store(&a_in, 1);
}

static void a_read(void)
{
	char c;

	h_enter();
	h_check(read(pipefd[0], &c, 1) == 1, "read");
}

static void a_poll(void)
{
	struct pollfd p = { .fd = pipefd[0], .events = POLLIN };
	char c;

	h_enter();
	h_check(poll(&p, 1, -1) == 1 && read(pipefd[0], &c, 1) == 1, "poll");
}

static void a_select(void)
{
	fd_set r;
	char c;

	FD_ZERO(&r);
	FD_SET(pipefd[0], &r);
	h_enter();
	h_check(select(pipefd[0] + 1, &r, NULL, NULL, NULL) == 1 && FD_ISSET(pipefd[0], &r) &&
		read(pipefd[0], &c, 1) == 1, "select");
}

static void a_epoll(void)
{
	struct epoll_event ev;
	char c;

	h_enter();
	h_check(epoll_wait(h_epoll, &ev, 1, -1) == 1 && read(pipefd[0], &c, 1) == 1,
		"epoll_wait");
}

static void b_write_byte(void)
{
	h_check(write(pipefd[1], "x", 1) == 1, "write of one byte");
}

static void a_accept(void)
{
	int fd;

	h_enter();
	fd = accept(h_listen, NULL, NULL);
	h_check(fd >= 0, "accept");
	if (fd >= 0)
		close(fd);
}

static void b_connect(void)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	h_check(fd >= 0 && connect(fd, (struct sockaddr *)&h_addr, sizeof(h_addr)) == 0,
		"connect");
	if (fd >= 0)
		close(fd);
}

static void a_sleep(void)
{
	struct timespec ts = { .tv_nsec = 100000000 };

	h_enter();
	nanosleep(&ts, NULL);
	h_check(atomic_load(&b_done), "nanosleep (B did not run meanwhile)");
}

static void b_mark(void)
{
	atomic_store(&b_done, 1);
}

static void a_cond(void)
{
	pthread_mutex_lock(&h_lock);
	h_enter();
	while (!h_flag)
		pthread_cond_wait(&h_cond, &h_lock);
	pthread_mutex_unlock(&h_lock);
}

static void b_cond(void)
{
	pthread_mutex_lock(&h_lock);
	h_flag = true;
	pthread_cond_signal(&h_cond);
	pthread_mutex_unlock(&h_lock);
}

static void a_sem(void)
{
	h_enter();
	h_check(sem_wait(&h_sem) == 0, "sem_wait");
}

static void b_sem(void)
{
	h_check(sem_post(&h_sem) == 0, "sem_post");
}

/* A holds the mutex across a sleep; B's lock must not keep the core. */
static void a_mutex(void)
{
	struct timespec ts = { .tv_nsec = 50000000 };

	pthread_mutex_lock(&h_lock);
	h_enter();
	nanosleep(&ts, NULL);
	pthread_mutex_unlock(&h_lock);
}

static void b_mutex(void)
{
	pthread_mutex_lock(&h_lock);
	pthread_mutex_unlock(&h_lock);
}

/* A write that may block (left to the monitor): B drains the pipe. */
static void a_write(void)
{
	static char buf[H_PIPE_BYTES];
	size_t done = 0;

	h_enter();
	while (done < sizeof(buf)) {
		ssize_t n = write(pipefd[1], buf + done, sizeof(buf) - done);

		if (n <= 0)
			break;
		done += n;
	}
	h_check(done == sizeof(buf), "write to a full pipe");
}

static void b_drain(void)
{
	static char buf[65536];
	size_t done = 0;

	while (done < H_PIPE_BYTES) {
		ssize_t n = read(pipefd[0], buf, sizeof(buf));

		if (n <= 0)
			break;
		done += n;
	}
	h_check(done == H_PIPE_BYTES, "reading the full pipe");
}

struct h_case {
	const char *name;
	void (*a)(void);
	void (*b)(void);
};

static void *h_run_a(void *arg)
{
	((const struct h_case *)arg)->a();
	return NULL;
}

/* On one core B gets here only when A gave the core up: in its call. */
static void *h_run_b(void *arg)
{
	while (!atomic_load(&a_in))
		sched_yield();
	((const struct h_case *)arg)->b();
	return NULL;
}

static int run_handoff(void)
{
	static const struct h_case cases[] = {
		{ "read", a_read, b_write_byte },
		{ "poll", a_poll, b_write_byte },
		{ "select", a_select, b_write_byte },
		{ "epoll_wait", a_epoll, b_write_byte },
		{ "accept", a_accept, b_connect },
		{ "nanosleep", a_sleep, b_mark },
		{ "cond_wait", a_cond, b_cond },
		{ "sem_wait", a_sem, b_sem },
		{ "mutex_lock", a_mutex, b_mutex },
		{ "write", a_write, b_drain },
	};
	struct epoll_event ev = { .events = EPOLLIN };

	snprintf(h_addr.sun_path, sizeof(h_addr.sun_path), "/tmp/umcg-run-handoff.%d",
		 getpid());
	unlink(h_addr.sun_path);
	h_listen = socket(AF_UNIX, SOCK_STREAM, 0);
	h_epoll = epoll_create1(0);
	if (h_listen < 0 || bind(h_listen, (struct sockaddr *)&h_addr, sizeof(h_addr)) ||
	    listen(h_listen, 4) || h_epoll < 0 || sem_init(&h_sem, 0, 0) ||
	    epoll_ctl(h_epoll, EPOLL_CTL_ADD, pipefd[0], &ev)) {
		perror("handoff setup");
		return 1;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t t0 = now_ns();
		pthread_t a, b;

		atomic_store(&a_in, 0);
		atomic_store(&b_done, 0);
		if (pthread_create(&a, NULL, h_run_a, (void *)&cases[i]) ||
		    pthread_create(&b, NULL, h_run_b, (void *)&cases[i])) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		printf("handoff_%s_ms=%.3f\n", cases[i].name, (now_ns() - t0) / 1e6);
		fflush(stdout);
	}
	unlink(h_addr.sun_path);
	printf("checks=%s\n", atomic_load(&h_ok) ? "ok" : "FAILED");
	return atomic_load(&h_ok) ? 0 : 1;
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
	if (argc == 2 && !strcmp(argv[1], "--handoff"))
		return run_handoff();
	if (argc != 1) {
		fprintf(stderr, "usage: %s [--hold|--exit-spin|--handoff]\n", argv[0]);
		return 2;
	}
	return run_load();
}
