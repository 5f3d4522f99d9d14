// SPDX-License-Identifier: GPL-2.0
/*
 * scx_goaway - the scheduler goes away under a libumcg process on the scx
 * backend: unloaded (umcgctl unload) or ejected by the kernel (SysRq-S)
 * while workers run, block in read() and nanosleep(), yield, switch to
 * each other and unpark each other.  The process must finish all its work, every
 * worker joined, in bounded time (issue 5: "the process finishes its work
 * correctly and in bounded time").  The workers run in a forked child, a
 * process of its own (one group per process); the test waits for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <umcg.h>

#include "umcg_test.h"
#include "umcg_test_churn.h"
#include "umcg_test_feeder.h"

#define GA_WORKERS	64
#define GA_ROUNDS	400
/* After the scheduler went: how long the rest of the work may take. */
#define GA_FINISH_S	60

static long long ga_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

struct ga_run {
	int pipefd[2];
	umcg_thread_t *t[GA_WORKERS];
	_Atomic int ready;
	_Atomic int finished;	/* workers past their last unpark */
	_Atomic long ops;
	_Atomic int err;
};

static void *ga_worker(void *arg)
{
	struct ga_run *r = arg;
	unsigned int seed = (unsigned int)(uintptr_t)umcg_self() | 1;

	while (atomic_load(&r->ready) < GA_WORKERS)
		umcg_yield();
	for (int i = 0; i < GA_ROUNDS; i++) {
		static const enum umcg_test_churn_op ops[] = {
			UMCG_CHURN_YIELD, UMCG_CHURN_NANOSLEEP, UMCG_CHURN_READ,
			UMCG_CHURN_SWITCH, UMCG_CHURN_UNPARK,
		};
		umcg_thread_t *peer = r->t[rand_r(&seed) % GA_WORKERS];
		int ret = umcg_test_churn(ops[i % 5], r->pipefd[0], peer);

		if (ret) {
			int zero = 0;

			atomic_compare_exchange_strong(&r->err, &zero, ret);
		}
		atomic_fetch_add(&r->ops, 1);
	}
	/* Whoever parked switching to us, or waits for an unpark: go on. */
	for (int i = 0; i < GA_WORKERS; i++)
		umcg_unpark(r->t[i]);
	/* Joins (which free the handles we unparked) wait for this. */
	atomic_fetch_add(&r->finished, 1);
	return NULL;
}

/*
 * The child: the workload.  Writes one byte to @ready_fd once every worker
 * runs; exits 0 when all work is done and every worker joined, else 1.
 */
static int ga_child(int ready_fd)
{
	struct umcg_config cfg = { .size = sizeof(cfg) };
	static struct ga_run r;
	struct umcg_test_feeder feeder = { 0 };
	int ret, i;

	cfg.nr_cores = 2;
	cfg.backend = "scx";
	if (pipe(r.pipefd) || umcg_init(&cfg)) {
		printf("# child: umcg_init on scx failed\n");
		return 1;
	}
	/* The parent asks for a thread dump (stderr) when the work hangs. */
	umcg_dump_on_signal(SIGUSR1);
	if (umcg_test_feeder_start(&feeder, r.pipefd[1], 100))
		return 1;
	for (i = 0; i < GA_WORKERS; i++) {
		ret = umcg_spawn(&r.t[i], NULL, ga_worker, &r);
		if (ret) {
			printf("# child: spawn %d: %s\n", i, strerror(-ret));
			return 1;
		}
	}
	atomic_store(&r.ready, GA_WORKERS);
	while (atomic_load(&r.ops) < GA_WORKERS)
		usleep(1000);
	if (write(ready_fd, "r", 1) != 1)
		return 1;
	while (atomic_load(&r.finished) < GA_WORKERS)
		usleep(1000);
	for (i = 0; i < GA_WORKERS; i++) {
		ret = umcg_join(r.t[i], NULL);
		if (ret) {
			printf("# child: join %d: %s\n", i, strerror(-ret));
			return 1;
		}
	}
	umcg_test_feeder_stop(&feeder);
	printf("# child: %ld operations, first error %d, backend now \"%s\"\n",
	       atomic_load(&r.ops), atomic_load(&r.err), umcg_backend_name());
	fflush(stdout);
	if (atomic_load(&r.ops) != (long)GA_WORKERS * GA_ROUNDS || atomic_load(&r.err))
		return 1;
	return umcg_fini() ? 1 : 0;
}

