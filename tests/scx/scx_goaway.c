// SPDX-License-Identifier: GPL-2.0
/*
 * scx_goaway - the scheduler goes away under a libumcg process on the scx
 * backend: unloaded (umcgctl unload), ejected by the kernel (SysRq-S), or
 * ejected by an error it raises on purpose (umcgctl eject --error: the
 * test hook ctl.eject, UMCG_SCX_EJECT_ERROR) while GA_WORKERS workers
 * run, block in read() and nanosleep(), yield, switch to each other and
 * unpark each other; or unloaded and loaded again.  The workers keep
 * working until the scheduler has gone, then do GA_ROUNDS more each: the process must finish
 * that work, every worker joined, within GA_FINISH_S (issue 5: "finishes
 * its work correctly and in bounded time"; a bound, not a speed), and
 * umcg_backend_name() must say "scx" before and "scx-fallback" after.
 * The workers run in a forked child, a process of its own (one group per
 * process); the test waits for it.
 *
 * Also: with our scheduler loaded, auto-selection takes scx, and
 * UMCG_BACKEND=user still gets user.
 */
#define _GNU_SOURCE
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

#include "scx_test.h"
#include "umcg_test.h"
#include "umcg_test_crowd.h"

#define GA_WORKERS	1000
/* Operations of each worker after the scheduler went (TCG: keep it modest). */
#define GA_ROUNDS	20
/* After the scheduler went: how long the rest of the work may take. */
#define GA_FINISH_S	60
/* How long the child waits for the parent to send the scheduler away. */
#define GA_GONE_WAIT_MS	(120 * 1000)

/*
 * The child: the workload, a crowd stopped once the scheduler went.
 * Writes one byte to @ready_fd once every worker runs, then waits for one
 * on @gone_fd (the scheduler went); exits 0 when all work is done, every
 * worker joined, and the backend's name was "scx" before and
 * "scx-fallback" after; else 1.
 */
static int ga_child(int ready_fd, int gone_fd)
{
	struct umcg_config cfg = { .size = sizeof(cfg) };
	static struct umcg_test_crowd crowd;
	struct pollfd pfd = { .fd = gone_fd, .events = POLLIN };
	const char *name;
	char c;

	cfg.nr_cores = 2;
	cfg.backend = "scx";
	if (umcg_init(&cfg)) {
		printf("# child: umcg_init on scx failed\n");
		return 1;
	}
	/* The parent asks for a thread dump (stderr) when the work hangs. */
	umcg_dump_on_signal(SIGUSR1);
	if (umcg_test_crowd_start(&crowd, GA_WORKERS, GA_ROUNDS))
		return 1;
	umcg_test_crowd_wait_started(&crowd);
	name = umcg_backend_name();
	if (!name || strcmp(name, "scx")) {
		printf("# child: backend \"%s\" while the scheduler runs, "
		       "expected \"scx\"\n", name ? name : "(null)");
		return 1;
	}
	if (write(ready_fd, "r", 1) != 1)
		return 1;
	if (poll(&pfd, 1, GA_GONE_WAIT_MS) != 1 || read(gone_fd, &c, 1) != 1) {
		printf("# child: the parent never said the scheduler went\n");
		return 1;
	}
	if (umcg_test_crowd_finish(&crowd))
		return 1;
	name = umcg_backend_name();
	printf("# child: %ld operations after the scheduler went, first error %d, "
	       "backend now \"%s\"\n", atomic_load(&crowd.ops_after),
	       atomic_load(&crowd.err), name ? name : "(null)");
	fflush(stdout);
	if (atomic_load(&crowd.err))
		return 1;
	/* The report must have changed, and must not change back. */
	if (!name || strcmp(name, "scx-fallback") ||
	    strcmp(umcg_backend_name(), "scx-fallback"))
		return 1;
	return umcg_fini() ? 1 : 0;
}

FIXTURE(ga) {
	pid_t child;
};

/* How the scheduler goes away. */
enum ga_how { GA_UNLOAD, GA_SYSRQ, GA_EJECT_ERROR, GA_RELOAD };

FIXTURE_VARIANT(ga) {
	enum ga_how how;
};

FIXTURE_VARIANT_ADD(ga, unload) { .how = GA_UNLOAD };
/* Ejected by the kernel: SysRq-S. */
FIXTURE_VARIANT_ADD(ga, ejected) { .how = GA_SYSRQ };
/* Ejected by an error the scheduler raises on request (scx_bpf_error()). */
FIXTURE_VARIANT_ADD(ga, eject_error) { .how = GA_EJECT_ERROR };
/*
 * Unloaded and loaded again before the child looks: the new instance does
 * not know the child's threads (they run as plain SCHED_EXT threads in its
 * FIFO), so that is gone too, and the name must not say "scx" again.
 */
FIXTURE_VARIANT_ADD(ga, reloaded) { .how = GA_RELOAD };

/* Skip unless we can load ours; load it unless it runs. */
static bool ga_prepare(struct __test_metadata *_metadata)
{
	const char *why = scx_cannot_load();

	if (why)
		SKIP(return false, "%s", why);
	return scx_ensure_loaded();
}

