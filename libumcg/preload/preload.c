// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * preload.c - libumcg-preload.so: an unmodified pthread program, run with
 * this library in LD_PRELOAD (umcg-run does that), has its main thread and
 * every thread it creates scheduled by libumcg as workers of one group.
 *
 * a. Setup.  The constructor reads the settings umcg-run put in the
 *    environment (umcg_run_env.h), calls umcg_init() with
 *    UMCG_CONFIG_ATTACH_CALLER so that the main thread becomes a worker, and
 *    asks for a thread dump on $UMCG_DUMP_SIGNAL (default SIGRTMAX-3, not
 *    SIGUSR2, the JVM's; "none": no dump signal).  A bad setting
 *    is a message on stderr and _exit(2); a group that cannot be set up,
 *    _exit(1): a program that asked to be managed never runs unmanaged.
 *
 * b. Threads.  pthread_create() and thrd_create() are interposed: the new
 *    thread starts in a trampoline that umcg_attach()es it, runs the
 *    program's start routine and umcg_detach()es it.  A thread that leaves
 *    through pthread_exit(), thrd_exit() or cancellation is detached by the
 *    destructor of a thread-specific key, set while it is a worker.
 *
 * c. Threads that must stay plain.  libumcg's own threads (servers, the
 *    monitor, umcg_spawn()'s workers, which attach themselves) are created
 *    by calls that come through the interposed symbol too.  Three checks,
 *    each enough alone for today's libumcg, pass them straight through:
 *    the group is not up yet (servers and monitor are created inside
 *    umcg_init()), the call comes from inside this thread's own call into
 *    libumcg (a thread-local depth), or the caller's return address lies in
 *    libumcg's executable segments (found once with dl_iterate_phdr()).
 *    Threads created before the constructor ran (by another library's
 *    constructor) start before the group exists and stay plain.
 *
 * d. Blocking calls (C1, C2).  The common blocking calls (read, write,
 *    sockets, poll/select/epoll, sleeps, mutexes, condition variables,
 *    read-write locks, semaphores, join, wait) are interposed and announced
 *    to libumcg (umcg_blocking_enter(), umcg_blocking_leave()), in the
 *    shape of Go's entersyscall/exitsyscall.  Each hook decides how its
 *    call goes:
 *    - it cannot block (a zero timeout, MSG_DONTWAIT, an O_NONBLOCK fd with
 *      nothing to read): not announced;
 *    - it will block: announced with UMCG_BLOCKING_NOW, which gives the
 *      core to the next worker before the call.  Sleeps and condition
 *      waits always; a read, recv or accept when poll(2) with no wait
 *      finds nothing to read; poll, select and epoll_wait when the same
 *      call with no wait finds nothing; a mutex, read-write lock,
 *      semaphore, join or waitpid when its try variant fails;
 *    - else it may block (writes, sends, connect, a read of data poll
 *      found): announced, a store and no system call; the user backend's
 *      monitor takes the core within two 20 us samples if the call sleeps.
 *    On the way out a worker whose core was taken or given away waits for
 *    one before any more of the program's code runs.  The price, on the
 *    user backend: one poll(2) with no wait before each read, recv and
 *    accept, and the try call before the others that can tell.  A kernel
 *    backend sees every block itself: there nothing is probed or tried,
 *    and each call is only announced.  Calls libc makes internally
 *    (stdio's write, for one) are not seen; for those the monitor's slower
 *    detection and the C1 exception stay as the user backend documents
 *    them, until the worker's next interposed or libumcg call.  A signal
 *    handler that runs while its worker is blocked in an announced call
 *    runs without a core, as it did before.  sched_yield() from a worker
 *    becomes umcg_yield(), so that spin-waits make progress on a single
 *    core.
 *
 * e. Exit and fork.  The library's destructor (it runs last, from
 *    _dl_fini) tears the group down with umcg_fini() on a helper thread,
 *    so that exit() never waits for a core; every worker still alive is
 *    released and runs on as a plain thread until the process is gone.  A
 *    forked child has none of the group's servers: it is unmanaged from the
 *    start (every hook passes through) and gets the process's CPU mask
 *    and the normal scheduler back, since the forking worker's mask was
 *    narrowed to its core's CPU (and on scx it was in sched_ext);
 *    posix_spawn(), system() and popen() are interposed for the same
 *    (section g.).  A child that executes a program inherits the
 *    environment, so that program is managed too, in its own group, on
 *    the CPUs in $UMCG_RUN_CPUS (umcg_setup_cpus()).
 *
 * f. What the program sees.  A worker's affinity calls report the group's
 *    CPUs, not the one CPU libumcg keeps it on, and setting it is refused
 *    unless the mask holds them all (section "affinity" below).  libumcg's
 *    own threads, and the helper that runs umcg_fini(), block every
 *    signal, so that a signal sent to the process reaches one of the
 *    program's threads.
 *
 * g. Child processes: see the section "child processes" below.
 *
 * Only the interposed functions are exported (-fvisibility=hidden).
 */
#undef _FORTIFY_SOURCE
#include <alloca.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <threads.h>
#include <time.h>
#include <unistd.h>

#include <umcg.h>
#include <umcg/policy.h>

#include "umcg_run_env.h"

#define UMCG_EXPORT	__attribute__((visibility("default")))
#define UMCG_TLS	__attribute__((tls_model("initial-exec")))

/* True from a successful setup until umcg_fini(), never in a forked child. */
static _Atomic bool umcg_managed;
/*
 * The backend is "user": the hooks find out how their calls will go.  A
 * kernel backend sees every block itself; there each call is only
 * announced (UMCG_CALL_MAY), with no probe or try first.
 */
static bool umcg_user_backend;
/* The CPU mask the process had before any worker was pinned. */
static cpu_set_t umcg_initial_cpus;
static bool umcg_have_initial_cpus;
/* Set (non-NULL) while the thread is a worker that must detach at exit. */
static pthread_key_t umcg_worker_key;
/*
 * The group's CPUs, those of its cores (what affinity calls of workers
 * report), and each core's CPU: libumcg takes the first nr_cores CPUs of
 * the mask it starts with (umcg_initial_cpus), in order.
 */
static cpu_set_t umcg_group_cpus;
static int *umcg_core_cpu;
static unsigned int umcg_nr_core_cpus;

/*
 * The workers this library made, so that an affinity call naming one by
 * its tid or pthread_t can tell it is one: each in its own thread-local
 * entry, hashed by tid, under a spin lock (held for a few loads; the
 * hooked pthread_mutex_lock would announce itself).
 */
struct umcg_worker_ent {
	struct umcg_worker_ent *next;
	pid_t tid;
	pthread_t thr;
};
#define UMCG_WORKER_BUCKETS	256
static struct umcg_worker_ent *umcg_workers[UMCG_WORKER_BUCKETS];
static atomic_flag umcg_workers_lock = ATOMIC_FLAG_INIT;
static __thread struct umcg_worker_ent umcg_self_ent UMCG_TLS;

/* Depth of this thread's calls into libumcg made from here. */
static __thread unsigned int umcg_in_lib UMCG_TLS;

/* libumcg's executable segments: calls from there pass through. */
#define UMCG_MAX_RANGES	8
static struct {
	uintptr_t lo, hi;
} umcg_lib_ranges[UMCG_MAX_RANGES];
static unsigned int umcg_nr_lib_ranges;

static void umcg_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void umcg_die(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("umcg-preload: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	_exit(code);
}

/*
 * The next definition of @name after this library (libc's), looked up once.
 * @version: the symbol version to prefer (glibc keeps old condition
 * variables under the plain name), NULL for the default.
 */
static void *umcg_real(void *_Atomic *slot, const char *name, const char *version)
{
	void *p = atomic_load_explicit(slot, memory_order_acquire);

	if (p)
		return p;
	if (version)
		p = dlvsym(RTLD_NEXT, name, version);
	if (!p)
		p = dlsym(RTLD_NEXT, name);
	if (!p)
		umcg_die(1, "cannot find the real %s: %s", name, dlerror());
	atomic_store_explicit(slot, p, memory_order_release);
	return p;
}

#define UMCG_REAL(name, version) \
	((__typeof__(&name))umcg_real(&umcg_real_##name, #name, version))

static bool umcg_from_lib(const void *caller)
{
	uintptr_t a = (uintptr_t)caller;

	for (unsigned int i = 0; i < umcg_nr_lib_ranges; i++)
		if (a >= umcg_lib_ranges[i].lo && a < umcg_lib_ranges[i].hi)
			return true;
	return false;
}

/* Should a hook called from @caller act, or pass straight through? */
static inline bool umcg_hook_active(const void *caller)
{
	return atomic_load_explicit(&umcg_managed, memory_order_relaxed) &&
	       !umcg_in_lib && !umcg_from_lib(caller);
}

/* --- threads ----------------------------------------------------------- */

static void *_Atomic umcg_real_sched_yield;

static void umcg_workers_lock_take(void)
{
	while (atomic_flag_test_and_set_explicit(&umcg_workers_lock, memory_order_acquire))
		UMCG_REAL(sched_yield, NULL)();
}

static void umcg_workers_lock_drop(void)
{
	atomic_flag_clear_explicit(&umcg_workers_lock, memory_order_release);
}

/* The calling thread became a worker: it can be found by tid. */
static void umcg_worker_add(void)
{
	struct umcg_worker_ent *e = &umcg_self_ent, **b;

	if (e->tid)
		return;
	e->tid = gettid();
	e->thr = pthread_self();
	b = &umcg_workers[(unsigned int)e->tid % UMCG_WORKER_BUCKETS];
	umcg_workers_lock_take();
	e->next = *b;
	*b = e;
	umcg_workers_lock_drop();
}

static void umcg_worker_del(void)
{
	struct umcg_worker_ent *e = &umcg_self_ent, **pp;

	if (!e->tid)
		return;
	umcg_workers_lock_take();
	for (pp = &umcg_workers[(unsigned int)e->tid % UMCG_WORKER_BUCKETS]; *pp;
	     pp = &(*pp)->next) {
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	}
	umcg_workers_lock_drop();
	e->tid = 0;
}

/* Is thread @tid of this process (0: the caller) a worker made here? */
static bool umcg_tid_is_worker(pid_t tid)
{
	struct umcg_worker_ent *e;
	bool found = false;

	if (!tid || tid == umcg_self_ent.tid)
		return umcg_self_ent.tid != 0;
	umcg_workers_lock_take();
	for (e = umcg_workers[(unsigned int)tid % UMCG_WORKER_BUCKETS]; e && !found; e = e->next)
		found = e->tid == tid;
	umcg_workers_lock_drop();
	return found;
}

static bool umcg_pthread_is_worker(pthread_t thr)
{
	bool found = false;

	if (pthread_equal(thr, pthread_self()))
		return umcg_self_ent.tid != 0;
	umcg_workers_lock_take();
	for (unsigned int i = 0; i < UMCG_WORKER_BUCKETS && !found; i++)
		for (struct umcg_worker_ent *e = umcg_workers[i]; e && !found; e = e->next)
			found = pthread_equal(e->thr, thr);
	umcg_workers_lock_drop();
	return found;
}

struct umcg_start {
	void *(*fn)(void *);
	int (*c11_fn)(void *);
	void *arg;
};

/*
 * A thread the backend has no room for (kmod: 4,096 per process; scx: 4,096
 * on the machine) runs unmanaged: said once on stderr, and counted as
 * "refused" in the thread dump.
 */
static atomic_bool umcg_said_refused;

static void umcg_thread_attach(void)
{
	int ret;

	if (!atomic_load(&umcg_managed))
		return;
	umcg_in_lib++;
	ret = umcg_attach(NULL);
	if (ret == 0) {
		pthread_setspecific(umcg_worker_key, &umcg_worker_key);
		umcg_worker_add();
	}
	umcg_in_lib--;
	/* -ESRCH: the group is going (exit), not a limit. */
	if (ret && ret != -ESRCH && !atomic_exchange(&umcg_said_refused, true))
		fprintf(stderr, "umcg-preload: thread %d runs unmanaged: the %s backend cannot "
			"take it (%s); said once, the thread dump counts them (refused)\n",
			(int)gettid(), umcg_backend_name() ? umcg_backend_name() : "?",
			strerror(-ret));
}

static void umcg_thread_detach(void)
{
	if (!pthread_getspecific(umcg_worker_key))
		return;
	pthread_setspecific(umcg_worker_key, NULL);
	umcg_worker_del();
	if (!atomic_load(&umcg_managed))
		return;	/* after umcg_fini() or in a forked child: leave it */
	umcg_in_lib++;
	umcg_detach();
	umcg_in_lib--;
}

/* pthread_exit(), thrd_exit() or cancellation of a worker. */
static void umcg_worker_key_dtor(void *unused)
{
	umcg_worker_del();
	if (!atomic_load(&umcg_managed))
		return;
	umcg_in_lib++;
	umcg_detach();
	umcg_in_lib--;
}

static void *umcg_trampoline(void *p)
{
	struct umcg_start st = *(struct umcg_start *)p;
	void *ret;

	free(p);
	umcg_thread_attach();
	ret = st.fn(st.arg);
	umcg_thread_detach();
	return ret;
}

static int umcg_c11_trampoline(void *p)
{
	struct umcg_start st = *(struct umcg_start *)p;
	int ret;

	free(p);
	umcg_thread_attach();
	ret = st.c11_fn(st.arg);
	umcg_thread_detach();
	return ret;
}

static void *_Atomic umcg_real_pthread_create;

UMCG_EXPORT int pthread_create(pthread_t *thr, const pthread_attr_t *attr,
			       void *(*fn)(void *), void *arg)
{
	__typeof__(&pthread_create) real = UMCG_REAL(pthread_create, NULL);
	struct umcg_start *st;
	int ret;

	if (!umcg_hook_active(__builtin_return_address(0)))
		return real(thr, attr, fn, arg);
	st = malloc(sizeof(*st));
	if (!st)
		return EAGAIN;
	*st = (struct umcg_start){ .fn = fn, .arg = arg };
	ret = real(thr, attr, umcg_trampoline, st);
	if (ret)
		free(st);
	return ret;
}

static void *_Atomic umcg_real_thrd_create;

UMCG_EXPORT int thrd_create(thrd_t *thr, thrd_start_t fn, void *arg)
{
	__typeof__(&thrd_create) real = UMCG_REAL(thrd_create, NULL);
	struct umcg_start *st;
	int ret;

	if (!umcg_hook_active(__builtin_return_address(0)))
		return real(thr, fn, arg);
	st = malloc(sizeof(*st));
	if (!st)
		return thrd_nomem;
	*st = (struct umcg_start){ .c11_fn = fn, .arg = arg };
	ret = real(thr, umcg_c11_trampoline, st);
	if (ret != thrd_success)
		free(st);
	return ret;
}

/* A worker's yield is libumcg's: the kernel's would not free its core. */

UMCG_EXPORT int sched_yield(void)
{
	__typeof__(&sched_yield) real = UMCG_REAL(sched_yield, NULL);

	if (umcg_hook_active(__builtin_return_address(0)) && umcg_self()) {
		int ret;

		umcg_in_lib++;
		ret = umcg_yield();
		umcg_in_lib--;
		if (ret == 0)
			return 0;
	}
	return real();
}

/* --- affinity: the group's CPUs, as the program sees them ------------- */

/*
 * libumcg keeps each worker's kernel mask at its core's CPU (every
 * backend: the contract says a worker runs on its core's CPU, and the
 * kernel backends need it to hand a core over on the spot).  A program
 * that sized itself by that mask would see one CPU; what it may use is
 * the group's cores.  So, for a worker:
 *   - sched_getaffinity() and pthread_getaffinity_np() make the real call
 *     (its checks and errors stay the kernel's) and replace its result
 *     with the group's CPUs;
 *   - sched_setaffinity() and pthread_setaffinity_np() succeed, changing
 *     nothing, for a mask that holds every CPU of the group (the worker
 *     may already run on all of them), and fail with EINVAL for any other:
 *     libumcg cannot confine one worker to fewer cores, and a real call
 *     would leave the worker's mask different from the core libumcg runs
 *     it on (C1).
 * Other threads (plain ones, other processes) get the real calls.  A
 * program that asks the kernel without the C library (Go's runtime) sees
 * the real mask, one CPU.
 */

/* @set (@size bytes) holds every CPU of the group. */
static bool umcg_mask_covers_group(size_t size, const cpu_set_t *set)
{
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &umcg_group_cpus) &&
		    ((size_t)c >= size * 8 || !CPU_ISSET_S(c, size, set)))
			return false;
	return true;
}

/* The group's CPUs into @set (@size bytes), after the real call filled it. */
static void umcg_mask_report_group(size_t size, cpu_set_t *set)
{
	CPU_ZERO_S(size, set);
	for (int c = 0; c < CPU_SETSIZE && (size_t)c < size * 8; c++)
		if (CPU_ISSET(c, &umcg_group_cpus))
			CPU_SET_S(c, size, set);
}

/*
 * Does an affinity call of @caller naming thread @tid (0: itself) act?
 * Not for another process, nor a thread that is not a worker made here.
 */
static bool umcg_affinity_hooked(const void *caller, pid_t tid)
{
	return umcg_hook_active(caller) && umcg_tid_is_worker(tid);
}

static void *_Atomic umcg_real_sched_getaffinity;

UMCG_EXPORT int sched_getaffinity(pid_t pid, size_t size, cpu_set_t *set)
{
	__typeof__(&sched_getaffinity) real = UMCG_REAL(sched_getaffinity, NULL);
	int ret = real(pid, size, set);

	if (ret == 0 && umcg_affinity_hooked(__builtin_return_address(0), pid))
		umcg_mask_report_group(size, set);
	return ret;
}

static void *_Atomic umcg_real_sched_setaffinity;

UMCG_EXPORT int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set)
{
	__typeof__(&sched_setaffinity) real = UMCG_REAL(sched_setaffinity, NULL);

	if (!umcg_affinity_hooked(__builtin_return_address(0), pid))
		return real(pid, size, set);
	if (!umcg_mask_covers_group(size, set)) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

static void *_Atomic umcg_real_pthread_getaffinity_np;

UMCG_EXPORT int pthread_getaffinity_np(pthread_t thr, size_t size, cpu_set_t *set)
{
	__typeof__(&pthread_getaffinity_np) real = UMCG_REAL(pthread_getaffinity_np, NULL);
	int ret = real(thr, size, set);

	if (ret == 0 && umcg_hook_active(__builtin_return_address(0)) &&
	    umcg_pthread_is_worker(thr))
		umcg_mask_report_group(size, set);
	return ret;
}

static void *_Atomic umcg_real_pthread_setaffinity_np;

UMCG_EXPORT int pthread_setaffinity_np(pthread_t thr, size_t size, const cpu_set_t *set)
{
	__typeof__(&pthread_setaffinity_np) real = UMCG_REAL(pthread_setaffinity_np, NULL);

	if (!umcg_hook_active(__builtin_return_address(0)) || !umcg_pthread_is_worker(thr))
		return real(thr, size, set);
	return umcg_mask_covers_group(size, set) ? 0 : EINVAL;
}

/* --- child processes: the program's CPUs, the normal scheduler ---------- */

#ifndef SCHED_EXT
#define SCHED_EXT	7
#endif

/*
 * A child process starts with what its parent thread has: a worker's
 * one-CPU mask and, on scx, SCHED_EXT.  fork() is mended in the child
 * (umcg_atfork_child()); posix_spawn(), system() and popen() run no fork
 * handlers, so the worker that calls one widens its own mask to the
 * process's first (umcg_initial_cpus) around the call; posix_spawn()'s
 * child of a worker in sched_ext is asked for SCHED_OTHER
 * (POSIX_SPAWN_SETSCHEDULER) unless the caller asked for a policy itself,
 * and system() and popen() of such a worker are made here (below).  Afterwards the worker is put back on
 * the CPU of the core it holds then, which libumcg (on a kernel backend,
 * the thread that gave it its core while it waited) may have changed.
 */
struct umcg_widened {
	bool on;
	cpu_set_t saved;
};

static void umcg_widen(const void *caller, struct umcg_widened *w)
{
	w->on = false;
	if (!umcg_have_initial_cpus || !umcg_hook_active(caller) || !umcg_self_ent.tid)
		return;
	if (UMCG_REAL(sched_getaffinity, NULL)(0, sizeof(w->saved), &w->saved))
		return;
	w->on = !UMCG_REAL(sched_setaffinity, NULL)(0, sizeof(umcg_initial_cpus),
						     &umcg_initial_cpus);
}

static void umcg_narrow(const struct umcg_widened *w)
{
	int saved = errno, core;
	umcg_thread_t *self;
	cpu_set_t one;

	if (!w->on)
		return;
	umcg_in_lib++;
	self = umcg_self();
	core = self ? umcg_thread_core(self) : -1;
	umcg_in_lib--;
	if (core >= 0 && (unsigned int)core < umcg_nr_core_cpus) {
		CPU_ZERO(&one);
		CPU_SET(umcg_core_cpu[core], &one);
		UMCG_REAL(sched_setaffinity, NULL)(0, sizeof(one), &one);
	} else {
		UMCG_REAL(sched_setaffinity, NULL)(0, sizeof(w->saved), &w->saved);
	}
	errno = saved;
}

static void *_Atomic umcg_real_posix_spawn;
static void *_Atomic umcg_real_posix_spawnp;

static int umcg_spawn_common(int (*real)(pid_t *, const char *,
					  const posix_spawn_file_actions_t *,
					  const posix_spawnattr_t *, char *const[], char *const[]),
			     const void *caller, pid_t *pid, const char *path,
			     const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
			     char *const argv[], char *const envp[])
{
	struct umcg_widened w;
	posix_spawnattr_t mine;
	const posix_spawnattr_t *use = attr;
	short flags = 0;
	bool own = false;
	int ret;

	umcg_widen(caller, &w);
	if (w.on && (sched_getscheduler(0) & ~SCHED_RESET_ON_FORK) == SCHED_EXT) {
		if (attr)
			posix_spawnattr_getflags(attr, &flags);
		if (!(flags & POSIX_SPAWN_SETSCHEDULER)) {
			struct sched_param sp = { 0 };

			if (attr)
				mine = *attr;	/* glibc's holds no pointers */
			else
				own = !posix_spawnattr_init(&mine);
			if (attr || own) {
				posix_spawnattr_setflags(&mine, flags | POSIX_SPAWN_SETSCHEDULER);
				posix_spawnattr_setschedpolicy(&mine, SCHED_OTHER);
				posix_spawnattr_setschedparam(&mine, &sp);
				use = &mine;
			}
		}
	}
	ret = real(pid, path, fa, use, argv, envp);
	if (own)
		posix_spawnattr_destroy(&mine);
	umcg_narrow(&w);
	return ret;
}

UMCG_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			    const posix_spawnattr_t *attr, char *const argv[],
			    char *const envp[])
{
	return umcg_spawn_common(UMCG_REAL(posix_spawn, NULL), __builtin_return_address(0),
				 pid, path, fa, attr, argv, envp);
}

UMCG_EXPORT int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			     const posix_spawnattr_t *attr, char *const argv[],
			     char *const envp[])
{
	return umcg_spawn_common(UMCG_REAL(posix_spawnp, NULL), __builtin_return_address(0),
				 pid, file, fa, attr, argv, envp);
}

