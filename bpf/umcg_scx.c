// SPDX-License-Identifier: GPL-2.0
/*
 * umcg_scx.c - umcg-scx, the foreground loader of the umcg sched_ext
 * scheduler.
 *
 * Loads and attaches umcg.bpf.c in partial mode, optionally prints its
 * counters, and stays until SIGINT or SIGTERM or until the kernel unloads
 * the scheduler; then it detaches and reports why the scheduler stopped.
 * When the kernel asks for a restart (e.g. a CPU was hotplugged between
 * load and attach), it loads the scheduler again.  Nothing is pinned: the
 * scheduler lives as long as this process.  "umcgctl load" is the
 * persistent way (tools/umcgctl/scx_load.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "scx_loader.h"
#include <uapi/umcg.h>

#define PROG	"umcg-scx"

static volatile sig_atomic_t stop_req;

static void on_signal(int sig)
{
	stop_req = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [OPTION]...\n"
"\n"
"Load the umcg sched_ext scheduler (\"" UMCG_SCX_OPS_NAME "\") and attach it in partial mode:\n"
"only threads that opt in with sched_setscheduler(tid, SCHED_EXT=7, ...)\n"
"leave the fair class.  Runs until SIGINT or SIGTERM, or until the kernel\n"
"unloads the scheduler (watchdog, error, SysRq-S), then reports why the\n"
"scheduler stopped.  The policy is described at the top of bpf/umcg.bpf.c.\n"
"To load it for the machine without a process of its own, use \"umcgctl load\".\n"
"\n"
"  -s, --stats=SECS       print the counters every SECS seconds (default: never)\n"
"  -t, --timeout-ms=MS    watchdog: eject the scheduler when a runnable thread\n"
"                         waits longer than MS (default %u, at most %u)\n"
"  -l, --slice-us=US      time slice (default: the kernel's, 20000)\n"
"  -v, --verbose          print libbpf's debug messages\n"
"  -h, --help             print this help\n"
"\n"
"Exit status: 0 when stopped by a signal, 1 when the scheduler could not be\n"
"loaded or the kernel unloaded it, 2 on a usage error.\n",
		UMCG_SCX_TIMEOUT_MS_DFL, UMCG_SCX_TIMEOUT_MS_MAX);
}

static __attribute__((format(printf, 1, 2))) void say(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs(PROG ": ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static void say_busy(void)
{
	char state[32] = "?", ops[128] = "?";

	umcg_scx_sysfs_read("state", state, sizeof(state));
	umcg_scx_sysfs_read("root/ops", ops, sizeof(ops));
	say("another sched_ext scheduler is loaded: \"%s\" (state %s); only one can be",
	    ops, state);
}

/* Why we cannot attach, in words; 0 when we can. */
static int check_system(void)
{
	int ret = umcg_scx_probe();

	switch (ret) {
	case 0:
		break;
	case -ENOENT:
		say("this kernel has no sched_ext (CONFIG_SCHED_CLASS_EXT): %s",
		    "/sys/kernel/sched_ext is missing");
		break;
	case -EPERM:
		say("must run as root: %s",
		    "loading a sched_ext scheduler needs CAP_BPF and CAP_SYS_ADMIN");
		break;
	case -EBUSY:
		say_busy();
		break;
	default:
		say("cannot read /sys/kernel/sched_ext/state: %s", strerror(-ret));
		break;
	}
	return ret;
}

static void print_stats(const struct umcg_scx *s)
{
	struct umcg_scx_stats st;
	int ret;

	ret = umcg_scx_read_stats(s, &st);
	if (ret) {
		say("cannot read the counters: %s", strerror(-ret));
		return;
	}
	printf("stats");
	for (unsigned int i = 0; i < UMCG_SCX_NR_STATS; i++)
		printf(" %s=%llu", umcg_scx_stat_name(i),
		       (unsigned long long)st.cnt[i]);
	printf("\n");
	fflush(stdout);
}

static unsigned long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

/*
 * Load, attach, wait for a signal or the scheduler's exit, detach.  0 with
 * @ei filled in once the scheduler ran; -errno when it never attached.
 */
