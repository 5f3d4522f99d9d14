/* SPDX-License-Identifier: GPL-2.0 */
/*
 * umcgctl.h - what the umcgctl subcommands share: exit statuses, messages,
 * and the sched_ext subcommands that tools/umcgctl/scx_*.c implement when
 * bpf/ is built (UMCG_HAVE_SCX).  Documentation/umcgctl.md is the manual.
 */
#ifndef UMCGCTL_H
#define UMCGCTL_H

#include <stdbool.h>
#include <stdio.h>

/*
 * Exit statuses of every subcommand except status, which has its own
 * (UMCGCTL_STATUS_*).
 */
#define UMCGCTL_OK		0
#define UMCGCTL_FAILED		1	/* the operation failed, as printed */
#define UMCGCTL_USAGE		2	/* bad arguments */
/* load: already loaded; unload, stats, eject: not loaded */
#define UMCGCTL_STATE		3
#define UMCGCTL_BUSY		4	/* load: another sched_ext scheduler is loaded */
#define UMCGCTL_NOT_ROOT	5	/* load, unload, eject: not root */
#define UMCGCTL_NO_SCX		6	/* the kernel has no sched_ext */

/* "umcgctl status": the LSB init-script convention. */
#define UMCGCTL_STATUS_RUNNING	0	/* loaded by umcgctl and running */
#define UMCGCTL_STATUS_EJECTED	1	/* loaded, then stopped by the kernel */
#define UMCGCTL_STATUS_NOT_LOADED 3	/* not loaded by umcgctl */
#define UMCGCTL_STATUS_UNKNOWN	4	/* cannot tell, as printed */

/* "umcgctl CMD: message" on standard error. */
__attribute__((format(printf, 2, 3)))
void umcgctl_err(const char *cmd, const char *fmt, ...);

/*
 * For a subcommand's getopt_long() loop, run with opterr = 0 and an
 * optstring that starts with "+:": report getopt's '?' (unknown option)
 * or ':' (missing argument) @c and return UMCGCTL_USAGE.
 */
int umcgctl_bad_option(const char *cmd, char **argv, int c);

/* "umcgctl top ARGS" (top.c): argv[0] is "top". */
int umcgctl_top(int argc, char **argv);

#ifdef UMCG_HAVE_SCX
#include "scx_loader.h"
#include <uapi/umcg.h>

int umcgctl_load(int argc, char **argv);
int umcgctl_unload(int argc, char **argv);
int umcgctl_eject(int argc, char **argv);
int umcgctl_status(int argc, char **argv);
int umcgctl_stats(int argc, char **argv);

/**
 * struct scx_view - the machine's sched_ext state as umcgctl sees it
 * @has_scx:  /sys/kernel/sched_ext exists
 * @state:    /sys/kernel/sched_ext/state ("enabled", "disabled", ...), or ""
 * @ops:      /sys/kernel/sched_ext/root/ops: the loaded scheduler, or ""
 * @pinned:   umcg_scx_pinned(UMCG_SCX_PIN_DIR): 1, 0 or -errno
 * @ei_ret:   0 if @ei was read (only tried when @pinned is 1), or -errno
 * @ei:       the pinned scheduler's exit info; kind NONE: it runs
 */
struct scx_view {
	bool				has_scx;
	char				state[32];
	char				ops[UMCG_SCX_NAME_MAX + 1];
	int				pinned;
	int				ei_ret;
	struct user_exit_info	ei;
};

void scx_view_read(struct scx_view *v);

/* Loaded by umcgctl and not stopped by the kernel. */
bool scx_view_running(const struct scx_view *v);

/* Loaded by umcgctl, then stopped by the kernel: the pins remain. */
bool scx_view_ejected(const struct scx_view *v);

/* "SYSRQ (67), code 0: disabled by sysrq-S[: message]" into @buf. */
void scx_exit_text(const struct user_exit_info *ei, char *buf, size_t len);

/* Why sched_ext is taken, for refusals: names the loaded scheduler. */
void scx_busy_text(const struct scx_view *v, char *buf, size_t len);

/* "root only", "root and group NAME (gid N)", "every user" into @buf. */
void scx_access_text(const struct umcg_scx_access *acc, char *buf, size_t len);

/* The group named @arg, or numbered @arg, from the group database; -ENOENT. */
int umcgctl_parse_group(const char *arg, gid_t *gid);

/* Parse a decimal in [@min, @max]; 0 or -EINVAL. */
int umcgctl_parse_uint(const char *arg, unsigned long long min,
		       unsigned long long max, unsigned long long *val);
#endif /* UMCG_HAVE_SCX */

#endif /* UMCGCTL_H */
