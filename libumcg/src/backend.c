// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * backend.c - choosing a backend, and the futex helpers they share.
 *
 * Auto-selection (no name, or "auto") takes the first backend of
 * umcg_backends[] whose probe succeeds: "scx" when our sched_ext
 * scheduler is enabled and this process can open its programs' pins,
 * else "kmod" (/dev/umcg), else "user".  A backend asked for by name
 * (cfg.backend or UMCG_BACKEND) that is not available fails with -ENODEV
 * and says why; auto-selection says nothing about the ones it skipped.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"

/* Best first: auto-selection takes the first whose probe succeeds. */
static const struct umcg_backend_ops *const umcg_backends[] = {
	&umcg_backend_scx,	/* our scheduler loaded, its pins ours to use */
	&umcg_backend_kmod,	/* /dev/umcg with UMCG_FEATURE_BLOCK */
	&umcg_backend_user,
};

int umcg_backend_select(const char *name, const struct umcg_backend_ops **ops)
{
	const char *why = NULL;
	size_t i;

	if (!name || !*name)
		name = getenv("UMCG_BACKEND");
	if (name && (!*name || !strcmp(name, "auto")))
		name = NULL;

	for (i = 0; i < sizeof(umcg_backends) / sizeof(umcg_backends[0]); i++) {
		const struct umcg_backend_ops *b = umcg_backends[i];

		if (name && strcmp(name, b->name))
			continue;
		if (b->probe(&why) == 0) {
			*ops = b;
			return 0;
		}
		if (name) {
			fprintf(stderr, "libumcg: backend \"%s\" is not available: %s\n",
				name, why ? why : "probe failed");
			return -ENODEV;
		}
	}
	/* An unknown name is the caller's mistake: an error, no message. */
	return name ? -EINVAL : -ENODEV;
}

int umcg_futex_wait(_Atomic uint32_t *word, uint32_t seen, uint64_t abs_ns)
{
	struct timespec ts, *tsp = NULL;
	long ret;

	if (abs_ns) {
		ts.tv_sec = abs_ns / 1000000000ULL;
		ts.tv_nsec = abs_ns % 1000000000ULL;
		tsp = &ts;
	}
	/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time. */
	ret = syscall(SYS_futex, word, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG,
		      seen, tsp, NULL, FUTEX_BITSET_MATCH_ANY);
	if (ret == 0 || errno == EAGAIN)
		return 0;
	return -errno;
}

#ifndef SYS_futex_waitv
#define SYS_futex_waitv		449	/* the same number on every architecture */
#endif
#ifndef FUTEX_32
#define FUTEX_32		2	/* struct futex_waitv.flags: a 32-bit word */
#endif

int umcg_futex_wait2(const _Atomic uint32_t *a, uint32_t seen_a,
		     const volatile uint32_t *b, uint32_t seen_b, uint64_t abs_ns)
{
	struct futex_waitv w[2] = {
		{ .val = seen_a, .uaddr = (uintptr_t)a,
		  .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG },
		{ .val = seen_b, .uaddr = (uintptr_t)b,
		  .flags = FUTEX_32 | FUTEX_PRIVATE_FLAG },
	};
	struct timespec ts, *tsp = NULL;

	if (abs_ns) {
		ts.tv_sec = abs_ns / 1000000000ULL;
		ts.tv_nsec = abs_ns % 1000000000ULL;
		tsp = &ts;
	}
	if (syscall(SYS_futex_waitv, w, 2, 0, tsp, CLOCK_MONOTONIC) >= 0 ||
	    errno == EAGAIN)
		return 0;
	return -errno;
}

void umcg_futex_wake(_Atomic uint32_t *word, int nr)
{
	syscall(SYS_futex, word, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, nr, NULL, NULL, 0);
}

int umcg_futex_wait_counted(_Atomic uint32_t *word, _Atomic uint32_t *sleepers,
			    uint32_t seen, uint64_t abs_ns)
{
	int ret;

	atomic_fetch_add(sleepers, 1);
	ret = umcg_futex_wait(word, seen, abs_ns);
	atomic_fetch_sub_explicit(sleepers, 1, memory_order_relaxed);
	return ret;
}

void umcg_futex_wake_counted(_Atomic uint32_t *word, _Atomic uint32_t *sleepers, int nr)
{
	/* A read-modify-write: it reads the count's latest value (backend.h). */
	if (atomic_fetch_add(sleepers, 0))
		umcg_futex_wake(word, nr);
}
