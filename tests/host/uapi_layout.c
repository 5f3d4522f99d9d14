// SPDX-License-Identifier: GPL-2.0
/*
 * uapi_layout - the ABI of uapi/umcg.h, uapi/umcg_scx.h and uapi/umcg_stats.h as user space
 * compiles it: field offsets, published sizes, ioctl encodings and
 * state-word masks.  A change that breaks the ABI breaks this test.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include "kselftest_harness.h"
#include "kmod_probe.h"
#include <uapi/umcg_scx.h>
#include <uapi/umcg_stats.h>

TEST(task_layout)
{
	EXPECT_EQ(0, offsetof(struct umcg_task, state));
	EXPECT_EQ(4, offsetof(struct umcg_task, server_tid));
	EXPECT_EQ(8, offsetof(struct umcg_task, next_tid));
	EXPECT_EQ(12, offsetof(struct umcg_task, cpu));
	EXPECT_EQ(16, offsetof(struct umcg_task, blocked_ns));
	EXPECT_EQ(24, offsetof(struct umcg_task, woken_ns));
	EXPECT_EQ(32, offsetof(struct umcg_task, seq));
	EXPECT_EQ(40, offsetof(struct umcg_task, next_slot));
	EXPECT_EQ(44, offsetof(struct umcg_task, pad));
	EXPECT_EQ(48, offsetof(struct umcg_task, reserved));
	EXPECT_EQ(UMCG_TASK_ALIGN, sizeof(struct umcg_task));
}

TEST(args_layout)
{
	EXPECT_EQ(16, offsetof(struct umcg_info, features));
	EXPECT_EQ(16, offsetof(struct umcg_register_args, task_off));
	EXPECT_EQ(8, offsetof(struct umcg_wait_args, timeout_ns));
	EXPECT_EQ(8, offsetof(struct umcg_wake_args, tid));
	EXPECT_EQ(16, offsetof(struct umcg_switch_args, timeout_ns));
	/* Every argument struct starts with its size, then its flags. */
	EXPECT_EQ(0, offsetof(struct umcg_info, size));
	EXPECT_EQ(4, offsetof(struct umcg_info, flags));
	EXPECT_EQ(4, offsetof(struct umcg_register_args, flags));
	EXPECT_EQ(4, offsetof(struct umcg_unregister_args, flags));
	EXPECT_EQ(4, offsetof(struct umcg_wait_args, flags));
	EXPECT_EQ(4, offsetof(struct umcg_wake_args, flags));
	EXPECT_EQ(4, offsetof(struct umcg_switch_args, flags));
}

/* The scheduler's shared area and command arguments (uapi/umcg_scx.h). */
TEST(scx_layout)
{
	/* "umcg" in memory, on a little-endian machine. */
	EXPECT_EQ(0, memcmp((const char []){ 'u', 'm', 'c', 'g' },
			    &(__u32){ UMCG_SCX_ABI_MAGIC }, 4));
	EXPECT_EQ(0, offsetof(struct umcg_scx_shared, abi_magic));
	EXPECT_EQ(4, offsetof(struct umcg_scx_shared, abi_version));
	EXPECT_EQ(64, offsetof(struct umcg_scx_shared, task));
	EXPECT_EQ(64 + UMCG_SCX_MAX_TASKS * 64, offsetof(struct umcg_scx_shared, events));
	EXPECT_EQ(64 + UMCG_SCX_MAX_TASKS * 64 + UMCG_SCX_MAX_GROUPS * UMCG_SCX_EVENT_WORDS * 8,
		  offsetof(struct umcg_scx_shared, bell));
	EXPECT_EQ(16, offsetof(struct umcg_scx_register_args, slice_ns));
	EXPECT_EQ(24, offsetof(struct umcg_scx_register_args, in_lib));
	EXPECT_EQ(32, offsetof(struct umcg_scx_register_args, slot));
	EXPECT_EQ(40, offsetof(struct umcg_scx_register_args, task_off));
	EXPECT_EQ(48, offsetof(struct umcg_scx_register_args, events_off));
	EXPECT_EQ(12, offsetof(struct umcg_scx_pick_args, pad));
	EXPECT_EQ(8, offsetof(struct umcg_scx_unregister_args, reserved));
	EXPECT_EQ(8, offsetof(struct umcg_scx_poke_args, reserved));
	EXPECT_EQ(40, offsetof(struct umcg_scx_task_stats, queued));
	/* Flags of register are above uapi/umcg.h's UMCG_REGISTER_* bits. */
	EXPECT_EQ(0, (UMCG_SCX_REGISTER_DOORBELL | UMCG_SCX_REGISTER_SLICE |
		      UMCG_SCX_REGISTER_IN_LIB | UMCG_SCX_REGISTER_BELL) &
		     (UMCG_REGISTER_WORKER | UMCG_REGISTER_SERVER));
}

