// SPDX-License-Identifier: GPL-2.0
/*
 * scx_status.c - "umcgctl status" and "umcgctl stats": what sched_ext runs
 * and how the scheduler "umcgctl load" pinned is doing, read from sysfs
 * and from the pinned maps.  Need no root where the kernel lets
 * unprivileged processes open pinned maps (bpf/scx_pin.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "umcgctl.h"

static const char status_usage[] =
"Usage: umcgctl status\n"
"\n"
"Print the sched_ext state (/sys/kernel/sched_ext/state and root/ops),\n"
"whether the umcg scheduler is loaded by \"umcgctl load\", and who may use it\n"
"(root only, a group, every user: \"umcgctl load --help\").  When the kernel\n"
"ejected it (watchdog, runtime error, SysRq-S), print the exit kind, code,\n"
"reason and message that the scheduler recorded, and what to do.\n"
"\n"
"Exit status (as LSB init scripts): 0 loaded and running; 1 loaded, then\n"
"ejected by the kernel; 2 bad arguments; 3 not loaded (also: no sched_ext in\n"
"this kernel, another scheduler loaded); 4 cannot tell, as printed.\n";

static const char stats_usage[] =
"Usage: umcgctl stats [--interval SECS [--count N]] [-v]\n"
"\n"
"Print the counters of the umcg scheduler that \"umcgctl load\" loaded,\n"
"summed over all CPUs, one \"NAME VALUE\" line each (uapi/umcg_scx.h says\n"
"what each counts).\n"
"\n"
"  -i, --interval=SECS   print again every SECS seconds (1..86400), with the\n"
"                        change since the previous print, until interrupted\n"
"  -n, --count=N         with --interval: stop after N prints\n"
"  -v, --verbose         also each CPU's own count\n"
"  -h, --help            print this help\n"
"\n"
"Exit status: 0 printed; 1 failed; 2 bad arguments; 3 not loaded.\n";

/* Why a pinned map cannot be opened, for a user who is not root. */
static const char *open_hint(int err)
{
	if (geteuid() == 0)
		return "";
	if (err == -EPERM)
		return " (this kernel does not let unprivileged processes use "
		       "pinned BPF maps: run as root)";
	if (err == -EACCES)
		return " (no permission on the pin or a directory on its way: "
		       "run as root, or \"umcgctl load\" again)";
	return "";
}

/* The "users:" line: who may run libumcg on the pinned scheduler. */
static void print_users(void)
{
	struct umcg_scx_access acc;
	char who[128];
	int ret;

	ret = umcg_scx_pinned_access(UMCG_SCX_PIN_DIR, &acc);
	if (ret == -ENOENT) {
		printf("users:      none: built without the enforcer, libumcg "
		       "cannot use it\n");
		return;
	}
	if (ret) {
		printf("users:      unknown: %s\n", strerror(-ret));
		return;
	}
	scx_access_text(&acc, who, sizeof(who));
	printf("users:      %s%s\n", who, acc.users == UMCG_SCX_USERS_ROOT ?
	       " (\"umcgctl load --group GROUP\" or \"--users\" lets others use it)" : "");
}