/*
 * system() and popen() of a worker in sched_ext: the C library's start
 * the shell with its internal posix_spawn(), and SCHED_RESET_ON_FORK
 * resets only real-time and deadline policies (sched_fork()), so the shell
 * would start in SCHED_EXT.  Here they are made with posix_spawn() and
 * POSIX_SPAWN_SETSCHEDULER, as the C library makes them otherwise: the
 * shell with SIGINT and SIGQUIT back to their default unless ignored, the
 * caller's signal mask; system() ignores SIGINT and SIGQUIT and blocks
 * SIGCHLD while it waits; a popen() child closes the other popen()
 * streams, and pclose() waits for it.  Everywhere else the C library's.
 */
static bool umcg_in_ext(void)
{
	return (sched_getscheduler(0) & ~SCHED_RESET_ON_FORK) == SCHED_EXT;
}

static char *umcg_shell_argv(const char *cmd, char *argv[4])
{
	argv[0] = "sh";
	argv[1] = "-c";
	argv[2] = (char *)cmd;
	argv[3] = NULL;
	return "/bin/sh";
}

/* @a with SCHED_OTHER and the given signal settings. */
static void umcg_shell_attr(posix_spawnattr_t *a, short flags)
{
	struct sched_param sp = { 0 };

	posix_spawnattr_setflags(a, flags | POSIX_SPAWN_SETSCHEDULER);
	posix_spawnattr_setschedpolicy(a, SCHED_OTHER);
	posix_spawnattr_setschedparam(a, &sp);
}

