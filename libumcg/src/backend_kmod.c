// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * backend_kmod.c - the "kmod" backend: umcg.ko's /dev/umcg.
 *
 * Every worker and server registers itself with the module; a worker's
 * state word then lives in the module's shared area (the mmap of
 * /dev/umcg), where the kernel moves it by itself (uapi/umcg.h, "kernel
 * moves"): RUNNING -> BLOCKED when the worker sleeps in the kernel,
 * BLOCKED -> RUNNABLE when the sleep ends (the worker then waits in the
 * kernel until the library makes it RUNNING again: C1, C3), RUNNING ->
 * RUNNABLE on UMCG_IOC_PREEMPT, -> DONE at exit.  Each move sets the
 * worker's bit in the event bitmap (and its word's bit in the summary) and
 * pokes its server; servers turn the bits into UMCG_EV_MOVED events, which
 * sched.c applies.  Finding them reads the summary, one word per 4096
 * slots, and only the event words it names.
 *
 *   sleeping   UMCG_IOC_WAIT: until the caller's word reads RUNNING
 *   waking     store RUNNING (sched.c), then UMCG_IOC_WAKE
 *   switch_to  UMCG_IOC_SWITCH: wake the target on the caller's CPU, wait
 *   server     its own word is its doorbell: it stores RUNNABLE, looks for
 *              work (wake_seq, event bits) and sleeps in UMCG_IOC_WAIT
 *              only if there is none; whoever wants it to look stores
 *              RUNNING (the kernel does the same) and wakes it with
 *              UMCG_IOC_WAKE only if the word did not read RUNNING
 *   hand-off   a busy core's next worker is staged in its server's
 *              next_slot (sched.c, "Staged next worker"); when the core's
 *              worker blocks, the kernel runs it there at once and pokes
 *              nobody
 *   slice      the server of a core whose owner ran past the group's time
 *              slice sets UMCG_TF_PREEMPT on the owner's word and calls
 *              UMCG_IOC_PREEMPT (C6); it sleeps with a timeout for that
 *
 * The device is opened and mapped once per process and kept: the module
 * binds one file per process, and workers released by umcg_fini() keep
 * their words in the mapping until they exit.  A forked child forgets it
 * (the mapping is not inherited; the file's group is the parent's).
 *
 * Capacity: the module registers at most max_tasks threads per process
 * (its parameter, 131072 by default); the servers take nr_cores of them,
 * and umcg_spawn()/umcg_attach() reserve one per worker (-EAGAIN when none
 * is left).  The mapping is reserved for max_tasks but the module fills it
 * as it registers threads: only words of registered slots, the event
 * words of allocated slots and the summary may be touched (SIGBUS
 * elsewhere).
 *
 * The slot table (kmod.slots, slot index -> worker, holding a reference)
 * is read under RCU (liburcu's bulletproof flavor, urcu-bp: libumcg
 * cannot register every thread that may read; servers read it, once per
 * event bit, and take a reference on the worker inside the read-side
 * section).  Writers (register, forget, fini) change it under kmod.lock,
 * with release stores, and drop the table's reference on a worker they
 * took out only after synchronize_rcu(): by then every reader that saw
 * the worker holds its own reference, so umcg_join() cannot free it
 * under a reader (runtime.c waits for t->refs).  Forks go through
 * urcu-bp's fork hooks, so that a child's grace periods do not wait for
 * the parent's readers.
 *
 * Lock order: kmod.lock is a leaf (the slot table's writers); the
 * runtime's locks may be held around any callback here.  No lock is taken
 * inside an RCU read-side section, and synchronize_rcu() is never called
 * inside one or under kmod.lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <urcu-bp.h>

#include "backend.h"
#include "kmod_probe.h"

/* The features this backend needs from the module. */
#define KMOD_FEATURES_NEEDED \
	(UMCG_FEATURE_REGISTER | UMCG_FEATURE_WAIT | UMCG_FEATURE_SWITCH | \
	 UMCG_FEATURE_BLOCK)

/* How often server 0 looks for a dump request (umcg_dump_on_signal()). */
#define KMOD_DUMP_POLL_NS	100000000ULL

/*
 * The process's device context; kmod.lock serialises the writers of
 * slots[] (read under RCU, see the top) and guards the set-up, the rest
 * is written once by kmod_open() under umcg_init()'s lock.
 */
static struct {
	pthread_mutex_t lock;
	int fd;				/* -1: not open */
	void *map;
	size_t map_len;
	struct umcg_task *tasks;	/* max_tasks slots */
	_Atomic uint64_t *events;	/* the event bitmap */
	_Atomic uint64_t *summary;	/* a bit per word of it */
	unsigned int max_tasks;
	unsigned int nr_words;		/* of the bitmap */
	unsigned int nr_sum_words;	/* of the summary */
	/* Above the highest slot index registered so far (kmod.lock). */
	unsigned int hi_slot;
	uint64_t features;
	/* Slot index -> the worker registered there; holds a reference. */
	struct umcg_thread *_Atomic *slots;
	/* Workers registered or reserved, across groups. */
	_Atomic unsigned int nr_workers;
	/* Servers of the current group (they count against max_tasks). */
	_Atomic unsigned int nr_servers;
	bool atfork;
} kmod = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.fd = -1,
};