int umcgctl_status(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help",	no_argument,		NULL, 'h' },
		{ 0 }
	};
	struct scx_view v;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
		if (c == 'h') {
			fputs(status_usage, stdout);
			return UMCGCTL_OK;
		}
		return umcgctl_bad_option("status", argv, c);
	}
	if (optind < argc) {
		umcgctl_err("status", "unexpected argument '%s' (see \"umcgctl status --help\")",
			    argv[optind]);
		return UMCGCTL_USAGE;
	}

	scx_view_read(&v);
	if (!v.has_scx) {
		printf("sched_ext:  not in this kernel (no /sys/kernel/sched_ext)\n");
		printf("umcg:       not loaded\n");
		return UMCGCTL_STATUS_NOT_LOADED;
	}
	if (v.ops[0])
		printf("sched_ext:  %s, scheduler \"%s\"\n", v.state, v.ops);
	else
		printf("sched_ext:  %s, no scheduler\n", v.state[0] ? v.state : "?");

	if (v.pinned < 0 || (v.pinned == 1 && v.ei_ret)) {
		int err = v.pinned < 0 ? v.pinned : v.ei_ret;

		printf("umcg:       unknown: cannot read %s: %s%s\n",
		       v.pinned < 0 ? UMCG_SCX_PIN_DIR : UMCG_SCX_PIN_DIR "/" UMCG_SCX_PIN_EXIT_INFO,
		       strerror(-err), open_hint(err));
		return UMCGCTL_STATUS_UNKNOWN;
	}
	if (scx_view_running(&v)) {
		printf("umcg:       loaded, running (pinned at %s)\n", UMCG_SCX_PIN_DIR);
		print_users();
		if (strcmp(v.ops, UMCG_SCX_OPS_NAME) || strcmp(v.state, "enabled"))
			printf("note:       sysfs does not show \"%s\" enabled yet: "
			       "it is being loaded or ejected\n", UMCG_SCX_OPS_NAME);
		return UMCGCTL_STATUS_RUNNING;
	}
	if (scx_view_ejected(&v)) {
		const struct user_exit_info *ei = &v.ei;

		printf("umcg:       ejected by the kernel; its pins remain at %s\n",
		       UMCG_SCX_PIN_DIR);
		printf("exit kind:  %s (%d)%s\n", umcg_scx_exit_kind_name(ei->kind),
		       ei->kind, ei->kind >= UMCG_SCX_EXIT_ERROR ? ", an error" : "");
		printf("exit code:  %lld%s\n", (long long)ei->exit_code,
		       UEI_ECODE_RESTART(ei->exit_code) ?
		       " (the kernel asks for a restart)" : "");
		printf("reason:     %s\n", ei->reason[0] ? ei->reason : "-");
		printf("message:    %s\n", ei->msg[0] ? ei->msg : "-");
		printf("to do:      \"umcgctl unload\" to clean up, then \"umcgctl load\" "
		       "to load it again\n");
		return UMCGCTL_STATUS_EJECTED;
	}
	if (!strcmp(v.ops, UMCG_SCX_OPS_NAME))
		printf("umcg:       not loaded by umcgctl; the running \"%s\" is an "
		       "instance that some process holds (umcg-scx, a test)\n", v.ops);
	else if (v.ops[0])
		printf("umcg:       not loaded; sched_ext runs another scheduler, \"%s\"\n",
		       v.ops);
	else
		printf("umcg:       not loaded\n");
	return UMCGCTL_STATUS_NOT_LOADED;
}

/*
 * One table: "NAME TOTAL" lines; with @change, a header and the change
 * since @prev ("-" when @prev is NULL); with @percpu, a header and each
 * CPU's count.
 */
static void print_stats(const struct umcg_scx_stats *sum, bool change,
			const struct umcg_scx_stats *prev,
			const struct umcg_scx_stats *percpu, int nr_cpus)
{
	if (change || percpu) {
		printf("%-10s %14s", "counter", "total");
		if (change)
			printf(" %12s", "change");
		for (int cpu = 0; percpu && cpu < nr_cpus; cpu++) {
			char name[16];

			snprintf(name, sizeof(name), "cpu%d", cpu);
			printf(" %12s", name);
		}
		printf("\n");
	}
	for (unsigned int i = 0; i < UMCG_SCX_NR_STATS; i++) {
		printf("%-10s %14llu", umcg_scx_stat_name(i),
		       (unsigned long long)sum->cnt[i]);
		if (change && prev)
			printf(" %+12lld", (long long)(sum->cnt[i] - prev->cnt[i]));
		else if (change)
			printf(" %12s", "-");
		for (int cpu = 0; percpu && cpu < nr_cpus; cpu++)
			printf(" %12llu", (unsigned long long)percpu[cpu].cnt[i]);
		printf("\n");
	}
	fflush(stdout);
}