static int run_once(const struct umcg_scx_opts *opts, unsigned int stats_s,
		    struct user_exit_info *ei)
{
	const struct timespec tick = { .tv_nsec = 100 * 1000 * 1000 };
	const char *dump;
	unsigned long long next_stats;
	struct umcg_scx *s;
	int ret;

	ret = umcg_scx_open(&s, opts);
	if (ret) {
		say("cannot load the BPF scheduler: %s", strerror(-ret));
		return ret;
	}
	ret = umcg_scx_attach(s);
	if (ret) {
		if (ret == -EBUSY)
			say_busy();
		else
			say("cannot attach the scheduler: %s", strerror(-ret));
		umcg_scx_close(s);
		return ret;
	}
	say("attached \"%s\"; threads opt in with sched_setscheduler(tid, SCHED_EXT)",
	    UMCG_SCX_OPS_NAME);

	next_stats = now_ms() + stats_s * 1000ULL;
	while (!stop_req && !umcg_scx_exited(s)) {
		/* A signal cuts the nap short. */
		nanosleep(&tick, NULL);
		if (stats_s && now_ms() >= next_stats) {
			print_stats(s);
			next_stats += stats_s * 1000ULL;
		}
	}
	if (stats_s)
		print_stats(s);

	ret = umcg_scx_detach(s);
	if (ret)
		say("detach: %s", strerror(-ret));
	umcg_scx_exit_info(s, ei);
	dump = umcg_scx_exit_dump(s);
	if (dump[0])
		say("the kernel's dump of the exit:\n%s", dump);
	umcg_scx_close(s);
	return 0;
}

static int parse_uint(const char *arg, unsigned long max, unsigned long *val)
{
	char *end;

	errno = 0;
	*val = strtoul(arg, &end, 10);
	if (errno || end == arg || *end || arg[0] == '-' || *val > max)
		return -EINVAL;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "stats",	required_argument,	NULL, 's' },
		{ "timeout-ms",	required_argument,	NULL, 't' },
		{ "slice-us",	required_argument,	NULL, 'l' },
		{ "verbose",	no_argument,		NULL, 'v' },
		{ "help",	no_argument,		NULL, 'h' },
		{ 0 }
	};
	struct umcg_scx_opts opts = { 0 };
	struct user_exit_info ei;
	struct sigaction sa = { .sa_handler = on_signal };
	unsigned int stats_s = 0;
	unsigned long val;
	int c;

	while ((c = getopt_long(argc, argv, "s:t:l:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_uint(optarg, 24 * 3600, &val)) {
				say("bad --stats interval: %s", optarg);
				return 2;
			}
			stats_s = val;
			break;
		case 't':
			if (parse_uint(optarg, UMCG_SCX_TIMEOUT_MS_MAX, &val) || !val) {
				say("bad --timeout-ms: %s (1..%u)", optarg,
				    UMCG_SCX_TIMEOUT_MS_MAX);
				return 2;
			}
			opts.timeout_ms = val;
			break;
		case 'l':
			if (parse_uint(optarg, ULONG_MAX / 1000, &val) || !val) {
				say("bad --slice-us: %s", optarg);
				return 2;
			}
			opts.slice_ns = val * 1000ULL;
			break;
		case 'v':
			opts.verbose = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		say("unexpected argument: %s", argv[optind]);
		usage(stderr);
		return 2;
	}

	if (check_system())
		return 1;

	/*
	 * A scheduler's user space must not fault while the threads it is
	 * responsible for wait on it; lock everything in now.
	 */
	if (mlockall(MCL_CURRENT | MCL_FUTURE))
		say("warning: mlockall: %s", strerror(errno));

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	for (;;) {
		if (run_once(&opts, stats_s, &ei))
			return 1;
		if (ei.kind == UMCG_SCX_EXIT_NONE) {
			say("scheduler detached but its exit was not recorded");
			return 1;
		}
		say("scheduler exited: %s (%d), code %lld: %s%s%s",
		    umcg_scx_exit_kind_name(ei.kind), ei.kind,
		    (long long)ei.exit_code, ei.reason,
		    ei.msg[0] ? ": " : "", ei.msg);
		if (stop_req || !UEI_ECODE_RESTART(ei.exit_code))
			break;
		say("restarting, as the kernel asked");
	}
	return stop_req && ei.kind == UMCG_SCX_EXIT_UNREG ? 0 : 1;
}