/*
 * A server's doorbell: its own state word, NULL until registered.  Its
 * @next_slot is the core's stage (uapi/umcg.h, "The staged next worker");
 * @staged is the thread whose slot it names, written by the refiller
 * before it stages, read under the core's lock once the word is non-zero.
 */
struct kmod_server {
	struct umcg_task *_Atomic task;
	_Atomic pid_t tid;
	struct umcg_thread *_Atomic staged;
};

struct kmod_group {
	struct kmod_server *servers;	/* by core index */
};

static int kmod_ioctl(unsigned long cmd, void *arg)
{
	return ioctl(kmod.fd, cmd, arg) ? -errno : 0;
}

static _Atomic uint32_t *kmod_word(struct umcg_task *ut)
{
	return (_Atomic uint32_t *)&ut->state;
}

/* The slot index of @t's word, -1 if it is not in the mapping. */
static int kmod_slot_of(const struct umcg_thread *t)
{
	const struct umcg_task *ut = t->ut;

	if (!kmod.tasks || ut < kmod.tasks || ut >= kmod.tasks + kmod.max_tasks)
		return -1;
	return (int)(ut - kmod.tasks);
}

/* The stage of core @c: its server's next_slot, NULL if it has none. */
static _Atomic uint32_t *kmod_next_slot(struct umcg_core *c, struct kmod_server **srv)
{
	struct kmod_group *kg = c->group->backend_priv;
	struct umcg_task *ut;

	if (!kg || !(kmod.features & UMCG_FEATURE_HANDOFF))
		return NULL;
	*srv = &kg->servers[c->idx];
	ut = atomic_load(&(*srv)->task);
	return ut ? (_Atomic uint32_t *)&ut->next_slot : NULL;
}

static bool kmod_stage_free(struct umcg_core *c)
{
	struct kmod_server *srv;
	_Atomic uint32_t *next = kmod_next_slot(c, &srv);

	return next && !atomic_load(next);
}

static void kmod_stage(struct umcg_core *c, struct umcg_thread *t)
{
	struct kmod_server *srv;
	_Atomic uint32_t *next = kmod_next_slot(c, &srv);

	atomic_store(&srv->staged, t);
	/* Only the one refiller moves the word off 0 (stage_free() said 0). */
	atomic_store(next, UMCG_NEXT_SLOT(kmod_slot_of(t)));
}

static struct umcg_thread *kmod_stage_ran(struct umcg_core *c)
{
	struct kmod_server *srv;
	_Atomic uint32_t *next = kmod_next_slot(c, &srv);
	uint32_t n;

	if (!next)
		return NULL;
	n = atomic_load(next);
	if (!(n & UMCG_NEXT_TAKEN) || !atomic_compare_exchange_strong(next, &n, 0))
		return NULL;
	return atomic_load(&srv->staged);
}

static struct umcg_thread *kmod_unstage(struct umcg_core *c, struct umcg_thread *want)
{
	struct kmod_server *srv;
	_Atomic uint32_t *next = kmod_next_slot(c, &srv);
	struct umcg_thread *t;
	uint32_t n;

