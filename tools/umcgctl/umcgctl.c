// SPDX-License-Identifier: GPL-2.0
/*
 * umcgctl - inspect and control umcg's kernel side.
 *
 *   umcgctl info              what /dev/umcg's module and sched_ext offer
 *   umcgctl ext -- CMD ARGS   run CMD under SCHED_EXT (inherited by its
 *                             threads and children)
 *   umcgctl dump PID          ask a libumcg process (umcg-run's, or one that
 *                             called umcg_dump_on_signal()) for a thread dump
 *   umcgctl top               live view of the libumcg processes (top.c)
 *   umcgctl load|unload       put the umcg sched_ext scheduler in place for
 *                             the machine, pinned in bpffs, or take it away
 *   umcgctl status|stats      how it is doing
 *   umcgctl eject             testing aid: make it eject itself
 *
 * This file holds the first three and the dispatch; the sched_ext ones are
 * in scx_*.c, built only when bpf/ builds the scheduler (UMCG_HAVE_SCX).
 * Documentation/umcgctl.md is the manual.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "kmod_probe.h"
#include "umcg_run_env.h"
#include "umcgctl.h"

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
		   "       umcgctl dump PID\n"
		   "       umcgctl top [-p PID] [-d SECS] [-n COUNT] [-b] [--json]\n"
		   "       umcgctl load [--group GROUP | --users] [--slice-us US]\n"
		   "                    [--timeout-ms MS] [-v]\n"
		   "       umcgctl unload\n"
		   "       umcgctl status\n"
		   "       umcgctl stats [--interval SECS [--count N]] [-v]\n"
		   "       umcgctl eject [--error]\n"
		   "\n"
		   "  info    the kernel module behind " UMCG_DEVICE_PATH
		   " (ABI version, features)\n"
		   "          and the sched_ext scheduler state\n"
		   "  ext     run COMMAND with the SCHED_EXT policy: its threads are\n"
		   "          scheduled by the loaded sched_ext scheduler (by the\n"
		   "          fair class when none is loaded)\n"
		   "  dump    make process PID (run by umcg-run, or one that called\n"
		   "          umcg_dump_on_signal()) write a thread dump to its own\n"
		   "          standard error: every worker, its state, core, time in\n"
		   "          state and switch counts.  Sends $UMCG_DUMP_SIGNAL\n"
		   "          (default USR2), and only if PID catches that signal\n"
		   "  top     live view of the libumcg processes: workers per state,\n"
		   "          switches and blocks per second, hand-off latency, cores\n"
		   "  load    (root) load the umcg sched_ext scheduler for the whole\n"
		   "          machine and leave it attached, pinned in bpffs; usable\n"
		   "          by root only, by GROUP's members too, or by every user\n"
		   "  unload  (root) unregister it, report how it exited, unpin it\n"
		   "  status  sched_ext's state; whether ours is loaded and who may\n"
		   "          use it, or why the kernel ejected it\n"
		   "  stats   its counters, summed over the CPUs (-v: per CPU)\n"
		   "  eject   (root, testing aid) make it eject itself\n"
		   "\n"
		   "\"umcgctl COMMAND --help\" details top, load, unload, status, stats\n"
		   "and eject, with their exit statuses.  Otherwise: 0 done, 1 failed (as\n"
		   "printed), 2 bad arguments.  See Documentation/umcgctl.md.\n");
}

void umcgctl_err(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "umcgctl %s: ", cmd);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
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

/*
 * Does @pid catch @sig?  1 yes, 0 no, -errno when /proc cannot tell.  A
 * process that does not would be killed by SIGUSR2's default action.
 */
static int catches_signal(pid_t pid, int sig)
{
	char path[64], line[256];
	unsigned long long mask;
	int ret = -ENODATA;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "SigCgt: %llx", &mask) == 1) {
			ret = sig <= 64 && (mask >> (sig - 1)) & 1;
			break;
		}
	}
	fclose(f);
	return ret;
}

