/* SPDX-License-Identifier: GPL-2.0 */
/*
 * kmod_test.h - helpers of the umcg.ko guest tests.  Include after
 * kselftest_harness.h: the helpers report through _metadata.
 */
#ifndef UMCG_KMOD_TEST_H
#define UMCG_KMOD_TEST_H

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "umcg_test.h"

#define UMCG_KMOD_NAME	"umcg"

/* What this tree's umcg.ko reports in struct umcg_info.features. */
#define UMCG_KMOD_TEST_FEATURES \
	(UMCG_FEATURE_INFO | UMCG_FEATURE_REGISTER | UMCG_FEATURE_WAIT | \
	 UMCG_FEATURE_SWITCH | UMCG_FEATURE_BLOCK | UMCG_FEATURE_PREEMPT | \
	 UMCG_FEATURE_HANDOFF)

/* delete_module() of a module in use: -EWOULDBLOCK, not -EBUSY. */
#define UMCG_EINUSE	EWOULDBLOCK

/* A scanf() of one unsigned number from @path, or -1. */
static inline long umcg_read_number(const char *path)
{
	unsigned long v;
	FILE *f;
	int n;

	f = fopen(path, "re");
	if (!f)
		return -1;
	n = fscanf(f, "%lu", &v);
	fclose(f);
	return n == 1 ? (long)v : -1;
}

/*
 * Put the path of this kernel's umcg.ko in @path.  SKIPs (and returns
 * false) unless root and the module was built for the running kernel.
 */
static inline bool umcg_kmod_find(struct __test_metadata *_metadata,
				  char *path, size_t len)
{
	if (geteuid() != 0)
		SKIP(return false, "loading modules needs root");
	ASSERT_EQ(0, umcg_test_kernel_path(path, len, "kmod", "umcg.ko"));
	if (access(path, R_OK))
		SKIP(return false, "%.200s: %s", path, strerror(errno));
	return true;
}

/*
 * Make sure umcg.ko is loaded; *@loaded tells whether this call loaded it
 * (and so whether the caller's teardown should unload it).
 */
static inline bool umcg_kmod_get(struct __test_metadata *_metadata,
				 bool *loaded)
{
	char path[PATH_MAX];
	int ret;

	*loaded = false;
	if (!umcg_kmod_find(_metadata, path, sizeof(path)))
		return false;
	ret = umcg_test_kmod_load(path);
	if (ret == -EEXIST)
		return true;
	ASSERT_EQ(0, ret) TH_LOG("loading %s: %s", path, strerror(-ret));
	*loaded = true;
	return true;
}

#endif /* UMCG_KMOD_TEST_H */