	if (!next)
		return NULL;
	n = atomic_load(next);
	if (!n || (n & UMCG_NEXT_TAKEN))
		return NULL;
	t = atomic_load(&srv->staged);
	if ((want && t != want) || !atomic_compare_exchange_strong(next, &n, 0))
		return NULL;	/* another's, or the kernel just ran it */
	return t;
}

static int kmod_probe(const char **why)
{
	static char msg[160];
	struct umcg_info info;
	int ret;

	ret = umcg_kmod_get_info(&info);
	if (ret == -ENOENT) {
		*why = "/dev/umcg does not exist (is umcg.ko loaded?)";
		return -ENODEV;
	}
	if (ret) {
		snprintf(msg, sizeof(msg), "%s: %s", UMCG_DEVICE_PATH, strerror(-ret));
		*why = msg;
		return -ENODEV;
	}
	if ((info.features & KMOD_FEATURES_NEEDED) != KMOD_FEATURES_NEEDED) {
		snprintf(msg, sizeof(msg),
			 "umcg.ko lacks features 0x%llx (it has 0x%llx; needs "
			 "REGISTER, WAIT, SWITCH and BLOCK)",
			 (unsigned long long)(KMOD_FEATURES_NEEDED & ~info.features),
			 (unsigned long long)info.features);
		*why = msg;
		return -ENODEV;
	}
	if (!info.max_tasks) {
		*why = "umcg.ko reports no per-process thread limit (max_tasks 0)";
		return -ENODEV;
	}
	if (info.api_version != UMCG_API_VERSION) {
		snprintf(msg, sizeof(msg),
			 "umcg.ko has ABI version %u, this libumcg needs %u",
			 info.api_version, UMCG_API_VERSION);
		*why = msg;
		return -ENODEV;
	}
	return 0;
}

/* In a forked child: the parent's file and mapping are not ours. */
static void kmod_atfork_child(void)
{
	urcu_bp_after_fork_child();
	if (kmod.fd >= 0)
		close(kmod.fd);
	kmod.fd = -1;
	kmod.map = NULL;
	kmod.tasks = NULL;
	kmod.events = NULL;
	kmod.summary = NULL;
	kmod.hi_slot = 0;
	free(kmod.slots);
	kmod.slots = NULL;
	atomic_store(&kmod.nr_workers, 0);
	atomic_store(&kmod.nr_servers, 0);
	pthread_mutex_init(&kmod.lock, NULL);
}

/* Open and map the device, once per process.  Under umcg_init()'s lock. */
static int kmod_open(void)
{
	struct umcg_info info = { .size = sizeof(info) };
	long page = sysconf(_SC_PAGESIZE);
	int fd, ret;
	void *map;

	if (kmod.fd >= 0)
		return 0;
	if (!kmod.atfork) {
		ret = -pthread_atfork(urcu_bp_before_fork, urcu_bp_after_fork_parent,
				      kmod_atfork_child);
		if (ret)
			return ret;
		kmod.atfork = true;
	}
	fd = open(UMCG_DEVICE_PATH, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, UMCG_IOC_GET_INFO, &info)) {
		ret = -errno;
		goto out_close;
	}
	kmod.map_len = UMCG_MMAP_SIZE(info.max_tasks, page);
	map = mmap(NULL, kmod.map_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
		   UMCG_MMAP_TASKS_OFF);
	if (map == MAP_FAILED) {
		ret = -errno;
		goto out_close;
	}
	kmod.slots = calloc(info.max_tasks, sizeof(*kmod.slots));
	if (!kmod.slots) {
		ret = -ENOMEM;
		munmap(map, kmod.map_len);
		goto out_close;
	}
	kmod.map = map;
	kmod.tasks = map;
	kmod.events = (_Atomic uint64_t *)((char *)map +
					   UMCG_MMAP_EVENTS_OFF(info.max_tasks, page));
	kmod.summary = (_Atomic uint64_t *)((char *)map +
					    UMCG_MMAP_SUMMARY_OFF(info.max_tasks, page));
	kmod.max_tasks = info.max_tasks;
	kmod.nr_words = (info.max_tasks + 63) / 64;
	kmod.nr_sum_words = (kmod.nr_words + 63) / 64;
	kmod.features = info.features;
	kmod.fd = fd;
	return 0;

