/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmod_backend.h - helpers of the guest tests of libumcg's "kmod" backend:
 * making sure umcg.ko is loaded (and unloading it again if we loaded it),
 * clocks and busy loops.
 *
 * A constructor loads umcg.ko (if /dev/umcg is absent) as the program
 * starts; kb_module_get() then returns NULL when the device is there, else
 * the reason it is not (the test then SKIPs).  A module the program loaded
 * is unloaded when it exits (an atexit() handler of its first process; the
 * harness's forked children leave with _exit() and do not run it).
 */
#ifndef KMOD_BACKEND_H
#define KMOD_BACKEND_H

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
#define KB_MODULE	"umcg"

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

/*
 * Unload the module we loaded.  Once the last user process is gone the
 * module must go (C7); its clean-up may lag the exit a little.
 * Returns 0 or -errno of the last try.
 */
static inline int kb_module_put(void)
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

static inline void kb_module_put_atexit(void)
{
	int ret = kb_module_put();

	if (ret)
		fprintf(stderr, "# unloading %s: %s\n", KB_MODULE, strerror(-ret));
}

/* NULL when /dev/umcg is there (loading umcg.ko if need be), else why not. */
static inline const char *kb_module_load(void)
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
	if (!ret) {
		kb_loaded = true;
		atexit(kb_module_put_atexit);
	}
	for (int i = 0; i < 50 && access(UMCG_DEVICE_PATH, R_OK | W_OK); i++)
		usleep(20000);
	if (access(UMCG_DEVICE_PATH, R_OK | W_OK)) {
		snprintf(why, sizeof(why), "umcg.ko is loaded but " UMCG_DEVICE_PATH
			 " did not appear: %s", strerror(errno));
		return why;
	}
	return NULL;
}

static const char *kb_why;

/*
 * Load in the program's first process, before the harness forks a child
 * per test, so that the atexit() unload runs there, after them.
 */
__attribute__((constructor)) static void kb_module_ctor(void)
{
	kb_why = kb_module_load();
}

/* NULL when /dev/umcg is there, else why not (see kb_module_load()). */
static inline const char *kb_module_get(void)
{
	return kb_why;
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

#endif /* KMOD_BACKEND_H */
