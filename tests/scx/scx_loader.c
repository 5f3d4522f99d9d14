// SPDX-License-Identifier: GPL-2.0
/*
 * Description: "umcgctl load|unload|status|stats|eject" (tools/umcgctl,
 * bpf/scx_pin.h).  load leaves the scheduler attached after umcgctl exits,
 * pinned in bpffs; status and stats read it back, also as an unprivileged
 * user; stats count a busy SCHED_EXT thread; a second load is refused;
 * unload reports UNREG and removes the pins.  When the kernel ejects the
 * scheduler (SysRq-S, or the BPF test hook through "umcgctl eject"), status
 * reports the recorded exit kind, reason and message and says to unload.
 * load refuses, naming it, when another scheduler holds sched_ext (a
 * second instance of ours, opened through the loader library under another
 * name).  Skips on kernels without sched_ext.
 *
 * Needs the machine's sched_ext to itself: it loads and unloads the real
 * scheduler at UMCG_SCX_PIN_DIR.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/magic.h>

#include "kselftest_harness.h"
#include "scx_loader.h"
#include "umcg_test.h"
#include <uapi/umcg.h>

#ifndef SCHED_EXT
#define SCHED_EXT	7
#endif

/* The unprivileged user of the checks: nobody. */
#define NOBODY		65534
/* Rounds of the busy thread: each spins, then sleeps, once. */
#define NR_ROUNDS	20
/* Generous: TCG is slow and the machine may be busy. */
#define WAIT_MS		20000
#define OUT_LEN		8192

static long long elapsed_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000LL +
	       (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* "umcgctl ARGS" as root, or as nobody; see umcg_test_umcgctl_as(). */
#define ctl(out, args)		umcg_test_umcgctl_as((uid_t)-1, (gid_t)-1, out, OUT_LEN, args)
#define ctl_nobody(out, args)	umcg_test_umcgctl_as(NOBODY, NOBODY, out, OUT_LEN, args)

/* The value of counter @name in "umcgctl stats" output, or -1. */
static long long stat_value(const char *out, const char *name)
{
	size_t len = strlen(name);

	for (const char *line = out; line && *line; line = strchr(line, '\n')) {
		long long v;

		if (*line == '\n')
			line++;
		if (!strncmp(line, name, len) && line[len] == ' ' &&
		    sscanf(line + len, "%lld", &v) == 1)
			return v;
	}
	return -1;
}

static bool sysfs_is(const char *name, const char *want)
{
	char buf[64];

	return !umcg_scx_sysfs_read(name, buf, sizeof(buf)) && !strcmp(buf, want);
}

/* True once "umcgctl status" exits with @want, false after WAIT_MS. */
static bool status_becomes(int want, char *out)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (ctl(out, "status") == want)
			return true;
		if (elapsed_ms(&t0) > WAIT_MS)
			return false;
		usleep(10000);
	}
}

/*
 * True once sysfs file @name reads @want, false after WAIT_MS: the kernel
 * records the exit (what umcgctl reports) before its disable work has
 * finished moving the tasks back and set "disabled".
 */
static bool sysfs_becomes(const char *name, const char *want)
{
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (!sysfs_is(name, want)) {
		if (elapsed_ms(&t0) > WAIT_MS)
			return false;
		usleep(10000);
	}
	return true;
}

struct busy {
	pthread_t	thread;
	atomic_int	setsched_errno;
	atomic_bool	done;
};

static void *busy_main(void *arg)
{
	struct busy *b = arg;
	struct sched_param sp = { 0 };
	struct timespec t0;

	if (sched_setscheduler(0, SCHED_EXT, &sp))
		b->setsched_errno = errno;
	for (int i = 0; i < NR_ROUNDS; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		while (elapsed_ms(&t0) < 1)
			;
		usleep(1000);
	}
	b->done = true;
	return NULL;
}

FIXTURE(loader) {
	struct umcg_scx *other;		/* a second instance, if a test made one */
	char out[OUT_LEN];
};