out_close:
	close(fd);
	return ret;
}

static int kmod_init(struct umcg_group *g)
{
	struct kmod_group *kg;
	int ret;

	ret = kmod_open();
	if (ret) {
		fprintf(stderr, "libumcg: backend \"kmod\": cannot use %s: %s\n",
			UMCG_DEVICE_PATH, strerror(-ret));
		return ret;
	}
	if (g->time_slice_ns && !(kmod.features & UMCG_FEATURE_PREEMPT)) {
		fprintf(stderr, "libumcg: backend \"kmod\": a time slice needs "
			"UMCG_IOC_PREEMPT, which this umcg.ko lacks\n");
		return -EOPNOTSUPP;
	}
	/* Servers and at least one worker must fit. */
	if (g->nr_cores + atomic_load(&kmod.nr_workers) >= kmod.max_tasks) {
		fprintf(stderr, "libumcg: backend \"kmod\": %u cores and %u workers "
			"do not fit in umcg.ko's %u threads per process\n",
			g->nr_cores, atomic_load(&kmod.nr_workers), kmod.max_tasks);
		return -EINVAL;
	}
	kg = calloc(1, sizeof(*kg));
	if (!kg)
		return -ENOMEM;
	kg->servers = calloc(g->nr_cores, sizeof(*kg->servers));
	if (!kg->servers) {
		free(kg);
		return -ENOMEM;
	}
	/*
	 * Bits left by an earlier group's threads mean nothing now.  Only
	 * the words the summary names: the others may not be mapped yet.
	 */
	for (unsigned int i = 0; i < kmod.nr_sum_words; i++) {
		uint64_t sb = atomic_exchange(&kmod.summary[i], 0);

		for (; sb; sb &= sb - 1) {
			unsigned int w = i * 64 + (unsigned int)__builtin_ctzll(sb);

			if (w < kmod.nr_words)
				atomic_store(&kmod.events[w], 0);
		}
	}
	atomic_store(&kmod.nr_servers, g->nr_cores);
	g->backend_priv = kg;
	return 0;
}

/*
 * After every server stopped: forget the workers (their words stay in the
 * mapping, which stays).  The servers exited registered; the module
 * reclaims their slots.
 */
static void kmod_fini(struct umcg_group *g)
{
	struct kmod_group *kg = g->backend_priv;
	struct umcg_thread *put[64];
	unsigned int i = 0, n;

	while (i < kmod.hi_slot) {
		pthread_mutex_lock(&kmod.lock);
		for (n = 0; i < kmod.hi_slot && n < 64; i++) {
			struct umcg_thread *t = atomic_load(&kmod.slots[i]);

			if (t) {
				put[n++] = t;
				atomic_store_explicit(&kmod.slots[i], NULL, memory_order_release);
			}
		}
		pthread_mutex_unlock(&kmod.lock);
		if (n)
			synchronize_rcu();
		while (n)
			umcg_ref_put(put[--n]);
	}
	atomic_store(&kmod.nr_servers, 0);
	free(kg->servers);
	free(kg);
	g->backend_priv = NULL;
}

static int kmod_worker_reserve(struct umcg_group *g)
{
	unsigned int n = atomic_fetch_add(&kmod.nr_workers, 1) + 1;

	if (n + atomic_load(&kmod.nr_servers) > kmod.max_tasks) {
		atomic_fetch_sub(&kmod.nr_workers, 1);
		return -EAGAIN;
	}
	return 0;
}

static void kmod_worker_unreserve(struct umcg_group *g)
{
	atomic_fetch_sub(&kmod.nr_workers, 1);
}

/*
 * The calling thread registers as a worker; its word moves into the
 * mapping, carrying over what t->task said (NEW, maybe a permit).
 */
