// SPDX-License-Identifier: GPL-2.0
/*
 * Description: SIGKILL of a process whose workers and server sit in every
 * state the module knows, then the module's state is empty and it unloads
 * (C7).  For each variant a forked child registers a server and workers
 * with raw ioctls and drives them into the variant's states:
 *
 *   new          registered, idle (NEW), asleep outside umcg in pause()
 *   wait         asleep in UMCG_IOC_WAIT
 *   running      RUNNING, spinning in user code
 *   blocked      RUNNING, then blocked in read() on an empty pipe: the
 *                kernel moved it to BLOCKED, poked the server, set its
 *                event bit and queued its resume task work
 *   runnable     as blocked, then the pipe is written: the read returned
 *                and the worker is held, RUNNABLE, in the task work
 *   switch       in UMCG_IOC_SWITCH, having woken its peer
 *   preempted    UMCG_IOC_PREEMPT of a spinning RUNNING|UMCG_TF_PREEMPT
 *                worker: held, RUNNABLE, in the preempt task work
 *   server_wait  only a server, asleep in UMCG_IOC_WAIT
 *   all          all of the above in one process
 *   burst*       workers that block in read() and are picked again by a
 *                server scheduling from the event bitmap, a spinner that
 *                is preempted over and over, and two workers switching to
 *                each other, killed while all that goes on
 *   exec_*       as all and burst, but the child's unmanaged main thread
 *                calls execve() instead of being killed (which kills the
 *                other threads and closes the O_CLOEXEC file)
 *   exec_by_worker  the same, but a RUNNING worker calls execve(): it
 *                blocks in it (waiting for the other threads to die) and
 *                the new image must not be held waiting to be picked;
 *                _keep_fd: the file has no O_CLOEXEC and survives the
 *                execve(), so its group does too
 *   release      no kill: with workers running, blocked, held RUNNABLE
 *                and preempted, the child unmaps and closes its file (its
 *                server out of WAIT first, which holds the file); the
 *                held workers must run on unmanaged, the blocked one once
 *                its read completes, and the module must empty and unload
 *                while the process still lives
 *
 * The child checks that each thread reached its state (its state word,
 * event bit, the scheduler state in /proc, whether it returned to user
 * space) and reports; the parent checks /sys/class/misc/umcg's counters
 * against what the child set up, SIGKILLs and reaps the child, and then
 * expects groups, tasks, workers and works to drop to 0 and rmmod to
 * succeed.  On kernels whose default hook is the tracepoint, the all and
 * burst variants (every state at once) run again with hook=kprobe.  The VM runner fails the test on
 * any kernel warning in dmesg.
 *
 * Each variant loads umcg.ko itself (unloading it first if loaded and
 * unused) and leaves it loaded or not as it found it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <uapi/umcg.h>

#include "kmod_test.h"
#include "kmod_raw.h"

/* How long the child may take to get there (TCG, loaded host). */
#define READY_MS	60000
/* How long the module may take to forget a reaped process. */
#define EMPTY_MS	10000
/* How long an execve() of /bin/true may take to end the child. */
#define EXEC_MS		20000

enum role {
	R_END,
	R_NEW,
	R_WAIT,
	R_RUNNING,
	R_BLOCKED,
	R_RUNNABLE,
	R_SWITCH_B,	/* the target: asleep in WAIT again afterwards */
	R_SWITCH_A,	/* in SWITCH to the R_SWITCH_B just before it */
	R_PREEMPTED,
	R_B_READ,	/* burst: read() loop, picked by the server */
	R_B_SPIN,	/* burst: spinner, preempted by the main thread */
	R_B_SW,		/* burst: switch ping-pong with the next R_B_SW */
	R_EXEC,		/* RUNNING, calls execve() when the parent says */
};

#define MAX_THREADS	16

/* What the child tells the parent, in memory shared across fork(). */
struct report {
	_Atomic int ready;	/* 1 reached, -1 failed */
	int line;
	char msg[256];
	int nr_tasks;
	int nr_workers;
	int nr_works;		/* -1: not deterministic */
	unsigned long reads;	/* burst: reads that returned, picked */
	unsigned long switches;	/* burst: SWITCHes that returned */
	unsigned long preempts;	/* burst: PREEMPTs asked */
	_Atomic bool exec;	/* parent: execve() instead of the kill */
};