FIXTURE_SETUP(loader)
{
	char ops[64] = "";
	int ret;

	self->other = NULL;
	ret = umcg_scx_probe();
	if (ret == -ENOENT)
		SKIP(return, "no sched_ext in this kernel (/sys/kernel/sched_ext is missing)");
	if (ret == -EPERM)
		SKIP(return, "umcgctl load needs root");
	/* A test before us may have left ours loaded (or ejected). */
	if (umcg_scx_pinned(UMCG_SCX_PIN_DIR) == 1)
		ctl(self->out, "unload");
	ret = umcg_scx_probe();
	umcg_scx_sysfs_read("root/ops", ops, sizeof(ops));
	ASSERT_EQ(0, ret) TH_LOG("sched_ext is not free (\"%s\" loaded?): %s",
				 ops, strerror(-ret));
}

FIXTURE_TEARDOWN(loader)
{
	char out[OUT_LEN];

	umcg_scx_close(self->other);
	if (umcg_scx_pinned(UMCG_SCX_PIN_DIR) == 1)
		ctl(out, "unload");
}

TEST_F_TIMEOUT(loader, load_status_stats_unload, 120)
{
	long long running0, enable0, running1, enable1;
	struct busy b = { 0 };
	int ret;

	ret = ctl(self->out, "load");
	TH_LOG("load: %s", self->out);
	ASSERT_EQ(0, ret);
	ASSERT_NE(NULL, strstr(self->out, "loaded \"" UMCG_SCX_OPS_NAME "\""));
	/* umcgctl has exited; the pins hold the scheduler. */
	ASSERT_TRUE(sysfs_is("state", "enabled"));
	ASSERT_TRUE(sysfs_is("root/ops", UMCG_SCX_OPS_NAME));
	ASSERT_EQ(1, umcg_scx_pinned(UMCG_SCX_PIN_DIR));

	ret = ctl(self->out, "status");
	TH_LOG("status: %s", self->out);
	ASSERT_EQ(0, ret);
	ASSERT_NE(NULL, strstr(self->out, "loaded, running"));
	ASSERT_NE(NULL, strstr(self->out, "enabled, scheduler \"umcg\""));

	ASSERT_EQ(0, ctl(self->out, "stats"));
	running0 = stat_value(self->out, "running");
	enable0 = stat_value(self->out, "enable");
	ASSERT_LE(0, running0) TH_LOG("stats: %s", self->out);
	ASSERT_LE(0, enable0);

	ASSERT_EQ(0, pthread_create(&b.thread, NULL, busy_main, &b));
	ASSERT_EQ(0, pthread_join(b.thread, NULL));
	ASSERT_EQ(0, b.setsched_errno) TH_LOG("sched_setscheduler(SCHED_EXT): %s",
					      strerror(b.setsched_errno));
	ASSERT_TRUE(b.done);

	ret = ctl(self->out, "stats");
	TH_LOG("stats: %s", self->out);
	ASSERT_EQ(0, ret);
	running1 = stat_value(self->out, "running");
	enable1 = stat_value(self->out, "enable");
	/* Every sleep ended in a wake-up that BPF ran. */
	ASSERT_GE(running1 - running0, NR_ROUNDS);
	ASSERT_GE(enable1 - enable0, 1);

	ret = ctl(self->out, "stats -v");
	ASSERT_EQ(0, ret) TH_LOG("stats -v: %s", self->out);
	ASSERT_NE(NULL, strstr(self->out, "cpu0"));
	ASSERT_LE(running1, stat_value(self->out, "running"));

	ret = ctl(self->out, "stats --interval 1 --count 2");
	ASSERT_EQ(0, ret) TH_LOG("stats --interval: %s", self->out);
	ASSERT_NE(NULL, strstr(self->out, "change"));

	/* Loaded once per machine: a second load is refused, with status 3. */
	ret = ctl(self->out, "load");
	TH_LOG("second load: %s", self->out);
	ASSERT_EQ(3, ret);
	ASSERT_NE(NULL, strstr(self->out, "already loaded"));
	ASSERT_TRUE(sysfs_is("root/ops", UMCG_SCX_OPS_NAME));

	ret = ctl(self->out, "unload");
	TH_LOG("unload: %s", self->out);
	ASSERT_EQ(0, ret);
	ASSERT_NE(NULL, strstr(self->out, "UNREG (64)"));
	ASSERT_TRUE(sysfs_becomes("state", "disabled"));
	ASSERT_EQ(0, umcg_scx_pinned(UMCG_SCX_PIN_DIR));
	ASSERT_NE(0, access(UMCG_SCX_PIN_DIR, F_OK));

	ret = ctl(self->out, "status");
	TH_LOG("status: %s", self->out);
	ASSERT_EQ(3, ret);
	ASSERT_NE(NULL, strstr(self->out, "umcg:       not loaded"));
	ASSERT_EQ(3, ctl(self->out, "stats"));
	ASSERT_EQ(3, ctl(self->out, "unload"));
}