static int kmod_worker_register(struct umcg_group *g, struct umcg_thread *t)
{
	struct umcg_register_args a = {
		.size = sizeof(a),
		.flags = UMCG_REGISTER_WORKER,
	};
	struct umcg_task *ut;
	unsigned int idx;
	uint32_t s;
	int ret;

	ret = kmod_ioctl(UMCG_IOC_REGISTER, &a);
	if (ret) {
		fprintf(stderr, "libumcg: kmod: registering worker %d: %s\n",
			t->tid, strerror(-ret));
		return ret == -ENOSPC ? -EAGAIN : ret;
	}
	idx = a.task_off / sizeof(struct umcg_task);
	ut = &kmod.tasks[idx];
	umcg_ref_get(t);	/* the table's, dropped by unregister or fini */
	pthread_mutex_lock(&kmod.lock);
	atomic_store_explicit(&kmod.slots[idx], t, memory_order_release);
	if (idx >= kmod.hi_slot)
		kmod.hi_slot = idx + 1;
	pthread_mutex_unlock(&kmod.lock);
	s = atomic_load(kmod_word(&t->task));
	atomic_store(kmod_word(ut), s);
	__atomic_store_n(&t->ut, ut, __ATOMIC_SEQ_CST);
	/* A permit given meanwhile to the old word. */
	s = atomic_load(kmod_word(&t->task));
	if (s & UMCG_TF_PERMIT)
		atomic_fetch_or(kmod_word(ut), UMCG_TF_PERMIT);
	return 0;
}

/*
 * @t leaves the mapping: its word goes back to t->task (joiners keep
 * reading it there after the module reuses the slot), then the slot is
 * dropped from the table and the module.  Removes the table's reference.
 */
static void kmod_worker_forget(struct umcg_thread *t, bool unregister)
{
	int idx = kmod_slot_of(t);
	struct umcg_task *ut;
	bool put = false;

	if (idx < 0)
		return;
	ut = &kmod.tasks[idx];
	/*
	 * The whole struct, blocked_ns included: a server that still holds
	 * an event of @t reads the copy (sched.c, "Kernel moves").  The
	 * kernel moves it no more: it is DONE (or released, not RUNNING).
	 */
	t->task.server_tid = ut->server_tid;
	t->task.cpu = __atomic_load_n(&ut->cpu, __ATOMIC_RELAXED);
	t->task.blocked_ns = __atomic_load_n(&ut->blocked_ns, __ATOMIC_RELAXED);
	t->task.woken_ns = __atomic_load_n(&ut->woken_ns, __ATOMIC_RELAXED);
	__atomic_store_n(&t->task.seq, __atomic_load_n(&ut->seq, __ATOMIC_ACQUIRE),
			 __ATOMIC_RELAXED);
	atomic_store(kmod_word(&t->task), atomic_load(kmod_word(ut)));
	__atomic_store_n(&t->ut, &t->task, __ATOMIC_SEQ_CST);
	pthread_mutex_lock(&kmod.lock);
	if (atomic_load(&kmod.slots[idx]) == t) {
		atomic_store_explicit(&kmod.slots[idx], NULL, memory_order_release);
		put = true;
	}
	pthread_mutex_unlock(&kmod.lock);
	if (unregister) {
		struct umcg_unregister_args a = { .size = sizeof(a) };

		kmod_ioctl(UMCG_IOC_UNREGISTER, &a);
	} else {
		/* Exited registered: the kernel may now reuse the slot. */
		uint32_t s = atomic_load(kmod_word(ut));

		while (umcg_state_of(s) == UMCG_TASK_DONE &&
		       !atomic_compare_exchange_strong(kmod_word(ut), &s,
						       UMCG_TASK_NEW))
			;
	}
	atomic_fetch_sub(&kmod.nr_workers, 1);
	if (put) {
		/* Readers that found @t in the table hold their own references. */
		synchronize_rcu();
		umcg_ref_put(t);
	}
}

static void kmod_worker_unregister(struct umcg_group *g, struct umcg_thread *t)
{
	kmod_worker_forget(t, true);
}

/* The kernel saw @t exit registered: its slot goes back with its thread. */
static void kmod_worker_gone(struct umcg_group *g, struct umcg_thread *t)
{
	kmod_worker_forget(t, false);
}

