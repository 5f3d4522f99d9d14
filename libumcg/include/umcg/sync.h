/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * umcg/sync.h - synchronisation that knows about user scheduling.
 *
 * A worker that has to wait here parks (umcg_park()): its core goes to the
 * next runnable worker at once, instead of sitting in a futex until the
 * backend notices the block.  Every primitive is written on the public API
 * of umcg.h only (umcg_self, umcg_park*, umcg_unpark, umcg_switch_to,
 * umcg_yield), so it behaves the same on every backend.  A thread that is
 * not a worker (umcg_self() == NULL, or a worker released by umcg_fini())
 * may use everything as well: it waits on a futex instead of parking.
 *
 *   umcg_mutex_t       mutual exclusion, FIFO hand-off to waiters
 *   umcg_cond_t        condition variable, used with umcg_mutex_t
 *   umcg_chan_t        bounded channel with close (Go / Quasar style)
 *   umcg_completion    one-shot event carrying an int64_t result
 *   umcg_async_call()  start a callback-based operation, park until done
 *   umcg_io_*()        read/write/accept/connect that park the worker while
 *                      the fd is not ready (one epoll poller thread)
 *
 * Every call returns 0 (or a documented non-negative value) or a negative
 * errno, and none changes errno.  Bad arguments (NULL, an object that was
 * never initialised or was destroyed) give -EINVAL.
 *
 * Common rules:
 *  - An object may be initialised, destroyed or freed only when no call on
 *    it is in progress and none can start.  A waiter that returned no
 *    longer touches the object, and a waker touches it only until its own
 *    call returns, so "the last user frees" is safe once every call on the
 *    object has returned.
 *  - A waiting worker may return from umcg_park() spuriously or keep a
 *    stale permit: the primitives here loop until their condition holds,
 *    and a permit they leave behind makes at most one later umcg_park()
 *    return early, which umcg.h allows anyway.  No primitive here loses a
 *    wake-up or an unpark of the caller's own.
 *  - Nothing here is async-signal-safe: do not call it from a signal
 *    handler.
 *  - Memory ordering: everything a thread wrote before it releases
 *    (unlock, signal, send, complete) is visible to the thread that
 *    acquires (lock, wake from wait, recv, return from wait).
 *
 * The statically allocated objects (mutex, cond, completion) are opaque
 * storage of fixed size; their layout is private to libumcg and only their
 * size is ABI.
 */
#ifndef UMCG_SYNC_H
#define UMCG_SYNC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include <umcg.h>

