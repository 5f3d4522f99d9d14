/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kernel_backend.h - helpers of the guest tests of libumcg's kernel
 * backends: each program here is built once per backend, and this header
 * makes sure that backend is there, names it, and has clocks and busy
 * loops.
 *
 *   KB_BACKEND_SCX defined   "scx": the umcg sched_ext scheduler, loaded
 *                            with this build's umcgctl when no sched_ext
 *                            scheduler is (umcg_test_scx_get()); not there
 *                            on a kernel without sched_ext or with another
 *                            scheduler loaded
 *   otherwise                "kmod": umcg.ko, loaded when /dev/umcg is
 *                            absent
 *
 * A constructor gets the backend as the program starts, before the
 * harness forks a child per test; kb_backend_get() then returns NULL when
 * it is there, else the reason it is not (the test then SKIPs).  What the
 * program loaded is unloaded when it exits (an atexit() handler of its
 * first process; the harness's forked children leave with _exit() and do
 * not run it).  kb_backend_lost() tells a test's teardown whether the
 * backend went away under it (an ejected scheduler: C7).
 */
#ifndef KERNEL_BACKEND_H
#define KERNEL_BACKEND_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uapi/umcg.h>

#include "umcg_test.h"

#define KB_MS		1000000ULL

#ifdef KB_BACKEND_SCX
#define KB_BACKEND	"scx"
#else
#define KB_BACKEND	"kmod"
#define KB_MODULE	"umcg"
#endif

static bool kb_loaded;

static inline uint64_t kb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline void kb_spin_ns(uint64_t ns)
{
	uint64_t end = kb_now_ns() + ns;

	while (kb_now_ns() < end)
		;
}

#ifdef UMCG_H
/*
 * The dump's missed-news count: news a server found only when its bounded
 * sleep ran out (a kernel notification that never came); -1 when the
 * backend does not count them.  For programs that use libumcg.
 */
static inline long kb_missed_news(void)
{
	char *buf = NULL, *p;
	size_t len = 0;
	long n = -1;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -1;
	umcg_dump(f);
	fclose(f);
	p = buf ? strstr(buf, " missed-news ") : NULL;
	if (p)
		n = strtol(p + strlen(" missed-news "), NULL, 10);
	free(buf);
	return n;
}
#endif

#if defined(UMCG_H) && defined(UMCG_POLICY_H)
/* umcg_init() on the backend under test: @nr_cores cores, @policy's policy. */
static inline int kb_init(uint32_t nr_cores, const char *policy)
{
	struct umcg_config cfg = { .size = sizeof(cfg) };

	cfg.nr_cores = nr_cores;
	cfg.backend = KB_BACKEND;
	cfg.policy = umcg_policy_find(policy);
	return umcg_init(&cfg);
}
#endif

#ifdef KB_BACKEND_SCX

/* Unload the scheduler we loaded.  0 or -errno. */
static inline int kb_backend_put(void)
{
	int ret;

	if (!kb_loaded)
		return 0;
	ret = umcg_test_scx_put();
	if (!ret)
		kb_loaded = false;
	return ret;
}

/* NULL when our scheduler is enabled (loading it if need be), else why not. */
static inline const char *kb_backend_load(void)
{
	return umcg_test_scx_get(&kb_loaded);
}

/* NULL while our scheduler is still enabled, else what happened to it. */
static inline const char *kb_backend_lost(void)
{
	char ops[64];

	if (umcg_test_scx_state(ops, sizeof(ops)) == 1)
		return NULL;
	umcg_test_umcgctl("status", false);
	return "the umcg scheduler is no longer enabled (umcgctl status above)";
}

#else /* kmod */

/*
 * Unload the module we loaded.  Once the last user process is gone the
 * module must go (C7); its clean-up may lag the exit a little.
 * Returns 0 or -errno of the last try.
 */
static inline int kb_backend_put(void)
{
	int ret = 0;

	if (!kb_loaded)
		return 0;
	for (int i = 0; i < 50; i++) {
		ret = umcg_test_kmod_unload(KB_MODULE);
		if (ret != -EWOULDBLOCK && ret != -EBUSY && ret != -EAGAIN)
			break;
		usleep(100000);
	}
	if (!ret)
		kb_loaded = false;
	return ret;
}