static int umcg_ext_system(const char *cmd)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, oint, oquit;
	sigset_t chld, omask, dfl;
	posix_spawnattr_t a;
	char *argv[4], *sh = umcg_shell_argv(cmd ? cmd : "exit 0", argv);
	int st = 0, ret;
	pid_t pid;

	sigemptyset(&ign.sa_mask);
	sigaction(SIGINT, &ign, &oint);
	sigaction(SIGQUIT, &ign, &oquit);
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	pthread_sigmask(SIG_BLOCK, &chld, &omask);
	sigemptyset(&dfl);
	if (oint.sa_handler != SIG_IGN)
		sigaddset(&dfl, SIGINT);
	if (oquit.sa_handler != SIG_IGN)
		sigaddset(&dfl, SIGQUIT);
	ret = posix_spawnattr_init(&a);
	if (!ret) {
		posix_spawnattr_setsigdefault(&a, &dfl);
		posix_spawnattr_setsigmask(&a, &omask);
		umcg_shell_attr(&a, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
		ret = UMCG_REAL(posix_spawn, NULL)(&pid, sh, NULL, &a, argv, environ);
		posix_spawnattr_destroy(&a);
	}
	if (ret) {
		st = 127 << 8;	/* as the C library's: the shell could not run */
	} else {
		/* The hooked waitpid(): the wait gives the core away. */
		while (waitpid(pid, &st, 0) < 0) {
			if (errno != EINTR) {
				st = -1;
				break;
			}
		}
	}
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGQUIT, &oquit, NULL);
	pthread_sigmask(SIG_SETMASK, &omask, NULL);
	if (!cmd)
		return st == 0;
	return st;
}

