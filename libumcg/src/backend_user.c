// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * backend_user.c - the "user" backend: no help from the kernel.
 *
 * Hand-off is a futex on each thread's state word.  What the kernel would
 * tell the other backends, the monitor thread finds out (Go's sysmon is the
 * model): it samples each busy core's owner.
 *
 *   announced  the owner is in a blocking call it announced
 *            (umcg_blocking_enter(), blocking.c: umcg-run's interposed
 *            calls), the same call as at the last sample, and used no CPU
 *            time since: the core goes to the next runnable worker at
 *            once.  The owner, on its way out of the call, finds out and
 *            waits for a core before it runs its own code again.  (A call
 *            announced with UMCG_BLOCKING_NOW gave its core away itself.)
 *   blocked  the owner used no CPU time for blocked_ns and /proc says it
 *            sleeps (S or D): the core goes to the next runnable worker
 *            (umcg_worker_blocked).  The blocked worker finds out at its
 *            next libumcg call and queues for a core again; until then it
 *            may run beside the core's new owner (the C1 exception).
 *   slice    the owner has held the core longer than the group's time
 *            slice: it gets UMCG_PREEMPT_SIGNAL, whose handler yields the
 *            core (or, inside libumcg, flags it for the way out).  The
 *            handler is installed only for a group with a time slice.
 *
 * The monitor sleeps blocked_ns / 2 between samples, doubling after 50
 * samples in which nothing happened, up to 10 ms; any action resets it.
 * While a core's owner is in an announced call it samples every 20 us (or
 * blocked_ns / 2, if shorter), whatever blocked_ns is.  Before a sleep
 * longer than 1 ms it says so in group->monitor_idle, and the next worker
 * to announce a call that may block wakes it (blocking.c).
 *
 * Lock order: the monitor takes core->lock only through sched.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"

#define UMCG_PREEMPT_SIGNAL	SIGURG
#define UMCG_MONITOR_MAX_NS	10000000ULL
/* The sample period while a core's owner is in an announced call. */
#define UMCG_MONITOR_CALL_NS	20000ULL
/* Sleeping longer than this, the monitor wants a poke (monitor_idle). */
#define UMCG_MONITOR_POKE_NS	1000000ULL

/* What one sample of a core found (user_sample_core()). */
#define UMCG_SAMPLE_ACTED	(1U << 0)	/* it did something */
#define UMCG_SAMPLE_IN_CALL	(1U << 1)	/* the owner is in an announced call */

struct umcg_user {
	pthread_t monitor;
	_Atomic bool stop;
	struct sigaction old_action;
	/* Per core: the owner, its CPU time and its call at the last sample. */
	struct umcg_user_sample {
		struct umcg_thread *owner;
		uint64_t switches;
		uint64_t cpu_ns;
		uint64_t idle_since_ns;
		uint64_t blocking;
	} *samples;
};

static int user_probe(const char **why)
{
	return 0;
}

static void user_preempt_handler(int sig)
{
	struct umcg_thread *self = umcg_current;

	if (!self || umcg_state_of(umcg_thread_load_state(self)) != UMCG_TASK_RUNNING)
		return;
	if (atomic_load(&self->in_lib)) {
		atomic_store(&self->preempt_pending, 1);
		return;
	}
	umcg_worker_preempt(self);
}

