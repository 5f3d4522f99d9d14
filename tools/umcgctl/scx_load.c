// SPDX-License-Identifier: GPL-2.0
/*
 * scx_load.c - "umcgctl load", "umcgctl unload" and "umcgctl eject": put
 * the umcg sched_ext scheduler in place for the whole machine, pinned in
 * bpffs (bpf/scx_pin.h) so that it outlives umcgctl, take it away again,
 * and eject it on purpose for tests.  Root only.  Concurrent runs of these
 * serialise on an flock of the bpffs root.
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "umcgctl.h"

#ifndef SCHED_EXT
#define SCHED_EXT	7
#endif

/* How long "eject" waits for ops.exit once the request is made. */
#define EJECT_WAIT_MS	5000

static const char load_usage[] =
"Usage: umcgctl load [--group GROUP | --users] [--slice-us US] [--timeout-ms MS]\n"
"                    [-v]\n"
"\n"
"Load the umcg sched_ext scheduler (\"" UMCG_SCX_OPS_NAME "\") in partial mode and leave it\n"
"attached: only threads with policy SCHED_EXT are scheduled by it.  It stays\n"
"until \"umcgctl unload\", a reboot, or the kernel ejects it.  Its link, maps\n"
"and commands are pinned in " UMCG_SCX_PIN_DIR ", on the bpffs at " UMCG_SCX_BPFFS "\n"
"(mounted if missing); unprivileged processes may open its stats, task_stats\n"
"and exit_info maps read-only.\n"
"\n"
"Who may use it (run libumcg's scx backend on it) is root only unless one of\n"
"these is given; to change it, unload and load again:\n"
"  -g, --group=GROUP      root and the members of GROUP (a name or a number)\n"
"  -u, --users            every user\n"
"Either needs a kernel with bpf_task_work_schedule_signal() (Linux 6.18):\n"
"on an older one the servers share a doorbell ring that only root may map.\n"
"Unloading, ejecting and the scheduler's control map stay root's.\n"
"\n"
"  -l, --slice-us=US      time slice (default: the kernel's, 20000)\n"
"  -t, --timeout-ms=MS    watchdog: eject the scheduler when a runnable thread\n"
"                         waits longer than MS (default %u, 1..%u)\n"
"  -v, --verbose          print libbpf's debug messages\n"
"  -h, --help             print this help\n"
"\n"
"Exit status: 0 loaded; 1 failed; 2 bad arguments (also an unknown GROUP);\n"
"3 already loaded (also after the kernel ejected it: \"umcgctl unload\"\n"
"first); 4 another sched_ext scheduler is loaded; 5 not root; 6 the kernel\n"
"has no sched_ext.\n";

static const char unload_usage[] =
"Usage: umcgctl unload\n"
"\n"
"Unregister the umcg scheduler that \"umcgctl load\" loaded, report how it\n"
"exited (UNREG, or how the kernel had ejected it), and remove its pins.\n"
"Threads with policy SCHED_EXT keep it and run in the fair class.\n"
"\n"
"Exit status: 0 unloaded (or leftover pins removed); 1 failed; 2 bad\n"
"arguments; 3 not loaded; 5 not root.\n";

static const char eject_usage[] =
"Usage: umcgctl eject [--error]\n"
"\n"
"Testing aid: make the loaded umcg scheduler eject itself through its test\n"
"hook, the way the kernel ejects a failing scheduler, and wait for it.  The\n"
"pins stay, so \"umcgctl status\" reports the exit; \"umcgctl unload\" cleans up.\n"
"\n"
"  -e, --error    exit through scx_bpf_error() (kind ERROR_BPF; the kernel\n"
"                 logs it as an error); default: scx_bpf_exit() (kind\n"
"                 UNREG_BPF, exit code %d)\n"
"  -h, --help     print this help\n"
"\n"
"Exit status: 0 ejected; 1 failed; 2 bad arguments; 3 not loaded or not\n"
"running; 5 not root.\n";

