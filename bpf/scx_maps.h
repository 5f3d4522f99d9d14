/* SPDX-License-Identifier: GPL-2.0 */
/*
 * scx_maps.h - read the umcg scheduler's maps through a file descriptor,
 * whether it came from the skeleton (scx_loader.c) or from a pin
 * (scx_pin.c), and name what they hold.  The layouts are in uapi/umcg_scx.h.
 *
 * Functions return 0 or -errno.
 */
#ifndef UMCG_SCX_MAPS_H
#define UMCG_SCX_MAPS_H

#include "umcg_scx_exit.h"

/* Possible CPUs: the number of copies in a per-CPU map; or -errno. */
int umcg_scx_nr_cpus(void);

/*
 * Read the PERCPU_ARRAY "stats" through @fd: the counters summed over all
 * CPUs into @sum and, when @percpu is not NULL, each CPU's copy into
 * @percpu[0 .. @nr_cpus - 1].  @nr_cpus must be umcg_scx_nr_cpus().
 */
int umcg_scx_stats_read_fd(int fd, struct umcg_scx_stats *sum,
			   struct umcg_scx_stats *percpu, int nr_cpus);

/*
 * Read the scheduler's .data (pinned as "exit_info") through @fd, and its
 * struct user_exit_info "uei" into @ei, strings NUL-terminated; kind is
 * UMCG_SCX_EXIT_NONE while the scheduler runs.  -EPROTO: the map is too
 * small to be the .data of this build's scheduler.
 */
int umcg_scx_exit_info_read_fd(int fd, struct user_exit_info *ei);

/* The offset of "uei" in the scheduler's .data. */
extern const size_t umcg_scx_uei_off;

/* "UNREG", "ERROR_STALL", ...; "UNKNOWN" for a kind this file predates. */
const char *umcg_scx_exit_kind_name(__s32 kind);

/* "enqueue", "dispatch", ...: the name of UMCG_SCX_STAT_@idx, or NULL. */
const char *umcg_scx_stat_name(unsigned int idx);

#endif /* UMCG_SCX_MAPS_H */
