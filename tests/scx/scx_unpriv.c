// SPDX-License-Identifier: GPL-2.0
/*
 * scx_unpriv - who may use the umcg sched_ext scheduler that root loaded
 * with "umcgctl load" (bpf/scx_pin.h, Documentation/scx.rst, Permissions).
 * The workloads run in a forked child that drops to uid and gid 65534
 * (nobody, nogroup) with no supplementary groups and no capabilities, and
 * runs libumcg with UMCG_BACKEND=scx.
 *
 * users_run_libumcg: "umcgctl load --users": the pins have the modes of
 *   the table in scx_pin.h and "umcgctl status" says "every user".  The
 *   child's workers block in read() and nanosleep(), yield, switch and
 *   unpark; umcg_backend_name() is "scx", its umcg_stats() count blocks
 *   and switches, every worker is joined.  The same child then cannot open what stays root's (link,
 *   ctl, enf_timer, the doorbell "wake", whose consumer page any process
 *   that maps it could write; a program or stats read-write), request
 *   an ejection through ctl, update the frozen shared map or map it
 *   writable, add, remove or chmod pins; "umcgctl eject" and "umcgctl
 *   unload" run by it exit with status 5.  The scheduler is still
 *   loaded and running afterwards.
 *
 * group_runs_libumcg_others_refused: "umcgctl load --group G" (G: the
 *   group of gid 65534): the child of gid 65534 runs the workload; one of
 *   gid 65533 gets -ENODEV from umcg_init() and the message names G.
 *
 * root_only_refuses: "umcgctl load": the child's umcg_init() fails with
 *   -ENODEV, and libumcg says that the scheduler was loaded for root only
 *   and points at "umcgctl load --group".
 *
 * bad_access_options: an unknown group, or --group with --users, exit 2.
 *
 * A scheduler that "umcgctl load" had loaded before is unloaded first and
 * loaded again at the end, with the access it had (and default settings).
 * Skips without sched_ext (Debian's 6.12), when not root, and when another
 * sched_ext scheduler is loaded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/capability.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "kselftest_harness.h"
#include "scx_loader.h"
#include <uapi/umcg.h>
#include <uapi/umcg_scx.h>

#include <umcg.h>

#include "umcg_test.h"
#include "umcg_test_churn.h"
#include "umcg_test_feeder.h"

#define UX_UID		65534
#define UX_GID		65534
/* A gid outside the group of UX_GID. */
#define UX_OTHER_GID	65533
#define UX_OUT_LEN	16384

/**
 * struct ux_work - the unprivileged child's workload
 * @workers: workers spawned
 * @rounds:  operations per worker
 * @checks:  then check what it must not be able to do (users load)
 */
struct ux_work {
	int	workers;
	int	rounds;
	bool	checks;
};

#define UX_MAX_WORKERS	8

struct ux_run {
	int pipefd[2];
	int nr;
	int rounds;
	umcg_thread_t *t[UX_MAX_WORKERS];
	_Atomic int ready;
	_Atomic int finished;
	_Atomic long ops;
	_Atomic int err;
};

/*
 * Run "umcgctl ARGS" (words), its output into @out; its status.  The
 * child that dropped to nobody runs it through the descriptor the test
 * opened as root (umcg_test_umcgctl_open()), wherever the build is.
 */
static int ux_ctl(char *out, size_t len, const char *args)
{
	return umcg_test_umcgctl_as((uid_t)-1, (gid_t)-1, out, len, args);
}

static void *ux_worker(void *arg)
{
	static const enum umcg_test_churn_op ops[] = {
		UMCG_CHURN_READ, UMCG_CHURN_NANOSLEEP, UMCG_CHURN_SWITCH,
		UMCG_CHURN_YIELD, UMCG_CHURN_UNPARK,
	};
	struct ux_run *r = arg;
	unsigned int seed = (unsigned int)(uintptr_t)umcg_self() | 1;

	while (atomic_load(&r->ready) < r->nr)
		umcg_yield();
	for (int i = 0; i < r->rounds; i++) {
		umcg_thread_t *peer = r->t[rand_r(&seed) % r->nr];
		int ret = umcg_test_churn(ops[i % 5], r->pipefd[0], peer);

		if (ret) {
			int zero = 0;

			atomic_compare_exchange_strong(&r->err, &zero, ret);
		}
		atomic_fetch_add(&r->ops, 1);
	}
	/* Whoever parked switching to us: go on. */
	for (int i = 0; i < r->nr; i++)
		umcg_unpark(r->t[i]);
	atomic_fetch_add(&r->finished, 1);
	return NULL;
}

