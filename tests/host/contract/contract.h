/* SPDX-License-Identifier: GPL-2.0 */
/*
 * contract.h - helpers shared by the host contract tests (tests/host/contract):
 * clocks and busy loops, the group configuration every test starts from
 * (backend "user", or $UMCG_BACKEND: the same programs run in the test VM
 * on "kmod"), the CPU behind each managed core, and bounded waits.
 *
 * Everything here is static inline and keeps no state: each test keeps its
 * own in its fixture or in a struct handed to its workers.
 *
 * Waiting: the main thread of a test is not a worker, so it may sleep
 * (CT_WAIT).  A worker that waits for another worker must give its core
 * away while it waits (CT_WORKER_WAIT yields), or, on one core, the worker
 * it waits for never runs.
 */
#ifndef CONTRACT_H
#define CONTRACT_H

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <umcg.h>
#include <umcg/policy.h>

/* The most cores a test asks for. */
#define CT_MAX_CORES	8

#define CT_MS		1000000ULL
#define CT_US		1000ULL

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
/* Sanitized builds run several times slower: stretch the time bounds. */
#define CT_SLOW		4
#else
#define CT_SLOW		1
#endif

#if defined(__SANITIZE_THREAD__)
/*
 * ThreadSanitizer's runtime sleeps on locks of its own inside atomics and
 * intercepted calls: a worker doing pure user work can look blocked to the
 * monitor for tens of microseconds, and the C1 exception then applies.
 * Only a worker sleeping longer than this is taken as blocked.
 */
#define CT_BLOCKED_NS	(50 * CT_MS)
#else
#define CT_BLOCKED_NS	0		/* the library's default, 50 us */
#endif

static inline uint64_t ct_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* CPU time the calling thread has used. */
static inline uint64_t ct_thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Busy loop for @ns of wall-clock time; never enters the kernel's sleep. */
static inline void ct_spin_ns(uint64_t ns)
{
	uint64_t end = ct_now_ns() + ns;

	while (ct_now_ns() < end)
		;
}

/* Raise *@max to @v. */
static inline void ct_max(_Atomic int *max, int v)
{
	int cur = atomic_load(max);

	while (cur < v && !atomic_compare_exchange_weak(max, &cur, v))
		;
}

/* CPUs in the calling thread's affinity mask. */
static inline int ct_nr_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	return CPU_COUNT(&set);
}

/*
 * The CPU of each of the first @nr managed cores, as umcg_init() chooses
 * them with first_cpu 0: the first @nr CPUs of the caller's affinity mask.
 * Call it from the thread that calls umcg_init().  Returns 0 or -EINVAL.
 */
static inline int ct_core_cpus(int *cpus, unsigned int nr)
{
	unsigned int n = 0;
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set))
		return -EINVAL;
	for (int c = 0; c < CPU_SETSIZE && n < nr; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	return n == nr ? 0 : -EINVAL;
}

/*
 * The backend under test: $UMCG_BACKEND when it names one ("kmod" or "scx"
 * in the test VM, see tests/kernel_backend/), else "user".
 */
static inline const char *ct_backend(void)
{
	const char *b = getenv("UMCG_BACKEND");

	return b && *b && strcmp(b, "auto") ? b : "user";
}

/*
 * Does the kernel see blocking calls (kmod, scx)?  Then a worker that
 * blocks loses its core at once, and one whose call completes waits in
 * the kernel, running no user code, until the policy picks it (C1, C3
 * exact); on "user" both wait for the monitor or the next libumcg call.
 */
static inline bool ct_kernel_backend(void)
{
	return strcmp(ct_backend(), "user") != 0;
}

/* The configuration every contract test starts from: ct_backend(). */
static inline struct umcg_config ct_config(unsigned int nr_cores, const char *policy)
{
	struct umcg_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.size = sizeof(cfg);
	cfg.nr_cores = nr_cores;
	cfg.backend = ct_backend();
	cfg.policy = policy ? umcg_policy_find(policy) : NULL;
	cfg.blocked_ns = CT_BLOCKED_NS;
	return cfg;
}