/*
 * umcg_fini() let @t go, all servers stopped: take its word out of the
 * kernel's hands.  RUNNING or BLOCKED: PARKED, which the kernel does not
 * move.  RUNNABLE because the kernel made it so (it waits in the kernel to
 * be picked): PARKED too, which ends that wait.  Waiting in the library
 * (RUNNABLE, PARKED): RUNNING and a wake, which ends UMCG_IOC_WAIT; the
 * thread then sees it was released and leaves RUNNING itself
 * (umcg_released_quiet()).
 */
static void kmod_worker_release(struct umcg_group *g, struct umcg_thread *t)
{
	_Atomic uint32_t *w = kmod_word(t->ut);
	struct umcg_wake_args a = { .size = sizeof(a), .tid = t->tid };
	uint32_t s = atomic_load(w), to;
	bool kernel;

	if (kmod_slot_of(t) < 0)
		return;
	for (;;) {
		switch (umcg_state_of(s)) {
		case UMCG_TASK_RUNNING:
		case UMCG_TASK_BLOCKED:
			to = UMCG_TASK_PARKED;
			break;
		case UMCG_TASK_RUNNABLE:
			kernel = umcg_kernel_made_runnable(t);
			to = kernel ? UMCG_TASK_PARKED : UMCG_TASK_RUNNING;
			break;
		case UMCG_TASK_PARKED:
			to = UMCG_TASK_RUNNING;
			break;
		default:
			return;
		}
		if (atomic_compare_exchange_strong(w, &s, (s & ~(UMCG_TASK_STATE_MASK |
								 UMCG_TF_PREEMPT)) | to))
			break;
	}
	kmod_ioctl(UMCG_IOC_WAKE, &a);
}

static int kmod_server_start(struct umcg_group *g, struct umcg_core *c)
{
	struct kmod_group *kg = g->backend_priv;
	struct umcg_register_args a = {
		.size = sizeof(a),
		.flags = UMCG_REGISTER_SERVER,
		.cpu = (uint32_t)c->cpu,
	};
	struct kmod_server *srv = &kg->servers[c->idx];
	struct umcg_task *ut;
	int ret;

	ret = kmod_ioctl(UMCG_IOC_REGISTER, &a);
	if (ret) {
		/* The server then polls; the kernel pokes another server. */
		fprintf(stderr, "libumcg: kmod: registering server of core %d: %s\n",
			c->idx, strerror(-ret));
		return ret;
	}
	ut = &kmod.tasks[a.task_off / sizeof(struct umcg_task)];
	atomic_store(kmod_word(ut), UMCG_TASK_RUNNING);
	atomic_store(&srv->tid, gettid());
	atomic_store(&srv->task, ut);
	return 0;
}

static bool kmod_events_pending(void)
{
	for (unsigned int i = 0; i < kmod.nr_sum_words; i++)
		if (atomic_load(&kmod.summary[i]))
			return true;
	return false;
}

/*
 * Time slice (C6): under c->lock, which keeps the owner alive.  Sets
 * UMCG_TF_PREEMPT on the owner's word, then, unless the owner is inside
 * libumcg (which then yields on its way out, see umcg_in_lib_get()),
 * UMCG_IOC_PREEMPT.  Returns when the slice of the core's owner ends, 0
 * if the core has no owner.
 */