/* libumcg on scx with @w; 0 or a distinct status, as printed. */
static int ux_workload(const struct ux_work *w)
{
	struct umcg_config cfg = { .size = sizeof(cfg), .nr_cores = 2 };
	struct umcg_test_feeder feeder = { 0 };
	static struct ux_run r;
	struct umcg_stats st;
	int ret, i;

	r.nr = w->workers;
	r.rounds = w->rounds;
	if (pipe(r.pipefd))
		return 20;
	ret = umcg_init(&cfg);
	if (ret) {
		printf("# child: umcg_init: %s\n", strerror(-ret));
		return 21;
	}
	printf("# child: uid %d gid %d, backend \"%s\"\n", (int)geteuid(),
	       (int)getegid(), umcg_backend_name());
	if (strcmp(umcg_backend_name(), "scx"))
		return 22;
	if (umcg_test_feeder_start(&feeder, r.pipefd[1], 200))
		return 23;
	for (i = 0; i < r.nr; i++) {
		ret = umcg_spawn(&r.t[i], NULL, ux_worker, &r);
		if (ret) {
			printf("# child: spawn %d: %s\n", i, strerror(-ret));
			return 24;
		}
	}
	atomic_store(&r.ready, r.nr);
	while (atomic_load(&r.finished) < r.nr)
		usleep(1000);
	for (i = 0; i < r.nr; i++) {
		ret = umcg_join(r.t[i], NULL);
		if (ret) {
			printf("# child: join %d: %s\n", i, strerror(-ret));
			return 25;
		}
	}
	umcg_test_feeder_stop(&feeder);
	if (umcg_stats(&st))
		return 26;
	printf("# child: %ld operations, first error %d; %llu switches, %llu "
	       "blocks, %llu yields\n", atomic_load(&r.ops), atomic_load(&r.err),
	       (unsigned long long)st.switches, (unsigned long long)st.blocks,
	       (unsigned long long)st.yields);
	if (atomic_load(&r.ops) != (long)r.nr * r.rounds || atomic_load(&r.err))
		return 27;
	/* read() and nanosleep() of workers were seen as blocks. */
	if (!st.blocks || !st.switches)
		return 28;
	if (strcmp(umcg_backend_name(), "scx"))
		return 29;
	return umcg_fini() ? 30 : 0;
}

/* @ret is -EACCES, or print what it was; 0 or 1. */
static int ux_refused(const char *what, int ret)
{
	if (ret == -EACCES)
		return 0;
	printf("# child: %s: %d (%s), expected EACCES\n", what, ret,
	       ret < 0 ? strerror(-ret) : "opened");
	if (ret >= 0)
		close(ret);
	return 1;
}

