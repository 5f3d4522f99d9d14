// SPDX-License-Identifier: GPL-2.0
/*
 * Description: the enforcer of the umcg sched_ext scheduler
 * (bpf/umcg_enforce.bpf.h), first slice.  A server (pinned to one CPU) and
 * a worker of this process register through the "umcg_register" syscall
 * program; the worker blocks in read() and the scheduler publishes BLOCKED
 * in the read-only shared map and runs the server; an unmanaged thread
 * writes the pipe and the scheduler publishes RUNNABLE and holds the
 * worker: it runs no user code for 300 ms; "umcg_pick" moves it to another
 * CPU, where it then runs.  Registration and pick validate their fields,
 * and refuse threads of another process.  A worker registered with a time
 * slice that spins is preempted at its slice's end: RUNNABLE |
 * UMCG_TF_PREEMPT published, held until picked; with its in_lib word set
 * it runs on, asked to yield; beside a fair-class spinner on its CPU it
 * keeps running, for twice the watchdog's timeout, without an ejection.
 * A thread that never registers keeps its policy and runs.  After a burst
 * of 2,000 workers that unregister or exit, the bound of the searches by
 * tid (enf_slot_hwm) is back to one past the highest slot in use.  Skips on kernels without sched_ext and when
 * the scheduler cannot be loaded.
 *
 * Needs the machine's sched_ext to itself and at least 2 CPUs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kselftest_harness.h"
#include "scx_loader.h"
#include "scx_test.h"
#include <uapi/umcg.h>
#include <uapi/umcg_scx.h>


/* Generous: TCG is slow. */
#define WAIT_MS		10000
/* How long a woken worker must stay held before the pick. */
#define HOLD_CHECK_MS	300
#define SERVER_CPU	1
#define PICK_CPU	0

struct ctx {
	int				reg_fd;
	int				pick_fd;
	const volatile struct umcg_scx_shared *sh;

	/* server */
	atomic_int			server_tid;
	atomic_int			server_ret;
	atomic_bool			server_stop;
	atomic_ulong			server_runs;
	atomic_llong			server_saw_blocked_ns;
	atomic_int			worker_slot;	/* -1 until known */
	atomic_bool			auto_pick;	/* pick the worker when it wakes */

	/* worker */
	int				pipe[2];
	atomic_int			worker_tid;
	atomic_int			worker_ret;
	atomic_int			entering_read;
	atomic_int			after_read;
	atomic_uint			state_after;	/* its own state, after read() */
	atomic_llong			ran_ns;		/* when read() returned */
	atomic_int			cpu_after;
	struct umcg_scx_register_args	worker_reg;
};

static void *server_fn(void *arg)
{
	struct ctx *c = arg;
	struct umcg_scx_register_args a = {
		.flags = UMCG_REGISTER_SERVER, .cpu = SERVER_CPU,
	};
	int ret;

	ret = scx_join_on(c->reg_fd, SERVER_CPU, &a, sizeof(a));
	atomic_store(&c->server_ret, ret);
	atomic_store(&c->server_tid, scx_gettid());
	if (ret)
		return NULL;
	/*
	 * Runnable but held between runs: the scheduler runs this loop when
	 * its CPU's worker blocks, on news, and on the heartbeat.
	 */
	while (!atomic_load(&c->server_stop)) {
		int slot = atomic_load(&c->worker_slot);
		__u32 st;

		atomic_fetch_add(&c->server_runs, 1);
		if (slot < 0)
			goto yield;
		st = c->sh->task[slot].state & UMCG_TASK_STATE_MASK;
		if (st == UMCG_TASK_BLOCKED && atomic_load(&c->entering_read) &&
		    !atomic_load(&c->server_saw_blocked_ns))
			atomic_store(&c->server_saw_blocked_ns, scx_now_ns());
		/*
		 * Any sleep of a registered worker holds it, not only the
		 * read() under test (a page fault, a lock in
		 * sched_setscheduler()): a server picks it back, as
		 * libumcg's would, unless the test holds it on purpose.
		 */
		if (st == UMCG_TASK_RUNNABLE && atomic_load(&c->auto_pick)) {
			struct umcg_scx_pick_args pk = {
				.tid = atomic_load(&c->worker_tid),
				.cpu = SERVER_CPU,
			};

			scx_run_prog(c->pick_fd, &pk, sizeof(pk));
		}
yield:
		sched_yield();
	}
	scx_set_ext(false);
	return NULL;
}

static void *worker_fn(void *arg)
{
	struct ctx *c = arg;
	char b;
	int ret;

	c->worker_reg.flags = UMCG_REGISTER_WORKER;
	c->worker_reg.server_tid = atomic_load(&c->server_tid);
	ret = scx_join_on(c->reg_fd, SERVER_CPU, &c->worker_reg,
			  sizeof(c->worker_reg));
	atomic_store(&c->worker_tid, scx_gettid());
	atomic_store(&c->worker_ret, ret ? ret : 1);
	if (ret)
		return NULL;
	/* Blocks: BLOCKED, the server runs.  Woken: held until picked. */
	atomic_store(&c->worker_slot, c->worker_reg.slot);
	atomic_store(&c->entering_read, 1);
	if (read(c->pipe[0], &b, 1) != 1)
		atomic_store(&c->worker_ret, -EIO);
	atomic_store(&c->ran_ns, scx_now_ns());
	atomic_store(&c->state_after, c->sh->task[c->worker_reg.slot &
				      (UMCG_SCX_MAX_TASKS - 1)].state);
	atomic_store(&c->after_read, 1);
	atomic_store(&c->cpu_after, sched_getcpu());
	/* Leave sched_ext, so that exiting needs no pick. */
	scx_set_ext(false);
	return NULL;
}

static __u32 slot_state(const struct ctx *c, int slot)
{
	return c->sh->task[slot].state & UMCG_TASK_STATE_MASK;
}

/* True once slot @slot's published state is @want, false after WAIT_MS. */
static bool state_becomes(const struct ctx *c, int slot, __u32 want)
{
	long long t0 = scx_now_ns();

	while (slot_state(c, slot) != want) {
		if (scx_now_ns() - t0 > WAIT_MS * 1000000LL)
			return false;
		usleep(1000);
	}
	return true;
}

/* The enforcer's counters, summed over the CPUs. */
static void enf_stats(struct umcg_scx *s, struct umcg_scx_enf_stats *sum)
{
	int nr = libbpf_num_possible_cpus();
	struct umcg_scx_enf_stats per[nr > 0 ? nr : 1];
	__u32 zero = 0;

	memset(sum, 0, sizeof(*sum));
	if (nr <= 0 || bpf_map_lookup_elem(umcg_scx_obj_fd(s, "enf_stats"),
					   &zero, per))
		return;
	for (int c = 0; c < nr; c++)
		for (int i = 0; i < UMCG_SCX_NR_ENF_STATS; i++)
			sum->cnt[i] += per[c].cnt[i];
}