static uint64_t kmod_slice_check(struct umcg_group *g, struct umcg_core *c, uint64_t now)
{
	struct umcg_preempt_args a = { .size = sizeof(a) };
	struct umcg_thread *t;
	_Atomic uint32_t *w;
	uint64_t since;
	uint32_t s;

	pthread_mutex_lock(&c->lock);
	umcg_core_sync_locked(c);
	t = c->current;
	if (!t) {
		pthread_mutex_unlock(&c->lock);
		return 0;
	}
	since = atomic_load(&c->run_since_ns);
	if (now - since < g->time_slice_ns) {
		pthread_mutex_unlock(&c->lock);
		return since + g->time_slice_ns;
	}
	w = kmod_word(t->ut);
	s = atomic_load(w);
	while (umcg_state_of(s) == UMCG_TASK_RUNNING && !(s & UMCG_TF_PREEMPT) &&
	       !atomic_compare_exchange_strong(w, &s, s | UMCG_TF_PREEMPT))
		;
	if (umcg_state_of(s) == UMCG_TASK_RUNNING && !(s & UMCG_TF_PREEMPT)) {
		if (atomic_load(&t->in_lib)) {
			/* Take the flag back, unless the worker already did. */
			s = atomic_load(w);
			while (s & UMCG_TF_PREEMPT) {
				if (atomic_compare_exchange_strong(w, &s, s & ~UMCG_TF_PREEMPT)) {
					atomic_store(&t->preempt_pending, 1);
					break;
				}
			}
		} else {
			a.tid = (uint32_t)t->tid;
			kmod_ioctl(UMCG_IOC_PREEMPT, &a);
		}
	}
	/* One request per slice: restart the slice clock. */
	atomic_store(&c->run_since_ns, now);
	pthread_mutex_unlock(&c->lock);
	return now + g->time_slice_ns;
}

/*
 * Sleep until c->wake_seq moves from @seen, an event bit is set, or (with
 * a time slice) the core's owner must be preempted.
 */
static int kmod_server_wait(struct umcg_core *c, uint32_t seen)
{
	struct umcg_group *g = c->group;
	struct kmod_group *kg = g->backend_priv;
	struct kmod_server *srv = &kg->servers[c->idx];
	struct umcg_task *ut = atomic_load(&srv->task);

	for (;;) {
		struct umcg_wait_args a = {
			.size = sizeof(a),
			.flags = UMCG_WAIT_ABSTIME,
		};
		uint64_t end, deadline = 0;
		int ret;

		if (ut)
			atomic_store(kmod_word(ut), UMCG_TASK_RUNNABLE);
		if (atomic_load(&c->wake_seq) != seen || kmod_events_pending() ||
		    atomic_load(&g->stopping))
			return 0;
		if (c->idx == 0 && atomic_load(&g->dump_signal)) {
			if (atomic_exchange(&g->dump_requested, 0))
				umcg_dump(stderr);
			deadline = umcg_now_ns() + KMOD_DUMP_POLL_NS;
		}
		if (g->time_slice_ns) {
			end = kmod_slice_check(g, c, umcg_now_ns());
			if (end && (!deadline || end < deadline))
				deadline = end;
		}
		if (!ut) {
			/* Not registered: poll. */
			umcg_futex_wait(&c->wake_seq, seen, umcg_now_ns() + 1000000ULL);
			return 0;
		}
		a.timeout_ns = deadline;
		if (!deadline)
			a.flags = 0;
		ret = kmod_ioctl(UMCG_IOC_WAIT, &a);
		if (ret == 0)
			return 0;
		if (ret != -ETIMEDOUT && ret != -EINTR)
			return ret;
	}
}

static void kmod_server_wake(struct umcg_core *c)
{
	struct kmod_group *kg = c->group->backend_priv;
	struct kmod_server *srv;
	struct umcg_task *ut;
	uint32_t old;

	if (!kg)
		return;
	srv = &kg->servers[c->idx];
	ut = atomic_load(&srv->task);
	if (!ut) {
		umcg_futex_wake(&c->wake_seq, 1);
		return;
	}
	old = atomic_exchange(kmod_word(ut), UMCG_TASK_RUNNING);
	if (umcg_state_of(old) != UMCG_TASK_RUNNING) {
		struct umcg_wake_args a = {
			.size = sizeof(a),
			.tid = (uint32_t)atomic_load(&srv->tid),
		};

		kmod_ioctl(UMCG_IOC_WAKE, &a);
	}
}

static int kmod_wait(struct umcg_thread *self, uint32_t seen, uint64_t abs_ns)
{
	struct umcg_wait_args a = {
		.size = sizeof(a),
		.flags = abs_ns ? UMCG_WAIT_ABSTIME : 0,
		.timeout_ns = abs_ns,
	};

	if (kmod_slot_of(self) < 0)
		return umcg_state_wait(self, seen, abs_ns);
	return kmod_ioctl(UMCG_IOC_WAIT, &a);
}