/* Run this build's umcgctl @verb, its output as TAP comments; its status. */
static int ga_umcgctl(const char *verb)
{
	char cmd[PATH_MAX + 64];

	snprintf(cmd, sizeof(cmd), "%s/tools/umcgctl %s 2>&1 | sed 's/^/# /'",
		 umcg_test_build_dir(), verb);
	fflush(stdout);
	return system(cmd);
}

static bool ga_enabled(void)
{
	char state[32] = "";
	FILE *f = fopen("/sys/kernel/sched_ext/state", "r");

	if (!f)
		return false;
	if (!fgets(state, sizeof(state), f))
		state[0] = '\0';
	fclose(f);
	return !strncmp(state, "enabled", 7);
}

FIXTURE(ga) {
	pid_t child;
};

FIXTURE_VARIANT(ga) {
	bool sysrq;	/* ejected by the kernel (SysRq-S), else unloaded */
};

FIXTURE_VARIANT_ADD(ga, unload) { .sysrq = false };
FIXTURE_VARIANT_ADD(ga, ejected) { .sysrq = true };

FIXTURE_SETUP(ga)
{
	self->child = -1;
	if (access("/sys/kernel/sched_ext", F_OK))
		SKIP(return, "no sched_ext in this kernel");
	if (geteuid())
		SKIP(return, "loading the scheduler needs root");
	if (variant->sysrq && access("/proc/sysrq-trigger", W_OK))
		SKIP(return, "no /proc/sysrq-trigger (CONFIG_MAGIC_SYSRQ)");
	if (!ga_enabled())
		ASSERT_EQ(0, ga_umcgctl("load"));
	ASSERT_TRUE(ga_enabled());
}

FIXTURE_TEARDOWN(ga)
{
	if (self->child > 0) {
		kill(self->child, SIGKILL);
		waitpid(self->child, NULL, 0);
	}
	/* Leave the machine as the next test expects it: ours loaded. */
	if (!access("/sys/kernel/sched_ext", F_OK) && !ga_enabled()) {
		ga_umcgctl("unload");
		ga_umcgctl("load");
	}
}

TEST_F_TIMEOUT(ga, work_finishes, 240)
{
	struct pollfd pfd;
	int fds[2], status = 0;
	long long gone_ns;
	pid_t pid = 0;
	char c;

	ASSERT_EQ(0, pipe(fds));
	self->child = fork();
	ASSERT_LE(0, self->child);
	if (!self->child) {
		close(fds[0]);
		_exit(ga_child(fds[1]));
	}
	close(fds[1]);
	pfd.fd = fds[0];
	pfd.events = POLLIN;
	ASSERT_EQ(1, poll(&pfd, 1, 60 * 1000)) TH_LOG("the workers never all ran");
	ASSERT_EQ(1, read(fds[0], &c, 1)) TH_LOG("the child died before its workers ran");
	close(fds[0]);

	usleep(300 * 1000);
	if (variant->sysrq) {
		int fd = open("/proc/sysrq-trigger", O_WRONLY);

		ASSERT_LE(0, fd);
		ASSERT_EQ(1, write(fd, "S", 1));
		close(fd);
	} else {
		ga_umcgctl("unload");
	}
	for (int i = 0; i < 500 && ga_enabled(); i++)
		usleep(10 * 1000);
	ASSERT_FALSE(ga_enabled()) TH_LOG("the scheduler is still enabled");
	gone_ns = ga_now_ns();
	while (ga_now_ns() - gone_ns < GA_FINISH_S * 1000000000LL) {
		pid = waitpid(self->child, &status, WNOHANG);
		if (pid)
			break;
		usleep(10 * 1000);
	}
	if (!pid) {
		kill(self->child, SIGUSR1);
		sleep(2);
	}
	ASSERT_EQ(self->child, pid) TH_LOG("work not done %d s after the scheduler went",
					   GA_FINISH_S);
	self->child = -1;
	TH_LOG("finished %llu ms after the scheduler went",
	       (unsigned long long)(ga_now_ns() - gone_ns) / 1000000);
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("child status 0x%x", status);
	ASSERT_EQ(0, WEXITSTATUS(status));
}

TEST_HARNESS_MAIN