/* One thread of the child. */
struct thr {
	enum role role;
	int idx;
	pthread_t th;
	_Atomic pid_t tid;
	__u64 off;
	struct umcg_task *task;
	struct thr *peer;
	int pipefd[2];
	_Atomic int phase;
	_Atomic unsigned long spins;
};

/* ---- The child: everything here runs in the forked process ---- */

static struct report *rep;
static int cfd = -1;
static struct umcg_task *cmap;
static __u64 *cevents;
static __u64 *csummary;
static unsigned int cmax;
static _Atomic pid_t server_tid;
static struct umcg_task *server_task;
static _Atomic unsigned int server_pokes;
static bool server_schedules;	/* burst: the server picks workers */
static bool server_polls;	/* WAIT with a timeout, quit on request */
static _Atomic bool server_quit, server_out;
/* The slots this test's few threads can get: the lowest, reused first. */
#define MAX_SLOTS	4096
static _Atomic pid_t tid_of_slot[MAX_SLOTS];
static struct thr thr[MAX_THREADS];
static int nr_thr;

static void __attribute__((noreturn, format(printf, 2, 3)))
child_fail(int line, const char *fmt, ...)
{
	va_list ap;

	if (rep->ready == 0) {
		va_start(ap, fmt);
		vsnprintf(rep->msg, sizeof(rep->msg), fmt, ap);
		va_end(ap);
		rep->line = line;
		rep->ready = -1;
	}
	_exit(1);
}

#define CHECK(cond, fmt, ...) do {					\
	if (!(cond))							\
		child_fail(__LINE__, "%s: " fmt, #cond, ##__VA_ARGS__);	\
} while (0)

/* Wait until @tid sleeps: 'S' (interruptible, the hold too) or 'D'. */
static bool sleeps(pid_t tid, char how)
{
	return umcg_poll_ms(umcg_proc_state(0, tid) == how, READY_MS);
}

static __u32 state_of(struct umcg_task *t)
{
	return umcg_state_load(t) & UMCG_TASK_STATE_MASK;
}

static void __attribute__((noreturn)) spin(struct thr *t)
{
	for (;;)
		t->spins++;
}

/* Spins still going up (within 5 s)? */
static bool spinning(struct thr *t)
{
	unsigned long s = t->spins;

	return umcg_poll_ms(t->spins != s, 5000);
}

/* Spins not moving for 200 ms? */
static bool stopped(struct thr *t)
{
	unsigned long s = t->spins;

	umcg_sleep_ms(200);
	return t->spins == s;
}

/*
 * The server: RUNNABLE in its own word, then WAIT; a poke stores RUNNING
 * there and wakes it.  In a burst it also schedules: every slot whose
 * event bit it takes and whose state reads RUNNABLE is picked (RUNNING,
 * then WAKE).
 */
static void *server_fn(void *arg)
{
	__u64 off;

	(void)arg;
	if (umcg_reg(cfd, UMCG_REGISTER_SERVER, 0, 0, &off))
		child_fail(__LINE__, "server REGISTER: %s", strerror(errno));
	server_task = &cmap[umcg_slot_idx(off)];
	server_tid = umcg_gettid();
	for (;;) {
		umcg_state_store(server_task, UMCG_TASK_RUNNABLE);
		if (server_schedules) {
			/*
			 * The words the summary names: the others may not
			 * be mapped yet.
			 */
			for (unsigned int w = 0; w < (cmax + 63) / 64; w++) {
				__u64 bits;

				if (!(w % 64) &&
				    !__atomic_exchange_n(&csummary[w / 64], 0,
							 __ATOMIC_SEQ_CST)) {
					w += 63;
					continue;
				}
				bits = __atomic_exchange_n(&cevents[w], 0,
							   __ATOMIC_SEQ_CST);

				while (bits) {
					unsigned int i = w * 64 +
							 __builtin_ctzll(bits);
					__u32 s = umcg_state_load(&cmap[i]);

					bits &= bits - 1;
					if ((s & UMCG_TASK_STATE_MASK) !=
					    UMCG_TASK_RUNNABLE)
						continue;
					if (!__atomic_compare_exchange_n(
						&cmap[i].state, &s,
						(s & ~UMCG_TASK_STATE_MASK) |
						UMCG_TASK_RUNNING, false,
						__ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST))
						continue;
					umcg_wake(cfd, tid_of_slot[i]);
				}
			}
		}
		if (!umcg_wait(cfd, 0, server_schedules || server_polls ?
					20 * UMCG_MS : 0))
			server_pokes++;
		if (server_quit) {
			/* Out of the file's ioctls for good. */
			server_out = true;
			for (;;)
				pause();
		}
	}
	return NULL;
}

