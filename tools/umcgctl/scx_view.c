// SPDX-License-Identifier: GPL-2.0
/*
 * scx_view.c - the machine's sched_ext state as umcgctl's sched_ext
 * subcommands see it: sysfs, the pins of "umcgctl load", the recorded
 * exit; and the words for it.
 */
#include <errno.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "umcgctl.h"

void scx_view_read(struct scx_view *v)
{
	memset(v, 0, sizeof(*v));
	v->has_scx = !access("/sys/kernel/sched_ext", F_OK);
	if (v->has_scx) {
		umcg_scx_sysfs_read("state", v->state, sizeof(v->state));
		umcg_scx_sysfs_read("root/ops", v->ops, sizeof(v->ops));
	}
	v->pinned = umcg_scx_pinned(UMCG_SCX_PIN_DIR);
	v->ei_ret = -ENOENT;
	if (v->pinned == 1)
		v->ei_ret = umcg_scx_pinned_exit_info(UMCG_SCX_PIN_DIR, &v->ei);
}

bool scx_view_running(const struct scx_view *v)
{
	return v->pinned == 1 && !v->ei_ret && v->ei.kind == UMCG_SCX_EXIT_NONE;
}

bool scx_view_ejected(const struct scx_view *v)
{
	return v->pinned == 1 && !v->ei_ret && v->ei.kind != UMCG_SCX_EXIT_NONE;
}

void scx_exit_text(const struct user_exit_info *ei, char *buf, size_t len)
{
	snprintf(buf, len, "%s (%d), code %lld: %s%s%s",
		 umcg_scx_exit_kind_name(ei->kind), ei->kind,
		 (long long)ei->exit_code, ei->reason[0] ? ei->reason : "no reason",
		 ei->msg[0] ? ": " : "", ei->msg);
}

void scx_busy_text(const struct scx_view *v, char *buf, size_t len)
{
	const char *ops = v->ops[0] ? v->ops : "?";

	if (!strcmp(ops, UMCG_SCX_OPS_NAME))
		snprintf(buf, len, "another sched_ext scheduler is loaded: \"%s\" "
			 "(state %s), an instance of umcg's that some process "
			 "holds (umcg-scx, a test), not loaded by umcgctl; "
			 "only one scheduler can be loaded", ops, v->state);
	else
		snprintf(buf, len, "another sched_ext scheduler is loaded: \"%s\" "
			 "(state %s); only one can be loaded, unload it first",
			 ops, v->state);
}

void scx_access_text(const struct umcg_scx_access *acc, char *buf, size_t len)
{
	struct group *gr;

	switch (acc->users) {
	case UMCG_SCX_USERS_ALL:
		snprintf(buf, len, "every user");
		break;
	case UMCG_SCX_USERS_GROUP:
		gr = getgrgid(acc->gid);
		if (gr)
			snprintf(buf, len, "root and group %s (gid %u)", gr->gr_name,
				 (unsigned int)acc->gid);
		else
			snprintf(buf, len, "root and gid %u", (unsigned int)acc->gid);
		break;
	default:
		snprintf(buf, len, "root only");
		break;
	}
}

int umcgctl_parse_group(const char *arg, gid_t *gid)
{
	unsigned long long val;
	struct group *gr;

	gr = getgrnam(arg);
	if (!gr && !umcgctl_parse_uint(arg, 0, (gid_t)-2, &val))
		gr = getgrgid((gid_t)val);
	if (!gr)
		return -ENOENT;
	*gid = gr->gr_gid;
	return 0;
}

int umcgctl_parse_uint(const char *arg, unsigned long long min,
		       unsigned long long max, unsigned long long *val)
{
	char *end;

	errno = 0;
	if (!arg[0] || arg[0] == '-' || arg[0] == '+')
		return -EINVAL;
	*val = strtoull(arg, &end, 10);
	if (errno || *end || *val < min || *val > max)
		return -EINVAL;
	return 0;
}
