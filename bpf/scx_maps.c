// SPDX-License-Identifier: GPL-2.0
/*
 * scx_maps.c - read the umcg scheduler's maps through a file descriptor;
 * see scx_maps.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "scx_maps.h"

int umcg_scx_nr_cpus(void)
{
	return libbpf_num_possible_cpus();
}

int umcg_scx_stats_read_fd(int fd, struct umcg_scx_stats *sum,
			   struct umcg_scx_stats *percpu, int nr_cpus)
{
	struct umcg_scx_stats *buf = percpu;
	__u32 zero = 0;
	int ret;

	if (nr_cpus <= 0)
		return -EINVAL;
	/* The value is 8-byte aligned per CPU: struct umcg_scx_stats is. */
	if (!buf) {
		buf = calloc(nr_cpus, sizeof(*buf));
		if (!buf)
			return -ENOMEM;
	}
	ret = bpf_map_lookup_elem(fd, &zero, buf) ? -errno : 0;
	if (!ret) {
		memset(sum, 0, sizeof(*sum));
		for (int cpu = 0; cpu < nr_cpus; cpu++)
			for (int i = 0; i < UMCG_SCX_NR_STATS; i++)
				sum->cnt[i] += buf[cpu].cnt[i];
	}
	if (buf != percpu)
		free(buf);
	return ret;
}

int umcg_scx_exit_info_read_fd(int fd, struct user_exit_info *ei)
{
	struct bpf_map_info info;
	__u32 len = sizeof(info), zero = 0;
	char *buf;
	int ret = 0;

	/*
	 * .data also holds the static format strings of scx_bpf_error() and
	 * friends, which the skeleton does not show: at least "uei" must fit.
	 */
	memset(&info, 0, sizeof(info));
	if (bpf_map_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.max_entries != 1 ||
	    info.value_size < umcg_scx_uei_off + sizeof(*ei))
		return -EPROTO;
	buf = malloc(info.value_size);
	if (!buf)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &zero, buf))
		ret = -errno;
	else
		memcpy(ei, buf + umcg_scx_uei_off, sizeof(*ei));
	free(buf);
	if (ret)
		return ret;
	ei->reason[sizeof(ei->reason) - 1] = '\0';
	ei->msg[sizeof(ei->msg) - 1] = '\0';
	return 0;
}

const char *umcg_scx_exit_kind_name(__s32 kind)
{
	switch (kind) {
	case UMCG_SCX_EXIT_NONE:		return "NONE";
	case UMCG_SCX_EXIT_DONE:		return "DONE";
	case UMCG_SCX_EXIT_UNREG:		return "UNREG";
	case UMCG_SCX_EXIT_UNREG_BPF:		return "UNREG_BPF";
	case UMCG_SCX_EXIT_UNREG_KERN:		return "UNREG_KERN";
	case UMCG_SCX_EXIT_SYSRQ:		return "SYSRQ";
	case UMCG_SCX_EXIT_PARENT:		return "PARENT";
	case UMCG_SCX_EXIT_PARENT_KILL:		return "PARENT_KILL";
	case UMCG_SCX_EXIT_ERROR:		return "ERROR";
	case UMCG_SCX_EXIT_ERROR_BPF:		return "ERROR_BPF";
	case UMCG_SCX_EXIT_ERROR_STALL:		return "ERROR_STALL";
	case UMCG_SCX_EXIT_ERROR_REENQ:		return "ERROR_REENQ";
	case UMCG_SCX_EXIT_ERROR_RESCUE:	return "ERROR_RESCUE";
	default:				return "UNKNOWN";
	}
}

static const char *const stat_names[UMCG_SCX_NR_STATS] = {
	[UMCG_SCX_STAT_ENQUEUE]		= "enqueue",
	[UMCG_SCX_STAT_DIRECT]		= "direct",
	[UMCG_SCX_STAT_DISPATCH]	= "dispatch",
	[UMCG_SCX_STAT_RUNNING]		= "running",
	[UMCG_SCX_STAT_BLOCK]		= "block",
	[UMCG_SCX_STAT_KICK]		= "kick",
	[UMCG_SCX_STAT_ENABLE]		= "enable",
	[UMCG_SCX_STAT_DISABLE]		= "disable",
};

const char *umcg_scx_stat_name(unsigned int idx)
{
	return idx < UMCG_SCX_NR_STATS ? stat_names[idx] : NULL;
}
