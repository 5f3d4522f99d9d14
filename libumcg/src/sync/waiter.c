// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * waiter.c - parking a worker, or futex-waiting a plain thread, until a
 * waker says so; the protocol is described in sync_internal.h.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sync_internal.h"

/* A released worker polls its word at least this often (see usync_wait()). */
#define USYNC_FALLBACK_POLL_NS	1000000ULL
#define USYNC_SPINS		64

static __thread char usync_token;

uintptr_t usync_self_token(void)
{
	return (uintptr_t)&usync_token;
}

uint64_t usync_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline void usync_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

int usync_futex_wait(uint32_t *word, uint32_t seen, uint64_t deadline_ns)
{
	struct timespec ts, *tp = NULL;
	int saved = errno, ret = 0;

	if (deadline_ns) {
		ts.tv_sec = deadline_ns / 1000000000ULL;
		ts.tv_nsec = deadline_ns % 1000000000ULL;
		tp = &ts;
	}
	/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline. */
	if (syscall(SYS_futex, word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, seen, tp,
		    NULL, FUTEX_BITSET_MATCH_ANY) < 0)
		ret = -errno;
	errno = saved;
	return ret;
}

void usync_futex_wake(uint32_t *word, int nr)
{
	int saved = errno;

	syscall(SYS_futex, word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, nr, NULL, NULL, 0);
	errno = saved;
}

void usync_relax(void)
{
	int saved = errno;

	if (umcg_self())
		umcg_yield();
	sched_yield();
	errno = saved;
}

void usync_lock_slow(uint32_t *l)
{
	unsigned int spins = 0;

	do {
		while (__atomic_load_n(l, __ATOMIC_RELAXED)) {
			if (++spins < USYNC_SPINS)
				usync_cpu_relax();
			else
				usync_relax();
		}
	} while (__atomic_exchange_n(l, 1, __ATOMIC_ACQUIRE));
}

/*
 * @w is in HANDOFF: the waker may be inside umcg_switch_to(@w's thread).
 * Take the hand-off if the waker is PARKED (then it is done with us and
 * waits to be unparked); true if taken, and @w may go.
 */
static bool usync_take_handoff(struct usync_waiter *w)
{
	uint32_t s = USYNC_HANDOFF, p = USYNC_H_PENDING;
	struct usync_handoff *h;

	/* LOOKING keeps the waker (and so *h) from going while we look. */
	if (!__atomic_compare_exchange_n(&w->state, &s, USYNC_LOOKING, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_ACQUIRE))
		return false;
	h = w->hand;
	if (umcg_thread_state(h->waker) == UMCG_STATE_PARKED &&
	    __atomic_compare_exchange_n(&h->state, &p, USYNC_H_R_TOOK, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		umcg_unpark(h->waker);
		/* The waker may return as soon as it reads this. */
		__atomic_store_n(&h->state, USYNC_H_R_DONE, __ATOMIC_RELEASE);
		return true;
	}
	__atomic_store_n(&w->state, USYNC_HANDOFF, __ATOMIC_RELEASE);
	return false;
}

int usync_wait(struct usync_waiter *w, uint64_t deadline_ns)
{
	for (;;) {
		uint32_t s = __atomic_load_n(&w->state, __ATOMIC_ACQUIRE);
		uint64_t now, until;
		int ret;

		switch (s) {
		case USYNC_WOKEN:
			return 0;
		case USYNC_WAKING:
			/* Claimed: WOKEN follows the waker's unpark shortly. */
			if (!w->thread)
				usync_futex_wait(&w->state, s, 0);
			else
				usync_relax();
			continue;
		case USYNC_HANDOFF:
			if (usync_take_handoff(w))
				return 0;
			usync_relax();
			continue;
		case USYNC_WAITING:
			break;
		default:
			/* LOOKING is ours and never seen here. */
			usync_relax();
			continue;
		}

		now = deadline_ns ? usync_now_ns() : 0;
		if (deadline_ns && now >= deadline_ns)
			return -ETIMEDOUT;
		if (w->thread && !w->futex) {
			if (deadline_ns)
				ret = umcg_park_timeout(deadline_ns - now);
			else
				ret = umcg_park();
			if (ret == 0 || ret == -ETIMEDOUT || ret == -EINTR)
				continue;
			/*
			 * No longer a worker (umcg_fini() released it): a waker
			 * that still unparks instead of futex-waking us is
			 * covered by polling.
			 */
			w->futex = true;
		}
		until = deadline_ns;
		if (w->thread) {
			now = usync_now_ns();
			if (!until || until > now + USYNC_FALLBACK_POLL_NS)
				until = now + USYNC_FALLBACK_POLL_NS;
		}
		usync_futex_wait(&w->state, USYNC_WAITING, until);
	}
}

void usync_wake(struct usync_waiter *w)
{
	umcg_thread_t *t = w->thread;
	int ret = t ? umcg_unpark(t) : -ESRCH;

	__atomic_store_n(&w->state, USYNC_WOKEN, __ATOMIC_RELEASE);
	/* From here on @w may be gone: its address is only a futex key. */
	if (ret < 0)
		usync_futex_wake(&w->state, INT_MAX);
}

void usync_wake_direct(struct usync_waiter *w)
{
	struct usync_handoff h = { .waker = umcg_self(), .state = USYNC_H_PENDING };
	umcg_thread_t *t = w->thread;
	uint32_t p = USYNC_H_PENDING;
	int ret;

	if (!h.waker || !t || t == h.waker) {
		usync_wake(w);
		return;
	}
	w->hand = &h;
	__atomic_store_n(&w->state, USYNC_HANDOFF, __ATOMIC_RELEASE);
	/*
	 * A permit first: @t may be inside umcg_park() but RUNNABLE (the
	 * runtime requeued it, e.g. after taking its core for blocked); the
	 * switch then only finishes that step and @t goes on to park.  With
	 * the permit, that park returns and @t reads HANDOFF.
	 */
	umcg_unpark(t);
	umcg_switch_to(t);
	if (__atomic_compare_exchange_n(&h.state, &p, USYNC_H_S_DONE, false,
					__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		/*
		 * The waiter did not take it (the switch failed with -EBUSY,
		 * or we run again before it looked): the plain protocol.
		 */
		ret = umcg_unpark(t);
		for (;;) {
			uint32_t s = USYNC_HANDOFF;

			/* Acquire: the waiter's look at *h is over before we go. */
			if (__atomic_compare_exchange_n(&w->state, &s, USYNC_WOKEN, false,
							__ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
				break;
			usync_relax();	/* LOOKING: the waiter backs off soon */
		}
		if (ret < 0)
			usync_futex_wake(&w->state, INT_MAX);
		return;
	}
	/* The waiter took it and unparks us: wait until it is done with us. */
	while (__atomic_load_n(&h.state, __ATOMIC_ACQUIRE) != USYNC_H_R_DONE)
		usync_relax();
}

void usync_wake_list(struct cds_list_head *list)
{
	while (!cds_list_empty(list)) {
		struct usync_waiter *w = cds_list_first_entry(list, struct usync_waiter, node);

		/* Unlink before waking: after the wake, @w may be gone. */
		cds_list_del(&w->node);
		usync_wake(w);
	}
}