int umcgctl_stats(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "interval",	required_argument,	NULL, 'i' },
		{ "count",	required_argument,	NULL, 'n' },
		{ "verbose",	no_argument,		NULL, 'v' },
		{ "help",	no_argument,		NULL, 'h' },
		{ 0 }
	};
	unsigned long long interval = 0, count = 0, val;
	struct umcg_scx_stats sum, prev, *percpu = NULL;
	struct user_exit_info ei;
	bool verbose = false;
	int c, nr_cpus, ret;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:i:n:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			if (umcgctl_parse_uint(optarg, 1, 86400, &val)) {
				umcgctl_err("stats", "bad --interval '%s': expected "
					    "seconds, 1..86400", optarg);
				return UMCGCTL_USAGE;
			}
			interval = val;
			break;
		case 'n':
			if (umcgctl_parse_uint(optarg, 1, 1ULL << 31, &val)) {
				umcgctl_err("stats", "bad --count '%s': expected a "
					    "positive number", optarg);
				return UMCGCTL_USAGE;
			}
			count = val;
			break;
		case 'v':
			verbose = true;
			break;
		case 'h':
			fputs(stats_usage, stdout);
			return UMCGCTL_OK;
		default:
			return umcgctl_bad_option("stats", argv, c);
		}
	}
	if (optind < argc) {
		umcgctl_err("stats", "unexpected argument '%s' (see \"umcgctl stats --help\")",
			    argv[optind]);
		return UMCGCTL_USAGE;
	}
	if (count && !interval) {
		umcgctl_err("stats", "--count needs --interval");
		return UMCGCTL_USAGE;
	}

	ret = umcg_scx_pinned(UMCG_SCX_PIN_DIR);
	if (ret <= 0) {
		if (!ret)
			umcgctl_err("stats", "the umcg scheduler is not loaded (nothing "
				    "pinned at %s; \"umcgctl load\" loads it)", UMCG_SCX_PIN_DIR);
		else
			umcgctl_err("stats", "cannot read %s: %s%s", UMCG_SCX_PIN_DIR,
				    strerror(-ret), open_hint(ret));
		return ret ? UMCGCTL_FAILED : UMCGCTL_STATE;
	}
	if (!umcg_scx_pinned_exit_info(UMCG_SCX_PIN_DIR, &ei) &&
	    ei.kind != UMCG_SCX_EXIT_NONE)
		umcgctl_err("stats", "note: the kernel ejected the scheduler (%s): "
			    "these counters are from before", umcg_scx_exit_kind_name(ei.kind));

	nr_cpus = umcg_scx_nr_cpus();
	if (nr_cpus < 0) {
		umcgctl_err("stats", "cannot count the CPUs: %s", strerror(-nr_cpus));
		return UMCGCTL_FAILED;
	}
	if (verbose) {
		percpu = calloc(nr_cpus, sizeof(*percpu));
		if (!percpu) {
			umcgctl_err("stats", "out of memory");
			return UMCGCTL_FAILED;
		}
	}
	for (unsigned long long n = 0;; n++) {
		ret = umcg_scx_pinned_stats(UMCG_SCX_PIN_DIR, &sum, percpu, nr_cpus);
		if (ret) {
			umcgctl_err("stats", "cannot read %s/%s: %s%s", UMCG_SCX_PIN_DIR,
				    UMCG_SCX_PIN_STATS, strerror(-ret), open_hint(ret));
			break;
		}
		if (interval) {
			time_t now = time(NULL);
			char when[32];

			strftime(when, sizeof(when), "%F %T", localtime(&now));
			printf("%s# %s\n", n ? "\n" : "", when);
		}
		print_stats(&sum, interval, n ? &prev : NULL, percpu, nr_cpus);
		prev = sum;
		if (!interval || (count && n + 1 >= count))
			break;
		sleep(interval);
	}
	free(percpu);
	return ret ? UMCGCTL_FAILED : UMCGCTL_OK;
}