/* Root and sched_ext, or the exit status that says which is missing. */
static int check_privileged(const char *cmd)
{
	if (geteuid() != 0) {
		umcgctl_err(cmd, "must run as root: %s", cmd[0] == 'l' ?
			    "loading a sched_ext scheduler needs CAP_BPF and CAP_SYS_ADMIN" :
			    "the scheduler's link and control map are root's");
		return UMCGCTL_NOT_ROOT;
	}
	if (access("/sys/kernel/sched_ext", F_OK)) {
		umcgctl_err(cmd, "this kernel has no sched_ext (CONFIG_SCHED_CLASS_EXT): "
			    "/sys/kernel/sched_ext is missing");
		return UMCGCTL_NO_SCX;
	}
	return UMCGCTL_OK;
}

/* Attach and pin; the caller holds the lock and found sched_ext free. */
static int load_locked(const struct umcg_scx_opts *opts,
		       const struct umcg_scx_access *acc)
{
	char busy[512];
	struct scx_view v;
	struct umcg_scx *s;
	int ret;

	ret = umcg_scx_open(&s, opts);
	if (ret) {
		umcgctl_err("load", "cannot load the BPF scheduler: %s%s", strerror(-ret),
			    opts->verbose ? "" : " (-v shows libbpf's log)");
		return UMCGCTL_FAILED;
	}
	ret = umcg_scx_attach(s);
	if (ret) {
		umcg_scx_close(s);
		if (ret == -EBUSY) {
			scx_view_read(&v);
			scx_busy_text(&v, busy, sizeof(busy));
			umcgctl_err("load", "%s", busy);
			return UMCGCTL_BUSY;
		}
		umcgctl_err("load", "cannot attach the scheduler: %s", strerror(-ret));
		return UMCGCTL_FAILED;
	}
	ret = umcg_scx_pin(s, UMCG_SCX_PIN_DIR, acc);
	if (ret) {
		/* Closing detaches: nothing stays behind. */
		umcg_scx_close(s);
		umcgctl_err("load", "cannot pin the scheduler in %s: %s; not loaded",
			    UMCG_SCX_PIN_DIR, strerror(-ret));
		return UMCGCTL_FAILED;
	}
	umcg_scx_close(s);
	return UMCGCTL_OK;
}

