// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * futex_hash.c - keep the process's private futex hash as large as the
 * group's waiters need.
 *
 * A parked or queued worker sleeps on a futex of its own (its state word,
 * on the user and scx backends), so a group with N workers has up to N
 * futex waiters at once.  Since Linux 6.16 a process's private futexes
 * hash into a table of its own, sized by the kernel for the CPUs it runs
 * on (4 buckets per thread, up to the number of online CPUs, at least 16:
 * 16 buckets on two CPUs), and a wake walks its bucket: with 100,000
 * parked workers each unpark walked some 6,000 waiters, and releasing and
 * joining the group was O(N^2) (scale: 364 joins/s at N = 100,000 against
 * 34,000/s at 3,000).  So when the group's live workers pass the hash's
 * size we ask for a table of the next power of two at or above them
 * (prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_SET_SLOTS)): one bucket per worker,
 * 64 bytes each, never shrunk, at most UMCG_FUTEX_HASH_MAX.  Kernels
 * without private hashes (6.12) use the machine-wide table and refuse the
 * call, and so does a process that switched to that table: then we stop
 * asking.
 *
 * Any thread may call umcg_futex_hash_fit() concurrently: one resizes at a
 * time (@futex_resizing), the others go on; g->futex_grow_at is the live
 * count that makes the next one resize (a threshold, not a copy of the
 * kernel's size, which GET_SLOTS reads at each resize).
 */
#include <errno.h>
#include <stdint.h>
#include <sys/prctl.h>

#include "internal.h"

#ifndef PR_FUTEX_HASH
#define PR_FUTEX_HASH			78
#define PR_FUTEX_HASH_SET_SLOTS		1
#define PR_FUTEX_HASH_GET_SLOTS		2
#endif

#define UMCG_FUTEX_HASH_MAX	(1U << 20)

void umcg_futex_hash_fit(struct umcg_group *g, uint64_t live)
{
	uint64_t want = UMCG_FUTEX_HASH_FIRST;
	int cur;

	if (live < atomic_load_explicit(&g->futex_grow_at, memory_order_relaxed) ||
	    atomic_exchange(&g->futex_resizing, true))
		return;
	while (want < live && want < UMCG_FUTEX_HASH_MAX)
		want <<= 1;
	cur = prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_GET_SLOTS, 0, 0, 0);
	if (cur <= 0) {
		/* No private hash here, or the process chose the global one. */
		atomic_store(&g->futex_grow_at, UINT64_MAX);
	} else if ((uint64_t)cur >= want ||
		   !prctl(PR_FUTEX_HASH, PR_FUTEX_HASH_SET_SLOTS, want, 0, 0) ||
		   errno == ENOMEM) {
		/* Big enough, made so, or no memory for more now: next size. */
		atomic_store(&g->futex_grow_at,
			     want >= UMCG_FUTEX_HASH_MAX ? UINT64_MAX : want + 1);
	} else {
		atomic_store(&g->futex_grow_at, UINT64_MAX);
	}
	atomic_store(&g->futex_resizing, false);
}