/* What an unprivileged user of a "--users" load must not be able to do. */
static int ux_checks(void)
{
	char path[PATH_MAX], out[UX_OUT_LEN];
	struct umcg_scx_shared *junk;
	int bad = 0, fd, ret;
	__u32 zero = 0;
	void *m;

	bad += ux_refused("link", umcg_scx_pin_open(UMCG_SCX_PIN_DIR, UMCG_SCX_PIN_LINK, false));
	bad += ux_refused("link read-only",
			  umcg_scx_pin_open(UMCG_SCX_PIN_DIR, UMCG_SCX_PIN_LINK, true));
	bad += ux_refused("ctl", umcg_scx_pin_open(UMCG_SCX_PIN_DIR, UMCG_SCX_PIN_CTL, false));
	bad += ux_refused("ctl read-only",
			  umcg_scx_pin_open(UMCG_SCX_PIN_DIR, UMCG_SCX_PIN_CTL, true));
	bad += ux_refused("enf_timer read-only",
			  umcg_scx_pin_open(UMCG_SCX_PIN_DIR, UMCG_SCX_PIN_TIMER, true));
	bad += ux_refused("bells read-only",
			  umcg_scx_pin_open(UMCG_SCX_PIN_DIR, UMCG_SCX_PIN_BELLS, true));
	bad += ux_refused("wake (the doorbell)",
			  umcg_scx_pin_open(UMCG_SCX_PIN_DIR, UMCG_SCX_PIN_WAKE, false));
	bad += ux_refused("wake read-only",
			  umcg_scx_pin_open(UMCG_SCX_PIN_DIR, UMCG_SCX_PIN_WAKE, true));
	bad += ux_refused("stats read-write",
			  umcg_scx_pin_open(UMCG_SCX_PIN_DIR, UMCG_SCX_PIN_STATS, false));
	bad += ux_refused("umcg_pick read-write",
			  umcg_scx_pin_open(UMCG_SCX_PIN_DIR, "umcg_pick", false));
	bad += ux_refused("eject request",
			  umcg_scx_pinned_request_eject(UMCG_SCX_PIN_DIR, UMCG_SCX_EJECT_EXIT));

	/* shared: open read-write (it must), but frozen. */
	fd = umcg_scx_pin_open(UMCG_SCX_PIN_DIR, UMCG_SCX_PIN_SHARED, false);
	if (fd < 0) {
		printf("# child: shared: %s\n", strerror(-fd));
		return 40;
	}
	junk = calloc(1, sizeof(*junk));
	if (!junk || !bpf_map_update_elem(fd, &zero, junk, BPF_ANY) || errno != EPERM) {
		printf("# child: shared: update not refused with EPERM\n");
		bad++;
	}
	free(junk);
	m = mmap(NULL, getpagesize(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m != MAP_FAILED || errno != EPERM) {
		printf("# child: shared: writable mapping not refused with EPERM\n");
		bad++;
	}
	close(fd);

	/* The directory and the pins are root's. */
	snprintf(path, sizeof(path), "%s/umcg_pick", UMCG_SCX_PIN_DIR);
	if (!unlink(path) || errno != EACCES) {
		printf("# child: unlink umcg_pick: not refused with EACCES (%m)\n");
		bad++;
	}
	if (!chmod(path, 0666) || errno != EPERM) {
		printf("# child: chmod umcg_pick: not refused with EPERM (%m)\n");
		bad++;
	}
	snprintf(path, sizeof(path), "%s/mine", UMCG_SCX_PIN_DIR);
	fd = open(path, O_CREAT | O_WRONLY, 0666);
	if (fd >= 0 || errno != EACCES) {
		printf("# child: creating %s: not refused with EACCES (%m)\n", path);
		bad++;
	}

	ret = ux_ctl(out, sizeof(out), "eject");
	if (ret != 5) {
		printf("# child: umcgctl eject: status %d: %s\n", ret, out);
		bad++;
	}
	ret = ux_ctl(out, sizeof(out), "unload");
	if (ret != 5) {
		printf("# child: umcgctl unload: status %d: %s\n", ret, out);
		bad++;
	}
	return bad ? 41 : 0;
}

/*
 * The child: drop to @uid/@gid, run libumcg on scx.  @expect_ok: the
 * workload @w, then its checks; else umcg_init() must fail with -ENODEV.
 */
static int ux_child(uid_t uid, gid_t gid, bool expect_ok, const struct ux_work *w)
{
	struct umcg_config cfg = { .size = sizeof(cfg), .nr_cores = 1 };
	int ret;

	ret = umcg_test_drop_to(uid, gid);
	if (ret) {
		printf("# child: cannot drop to %d/%d: %s\n", (int)uid, (int)gid,
		       strerror(-ret));
		return 10;
	}
	if (setenv("UMCG_BACKEND", "scx", 1))
		return 11;
	if (!expect_ok) {
		ret = umcg_init(&cfg);
		if (ret != -ENODEV) {
			printf("# child: umcg_init: %d, expected -ENODEV\n", ret);
			return 12;
		}
		return 0;
	}
	ret = ux_workload(w);
	if (ret || !w->checks)
		return ret;
	return ux_checks();
}

/*
 * Fork ux_child(); its standard error into @err (UX_OUT_LEN), its
 * standard output to ours.  Its exit status, or -1.
 */
static int ux_run_child(uid_t uid, gid_t gid, bool expect_ok,
			const struct ux_work *w, char *err)
{
	int fds[2], status;
	pid_t pid;

	if (pipe(fds))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], 2);
		_exit(ux_child(uid, gid, expect_ok, w));
	}
	close(fds[1]);
	umcg_test_read_all(fds[0], err, UX_OUT_LEN);
	close(fds[0]);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

FIXTURE(ux) {
	bool was_loaded;		/* "umcgctl load" had loaded it */
	struct umcg_scx_access was;	/* with this access */
	char out[UX_OUT_LEN];
	char err[UX_OUT_LEN];
};

