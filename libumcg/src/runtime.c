// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * runtime.c - the group's life: init and fini, workers' birth and death,
 * and the public calls, which check their arguments and the caller and
 * hand over to sched.c.
 *
 * Lock order: umcg_init_lock, then group->threads_lock, then core->lock.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend.h"
#include "internal.h"
#include "probes.h"

struct umcg_group *_Atomic umcg_group;
__thread struct umcg_thread *umcg_current;

/* Serialises umcg_init() and umcg_fini(). */
static pthread_mutex_t umcg_init_lock = PTHREAD_MUTEX_INITIALIZER;

#define UMCG_CONFIG_KNOWN	UMCG_CONFIG_ATTACH_CALLER
#define UMCG_ATTR_KNOWN		UMCG_ATTR_DETACHED
#define UMCG_BLOCKED_NS_DFL	50000ULL

static inline struct umcg_group *grp(void)
{
	return atomic_load(&umcg_group);
}

/* Bytes past @known of a caller's @size-byte struct must be zero. */
static int umcg_check_tail(const void *p, size_t size, size_t known)
{
	const unsigned char *c = p;

	for (size_t i = known; i < size; i++)
		if (c[i])
			return -E2BIG;
	return 0;
}

/* The first @n CPUs of our affinity mask at or above @first. */
static int umcg_pick_cpus(unsigned int n, unsigned int first, int **cpus, unsigned int *nr)
{
	cpu_set_t set;
	unsigned int count = 0, avail = 0;
	int *out;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -errno;
	for (unsigned int c = first; c < CPU_SETSIZE; c++)
		avail += CPU_ISSET(c, &set) ? 1 : 0;
	if (!n)
		n = avail;
	if (!n || n > avail)
		return -EINVAL;
	out = calloc(n, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (unsigned int c = first; c < CPU_SETSIZE && count < n; c++)
		if (CPU_ISSET(c, &set))
			out[count++] = c;
	*cpus = out;
	*nr = n;
	return 0;
}

/*
 * libumcg's own threads (the servers, the user backend's monitor) run
 * with every signal blocked, whatever the caller's mask: a signal sent to
 * the process is the program's, and a program that blocks it in its own
 * threads to collect it with sigwait() or a signalfd must not see it
 * delivered to one of ours, where its default action (SIGTERM's: kill
 * the process) would run.  None of them takes a signal synchronously:
 * the user backend's preemption signal goes to workers (pthread_kill()),
 * the dump signal's handler only raises a flag, which they poll.  glibc
 * leaves its own two signals (cancellation, setxid) unblocked.
 */
int umcg_own_thread_create(pthread_t *thr, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(thr, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

static int umcg_check_policy(const struct umcg_policy_ops *p)
{
	return p->name && p->enqueue && p->pick && p->remove ? 0 : -EINVAL;
}

/*
 * The calling thread becomes worker @t of @g and waits for a core; or, if
 * the group is being torn down, -ESRCH and it runs as a plain thread.
 */
static int umcg_thread_start(struct umcg_group *g, struct umcg_thread *t, int waker_core)
{
	uint32_t s;
	int ret;

	/* Read by umcg_thread_tid() from any thread, 0 until here. */
	__atomic_store_n(&t->tid, gettid(), __ATOMIC_RELEASE);
	/*
	 * In libumcg from before it registers, for a backend whose kernel
	 * watches in_lib from the registration on (scx: a sleep in here is
	 * not held).  One whose kernel moves the word learns it from
	 * UMCG_TF_INLIB, set by the first umcg_in_lib_inc() below.
	 */
	if (!g->backend->kernel_moves)
		umcg_in_lib_inc(t);
	pthread_mutex_lock(&g->threads_lock);
	ret = atomic_load(&g->stopping) ? -ESRCH : g->backend->worker_register(g, t);
	if (ret && ret != -ESRCH)
		atomic_fetch_add_explicit(&g->stats->refused, 1, memory_order_relaxed);
	if (ret) {
		if (!g->backend->kernel_moves)
			umcg_in_lib_dec(t);
		pthread_mutex_unlock(&g->threads_lock);
		/* The reservation umcg_spawn() or umcg_attach() took. */
		if (g->backend->worker_unreserve)
			g->backend->worker_unreserve(g);
		atomic_fetch_or(&t->flags, UMCG_THREAD_RELEASED);
		atomic_fetch_sub_explicit(&g->stats->live, 1, memory_order_release);
		return ret;
	}
	cds_list_add_tail(&t->all_node, &g->threads);
	pthread_mutex_unlock(&g->threads_lock);
	umcg_probe(register, t->tid);

	umcg_current = t;
	if (g->backend->kernel_moves)
		umcg_in_lib_inc(t);
	s = umcg_thread_load_state(t);
	while (!umcg_state_cas(t, &s, (s & ~UMCG_TASK_STATE_MASK) | UMCG_TASK_RUNNABLE))
		;
	umcg_make_runnable(t, waker_core, UMCG_ENQ_NEW);
	umcg_wait_for_core(t, 0);
	umcg_lib_leave(t);
	return 0;
}

/* Wait until nobody holds a reference to @t (wakers, the monitor). */
static void umcg_thread_quiesce(struct umcg_thread *t)
{
	while (atomic_load_explicit(&t->refs, memory_order_acquire))
		sched_yield();
}

/*
 * Drops one owner of @t's memory (t->handles); the last frees it, once
 * the transient references (t->refs) are gone.
 */
static void umcg_handle_drop(struct umcg_thread *t)
{
	if (atomic_fetch_sub_explicit(&t->handles, 1, memory_order_acq_rel) != 1)
		return;
	umcg_thread_quiesce(t);
	free(t);
}

/*
 * The calling worker @t is done: leave the group, wake its joiner.  The
 * group is not touched after stats.live drops: umcg_fini() may free it.
 */
static void umcg_thread_finish(struct umcg_thread *t)
{
	struct umcg_group *g = t->group;
	struct umcg_thread *joiner;
	bool released = atomic_load(&t->flags) & UMCG_THREAD_RELEASED;

	umcg_in_lib_get(t);
	umcg_sched_exit(t);
#ifdef UMCG_DEBUG_OWNER
	for (unsigned int i = 0; i < g->nr_cores; i++)
		if (__atomic_load_n(&g->cores[i].current, __ATOMIC_SEQ_CST) == t) {
			fprintf(stderr, "DEBUG: exiting %d still owns core %u (t->core %d, state %x)\n",
				t->tid, i, atomic_load(&t->core), umcg_thread_load_state(t));
			abort();
		}
#endif
	if (!released) {
		pthread_mutex_lock(&g->threads_lock);
		/* Off the list already if umcg_fini() released us meanwhile. */
		cds_list_del_init(&t->all_node);
		pthread_mutex_unlock(&g->threads_lock);
	}
	/*
	 * Also when released by umcg_fini(), if the backend mapped its word
	 * (the kernel side still knows the thread): such a thread kept
	 * stats.live up, so @g is still there.  One whose start failed
	 * registered nothing and must not touch @g.
	 */
	if (!released || t->ut != &t->task)
		g->backend->worker_unregister(g, t);
	umcg_current = NULL;
	/*
	 * A worker joiner published itself with a reference on itself (see
	 * umcg_join()); whoever takes it out of t->joiner drops that.
	 */
	joiner = atomic_exchange(&t->joiner, UMCG_JOINER_DONE);
	if (joiner) {
		if (!released)
			umcg_sched_unpark(joiner, -1);
		umcg_ref_put(joiner);
	}
	if (!released) {
		atomic_fetch_add_explicit(&g->stats->exited, 1, memory_order_relaxed);
		atomic_fetch_sub_explicit(&g->stats->live, 1, memory_order_release);
	}
	umcg_thread_exited_wake(t);
	/* A detached thread owns itself; a handle may keep it (DONE). */
	if (atomic_load(&t->flags) & UMCG_THREAD_DETACHED)
		umcg_handle_drop(t);
}

/* pthread_exit() or cancellation inside a worker: leave as if it returned. */
static void umcg_worker_cleanup(void *arg)
{
	umcg_thread_finish(arg);
}

static void *umcg_worker_main(void *arg)
{
	struct umcg_thread *t = arg;
	void *ret;

	if (t->name[0])
		pthread_setname_np(pthread_self(), t->name);
	/* Without the group (being torn down) the thread runs as a plain one. */
	umcg_thread_start(t->group, t, t->spawn_core);
	pthread_cleanup_push(umcg_worker_cleanup, t);
	ret = t->fn(t->arg);
	pthread_cleanup_pop(1);	/* a detached @t is freed here */
	return ret;
}

static struct umcg_thread *umcg_thread_alloc(void)
{
	struct umcg_thread *t = aligned_alloc(UMCG_CACHELINE,
					      (sizeof(*t) + UMCG_CACHELINE - 1) &
					      ~(size_t)(UMCG_CACHELINE - 1));

	if (!t)
		return NULL;
	memset(t, 0, sizeof(*t));
	atomic_store(&t->handles, 1);
	t->ut = &t->task;
	t->pref_core = -1;
	t->spawn_core = -1;
	t->core = -1;
	t->core_reported = -1;
	t->pinned_cpu = -1;
	t->policy_queue = -1;
	CDS_INIT_LIST_HEAD(&t->policy_node);
	CDS_INIT_LIST_HEAD(&t->all_node);
	atomic_store(&t->state_since_ns, umcg_now_ns());
	return t;
}

int umcg_init(const struct umcg_config *cfg)
{
	struct umcg_config c = { .size = sizeof(c) };
	const struct umcg_backend_ops *backend;
	struct umcg_group *g;
	unsigned int nr = 0;
	int *cpus = NULL;
	int ret;

	if (cfg) {
		if (cfg->size < sizeof(c))
			return -EINVAL;
		ret = umcg_check_tail(cfg, cfg->size, sizeof(c));
		if (ret)
			return ret;
		c = *cfg;
		if (c.flags & ~UMCG_CONFIG_KNOWN)
			return -EINVAL;
		if (c.policy && umcg_check_policy(c.policy))
			return -EINVAL;
		if (c.nr_cores > CPU_SETSIZE || c.first_cpu >= CPU_SETSIZE)
			return -EINVAL;
	}

	pthread_mutex_lock(&umcg_init_lock);
	if (grp()) {
		ret = -EBUSY;
		goto out_unlock;
	}
	ret = umcg_backend_select(c.backend, &backend);
	if (ret)
		goto out_unlock;
	ret = umcg_pick_cpus(c.nr_cores, c.first_cpu, &cpus, &nr);
	if (ret)
		goto out_unlock;

	ret = -ENOMEM;
	g = calloc(1, sizeof(*g));
	if (!g)
		goto out_cpus;
	g->cores = aligned_alloc(UMCG_CACHELINE, nr * sizeof(*g->cores));
	if (!g->cores)
		goto out_group;
	memset(g->cores, 0, nr * sizeof(*g->cores));
	g->nr_cores = nr;
	g->backend = backend;
	g->policy = c.policy ? c.policy : &umcg_policy_steal;
	g->time_slice_ns = c.time_slice_ns;
	g->blocked_ns = c.blocked_ns ? c.blocked_ns : UMCG_BLOCKED_NS_DFL;
	pthread_mutex_init(&g->threads_lock, NULL);
	CDS_INIT_LIST_HEAD(&g->threads);
	atomic_init(&g->futex_grow_at, UMCG_FUTEX_HASH_FIRST);
	for (unsigned int i = 0; i < nr; i++) {
		pthread_mutex_init(&g->cores[i].lock, NULL);
		g->cores[i].idx = i;
		g->cores[i].cpu = cpus[i];
		g->cores[i].group = g;
	}

	ret = umcg_stats_area_create(g, backend->name, g->policy->name);
	if (ret)
		goto out_cores;
	ret = g->policy->init ? g->policy->init(&g->policy_priv, nr) : 0;
	if (ret)
		goto out_stats;
	ret = backend->init(g);
	if (ret)
		goto out_policy;
	atomic_store(&umcg_group, g);

	for (unsigned int i = 0; i < nr; i++) {
		char name[16];

		ret = umcg_own_thread_create(&g->cores[i].server, umcg_server_main, &g->cores[i]);
		if (ret) {
			atomic_store(&g->stopping, true);
			for (unsigned int j = 0; j < i; j++) {
				umcg_server_kick(&g->cores[j]);
				pthread_join(g->cores[j].server, NULL);
			}
			atomic_store(&umcg_group, NULL);
			backend->fini(g);
			goto out_policy;
		}
		snprintf(name, sizeof(name), "umcg-server-%u", i % 1000);
		pthread_setname_np(g->cores[i].server, name);
		umcg_stats_own_thread(g);
	}
	/* Without its stats thread the group runs on, unpublished. */
	if (umcg_stats_area_start(g))
		umcg_stats_area_unpublish(g);
	else
		umcg_stats_own_thread(g);
	free(cpus);
	pthread_mutex_unlock(&umcg_init_lock);

	if (c.flags & UMCG_CONFIG_ATTACH_CALLER) {
		ret = umcg_attach(NULL);
		if (ret)
			umcg_fini();
		return ret;
	}
	return 0;

out_policy:
	if (g->policy->fini)
		g->policy->fini(g->policy_priv);
out_stats:
	umcg_stats_area_destroy(g);
out_cores:
	free(g->cores);
out_group:
	free(g);
out_cpus:
	free(cpus);
out_unlock:
	pthread_mutex_unlock(&umcg_init_lock);
	return ret;
}

int umcg_fini(void)
{
	struct umcg_thread *self = umcg_current, *t;
	struct cds_list_head *pos, *next;
	struct umcg_group *g;
	uint64_t live;

	if (self && !(atomic_load(&self->flags) & UMCG_THREAD_RELEASED)) {
		if (!(atomic_load(&self->flags) & UMCG_THREAD_ATTACHED))
			return -EDEADLK;
		umcg_detach();
	}
	pthread_mutex_lock(&umcg_init_lock);
	g = grp();
	if (!g) {
		pthread_mutex_unlock(&umcg_init_lock);
		return -ESRCH;
	}
	/* Readers see the group go first; the stats thread stops. */
	umcg_stats_area_unpublish(g);
	atomic_store(&g->stopping, true);
	for (unsigned int i = 0; i < g->nr_cores; i++) {
		umcg_server_kick(&g->cores[i]);
		pthread_join(g->cores[i].server, NULL);
	}
	umcg_stage_drop_all(g);
	g->backend->fini(g);

	/*
	 * Release the workers still alive: plain threads from now on.  Once
	 * RELEASED, a thread may finish, and a detached one free itself, at
	 * any moment: it no longer takes threads_lock to leave the list, so
	 * each is taken off the list here, and pinned (t->refs, which its
	 * free waits for) while we touch it.  One that read its flag clear
	 * before and now waits for the lock to leave the list finds its node
	 * on no list (cds_list_del_init()).
	 */
	pthread_mutex_lock(&g->threads_lock);
	cds_list_for_each_safe(pos, next, &g->threads) {
		uint32_t s;

		t = cds_list_entry(pos, struct umcg_thread, all_node);
		umcg_ref_get(t);
		cds_list_del_init(pos);
		s = umcg_thread_load_state(t);

		atomic_fetch_or(&t->flags, UMCG_THREAD_RELEASED);
		if (umcg_state_of(s) == UMCG_TASK_RUNNABLE)
			g->policy->remove(g->policy_priv, t);
		if (g->backend->worker_release)
			g->backend->worker_release(g, t);
		/* Uncounted: a released thread may be on its way out already. */
		umcg_futex_wake((_Atomic uint32_t *)&t->ut->state, INT_MAX);
		umcg_ref_put(t);
	}
	live = atomic_load(&g->stats->live);
	pthread_mutex_unlock(&g->threads_lock);
	atomic_store(&umcg_group, NULL);

	/*
	 * Released workers may still be on their way out of a libumcg call
	 * that read the group: with any alive, the group's memory (a few
	 * hundred bytes per core) stays until the process exits.
	 */
	if (!live) {
		if (g->policy->fini)
			g->policy->fini(g->policy_priv);
		umcg_stats_area_destroy(g);
		free(g->cores);
		free(g);
	}
	pthread_mutex_unlock(&umcg_init_lock);
	return 0;
}

const char *umcg_backend_name(void)
{
	struct umcg_group *g = grp();

	if (!g)
		return NULL;
	return g->backend->report_name ? g->backend->report_name(g) : g->backend->name;
}

int umcg_nr_cores(void)
{
	struct umcg_group *g = grp();

	return g ? (int)g->nr_cores : -ESRCH;
}

int umcg_spawn(umcg_thread_t **tp, const struct umcg_attr *attr,
	       void *(*fn)(void *), void *arg)
{
	struct umcg_attr a = { .size = sizeof(a), .core = -1 };
	struct umcg_group *g = grp();
	struct umcg_thread *t, *self = umcg_current;
	pthread_attr_t pa;
	uint64_t live;
	int ret;

	if (!fn)
		return -EINVAL;
	if (attr) {
		if (attr->size < sizeof(a))
			return -EINVAL;
		ret = umcg_check_tail(attr, attr->size, sizeof(a));
		if (ret)
			return ret;
		a = *attr;
		if ((a.flags & ~UMCG_ATTR_KNOWN) || a.pad)
			return -EINVAL;
		if (a.name && strlen(a.name) > 15)
			return -EINVAL;
	}
	if (!tp && !(a.flags & UMCG_ATTR_DETACHED))
		return -EINVAL;
	if (!g || atomic_load(&g->stopping) ||
	    (self && (atomic_load(&self->flags) & UMCG_THREAD_RELEASED)))
		return -ESRCH;
	if (a.core < -1 || a.core >= (int32_t)g->nr_cores)
		return -EINVAL;

	if (g->backend->worker_reserve) {
		ret = g->backend->worker_reserve(g);
		if (ret) {
			atomic_fetch_add_explicit(&g->stats->refused, 1, memory_order_relaxed);
			return ret;
		}
	}
	t = umcg_thread_alloc();
	if (!t) {
		if (g->backend->worker_unreserve)
			g->backend->worker_unreserve(g);
		return -ENOMEM;
	}
	t->fn = fn;
	t->arg = arg;
	t->group = g;
	t->pref_core = a.core;
	t->spawn_core = self ? atomic_load(&self->core) : -1;
	if (a.flags & UMCG_ATTR_DETACHED) {
		atomic_fetch_or(&t->flags, UMCG_THREAD_DETACHED);
		/* The caller's handle: umcg_thread_put() drops it. */
		if (tp)
			atomic_fetch_add(&t->handles, 1);
	}
	if (a.name)
		strncpy(t->name, a.name, sizeof(t->name) - 1);

	pthread_attr_init(&pa);
	if (a.stack_size && pthread_attr_setstacksize(&pa, a.stack_size)) {
		pthread_attr_destroy(&pa);
		free(t);
		if (g->backend->worker_unreserve)
			g->backend->worker_unreserve(g);
		return -EINVAL;
	}
	if (a.flags & UMCG_ATTR_DETACHED)
		pthread_attr_setdetachstate(&pa, PTHREAD_CREATE_DETACHED);
	if (tp)
		*tp = t;
	atomic_fetch_add_explicit(&g->stats->spawned, 1, memory_order_relaxed);
	live = atomic_fetch_add_explicit(&g->stats->live, 1, memory_order_relaxed) + 1;
	self = umcg_lib_hold();
	umcg_futex_hash_fit(g, live);
	ret = -pthread_create(&t->pthread, &pa, umcg_worker_main, t);
	/*
	 * pthread_create() may sleep (TSan's waits for the new thread to
	 * start) long enough for the monitor to give our core away: queue
	 * for one again before the caller's code runs on (C1).
	 */
	if (self)
		umcg_reacquire(self);
	umcg_lib_unhold(self);
	pthread_attr_destroy(&pa);
	if (ret) {
		atomic_fetch_sub_explicit(&g->stats->spawned, 1, memory_order_relaxed);
		atomic_fetch_sub_explicit(&g->stats->live, 1, memory_order_relaxed);
		if (tp)
			*tp = NULL;
		free(t);
		if (g->backend->worker_unreserve)
			g->backend->worker_unreserve(g);
	}
	return ret;
}

int umcg_join(umcg_thread_t *t, void **retp)
{
	struct umcg_thread *self = umcg_current;
	void *value;
	int ret = 0;

	if (!t || (atomic_load(&t->flags) & (UMCG_THREAD_DETACHED | UMCG_THREAD_ATTACHED)))
		return -EINVAL;
	if (t == self)
		return -EDEADLK;
	/* Only once, even while a umcg_thread_get() keeps it. */
	if (atomic_fetch_or(&t->flags, UMCG_THREAD_JOINED) & UMCG_THREAD_JOINED)
		return -EINVAL;
	if (self && !(atomic_load(&self->flags) & UMCG_THREAD_RELEASED)) {
		struct umcg_thread *none = NULL;

		umcg_lib_enter(self);
		/* Dropped by @t's exit, which unparks us (or by us if it beat us). */
		umcg_ref_get(self);
		if (atomic_compare_exchange_strong(&t->joiner, &none, self)) {
			while (umcg_state_of(umcg_thread_load_state(t)) != UMCG_TASK_DONE)
				if (umcg_sched_park(self, 0) == -ESRCH)
					break;	/* released: wait as a plain thread */
		} else {
			umcg_ref_put(self);
			if (none != UMCG_JOINER_DONE)
				ret = -EINVAL;	/* cannot happen: JOINED is ours */
		}
		umcg_lib_leave(self);
		if (ret)
			return ret;
	}
	/* Woken once, at the exit, not by each change of the state word. */
	while (umcg_state_of(umcg_thread_load_state(t)) != UMCG_TASK_DONE)
		umcg_futex_wait_counted(&t->exited, &t->exit_sleepers, 0, 0);
	/* Its pthread's exit value: the return value, or pthread_exit()'s. */
	pthread_join(t->pthread, &value);
	if (retp)
		*retp = value;
	umcg_handle_drop(t);
	return 0;
}

int umcg_thread_get(umcg_thread_t *t)
{
	if (!t)
		return -EINVAL;
	atomic_fetch_add_explicit(&t->handles, 1, memory_order_relaxed);
	return 0;
}

int umcg_thread_put(umcg_thread_t *t)
{
	if (!t)
		return -EINVAL;
	umcg_handle_drop(t);
	return 0;
}

umcg_thread_t *umcg_self(void)
{
	struct umcg_thread *self = umcg_current;

	return self && !(atomic_load(&self->flags) & UMCG_THREAD_RELEASED) ? self : NULL;
}

/*
 * An attached thread that exits without umcg_detach() leaves the group at
 * its exit, through this key's destructor.
 */
static pthread_key_t umcg_attached_key;
static pthread_once_t umcg_attached_once = PTHREAD_ONCE_INIT;

static void umcg_attached_exit(void *arg)
{
	struct umcg_thread *t = arg;

	atomic_fetch_or(&t->flags, UMCG_THREAD_DETACHED);
	umcg_thread_finish(t);	/* frees it: DETACHED */
}

static void umcg_attached_key_make(void)
{
	pthread_key_create(&umcg_attached_key, umcg_attached_exit);
}

int umcg_attach(umcg_thread_t **tp)
{
	struct umcg_group *g = grp();
	struct umcg_thread *t;
	uint64_t live;
	int ret;

	if (!g)
		return -ESRCH;
	if (umcg_current)
		return -EBUSY;
	if (g->backend->worker_reserve) {
		ret = g->backend->worker_reserve(g);
		if (ret) {
			atomic_fetch_add_explicit(&g->stats->refused, 1, memory_order_relaxed);
			return ret;
		}
	}
	t = umcg_thread_alloc();
	if (!t) {
		if (g->backend->worker_unreserve)
			g->backend->worker_unreserve(g);
		return -ENOMEM;
	}
	t->pthread = pthread_self();
	t->group = g;
	atomic_fetch_or(&t->flags, UMCG_THREAD_ATTACHED);
	pthread_getname_np(t->pthread, t->name, sizeof(t->name));
	atomic_fetch_add_explicit(&g->stats->spawned, 1, memory_order_relaxed);
	live = atomic_fetch_add_explicit(&g->stats->live, 1, memory_order_relaxed) + 1;
	umcg_futex_hash_fit(g, live);
	ret = umcg_thread_start(g, t, -1);
	if (ret) {
		atomic_fetch_sub_explicit(&g->stats->spawned, 1, memory_order_relaxed);
		free(t);
		return ret;
	}
	pthread_once(&umcg_attached_once, umcg_attached_key_make);
	pthread_setspecific(umcg_attached_key, t);
	if (tp)
		*tp = t;
	return 0;
}

int umcg_detach(void)
{
	struct umcg_thread *self = umcg_current;

	if (!self)
		return -EPERM;
	if (!(atomic_load(&self->flags) & UMCG_THREAD_ATTACHED))
		return -EINVAL;
	pthread_setspecific(umcg_attached_key, NULL);
	if (!(atomic_load(&self->flags) & UMCG_THREAD_RELEASED))
		umcg_lib_enter(self);
	atomic_fetch_or(&self->flags, UMCG_THREAD_DETACHED);
	umcg_thread_finish(self);	/* frees it: DETACHED */
	return 0;
}

/*
 * The calling worker, entered into libumcg, or NULL with *@ret set:
 * -EPERM for a plain thread, -ESRCH for one the group released.
 */
static struct umcg_thread *umcg_worker_enter(int *ret)
{
	struct umcg_thread *self = umcg_current;

	if (!self) {
		*ret = -EPERM;
		return NULL;
	}
	if (atomic_load(&self->flags) & UMCG_THREAD_RELEASED) {
		*ret = -ESRCH;
		return NULL;
	}
	umcg_lib_enter(self);
	return self;
}

int umcg_yield(void)
{
	int ret;
	struct umcg_thread *self = umcg_worker_enter(&ret);

	if (!self)
		return ret;
	ret = umcg_sched_yield(self, UMCG_ENQ_YIELD);
	umcg_lib_leave(self);
	return ret;
}

int umcg_park(void)
{
	int ret;
	struct umcg_thread *self = umcg_worker_enter(&ret);

	if (!self)
		return ret;
	ret = umcg_sched_park(self, 0);
	umcg_lib_leave(self);
	/* Released by umcg_fini() while parked: a (spurious) return. */
	return ret == -ESRCH ? 0 : ret;
}

int umcg_park_timeout(uint64_t ns)
{
	int ret;
	struct umcg_thread *self;

	if (ns > UINT64_MAX / 2)
		return -EINVAL;
	self = umcg_worker_enter(&ret);
	if (!self)
		return ret;
	ret = umcg_sched_park(self, umcg_now_ns() + (ns ? ns : 1));
	umcg_lib_leave(self);
	return ret == -ESRCH ? 0 : ret;
}

int umcg_unpark(umcg_thread_t *t)
{
	struct umcg_thread *self;
	int ret;

	if (!t)
		return -EINVAL;
	if (atomic_load(&t->flags) & UMCG_THREAD_RELEASED)
		return -ESRCH;
	self = umcg_lib_hold();
	ret = umcg_sched_unpark(t, self && self != t ? atomic_load(&self->core) : -1);
	umcg_lib_unhold(self);
	return ret;
}

int umcg_switch_to(umcg_thread_t *t)
{
	int ret;
	struct umcg_thread *self;

	if (!t)
		return -EINVAL;
	self = umcg_worker_enter(&ret);
	if (!self)
		return ret;
	if (t == self)
		ret = -EINVAL;
	else if ((atomic_load(&t->flags) & UMCG_THREAD_RELEASED) ||
		 umcg_state_of(umcg_thread_load_state(t)) == UMCG_TASK_DONE)
		ret = -ESRCH;
	else
		ret = umcg_sched_switch(self, t);
	umcg_lib_leave(self);
	return ret;
}

int umcg_sleep_ns(uint64_t ns)
{
	int ret;
	struct umcg_thread *self;
	uint64_t deadline;
	bool unparked = false;

	if (ns > UINT64_MAX / 2)
		return -EINVAL;
	self = umcg_worker_enter(&ret);
	if (!self)
		return ret;
	deadline = umcg_now_ns() + ns;
	ret = 0;
	while (umcg_now_ns() < deadline) {
		ret = umcg_sched_park(self, deadline);
		if (ret)
			break;
		unparked = true;
	}
	if (ret == -ESRCH) {
		umcg_lib_leave(self);
		return ret;	/* released by umcg_fini() meanwhile */
	}
	/* An unpark that came during the sleep stays a permit. */
	if (unparked)
		umcg_sched_unpark(self, -1);
	umcg_lib_leave(self);
	return 0;
}

int umcg_thread_state(const umcg_thread_t *t)
{
	return t ? (int)umcg_state_of(umcg_thread_load_state(t)) : -EINVAL;
}

int umcg_thread_tid(const umcg_thread_t *t)
{
	return t ? __atomic_load_n(&t->tid, __ATOMIC_ACQUIRE) : -EINVAL;
}

int umcg_thread_core(const umcg_thread_t *t)
{
	return t ? umcg_thread_core_of(t) : -EINVAL;
}

void **umcg_thread_policy_data(umcg_thread_t *t)
{
	return t ? &t->policy_data : NULL;
}
