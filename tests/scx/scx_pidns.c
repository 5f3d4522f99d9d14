// SPDX-License-Identifier: GPL-2.0
/*
 * scx_pidns - the umcg sched_ext scheduler and libumcg's scx backend
 * inside a PID namespace, as an unprivileged user.  The scheduler is
 * loaded with "umcgctl load --users"; each case forks a child that does
 * what "unshare --pid --fork --mount-proc" does (a new PID and mount
 * namespace, a child that is pid 1 there, with /proc of that namespace
 * mounted) and drops to nobody (uid and gid 65534, no groups, no
 * capabilities).  The commands take tids as the caller sees them
 * (uapi/umcg_scx.h, "Thread ids").
 *
 * prog.*: a guest program of libumcg on scx run in there: the raw exit
 *   of a worker reported (scx_backend_raw_exit), the read() hand-off
 *   (scx_backend_handoff), switch_to's CPU (scx_backend_switch_cpu), and
 *   the contract programs of blocks, wakes, switches, parks and faults
 *   (scx_contract_c2_block, _c3_wake, _c4_switch, _c5_park, _c7_faults).
 *   Each must pass (exit 0; a skip is a failure here: the scheduler is
 *   there and open to every user).  Its output is shown as comments.
 *   nobody runs a copy (umcg_test_stage_make(): the program, the contract
 *   program it runs, umcgctl and libumcg.so, in a directory of /tmp), so
 *   that it can wherever the checkout is.
 *
 * raw.foreign_tid_refused: the commands by hand in there (no /proc of
 *   the namespace mounted, so that /proc/thread-self/status shows each
 *   thread's kernel tid, the parent namespace's view of it): a server
 *   registers; a worker registering with the server's kernel tid gets
 *   -ESRCH, with its tid in the namespace 0, and its slot publishes that
 *   tid as its server_tid; umcg_pick of the worker by its kernel tid is
 *   -ESRCH, by its tid in the namespace -EAGAIN (it runs, it is not
 *   held), of the server (no worker) -ESRCH.
 *
 * A scheduler that "umcgctl load" had loaded before is unloaded first and
 * loaded again at the end, with the access it had.  Skips without
 * sched_ext (Debian's 6.12), when not root, and when another sched_ext
 * scheduler is loaded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "kselftest_harness.h"
#include "scx_loader.h"
#include "scx_pin.h"
#include "scx_test.h"
#include <uapi/umcg.h>
#include <uapi/umcg_scx.h>

#include "umcg_test.h"

#define PN_UID		65534
#define PN_GID		65534
#define PN_OUT_LEN	65536
#define PN_SERVER_CPU	0

/*
 * In a child of the test: what "unshare --pid --fork [--mount-proc]"
 * does.  Returns in the new namespace's pid 1 (0), or -errno; the
 * process that called it waits there for pid 1 and exits with its status.
 */
static int pn_enter(bool mount_proc)
{
	int status;
	pid_t pid;

	if (unshare(CLONE_NEWPID | CLONE_NEWNS))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid) {
		if (waitpid(pid, &status, 0) != pid)
			_exit(125);
		_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	}
	if (getpid() != 1)
		return -EPROTO;
	if (!mount_proc)
		return 0;
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return -errno;
	return 0;
}

/*
 * Fork a child that runs @fn in a new PID namespace (pid 1 there) as
 * nobody, its stdout and stderr into @out; its exit status (128 + signal).
 */
static int pn_run(bool mount_proc, int (*fn)(void *), void *arg,
		  char *out, size_t len)
{
	int fds[2], status, ret;
	pid_t pid;

	out[0] = '\0';
	if (pipe2(fds, O_CLOEXEC))
		return -1;
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		dup2(fds[1], 1);
		dup2(fds[1], 2);
		ret = pn_enter(mount_proc);
		if (ret) {
			fprintf(stderr, "entering the namespace: %s\n", strerror(-ret));
			_exit(126);
		}
		ret = umcg_test_drop_to(PN_UID, PN_GID);
		if (ret) {
			fprintf(stderr, "dropping to nobody: %s\n", strerror(-ret));
			_exit(126);
		}
		_exit(fn(arg));
	}
	close(fds[1]);
	umcg_test_read_all(fds[0], out, len);
	close(fds[0]);
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* @text as TAP comments. */
static void pn_comment(const char *what, const char *text)
{
	const char *p = text, *nl;

	printf("# %s:\n", what);
	while (*p) {
		nl = strchrnul(p, '\n');
		printf("#   %.*s\n", (int)(nl - p), p);
		p = *nl ? nl + 1 : nl;
	}
	fflush(stdout);
}