/* The streams umcg_ext_popen() made, for pclose() and later children. */
struct umcg_popen {
	struct umcg_popen *next;
	FILE *f;
	pid_t pid;
};
static struct umcg_popen *umcg_popens;
static atomic_flag umcg_popens_lock = ATOMIC_FLAG_INIT;

static void umcg_popens_take(void)
{
	while (atomic_flag_test_and_set_explicit(&umcg_popens_lock, memory_order_acquire))
		UMCG_REAL(sched_yield, NULL)();
}

static void umcg_popens_drop(void)
{
	atomic_flag_clear_explicit(&umcg_popens_lock, memory_order_release);
}

static FILE *umcg_ext_popen(const char *cmd, const char *mode)
{
	bool rd = mode && mode[0] == 'r', cloexec = mode && strchr(mode, 'e');
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t a;
	struct umcg_popen *p;
	char *argv[4], *sh = umcg_shell_argv(cmd, argv);
	int fd[2], mine, theirs, ret;
	FILE *f = NULL;

	if (!mode || (mode[0] != 'r' && mode[0] != 'w') ||
	    strspn(mode + 1, "e") != strlen(mode + 1)) {
		errno = EINVAL;
		return NULL;
	}
	p = malloc(sizeof(*p));
	if (!p || pipe2(fd, O_CLOEXEC)) {
		free(p);
		return NULL;
	}
	mine = rd ? fd[0] : fd[1];
	theirs = rd ? fd[1] : fd[0];
	ret = posix_spawn_file_actions_init(&fa);
	if (!ret) {
		ret = posix_spawn_file_actions_adddup2(&fa, theirs, rd ? 1 : 0);
		umcg_popens_take();
		for (struct umcg_popen *q = umcg_popens; q && !ret; q = q->next)
			ret = posix_spawn_file_actions_addclose(&fa, fileno(q->f));
		umcg_popens_drop();
	}
	if (!ret && !(ret = posix_spawnattr_init(&a))) {
		umcg_shell_attr(&a, 0);
		ret = UMCG_REAL(posix_spawn, NULL)(&p->pid, sh, &fa, &a, argv, environ);
		posix_spawnattr_destroy(&a);
	}
	posix_spawn_file_actions_destroy(&fa);
	close(theirs);
	if (!ret && !cloexec)
		fcntl(mine, F_SETFD, 0);
	if (!ret)
		f = fdopen(mine, rd ? "r" : "w");
	if (!f) {
		int err = ret ? ret : errno;

		close(mine);
		if (!ret)	/* the child runs: reap it */
			while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
				;
		free(p);
		errno = err;
		return NULL;
	}
	p->f = f;
	umcg_popens_take();
	p->next = umcg_popens;
	umcg_popens = p;
	umcg_popens_drop();
	return f;
}