/* Store RUNNING, with @flags, into @t's own word, its server in place. */
static void go_running(struct thr *t, __u32 flags)
{
	t->task->server_tid = server_tid;
	umcg_state_store(t->task, UMCG_TASK_RUNNING | flags);
}

static void *worker_fn(void *arg)
{
	struct thr *t = arg;
	char c;

	if (umcg_reg(cfd, UMCG_REGISTER_WORKER, server_tid, 0, &t->off))
		child_fail(__LINE__, "worker REGISTER: %s", strerror(errno));
	if (umcg_slot_idx(t->off) >= MAX_SLOTS)
		child_fail(__LINE__, "worker slot %u", umcg_slot_idx(t->off));
	t->task = &cmap[umcg_slot_idx(t->off)];
	t->task->server_tid = server_tid;
	tid_of_slot[umcg_slot_idx(t->off)] = umcg_gettid();
	t->tid = umcg_gettid();

	switch (t->role) {
	case R_NEW:
		t->phase = 1;
		for (;;)
			pause();
	case R_WAIT:
	case R_SWITCH_B:
		umcg_state_store(t->task, UMCG_TASK_RUNNABLE);
		t->phase = 1;
		umcg_wait(cfd, 0, 0);
		t->phase = 2;
		if (t->role == R_WAIT)
			break;
		/* Woken by its R_SWITCH_A: back to sleep in WAIT. */
		umcg_state_store(t->task, UMCG_TASK_RUNNABLE);
		t->phase = 3;
		umcg_wait(cfd, 0, 0);
		t->phase = 4;
		break;
	case R_RUNNING:
		go_running(t, 0);
		t->phase = 1;
		spin(t);
	case R_BLOCKED:
	case R_RUNNABLE:
		go_running(t, 0);
		t->phase = 1;
		if (read(t->pipefd[0], &c, 1) != 1)
			t->phase = -1;
		else
			t->phase = 2;
		spin(t);
	case R_SWITCH_A:
		while (t->peer->phase != 1)
			umcg_sleep_ms(1);
		if (!sleeps(t->peer->tid, 'S'))
			child_fail(__LINE__, "switch target never slept");
		umcg_state_store(t->task, UMCG_TASK_RUNNABLE);
		umcg_state_store(t->peer->task, UMCG_TASK_RUNNING);
		t->phase = 1;
		umcg_switch(cfd, t->peer->tid, 0, 0);
		t->phase = 2;
		break;
	case R_PREEMPTED:
		go_running(t, UMCG_TF_PREEMPT);
		t->phase = 1;
		spin(t);
	case R_B_READ:
		go_running(t, 0);
		t->phase = 1;
		for (;;) {
			if (read(t->pipefd[0], &c, 1) == 1)
				t->spins++;
		}
	case R_B_SPIN:
		go_running(t, 0);
		t->phase = 1;
		spin(t);
	case R_EXEC:
		go_running(t, 0);
		t->phase = 1;
		/* Spin, RUNNING, until told; de_thread() then sleeps. */
		while (!rep->exec)
			t->spins++;
		{
			char *argv[] = { "true", NULL };

			execv("/bin/true", argv);
		}
		child_fail(__LINE__, "execv: %s", strerror(errno));
	case R_B_SW:
		/* The first of a pair starts; the second waits for it. */
		if (t->peer > t) {
			while (!t->peer->tid || t->peer->phase != 1)
				umcg_sleep_ms(1);
			go_running(t, 0);
		} else {
			umcg_state_store(t->task, UMCG_TASK_PARKED);
			t->phase = 1;
			umcg_wait(cfd, 0, 0);
		}
		t->phase = 1;
		for (;;) {
			umcg_state_store(t->task, UMCG_TASK_PARKED);
			umcg_state_store(t->peer->task, UMCG_TASK_RUNNING);
			umcg_switch(cfd, t->peer->tid, 0, 0);
			t->spins++;
		}
	default:
		break;
	}
	for (;;)
		pause();
	return NULL;
}