static void log_enf_stats(struct __test_metadata *_metadata,
			  struct umcg_scx *s, const char *when)
{
	static const char *const names[UMCG_SCX_NR_ENF_STATS] = {
		"register", "block", "wake_held", "pick", "server_run",
		"heartbeat", "hold_expired", "exit", "server_miss",
		"pick_asleep", "pick_direct", "unregister", "poke",
		"doorbell", "doorbell_full", "hold_contended", "slice_end",
		"slice_defer", "lib_wake", "evicted", "dying_wake",
		"cpu_online", "cpu_offline", "bell", "bell_wake", "bell_pending", "bell_failed",
	};
	struct umcg_scx_enf_stats st;
	char buf[512];
	int n = 0;

	enf_stats(s, &st);
	for (int i = 0; i < UMCG_SCX_NR_ENF_STATS; i++)
		n += snprintf(buf + n, sizeof(buf) - n, " %s=%llu", names[i],
			      (unsigned long long)st.cnt[i]);
	TH_LOG("%s:%s", when, buf);
}

FIXTURE(enf) {
	struct umcg_scx *s;
	struct ctx c;
	size_t map_len;
};

FIXTURE_SETUP(enf)
{
	struct umcg_scx_opts opts = { .timeout_ms = UMCG_SCX_TIMEOUT_MS_DFL };
	char ops[64] = "";
	int ret, shared_fd;
	void *m;

	self->s = NULL;
	self->c.sh = NULL;
	ret = umcg_scx_probe();
	if (ret == -ENOENT)
		SKIP(return, "no sched_ext in this kernel (/sys/kernel/sched_ext is missing)");
	if (ret == -EPERM)
		SKIP(return, "loading a sched_ext scheduler needs root");
	umcg_scx_sysfs_read("root/ops", ops, sizeof(ops));
	ASSERT_EQ(0, ret) TH_LOG("sched_ext is not free (\"%s\" loaded?): %s",
				 ops, strerror(-ret));
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs 2 CPUs");
	ret = umcg_scx_open(&self->s, &opts);
	if (ret)
		SKIP(return, "the scheduler cannot be loaded: %s", strerror(-ret));
	ret = umcg_scx_attach(self->s);
	if (ret)
		SKIP(return, "the scheduler cannot be attached: %s", strerror(-ret));

	self->c.reg_fd = umcg_scx_obj_fd(self->s, "umcg_register");
	self->c.pick_fd = umcg_scx_obj_fd(self->s, "umcg_pick");
	shared_fd = umcg_scx_obj_fd(self->s, "shared");
	ASSERT_LE(0, self->c.reg_fd);
	ASSERT_LE(0, self->c.pick_fd);
	ASSERT_LE(0, shared_fd);
	self->map_len = (sizeof(struct umcg_scx_shared) + getpagesize() - 1) /
			getpagesize() * getpagesize();
	/* Read-only: processes never write the shared area. */
	m = mmap(NULL, self->map_len, PROT_READ, MAP_SHARED, shared_fd, 0);
	ASSERT_NE(MAP_FAILED, m) TH_LOG("mmap shared: %m");
	self->c.sh = m;
	/* ops.init published the ABI words before the attach returned. */
	ASSERT_EQ(UMCG_SCX_ABI_MAGIC, self->c.sh->abi_magic);
	ASSERT_EQ(UMCG_SCX_ABI_VERSION, self->c.sh->abi_version);
	atomic_store(&self->c.worker_slot, -1);
	atomic_store(&self->c.auto_pick, true);
}

FIXTURE_TEARDOWN(enf)
{
	struct user_exit_info ei;

	if (self->s) {
		umcg_scx_exit_info(self->s, &ei);
		if (ei.kind != UMCG_SCX_EXIT_NONE)
			TH_LOG("scheduler exited: %s (%d): %s: %s",
			       umcg_scx_exit_kind_name(ei.kind), ei.kind,
			       ei.reason, ei.msg);
	}
	if (self->c.sh)
		munmap((void *)self->c.sh, self->map_len);
	umcg_scx_close(self->s);
}