static void *_Atomic umcg_real_system;

UMCG_EXPORT int system(const char *cmd)
{
	struct umcg_widened w;
	int ret;

	umcg_widen(__builtin_return_address(0), &w);
	ret = w.on && umcg_in_ext() ? umcg_ext_system(cmd) : UMCG_REAL(system, NULL)(cmd);
	umcg_narrow(&w);
	return ret;
}

static void *_Atomic umcg_real_popen;

UMCG_EXPORT FILE *popen(const char *cmd, const char *mode)
{
	struct umcg_widened w;
	FILE *f;

	umcg_widen(__builtin_return_address(0), &w);
	f = w.on && umcg_in_ext() ? umcg_ext_popen(cmd, mode) : UMCG_REAL(popen, NULL)(cmd, mode);
	umcg_narrow(&w);
	return f;
}

static void *_Atomic umcg_real_pclose;

/* One of umcg_ext_popen()'s streams: close it and wait for its shell. */
UMCG_EXPORT int pclose(FILE *f)
{
	struct umcg_popen **pp, *p = NULL;
	int st;

	umcg_popens_take();
	for (pp = &umcg_popens; *pp; pp = &(*pp)->next) {
		if ((*pp)->f == f) {
			p = *pp;
			*pp = p->next;
			break;
		}
	}
	umcg_popens_drop();
	if (!p)
		return UMCG_REAL(pclose, NULL)(f);
	fclose(f);
	while (waitpid(p->pid, &st, 0) < 0) {
		if (errno != EINTR) {
			st = -1;
			break;
		}
	}
	free(p);
	return st;
}

/*
 * A worker that executes a program itself (no fork: a shell's last
 * command) hands the new image its mask: widened to the process's first
 * around the call, as for a spawn; if the call fails, the worker is put
 * back.  (A preloaded image widens itself too, umcg_setup_cpus().)  The
 * variadic execl*() are built on execve()/execvp() here, as the C library
 * builds them on its internal execve, which no hook sees.
 */
static void *_Atomic umcg_real_execve;
static void *_Atomic umcg_real_execvpe;

/*
 * The real execve() (or, @search, execvpe()) of @file with the mask
 * widened around it; @caller is the hooked call's return address.
 */
static int umcg_exec_widened(const void *caller, bool search, const char *file,
			     char *const argv[], char *const envp[])
{
	struct umcg_widened w;
	int ret;

	umcg_widen(caller, &w);
	if (search)
		ret = UMCG_REAL(execvpe, NULL)(file, argv, envp);
	else
		ret = UMCG_REAL(execve, NULL)(file, argv, envp);
	umcg_narrow(&w);
	return ret;
}

UMCG_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	return umcg_exec_widened(__builtin_return_address(0), false, path, argv, envp);
}

UMCG_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return umcg_exec_widened(__builtin_return_address(0), true, file, argv, envp);
}

UMCG_EXPORT int execv(const char *path, char *const argv[])
{
	return umcg_exec_widened(__builtin_return_address(0), false, path, argv, environ);
}

UMCG_EXPORT int execvp(const char *file, char *const argv[])
{
	return umcg_exec_widened(__builtin_return_address(0), true, file, argv, environ);
}

/*
 * The arguments of execl*() after @arg0, up to and with the NULL, into a
 * new argv on the stack (execle()'s envp is the next one in @ap).
 */
#define UMCG_EXECL_ARGV(argv, arg0, ap)					\
	do {								\
		size_t n_ = 1;						\
		va_list c_;						\
									\
		va_copy(c_, ap);					\
		while (va_arg(c_, char *))				\
			n_++;						\
		va_end(c_);						\
		argv = alloca((n_ + 1) * sizeof(char *));		\
		argv[0] = (char *)(arg0);				\
		for (size_t i_ = 1; i_ <= n_; i_++)			\
			argv[i_] = va_arg(ap, char *);			\
	} while (0)

UMCG_EXPORT int execl(const char *path, const char *arg0, ...)
{
	va_list ap;
	char **argv;

	va_start(ap, arg0);
	UMCG_EXECL_ARGV(argv, arg0, ap);
	va_end(ap);
	return umcg_exec_widened(__builtin_return_address(0), false, path, argv, environ);
}

UMCG_EXPORT int execlp(const char *file, const char *arg0, ...)
{
	va_list ap;
	char **argv;

	va_start(ap, arg0);
	UMCG_EXECL_ARGV(argv, arg0, ap);
	va_end(ap);
	return umcg_exec_widened(__builtin_return_address(0), true, file, argv, environ);
}

UMCG_EXPORT int execle(const char *path, const char *arg0, ...)
{
	char **argv, **envp;
	va_list ap;

	va_start(ap, arg0);
	UMCG_EXECL_ARGV(argv, arg0, ap);
	envp = va_arg(ap, char **);
	va_end(ap);
	return umcg_exec_widened(__builtin_return_address(0), false, path, argv, envp);
}

/* --- blocking calls: announced, so that the core changes hands ---------- */

/*
 * How a hook makes its call (see d. above): UMCG_CALL_PLAIN, it cannot
 * block (not announced); UMCG_CALL_MAY, it may block (announced, left to
 * the monitor); UMCG_CALL_NOW, it will block (the core is given away
 * first); UMCG_CALL_DONE, a try that does not wait already gave the result.
 */
#define UMCG_CALL_PLAIN	(-1)
#define UMCG_CALL_MAY	0
#define UMCG_CALL_NOW	((int)UMCG_BLOCKING_NOW)
#define UMCG_CALL_DONE	(-2)

/*
 * Inside a hook: make @try, a call that does not wait, into umcg_ret; the
 * call will block if @waits (an expression of umcg_ret), else @try's
 * result is the hook's.
 */
#define UMCG_TRY(try, waits) \
	((umcg_ret = (try)), (waits) ? UMCG_CALL_NOW : UMCG_CALL_DONE)

static bool umcg_call_enter(int how)
{
	int saved = errno;
	bool entered;

	if (how == UMCG_CALL_PLAIN)
		return false;
	umcg_in_lib++;
	entered = umcg_blocking_enter((unsigned int)how) == 0;
	umcg_in_lib--;
	errno = saved;
	return entered;
}

static void umcg_call_leave(bool entered)
{
	int saved = errno;

	if (!entered)
		return;
	umcg_in_lib++;
	umcg_blocking_leave();
	umcg_in_lib--;
	errno = saved;
}

/*
 * The hook of @name: unless it passes straight through, @how (an
 * expression of the parameters, UMCG_CALL_*) says how the call goes.
 */
