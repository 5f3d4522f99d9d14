// SPDX-License-Identifier: GPL-2.0
/*
 * umcgctl - inspect umcg's kernel side.
 *
 *   umcgctl info    what /dev/umcg's module and the sched_ext core offer
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>

#include "kmod_probe.h"

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
		   "\n"
		   "  info   the kernel module behind " UMCG_DEVICE_PATH
		   " (ABI version, features)\n"
		   "         and the sched_ext scheduler state\n");
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
		       strcmp(ops, UMCG_SCX_OPS_NAME) ? "" : " (umcg)");
	}
	return ret && ret != -ENOENT ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "info"))
		return cmd_info();
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