int umcgctl_load(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "group",	required_argument,	NULL, 'g' },
		{ "users",	no_argument,		NULL, 'u' },
		{ "slice-us",	required_argument,	NULL, 'l' },
		{ "timeout-ms",	required_argument,	NULL, 't' },
		{ "verbose",	no_argument,		NULL, 'v' },
		{ "help",	no_argument,		NULL, 'h' },
		{ 0 }
	};
	struct umcg_scx_opts opts = { .timeout_ms = UMCG_SCX_TIMEOUT_MS_DFL };
	struct umcg_scx_access acc = { .users = UMCG_SCX_USERS_ROOT };
	char who[128];
	bool who_given = false;
	unsigned long long val, slice_us = 0;
	char text[UEI_MSG_LEN + 512];
	unsigned int did;
	struct scx_view v;
	int c, lock, ret;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:g:ul:t:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'g':
		case 'u':
			if (who_given) {
				umcgctl_err("load", "give one of --group and --users, once");
				return UMCGCTL_USAGE;
			}
			who_given = true;
			if (c == 'u') {
				acc.users = UMCG_SCX_USERS_ALL;
				break;
			}
			if (umcgctl_parse_group(optarg, &acc.gid)) {
				umcgctl_err("load", "bad --group '%s': no such group in "
					    "the group database", optarg);
				return UMCGCTL_USAGE;
			}
			acc.users = UMCG_SCX_USERS_GROUP;
			break;
		case 'l':
			/* At most an hour: the kernel takes any u64 of ns. */
			if (umcgctl_parse_uint(optarg, 1, 3600ULL * 1000 * 1000, &val)) {
				umcgctl_err("load", "bad --slice-us '%s': expected "
					    "microseconds, 1..3600000000", optarg);
				return UMCGCTL_USAGE;
			}
			slice_us = val;
			opts.slice_ns = val * 1000;
			break;
		case 't':
			if (umcgctl_parse_uint(optarg, 1, UMCG_SCX_TIMEOUT_MS_MAX, &val)) {
				umcgctl_err("load", "bad --timeout-ms '%s': expected "
					    "milliseconds, 1..%u", optarg,
					    UMCG_SCX_TIMEOUT_MS_MAX);
				return UMCGCTL_USAGE;
			}
			opts.timeout_ms = val;
			break;
		case 'v':
			opts.verbose = 1;
			break;
		case 'h':
			printf(load_usage, UMCG_SCX_TIMEOUT_MS_DFL, UMCG_SCX_TIMEOUT_MS_MAX);
			return UMCGCTL_OK;
		default:
			return umcgctl_bad_option("load", argv, c);
		}
	}
	if (optind < argc) {
		umcgctl_err("load", "unexpected argument '%s' (see \"umcgctl load --help\")",
			    argv[optind]);
		return UMCGCTL_USAGE;
	}
	ret = check_privileged("load");
	if (ret)
		return ret;
	if (acc.users != UMCG_SCX_USERS_ROOT && !umcg_scx_kernel_has_bells()) {
		umcgctl_err("load", "--group and --users need a kernel with "
			    "bpf_task_work_schedule_signal() (Linux 6.18 or later): "
			    "without it the servers of every process share one doorbell "
			    "ring, whose consumer page any of them could write; load "
			    "for root only on this kernel");
		return UMCGCTL_FAILED;
	}

	ret = umcg_scx_bpffs_prepare(UMCG_SCX_PIN_DIR, &did);
	if (ret) {
		umcgctl_err("load", "cannot ready the bpffs at %s: %s", UMCG_SCX_BPFFS,
			    strerror(-ret));
		return UMCGCTL_FAILED;
	}
	if (did & UMCG_SCX_BPFFS_MOUNTED)
		printf("umcgctl: mounted bpffs on %s\n", UMCG_SCX_BPFFS);
	if (did & UMCG_SCX_BPFFS_CHMOD)
		printf("umcgctl: gave others search permission on %s, so that "
		       "unprivileged processes can open the scheduler's maps\n",
		       UMCG_SCX_BPFFS);

	lock = umcg_scx_pin_lock(UMCG_SCX_PIN_DIR);
	if (lock < 0) {
		umcgctl_err("load", "cannot lock %s: %s", UMCG_SCX_BPFFS, strerror(-lock));
		return UMCGCTL_FAILED;
	}
	scx_view_read(&v);
	if (scx_view_running(&v)) {
		umcgctl_err("load", "the umcg scheduler is already loaded (pinned at %s); "
			    "to load it with other settings, \"umcgctl unload\" first",
			    UMCG_SCX_PIN_DIR);
		ret = UMCGCTL_STATE;
	} else if (scx_view_ejected(&v)) {
		scx_exit_text(&v.ei, text, sizeof(text));
		umcgctl_err("load", "the umcg scheduler loaded before was ejected by the "
			    "kernel: %s; run \"umcgctl unload\" to clean up, then load again",
			    text);
		ret = UMCGCTL_STATE;
	} else if (v.pinned) {
		umcgctl_err("load", "cannot tell whether the scheduler is loaded: %s: %s",
			    UMCG_SCX_PIN_DIR, strerror(-(v.pinned < 0 ? v.pinned : v.ei_ret)));
		ret = UMCGCTL_FAILED;
	} else if (strcmp(v.state, "disabled")) {
		scx_busy_text(&v, text, sizeof(text));
		umcgctl_err("load", "%s", text);
		ret = UMCGCTL_BUSY;
	} else {
		/* Leftovers of a failed load or unload: umcg_scx_pin() makes it anew. */
		ret = umcg_scx_unpin(UMCG_SCX_PIN_DIR);
		if (ret) {
			umcgctl_err("load", "cannot clear %s: %s", UMCG_SCX_PIN_DIR,
				    strerror(-ret));
			ret = UMCGCTL_FAILED;
		} else {
			ret = load_locked(&opts, &acc);
		}
	}
	close(lock);
	if (ret)
		return ret;

	if (slice_us)
		printf("umcgctl: loaded \"%s\" (slice %llu us, watchdog %u ms), pinned at %s\n",
		       UMCG_SCX_OPS_NAME, slice_us, opts.timeout_ms, UMCG_SCX_PIN_DIR);
	else
		printf("umcgctl: loaded \"%s\" (slice: kernel default, watchdog %u ms), "
		       "pinned at %s\n", UMCG_SCX_OPS_NAME, opts.timeout_ms,
		       UMCG_SCX_PIN_DIR);
	scx_access_text(&acc, who, sizeof(who));
	printf("umcgctl: usable by %s%s\n", who, acc.users == UMCG_SCX_USERS_ROOT ?
	       " (\"umcgctl load --group GROUP\" or \"--users\" lets others use it)" : "");
	return UMCGCTL_OK;
}