#define UMCG_HOOK(type, name, version, params, args, how)			\
	static void *_Atomic umcg_real_##name;					\
	UMCG_EXPORT type name params						\
	{									\
		__typeof__(&name) umcg_fn = UMCG_REAL(name, version);		\
		int umcg_errno = errno, umcg_how;				\
		type umcg_ret = 0;						\
		bool umcg_in;							\
										\
		if (!umcg_hook_active(__builtin_return_address(0)))		\
			return umcg_fn args;					\
		umcg_how = umcg_user_backend ? (how) : UMCG_CALL_MAY;		\
		if (umcg_how == UMCG_CALL_DONE)					\
			return umcg_ret;					\
		errno = umcg_errno;						\
		umcg_in = umcg_call_enter(umcg_how);				\
		umcg_ret = umcg_fn args;					\
		umcg_call_leave(umcg_in);					\
		return umcg_ret;						\
	}

static void *_Atomic umcg_real_poll;
static void *_Atomic umcg_real_pselect;
static void *_Atomic umcg_real_waitpid;

/*
 * A read, recv or accept of @fd: it will block if poll(2) finds nothing to
 * read and @fd is not O_NONBLOCK (then it cannot block).  When poll finds
 * something, or cannot tell, it may still block (another thread may take
 * the data first): announced, left to the monitor.
 */
static int umcg_fd_how(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int fl;

	if (UMCG_REAL(poll, NULL)(&p, 1, 0) != 0)
		return UMCG_CALL_MAY;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return UMCG_CALL_MAY;
	return fl & O_NONBLOCK ? UMCG_CALL_PLAIN : UMCG_CALL_NOW;
}

static int umcg_recv_how(int fd, int flags)
{
	return flags & MSG_DONTWAIT ? UMCG_CALL_PLAIN : umcg_fd_how(fd);
}

static int umcg_send_how(int flags)
{
	return flags & MSG_DONTWAIT ? UMCG_CALL_PLAIN : UMCG_CALL_MAY;
}

static bool umcg_ts_zero(const struct timespec *ts)
{
	return !ts || (!ts->tv_sec && !ts->tv_nsec);
}

static const struct timespec umcg_no_wait;

/*
 * select(2) and pselect(2) with a timeout that is not zero: the same sets
 * polled without waiting first, on copies (the call overwrites them).  The
 * kernel reads whole longs of each set, as many as @n needs.
 */
static int umcg_select_how(int *ret, int n, fd_set *r, fd_set *w, fd_set *e,
			   const __sigset_t *mask)
{
	fd_set *in[3] = { r, w, e }, copy[3], *out[3];
	size_t bytes = (n + 8 * sizeof(long) - 1) / (8 * sizeof(long)) * sizeof(long);

	if (n < 0 || n > FD_SETSIZE)
		return UMCG_CALL_MAY;
	for (int i = 0; i < 3; i++) {
		out[i] = in[i] ? &copy[i] : NULL;
		if (in[i])
			memcpy(&copy[i], in[i], bytes);
	}
	*ret = UMCG_REAL(pselect, NULL)(n, out[0], out[1], out[2], &umcg_no_wait, mask);
	if (*ret == 0)
		return UMCG_CALL_NOW;
	for (int i = 0; *ret > 0 && i < 3; i++)
		if (in[i])
			memcpy(in[i], &copy[i], bytes);
	return UMCG_CALL_DONE;
}

UMCG_HOOK(ssize_t, read, NULL, (int fd, void *buf, size_t n), (fd, buf, n), umcg_fd_how(fd))
UMCG_HOOK(ssize_t, readv, NULL, (int fd, const struct iovec *iov, int n), (fd, iov, n),
	  umcg_fd_how(fd))
UMCG_HOOK(ssize_t, write, NULL, (int fd, const void *buf, size_t n), (fd, buf, n),
	  UMCG_CALL_MAY)
UMCG_HOOK(ssize_t, writev, NULL, (int fd, const struct iovec *iov, int n), (fd, iov, n),
	  UMCG_CALL_MAY)
UMCG_HOOK(ssize_t, recv, NULL, (int fd, void *buf, size_t n, int flags),
	  (fd, buf, n, flags), umcg_recv_how(fd, flags))
UMCG_HOOK(ssize_t, recvfrom, NULL,
	  (int fd, void *__restrict buf, size_t n, int flags, __SOCKADDR_ARG addr,
	   socklen_t *__restrict len),
	  (fd, buf, n, flags, addr, len), umcg_recv_how(fd, flags))
UMCG_HOOK(ssize_t, recvmsg, NULL, (int fd, struct msghdr *msg, int flags),
	  (fd, msg, flags), umcg_recv_how(fd, flags))
UMCG_HOOK(ssize_t, send, NULL, (int fd, const void *buf, size_t n, int flags),
	  (fd, buf, n, flags), umcg_send_how(flags))
UMCG_HOOK(ssize_t, sendto, NULL,
	  (int fd, const void *buf, size_t n, int flags, __CONST_SOCKADDR_ARG addr,
	   socklen_t len),
	  (fd, buf, n, flags, addr, len), umcg_send_how(flags))
UMCG_HOOK(ssize_t, sendmsg, NULL, (int fd, const struct msghdr *msg, int flags),
	  (fd, msg, flags), umcg_send_how(flags))
UMCG_HOOK(int, accept, NULL, (int fd, __SOCKADDR_ARG addr, socklen_t *__restrict len),
	  (fd, addr, len), umcg_fd_how(fd))
UMCG_HOOK(int, accept4, NULL,
	  (int fd, __SOCKADDR_ARG addr, socklen_t *__restrict len, int flags),
	  (fd, addr, len, flags), umcg_fd_how(fd))
UMCG_HOOK(int, connect, NULL, (int fd, __CONST_SOCKADDR_ARG addr, socklen_t len),
	  (fd, addr, len), UMCG_CALL_MAY)
UMCG_HOOK(int, poll, NULL, (struct pollfd *fds, nfds_t n, int timeout), (fds, n, timeout),
	  !timeout ? UMCG_CALL_PLAIN : UMCG_TRY(umcg_fn(fds, n, 0), umcg_ret == 0))
UMCG_HOOK(int, ppoll, NULL,
	  (struct pollfd *fds, nfds_t n, const struct timespec *timeout,
	   const __sigset_t *mask),
	  (fds, n, timeout, mask),
	  timeout && umcg_ts_zero(timeout) ? UMCG_CALL_PLAIN :
	  UMCG_TRY(umcg_fn(fds, n, &umcg_no_wait, mask), umcg_ret == 0))
UMCG_HOOK(int, select, NULL,
	  (int n, fd_set *__restrict r, fd_set *__restrict w, fd_set *__restrict e,
	   struct timeval *__restrict timeout),
	  (n, r, w, e, timeout),
	  timeout && !timeout->tv_sec && !timeout->tv_usec ? UMCG_CALL_PLAIN :
	  umcg_select_how(&umcg_ret, n, r, w, e, NULL))
UMCG_HOOK(int, pselect, NULL,
	  (int n, fd_set *__restrict r, fd_set *__restrict w, fd_set *__restrict e,
	   const struct timespec *__restrict timeout, const __sigset_t *__restrict mask),
	  (n, r, w, e, timeout, mask),
	  timeout && umcg_ts_zero(timeout) ? UMCG_CALL_PLAIN :
	  umcg_select_how(&umcg_ret, n, r, w, e, mask))
UMCG_HOOK(int, epoll_wait, NULL,
	  (int epfd, struct epoll_event *ev, int max, int timeout), (epfd, ev, max, timeout),
	  !timeout ? UMCG_CALL_PLAIN : UMCG_TRY(umcg_fn(epfd, ev, max, 0), umcg_ret == 0))