TEST_F_TIMEOUT(enf, block_publish_hold_pick, 90)
{
	struct ctx *c = &self->c;
	struct umcg_scx_pick_args pk = { 0 };
	pthread_t server, worker;
	const volatile struct umcg_task *ut;
	long long t0, blocked_ns, woken_ns;
	unsigned long runs_before;
	cpu_set_t set;
	__u64 seq;
	int ret, slot;

	ASSERT_EQ(0, pipe(c->pipe));
	ASSERT_EQ(0, pthread_create(&server, NULL, server_fn, c));
	while (!atomic_load(&c->server_tid))
		usleep(1000);
	ASSERT_EQ(0, atomic_load(&c->server_ret));

	ASSERT_EQ(0, pthread_create(&worker, NULL, worker_fn, c));
	while (!atomic_load(&c->worker_ret))
		usleep(1000);
	ASSERT_EQ(1, atomic_load(&c->worker_ret));
	log_enf_stats(_metadata, self->s, "registered");
	slot = c->worker_reg.slot;
	ASSERT_LT(slot, UMCG_SCX_MAX_TASKS);
	ASSERT_EQ(offsetof(struct umcg_scx_shared, task) +
		  slot * sizeof(struct umcg_task), c->worker_reg.task_off);
	ut = &c->sh->task[slot];
	ASSERT_EQ(atomic_load(&c->server_tid), ut->server_tid);

	/* 1. read() blocks: BLOCKED published, and the server runs. */
	while (!atomic_load(&c->entering_read))
		usleep(1000);
	ASSERT_TRUE(state_becomes(c, slot, UMCG_TASK_BLOCKED))
		TH_LOG("state %u", slot_state(c, slot));
	atomic_store(&c->auto_pick, false);
	blocked_ns = ut->blocked_ns;
	ASSERT_NE(0, blocked_ns);
	ASSERT_EQ(SERVER_CPU, ut->cpu);
	ASSERT_NE(0, c->sh->events[c->worker_reg.group][slot / 64] &
		     (1ULL << (slot % 64)));
	t0 = scx_now_ns();
	while (!atomic_load(&c->server_saw_blocked_ns) &&
	       scx_now_ns() - t0 < WAIT_MS * 1000000LL)
		usleep(1000);
	ASSERT_NE(0, atomic_load(&c->server_saw_blocked_ns));
	TH_LOG("server saw BLOCKED %lld us after the block",
	       (atomic_load(&c->server_saw_blocked_ns) - blocked_ns) / 1000);
	log_enf_stats(_metadata, self->s, "after the block");
	/* The block itself ran the server, not its next heartbeat. */
	ASSERT_GT((long long)UMCG_SCX_HEARTBEAT_NS / 2,
		  atomic_load(&c->server_saw_blocked_ns) - blocked_ns);

	/* The pick will put the worker on the other CPU. */
	CPU_ZERO(&set);
	CPU_SET(PICK_CPU, &set);
	CPU_SET(SERVER_CPU, &set);
	ASSERT_EQ(0, sched_setaffinity(atomic_load(&c->worker_tid),
				       sizeof(set), &set));

	/* 2. An unmanaged thread wakes it: RUNNABLE published, held. */
	seq = ut->seq;
	runs_before = atomic_load(&c->server_runs);
	ASSERT_EQ(1, write(c->pipe[1], "x", 1));
	ASSERT_TRUE(state_becomes(c, slot, UMCG_TASK_RUNNABLE))
		TH_LOG("state %u", slot_state(c, slot));
	woken_ns = ut->woken_ns;
	ASSERT_LE(blocked_ns, woken_ns);
	ASSERT_LT(seq, ut->seq);
	usleep(HOLD_CHECK_MS * 1000);
	ASSERT_EQ(0, atomic_load(&c->after_read))
		TH_LOG("the woken worker ran user code before it was picked");
	ASSERT_EQ(UMCG_TASK_RUNNABLE, slot_state(c, slot));
	TH_LOG("held %d ms; the server ran %lu times meanwhile", HOLD_CHECK_MS,
	       atomic_load(&c->server_runs) - runs_before);
	/*
	 * Held too: the server ran for the news of the wake-up and perhaps a
	 * heartbeat, each one pass of its loop, not all the time.
	 */
	ASSERT_GT(20, atomic_load(&c->server_runs) - runs_before);

	/* 3. pick: RUNNING published, and it runs on the picked CPU. */
	pk.tid = atomic_load(&c->worker_tid);
	pk.cpu = PICK_CPU;
	t0 = scx_now_ns();
	while ((ret = scx_run_prog(c->pick_fd, &pk, sizeof(pk))) == -EAGAIN &&
	       scx_now_ns() - t0 < WAIT_MS * 1000000LL)
		usleep(1000);
	ASSERT_EQ(0, ret);
	ASSERT_EQ(UMCG_TASK_RUNNING, slot_state(c, slot));
	t0 = scx_now_ns();
	while (!atomic_load(&c->after_read) &&
	       scx_now_ns() - t0 < WAIT_MS * 1000000LL)
		usleep(1000);
	ASSERT_EQ(1, atomic_load(&c->after_read));
	TH_LOG("picked worker ran %lld us after the pick", (scx_now_ns() - t0) / 1000);
	ASSERT_EQ(UMCG_TASK_RUNNING, atomic_load(&c->state_after) &
				     UMCG_TASK_STATE_MASK);
	ASSERT_EQ(PICK_CPU, atomic_load(&c->cpu_after));
	atomic_store(&c->auto_pick, true);
	ASSERT_EQ(0, pthread_join(worker, NULL));
	/*
	 * A second pick: the worker is not held.  -EAGAIN until its slot is
	 * reclaimed (ops.exit_task runs when the task is freed, after the
	 * join), -ESRCH after.
	 */
	ret = scx_run_prog(c->pick_fd, &pk, sizeof(pk));
	ASSERT_TRUE(ret == -EAGAIN || ret == -ESRCH) TH_LOG("pick: %d", ret);

	atomic_store(&c->server_stop, true);
	ASSERT_EQ(0, pthread_join(server, NULL));
	log_enf_stats(_metadata, self->s, "end");
	ASSERT_FALSE(umcg_scx_exited(self->s));
}

TEST_F_TIMEOUT(enf, unpicked_worker_is_released, 90)
{
	struct ctx *c = &self->c;
	pthread_t server, worker;
	const volatile struct umcg_task *ut;
	unsigned long runs_before;
	long long t0, held_ms, woken_ns;
	int slot;

	ASSERT_EQ(0, pipe(c->pipe));
	ASSERT_EQ(0, pthread_create(&server, NULL, server_fn, c));
	while (!atomic_load(&c->server_tid))
		usleep(1000);
	ASSERT_EQ(0, atomic_load(&c->server_ret));
	ASSERT_EQ(0, pthread_create(&worker, NULL, worker_fn, c));
	while (!atomic_load(&c->worker_ret))
		usleep(1000);
	ASSERT_EQ(1, atomic_load(&c->worker_ret));
	slot = c->worker_reg.slot;
	ASSERT_LT(slot, UMCG_SCX_MAX_TASKS);
	ut = &c->sh->task[slot];
	while (!atomic_load(&c->entering_read))
		usleep(1000);
	ASSERT_TRUE(state_becomes(c, slot, UMCG_TASK_BLOCKED));
	atomic_store(&c->auto_pick, false);

	/*
	 * Blocked: the held server still runs on its heartbeat, well before
	 * the watchdog's 5 s (TCG may delay a heartbeat past the next one, so
	 * wait up to 4 heartbeats).
	 */
	runs_before = atomic_load(&c->server_runs);
	for (int i = 0; i < 40 && atomic_load(&c->server_runs) == runs_before; i++)
		usleep(UMCG_SCX_HEARTBEAT_NS / 10 / 1000);
	TH_LOG("server runs with nothing to do: %lu within %llu ms",
	       atomic_load(&c->server_runs) - runs_before,
	       UMCG_SCX_HEARTBEAT_NS * 4 / 1000000);
	ASSERT_LE(1, atomic_load(&c->server_runs) - runs_before);

	/* Woken and never picked: released after UMCG_SCX_HOLD_MAX_NS. */
	ASSERT_EQ(1, write(c->pipe[1], "x", 1));
	ASSERT_TRUE(state_becomes(c, slot, UMCG_TASK_RUNNABLE));
	woken_ns = ut->woken_ns;
	t0 = scx_now_ns();
	while (!atomic_load(&c->after_read) &&
	       scx_now_ns() - t0 < WAIT_MS * 1000000LL)
		usleep(1000);
	ASSERT_EQ(1, atomic_load(&c->after_read));
	held_ms = (atomic_load(&c->ran_ns) - woken_ns) / 1000000;
	TH_LOG("released after %lld ms", held_ms);
	ASSERT_LE(UMCG_SCX_HOLD_MAX_NS / 1000000, held_ms);
	/* Before the watchdog (UMCG_SCX_TIMEOUT_MS_DFL) could fire. */
	ASSERT_GT(UMCG_SCX_TIMEOUT_MS_DFL, held_ms);
	ASSERT_EQ(UMCG_TASK_RUNNING, atomic_load(&c->state_after) &
				     UMCG_TASK_STATE_MASK);
	atomic_store(&c->auto_pick, true);
	ASSERT_EQ(0, pthread_join(worker, NULL));
	atomic_store(&c->server_stop, true);
	ASSERT_EQ(0, pthread_join(server, NULL));
	ASSERT_FALSE(umcg_scx_exited(self->s));
}