FIXTURE_SETUP(ux)
{
	char state[32] = "";

	if (access("/sys/kernel/sched_ext", F_OK))
		SKIP(return, "no sched_ext in this kernel");
	if (geteuid())
		SKIP(return, "loading the scheduler needs root");
	/* As root: nobody's children run umcgctl through it (ux_ctl()). */
	ASSERT_EQ(0, umcg_test_umcgctl_open());
	self->was_loaded = umcg_scx_pinned(UMCG_SCX_PIN_DIR) == 1;
	if (self->was_loaded) {
		if (umcg_scx_pinned_access(UMCG_SCX_PIN_DIR, &self->was))
			self->was.users = UMCG_SCX_USERS_ROOT;
		ASSERT_EQ(0, ux_ctl(self->out, sizeof(self->out), "unload"))
			TH_LOG("unload: %s", self->out);
	}
	umcg_scx_sysfs_read("state", state, sizeof(state));
	if (strcmp(state, "disabled"))
		SKIP(return, "sched_ext is taken (state %s)", state);
}

FIXTURE_TEARDOWN(ux)
{
	char arg[64];

	if (umcg_scx_pinned(UMCG_SCX_PIN_DIR) == 1)
		ux_ctl(self->out, sizeof(self->out), "unload");
	if (!self->was_loaded)
		return;
	if (self->was.users == UMCG_SCX_USERS_ALL)
		snprintf(arg, sizeof(arg), "load --users");
	else if (self->was.users == UMCG_SCX_USERS_GROUP)
		snprintf(arg, sizeof(arg), "load --group %u", (unsigned int)self->was.gid);
	else
		snprintf(arg, sizeof(arg), "load");
	ux_ctl(self->out, sizeof(self->out), arg);
}

/* The pin @name has mode @mode and group @gid. */
static int ux_pin_is(const char *name, mode_t mode, gid_t gid)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", UMCG_SCX_PIN_DIR, name);
	if (stat(path, &st))
		return -errno;
	if ((st.st_mode & 07777) != mode || st.st_uid != 0 || st.st_gid != gid) {
		printf("# %s: mode %04o, owner %d:%d; expected %04o 0:%d\n", name,
		       (unsigned int)(st.st_mode & 07777), (int)st.st_uid,
		       (int)st.st_gid, (unsigned int)mode, (int)gid);
		return 1;
	}
	return 0;
}

/* The modes of scx_pin.h's table for @use_r and @use_rw (group @gid). */
static int ux_modes_are(mode_t use_r, mode_t use_rw, gid_t gid)
{
	static const char *const progs[] = {
		"umcg_register", "umcg_pick", "umcg_unregister", "umcg_poke",
	};
	int bad = 0;

	for (int i = 0; i < 4; i++)
		bad |= ux_pin_is(progs[i], use_r, gid);
	bad |= ux_pin_is(UMCG_SCX_PIN_SHARED, use_rw, gid);
	bad |= ux_pin_is(UMCG_SCX_PIN_WAKE, 0600, 0);
	bad |= ux_pin_is(UMCG_SCX_PIN_LINK, 0600, 0);
	bad |= ux_pin_is(UMCG_SCX_PIN_CTL, 0600, 0);
	bad |= ux_pin_is(UMCG_SCX_PIN_TIMER, 0600, 0);
	bad |= ux_pin_is(UMCG_SCX_PIN_BELLS, 0600, 0);
	bad |= ux_pin_is(UMCG_SCX_PIN_STATS, 0444, 0);
	bad |= ux_pin_is(UMCG_SCX_PIN_TASK_STATS, 0444, 0);
	bad |= ux_pin_is(UMCG_SCX_PIN_EXIT_INFO, 0444, 0);
	return bad;
}

/* Print @text as TAP comments. */
static void ux_comment(const char *what, const char *text)
{
	const char *p = text;

	while (*p) {
		size_t n = strcspn(p, "\n");

		printf("# %s: %.*s\n", what, (int)n, p);
		p += n + (p[n] == '\n');
	}
}