FIXTURE_SETUP(ga)
{
	self->child = -1;
	if (variant->how == GA_SYSRQ && access("/proc/sysrq-trigger", W_OK))
		SKIP(return, "no /proc/sysrq-trigger (CONFIG_MAGIC_SYSRQ)");
	if (!ga_prepare(_metadata) && _metadata->exit_code != KSFT_SKIP)
		ASSERT_TRUE(false) TH_LOG("the umcg scheduler did not load");
}

FIXTURE_TEARDOWN(ga)
{
	if (self->child > 0) {
		kill(self->child, SIGKILL);
		waitpid(self->child, NULL, 0);
	}
	scx_restore_loaded();
}

TEST_F_TIMEOUT(ga, work_finishes, 280)
{
	struct pollfd pfd;
	int ready[2], gone[2], status = 0;
	long long gone_ns, went_ns;
	pid_t pid = 0;
	char c;

	ASSERT_EQ(0, pipe(ready));
	ASSERT_EQ(0, pipe(gone));
	self->child = fork();
	ASSERT_LE(0, self->child);
	if (!self->child) {
		close(ready[0]);
		close(gone[1]);
		_exit(ga_child(ready[1], gone[0]));
	}
	close(ready[1]);
	close(gone[0]);
	pfd.fd = ready[0];
	pfd.events = POLLIN;
	ASSERT_EQ(1, poll(&pfd, 1, 120 * 1000)) TH_LOG("the workers never all ran");
	ASSERT_EQ(1, read(ready[0], &c, 1)) TH_LOG("the child died before its workers ran");
	close(ready[0]);

	usleep(300 * 1000);
	went_ns = scx_now_ns();
	if (variant->how == GA_SYSRQ) {
		int fd = open("/proc/sysrq-trigger", O_WRONLY);

		ASSERT_LE(0, fd);
		ASSERT_EQ(1, write(fd, "S", 1));
		close(fd);
	} else if (variant->how == GA_EJECT_ERROR) {
		/* The VM runner's guest-run excuses this error exit only. */
		int fd = open("/dev/kmsg", O_WRONLY);

		if (fd >= 0) {
			dprintf(fd, "umcg-vm: expect scx_bpf_error\n");
			close(fd);
		}
		umcg_test_umcgctl("eject --error", false);
	} else {
		umcg_test_umcgctl("unload", false);
	}
	for (int i = 0; i < 1000 && scx_enabled(); i++)
		usleep(10 * 1000);
	ASSERT_FALSE(scx_enabled()) TH_LOG("the scheduler is still enabled");
	if (variant->how == GA_RELOAD) {
		umcg_test_umcgctl("load", false);
		ASSERT_TRUE(scx_enabled()) TH_LOG("the scheduler did not load again");
	}
	gone_ns = scx_now_ns();
	TH_LOG("the scheduler went %llu ms after it was sent away",
	       (unsigned long long)(gone_ns - went_ns) / 1000000);
	ASSERT_EQ(1, write(gone[1], "g", 1));
	close(gone[1]);
	while (scx_now_ns() - gone_ns < GA_FINISH_S * 1000000000LL) {
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
	       (unsigned long long)(scx_now_ns() - gone_ns) / 1000000);
	ASSERT_TRUE(WIFEXITED(status)) TH_LOG("child status 0x%x", status);
	ASSERT_EQ(0, WEXITSTATUS(status));
}

/*
 * Is the backend a child's umcg_init() picks with UMCG_BACKEND=@env (NULL:
 * unset) and time slice @slice_ns @want (NULL: any, if init succeeds)?
 */
static int ga_auto_child(const char *env, uint64_t slice_ns, const char *want)
{
	struct umcg_config cfg = { .size = sizeof(cfg), .time_slice_ns = slice_ns };
	const char *name;
	int ret;

	if (env)
		setenv("UMCG_BACKEND", env, 1);
	else
		unsetenv("UMCG_BACKEND");
	ret = umcg_init(&cfg);
	if (ret) {
		printf("# UMCG_BACKEND=%s: umcg_init: %s\n", env ? env : "(unset)",
		       strerror(-ret));
		return 1;
	}
	name = umcg_backend_name();
	printf("# UMCG_BACKEND=%s: backend \"%s\"\n", env ? env : "(unset)",
	       name ? name : "(null)");
	fflush(stdout);
	ret = name && (!want || !strcmp(name, want)) ? 0 : 1;
	if (umcg_fini())
		ret = 1;
	return ret;
}

static int ga_run_auto(const char *env, uint64_t slice_ns, const char *want)
{
	int status;
	pid_t pid;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid)
		_exit(ga_auto_child(env, slice_ns, want));
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/*
 * Ours loaded: auto-selection takes scx; a name still wins; a group with a
 * time slice gets a backend that has them (scx has none yet).
 */
TEST(auto_selects_scx)
{
	if (!ga_prepare(_metadata)) {
		if (_metadata->exit_code != KSFT_SKIP)
			ASSERT_TRUE(false) TH_LOG("the umcg scheduler did not load");
		return;
	}
	EXPECT_EQ(0, ga_run_auto(NULL, 0, "scx"));
	EXPECT_EQ(0, ga_run_auto("auto", 0, "scx"));
	EXPECT_EQ(0, ga_run_auto("user", 0, "user"));
	EXPECT_EQ(0, ga_run_auto(NULL, 2000000, "scx"));
	EXPECT_TRUE(scx_enabled());
	scx_restore_loaded();
}

TEST_HARNESS_MAIN