/*
 * The shared area is read-only for processes: frozen at load, it maps
 * read-only and cannot be updated, even by nobody through a 0666 pin.
 */
TEST_F_TIMEOUT(enf, shared_map_is_read_only, 60)
{
	const char *path = "/sys/fs/bpf/umcg_scx_enforce_test";
	LIBBPF_OPTS(bpf_obj_get_opts, ro, .file_flags = BPF_F_RDONLY);
	int fd, status;
	pid_t child;

	/* As "umcgctl load" does: others may search the bpffs root. */
	ASSERT_EQ(0, umcg_scx_bpffs_prepare(path, NULL));
	unlink(path);
	ASSERT_EQ(0, bpf_obj_pin(umcg_scx_obj_fd(self->s, "shared"), path))
		TH_LOG("pin: %m");
	/* As "umcgctl load --users" pins it: frozen, so 0666 is harmless. */
	ASSERT_EQ(0, chmod(path, 0666));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		void *m;

		if (umcg_test_drop_to(65534, 65534))	/* nobody */
			_exit(10);
		struct umcg_scx_shared *junk;
		__u32 zero = 0;

		/* Read-only descriptors cannot be mapped at all (scx_pin.h). */
		fd = bpf_obj_get_opts(path, &ro);
		if (fd < 0)
			_exit(errno == EACCES || errno == EPERM ? 11 : 12);
		m = mmap(NULL, getpagesize(), PROT_READ, MAP_SHARED, fd, 0);
		if (m != MAP_FAILED)
			_exit(16);
		close(fd);
		/* A read-write one: frozen, it maps only read-only. */
		fd = bpf_obj_get(path);
		if (fd < 0)
			_exit(errno == EACCES || errno == EPERM ? 11 : 12);
		m = mmap(NULL, getpagesize(), PROT_READ | PROT_WRITE,
			 MAP_SHARED, fd, 0);
		if (m != MAP_FAILED)
			_exit(13);
		m = mmap(NULL, getpagesize(), PROT_READ, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			_exit(100 + errno);
		if (!mprotect(m, getpagesize(), PROT_READ | PROT_WRITE))
			_exit(15);
		/* Nor can it be updated through the syscall. */
		junk = calloc(1, sizeof(*junk));
		if (!junk || !bpf_map_update_elem(fd, &zero, junk, BPF_ANY))
			_exit(17);
		_exit(0);
	}
	ASSERT_EQ(child, waitpid(child, &status, 0));
	unlink(path);
	ASSERT_TRUE(WIFEXITED(status));
	if (WEXITSTATUS(status) == 11 || WEXITSTATUS(status) == 10)
		SKIP(return, "nobody cannot open the pin here (%d)",
		     WEXITSTATUS(status));
	ASSERT_EQ(0, WEXITSTATUS(status))
		TH_LOG("13: writable mapping; 100 + errno: no read-only "
		       "mapping; 15: mprotect to writable; 16: read-only fd "
		       "mapped; 17: update went through");
}

struct reg_req {
	int				fd;
	struct umcg_scx_register_args	a;
	int				ret;
};

static void *register_fn(void *arg)
{
	struct reg_req *r = arg;

	r->ret = scx_run_prog(r->fd, &r->a, sizeof(r->a));
	return NULL;
}

/* Register a new thread with @a; its return value. */
static int register_thread(int fd, const struct umcg_scx_register_args *a)
{
	struct reg_req r = { .fd = fd, .a = *a };
	pthread_t t;

	if (pthread_create(&t, NULL, register_fn, &r))
		return -EAGAIN;
	pthread_join(t, NULL);
	return r.ret;
}

/* commands_validate's bell claims: the programs, in a child. */
static int bell_reg_fd = -1, bell_unreg_fd = -1;

static int bell_reg(uint32_t flags)
{
	struct umcg_scx_register_args a = {
		.flags = UMCG_REGISTER_SERVER | flags, .cpu = 0,
	};

	return scx_run_prog(bell_reg_fd, &a, sizeof(a));
}

static void *bell_reg_thread(void *arg)
{
	return (void *)(intptr_t)bell_reg((uint32_t)(uintptr_t)arg);
}

/* Register a server of CPU 0 in a new thread, which then exits. */
static int bell_reg_in_thread(uint32_t flags)
{
	pthread_t th;
	void *ret;

	if (pthread_create(&th, NULL, bell_reg_thread, (void *)(uintptr_t)flags))
		return -EAGAIN;
	pthread_join(th, &ret);
	return (int)(intptr_t)ret;
}

/* 0, or the number of the step that went wrong. */
static int bell_claims(void)
{
	struct umcg_scx_unregister_args u = { 0 };

	if (bell_reg(UMCG_SCX_REGISTER_BELL))
		return 1;		/* the first bell server of CPU 0 */
	if (bell_reg_in_thread(UMCG_SCX_REGISTER_BELL) != -EBUSY)
		return 2;		/* a second one */
	if (bell_reg_in_thread(UMCG_SCX_REGISTER_DOORBELL))
		return 3;		/* a doorbell server beside it */
	if (scx_run_prog(bell_unreg_fd, &u, sizeof(u)))
		return 4;
	if (bell_reg_in_thread(UMCG_SCX_REGISTER_BELL))
		return 5;		/* given back at unregister; at exit */
	/*
	 * Given back at that thread's exit: sched_ext's exit_task comes when
	 * the task is freed, after pthread_join() returned.
	 */
	for (int i = 0; bell_reg_in_thread(UMCG_SCX_REGISTER_BELL); i++) {
		if (i == 500)
			return 6;
		usleep(10000);
	}
	return 0;
}