/*
 * A subcommand without options but --help: 0 to go on, -1 when it printed
 * the help (exit 0), else the exit status.
 */
static int no_options(const char *cmd, const char *usage, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help",	no_argument,		NULL, 'h' },
		{ 0 }
	};
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage, stdout);
			return -1;
		}
		return umcgctl_bad_option(cmd, argv, c);
	}
	if (optind < argc) {
		umcgctl_err(cmd, "unexpected argument '%s' (see \"umcgctl %s --help\")",
			    argv[optind], cmd);
		return UMCGCTL_USAGE;
	}
	return 0;
}

int umcgctl_unload(int argc, char **argv)
{
	struct user_exit_info before, ei;
	char text[UEI_MSG_LEN + 256];
	struct scx_view v;
	int lock, ret;

	ret = no_options("unload", unload_usage, argc, argv);
	if (ret)
		return ret < 0 ? UMCGCTL_OK : ret;
	if (geteuid() != 0) {
		umcgctl_err("unload", "must run as root: the scheduler's link is root's");
		return UMCGCTL_NOT_ROOT;
	}
	lock = umcg_scx_pin_lock(UMCG_SCX_PIN_DIR);
	if (lock == -ENOENT) {
		umcgctl_err("unload", "the umcg scheduler is not loaded (no %s)",
			    UMCG_SCX_BPFFS);
		return UMCGCTL_STATE;
	}
	if (lock < 0) {
		umcgctl_err("unload", "cannot lock %s: %s", UMCG_SCX_BPFFS, strerror(-lock));
		return UMCGCTL_FAILED;
	}
	scx_view_read(&v);
	if (v.pinned < 0) {
		umcgctl_err("unload", "cannot tell whether the scheduler is loaded: %s: %s",
			    UMCG_SCX_PIN_DIR, strerror(-v.pinned));
		ret = UMCGCTL_FAILED;
	} else if (!v.pinned) {
		if (!access(UMCG_SCX_PIN_DIR, F_OK)) {
			ret = umcg_scx_unpin(UMCG_SCX_PIN_DIR);
			if (ret) {
				umcgctl_err("unload", "cannot remove the leftovers in %s: %s",
					    UMCG_SCX_PIN_DIR, strerror(-ret));
				ret = UMCGCTL_FAILED;
			} else {
				printf("umcgctl: the umcg scheduler was not loaded; removed "
				       "the leftover pins in %s\n", UMCG_SCX_PIN_DIR);
			}
		} else {
			if (!strcmp(v.ops, UMCG_SCX_OPS_NAME))
				umcgctl_err("unload", "the umcg scheduler is not loaded by "
					    "umcgctl; the running \"%s\" is held by some "
					    "process (umcg-scx, a test): stop that", v.ops);
			else
				umcgctl_err("unload", "the umcg scheduler is not loaded");
			ret = UMCGCTL_STATE;
		}
	} else {
		before = v.ei;
		ret = umcg_scx_pinned_unload(UMCG_SCX_PIN_DIR, &ei);
		if (ret) {
			umcgctl_err("unload", "cannot unload the scheduler pinned at %s: %s",
				    UMCG_SCX_PIN_DIR, strerror(-ret));
			ret = UMCGCTL_FAILED;
		} else {
			scx_exit_text(&ei, text, sizeof(text));
			if (!v.ei_ret && before.kind != UMCG_SCX_EXIT_NONE)
				printf("umcgctl: unloaded \"%s\"; the kernel had ejected it "
				       "before: %s\n", UMCG_SCX_OPS_NAME, text);
			else
				printf("umcgctl: unloaded \"%s\"; exit %s\n",
				       UMCG_SCX_OPS_NAME, text);
		}
	}
	close(lock);
	return ret;
}