/* The scheduler loaded with "--users" for the case; put back after. */
struct pn_sched {
	bool				was_loaded;
	struct umcg_scx_access		was;
	char				out[PN_OUT_LEN];
};

static int pn_ctl(struct pn_sched *s, const char *args)
{
	return umcg_test_umcgctl_as((uid_t)-1, (gid_t)-1, s->out, sizeof(s->out), args);
}

/* NULL, or why the case must skip; -1 in @err if it failed. */
static const char *pn_sched_get(struct pn_sched *s, int *err)
{
	static char why[96];
	char state[32] = "";

	*err = 0;
	if (access("/sys/kernel/sched_ext", F_OK))
		return "no sched_ext in this kernel";
	if (geteuid())
		return "loading the scheduler needs root";
	if (umcg_test_umcgctl_open())
		return "no umcgctl in this build";
	s->was_loaded = umcg_scx_pinned(UMCG_SCX_PIN_DIR) == 1;
	if (s->was_loaded) {
		if (umcg_scx_pinned_access(UMCG_SCX_PIN_DIR, &s->was))
			s->was.users = UMCG_SCX_USERS_ROOT;
		if (pn_ctl(s, "unload")) {
			*err = -1;
			return "umcgctl unload failed";
		}
	}
	umcg_scx_sysfs_read("state", state, sizeof(state));
	if (strcmp(state, "disabled")) {
		snprintf(why, sizeof(why), "sched_ext is taken (state %s)", state);
		return why;
	}
	if (pn_ctl(s, "load --users") || !strstr(s->out, "usable by every user")) {
		*err = -1;
		return "umcgctl load --users failed";
	}
	return NULL;
}

static void pn_sched_put(struct pn_sched *s)
{
	char arg[64];

	if (umcg_scx_pinned(UMCG_SCX_PIN_DIR) == 1)
		pn_ctl(s, "unload");
	if (!s->was_loaded)
		return;
	if (s->was.users == UMCG_SCX_USERS_ALL)
		snprintf(arg, sizeof(arg), "load --users");
	else if (s->was.users == UMCG_SCX_USERS_GROUP)
		snprintf(arg, sizeof(arg), "load --group %u", (unsigned int)s->was.gid);
	else
		snprintf(arg, sizeof(arg), "load");
	pn_ctl(s, arg);
}

/* ---- prog: guest programs of libumcg on scx in the namespace ---- */

/* The program to run as nobody: build output @rel, copied to @stage. */
struct pn_prog {
	const struct umcg_test_stage	*stage;
	const char			*rel;
};

static int pn_exec(void *arg)
{
	const struct pn_prog *p = arg;
	char path[PATH_MAX];
	char *argv[] = { path, NULL };
	int ret;

	ret = umcg_test_stage_enter(p->stage);
	if (ret) {
		fprintf(stderr, "%s: %s\n", p->stage->dir, strerror(-ret));
		return 126;
	}
	snprintf(path, sizeof(path), "%s/%s", p->stage->dir, p->rel);
	execv(argv[0], argv);
	fprintf(stderr, "%s: %s\n", argv[0], strerror(errno));
	return 127;
}

FIXTURE(prog) {
	struct pn_sched s;
	bool got;
	struct umcg_test_stage stage;
	char out[PN_OUT_LEN];
};

FIXTURE_VARIANT(prog) {
	const char *name;	/* under <build>/tests/guest */
	const char *runs;	/* the build output it runs, or NULL */
};