TEST_F_TIMEOUT(enf, commands_validate, 60)
{
	struct ctx *c = &self->c;
	struct umcg_scx_register_args a;
	struct umcg_scx_pick_args pk;
	int tp[2], gp[2], status;
	pid_t child, child_tid;
	char b = 0;

#define REG(...)	({ a = (struct umcg_scx_register_args){ __VA_ARGS__ }; \
			   register_thread(c->reg_fd, &a); })
	EXPECT_EQ(-EINVAL, REG(.flags = 0));
	EXPECT_EQ(-EINVAL, REG(.flags = UMCG_REGISTER_WORKER | UMCG_REGISTER_SERVER));
	EXPECT_EQ(-EINVAL, REG(.flags = 1U << 7));
	EXPECT_EQ(-EINVAL, REG(.flags = UMCG_REGISTER_SERVER, .cpu = 0, .reserved0 = 1));
	EXPECT_EQ(-EINVAL, REG(.flags = UMCG_REGISTER_SERVER, .cpu = 0, .in_lib = 1));
	EXPECT_EQ(-EINVAL, REG(.flags = UMCG_REGISTER_SERVER, .cpu = 0, .slice_ns = 1));
	/* A time slice: a worker's only, in range. */
	EXPECT_EQ(-EINVAL, REG(.flags = UMCG_REGISTER_SERVER | UMCG_SCX_REGISTER_SLICE,
			       .cpu = 0, .slice_ns = 1000000));
	EXPECT_EQ(-EINVAL, REG(.flags = UMCG_REGISTER_WORKER | UMCG_SCX_REGISTER_SLICE,
			       .server_tid = getpid()));
	EXPECT_EQ(-EINVAL, REG(.flags = UMCG_REGISTER_WORKER | UMCG_SCX_REGISTER_SLICE,
			       .server_tid = getpid(),
			       .slice_ns = UMCG_SCX_SLICE_MAX_NS + 1));
	EXPECT_EQ(-EINVAL, REG(.flags = UMCG_REGISTER_WORKER, .server_tid = getpid(),
			       .slice_ns = 1000000));
	EXPECT_EQ(-ESRCH, REG(.flags = UMCG_REGISTER_WORKER | UMCG_SCX_REGISTER_SLICE,
			      .server_tid = getpid(), .slice_ns = 1000000));
	EXPECT_EQ(-EINVAL, REG(.flags = UMCG_REGISTER_SERVER, .cpu = 0, .server_tid = 1));
	EXPECT_EQ(-EINVAL, REG(.flags = UMCG_REGISTER_SERVER, .cpu = 4096));
	EXPECT_EQ(-EINVAL, REG(.flags = UMCG_REGISTER_WORKER, .cpu = 1));
	EXPECT_EQ(-ESRCH, REG(.flags = UMCG_REGISTER_WORKER, .server_tid = getpid()));

	/* A server of another process is no server for us. */
	ASSERT_EQ(0, pipe(tp));
	ASSERT_EQ(0, pipe(gp));
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		struct umcg_scx_register_args s = {
			.flags = UMCG_REGISTER_SERVER, .cpu = 0,
		};
		int ret = scx_run_prog(c->reg_fd, &s, sizeof(s));
		pid_t tid = ret ? -ret : scx_gettid();

		write(tp[1], &tid, sizeof(tid));
		read(gp[0], &b, 1);
		_exit(0);
	}
	ASSERT_EQ(sizeof(child_tid), read(tp[0], &child_tid, sizeof(child_tid)));
	ASSERT_EQ(child, child_tid) TH_LOG("child's register failed: %d", child_tid);
	EXPECT_EQ(-ESRCH, REG(.flags = UMCG_REGISTER_WORKER, .server_tid = child_tid));
	pk = (struct umcg_scx_pick_args){ .tid = child_tid, .cpu = 0 };
	EXPECT_EQ(-ESRCH, scx_run_prog(c->pick_fd, &pk, sizeof(pk)));
	pk = (struct umcg_scx_pick_args){ .tid = getpid(), .cpu = 0, .flags = 1 };
	EXPECT_EQ(-EINVAL, scx_run_prog(c->pick_fd, &pk, sizeof(pk)));
	pk = (struct umcg_scx_pick_args){ .tid = getpid(), .cpu = 4096 };
	EXPECT_EQ(-EINVAL, scx_run_prog(c->pick_fd, &pk, sizeof(pk)));
	pk = (struct umcg_scx_pick_args){ .tid = getpid(), .cpu = 0 };
	EXPECT_EQ(-ESRCH, scx_run_prog(c->pick_fd, &pk, sizeof(pk)));
	ASSERT_EQ(1, write(gp[1], "x", 1));
	ASSERT_EQ(child, waitpid(child, &status, 0));

	/*
	 * Bells: not with the doorbell, not for a worker; one bell server per
	 * CPU and process (a second is -EBUSY, a doorbell server beside it is
	 * fine), given back at unregister and at exit.  In a child, whose
	 * threads exit with it.
	 */
	EXPECT_EQ(-EINVAL, REG(.flags = UMCG_REGISTER_SERVER | UMCG_SCX_REGISTER_BELL |
				UMCG_SCX_REGISTER_DOORBELL, .cpu = 0));
	EXPECT_EQ(-EINVAL, REG(.flags = UMCG_REGISTER_WORKER | UMCG_SCX_REGISTER_BELL));
	bell_reg_fd = c->reg_fd;
	bell_unreg_fd = umcg_scx_obj_fd(self->s, "umcg_unregister");
	ASSERT_LE(0, bell_unreg_fd);
	child = fork();
	ASSERT_LE(0, child);
	if (child == 0)
		_exit(bell_claims());
	ASSERT_EQ(child, waitpid(child, &status, 0));
	EXPECT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status))
		TH_LOG("bell claims: step %d went wrong", WEXITSTATUS(status));

	/* Our own server, then a second registration of the same thread. */
	EXPECT_EQ(0, scx_run_prog(c->reg_fd, &(struct umcg_scx_register_args){
		.flags = UMCG_REGISTER_SERVER, .cpu = 0 },
		sizeof(struct umcg_scx_register_args)));
	EXPECT_EQ(-EBUSY, scx_run_prog(c->reg_fd, &(struct umcg_scx_register_args){
		.flags = UMCG_REGISTER_SERVER, .cpu = 0 },
		sizeof(struct umcg_scx_register_args)));
	EXPECT_EQ(0, REG(.flags = UMCG_REGISTER_WORKER, .server_tid = scx_gettid()));
	EXPECT_FALSE(umcg_scx_exited(self->s));
#undef REG
}

/* --- time slice (C6) ----------------------------------------------------- */

#define SLICE_NS	(2 * 1000000ULL)

struct slice_ctx {
	struct ctx		*c;
	atomic_int		server_tid;
	atomic_int		server_ret;
	atomic_bool		server_stop;
	atomic_int		worker_tid;
	atomic_int		worker_ret;
	atomic_int		slot;		/* -1 until known */
	atomic_int		group;
	atomic_bool		pick_preempted;	/* the server picks those too */
	atomic_ulong		spins;
	atomic_bool		worker_stop;
	atomic_bool		worker_done;
	_Atomic __u32		in_lib;		/* the worker's in_lib word */
};

/*
 * A held server of SERVER_CPU, as server_fn(): it picks back every hold
 * of the worker but a slice end's, unless told to.
 */
