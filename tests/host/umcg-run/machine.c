// SPDX-License-Identifier: GPL-2.0
/*
 * Description: a plain pthread program (no libumcg calls) that looks at
 * the machine the way unmodified programs do, for umcg-run's tests
 * (umcg_run.sh machine).
 *
 *   machine affinity  prints the CPU count that sched_getaffinity() and
 *                     pthread_getaffinity_np() report in main and in a
 *                     new thread ("main_cpus=N", ...), then sets its own
 *                     affinity to one of those CPUs with both calls and
 *                     back to all of them: a call that succeeds must be
 *                     seen by the next get (and the thread must then run
 *                     there), one that fails must fail with EINVAL.
 *                     Prints "set_one=ok|EINVAL" and "affinity=ok" when
 *                     all of it held; exits 1 otherwise.
 *   machine raw       prints "raw_cpus=N", the count of the kernel's own
 *                     mask (the system call, not the C library's).
 *   machine spawn     drops LD_PRELOAD from its environment (so that the
 *                     children run unmanaged and inherit what they get),
 *                     then starts "machine raw" with system(), popen(),
 *                     posix_spawn() and fork() + exec, and last executes
 *                     it itself (execl(), HOW "exec"); each prints
 *                     "HOW_cpus=N" and "HOW_policy=P" (its scheduling
 *                     policy).
 *   machine sigwait   blocks SIGTERM in main before it starts 2 threads
 *                     (which inherit the mask and sleep) and a third that
 *                     waits for SIGTERM with sigwait() while main joins it
 *                     (a process-directed signal goes to main first when
 *                     main takes it, so main must not be the waiter);
 *                     prints "ready", then "sigwait=SIGTERM" and exits 0
 *                     when the signal thread got it.
 *   machine spin      4 threads spin, with no system call, until a flag
 *                     the fifth sets; prints "spin=ok" when all are done.
 *   machine many N    N threads (64 KiB stacks) that all wait on one
 *                     condition variable; once all are up, main sends
 *                     itself signal SIGRTMAX-3 (umcg-run's default dump
 *                     signal), waits a second, releases them, joins them
 *                     and prints "many=N".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int count_get(void)
{
	cpu_set_t set;

	return sched_getaffinity(0, sizeof(set), &set) ? -errno : CPU_COUNT(&set);
}

static int count_pget(pthread_t thr)
{
	cpu_set_t set;
	int ret = pthread_getaffinity_np(thr, sizeof(set), &set);

	return ret ? -ret : CPU_COUNT(&set);
}

static void *affinity_thread(void *arg)
{
	int *out = arg;
	cpu_set_t set;

	out[0] = count_get();
	out[1] = count_pget(pthread_self());
	/* By the process's ID: the main thread. */
	out[2] = sched_getaffinity(getpid(), sizeof(set), &set) ? -errno : CPU_COUNT(&set);
	return NULL;
}

/*
 * Sets the caller's mask to @want (@use_pthread: pthread_setaffinity_np)
 * and checks what follows.  0: honoured and seen; 1: refused with
 * EINVAL; -1: anything else (printed).
 */
static int set_and_check(const char *what, const cpu_set_t *want, int use_pthread)
{
	cpu_set_t got;
	int ret, err;

	if (use_pthread) {
		err = pthread_setaffinity_np(pthread_self(), sizeof(*want), want);
		ret = err ? -1 : 0;
	} else {
		ret = sched_setaffinity(0, sizeof(*want), want);
		err = ret ? errno : 0;
	}
	if (ret) {
		if (err == EINVAL)
			return 1;
		printf("# %s: failed with %s, not EINVAL\n", what, strerror(err));
		return -1;
	}
	if (sched_getaffinity(0, sizeof(got), &got) || !CPU_EQUAL(&got, want)) {
		printf("# %s: succeeded, but sched_getaffinity() reports %d CPUs, not the %d set\n",
		       what, CPU_COUNT(&got), CPU_COUNT(want));
		return -1;
	}
	if (CPU_COUNT(want) == 1) {
		/* Honoured: the thread runs there from now on. */
		for (int i = 0; i < 100; i++) {
			int cpu = sched_getcpu();

			if (cpu < 0 || !CPU_ISSET(cpu, want)) {
				printf("# %s: succeeded, but the thread runs on CPU %d\n", what, cpu);
				return -1;
			}
			sched_yield();
		}
	}
	return 0;
}

