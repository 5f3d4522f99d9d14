// SPDX-License-Identifier: GPL-2.0
/*
 * warn_selftest - loads umcg_warn_test.ko and unloads it; by itself it
 * passes.  The runner must still report it as failed because of the WARN in
 * the kernel log: the self-test (umcg-vm test --expect-fail) checks that.
 */
#include <limits.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "umcg_test.h"

TEST(load_warning_module)
{
	char path[PATH_MAX];

	if (geteuid())
		SKIP(return, "needs root to load modules");
	ASSERT_EQ(0, umcg_test_kernel_path(path, sizeof(path), "tests/vm",
					   "umcg_warn_test.ko"));
	ASSERT_EQ(0, umcg_test_kmod_load(path)) TH_LOG("loading %s", path);
	EXPECT_EQ(0, umcg_test_kmod_unload("umcg_warn_test"));
}

TEST_HARNESS_MAIN