#define PN_CONTRACT(c)	.name = "scx_contract_" #c, .runs = "tests/host/contract/contract_" #c

FIXTURE_VARIANT_ADD(prog, raw_exit) { .name = "scx_backend_raw_exit" };
FIXTURE_VARIANT_ADD(prog, handoff) { .name = "scx_backend_handoff" };
FIXTURE_VARIANT_ADD(prog, c2_block) { PN_CONTRACT(c2_block) };
FIXTURE_VARIANT_ADD(prog, c3_wake) { PN_CONTRACT(c3_wake) };
FIXTURE_VARIANT_ADD(prog, c4_switch) { PN_CONTRACT(c4_switch) };
FIXTURE_VARIANT_ADD(prog, c5_park) { PN_CONTRACT(c5_park) };
FIXTURE_VARIANT_ADD(prog, c7_faults) { PN_CONTRACT(c7_faults) };
FIXTURE_VARIANT_ADD(prog, switch_cpu) { .name = "scx_backend_switch_cpu" };

/*
 * Both fixtures' setup: the scheduler loaded for every user (*@got: we
 * must put it back), or SKIP where it cannot be.  False on a skip.
 */
static bool pn_setup(struct __test_metadata *_metadata, struct pn_sched *s, bool *got)
{
	const char *why;
	int err;

	*got = false;
	why = pn_sched_get(s, &err);
	if (why && !err)
		SKIP(return false, "%s", why);
	ASSERT_EQ(NULL, why) TH_LOG("%s", s->out);
	*got = true;
	return true;
}

FIXTURE_SETUP(prog)
{
	pn_setup(_metadata, &self->s, &self->got);
}

FIXTURE_TEARDOWN(prog)
{
	umcg_test_stage_remove(&self->stage);
	if (self->got)
		pn_sched_put(&self->s);
}

TEST_F_TIMEOUT(prog, in_pidns_as_nobody, 200)
{
	char rel[128], state[32] = "";
	const char *files[] = { rel, "tools/umcgctl", variant->runs, NULL };
	struct pn_prog p = { .stage = &self->stage, .rel = rel };
	int ret;

	snprintf(rel, sizeof(rel), "tests/guest/%s", variant->name);
	ret = umcg_test_stage_make(&self->stage, files);
	ASSERT_EQ(0, ret) TH_LOG("copying %s of %s for nobody: %s", rel,
				 umcg_test_build_dir(), strerror(-ret));
	TH_LOG("nobody runs %s/%s, LD_LIBRARY_PATH %s", self->stage.dir, rel,
	       self->stage.libpath);
	ret = pn_run(true, pn_exec, &p, self->out, sizeof(self->out));
	umcg_test_stage_remove(&self->stage);
	pn_comment(variant->name, self->out);
	EXPECT_EQ(0, ret) TH_LOG("%s in a PID namespace as nobody: exit %d%s",
				 variant->name, ret,
				 ret == 4 ? " (skipped)" : "");
	umcg_scx_sysfs_read("state", state, sizeof(state));
	EXPECT_STREQ("enabled", state);
}

/* ---- raw: the commands by hand, tids of two namespaces ---- */

struct pn_raw {
	int				reg_fd, pick_fd, unreg_fd;
	_Atomic int			server_vtid, server_ktid, server_ret;
	_Atomic int			worker_vtid, worker_ktid;
	_Atomic int			worker_ret_k, worker_ret_v;	/* register */
	_Atomic bool			worker_done;	/* both registers ran */
	_Atomic unsigned long long	worker_task_off;
	_Atomic bool			server_done, stop;
};

/*
 * The calling thread's kernel tid: the first NSpid of /proc/thread-self
 * of the parent namespace's /proc (this namespace mounted none), checked
 * against its tid here, the second.  -errno.
 */