static void kmod_wake(struct umcg_thread *t)
{
	struct umcg_wake_args a = { .size = sizeof(a), .tid = (uint32_t)t->tid };

	kmod_ioctl(UMCG_IOC_WAKE, &a);
}

/*
 * Wake @next on our CPU and wait, in one call.  @next is not touched once
 * its tid is read, so its reference goes first; if it is gone by the time
 * the module looks (-ESRCH: nothing waited), wait on our own.
 */
static int kmod_switch_to(struct umcg_thread *self, uint32_t seen, struct umcg_thread *next)
{
	struct umcg_switch_args a = {
		.size = sizeof(a),
		.next_tid = (uint32_t)next->tid,
	};
	int ret;

	umcg_ref_put(next);
	ret = kmod_ioctl(UMCG_IOC_SWITCH, &a);
	if (ret == -ESRCH)
		return kmod_wait(self, seen, 0);
	return ret;
}

/*
 * Take event word @w's bits (atomic exchange) and report each worker
 * behind one, with a reference, into @ev from *@n up to @max.  Returns the
 * bits that did not fit, which the caller puts back.
 */
static uint64_t kmod_take_word(unsigned int w, struct umcg_event *ev, int *n, int max)
{
	uint64_t bits = atomic_exchange(&kmod.events[w], 0);

	while (bits && *n < max) {
		unsigned int idx = w * 64 + (unsigned int)__builtin_ctzll(bits);
		struct umcg_thread *t;

		bits &= bits - 1;
		if (idx >= kmod.max_tasks)
			continue;
		rcu_read_lock();
		t = atomic_load_explicit(&kmod.slots[idx], memory_order_acquire);
		if (t)
			umcg_ref_get(t);
		rcu_read_unlock();
		if (!t)
			continue;	/* a server, or a free slot */
		ev[*n].type = UMCG_EV_MOVED;
		ev[*n].thread = t;
		(*n)++;
	}
	return bits;
}

/*
 * Take the summary bits, a word at a time, then the event words they name
 * (uapi/umcg.h: UMCG_MMAP_SUMMARY_OFF), and report each worker behind a
 * bit.  Bits that do not fit in @max go back, event bits before their
 * summary bit, for the next call (here or in another server).
 */
static int kmod_poll_events(struct umcg_core *c, struct umcg_event *ev, int max)
{
	int n = 0;

	for (unsigned int s = 0; s < kmod.nr_sum_words && n < max; s++) {
		uint64_t sb;

		if (!atomic_load(&kmod.summary[s]))
			continue;
		sb = atomic_exchange(&kmod.summary[s], 0);
		while (sb) {
			unsigned int j = (unsigned int)__builtin_ctzll(sb);
			unsigned int w = s * 64 + j;
			uint64_t left;

			if (n >= max) {
				atomic_fetch_or(&kmod.summary[s], sb);
				break;
			}
			sb &= sb - 1;
			if (w >= kmod.nr_words)
				continue;
			left = kmod_take_word(w, ev, &n, max);
			if (left) {
				atomic_fetch_or(&kmod.events[w], left);
				atomic_fetch_or(&kmod.summary[s], 1ULL << j);
			}
		}
	}
	return n;
}

const struct umcg_backend_ops umcg_backend_kmod = {
	.name			= "kmod",
	.probe			= kmod_probe,
	.init			= kmod_init,
	.fini			= kmod_fini,
	.worker_register	= kmod_worker_register,
	.worker_unregister	= kmod_worker_unregister,
	.server_start		= kmod_server_start,
	.wait			= kmod_wait,
	.wake			= kmod_wake,
	.switch_to		= kmod_switch_to,
	.server_wait		= kmod_server_wait,
	.server_wake		= kmod_server_wake,
	.poll_events		= kmod_poll_events,
	.worker_reserve		= kmod_worker_reserve,
	.worker_unreserve	= kmod_worker_unreserve,
	.worker_release		= kmod_worker_release,
	.worker_gone		= kmod_worker_gone,
	.stage_free		= kmod_stage_free,
	.stage			= kmod_stage,
	.stage_ran		= kmod_stage_ran,
	.unstage		= kmod_unstage,
	.pin_by_waker		= true,
	.kernel_moves		= true,
};