static void sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

int umcgctl_eject(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "error",	no_argument,		NULL, 'e' },
		{ "help",	no_argument,		NULL, 'h' },
		{ 0 }
	};
	struct sched_param sp = { .sched_priority = 0 };
	char text[UEI_MSG_LEN + 256];
	__u32 how = UMCG_SCX_EJECT_EXIT;
	struct scx_view v;
	int c, lock, ret;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:eh", longopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			how = UMCG_SCX_EJECT_ERROR;
			break;
		case 'h':
			printf(eject_usage, UMCG_SCX_EJECT_CODE);
			return UMCGCTL_OK;
		default:
			return umcgctl_bad_option("eject", argv, c);
		}
	}
	if (optind < argc) {
		umcgctl_err("eject", "unexpected argument '%s' (see \"umcgctl eject --help\")",
			    argv[optind]);
		return UMCGCTL_USAGE;
	}
	ret = check_privileged("eject");
	if (ret)
		return ret;
	lock = umcg_scx_pin_lock(UMCG_SCX_PIN_DIR);
	if (lock < 0) {
		umcgctl_err("eject", "the umcg scheduler is not loaded (%s: %s)",
			    UMCG_SCX_BPFFS, strerror(-lock));
		return lock == -ENOENT ? UMCGCTL_STATE : UMCGCTL_FAILED;
	}
	scx_view_read(&v);
	if (!scx_view_running(&v)) {
		umcgctl_err("eject", "the umcg scheduler is not %s",
			    scx_view_ejected(&v) ? "running: the kernel ejected it already"
						 : "loaded by umcgctl");
		close(lock);
		return UMCGCTL_STATE;
	}
	ret = umcg_scx_pinned_request_eject(UMCG_SCX_PIN_DIR, how);
	if (ret) {
		umcgctl_err("eject", "cannot write the request into %s/%s: %s",
			    UMCG_SCX_PIN_DIR, UMCG_SCX_PIN_CTL, strerror(-ret));
		close(lock);
		return UMCGCTL_FAILED;
	}
	/* The hook fires in ops.enable: enter sched_ext, then leave it. */
	if (sched_setscheduler(0, SCHED_EXT, &sp)) {
		ret = -errno;
	} else {
		sched_setscheduler(0, SCHED_OTHER, &sp);
		for (int ms = 0; ms < EJECT_WAIT_MS; ms += 10) {
			ret = umcg_scx_pinned_exit_info(UMCG_SCX_PIN_DIR, &v.ei);
			if (ret || v.ei.kind != UMCG_SCX_EXIT_NONE)
				break;
			sleep_ms(10);
		}
	}
	close(lock);
	if (ret) {
		umcgctl_err("eject", "%s", strerror(-ret));
		return UMCGCTL_FAILED;
	}
	if (v.ei.kind == UMCG_SCX_EXIT_NONE) {
		umcgctl_err("eject", "the scheduler did not exit within %d ms",
			    EJECT_WAIT_MS);
		return UMCGCTL_FAILED;
	}
	scx_exit_text(&v.ei, text, sizeof(text));
	printf("umcgctl: ejected \"%s\": %s\n", UMCG_SCX_OPS_NAME, text);
	printf("umcgctl: its pins remain; \"umcgctl unload\" cleans up\n");
	return UMCGCTL_OK;
}