static int pn_ktid(void)
{
	char buf[4096], *p;
	int fd, k, v;
	ssize_t n;

	fd = open("/proc/thread-self/status", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	buf[n] = '\0';
	p = strstr(buf, "\nNSpid:");
	if (!p || sscanf(p, "\nNSpid: %d %d", &k, &v) != 2)
		return -ENOENT;
	return v == scx_gettid() ? k : -EPROTO;
}

static void *pn_server(void *arg)
{
	struct pn_raw *r = arg;
	struct umcg_scx_register_args a = {
		.flags = UMCG_REGISTER_SERVER | UMCG_SCX_REGISTER_DOORBELL,
		.cpu = PN_SERVER_CPU,
	};
	struct umcg_scx_unregister_args u = { 0 };
	int ret;

	atomic_store(&r->server_ktid, pn_ktid());
	atomic_store(&r->server_vtid, scx_gettid());
	ret = scx_join_on(r->reg_fd, PN_SERVER_CPU, &a, sizeof(a));
	atomic_store(&r->server_ret, ret);
	atomic_store(&r->server_done, true);
	if (ret)
		return NULL;
	/* A doorbell server is never held: it sleeps here until the end. */
	while (!atomic_load(&r->stop))
		usleep(1000);
	scx_run_prog(r->unreg_fd, &u, sizeof(u));
	scx_set_ext(false);
	return NULL;
}

static void *pn_worker(void *arg)
{
	struct pn_raw *r = arg;
	struct umcg_scx_register_args a = {
		.flags = UMCG_REGISTER_WORKER,
		/* The parent namespace's view of the server. */
		.server_tid = (__u32)atomic_load(&r->server_ktid),
	};
	struct umcg_scx_unregister_args u = { 0 };
	int ret;

	atomic_store(&r->worker_ktid, pn_ktid());
	atomic_store(&r->worker_vtid, scx_gettid());
	ret = scx_set_ext(true);
	if (ret) {
		atomic_store(&r->worker_ret_k, ret);
		atomic_store(&r->worker_ret_v, ret);
		atomic_store(&r->worker_done, true);
		return NULL;
	}
	ret = scx_run_prog(r->reg_fd, &a, sizeof(a));
	/* Not to stay registered under the wrong id. */
	if (!ret)
		scx_run_prog(r->unreg_fd, &u, sizeof(u));
	atomic_store(&r->worker_ret_k, ret);

	memset(&a, 0, sizeof(a));
	a.flags = UMCG_REGISTER_WORKER;
	a.server_tid = (__u32)atomic_load(&r->server_vtid);
	ret = scx_run_prog(r->reg_fd, &a, sizeof(a));
	if (!ret)
		atomic_store(&r->worker_task_off, a.task_off);
	atomic_store(&r->worker_ret_v, ret);
	atomic_store(&r->worker_done, true);
	/* Runs, never sleeps, so that it is never held: pick says -EAGAIN. */
	while (!ret && !atomic_load(&r->stop))
		;
	if (!ret)
		scx_run_prog(r->unreg_fd, &u, sizeof(u));
	scx_set_ext(false);
	return NULL;
}

static int pn_obj(const char *name, bool rdonly)
{
	char path[PATH_MAX];
	LIBBPF_OPTS(bpf_obj_get_opts, o, .file_flags = rdonly ? BPF_F_RDONLY : 0);
	int fd;

	snprintf(path, sizeof(path), UMCG_SCX_PIN_DIR "/%s", name);
	fd = bpf_obj_get_opts(path, &o);
	if (fd < 0)
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
	return fd;
}

static int pn_pick(struct pn_raw *r, int tid)
{
	struct umcg_scx_pick_args pk = { .tid = (__u32)tid, .cpu = PN_SERVER_CPU };

	return scx_run_prog(r->pick_fd, &pk, sizeof(pk));
}

/* The kernel tid @k of a thread with tid @v here names no thread here. */
static bool pn_foreign_id(int k, int v)
{
	return k > 0 && k != v && kill(k, 0) && errno == ESRCH;
}

/*
 * In the namespace, as nobody: 0, or the number of the first check that
 * failed (what it saw on stderr).
 */
static int pn_foreign(void *arg)
{
	static struct pn_raw r;
	size_t len = (sizeof(struct umcg_scx_shared) + getpagesize() - 1) /
		     getpagesize() * getpagesize();
	const volatile struct umcg_task *ut;
	int shared_fd, ret, sk, sv, wk, wv;
	pthread_t st, wt;
	char *m;

	(void)arg;
	r.reg_fd = pn_obj("umcg_register", true);
	r.pick_fd = pn_obj("umcg_pick", true);
	r.unreg_fd = pn_obj("umcg_unregister", true);
	shared_fd = pn_obj("shared", false);
	if (r.reg_fd < 0 || r.pick_fd < 0 || r.unreg_fd < 0 || shared_fd < 0)
		return 2;
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, shared_fd, 0);
	if (m == MAP_FAILED)
		return 3;

	if (pthread_create(&st, NULL, pn_server, &r))
		return 4;
	while (!atomic_load(&r.server_done))
		usleep(1000);
	sk = atomic_load(&r.server_ktid);
	sv = atomic_load(&r.server_vtid);
	fprintf(stderr, "server: tid %d here, %d in the kernel: register %d\n",
		sv, sk, atomic_load(&r.server_ret));
	ret = 5;
	if (atomic_load(&r.server_ret))
		goto out_server;
	ret = 6;	/* planted: its kernel tid is no id here */
	if (!pn_foreign_id(sk, sv))
		goto out_server;

	ret = 7;
	if (pthread_create(&wt, NULL, pn_worker, &r))
		goto out_server;
	while (!atomic_load(&r.worker_done))
		usleep(1000);
	wk = atomic_load(&r.worker_ktid);
	wv = atomic_load(&r.worker_vtid);
	fprintf(stderr, "worker: tid %d here, %d in the kernel: register with "
		"the server's kernel tid %d, with its tid here %d\n", wv, wk,
		atomic_load(&r.worker_ret_k), atomic_load(&r.worker_ret_v));
	ret = 8;
	if (atomic_load(&r.worker_ret_k) != -ESRCH)
		goto out;
	ret = 9;
	if (atomic_load(&r.worker_ret_v))
		goto out;
	ut = (const volatile struct umcg_task *)(m + atomic_load(&r.worker_task_off));
	fprintf(stderr, "worker: slot's server_tid %u\n", ut->server_tid);
	ret = 10;	/* given back as the worker named it */
	if (ut->server_tid != (__u32)sv)
		goto out;
	ret = 11;	/* planted: its kernel tid is no id here */
	if (!pn_foreign_id(wk, wv))
		goto out;
	ret = pn_pick(&r, wk);
	fprintf(stderr, "pick: of the worker by its kernel tid %d\n", ret);
	ret = ret == -ESRCH ? 0 : 12;
	if (ret)
		goto out;
	ret = pn_pick(&r, wv);
	fprintf(stderr, "pick: of the worker by its tid here %d\n", ret);
	ret = ret == -EAGAIN ? 0 : 13;
	if (ret)
		goto out;
	ret = pn_pick(&r, sv);
	fprintf(stderr, "pick: of the server by its tid here %d\n", ret);
	ret = ret == -ESRCH ? 0 : 14;
out:
	atomic_store(&r.stop, true);
	pthread_join(wt, NULL);
out_server:
	atomic_store(&r.stop, true);
	pthread_join(st, NULL);
	return ret;
}

FIXTURE(raw) {
	struct pn_sched s;
	bool got;
	char out[PN_OUT_LEN];
};

FIXTURE_SETUP(raw)
{
	if (!pn_setup(_metadata, &self->s, &self->got))
		return;
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs 2 CPUs");
}

FIXTURE_TEARDOWN(raw)
{
	if (self->got)
		pn_sched_put(&self->s);
}

TEST_F_TIMEOUT(raw, foreign_tid_refused, 60)
{
	int ret = pn_run(false, pn_foreign, NULL, self->out, sizeof(self->out));

	pn_comment("child", self->out);
	EXPECT_EQ(0, ret) TH_LOG("the child in the PID namespace failed check %d "
				 "(see pn_foreign())", ret);
}

TEST_HARNESS_MAIN
