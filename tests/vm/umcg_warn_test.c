// SPDX-License-Identifier: GPL-2.0
/*
 * umcg_warn_test.ko - a module that WARNs when loaded, and nothing else.
 *
 * Used only by the VM runner's self-test: a guest test that loads it must
 * be reported as failed, which proves that tools/vm/guest-run reads the
 * kernel log.  No locks.
 */
#include <linux/bug.h>
#include <linux/module.h>

static int __init umcg_warn_test_init(void)
{
	WARN(1, "umcg_warn_test: deliberate warning for the runner self-test\n");
	return 0;
}

static void __exit umcg_warn_test_exit(void)
{
}

module_init(umcg_warn_test_init);
module_exit(umcg_warn_test_exit);
MODULE_DESCRIPTION("umcg VM runner self-test: WARN at load");
MODULE_LICENSE("GPL");