TEST_F_TIMEOUT(loader, unprivileged_readers, 120)
{
	bool was_private = false;
	char sysctl[16] = "?";
	struct statfs sf;
	struct stat st;
	pid_t pid;
	int status, fd, ret;

	fd = open("/proc/sys/kernel/unprivileged_bpf_disabled", O_RDONLY);
	if (fd >= 0) {
		ret = read(fd, sysctl, sizeof(sysctl) - 1);
		sysctl[ret > 0 ? ret - 1 : 0] = '\0';
		close(fd);
	}
	/* As systemd mounts it: load must open the way for others. */
	if (!statfs(UMCG_SCX_BPFFS, &sf) && sf.f_type == BPF_FS_MAGIC) {
		ASSERT_EQ(0, chmod(UMCG_SCX_BPFFS, 0700));
		was_private = true;
	}
	ASSERT_EQ(0, ctl(self->out, "load")) TH_LOG("load: %s", self->out);
	TH_LOG("load: %s", self->out);
	if (was_private)
		ASSERT_NE(NULL, strstr(self->out, "gave others search permission"));
	ASSERT_EQ(0, stat(UMCG_SCX_BPFFS, &st));
	TH_LOG("kernel.unprivileged_bpf_disabled=%s, %s mode %o", sysctl,
	       UMCG_SCX_BPFFS, st.st_mode & 07777);
	/* o+x */
	ASSERT_EQ(0001, st.st_mode & 0001);

	/* BPF_OBJ_GET and a lookup, as nobody, in a child of the test. */
	fflush(NULL);
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		struct user_exit_info ei;
		struct umcg_scx_stats sum;
		int nr = umcg_scx_nr_cpus();

		if (umcg_test_drop_to(NOBODY, NOBODY))
			_exit(10);
		ret = umcg_scx_pinned_stats(UMCG_SCX_PIN_DIR, &sum, NULL, nr);
		if (ret) {
			fprintf(stderr, "# nobody: stats: %s\n", strerror(-ret));
			_exit(11);
		}
		ret = umcg_scx_pinned_exit_info(UMCG_SCX_PIN_DIR, &ei);
		if (ret || ei.kind != UMCG_SCX_EXIT_NONE) {
			fprintf(stderr, "# nobody: exit_info: %s\n", strerror(-ret));
			_exit(12);
		}
		/* Root's: the link (whoever holds it can unload) and ctl. */
		ret = umcg_scx_pin_open(UMCG_SCX_PIN_DIR, UMCG_SCX_PIN_LINK, false);
		if (ret != -EACCES) {
			fprintf(stderr, "# nobody: link: %d\n", ret);
			_exit(13);
		}
		ret = umcg_scx_pin_open(UMCG_SCX_PIN_DIR, UMCG_SCX_PIN_CTL, false);
		if (ret != -EACCES) {
			fprintf(stderr, "# nobody: ctl: %d\n", ret);
			_exit(14);
		}
		/* Read-only means read-only. */
		fd = umcg_scx_pin_open(UMCG_SCX_PIN_DIR, UMCG_SCX_PIN_STATS, false);
		if (fd != -EACCES) {
			fprintf(stderr, "# nobody: stats read-write: %d\n", fd);
			_exit(15);
		}
		_exit(0);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status)) TH_LOG("nobody's BPF_OBJ_GET checks failed");

	ret = ctl_nobody(self->out, "status");
	TH_LOG("status as nobody: %s", self->out);
	ASSERT_EQ(0, ret);
	ret = ctl_nobody(self->out, "stats");
	TH_LOG("stats as nobody: %s", self->out);
	ASSERT_EQ(0, ret);
	ASSERT_LE(0, stat_value(self->out, "running"));

	ret = ctl_nobody(self->out, "unload");
	ASSERT_EQ(5, ret) TH_LOG("unload as nobody: %s", self->out);
	ret = ctl_nobody(self->out, "load");
	ASSERT_EQ(5, ret) TH_LOG("load as nobody: %s", self->out);
	ASSERT_NE(NULL, strstr(self->out, "must run as root"));
	ret = ctl_nobody(self->out, "eject");
	ASSERT_EQ(5, ret) TH_LOG("eject as nobody: %s", self->out);
	ASSERT_EQ(0, ctl(self->out, "status"));
}