static void *slice_server_fn(void *arg)
{
	struct slice_ctx *x = arg;
	struct umcg_scx_register_args a = {
		.flags = UMCG_REGISTER_SERVER, .cpu = SERVER_CPU,
	};
	int ret;

	ret = scx_join_on(x->c->reg_fd, SERVER_CPU, &a, sizeof(a));
	atomic_store(&x->server_ret, ret);
	atomic_store(&x->server_tid, scx_gettid());
	if (ret)
		return NULL;
	while (!atomic_load(&x->server_stop)) {
		int slot = atomic_load(&x->slot);
		__u32 st;

		if (slot >= 0) {
			st = x->c->sh->task[slot].state;
			if ((st & UMCG_TASK_STATE_MASK) == UMCG_TASK_RUNNABLE &&
			    (!(st & UMCG_TF_PREEMPT) ||
			     atomic_load(&x->pick_preempted))) {
				struct umcg_scx_pick_args pk = {
					.tid = atomic_load(&x->worker_tid),
					.cpu = SERVER_CPU,
				};

				scx_run_prog(x->c->pick_fd, &pk, sizeof(pk));
			}
		}
		sched_yield();
	}
	scx_set_ext(false);
	return NULL;
}

/* A worker with a time slice that never sleeps: it spins and counts. */
static void *slice_worker_fn(void *arg)
{
	struct slice_ctx *x = arg;
	struct umcg_scx_register_args a = {
		.flags = UMCG_REGISTER_WORKER | UMCG_SCX_REGISTER_SLICE,
		.server_tid = atomic_load(&x->server_tid),
		.slice_ns = SLICE_NS,
		.in_lib = (__u64)(uintptr_t)&x->in_lib,
	};
	int ret;

	ret = scx_join_on(x->c->reg_fd, SERVER_CPU, &a, sizeof(a));
	atomic_store(&x->worker_tid, scx_gettid());
	if (!ret) {
		atomic_store(&x->group, a.group);
		atomic_store(&x->slot, a.slot);
	}
	atomic_store(&x->worker_ret, ret ? ret : 1);
	if (ret)
		return NULL;
	while (!atomic_load(&x->worker_stop))
		atomic_fetch_add(&x->spins, 1);
	scx_set_ext(false);
	atomic_store(&x->worker_done, true);
	return NULL;
}

/*
 * Start @x's server and worker on SERVER_CPU, the calling thread moved off
 * it (a fair-class task queued there defers slice ends): the worker's
 * slot, or -errno.
 */
static int slice_start(struct slice_ctx *x, pthread_t *server, pthread_t *worker)
{
	int ret = scx_pin_self(PICK_CPU);

	if (ret)
		return ret;
	if (pthread_create(server, NULL, slice_server_fn, x))
		return -EAGAIN;
	while (!atomic_load(&x->server_tid))
		usleep(1000);
	ret = atomic_load(&x->server_ret);
	if (ret)
		return ret;
	if (pthread_create(worker, NULL, slice_worker_fn, x))
		return -EAGAIN;
	while (!atomic_load(&x->worker_ret))
		usleep(1000);
	ret = atomic_load(&x->worker_ret);
	if (ret != 1)
		return ret;
	return atomic_load(&x->slot) < UMCG_SCX_MAX_TASKS ? atomic_load(&x->slot) :
							    -ERANGE;
}

/* Stop and join them (every hold of the worker picked back). */
static void slice_stop(struct slice_ctx *x, pthread_t server, pthread_t worker)
{
	atomic_store(&x->pick_preempted, true);
	atomic_store(&x->worker_stop, true);
	pthread_join(worker, NULL);
	atomic_store(&x->server_stop, true);
	pthread_join(server, NULL);
}

/* Wait until @slot's published word, masked with @mask, is @want. */
static bool word_becomes(const struct ctx *c, int slot, __u32 mask, __u32 want)
{
	long long t0 = scx_now_ns();

	while ((c->sh->task[slot].state & mask) != want) {
		if (scx_now_ns() - t0 > WAIT_MS * 1000000LL)
			return false;
		usleep(1000);
	}
	return true;
}

/*
 * A worker registered with a 2 ms time slice spins on the server's CPU:
 * its slice ends, RUNNABLE | UMCG_TF_PREEMPT is published (no new
 * blocked_ns) and it is held, spinning no more, until umcg_pick with the
 * seq of that hold moves it back; RUNNING is published and it spins
 * again.  While its in_lib word is set it is not held: it runs on, asked
 * to yield (RUNNING | UMCG_TF_PREEMPT, a new seq at each slice end).
 */
TEST_F_TIMEOUT(enf, slice_end_preempts_and_holds, 90)
{
	struct ctx *c = &self->c;
	struct slice_ctx x = { .c = c, .slot = -1 };
	struct umcg_scx_enf_stats st0, st1;
	const volatile struct umcg_task *ut;
	struct umcg_scx_pick_args pk;
	pthread_t server, worker;
	unsigned long spins;
	__u64 bns, seq;
	int ret, slot;

	enf_stats(self->s, &st0);
	slot = slice_start(&x, &server, &worker);
	ASSERT_LE(0, slot) TH_LOG("start: %s", strerror(-slot));
	ut = &c->sh->task[slot];

	/* 1. Its slice ends: preempted, published, held. */
	ASSERT_TRUE(word_becomes(c, slot, UMCG_TASK_STATE_MASK | UMCG_TF_PREEMPT,
				 UMCG_TASK_RUNNABLE | UMCG_TF_PREEMPT))
		TH_LOG("state %#x", ut->state);
	seq = ut->seq;
	bns = ut->blocked_ns;
	spins = atomic_load(&x.spins);
	usleep(HOLD_CHECK_MS * 1000);
	ASSERT_EQ(spins, atomic_load(&x.spins))
		TH_LOG("the preempted worker ran before it was picked");
	ASSERT_EQ(UMCG_TASK_RUNNABLE | UMCG_TF_PREEMPT, ut->state);
	ASSERT_EQ(seq, ut->seq);
	ASSERT_EQ(bns, ut->blocked_ns);
	ASSERT_NE(0, c->sh->events[atomic_load(&x.group)][slot / 64] &
		     (1ULL << (slot % 64)));

	/* 2. Picked with the seq of that hold: RUNNING, and it spins again. */
	pk = (struct umcg_scx_pick_args){
		.tid = atomic_load(&x.worker_tid), .cpu = SERVER_CPU,
		.flags = UMCG_SCX_PICK_SEQ, .pad = (__u32)seq,
	};
	atomic_store(&x.pick_preempted, true);
	ret = scx_run_prog(c->pick_fd, &pk, sizeof(pk));
	/* Or the server picked it first, after the flag. */
	ASSERT_TRUE(ret == 0 || ret == -ESTALE) TH_LOG("pick: %d", ret);
	ASSERT_LT(seq, ut->seq);
	spins = atomic_load(&x.spins);
	usleep(HOLD_CHECK_MS * 1000);
	ASSERT_LT(spins, atomic_load(&x.spins));
	enf_stats(self->s, &st1);
	ASSERT_LT(st0.cnt[UMCG_SCX_ENF_SLICE_END], st1.cnt[UMCG_SCX_ENF_SLICE_END]);

	/*
	 * 3. Inside its library: asked to yield, never held (a hold from
	 * before it set in_lib is picked back by the server).
	 */
	atomic_store(&x.in_lib, 1);
	ASSERT_TRUE(word_becomes(c, slot, UMCG_TASK_STATE_MASK | UMCG_TF_PREEMPT,
				 UMCG_TASK_RUNNING | UMCG_TF_PREEMPT))
		TH_LOG("state %#x", ut->state);
	seq = ut->seq;
	spins = atomic_load(&x.spins);
	usleep(HOLD_CHECK_MS * 1000);
	ASSERT_LT(spins, atomic_load(&x.spins));
	ASSERT_EQ(UMCG_TASK_RUNNING | UMCG_TF_PREEMPT, ut->state);
	/* One request per slice end. */
	ASSERT_LT(seq, ut->seq);
	enf_stats(self->s, &st0);
	ASSERT_LT(st1.cnt[UMCG_SCX_ENF_SLICE_DEFER], st0.cnt[UMCG_SCX_ENF_SLICE_DEFER]);
	log_enf_stats(_metadata, self->s, "end");

	slice_stop(&x, server, worker);
	ASSERT_FALSE(umcg_scx_exited(self->s));
}

