/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_test.h - helpers of the guest tests that drive the umcg sched_ext
 * scheduler's enforcer by hand (scx_enforce, scx_isolation): the calling
 * thread's tid, a monotonic clock, running a SEC("syscall") program as the
 * calling thread, moving the calling thread between CPUs and classes, and
 * registering it.
 * Each returns 0 or -errno unless it says otherwise.
 */
#ifndef UMCG_SCX_TEST_H
#define UMCG_SCX_TEST_H

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#ifndef SCHED_EXT
#define SCHED_EXT	7
#endif

static inline pid_t scx_gettid(void)
{
	return syscall(SYS_gettid);
}

/* CLOCK_MONOTONIC in ns. */
static inline long long scx_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Run syscall program @fd on @ctx as the calling thread: its retval or -errno. */
static inline int scx_run_prog(int fd, void *ctx, size_t size)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = ctx, .ctx_size_in = size);

	if (bpf_prog_test_run_opts(fd, &o))
		return -errno;
	return (int)o.retval;
}

/* Pin the calling thread to @cpu. */
static inline int scx_pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set) ? -errno : 0;
}

/* The calling thread to SCHED_EXT (@on) or back to SCHED_OTHER. */
static inline int scx_set_ext(bool on)
{
	struct sched_param sp = { 0 };

	return sched_setscheduler(0, on ? SCHED_EXT : SCHED_OTHER, &sp) ?
	       -errno : 0;
}

/*
 * The calling thread joins the enforcer: pinned to @cpu, SCHED_EXT, then
 * registered through "umcg_register" (@reg_fd) with @args, whose out
 * fields it fills.  The first error.
 */
static inline int scx_join_on(int reg_fd, int cpu, void *args, size_t size)
{
	int ret = scx_pin_self(cpu);

	if (!ret)
		ret = scx_set_ext(true);
	if (!ret)
		ret = scx_run_prog(reg_fd, args, size);
	return ret;
}

#endif /* UMCG_SCX_TEST_H */