TEST_F_TIMEOUT(loader, sysrq_ejection_is_reported, 120)
{
	int fd, ret;

	if (access("/proc/sysrq-trigger", W_OK))
		SKIP(return, "no /proc/sysrq-trigger (CONFIG_MAGIC_SYSRQ)");
	ASSERT_EQ(0, ctl(self->out, "load")) TH_LOG("load: %s", self->out);

	/* SysRq-S: the kernel disables sched_ext; the sysctl gates keyboards only. */
	fd = open("/proc/sysrq-trigger", O_WRONLY);
	ASSERT_LE(0, fd);
	ASSERT_EQ(1, write(fd, "S", 1));
	close(fd);

	ASSERT_TRUE(status_becomes(1, self->out)) TH_LOG("status: %s", self->out);
	TH_LOG("status after SysRq-S: %s", self->out);
	ASSERT_NE(NULL, strstr(self->out, "ejected by the kernel"));
	ASSERT_NE(NULL, strstr(self->out, "exit kind:  SYSRQ (67)"));
	ASSERT_NE(NULL, strstr(self->out, "reason:     disabled by sysrq-S"));
	ASSERT_NE(NULL, strstr(self->out, "umcgctl unload"));
	ASSERT_TRUE(sysfs_becomes("state", "disabled"));

	/* Stale pins: load says so and does not touch them. */
	ret = ctl(self->out, "load");
	TH_LOG("load after the ejection: %s", self->out);
	ASSERT_EQ(3, ret);
	ASSERT_NE(NULL, strstr(self->out, "ejected"));
	/* The counters stay readable. */
	ASSERT_EQ(0, ctl(self->out, "stats"));
	ASSERT_NE(NULL, strstr(self->out, "note: the kernel ejected"));

	ret = ctl(self->out, "unload");
	TH_LOG("unload: %s", self->out);
	ASSERT_EQ(0, ret);
	ASSERT_NE(NULL, strstr(self->out, "had ejected it before: SYSRQ"));
	ASSERT_EQ(3, ctl(self->out, "status"));
	ASSERT_EQ(0, ctl(self->out, "load")) TH_LOG("reload: %s", self->out);
	ASSERT_EQ(0, ctl(self->out, "status"));
}