static int run_affinity(void)
{
	int t[3] = { 0, 0, 0 }, r1, r2, r3, r4, first = -1, bad = 0;
	cpu_set_t all, one;
	pthread_t thr;

	printf("main_cpus=%d\n", count_get());
	printf("main_pcpus=%d\n", count_pget(pthread_self()));
	if (pthread_create(&thr, NULL, affinity_thread, t) || pthread_join(thr, NULL))
		return 1;
	printf("thread_cpus=%d\nthread_pcpus=%d\npid_cpus=%d\n", t[0], t[1], t[2]);
	printf("nprocs_conf=%ld\n", sysconf(_SC_NPROCESSORS_ONLN));

	if (sched_getaffinity(0, sizeof(all), &all))
		return 1;
	for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
		if (CPU_ISSET(c, &all))
			first = c;
	CPU_ZERO(&one);
	CPU_SET(first, &one);
	r1 = set_and_check("sched_setaffinity(one CPU)", &one, 0);
	r2 = set_and_check("sched_setaffinity(all reported)", &all, 0);
	r3 = set_and_check("pthread_setaffinity_np(one CPU)", &one, 1);
	r4 = set_and_check("pthread_setaffinity_np(all reported)", &all, 1);
	printf("set_one=%s\npset_one=%s\n", r1 == 1 ? "EINVAL" : "ok", r3 == 1 ? "EINVAL" : "ok");
	/* Setting what get reported must work; one CPU, either way. */
	bad = r1 < 0 || r3 < 0 || r2 != 0 || r4 != 0;
	if (r2 || r4)
		printf("# setting the reported mask back: %d %d\n", r2, r4);
	/* And the mask still reads as it did. */
	if (count_get() != CPU_COUNT(&all)) {
		printf("# after the sets: %d CPUs, not %d\n", count_get(), CPU_COUNT(&all));
		bad = 1;
	}
	printf("affinity=%s\n", bad ? "FAILED" : "ok");
	return bad;
}

static int run_raw(const char *how)
{
	unsigned long mask[CPU_SETSIZE / (8 * sizeof(long))];
	long n = syscall(SYS_sched_getaffinity, 0, sizeof(mask), mask);
	int count = 0;

	if (n < 0)
		return 1;
	for (size_t i = 0; i < (size_t)n / sizeof(long); i++)
		count += __builtin_popcountl(mask[i]);
	printf("%s_cpus=%d\n%s_policy=%d\n", how, count, how, sched_getscheduler(0));
	return 0;
}

static int run_spawn(const char *self)
{
	char cmd[4096], line[256];
	char *argv[] = { (char *)self, "raw", NULL, NULL };
	pid_t pid;
	FILE *f;
	int st;

	unsetenv("LD_PRELOAD");
	snprintf(cmd, sizeof(cmd), "'%s' raw system", self);
	fflush(stdout);
	if (system(cmd))
		printf("# system() failed\n");
	snprintf(cmd, sizeof(cmd), "'%s' raw popen", self);
	f = popen(cmd, "r");
	if (f) {
		while (fgets(line, sizeof(line), f))
			fputs(line, stdout);
		pclose(f);
	}
	argv[2] = "posix_spawn";
	fflush(stdout);
	if (posix_spawn(&pid, self, NULL, NULL, argv, environ) == 0)
		waitpid(pid, &st, 0);
	argv[2] = "fork";
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execve(self, argv, environ);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, &st, 0);
	/* Last, this process itself: no fork. */
	fflush(stdout);
	execl(self, self, "raw", "exec", (char *)NULL);
	printf("# execl: %s\n", strerror(errno));
	return 0;
}