static void start_thread(struct thr *t, void *(*fn)(void *))
{
	pthread_attr_t attr;
	int ret;

	/* Small stacks: mlockall() populates them all, slowly under TCG. */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	ret = pthread_create(&t->th, &attr, fn, t);
	pthread_attr_destroy(&attr);

	CHECK(!ret, "pthread_create: %s", strerror(ret));
}

/* Check that thread @t is where its role puts it; maybe move it there. */
static int reach(struct thr *t)
{
	unsigned int idx;
	__u32 s;

	CHECK(umcg_poll_ms(t->phase >= 1, READY_MS), "thread %d: phase %d",
	      t->idx, t->phase);
	idx = umcg_slot_idx(t->off);

	switch (t->role) {
	case R_NEW:
		CHECK(sleeps(t->tid, 'S'), "thread %d", t->idx);
		CHECK(state_of(t->task) == UMCG_TASK_NEW, "%#x", t->task->state);
		return 0;
	case R_WAIT:
		CHECK(sleeps(t->tid, 'S'), "thread %d", t->idx);
		CHECK(t->phase == 1, "returned from WAIT");
		return 0;
	case R_RUNNING:
	case R_EXEC:
		CHECK(spinning(t), "thread %d", t->idx);
		CHECK(state_of(t->task) == UMCG_TASK_RUNNING, "%#x",
		      t->task->state);
		return 0;
	case R_BLOCKED:
	case R_RUNNABLE:
		/* The kernel moved it; the server was poked. */
		CHECK(umcg_poll_ms(state_of(t->task) == UMCG_TASK_BLOCKED,
				   READY_MS), "%#x", t->task->state);
		CHECK(sleeps(t->tid, 'S'), "thread %d", t->idx);
		/*
		 * The word moves first; the time and the event bit follow,
		 * and /proc says 'S' before the hook ran: poll for them.
		 */
		CHECK(umcg_poll_ms(umcg_event_test(cevents, idx), READY_MS),
		      "event bit of slot %u", idx);
		CHECK(umcg_poll_ms(t->task->blocked_ns != 0, READY_MS),
		      "blocked_ns");
		CHECK(umcg_poll_ms(server_pokes > 0, READY_MS), "server poke");
		if (t->role == R_BLOCKED)
			return 1;
		/* Complete the read: held RUNNABLE in the task work. */
		umcg_event_take(cevents, idx);
		CHECK(write(t->pipefd[1], "x", 1) == 1, "write: %s",
		      strerror(errno));
		CHECK(umcg_poll_ms(state_of(t->task) == UMCG_TASK_RUNNABLE,
				   READY_MS), "%#x", t->task->state);
		CHECK(sleeps(t->tid, 'S'), "thread %d: %c", t->idx,
		      umcg_proc_state(0, t->tid));
		CHECK(umcg_poll_ms(umcg_event_test(cevents, idx), READY_MS),
		      "event bit of slot %u", idx);
		CHECK(umcg_poll_ms(t->task->woken_ns != 0, READY_MS),
		      "woken_ns");
		umcg_sleep_ms(100);
		CHECK(t->phase == 1, "returned to user space: phase %d",
		      t->phase);
		return 1;
	case R_SWITCH_B:
		CHECK(umcg_poll_ms(t->phase == 3, READY_MS), "phase %d",
		      t->phase);
		CHECK(sleeps(t->tid, 'S'), "thread %d", t->idx);
		return 0;
	case R_SWITCH_A:
		CHECK(sleeps(t->tid, 'S'), "thread %d", t->idx);
		CHECK(umcg_poll_ms(t->peer->phase == 3, READY_MS), "phase %d",
		      t->peer->phase);
		umcg_sleep_ms(100);
		CHECK(t->phase == 1, "returned from SWITCH: phase %d",
		      t->phase);
		return 0;
	case R_PREEMPTED:
		CHECK(spinning(t), "thread %d", t->idx);
		CHECK(umcg_preempt(cfd, t->tid) == 0, "PREEMPT: %s",
		      strerror(errno));
		CHECK(umcg_poll_ms(state_of(t->task) == UMCG_TASK_RUNNABLE,
				   READY_MS), "%#x", t->task->state);
		s = umcg_state_load(t->task);
		CHECK(!(s & UMCG_TF_PREEMPT), "flag left: %#x", s);
		CHECK(sleeps(t->tid, 'S'), "thread %d: %c", t->idx,
		      umcg_proc_state(0, t->tid));
		CHECK(umcg_event_test(cevents, idx), "event bit of slot %u",
		      idx);
		CHECK(stopped(t), "still spinning");
		return 1;
	default:
		return 0;
	}
}