/* NULL when /dev/umcg is there (loading umcg.ko if need be), else why not. */
static inline const char *kb_backend_load(void)
{
	static char why[PATH_MAX + 64];
	char path[PATH_MAX];
	int ret;

	if (!access(UMCG_DEVICE_PATH, R_OK | W_OK))
		return NULL;
	if (geteuid() != 0)
		return UMCG_DEVICE_PATH " is absent and loading umcg.ko needs root";
	if (umcg_test_kernel_path(path, sizeof(path), "kmod", "umcg.ko") ||
	    access(path, R_OK)) {
		snprintf(why, sizeof(why), UMCG_DEVICE_PATH " is absent and there is "
			 "no umcg.ko for this kernel (%s)", path);
		return why;
	}
	ret = umcg_test_kmod_load(path);
	if (ret && ret != -EEXIST) {
		snprintf(why, sizeof(why), "loading %s: %s", path, strerror(-ret));
		return why;
	}
	kb_loaded = !ret;
	for (int i = 0; i < 50 && access(UMCG_DEVICE_PATH, R_OK | W_OK); i++)
		usleep(20000);
	if (access(UMCG_DEVICE_PATH, R_OK | W_OK)) {
		snprintf(why, sizeof(why), "umcg.ko is loaded but " UMCG_DEVICE_PATH
			 " did not appear: %s", strerror(errno));
		return why;
	}
	return NULL;
}

/* NULL while /dev/umcg is there, else what happened to it. */
static inline const char *kb_backend_lost(void)
{
	return access(UMCG_DEVICE_PATH, R_OK | W_OK) ?
	       UMCG_DEVICE_PATH " is gone" : NULL;
}

/* The module's block detection ("tracepoint", "kprobe"), "" if unknown. */
static inline const char *kb_hook(char *buf, size_t len)
{
	FILE *f = fopen("/sys/class/misc/" UMCG_DEVICE_NAME "/hook", "re");

	buf[0] = '\0';
	if (f) {
		if (fgets(buf, (int)len, f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
	return buf;
}

#define KB_MAX_TASKS_PARAM	"/sys/module/" KB_MODULE "/parameters/max_tasks"

/*
 * Set umcg.ko's max_tasks (what files opened from now on get) to @n; the
 * value it had goes to *@old.  Returns 0 or -errno (an old module without
 * the parameter: -ENOENT).
 */
static inline int kb_max_tasks_set(unsigned int n, long *old)
{
	char buf[32];
	FILE *f = fopen(KB_MAX_TASKS_PARAM, "re");
	int ret = 0;

	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f))
		ret = -EIO;
	fclose(f);
	if (ret)
		return ret;
	*old = strtol(buf, NULL, 10);
	f = fopen(KB_MAX_TASKS_PARAM, "we");
	if (!f)
		return -errno;
	if (fprintf(f, "%u\n", n) < 0)
		ret = -EIO;
	if (fclose(f) && !ret)
		ret = -errno;
	return ret;
}

/* Put back what kb_max_tasks_set() found (@old > 0). */
static inline void kb_max_tasks_restore(long old)
{
	FILE *f;

	if (old <= 0 || !(f = fopen(KB_MAX_TASKS_PARAM, "we")))
		return;
	fprintf(f, "%ld\n", old);
	fclose(f);
}

#endif /* KB_BACKEND_SCX */

static inline void kb_backend_put_atexit(void)
{
	int ret = kb_backend_put();

	if (ret)
		fprintf(stderr, "# unloading the %s backend: %s\n", KB_BACKEND,
			strerror(-ret));
}

static const char *kb_why;

/*
 * Load in the program's first process, before the harness forks a child
 * per test, so that the atexit() unload runs there, after them.
 */
__attribute__((constructor)) static void kb_backend_ctor(void)
{
	kb_why = kb_backend_load();
	if (kb_loaded)
		atexit(kb_backend_put_atexit);
}

/* NULL when the backend is there, else why not (see kb_backend_load()). */
static inline const char *kb_backend_get(void)
{
	return kb_why;
}

/* In a teardown (kselftest_harness.h): the backend is still there. */
#define KB_EXPECT_BACKEND_KEPT() do {					\
	const char *__lost = kb_backend_lost();				\
									\
	EXPECT_TRUE(__lost == NULL) TH_LOG("%s", __lost);		\
} while (0)

#endif /* KERNEL_BACKEND_H */