/* A fair-class thread that spins on SERVER_CPU until @arg is set. */
static void *fair_spin_fn(void *arg)
{
	atomic_bool *stop = arg;

	if (scx_pin_self(SERVER_CPU))
		return NULL;
	while (!atomic_load_explicit(stop, memory_order_relaxed))
		;
	return NULL;
}

/*
 * Pick @x's worker onto SERVER_CPU if it is held; true once it exited.
 * For a test whose server has left.
 */
static bool slice_pick_held(struct slice_ctx *x)
{
	struct umcg_scx_pick_args pk = {
		.tid = atomic_load(&x->worker_tid), .cpu = SERVER_CPU,
	};
	int slot = atomic_load(&x->slot);

	if (atomic_load(&x->worker_done))
		return true;
	if ((x->c->sh->task[slot].state & UMCG_TASK_STATE_MASK) == UMCG_TASK_RUNNABLE)
		scx_run_prog(x->c->pick_fd, &pk, sizeof(pk));
	return false;
}

/*
 * The same worker beside a fair-class thread that never sleeps on its CPU,
 * for twice the watchdog's timeout.  sched_ext runs there only through the
 * kernel's deadline server, which a hold after an empty pick would stop for
 * good (umcg_enforce.bpf.h, c. and l.): its slice ends must not get the
 * scheduler ejected, and it keeps running, also past one timeout.  Its
 * server leaves first (a server held in sched_yield() is exactly what the
 * deadline server cannot bear, c.); this thread picks any hold.
 */
TEST_F_TIMEOUT(enf, slice_end_beside_fair_spinner, 90)
{
	struct slice_ctx x = { .c = &self->c, .slot = -1, .pick_preempted = true };
	struct umcg_scx_enf_stats st0, st1;
	pthread_t server, worker, fair;
	atomic_bool fair_stop = false;
	unsigned long half = 0;
	long long t0, now;
	int slot;

	slot = slice_start(&x, &server, &worker);
	ASSERT_LE(0, slot) TH_LOG("start: %s", strerror(-slot));
	atomic_store(&x.server_stop, true);
	ASSERT_EQ(0, pthread_join(server, NULL));
	enf_stats(self->s, &st0);
	ASSERT_EQ(0, pthread_create(&fair, NULL, fair_spin_fn, &fair_stop));
	t0 = scx_now_ns();
	while ((now = scx_now_ns()) - t0 < 2LL * UMCG_SCX_TIMEOUT_MS_DFL * 1000000) {
		if (!half && now - t0 >= UMCG_SCX_TIMEOUT_MS_DFL * 1000000LL)
			half = atomic_load(&x.spins) + 1;
		slice_pick_held(&x);
		usleep(1000);
	}
	atomic_store(&fair_stop, true);
	pthread_join(fair, NULL);
	enf_stats(self->s, &st1);
	log_enf_stats(_metadata, self->s, "end");
	TH_LOG("worker: %lu spins in the first %d ms, %lu in all", half - 1,
	       UMCG_SCX_TIMEOUT_MS_DFL, atomic_load(&x.spins));
	atomic_store(&x.worker_stop, true);
	while (!slice_pick_held(&x))
		usleep(1000);
	ASSERT_EQ(0, pthread_join(worker, NULL));
	ASSERT_FALSE(umcg_scx_exited(self->s));
	ASSERT_LT(half, atomic_load(&x.spins));
	/* Its slices did end meanwhile. */
	ASSERT_LT(st0.cnt[UMCG_SCX_ENF_SLICE_END] + st0.cnt[UMCG_SCX_ENF_SLICE_DEFER],
		  st1.cnt[UMCG_SCX_ENF_SLICE_END] + st1.cnt[UMCG_SCX_ENF_SLICE_DEFER]);
}

static void *spin_fn(void *arg)
{
	atomic_ulong *n = arg;
	long long t0 = scx_now_ns();

	while (scx_now_ns() - t0 < 200 * 1000000LL)
		atomic_fetch_add(n, 1);
	return NULL;
}

TEST_F_TIMEOUT(enf, unregistered_keeps_its_scheduling, 60)
{
	atomic_ulong n = 0;
	pthread_t t;

	ASSERT_EQ(SCHED_OTHER, sched_getscheduler(0));
	ASSERT_EQ(0, pthread_create(&t, NULL, spin_fn, &n));
	ASSERT_EQ(0, pthread_join(t, NULL));
	ASSERT_LT(0, atomic_load(&n));
	ASSERT_EQ(SCHED_OTHER, sched_getscheduler(0));
	for (int i = 0; i < UMCG_SCX_MAX_TASKS; i++)
		ASSERT_NE((__u32)getpid(), self->c.sh->task[i].server_tid);
	ASSERT_FALSE(umcg_scx_exited(self->s));
}

/*
 * A burst of registrations raises the bound of the searches by tid
 * (enf_slot_hwm); once the top slots are free again it comes back down to
 * one past the highest slot still in use, through both frees: unregister,
 * and the exit of a thread still registered (enf_drop()).
 */
#define BURST_WORKERS	500
#define BURST_KEEP	8

struct burst {
	int			reg_fd;
	int			unreg_fd;
	pid_t			server_tid;
	pthread_mutex_t		lock;
	pthread_cond_t		cond;
	int			phase;		/* 1: leave, 2: kept ones leave */
	atomic_int		registered;
	atomic_int		unreg_err;
};