TEST_F_TIMEOUT(loader, hook_ejection_is_reported, 120)
{
	char want[64];
	int ret;

	ASSERT_EQ(0, ctl(self->out, "load")) TH_LOG("load: %s", self->out);
	ret = ctl(self->out, "eject");
	TH_LOG("eject: %s", self->out);
	ASSERT_EQ(0, ret);
	ASSERT_NE(NULL, strstr(self->out, "UNREG_BPF"));

	ASSERT_TRUE(status_becomes(1, self->out)) TH_LOG("status: %s", self->out);
	TH_LOG("status after eject: %s", self->out);
	ASSERT_NE(NULL, strstr(self->out, "exit kind:  UNREG_BPF (65)"));
	snprintf(want, sizeof(want), "exit code:  %d", UMCG_SCX_EJECT_CODE);
	ASSERT_NE(NULL, strstr(self->out, want));
	ASSERT_NE(NULL, strstr(self->out, "reason:     unregistered from BPF"));
	ASSERT_NE(NULL, strstr(self->out, UMCG_SCX_EJECT_MSG));
	ASSERT_EQ(3, ctl(self->out, "eject"));

	ret = ctl(self->out, "unload");
	TH_LOG("unload: %s", self->out);
	ASSERT_EQ(0, ret);
	ASSERT_NE(NULL, strstr(self->out, "UNREG_BPF"));
	ASSERT_EQ(3, ctl(self->out, "status"));
}

/* Occupy sched_ext with an instance of ours named @name. */
static int occupy(struct umcg_scx **sp, const char *name)
{
	struct umcg_scx_opts opts = { .name = name };
	int ret;

	ret = umcg_scx_open(sp, &opts);
	if (!ret)
		ret = umcg_scx_attach(*sp);
	return ret;
}

TEST_F_TIMEOUT(loader, load_refuses_another_scheduler, 120)
{
	int ret;

	ASSERT_EQ(0, occupy(&self->other, "umcg_other"));
	ASSERT_TRUE(sysfs_is("root/ops", "umcg_other"));

	ret = ctl(self->out, "load");
	TH_LOG("load: %s", self->out);
	ASSERT_EQ(4, ret);
	ASSERT_NE(NULL, strstr(self->out, "\"umcg_other\""));
	/* A refused load leaves nothing behind. */
	ASSERT_NE(0, access(UMCG_SCX_PIN_DIR, F_OK));

	ret = ctl(self->out, "status");
	TH_LOG("status: %s", self->out);
	ASSERT_EQ(3, ret);
	ASSERT_NE(NULL, strstr(self->out, "another scheduler, \"umcg_other\""));
	ASSERT_EQ(3, ctl(self->out, "unload"));
	ASSERT_FALSE(umcg_scx_exited(self->other));

	/* An unpinned instance named like ours is "held by some process". */
	umcg_scx_close(self->other);
	self->other = NULL;
	ASSERT_EQ(0, occupy(&self->other, NULL));
	ret = ctl(self->out, "load");
	TH_LOG("load: %s", self->out);
	ASSERT_EQ(4, ret);
	ASSERT_NE(NULL, strstr(self->out, "not loaded by umcgctl"));
	ASSERT_EQ(3, ctl(self->out, "status"));

	/* Free again: load works. */
	umcg_scx_close(self->other);
	self->other = NULL;
	ASSERT_EQ(0, ctl(self->out, "load")) TH_LOG("load: %s", self->out);
	ASSERT_EQ(0, ctl(self->out, "unload")) TH_LOG("unload: %s", self->out);
}

/*
 * The harness exits 0 even when every test skipped; exit status 4
 * (KSFT_SKIP) is what says "skipped".  A kernel without sched_ext must
 * never look like a pass.  Runs in the harness's process only.
 */
static void exit_skip_if_all_skipped(void)
{
	if (ksft_get_xskip_cnt() > 0 && ksft_get_pass_cnt() == 0 &&
	    ksft_get_fail_cnt() == 0 && ksft_get_xfail_cnt() == 0 &&
	    ksft_get_xpass_cnt() == 0 && ksft_get_error_cnt() == 0) {
		fflush(NULL);
		_exit(KSFT_SKIP);
	}
}

int main(int argc, char **argv)
{
	atexit(exit_skip_if_all_skipped);
	return test_harness_run(argc, argv);
}
