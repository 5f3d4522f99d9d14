// SPDX-License-Identifier: GPL-2.0
/*
 * umcgctl - inspect umcg's kernel side.
 *
 *   umcgctl info              what /dev/umcg's module and sched_ext offer
 *   umcgctl ext -- CMD ARGS   run CMD under SCHED_EXT (inherited by its
 *                             threads and children)
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "kmod_probe.h"

#ifndef SCHED_EXT
#define SCHED_EXT 7
#endif

static const struct {
	__u64 bit;
	const char *name;
} features[] = {
	{ UMCG_FEATURE_INFO, "info" },
	{ UMCG_FEATURE_REGISTER, "register" },
	{ UMCG_FEATURE_WAIT, "wait" },
	{ UMCG_FEATURE_SWITCH, "switch" },
	{ UMCG_FEATURE_BLOCK, "block" },
};

static void usage(FILE *f)
{
	fprintf(f, "Usage: umcgctl info\n"
		   "       umcgctl ext [--] COMMAND [ARG]...\n"
		   "\n"
		   "  info   the kernel module behind " UMCG_DEVICE_PATH
		   " (ABI version, features)\n"
		   "         and the sched_ext scheduler state\n"
		   "  ext    run COMMAND with the SCHED_EXT policy: its threads are\n"
		   "         scheduled by the loaded sched_ext scheduler (by the\n"
		   "         fair class when none is loaded)\n");
}

/* Reads the first line of @path into @buf; "-" when it cannot. */
static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	if (!f || !fgets(buf, len, f))
		snprintf(buf, len, "-");
	else
		buf[strcspn(buf, "\n")] = '\0';
	if (f)
		fclose(f);
}

static int cmd_info(void)
{
	struct umcg_info info;
	struct utsname u;
	char state[64], ops[64];
	int ret;

	uname(&u);
	printf("kernel:     %s\n", u.release);

	ret = umcg_kmod_get_info(&info);
	if (ret == -ENOENT) {
		printf("umcg.ko:    not loaded (no %s)\n", UMCG_DEVICE_PATH);
	} else if (ret) {
		printf("umcg.ko:    %s: %s\n", UMCG_DEVICE_PATH, strerror(-ret));
	} else {
		printf("umcg.ko:    ABI version %u (this umcgctl: %u)\n",
		       info.api_version, UMCG_API_VERSION);
		printf("features:  ");
		for (size_t i = 0; i < sizeof(features) / sizeof(features[0]); i++)
			if (info.features & features[i].bit)
				printf(" %s", features[i].name);
		printf("\n");
	}

	read_line("/sys/kernel/sched_ext/state", state, sizeof(state));
	if (!strcmp(state, "-")) {
		printf("sched_ext:  not in this kernel\n");
	} else {
		read_line("/sys/kernel/sched_ext/root/ops", ops, sizeof(ops));
		printf("sched_ext:  %s, scheduler %s%s\n", state, ops,
		       strcmp(ops, UMCG_SCX_OPS_NAME) && strcmp(ops, "-") ? " (not umcg's)" : "");
	}
	return ret && ret != -ENOENT ? 1 : 0;
}

static int cmd_ext(int argc, char **argv)
{
	struct sched_param sp = { .sched_priority = 0 };

	if (argc > 0 && !strcmp(argv[0], "--")) {
		argc--;
		argv++;
	}
	if (argc == 0) {
		fprintf(stderr, "umcgctl ext: no command given\n");
		usage(stderr);
		return 2;
	}
	if (sched_setscheduler(0, SCHED_EXT, &sp)) {
		fprintf(stderr, "umcgctl ext: sched_setscheduler(SCHED_EXT): %s%s\n",
			strerror(errno),
			errno == EINVAL ? " (kernel without sched_ext?)" : "");
		return 1;
	}
	execvp(argv[0], argv);
	fprintf(stderr, "umcgctl ext: %s: %s\n", argv[0], strerror(errno));
	return 127;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "info"))
		return cmd_info();
	if (argc >= 2 && !strcmp(argv[1], "ext"))
		return cmd_ext(argc - 2, argv + 2);
	if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
		usage(stdout);
		return 0;
	}
	if (argc < 2)
		fprintf(stderr, "umcgctl: no command given\n");
	else
		fprintf(stderr, "umcgctl: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