struct burst_w {
	struct burst			*b;
	pthread_t			t;
	bool				keep;	/* registered until phase 2 */
	bool				unreg;	/* unregisters, else exits registered */
	int				ret;
	struct umcg_scx_register_args	a;
};

static void burst_wait(struct burst *b, int phase)
{
	pthread_mutex_lock(&b->lock);
	while (b->phase < phase)
		pthread_cond_wait(&b->cond, &b->lock);
	pthread_mutex_unlock(&b->lock);
}

static void burst_phase(struct burst *b, int phase)
{
	pthread_mutex_lock(&b->lock);
	b->phase = phase;
	pthread_cond_broadcast(&b->cond);
	pthread_mutex_unlock(&b->lock);
}

static void *burst_fn(void *arg)
{
	struct burst_w *w = arg;
	struct burst *b = w->b;
	struct umcg_scx_unregister_args u = { 0 };

	w->a.flags = UMCG_REGISTER_WORKER;
	w->a.server_tid = b->server_tid;
	/* SCHED_OTHER: no hook holds it while it waits. */
	w->ret = scx_run_prog(b->reg_fd, &w->a, sizeof(w->a));
	atomic_fetch_add(&b->registered, 1);
	if (w->ret)
		return NULL;
	burst_wait(b, 1);
	if (w->keep)
		burst_wait(b, 2);
	if ((w->unreg || w->keep) &&
	    scx_run_prog(b->unreg_fd, &u, sizeof(u)))
		atomic_fetch_add(&b->unreg_err, 1);
	return NULL;
}

static int cmp_int(const void *x, const void *y)
{
	return *(const int *)x - *(const int *)y;
}

/* hwm once it is at most @want, or the last value read after WAIT_MS. */
static __u32 hwm_falls_to(struct umcg_scx *s, __u32 want)
{
	long long t0 = scx_now_ns();
	__u32 hwm = ~0u;

	while (!umcg_scx_read_slot_hwm(s, &hwm) && hwm > want &&
	       scx_now_ns() - t0 < WAIT_MS * 1000000LL)
		usleep(2000);
	return hwm;
}

TEST_F_TIMEOUT(enf, slot_hwm_shrinks, 240)
{
	struct umcg_scx_register_args sa = { .flags = UMCG_REGISTER_SERVER };
	struct umcg_scx_register_args la = { .flags = UMCG_REGISTER_WORKER };
	struct umcg_scx_unregister_args u = { 0 };
	struct burst b = { .reg_fd = self->c.reg_fd };
	struct burst_w *w;
	pthread_attr_t attr;
	int *slots, n = 0, keep_max, want, ls;
	__u32 hwm0, hwm;

	b.unreg_fd = umcg_scx_obj_fd(self->s, "umcg_unregister");
	ASSERT_LE(0, b.unreg_fd);
	ASSERT_EQ(0, umcg_scx_read_slot_hwm(self->s, &hwm0));
	/* This thread is the workers' server (it stays SCHED_OTHER). */
	ASSERT_EQ(0, scx_run_prog(self->c.reg_fd, &sa, sizeof(sa)));
	b.server_tid = scx_gettid();
	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.cond, NULL);
	w = calloc(BURST_WORKERS, sizeof(*w));
	slots = calloc(BURST_WORKERS, sizeof(*slots));
	ASSERT_TRUE(w && slots);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	for (int i = 0; i < BURST_WORKERS; i++) {
		w[i].b = &b;
		w[i].unreg = i % 2;
		ASSERT_EQ(0, pthread_create(&w[i].t, &attr, burst_fn, &w[i]))
			TH_LOG("thread %d", i);
	}
	while (atomic_load(&b.registered) < BURST_WORKERS)
		usleep(10000);
	for (int i = 0; i < BURST_WORKERS; i++) {
		ASSERT_EQ(0, w[i].ret) TH_LOG("worker %d", i);
		slots[n++] = w[i].a.slot;
	}
	qsort(slots, n, sizeof(*slots), cmp_int);
	keep_max = slots[BURST_KEEP - 1];
	for (int i = 0; i < BURST_WORKERS; i++)
		w[i].keep = (int)w[i].a.slot <= keep_max;
	ASSERT_EQ(0, umcg_scx_read_slot_hwm(self->s, &hwm));
	TH_LOG("hwm: %u at load, %u with %d threads registered (slots %d..%d)",
	       hwm0, hwm, BURST_WORKERS + 1, slots[0], slots[n - 1]);
	/* The burst raised it: the test means something. */
	ASSERT_LT(slots[n - 1], (int)hwm);

	/* Half unregister, half exit registered; BURST_KEEP stay. */
	burst_phase(&b, 1);
	for (int i = 0; i < BURST_WORKERS; i++)
		if (!w[i].keep)
			pthread_join(w[i].t, NULL);
	/* The lowest slots: the server's and the kept workers'. */
	want = 0;
	for (int i = 0; i < BURST_WORKERS; i++)
		if (w[i].keep && (int)w[i].a.slot + 1 > want)
			want = w[i].a.slot + 1;
	hwm = hwm_falls_to(self->s, want);
	TH_LOG("hwm: %u with %d registered, want %d", hwm, BURST_KEEP + 1,
	       want);
	ASSERT_EQ((__u32)want, hwm);
	ASSERT_EQ(0, atomic_load(&b.unreg_err));

	/* A register after the shrink raises it again, past its slot. */
	la.server_tid = b.server_tid;
	{
		struct burst_w late = { .b = &b, .keep = true };

		late.a = la;
		atomic_store(&b.registered, 0);
		ASSERT_EQ(0, pthread_create(&late.t, &attr, burst_fn, &late));
		while (!atomic_load(&b.registered))
			usleep(1000);
		ASSERT_EQ(0, late.ret);
		ls = late.a.slot;
		ASSERT_EQ(0, umcg_scx_read_slot_hwm(self->s, &hwm));
		TH_LOG("late register: slot %d, hwm %u", ls, hwm);
		ASSERT_LT(ls, (int)hwm);
		ASSERT_GE(want + 1, (int)hwm);

		/* The rest leave; then the server: nothing is left. */
		burst_phase(&b, 2);
		pthread_join(late.t, NULL);
	}
	for (int i = 0; i < BURST_WORKERS; i++)
		if (w[i].keep)
			pthread_join(w[i].t, NULL);
	ASSERT_EQ(0, atomic_load(&b.unreg_err));
	ASSERT_EQ(0, scx_run_prog(b.unreg_fd, &u, sizeof(u)));
	hwm = hwm_falls_to(self->s, 0);
	TH_LOG("hwm: %u with none registered", hwm);
	ASSERT_EQ(0, hwm);
	ASSERT_FALSE(umcg_scx_exited(self->s));
	pthread_attr_destroy(&attr);
	free(slots);
	free(w);
}

TEST_HARNESS_MAIN