static void *sleeper(void *arg)
{
	for (;;)
		usleep(10000);
	return NULL;
}

/* The program's signal thread: takes SIGTERM, which every thread blocks. */
static void *signal_thread(void *arg)
{
	sigset_t *set = arg;
	int sig = 0;

	if (sigwait(set, &sig) || sig != SIGTERM)
		return NULL;
	printf("sigwait=SIGTERM\n");
	fflush(stdout);
	return (void *)1;
}

static int run_sigwait(void)
{
	static sigset_t set;
	pthread_t t, waiter;
	void *got = NULL;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	if (pthread_sigmask(SIG_BLOCK, &set, NULL))
		return 1;
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t, NULL, sleeper, NULL))
			return 1;
	if (pthread_create(&waiter, NULL, signal_thread, &set))
		return 1;
	printf("ready\n");
	fflush(stdout);
	/* Main does not wait itself: the kernel picks another thread for it. */
	pthread_join(waiter, &got);
	return got ? 0 : 1;
}

static atomic_int spin_flag, spin_done;

static void *spinner(void *arg)
{
	while (!atomic_load_explicit(&spin_flag, memory_order_acquire))
		__asm__ volatile("" ::: "memory");
	atomic_fetch_add(&spin_done, 1);
	return NULL;
}

static void *setter(void *arg)
{
	atomic_store_explicit(&spin_flag, 1, memory_order_release);
	return NULL;
}

static int run_spin(void)
{
	pthread_t t[5];

	for (int i = 0; i < 5; i++)
		if (pthread_create(&t[i], NULL, i < 4 ? spinner : setter, NULL))
			return 1;
	for (int i = 0; i < 5; i++)
		pthread_join(t[i], NULL);
	printf("spin=%s\n", atomic_load(&spin_done) == 4 ? "ok" : "FAILED");
	return atomic_load(&spin_done) == 4 ? 0 : 1;
}

static pthread_mutex_t many_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t many_cond = PTHREAD_COND_INITIALIZER;
static int many_up, many_go;

static void *many_thread(void *arg)
{
	pthread_mutex_lock(&many_lock);
	many_up++;
	pthread_cond_broadcast(&many_cond);
	while (!many_go)
		pthread_cond_wait(&many_cond, &many_lock);
	pthread_mutex_unlock(&many_lock);
	return NULL;
}

static int run_many(int n)
{
	pthread_t *t = calloc(n > 0 ? n : 1, sizeof(*t));
	pthread_attr_t a;
	int made = 0;

	if (!t || n <= 0)
		return 2;
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	for (; made < n; made++)
		if (pthread_create(&t[made], &a, many_thread, NULL))
			break;
	pthread_mutex_lock(&many_lock);
	while (many_up < made)
		pthread_cond_wait(&many_cond, &many_lock);
	pthread_mutex_unlock(&many_lock);
	kill(getpid(), SIGRTMAX - 3);
	sleep(1);
	pthread_mutex_lock(&many_lock);
	many_go = 1;
	pthread_cond_broadcast(&many_cond);
	pthread_mutex_unlock(&many_lock);
	for (int i = 0; i < made; i++)
		pthread_join(t[i], NULL);
	printf("many=%d\n", made);
	return made == n ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "affinity"))
		return run_affinity();
	if (argc >= 2 && !strcmp(argv[1], "raw"))
		return run_raw(argc >= 3 ? argv[2] : "raw");
	if (argc >= 2 && !strcmp(argv[1], "spawn"))
		return run_spawn(argv[0]);
	if (argc >= 2 && !strcmp(argv[1], "sigwait"))
		return run_sigwait();
	if (argc >= 2 && !strcmp(argv[1], "spin"))
		return run_spin();
	if (argc >= 3 && !strcmp(argv[1], "many"))
		return run_many(atoi(argv[2]));
	fprintf(stderr, "usage: %s affinity|raw|spawn|sigwait|spin|many N\n", argv[0]);
	return 2;
}