/* Burst: feed the readers' pipes and preempt the spinners, for @ms. */
static void burst(int ms)
{
	__u64 end = umcg_now_ns() + ms * UMCG_MS;
	int n = 0;

	do {
		for (int i = 0; i < nr_thr; i++) {
			struct thr *t = &thr[i];
			__u32 s;

			if (t->role == R_B_READ) {
				CHECK(write(t->pipefd[1], "x", 1) == 1,
				      "write: %s", strerror(errno));
			} else if (t->role == R_B_SPIN) {
				s = umcg_state_load(t->task);
				if ((s & UMCG_TASK_STATE_MASK) ==
				    UMCG_TASK_RUNNING &&
				    __atomic_compare_exchange_n(&t->task->state,
						&s, s | UMCG_TF_PREEMPT, false,
						__ATOMIC_SEQ_CST,
						__ATOMIC_SEQ_CST)) {
					CHECK(!umcg_preempt(cfd, t->tid),
					      "PREEMPT: %s", strerror(errno));
					rep->preempts++;
				}
			}
		}
		n++;
		umcg_sleep_ms(2);
	} while (umcg_now_ns() < end || n < 3);
}

/*
 * Release the group's file with the threads where reach() left them: the
 * server leaves WAIT, the mapping and the descriptor go.  Workers held
 * waiting to be picked must then run on, unmanaged, and the one blocked in
 * read() too once its pipe is written.
 */
static void release_file(size_t len)
{
	server_quit = true;
	CHECK(umcg_poll_ms(server_out, READY_MS), "server still in WAIT");
	CHECK(!munmap(cmap, len), "munmap: %s", strerror(errno));
	CHECK(!close(cfd), "close: %s", strerror(errno));
	for (int i = 0; i < nr_thr; i++) {
		struct thr *t = &thr[i];

		if (t->role == R_BLOCKED)
			CHECK(write(t->pipefd[1], "x", 1) == 1, "write: %s",
			      strerror(errno));
	}
	for (int i = 0; i < nr_thr; i++) {
		struct thr *t = &thr[i];

		if (t->role == R_BLOCKED || t->role == R_RUNNABLE)
			CHECK(umcg_poll_ms(t->phase == 2, READY_MS),
			      "thread %d still held: phase %d, %c", i,
			      t->phase, umcg_proc_state(0, t->tid));
		if (t->role == R_PREEMPTED || t->role == R_RUNNING)
			CHECK(spinning(t), "thread %d still held: %c", i,
			      umcg_proc_state(0, t->tid));
	}
}