#ifdef __cplusplus
extern "C" {
#endif

/* First words of the objects, as the static initialisers set them. */
#define UMCG_MUTEX_MAGIC	0x554d5458U	/* "UMTX" */
#define UMCG_COND_MAGIC		0x55434e44U	/* "UCND" */
#define UMCG_COMPLETION_MAGIC	0x55434d50U	/* "UCMP" */

/* ------------------------------------------------------------------ */
/* Mutex                                                               */
/* ------------------------------------------------------------------ */

/**
 * umcg_mutex_t - a mutual-exclusion lock for workers and plain threads
 *
 * Not recursive, error-checking: the owner is the thread that locked it.
 * Unlock hands the mutex directly to the longest waiter (FIFO, no
 * barging), which then becomes runnable.  A worker that finds the mutex
 * taken parks, so its core runs other workers meanwhile; a plain thread
 * waits on a futex.
 *
 * Synchronisation table:
 *
 *                 init  destroy  lock  trylock  unlock
 *   init           X      X       X      X        X
 *   destroy        X      X       X      X        X
 *   lock           X      X       -      -        -
 *   trylock        X      X       -      -        -
 *   unlock         X      X       -      -        -
 *
 *   X: must not run concurrently (the caller excludes it)
 *   -: may run concurrently, no external synchronisation needed
 *
 * Memory ordering: lock and a successful trylock are acquire operations,
 * unlock is a release; the hand-off to a waiter carries the ordering too.
 *
 * A mutex defined with UMCG_MUTEX_INITIALIZER needs no umcg_mutex_init().
 */
typedef struct umcg_mutex {
	uint32_t __magic;
	uint32_t __opaque32[3];
	uint64_t __opaque64[6];
} umcg_mutex_t;

#define UMCG_MUTEX_INITIALIZER	{ .__magic = UMCG_MUTEX_MAGIC }

/* Sets @m up unlocked.  -EINVAL for NULL. */
int umcg_mutex_init(umcg_mutex_t *m);

/*
 * Invalidates @m (later calls on it give -EINVAL).  -EBUSY if it is locked
 * or has waiters, -EINVAL if it is not an initialised mutex.
 */
int umcg_mutex_destroy(umcg_mutex_t *m);

/*
 * Takes @m, waiting (parking, for a worker) while another thread owns it.
 * -EDEADLK if the caller already owns it.  Never fails otherwise on a
 * valid mutex.
 */
int umcg_mutex_lock(umcg_mutex_t *m);

/* Takes @m if it is free, without waiting; -EBUSY if it is not. */
int umcg_mutex_trylock(umcg_mutex_t *m);

/*
 * Releases @m, handing it to the first waiter if there is one.  -EPERM if
 * the caller does not own it.  Does not wait, and does not give the
 * caller's core away.
 */
int umcg_mutex_unlock(umcg_mutex_t *m);

/* ------------------------------------------------------------------ */
/* Condition variable                                                  */
/* ------------------------------------------------------------------ */

/**
 * umcg_cond_t - a condition variable for umcg_mutex_t
 *
 * Waiters are woken in FIFO order.  A wait returns 0 only for a signal or
 * broadcast (a signal that races with a timeout counts as the signal, and
 * is never lost), but as with pthreads check the predicate in a loop:
 * another thread may take the mutex first and change it again.
 *
 * Synchronisation table:
 *
 *                 init  destroy  wait  timedwait  signal  broadcast
 *   init           X      X       X       X         X        X
 *   destroy        X      X       X       X         X        X
 *   wait           X      X       -       -         -        -
 *   timedwait      X      X       -       -         -        -
 *   signal         X      X       -       -         -        -
 *   broadcast      X      X       -       -         -        -
 *
 * signal and broadcast may be called with or without the mutex held; a
 * waiter is registered before it releases the mutex, so a signal issued
 * under the mutex after the predicate changed is never lost.  Memory
 * ordering: the mutex provides it.
 *
 * A cond defined with UMCG_COND_INITIALIZER needs no umcg_cond_init().
 */
typedef struct umcg_cond {
	uint32_t __magic;
	uint32_t __opaque32[3];
	uint64_t __opaque64[6];
} umcg_cond_t;

#define UMCG_COND_INITIALIZER	{ .__magic = UMCG_COND_MAGIC }

/* Sets @c up.  -EINVAL for NULL. */
int umcg_cond_init(umcg_cond_t *c);

/* Invalidates @c.  -EBUSY while a thread waits on it. */
int umcg_cond_destroy(umcg_cond_t *c);

/*
 * Releases @m (which the caller must own: else -EPERM), waits until
 * signalled, then takes @m again before returning 0.
 */
int umcg_cond_wait(umcg_cond_t *c, umcg_mutex_t *m);

/*
 * umcg_cond_wait() for at most @ns nanoseconds (relative, CLOCK_MONOTONIC):
 * -ETIMEDOUT if no signal came in time.  @m is held again on every return
 * but -EINVAL and -EPERM.
 */
int umcg_cond_timedwait(umcg_cond_t *c, umcg_mutex_t *m, uint64_t ns);

/* Wakes the longest waiter of @c, if any. */
int umcg_cond_signal(umcg_cond_t *c);

/* Wakes every waiter of @c. */
int umcg_cond_broadcast(umcg_cond_t *c);

/* ------------------------------------------------------------------ */
/* Bounded channel                                                     */
/* ------------------------------------------------------------------ */

/**
 * umcg_chan_t - a bounded FIFO channel of fixed-size elements, with close
 *
 * @capacity elements are buffered; capacity 0 is a rendezvous channel, in
 * which every send waits for its receive.  Elements are copied in and out
 * (@elem_size bytes each).  Senders and receivers blocked on the channel
 * are served in FIFO order, and elements come out in the order they went
 * in.
 *
 * Direct hand-off: when a sender finds a receiver waiting (or a receive
 * finds a sender waiting on a rendezvous channel), the element goes
 * straight from one to the other; if both are workers, the one that
 * arrived second runs the waiting one on its own core at once with
 * umcg_switch_to() (C4) and becomes runnable itself: the waiting one
 * unparks it, and it continues when the policy picks it again.  The
 * waiting party thus runs without a trip through the policy or a server;
 * in a strict ping-pong this costs one core switch more per message than
 * a plain wake-up would (the second party was about to wait anyway).  If
 * the switch is refused (-EBUSY: the waiting one is still running), it is
 * woken the plain way.
 *
 * Close: umcg_chan_close() stops the channel.  Senders then get -EPIPE
 * (blocked senders are released with -EPIPE, their element not sent);
 * receivers get the buffered elements first, then -EPIPE (blocked
 * receivers are released with -EPIPE).
 *
 * Synchronisation table:
 *
 *              create destroy send try_send recv try_recv close
 *   create       -      X      X     X       X     X        X
 *   destroy      X      X      X     X       X     X        X
 *   send         X      X      -     -       -     -        -
 *   try_send     X      X      -     -       -     -        -
 *   recv         X      X      -     -       -     -        -
 *   try_recv     X      X      -     -       -     -        -
 *   close        X      X      -     -       -     -        -
 *
 * (create of *another* channel is of course independent.)  Memory
 * ordering: a send happens-before the receive that gets its element; a
 * close happens-before every -EPIPE it causes.
 */
typedef struct umcg_chan umcg_chan_t;

/*
 * Creates a channel in *@c.  -EINVAL for a NULL @c or when @capacity *
 * @elem_size overflows, -ENOMEM.  @elem_size may be 0 (a channel of
 * events, whose elem arguments may then be NULL).
 */
int umcg_chan_create(umcg_chan_t **c, size_t capacity, size_t elem_size);

/*
 * Frees @c.  -EBUSY while a thread is blocked on it (close it first, and
 * wait for them to return).  Buffered elements are dropped.
 */
int umcg_chan_destroy(umcg_chan_t *c);

/*
 * Copies *@elem into the channel, waiting while it is full (or, capacity
 * 0, until a receiver takes it).  -EPIPE if the channel is or gets closed
 * (then the element was not sent).  _try_send: -EAGAIN instead of waiting.
 */
int umcg_chan_send(umcg_chan_t *c, const void *elem);
int umcg_chan_try_send(umcg_chan_t *c, const void *elem);

/*
 * Takes the oldest element into *@elem, waiting while the channel is
 * empty.  -EPIPE once the channel is closed and drained.  _try_recv:
 * -EAGAIN instead of waiting.
 */
int umcg_chan_recv(umcg_chan_t *c, void *elem);
int umcg_chan_try_recv(umcg_chan_t *c, void *elem);

/* Closes @c and releases its blocked threads.  -EPIPE if already closed. */
int umcg_chan_close(umcg_chan_t *c);

/* ------------------------------------------------------------------ */
/* Completion and the async-to-blocking adapter                        */
/* ------------------------------------------------------------------ */

/**
 * struct umcg_completion - a one-shot event carrying a result
 *
 * Completed once, from any thread: a worker, a plain thread, a callback
 * thread of some library (not from a signal handler).  Any number of
 * threads may wait for it; all of them are released by the completion,
 * and a wait that starts after it returns at once.
 *
 * Synchronisation table:
 *
 *                   init  complete  wait  wait_timeout
 *   init             X       X       X        X
 *   complete         X       X(1)    -        -
 *   wait             X       -       -        -
 *   wait_timeout     X       -       -        -
 *
 *   (1) concurrent completes are safe: one wins, the others get -EALREADY
 *
 * Lifetime: umcg_completion_complete() does not touch @c after a waiter
 * can have returned, so the usual pattern is safe: the completion lives on
 * the waiter's stack, and the waiter returns (freeing it) as soon as the
 * wait returns.  A completion may be re-initialised after every wait on
 * it has returned.
 *
 * Memory ordering: complete is a release, a wait that returns 0 an
 * acquire.
 */
struct umcg_completion {
	uint32_t __magic;
	uint32_t __opaque32[3];
	uint64_t __opaque64[6];
};

#define UMCG_COMPLETION_INITIALIZER	{ .__magic = UMCG_COMPLETION_MAGIC }

/* Sets @c up, not completed.  -EINVAL for NULL. */
int umcg_completion_init(struct umcg_completion *c);

/*
 * Completes @c with @result and wakes every waiter.  -EALREADY if it was
 * already completed (the first result stays).
 */
int umcg_completion_complete(struct umcg_completion *c, int64_t result);

/*
 * Waits until @c is completed and stores its result in *@result (if
 * @result is not NULL).  A worker parks meanwhile.  _timeout: -ETIMEDOUT
 * after @ns nanoseconds (relative, CLOCK_MONOTONIC).
 */
int umcg_completion_wait(struct umcg_completion *c, int64_t *result);
int umcg_completion_wait_timeout(struct umcg_completion *c, int64_t *result, uint64_t ns);

/*
 * Async-to-blocking (Loom's _AsyncToBlocking): calls @start(@arg, c) with a
 * fresh completion c on the caller's stack, then waits (parks) until c is
 * completed and stores its result in *@result (if not NULL).
 *
 * @start registers a callback-based operation and returns 0 (or any
 * non-negative value) if the operation will call
 * umcg_completion_complete(c, ...) exactly once, from any thread, possibly
 * before @start returns; or a negative errno if it did not start (then c
 * must not be completed later), which umcg_async_call() returns.
 */
int umcg_async_call(int (*start)(void *arg, struct umcg_completion *c), void *arg,
		    int64_t *result);

/* ------------------------------------------------------------------ */
/* Blocking I/O that parks (the Loom model)                            */
/* ------------------------------------------------------------------ */

/*
 * Synchronisation table: every umcg_io_*() call may run concurrently with
 * every other, on the same fd or not, from any thread.  umcg_io_fini()
 * concurrent with waiting calls wakes them; they retry and may start a new
 * poller.  Memory ordering: as for the underlying system calls.
 *
 * Same arguments and results as read(2), write(2), accept(2) and
 * connect(2), but errors come back as -errno.  The fd is switched to
 * O_NONBLOCK (and stays so); the call is tried; while it would block, a
 * worker registers the fd with the process's epoll poller thread
 * (EPOLLONESHOT; the thread is started on first use) and parks, so its
 * core runs others, and the poller unparks it when the fd is ready; then
 * the call is tried again.  A plain thread waits in poll(2) itself.
 *
 * umcg_io_read() / _write() may transfer less than @count, like the libc
 * calls.  umcg_io_connect() returns once the connection is established (or
 * failed: the socket's error).  -EINVAL for a NULL buffer with a non-zero
 * count, or a count above SSIZE_MAX.
 *
 * Any number of threads may wait on the same fd, in either direction.
 * Closing an fd while a thread waits on it is an application bug (as with
 * the libc calls): the waiter may never wake.
 */
ssize_t umcg_io_read(int fd, void *buf, size_t count);
ssize_t umcg_io_write(int fd, const void *buf, size_t count);
int umcg_io_accept(int fd, struct sockaddr *addr, socklen_t *addrlen);
int umcg_io_connect(int fd, const struct sockaddr *addr, socklen_t addrlen);

/*
 * Stops the poller thread (it is also stopped at exit).  Threads still
 * waiting for their fd are woken and try their call again, which may start
 * a new poller.  Always 0 (also when none was running).
 */
int umcg_io_fini(void);

#ifdef __cplusplus
}
#endif

#endif /* UMCG_SYNC_H */