TEST_F_TIMEOUT(ux, users_run_libumcg, 240)
{
	const struct ux_work w = { .workers = UX_MAX_WORKERS, .rounds = 60, .checks = true };
	char state[32] = "", ops[64] = "";
	int ret;

	ASSERT_EQ(0, ux_ctl(self->out, sizeof(self->out), "load --users"))
		TH_LOG("load --users: %s", self->out);
	ASSERT_NE(NULL, strstr(self->out, "usable by every user")) TH_LOG("%s", self->out);
	ASSERT_EQ(0, ux_modes_are(0644, 0666, 0));
	ASSERT_EQ(0, ux_ctl(self->out, sizeof(self->out), "status"));
	ux_comment("status", self->out);
	ASSERT_NE(NULL, strstr(self->out, "users:      every user"));

	ret = ux_run_child(UX_UID, UX_GID, true, &w, self->err);
	ux_comment("child stderr", self->err);
	ASSERT_EQ(0, ret) TH_LOG("the unprivileged child failed (status %d, see "
				 "ux_workload() and ux_checks())", ret);

	umcg_scx_sysfs_read("state", state, sizeof(state));
	umcg_scx_sysfs_read("root/ops", ops, sizeof(ops));
	ASSERT_STREQ("enabled", state);
	ASSERT_STREQ(UMCG_SCX_OPS_NAME, ops);
	ASSERT_EQ(0, ux_ctl(self->out, sizeof(self->out), "status"))
		TH_LOG("status: %s", self->out);
}

TEST_F_TIMEOUT(ux, group_runs_libumcg_others_refused, 240)
{
	const struct ux_work w = { .workers = 4, .rounds = 20 };
	struct group *gr = getgrgid(UX_GID);
	char arg[128], want[160];
	int ret;

	if (!gr)
		SKIP(return, "no group with gid %d in the group database", UX_GID);
	snprintf(arg, sizeof(arg), "load --group %s", gr->gr_name);
	snprintf(want, sizeof(want), "root and group %s (gid %d)", gr->gr_name, UX_GID);
	ASSERT_EQ(0, ux_ctl(self->out, sizeof(self->out), arg)) TH_LOG("%s: %s", arg, self->out);
	ASSERT_NE(NULL, strstr(self->out, want)) TH_LOG("%s", self->out);
	ASSERT_EQ(0, ux_modes_are(0640, 0660, UX_GID));
	ASSERT_EQ(0, ux_ctl(self->out, sizeof(self->out), "status"));
	ux_comment("status", self->out);
	ASSERT_NE(NULL, strstr(self->out, want));

	ret = ux_run_child(UX_UID, UX_GID, true, &w, self->err);
	ux_comment("member's stderr", self->err);
	ASSERT_EQ(0, ret) TH_LOG("the group's member failed (status %d)", ret);

	ret = ux_run_child(UX_UID, UX_OTHER_GID, false, &w, self->err);
	ux_comment("non-member's stderr", self->err);
	ASSERT_EQ(0, ret) TH_LOG("the non-member's umcg_init did not fail with -ENODEV");
	snprintf(want, sizeof(want), "permission denied: the scheduler was loaded for "
		 "root and group %s (gid %d), which this process is not in",
		 gr->gr_name, UX_GID);
	ASSERT_NE(NULL, strstr(self->err, want)) TH_LOG("no \"%s\"", want);
}

TEST_F_TIMEOUT(ux, root_only_refuses, 120)
{
	int ret;

	ASSERT_EQ(0, ux_ctl(self->out, sizeof(self->out), "load"))
		TH_LOG("load: %s", self->out);
	ASSERT_NE(NULL, strstr(self->out, "usable by root only")) TH_LOG("%s", self->out);
	ASSERT_EQ(0, ux_modes_are(0600, 0600, 0));
	ASSERT_EQ(0, ux_ctl(self->out, sizeof(self->out), "status"));
	ASSERT_NE(NULL, strstr(self->out, "users:      root only"));

	ret = ux_run_child(UX_UID, UX_GID, false, NULL, self->err);
	ux_comment("child stderr", self->err);
	ASSERT_EQ(0, ret) TH_LOG("umcg_init did not fail with -ENODEV");
	ASSERT_NE(NULL, strstr(self->err, UMCG_SCX_PIN_DIR "/umcg_register: permission "
			       "denied: the scheduler was loaded for root only; see "
			       "umcgctl load --group"));
}

TEST_F(ux, bad_access_options)
{
	ASSERT_EQ(2, ux_ctl(self->out, sizeof(self->out),
			    "load --group umcg_no_such_group_x"));
	ASSERT_NE(NULL, strstr(self->out, "no such group")) TH_LOG("%s", self->out);
	ASSERT_EQ(2, ux_ctl(self->out, sizeof(self->out), "load --users --group root"));
	ASSERT_EQ(2, ux_ctl(self->out, sizeof(self->out), "load --group"));
	ASSERT_EQ(0, umcg_scx_pinned(UMCG_SCX_PIN_DIR)) TH_LOG("loaded anyway");
}

TEST_HARNESS_MAIN