static inline struct umcg_attr ct_attr(int core)
{
	struct umcg_attr a;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.core = core;
	return a;
}

/*
 * Main thread (not a worker): poll @cond every 100 us for at most @ms
 * milliseconds (stretched in sanitized builds).  Evaluates to @cond's last
 * value.
 */
#define CT_WAIT(cond, ms) ({						\
	uint64_t __dl = ct_now_ns() + (uint64_t)(ms) * CT_SLOW * CT_MS;	\
	bool __ok;							\
	while (!(__ok = !!(cond)) && ct_now_ns() < __dl)		\
		usleep(100);						\
	__ok;								\
})

/* Worker: the same, yielding its core between polls. */
#define CT_WORKER_WAIT(cond, ms) ({					\
	uint64_t __dl = ct_now_ns() + (uint64_t)(ms) * CT_SLOW * CT_MS;	\
	bool __ok;							\
	while (!(__ok = !!(cond)) && ct_now_ns() < __dl)		\
		umcg_yield();						\
	__ok;								\
})

/* Worker: busy-wait for @cond without giving the core away. */
#define CT_SPIN_WAIT(cond, ms) ({					\
	uint64_t __dl = ct_now_ns() + (uint64_t)(ms) * CT_SLOW * CT_MS;	\
	bool __ok;							\
	while (!(__ok = !!(cond)) && ct_now_ns() < __dl)		\
		;							\
	__ok;								\
})

/*
 * Main thread: join @t if it is done within @ms milliseconds; else write
 * a thread dump to stderr (for the log) and return -ETIMEDOUT, leaving @t
 * alone.  A hang then fails one assertion with a dump instead of the whole
 * test timing out.
 */
static inline int ct_join(umcg_thread_t *t, void **ret, unsigned int ms)
{
	if (!CT_WAIT(umcg_thread_state(t) == UMCG_STATE_DONE, ms)) {
		umcg_dump(stderr);
		return -ETIMEDOUT;
	}
	return umcg_join(t, ret);
}

/*
 * ct_recording_fifo: the built-in "fifo" policy, plus a record of why each
 * thread was enqueued: the UMCG_ENQ_* flags of all its enqueues so far,
 * ORed into its policy word (umcg_thread_policy_data(), which "fifo" does
 * not use).  Read them with ct_enq_flags().
 */
static inline uintptr_t ct_enq_flags(umcg_thread_t *t)
{
	return __atomic_load_n((uintptr_t *)umcg_thread_policy_data(t), __ATOMIC_SEQ_CST);
}

static inline int ct_rec_init(void **priv, unsigned int nr_cores)
{
	return umcg_policy_find("fifo")->init(priv, nr_cores);
}

static inline void ct_rec_fini(void *priv)
{
	umcg_policy_find("fifo")->fini(priv);
}

static inline int ct_rec_enqueue(void *priv, umcg_thread_t *t, int core, unsigned int flags)
{
	__atomic_fetch_or((uintptr_t *)umcg_thread_policy_data(t), flags, __ATOMIC_SEQ_CST);
	return umcg_policy_find("fifo")->enqueue(priv, t, core, flags);
}

static inline umcg_thread_t *ct_rec_pick(void *priv, int core)
{
	return umcg_policy_find("fifo")->pick(priv, core);
}

static inline int ct_rec_remove(void *priv, umcg_thread_t *t)
{
	return umcg_policy_find("fifo")->remove(priv, t);
}

static const struct umcg_policy_ops ct_recording_fifo __attribute__((unused)) = {
	.name		= "ct-recording-fifo",
	.init		= ct_rec_init,
	.fini		= ct_rec_fini,
	.enqueue	= ct_rec_enqueue,
	.pick		= ct_rec_pick,
	.remove		= ct_rec_remove,
};

#endif /* CONTRACT_H */