static int cmd_dump(int argc, char **argv)
{
	char namebuf[32];
	const char *name;
	uint64_t pid;
	int sig, ret;

	if (argc != 1) {
		fprintf(stderr, "umcgctl dump: %s\n", argc ? "too many arguments" : "no PID given");
		usage(stderr);
		return 2;
	}
	if (umcg_run_parse_u64(argv[0], 1, INT_MAX, &pid)) {
		fprintf(stderr, "umcgctl dump: '%s' is not a process ID\n", argv[0]);
		return 2;
	}
	if (umcg_run_dump_signal(&sig)) {
		fprintf(stderr, "umcgctl dump: $" UMCG_RUN_ENV_DUMP_SIGNAL "='%s' is not a usable signal\n",
			getenv(UMCG_RUN_ENV_DUMP_SIGNAL));
		return 2;
	}
	if (!sig) {
		fprintf(stderr, "umcgctl dump: $" UMCG_RUN_ENV_DUMP_SIGNAL "='%s': dumps are off\n",
			getenv(UMCG_RUN_ENV_DUMP_SIGNAL));
		return 2;
	}
	name = umcg_run_signal_name(sig, namebuf, sizeof(namebuf));
	if (kill((pid_t)pid, 0) && errno == ESRCH) {
		fprintf(stderr, "umcgctl dump: no process %llu\n", (unsigned long long)pid);
		return 1;
	}
	ret = catches_signal((pid_t)pid, sig);
	if (ret < 0) {
		fprintf(stderr, "umcgctl dump: process %llu: cannot read its signal state: %s\n",
			(unsigned long long)pid, strerror(-ret));
		return 1;
	}
	if (!ret) {
		fprintf(stderr, "umcgctl dump: process %llu does not catch signal %d (%s): "
			"it does not run under umcg-run (nor call umcg_dump_on_signal()), "
			"or with another $" UMCG_RUN_ENV_DUMP_SIGNAL "; not signalling it\n",
			(unsigned long long)pid, sig, name);
		return 1;
	}
	if (kill((pid_t)pid, sig)) {
		fprintf(stderr, "umcgctl dump: process %llu: %s\n", (unsigned long long)pid,
			errno == ESRCH ? "no such process" : strerror(errno));
		return 1;
	}
	printf("umcgctl: sent signal %d to %llu; it writes the dump to its standard error\n",
	       sig, (unsigned long long)pid);
	return 0;
}

int umcgctl_bad_option(const char *cmd, char **argv, int c)
{
	char opt[3] = { '-', (char)optopt, '\0' };
	/*
	 * getopt has stepped past the option as typed, except past an unknown
	 * short one in a bundle: optopt names that one.
	 */
	const char *name = c == '?' && optopt ? opt : argv[optind - 1];

	if (c == ':')
		umcgctl_err(cmd, "option '%s' needs an argument (see \"umcgctl %s --help\")",
			    name, cmd);
	else
		umcgctl_err(cmd, "unknown option '%s' (see \"umcgctl %s --help\")",
			    name, cmd);
	return UMCGCTL_USAGE;
}

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
} scx_cmds[] = {
#ifdef UMCG_HAVE_SCX
	{ "load",	umcgctl_load },
	{ "unload",	umcgctl_unload },
	{ "status",	umcgctl_status },
	{ "stats",	umcgctl_stats },
	{ "eject",	umcgctl_eject },
#else
	{ "load",	NULL },
	{ "unload",	NULL },
	{ "status",	NULL },
	{ "stats",	NULL },
	{ "eject",	NULL },
#endif
};

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "info"))
		return cmd_info();
	if (argc >= 2 && !strcmp(argv[1], "ext"))
		return cmd_ext(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "dump"))
		return cmd_dump(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "top"))
		return umcgctl_top(argc - 1, argv + 1);
	for (size_t i = 0; argc >= 2 && i < sizeof(scx_cmds) / sizeof(scx_cmds[0]); i++) {
		if (strcmp(argv[1], scx_cmds[i].name))
			continue;
		if (!scx_cmds[i].fn) {
			umcgctl_err(argv[1], "this umcgctl was built without the sched_ext "
				    "scheduler (bpf/ needs a target kernel with sched_ext, "
				    "clang, bpftool and libbpf)");
			return UMCGCTL_FAILED;
		}
		/* The subcommand parses argv[1..]: getopt skips argv[0]. */
		return scx_cmds[i].fn(argc - 1, argv + 1);
	}
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