static void __attribute__((noreturn))
child_main(const enum role *roles, int burst_ms, bool release, bool keep_fd)
{
	struct thr srv = { .idx = -1 };
	int max, works = 0;

	if (mlockall(MCL_CURRENT | MCL_FUTURE))
		child_fail(__LINE__, "mlockall: %s", strerror(errno));
	cfd = open(UMCG_DEVICE_PATH, O_RDWR | (keep_fd ? 0 : O_CLOEXEC));
	CHECK(cfd >= 0, "open: %s", strerror(errno));
	max = umcg_max_tasks(cfd);
	CHECK(max > 0, "%d", max);
	cmax = max;
	server_polls = release;
	cmap = umcg_map(cfd, umcg_map_len(cmax));
	CHECK(cmap != MAP_FAILED, "mmap: %s", strerror(errno));
	cevents = umcg_events(cmap, cmax);
	csummary = umcg_summary(cmap, cmax);

	for (nr_thr = 0; roles[nr_thr] != R_END; nr_thr++) {
		struct thr *t = &thr[nr_thr];

		CHECK(nr_thr < MAX_THREADS, "too many");
		t->role = roles[nr_thr];
		t->idx = nr_thr;
		CHECK(!pipe2(t->pipefd, O_CLOEXEC), "pipe: %s",
		      strerror(errno));
		if (t->role == R_SWITCH_A)
			t->peer = &thr[nr_thr - 1];
		if (t->role == R_B_SW)
			t->peer = nr_thr % 2 ? &thr[nr_thr - 1] :
					       &thr[nr_thr + 1];
		if (t->role == R_B_READ || t->role == R_B_SPIN ||
		    t->role == R_B_SW)
			server_schedules = true;
	}
	/* R_B_SW come in pairs at even, odd positions. */
	for (int i = 0; i < nr_thr; i++)
		CHECK(thr[i].role != R_B_SW || thr[i].peer->role == R_B_SW,
		      "pairing %d", i);

	start_thread(&srv, server_fn);
	CHECK(umcg_poll_ms(server_tid != 0, READY_MS), "server");
	for (int i = 0; i < nr_thr; i++) {
		start_thread(&thr[i], worker_fn);
		/* One at a time: slots in order, peers registered first. */
		CHECK(umcg_poll_ms(thr[i].tid != 0, READY_MS), "thread %d",
		      i);
	}
	/* The server sleeps in WAIT (poked since, maybe, and back). */
	if (!server_schedules)
		CHECK(sleeps(server_tid, 'S'), "server");
	for (int i = 0; i < nr_thr; i++)
		works += reach(&thr[i]);
	if (!server_schedules)
		CHECK(sleeps(server_tid, 'S'), "server");
	if (server_schedules) {
		burst(burst_ms);
		for (int i = 0; i < nr_thr; i++) {
			if (thr[i].role == R_B_READ)
				rep->reads += thr[i].spins;
			if (thr[i].role == R_B_SW)
				rep->switches += thr[i].spins;
		}
	}

	rep->nr_tasks = 1 + nr_thr;
	rep->nr_workers = nr_thr;
	rep->nr_works = server_schedules ? -1 : works;
	if (release) {
		release_file(umcg_map_len(cmax));
		rep->nr_tasks = rep->nr_workers = rep->nr_works = 0;
	}
	rep->ready = 1;
	/* Keep the activity going until the SIGKILL, or the execve(). */
	for (;;) {
		bool worker_execs = false;

		for (int i = 0; i < nr_thr; i++)
			worker_execs |= thr[i].role == R_EXEC;
		if (rep->exec && !worker_execs) {
			char *argv[] = { "true", NULL };

			/* Kills the other threads, closes the O_CLOEXEC fd. */
			execv("/bin/true", argv);
			_exit(30);
		}
		if (server_schedules)
			burst(20);
		else
			umcg_sleep_ms(5);
	}
}

/* ---- The parent ---- */

FIXTURE(kill) {
	char path[PATH_MAX];
	bool was_loaded;
	struct report *rep;
};

FIXTURE_VARIANT(kill) {
	const enum role *roles;
	int burst_ms;
	bool kprobe_too;	/* again with hook=kprobe if not the default */
	bool exec;		/* execve() in the child instead of SIGKILL */
	bool release;		/* the child closes and unmaps its file */
	bool keep_fd;		/* no O_CLOEXEC: the file survives execve() */
};

#define ROLES(...) ((const enum role[]){ __VA_ARGS__, R_END })

/*
 * Two programs from this file, each well inside the VM runner's per-test
 * timeout: kmod_kill (the states, SIGKILL) and kmod_kill_exec (built with
 * UMCG_KILL_EXEC: execve() and the release of the file).
 */
#ifndef UMCG_KILL_EXEC
FIXTURE_VARIANT_ADD(kill, new) { .roles = ROLES(R_NEW) };
FIXTURE_VARIANT_ADD(kill, wait) { .roles = ROLES(R_WAIT) };
FIXTURE_VARIANT_ADD(kill, running) { .roles = ROLES(R_RUNNING) };
FIXTURE_VARIANT_ADD(kill, blocked) { .roles = ROLES(R_BLOCKED) };
FIXTURE_VARIANT_ADD(kill, runnable) { .roles = ROLES(R_RUNNABLE) };
FIXTURE_VARIANT_ADD(kill, switch_to) {
	.roles = ROLES(R_SWITCH_B, R_SWITCH_A),
};
FIXTURE_VARIANT_ADD(kill, preempted) { .roles = ROLES(R_PREEMPTED) };
FIXTURE_VARIANT_ADD(kill, server_wait) { .roles = ROLES(R_END) };
FIXTURE_VARIANT_ADD(kill, all) {
	.roles = ROLES(R_NEW, R_WAIT, R_RUNNING, R_BLOCKED, R_RUNNABLE,
		       R_SWITCH_B, R_SWITCH_A, R_PREEMPTED, R_BLOCKED,
		       R_RUNNABLE, R_PREEMPTED),
	.kprobe_too = true,
};
FIXTURE_VARIANT_ADD(kill, burst_early) {
	.roles = ROLES(R_B_SW, R_B_SW, R_B_READ, R_B_READ, R_B_SPIN),
	.burst_ms = 20,
};
FIXTURE_VARIANT_ADD(kill, burst) {
	.roles = ROLES(R_B_SW, R_B_SW, R_B_READ, R_B_READ, R_B_SPIN,
		       R_B_READ),
	.burst_ms = 1500,
	.kprobe_too = true,
};