UMCG_HOOK(int, epoll_pwait, NULL,
	  (int epfd, struct epoll_event *ev, int max, int timeout, const __sigset_t *mask),
	  (epfd, ev, max, timeout, mask),
	  !timeout ? UMCG_CALL_PLAIN : UMCG_TRY(umcg_fn(epfd, ev, max, 0, mask), umcg_ret == 0))
UMCG_HOOK(int, nanosleep, NULL, (const struct timespec *req, struct timespec *rem),
	  (req, rem), umcg_ts_zero(req) ? UMCG_CALL_PLAIN : UMCG_CALL_NOW)
UMCG_HOOK(int, clock_nanosleep, NULL,
	  (clockid_t clk, int flags, const struct timespec *req, struct timespec *rem),
	  (clk, flags, req, rem),
	  !(flags & TIMER_ABSTIME) && umcg_ts_zero(req) ? UMCG_CALL_PLAIN : UMCG_CALL_NOW)
UMCG_HOOK(int, usleep, NULL, (__useconds_t us), (us), us ? UMCG_CALL_NOW : UMCG_CALL_PLAIN)
UMCG_HOOK(unsigned int, sleep, NULL, (unsigned int s), (s),
	  s ? UMCG_CALL_NOW : UMCG_CALL_PLAIN)
UMCG_HOOK(int, pthread_mutex_lock, NULL, (pthread_mutex_t *m), (m),
	  UMCG_TRY(pthread_mutex_trylock(m), umcg_ret == EBUSY))
UMCG_HOOK(int, pthread_mutex_timedlock, NULL,
	  (pthread_mutex_t *__restrict m, const struct timespec *__restrict t), (m, t),
	  UMCG_TRY(pthread_mutex_trylock(m), umcg_ret == EBUSY))
UMCG_HOOK(int, pthread_cond_wait, "GLIBC_2.3.2",
	  (pthread_cond_t *__restrict c, pthread_mutex_t *__restrict m), (c, m),
	  UMCG_CALL_NOW)
UMCG_HOOK(int, pthread_cond_timedwait, "GLIBC_2.3.2",
	  (pthread_cond_t *__restrict c, pthread_mutex_t *__restrict m,
	   const struct timespec *__restrict t),
	  (c, m, t), UMCG_CALL_NOW)
UMCG_HOOK(int, pthread_cond_clockwait, NULL,
	  (pthread_cond_t *__restrict c, pthread_mutex_t *__restrict m, clockid_t clk,
	   const struct timespec *__restrict t),
	  (c, m, clk, t), UMCG_CALL_NOW)
UMCG_HOOK(int, pthread_rwlock_rdlock, NULL, (pthread_rwlock_t *l), (l),
	  UMCG_TRY(pthread_rwlock_tryrdlock(l), umcg_ret == EBUSY))
UMCG_HOOK(int, pthread_rwlock_wrlock, NULL, (pthread_rwlock_t *l), (l),
	  UMCG_TRY(pthread_rwlock_trywrlock(l), umcg_ret == EBUSY))
UMCG_HOOK(int, pthread_join, NULL, (pthread_t t, void **ret), (t, ret),
	  UMCG_TRY(pthread_tryjoin_np(t, ret), umcg_ret == EBUSY))
UMCG_HOOK(int, sem_wait, NULL, (sem_t *s), (s),
	  UMCG_TRY(sem_trywait(s), umcg_ret < 0 && errno == EAGAIN))
UMCG_HOOK(int, sem_timedwait, NULL,
	  (sem_t *__restrict s, const struct timespec *__restrict t), (s, t),
	  UMCG_TRY(sem_trywait(s), umcg_ret < 0 && errno == EAGAIN))
UMCG_HOOK(pid_t, waitpid, NULL, (pid_t pid, int *status, int options),
	  (pid, status, options),
	  options & WNOHANG ? UMCG_CALL_PLAIN :
	  UMCG_TRY(umcg_fn(pid, status, options | WNOHANG), umcg_ret == 0))
UMCG_HOOK(pid_t, wait, NULL, (int *status), (status),
	  UMCG_TRY(UMCG_REAL(waitpid, NULL)(-1, status, WNOHANG), umcg_ret == 0))

/*
 * The fortified variants (-D_FORTIFY_SOURCE with a known buffer size) that
 * can block; glibc declares them only inside its fortify headers.
 */
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *__restrict buf, size_t n, size_t buflen, int flags,
		       __SOCKADDR_ARG addr, socklen_t *__restrict len);
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t fdslen);
int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *timeout,
		const __sigset_t *mask, size_t fdslen);

UMCG_HOOK(ssize_t, __read_chk, NULL, (int fd, void *buf, size_t n, size_t buflen),
	  (fd, buf, n, buflen), umcg_fd_how(fd))
UMCG_HOOK(ssize_t, __recv_chk, NULL,
	  (int fd, void *buf, size_t n, size_t buflen, int flags),
	  (fd, buf, n, buflen, flags), umcg_recv_how(fd, flags))
UMCG_HOOK(ssize_t, __recvfrom_chk, NULL,
	  (int fd, void *__restrict buf, size_t n, size_t buflen, int flags,
	   __SOCKADDR_ARG addr, socklen_t *__restrict len),
	  (fd, buf, n, buflen, flags, addr, len), umcg_recv_how(fd, flags))
UMCG_HOOK(int, __poll_chk, NULL, (struct pollfd *fds, nfds_t n, int timeout, size_t len),
	  (fds, n, timeout, len),
	  !timeout ? UMCG_CALL_PLAIN : UMCG_TRY(umcg_fn(fds, n, 0, len), umcg_ret == 0))
UMCG_HOOK(int, __ppoll_chk, NULL,
	  (struct pollfd *fds, nfds_t n, const struct timespec *timeout,
	   const __sigset_t *mask, size_t len),
	  (fds, n, timeout, mask, len),
	  timeout && umcg_ts_zero(timeout) ? UMCG_CALL_PLAIN :
	  UMCG_TRY(umcg_fn(fds, n, &umcg_no_wait, mask, len), umcg_ret == 0))

/* --- setup and teardown ------------------------------------------------- */

/* dl_iterate_phdr() callback: the object mapping @data (&umcg_init). */
static int umcg_find_lib(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t target = (uintptr_t)data;
	bool found = false;

	for (int i = 0; i < info->dlpi_phnum && !found; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		found = ph->p_type == PT_LOAD && target >= lo && target < lo + ph->p_memsz;
	}
	if (!found)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) ||
		    umcg_nr_lib_ranges == UMCG_MAX_RANGES)
			continue;
		umcg_lib_ranges[umcg_nr_lib_ranges].lo = lo;
		umcg_lib_ranges[umcg_nr_lib_ranges].hi = lo + ph->p_memsz;
		umcg_nr_lib_ranges++;
	}
	return 1;
}

/* $@name as a number in [@min, @max]; @dfl when unset or empty. */
static uint64_t umcg_env_u64(const char *name, uint64_t min, uint64_t max, uint64_t dfl)
{
	const char *s = getenv(name);
	uint64_t v;

	if (!s || !*s)
		return dfl;
	if (umcg_run_parse_u64(s, min, max, &v))
		umcg_die(2, "bad %s='%s': expected a whole number from %llu to %llu", name, s,
			 (unsigned long long)min, (unsigned long long)max);
	return v;
}