/* The statistics area "umcgctl top" reads (uapi/umcg_stats.h). */
TEST(stats_layout)
{
	EXPECT_EQ(0, memcmp("umcgstat", &(__u64){ UMCG_STATS_MAGIC }, 8));
	EXPECT_EQ(0, offsetof(struct umcg_stats_header, magic));
	EXPECT_EQ(8, offsetof(struct umcg_stats_header, version));
	EXPECT_EQ(12, offsetof(struct umcg_stats_header, header_size));
	EXPECT_EQ(16, offsetof(struct umcg_stats_header, core_size));
	EXPECT_EQ(20, offsetof(struct umcg_stats_header, nr_cores));
	EXPECT_EQ(24, offsetof(struct umcg_stats_header, size));
	EXPECT_EQ(32, offsetof(struct umcg_stats_header, pid));
	EXPECT_EQ(48, offsetof(struct umcg_stats_header, backend));
	EXPECT_EQ(80, offsetof(struct umcg_stats_header, own_threads));
	EXPECT_EQ(96, offsetof(struct umcg_stats_header, spawned_total));
	EXPECT_EQ(160, offsetof(struct umcg_stats_header, policy_errors_total));
	EXPECT_EQ(168, offsetof(struct umcg_stats_header, req_seq));
	EXPECT_EQ(172, offsetof(struct umcg_stats_header, snap_seq));
	EXPECT_EQ(184, offsetof(struct umcg_stats_header, state));
	EXPECT_EQ(216, offsetof(struct umcg_stats_header, workers));
	EXPECT_EQ(UMCG_STATS_HEADER_SIZE, sizeof(struct umcg_stats_header));
	EXPECT_EQ(0, offsetof(struct umcg_stats_core, switches_total));
	EXPECT_EQ(24, offsetof(struct umcg_stats_core, vacated_ns));
	EXPECT_EQ(32, offsetof(struct umcg_stats_core, hist));
	EXPECT_EQ(288, offsetof(struct umcg_stats_core, cpu));
	EXPECT_EQ(292, offsetof(struct umcg_stats_core, cur_tid));
	EXPECT_EQ(296, offsetof(struct umcg_stats_core, cur_name));
	EXPECT_EQ(UMCG_STATS_CORE_SIZE, sizeof(struct umcg_stats_core));
	/* Whole cache lines: each core's counters share a line with no other's. */
	EXPECT_EQ(0, UMCG_STATS_HEADER_SIZE % 64);
	EXPECT_EQ(0, UMCG_STATS_CORE_SIZE % 64);
	EXPECT_EQ(448 + 3 * 512, UMCG_STATS_SIZE(3));
}

TEST(ioctl_numbers)
{
	static const struct {
		unsigned long cmd;
		unsigned int nr, size, dir;
	} cmds[] = {
		{ UMCG_IOC_GET_INFO, 0, UMCG_INFO_SIZE_VER0, _IOC_READ | _IOC_WRITE },
		{ UMCG_IOC_REGISTER, 1, UMCG_REGISTER_SIZE_VER0, _IOC_READ | _IOC_WRITE },
		{ UMCG_IOC_UNREGISTER, 2, UMCG_UNREGISTER_SIZE_VER0, _IOC_WRITE },
		{ UMCG_IOC_WAIT, 3, UMCG_WAIT_SIZE_VER0, _IOC_WRITE },
		{ UMCG_IOC_WAKE, 4, UMCG_WAKE_SIZE_VER0, _IOC_WRITE },
		{ UMCG_IOC_SWITCH, 5, UMCG_SWITCH_SIZE_VER0, _IOC_WRITE },
	};

	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		EXPECT_EQ(UMCG_IOC_MAGIC, _IOC_TYPE(cmds[i].cmd));
		EXPECT_EQ(cmds[i].nr, _IOC_NR(cmds[i].cmd));
		EXPECT_EQ(cmds[i].size, _IOC_SIZE(cmds[i].cmd));
		EXPECT_EQ(cmds[i].dir, _IOC_DIR(cmds[i].cmd));
	}
}

TEST(state_word)
{
	const unsigned int states[] = {
		UMCG_TASK_NEW, UMCG_TASK_RUNNABLE, UMCG_TASK_RUNNING,
		UMCG_TASK_BLOCKED, UMCG_TASK_PARKED, UMCG_TASK_DONE,
	};

	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++) {
		EXPECT_EQ(states[i], states[i] & UMCG_TASK_STATE_MASK);
		for (size_t j = 0; j < i; j++)
			EXPECT_NE(states[i], states[j]);
	}
	EXPECT_EQ(UMCG_TF_PREEMPT, UMCG_TF_PREEMPT & UMCG_TF_MASK);
	EXPECT_EQ(UMCG_TF_PERMIT, UMCG_TF_PERMIT & UMCG_TF_MASK);
	EXPECT_EQ(0, UMCG_TASK_STATE_MASK & UMCG_TF_MASK);
	EXPECT_EQ(0, UMCG_TASK_RESERVED_MASK & (UMCG_TASK_STATE_MASK | UMCG_TF_MASK));
	EXPECT_EQ(0xffffffffU, UMCG_TASK_RESERVED_MASK | UMCG_TASK_STATE_MASK | UMCG_TF_MASK);
}

/* Without the module, the probe says so with -ENOENT, not a crash. */
TEST(kmod_probe_without_module)
{
	struct umcg_info info;
	struct stat st;

	if (stat(UMCG_DEVICE_PATH, &st) == 0)
		SKIP(return, UMCG_DEVICE_PATH " exists on this host");
	EXPECT_EQ(-ENOENT, umcg_kmod_get_info(&info));
}

TEST_HARNESS_MAIN