#else
FIXTURE_VARIANT_ADD(kill, exec_all) {
	.roles = ROLES(R_NEW, R_WAIT, R_RUNNING, R_BLOCKED, R_RUNNABLE,
		       R_SWITCH_B, R_SWITCH_A, R_PREEMPTED),
	.exec = true,
};
FIXTURE_VARIANT_ADD(kill, exec_burst) {
	.roles = ROLES(R_B_SW, R_B_SW, R_B_READ, R_B_READ, R_B_SPIN),
	.burst_ms = 200,
	.exec = true,
};

FIXTURE_VARIANT_ADD(kill, exec_by_worker) {
	.roles = ROLES(R_NEW, R_WAIT, R_BLOCKED, R_RUNNABLE, R_PREEMPTED,
		       R_EXEC),
	.exec = true,
};

FIXTURE_VARIANT_ADD(kill, exec_by_worker_keep_fd) {
	.roles = ROLES(R_BLOCKED, R_RUNNABLE, R_EXEC),
	.exec = true,
	.keep_fd = true,
};

FIXTURE_VARIANT_ADD(kill, release) {
	.roles = ROLES(R_NEW, R_RUNNING, R_BLOCKED, R_RUNNABLE, R_PREEMPTED),
	.release = true,
};
#endif

FIXTURE_SETUP(kill)
{
	int ret;

	self->rep = MAP_FAILED;
	if (!umcg_kmod_find(_metadata, self->path, sizeof(self->path)))
		return;
	self->was_loaded = umcg_test_kmod_loaded(UMCG_KMOD_NAME);
	/* A previous test's process may still be exiting: give it 10 s. */
	for (int i = 0; i < 100; i++) {
		ret = umcg_test_kmod_unload(UMCG_KMOD_NAME);
		if (ret != -UMCG_EINUSE)
			break;
		usleep(100000);
	}
	if (ret == -UMCG_EINUSE)
		SKIP(return, "umcg.ko is loaded and in use");
	ASSERT_TRUE(ret == 0 || ret == -ENOENT)
		TH_LOG("unloading umcg: %s", strerror(-ret));
	self->rep = mmap(NULL, sizeof(*self->rep), PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->rep);
}

FIXTURE_TEARDOWN(kill)
{
	int ret;

	if (self->rep != MAP_FAILED)
		munmap(self->rep, sizeof(*self->rep));
	if (self->was_loaded) {
		ret = umcg_test_kmod_load(self->path);
		EXPECT_TRUE(ret == 0 || ret == -EEXIST);
	} else {
		ret = umcg_test_kmod_unload(UMCG_KMOD_NAME);
		EXPECT_TRUE(ret == 0 || ret == -ENOENT);
	}
}

static void counts_log(struct __test_metadata *_metadata, const char *when)
{
	TH_LOG("%s: groups %ld tasks %ld workers %ld works %ld", when,
	       umcg_sys_count("groups"), umcg_sys_count("tasks"),
	       umcg_sys_count("workers"), umcg_sys_count("works"));
}

/* Each thread of @pid: its state and where it sleeps. */
static void threads_log(struct __test_metadata *_metadata, pid_t pid)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd),
		 "for t in /proc/%d/task/*; do echo \"# $t $(cut -d' ' -f3 $t/stat) $(cat $t/wchan)\"; cat $t/stack 2>/dev/null | sed 's/^/#   /'; done",
		 pid);
	if (system(cmd) < 0)
		TH_LOG("system: %s", strerror(errno));
}

