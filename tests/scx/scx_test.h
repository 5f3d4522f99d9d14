/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_test.h - helpers of the guest tests that drive the umcg sched_ext
 * scheduler's enforcer by hand (scx_enforce, scx_isolation): the calling
 * thread's tid, a monotonic clock, running a SEC("syscall") program as the
 * calling thread, moving the calling thread between CPUs and classes, and
 * registering it; the state of sched_ext and loading ours where it is not.
 * Each returns 0 or -errno unless it says otherwise.
 */
#ifndef UMCG_SCX_TEST_H
#define UMCG_SCX_TEST_H

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "umcg_test.h"

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

/* Does a sched_ext scheduler run (state "enabled")? */
static inline bool scx_enabled(void)
{
	char state[32];

	umcg_test_read_line(UMCG_TEST_SCX_SYSFS "/state", state, sizeof(state));
	return !strcmp(state, "enabled");
}

/* sched_ext's enable_seq: it moves at every load of a scheduler. */
static inline unsigned long long scx_enable_seq(void)
{
	char buf[32];

	umcg_test_read_line(UMCG_TEST_SCX_SYSFS "/enable_seq", buf, sizeof(buf));
	return strtoull(buf, NULL, 10);
}

/* Why this test cannot load our scheduler (a SKIP reason), or NULL. */
static inline const char *scx_cannot_load(void)
{
	if (access("/sys/kernel/sched_ext", F_OK))
		return "no sched_ext in this kernel";
	if (geteuid())
		return "loading the scheduler needs root";
	return NULL;
}

/* Load ours unless a scheduler runs; does one run now? */
/*
 * Whether a scheduler was enabled when this test (one forked child of the
 * harness) first asked scx_ensure_loaded(): -1 before it asked.
 */
static int scx_found_loaded = -1;

static inline bool scx_ensure_loaded(void)
{
	if (scx_found_loaded < 0)
		scx_found_loaded = scx_enabled();
	if (!scx_enabled())
		umcg_test_umcgctl("load", false);
	return scx_enabled();
}

/*
 * Leave the machine as this test found it: ours loaded again if it was
 * (the test may have unloaded or ejected it), unloaded if the test loaded
 * it, so that a later program that needs sched_ext free (scx_isolation,
 * scx_loader) finds it free whatever ran before.
 */
static inline void scx_restore_loaded(void)
{
	if (access("/sys/kernel/sched_ext", F_OK) || scx_found_loaded < 0)
		return;
	if (scx_found_loaded && !scx_enabled()) {
		umcg_test_umcgctl("unload", false);
		umcg_test_umcgctl("load", false);
	} else if (!scx_found_loaded) {
		umcg_test_umcgctl("unload", false);
	}
}

#endif /* UMCG_SCX_TEST_H */