/*
 * The mask to run on: $UMCG_RUN_CPUS (the mask the first managed process
 * had), when ours is a part of it: a program executed by a worker itself
 * (a shell's last command) inherits that worker's one CPU.  The first
 * process records its own mask there.
 */
static void umcg_setup_cpus(void)
{
	__typeof__(&sched_getaffinity) get = UMCG_REAL(sched_getaffinity, NULL);
	const char *s = getenv(UMCG_RUN_ENV_CPUS);
	cpu_set_t cur, allowed, both;
	char buf[1024];

	if (get(0, sizeof(cur), &cur))
		return;
	if (s && *s) {
		if (umcg_run_parse_cpus(s, &allowed))
			umcg_die(2, "bad %s='%s': expected a CPU list such as 0-3,6",
				 UMCG_RUN_ENV_CPUS, s);
		CPU_AND(&both, &cur, &allowed);
		if (CPU_EQUAL(&both, &cur) && !CPU_EQUAL(&cur, &allowed) &&
		    !UMCG_REAL(sched_setaffinity, NULL)(0, sizeof(allowed), &allowed))
			get(0, sizeof(cur), &cur);
	} else if (!umcg_run_format_cpus(&cur, buf, sizeof(buf))) {
		setenv(UMCG_RUN_ENV_CPUS, buf, 1);
	}
	umcg_initial_cpus = cur;
	umcg_have_initial_cpus = true;
}

/*
 * The group's CPUs, as libumcg chooses them (umcg_pick_cpus(): the first
 * @cores of the mask umcg_init() runs with, all for 0).  0 or -errno.
 */
static int umcg_setup_group_cpus(unsigned int cores)
{
	unsigned int n = 0, avail = (unsigned int)CPU_COUNT(&umcg_initial_cpus);

	if (!umcg_have_initial_cpus)
		return -ENODATA;
	if (!cores || cores > avail)
		cores = avail;
	umcg_core_cpu = calloc(cores ? cores : 1, sizeof(*umcg_core_cpu));
	if (!umcg_core_cpu)
		return -ENOMEM;
	CPU_ZERO(&umcg_group_cpus);
	for (int c = 0; c < CPU_SETSIZE && n < cores; c++) {
		if (!CPU_ISSET(c, &umcg_initial_cpus))
			continue;
		CPU_SET(c, &umcg_group_cpus);
		umcg_core_cpu[n++] = c;
	}
	umcg_nr_core_cpus = n;
	return 0;
}

/*
 * A forked child has no group: it runs unmanaged, with the process's
 * first mask and, if the worker that forked was in sched_ext (scx), under
 * the normal scheduler.
 */
static void umcg_atfork_child(void)
{
	struct sched_param sp = { 0 };

	atomic_store(&umcg_managed, false);
	umcg_self_ent.tid = 0;
	if (umcg_have_initial_cpus)
		UMCG_REAL(sched_setaffinity, NULL)(0, sizeof(umcg_initial_cpus),
						   &umcg_initial_cpus);
	if ((sched_getscheduler(0) & ~SCHED_RESET_ON_FORK) == SCHED_EXT)
		sched_setscheduler(0, SCHED_OTHER, &sp);
}

__attribute__((constructor)) static void umcg_preload_init(void)
{
	struct umcg_config cfg = {
		.size = sizeof(cfg),
		.flags = UMCG_CONFIG_ATTACH_CALLER,
	};
	const char *policy = getenv(UMCG_RUN_ENV_POLICY);
	int sig, ret;

	cfg.nr_cores = umcg_env_u64(UMCG_RUN_ENV_CORES, 0, CPU_SETSIZE, 0);
	cfg.time_slice_ns = umcg_env_u64(UMCG_RUN_ENV_TIME_SLICE_US, 0, UMCG_RUN_US_MAX, 0) *
			    1000;
	cfg.blocked_ns = umcg_env_u64(UMCG_RUN_ENV_BLOCKED_US, 0, UMCG_RUN_US_MAX, 0) * 1000;
	if (policy && *policy) {
		cfg.policy = umcg_policy_find(policy);
		if (!cfg.policy)
			umcg_die(2, "bad %s='%s': no such policy (steal, fifo, pinned)",
				 UMCG_RUN_ENV_POLICY, policy);
	}
	if (umcg_run_dump_signal(&sig))
		umcg_die(2, "bad %s='%s': expected a signal name or number, or none (default "
			 UMCG_RUN_DUMP_SIGNAL_DFL_NAME ")",
			 UMCG_RUN_ENV_DUMP_SIGNAL, getenv(UMCG_RUN_ENV_DUMP_SIGNAL));

	umcg_setup_cpus();
	dl_iterate_phdr(umcg_find_lib, (void *)(uintptr_t)&umcg_init);
	if (!umcg_nr_lib_ranges)
		umcg_die(1, "cannot find libumcg's code in this process");
	if (pthread_key_create(&umcg_worker_key, umcg_worker_key_dtor) ||
	    pthread_atfork(NULL, NULL, umcg_atfork_child))
		umcg_die(1, "out of memory");

	/* The group is not up: the servers and the monitor stay plain. */
	umcg_in_lib++;
	ret = umcg_init(&cfg);
	umcg_in_lib--;
	if (ret == -EBUSY)
		umcg_die(1, "this program sets up its own libumcg group; run it without umcg-run");
	if (ret)
		umcg_die(1, "cannot set up the group (%s cores, backend %s): %s",
			 getenv(UMCG_RUN_ENV_CORES) ? getenv(UMCG_RUN_ENV_CORES) : "all",
			 getenv(UMCG_RUN_ENV_BACKEND) ? getenv(UMCG_RUN_ENV_BACKEND) : "auto",
			 strerror(-ret));
	pthread_setspecific(umcg_worker_key, &umcg_worker_key);
	umcg_worker_add();
	ret = umcg_setup_group_cpus(cfg.nr_cores);
	if (ret)
		umcg_die(1, "cannot record the group's CPUs: %s", strerror(-ret));
	umcg_user_backend = !strcmp(umcg_backend_name(), "user");
	ret = umcg_dump_on_signal(sig);
	if (ret)
		umcg_die(1, "cannot dump on signal %d: %s", sig, strerror(-ret));
	atomic_store(&umcg_managed, true);
}

static void *umcg_fini_main(void *unused)
{
	umcg_fini();
	return NULL;
}

/*
 * umcg_fini() runs on a plain helper thread: called by the exiting thread
 * itself, it would first detach that thread, which waits for a core when
 * the monitor took its core away (it returned from a blocking call not
 * interposed here, such as stdio's), and with a worker holding the only
 * core in a loop that never blocks, exit() would wait forever.  From a
 * plain thread it waits for nothing: every worker, the exiting one too, is
 * released and runs on as a plain thread until the process is gone.
 */
__attribute__((destructor)) static void umcg_preload_fini(void)
{
	sigset_t all, old;
	pthread_t helper;
	int ret;

	if (!atomic_exchange(&umcg_managed, false))
		return;
	umcg_in_lib++;
	/* A thread of ours: the program's signals are not for it. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = UMCG_REAL(pthread_create, NULL)(&helper, NULL, umcg_fini_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret == 0)
		UMCG_REAL(pthread_join, NULL)(helper, NULL);
	else
		umcg_fini();
	umcg_in_lib--;
}