/* Load with @params, run the variant's child, kill it, expect a clean slate. */
static void kill_once(struct __test_metadata *_metadata,
		      FIXTURE_DATA(kill) *self,
		      const FIXTURE_VARIANT(kill) *variant,
		      const char *params)
{
	struct report *r = self->rep;
	char hook[32];
	pid_t child;
	int status, ret;
	long works;

	ret = umcg_test_kmod_load_params(self->path, params);
	ASSERT_EQ(0, ret) TH_LOG("loading with '%s': %s", params,
				 strerror(-ret));
	TH_LOG("hook %s", umcg_sys_hook(hook, sizeof(hook)));
	ASSERT_TRUE(umcg_sys_empty()) counts_log(_metadata, "fresh");
	memset(r, 0, sizeof(*r));

	child = fork();
	ASSERT_LE(0, child);
	if (child == 0) {
		rep = r;
		child_main(variant->roles, variant->burst_ms,
			   variant->release, variant->keep_fd);
	}
	/* Until it is there, or dead. */
	for (int i = 0; i < READY_MS && !r->ready; i++) {
		if (waitpid(child, &status, WNOHANG) == child) {
			child = 0;
			break;
		}
		umcg_sleep_ms(1);
	}
	if (r->ready != 1) {
		if (child > 0) {
			kill(child, SIGKILL);
			waitpid(child, &status, 0);
		}
		ASSERT_EQ(1, r->ready) TH_LOG("child, line %d: %s", r->line,
					      r->msg);
	}

	if (variant->burst_ms >= 1000) {
		TH_LOG("burst: %lu reads, %lu switches, %lu preemptions",
		       r->reads, r->switches, r->preempts);
		/* The burst did go on: workers blocked and were picked. */
		EXPECT_LT(0, r->reads);
		EXPECT_LT(0, r->switches);
		EXPECT_LT(0, r->preempts);
	}

	if (variant->release) {
		/* Gone with the file, while the process lives on. */
		EXPECT_TRUE(umcg_poll_ms(umcg_sys_empty(), EMPTY_MS))
			counts_log(_metadata, "after the release");
		ret = umcg_unload_eventually(EMPTY_MS);
		EXPECT_EQ(0, ret) TH_LOG("rmmod: %s", strerror(-ret));
		EXPECT_EQ(0, waitpid(child, &status, WNOHANG));
		ASSERT_EQ(0, kill(child, SIGKILL));
		ASSERT_EQ(child, waitpid(child, &status, 0));
		return;
	}

	/* The module sees what the child set up. */
	EXPECT_EQ(1, umcg_sys_count("groups"));
	EXPECT_EQ(r->nr_tasks, umcg_sys_count("tasks"));
	EXPECT_EQ(r->nr_workers, umcg_sys_count("workers"));
	works = umcg_sys_count("works");
	if (r->nr_works >= 0)
		EXPECT_EQ(r->nr_works, works);
	EXPECT_EQ(-UMCG_EINUSE, umcg_test_kmod_unload(UMCG_KMOD_NAME));

	if (variant->exec) {
		r->exec = true;
		bool exited = umcg_poll_ms(waitpid(child, &status,
						   WNOHANG) == child, EXEC_MS);

		if (!exited) {
			threads_log(_metadata, child);
			kill(child, SIGKILL);
			ASSERT_EQ(child, waitpid(child, &status, 0));
		}
		ASSERT_TRUE(exited) TH_LOG("no exit within %d ms of execve()",
					   EXEC_MS);
		EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
			TH_LOG("status %#x", status);
	} else {
		ASSERT_EQ(0, kill(child, SIGKILL));
		ASSERT_EQ(child, waitpid(child, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
			TH_LOG("status %#x", status);
	}

	EXPECT_TRUE(umcg_poll_ms(umcg_sys_empty(), EMPTY_MS))
		counts_log(_metadata, "after the kill");
	ret = umcg_unload_eventually(EMPTY_MS);
	EXPECT_EQ(0, ret) TH_LOG("rmmod: %s", strerror(-ret));
	EXPECT_FALSE(umcg_test_kmod_loaded(UMCG_KMOD_NAME));
}

TEST_F_TIMEOUT(kill, sigkill, 600)
{
	char hook[32];

	kill_once(_metadata, self, variant, "");
	if (!variant->kprobe_too)
		return;
	/* The kprobe too, where the tracepoint is the default. */
	ASSERT_EQ(0, umcg_test_kmod_load(self->path));
	umcg_sys_hook(hook, sizeof(hook));
	ASSERT_EQ(0, umcg_test_kmod_unload(UMCG_KMOD_NAME));
	if (!strcmp(hook, "tracepoint"))
		kill_once(_metadata, self, variant, "hook=kprobe");
}

TEST_HARNESS_MAIN