/* CPU time used by @t so far, or 0 when it cannot be read. */
static uint64_t user_thread_cpu_ns(struct umcg_thread *t)
{
	clockid_t cid;
	struct timespec ts;

	if (pthread_getcpuclockid(t->pthread, &cid) || clock_gettime(cid, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Has @t used no CPU time since the sample *@arg? */
static bool user_thread_still_asleep(struct umcg_thread *t, void *arg)
{
	return user_thread_cpu_ns(t) == *(const uint64_t *)arg;
}

/*
 * @t is still in the announced call *@arg, seen asleep: the core is taken
 * (IN -> TAKEN), unless @t left the call meanwhile (blocking.c).
 */
static bool user_thread_still_in_call(struct umcg_thread *t, void *arg)
{
	uint64_t w = *(const uint64_t *)arg;

	return atomic_compare_exchange_strong(&t->blocking, &w,
					      (w & ~UMCG_BLK_MASK) | UMCG_BLK_TAKEN);
}

/* Does /proc say @tid sleeps in the kernel (state S or D)? */
static bool user_thread_sleeps(pid_t tid)
{
	char path[64], buf[256], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* the name may hold spaces and ')' */
	return p && p[1] == ' ' && (p[2] == 'S' || p[2] == 'D');
}

/*
 * One look at core @c: UMCG_SAMPLE_*.  Under c->lock, which keeps the
 * owner alive while we read its clock and /proc.
 */
static unsigned int user_sample_core(struct umcg_group *g, struct umcg_core *c,
				     struct umcg_user_sample *smp, uint64_t now)
{
	struct umcg_thread *t;
	uint64_t switches, cpu, call;
	unsigned int acted = 0;
	bool in_call;

	pthread_mutex_lock(&c->lock);
	t = c->current;
	switches = atomic_load(&c->nr_switches);
	if (!t) {
		smp->owner = NULL;
		goto out;
	}
	call = atomic_load(&t->blocking);
	in_call = (call & UMCG_BLK_MASK) == UMCG_BLK_IN;
	cpu = user_thread_cpu_ns(t);
	if (t != smp->owner || switches != smp->switches || cpu != smp->cpu_ns ||
	    call != smp->blocking) {
		smp->owner = t;
		smp->switches = switches;
		smp->cpu_ns = cpu;
		smp->idle_since_ns = now;
		smp->blocking = call;
	} else if (in_call && atomic_load(&t->awake)) {
		/* The same announced call, asleep since the last sample. */
		if (umcg_worker_blocked_locked(c, t, user_thread_still_in_call, &call))
			acted = UMCG_SAMPLE_ACTED;
		smp->owner = NULL;
		goto out;
	} else if (now - smp->idle_since_ns >= g->blocked_ns &&
		   atomic_load(&t->awake) && user_thread_sleeps(t->tid)) {
		if (umcg_worker_blocked_locked(c, t, user_thread_still_asleep, &cpu))
			acted = UMCG_SAMPLE_ACTED;
		smp->owner = NULL;
		goto out;
	}
	if (in_call)
		acted |= UMCG_SAMPLE_IN_CALL;
	if (g->time_slice_ns &&
	    now - atomic_load(&c->run_since_ns) >= g->time_slice_ns &&
	    umcg_state_of(umcg_thread_load_state(t)) == UMCG_TASK_RUNNING &&
	    !atomic_load(&t->preempt_pending)) {
		pthread_kill(t->pthread, UMCG_PREEMPT_SIGNAL);
		/* One signal per slice: restart the slice clock. */
		atomic_store(&c->run_since_ns, now);
		acted |= UMCG_SAMPLE_ACTED;
	}
out:
	pthread_mutex_unlock(&c->lock);
	return acted;
}

static void *user_monitor_main(void *arg)
{
	struct umcg_group *g = arg;
	struct umcg_user *u = g->backend_priv;
	uint64_t min_ns = g->blocked_ns / 2, delay = min_ns, call_ns, sleep_ns;
	unsigned int quiet = 0;

	if (g->time_slice_ns && g->time_slice_ns / 2 < min_ns)
		min_ns = g->time_slice_ns / 2;
	if (min_ns < 10000)
		min_ns = 10000;
	delay = min_ns;
	call_ns = min_ns < UMCG_MONITOR_CALL_NS ? min_ns : UMCG_MONITOR_CALL_NS;
	sleep_ns = delay;
	/*
	 * The default 50 us timer slack would stretch every sample period
	 * (25 us by default) and so every hand-off; this thread only sleeps.
	 */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);

	while (!atomic_load(&u->stop)) {
		uint32_t seq = atomic_load(&g->monitor_seq);
		bool poke = sleep_ns > UMCG_MONITOR_POKE_NS;
		unsigned int seen = 0;
		uint64_t now, next;

		/*
		 * Before the samples: a worker that announces a call after
		 * them sees the flag and wakes us (blocking.c), or the
		 * samples see its call.
		 */
		atomic_store(&g->monitor_idle, poke);
		now = umcg_now_ns();
		for (unsigned int i = 0; i < g->nr_cores; i++)
			seen |= user_sample_core(g, &g->cores[i], &u->samples[i], now);
		if (atomic_exchange(&g->dump_requested, 0)) {
			umcg_dump(stderr);
			seen |= UMCG_SAMPLE_ACTED;
		}
		if (seen & UMCG_SAMPLE_ACTED) {
			quiet = 0;
			delay = min_ns;
		} else if (++quiet >= 50 && delay < UMCG_MONITOR_MAX_NS) {
			quiet = 0;
			delay *= 2;
		}
		next = seen & UMCG_SAMPLE_IN_CALL && call_ns < delay ? call_ns : delay;
		/* A long sleep, but the flag was down during the samples: again. */
		if (next > UMCG_MONITOR_POKE_NS && !poke) {
			sleep_ns = next;
			continue;
		}
		sleep_ns = next;
		umcg_futex_wait_counted(&g->monitor_seq, &g->monitor_sleepers, seq,
					umcg_now_ns() + sleep_ns);
	}
	return NULL;
}

static int user_init(struct umcg_group *g)
{
	struct umcg_user *u = calloc(1, sizeof(*u));
	struct sigaction sa = { .sa_handler = user_preempt_handler };
	int ret;

	if (!u)
		return -ENOMEM;
	u->samples = calloc(g->nr_cores, sizeof(*u->samples));
	if (!u->samples) {
		free(u);
		return -ENOMEM;
	}
	/* The preemption signal is taken only for a time slice. */
	if (g->time_slice_ns) {
		sigemptyset(&sa.sa_mask);
		sa.sa_flags = SA_RESTART;
		sigaction(UMCG_PREEMPT_SIGNAL, &sa, &u->old_action);
	}
	g->backend_priv = u;
	ret = umcg_own_thread_create(&u->monitor, user_monitor_main, g);
	if (ret) {
		if (g->time_slice_ns)
			sigaction(UMCG_PREEMPT_SIGNAL, &u->old_action, NULL);
		free(u->samples);
		free(u);
		g->backend_priv = NULL;
		return ret;
	}
	pthread_setname_np(u->monitor, "umcg-monitor");
	umcg_stats_own_thread(g);
	return 0;
}

static void user_fini(struct umcg_group *g)
{
	struct umcg_user *u = g->backend_priv;

	atomic_store(&u->stop, true);
	atomic_fetch_add(&g->monitor_seq, 1);
	umcg_futex_wake_counted(&g->monitor_seq, &g->monitor_sleepers, 1);
	pthread_join(u->monitor, NULL);
	if (g->time_slice_ns)
		sigaction(UMCG_PREEMPT_SIGNAL, &u->old_action, NULL);
	free(u->samples);
	free(u);
	g->backend_priv = NULL;
}

/* The state word is the thread's own t->task, set up at allocation. */
static int user_worker_register(struct umcg_group *g, struct umcg_thread *t)
{
	return 0;
}

static void user_worker_unregister(struct umcg_group *g, struct umcg_thread *t)
{
}

static int user_wait(struct umcg_thread *self, uint32_t seen, uint64_t abs_ns)
{
	return umcg_state_wait(self, seen, abs_ns);
}

static void user_wake(struct umcg_thread *t)
{
	umcg_state_wake(t);
}

static int user_switch_to(struct umcg_thread *self, uint32_t seen, struct umcg_thread *next)
{
	user_wake(next);
	umcg_ref_put(next);
	return user_wait(self, seen, 0);
}

static int user_server_wait(struct umcg_core *c, uint32_t seen)
{
	return umcg_futex_wait_counted(&c->wake_seq, &c->server_sleepers, seen, 0);
}

static void user_server_wake(struct umcg_core *c)
{
	umcg_futex_wake_counted(&c->wake_seq, &c->server_sleepers, 1);
}

const struct umcg_backend_ops umcg_backend_user = {
	.name			= "user",
	.probe			= user_probe,
	.init			= user_init,
	.fini			= user_fini,
	.worker_register	= user_worker_register,
	.worker_unregister	= user_worker_unregister,
	.wait			= user_wait,
	.wake			= user_wake,
	.switch_to		= user_switch_to,
	.server_wait		= user_server_wait,
	.server_wake		= user_server_wake,
};
