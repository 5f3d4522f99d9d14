// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * preload.c - libumcg-preload.so: an unmodified pthread program, run with
 * this library in LD_PRELOAD (umcg-run does that), has its main thread and
 * every thread it creates scheduled by libumcg as workers of one group.
 *
 * a. Setup.  The constructor reads the settings umcg-run put in the
 *    environment (umcg_run_env.h), calls umcg_init() with
 *    UMCG_CONFIG_ATTACH_CALLER so that the main thread becomes a worker, and
 *    asks for a thread dump on $UMCG_DUMP_SIGNAL (SIGUSR2).  A bad setting
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
 *    back, since the forking worker's mask was narrowed to its core's CPU.
 *    A child that executes a program inherits the environment, so that
 *    program is managed too, in its own group (umcg_setup_cpus()).
 *
 * Only the interposed functions are exported (-fvisibility=hidden).
 */
#undef _FORTIFY_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
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

struct umcg_start {
	void *(*fn)(void *);
	int (*c11_fn)(void *);
	void *arg;
};

static void umcg_thread_attach(void)
{
	if (!atomic_load(&umcg_managed))
		return;
	umcg_in_lib++;
	if (umcg_attach(NULL) == 0)
		pthread_setspecific(umcg_worker_key, &umcg_worker_key);
	umcg_in_lib--;
}

static void umcg_thread_detach(void)
{
	if (!pthread_getspecific(umcg_worker_key))
		return;
	pthread_setspecific(umcg_worker_key, NULL);
	if (!atomic_load(&umcg_managed))
		return;	/* after umcg_fini() or in a forked child: leave it */
	umcg_in_lib++;
	umcg_detach();
	umcg_in_lib--;
}

/* pthread_exit(), thrd_exit() or cancellation of a worker. */
static void umcg_worker_key_dtor(void *unused)
{
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
static void *_Atomic umcg_real_sched_yield;

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
 * The mask to run on: a worker's child inherits a mask narrowed to one CPU;
 * when that is too small for @cores, go back to $UMCG_RUN_CPUS (the mask
 * the first managed process had).  The first process records its own.
 */
static void umcg_setup_cpus(unsigned int cores)
{
	const char *s = getenv(UMCG_RUN_ENV_CPUS);
	cpu_set_t cur, allowed;
	char buf[1024];

	if (sched_getaffinity(0, sizeof(cur), &cur))
		return;
	if (s && *s) {
		if (umcg_run_parse_cpus(s, &allowed))
			umcg_die(2, "bad %s='%s': expected a CPU list such as 0-3,6",
				 UMCG_RUN_ENV_CPUS, s);
		if (cores && (unsigned int)CPU_COUNT(&cur) < cores &&
		    !sched_setaffinity(0, sizeof(allowed), &allowed))
			sched_getaffinity(0, sizeof(cur), &cur);
	} else if (!umcg_run_format_cpus(&cur, buf, sizeof(buf))) {
		setenv(UMCG_RUN_ENV_CPUS, buf, 1);
	}
	umcg_initial_cpus = cur;
	umcg_have_initial_cpus = true;
}

static void umcg_atfork_child(void)
{
	atomic_store(&umcg_managed, false);
	if (umcg_have_initial_cpus)
		sched_setaffinity(0, sizeof(umcg_initial_cpus), &umcg_initial_cpus);
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
		umcg_die(2, "bad %s='%s': expected a signal name or number (default USR2)",
			 UMCG_RUN_ENV_DUMP_SIGNAL, getenv(UMCG_RUN_ENV_DUMP_SIGNAL));

	umcg_setup_cpus(cfg.nr_cores);
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
	pthread_t helper;

	if (!atomic_exchange(&umcg_managed, false))
		return;
	umcg_in_lib++;
	if (UMCG_REAL(pthread_create, NULL)(&helper, NULL, umcg_fini_main, NULL) == 0)
		UMCG_REAL(pthread_join, NULL)(helper, NULL);
	else
		umcg_fini();
	umcg_in_lib--;
}
