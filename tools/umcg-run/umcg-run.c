// SPDX-License-Identifier: GPL-2.0
/*
 * umcg-run - run an unmodified pthread program under libumcg.
 *
 * Checks the options, makes sure the backend asked for works here (it sets
 * a group up and tears it down again), writes the settings into the
 * environment (libumcg/preload/umcg_run_env.h), puts libumcg-preload.so in
 * front of LD_PRELOAD and executes the program.  Everything else happens
 * inside the program, in the preloaded library (libumcg/preload/preload.c).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <umcg.h>
#include <umcg/policy.h>

#include "umcg_run_env.h"

#define PROG	"umcg-run"

/* Exit codes besides the program's own. */
#define EXIT_SETUP	1	/* backend not available, library not found */
#define EXIT_USAGE	2
#define EXIT_NOEXEC	126
#define EXIT_NOTFOUND	127

static void usage(FILE *f)
{
	fprintf(f,
"Usage: " PROG " [OPTION]... [--] PROGRAM [ARG]...\n"
"\n"
"Run PROGRAM, an unmodified dynamically linked pthread program, with\n"
"libumcg preloaded: its main thread and every thread it creates become\n"
"workers of one libumcg group, and at most one of them runs on each of the\n"
"group's cores at a time.  libumcg's policy picks the next runnable worker\n"
"whenever one blocks, exits or yields.\n"
"\n"
"Options:\n"
"  -c, --cores=N          manage N cores: the first N CPUs this process may\n"
"                         run on (default: all of them, as the affinity mask\n"
"                         says); at most the number of online CPUs\n"
"  -p, --policy=NAME      steal (default: per-core FIFO with work stealing),\n"
"                         fifo (one global FIFO) or pinned (a thread stays\n"
"                         on its first core)\n"
"  -b, --backend=NAME     user, kmod, scx or auto (default: $UMCG_BACKEND,\n"
"                         else auto: the best one available); a backend\n"
"                         that is not available here is an error\n"
"  -t, --time-slice-us=US preempt a worker that runs US microseconds without\n"
"                         blocking or yielding (default 10000, 10 ms, so\n"
"                         that a program that spin-waits with more threads\n"
"                         than cores makes progress; 0: never preempt);\n"
"                         with the user backend the preemption is a signal\n"
"                         (SIGURG), so a program that does not retry calls\n"
"                         failing with EINTR (sleeps, poll, select) may see\n"
"                         them fail; a kmod umcg.ko without preemption runs\n"
"                         the default as 0 (an explicit slice is an error)\n"
"      --blocked-us=US    user backend: how long a worker may sit in a\n"
"                         blocking call this library does not interpose\n"
"                         (stdio's, say) before its core goes to another\n"
"                         worker (default 50); an interposed call hands\n"
"                         the core on at once, or within about 40 us\n"
"      --dump-signal=SIG  the signal that asks for a thread dump (name or\n"
"                         number, or none; default $UMCG_DUMP_SIGNAL, else\n"
"                         " UMCG_RUN_DUMP_SIGNAL_DFL_NAME ", which is signal 61 with glibc)\n"
"  -h, --help             this text\n"
"\n"
"While PROGRAM runs, \"umcgctl dump PID\" (or kill -" UMCG_RUN_DUMP_SIGNAL_DFL_NAME " PID) makes it\n"
"write a thread dump to its standard error: every worker with its state,\n"
"core, time in that state and switch, block and preemption counts.\n"
"\n"
"What PROGRAM sees of the machine:\n"
"  CPUs    each worker runs on its core's CPU, but sched_getaffinity(),\n"
"          pthread_getaffinity_np() (so nproc, the JVM, OpenMP) report the\n"
"          group's CPUs, those of its cores; setting a worker's affinity\n"
"          succeeds (and changes nothing) for a mask holding all of them\n"
"          and fails with EINVAL otherwise.  Programs that ask the kernel\n"
"          directly see one CPU; for Go's runtime, which does, umcg-run\n"
"          sets GOMAXPROCS to the number of cores unless it is set.\n"
"  signals libumcg's own threads block every signal, so a signal sent to\n"
"          the process reaches PROGRAM's threads only (sigwait() and\n"
"          signalfd work); SIGUSR1 and SIGUSR2 stay PROGRAM's.\n"
"  children a process started with fork(), posix_spawn(), system() or\n"
"          popen(), or a program a worker executes, starts with the CPUs\n"
"          PROGRAM had, not its worker's one (the first four also\n"
"          under the normal scheduler: scx's sched_ext stays behind).\n"
"  limits  a thread the backend has no room for (kmod: umcg.ko's max_tasks\n"
"          per process, 131072 by default,\n"
"          scx: 4096 on the machine) runs unmanaged: said once on stderr,\n"
"          counted in the thread dump (\"refused\").\n"
"See Documentation/libumcg/umcg-run.md.\n"
"\n"
"Environment:\n"
"  UMCG_BACKEND           the backend, when --backend is not given\n"
"  UMCG_DUMP_SIGNAL       the dump signal, when --dump-signal is not given\n"
"  UMCG_RUN_PRELOAD       the preload library to use instead of searching\n"
"                         for " UMCG_RUN_PRELOAD_NAME " (next to this program\n"
"                         in the build tree, then in the install libdir)\n"
"  LD_PRELOAD             the library is added after what it holds\n"
"Set for PROGRAM and read by the library: UMCG_RUN_CORES, UMCG_RUN_POLICY,\n"
"UMCG_RUN_TIME_SLICE_US, UMCG_RUN_BLOCKED_US, UMCG_RUN_CPUS (the CPU list\n"
"this process may use), UMCG_BACKEND, UMCG_DUMP_SIGNAL; and GOMAXPROCS (the\n"
"cores) when it is not set.  PROGRAM's child\n"
"processes inherit them, so the programs they execute are managed too,\n"
"each as its own group on the same CPUs.\n"
"\n"
"Exit status:\n"
"  PROGRAM's status, or\n"
"  1    the backend is not available here, or the library cannot be found;\n"
"       also (from inside PROGRAM, before main) when the library cannot\n"
"       set the group up\n"
"  2    bad options or environment; also (from inside PROGRAM) a bad\n"
"       UMCG_RUN_* value when the library is preloaded by hand\n"
"  126  PROGRAM cannot be executed\n"
"  127  PROGRAM was not found\n"
"Each is preceded by a message on standard error.\n"
"\n"
"Notes: the dynamic linker ignores LD_PRELOAD for static and set-user-ID\n"
"programs, which then run unmanaged.  With the user backend, a worker that\n"
"returns from a blocking call libumcg did not see (one libc makes inside,\n"
"such as stdio's read) may run beside another until its next interposed\n"
"call (read, write, sockets, poll, select, epoll, sleeps, mutexes,\n"
"condition variables, semaphores, join, wait); sched_yield() gives the\n"
"core to the next worker.  The user backend preempts with SIGURG (only\n"
"with a time slice).  A\n"
"program that uses libumcg itself cannot run under " PROG ".  A child made\n"
"with fork() and no exec runs unmanaged.\n");
}

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n" "Try '" PROG " --help' for more information.\n", stderr);
	return EXIT_USAGE;
}

/* Is @path an existing regular file we can read? */
static bool readable(const char *path)
{
	return access(path, R_OK) == 0;
}

/*
 * The preload library: $UMCG_RUN_PRELOAD, else next to this program in the
 * build tree (<build>/tools/umcg-run -> <build>/libumcg/preload/), else in
 * the libdir next to the bindir it is installed in, else the configured
 * install path.  The absolute path in @buf; 0 or -ENOENT.
 */
static int find_preload(char *buf, size_t len)
{
	const char *env = getenv(UMCG_RUN_ENV_PRELOAD);
	char exe[PATH_MAX], cand[PATH_MAX + 64], *slash;
	const char *rel[] = {
		"/../libumcg/preload/" UMCG_RUN_PRELOAD_NAME,
		"/../" UMCG_RUN_INSTALL_LIBDIR "/" UMCG_RUN_PRELOAD_NAME,
	};
	ssize_t n;

	if (env && *env) {
		if (!realpath(env, exe) || !readable(exe))
			return -ENOENT;
		snprintf(buf, len, "%s", exe);
		return 0;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash)
			*slash = '\0';
		for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
			snprintf(cand, sizeof(cand), "%s%s", exe, rel[i]);
			if (readable(cand) && realpath(cand, buf))
				return 0;
		}
	}
	if (readable(UMCG_RUN_INSTALL_PATH) && realpath(UMCG_RUN_INSTALL_PATH, buf))
		return 0;
	return -ENOENT;
}

/*
 * Puts @lib at the end of LD_PRELOAD (once): what is there already, such as
 * a sanitizer runtime that must come first, keeps its place; interposers
 * chain to us through RTLD_NEXT.
 */
static int append_preload(const char *lib)
{
	const char *old = getenv("LD_PRELOAD");
	size_t len = strlen(lib);
	char *val;
	int ret;

	for (const char *p = old; p && *p;) {
		size_t n = strcspn(p, ": ");

		if (n == len && !strncmp(p, lib, len))
			return 0;	/* nested umcg-run: already there */
		p += n;
		p += strspn(p, ": ");
	}
	if (!old || !*old)
		return setenv("LD_PRELOAD", lib, 1) ? -errno : 0;
	if (asprintf(&val, "%s:%s", old, lib) < 0)
		return -ENOMEM;
	ret = setenv("LD_PRELOAD", val, 1) ? -errno : 0;
	free(val);
	return ret;
}

/*
 * LD_PRELOAD splits at ':' and ' ', with no escape: for a @lib whose
 * directory has a space (a checkout at "/var/tmp/with space"), put the
 * directory in front of LD_LIBRARY_PATH (split at ':' and ';' only) and
 * cut @lib down to its file name, which the dynamic linker then finds
 * there.  0, -EINVAL when neither way can hold it, or -errno.
 */
static int preload_name(char *lib)
{
	const char *old = getenv("LD_LIBRARY_PATH");
	char *slash = strrchr(lib, '/'), *val;
	int ret;

	if (!strpbrk(lib, ": "))
		return 0;
	if (!slash || strpbrk(slash + 1, ": "))
		return -EINVAL;
	*slash = '\0';
	if (strpbrk(lib, ":;")) {
		*slash = '/';
		return -EINVAL;
	}
	if (asprintf(&val, "%s%s%s", lib, old && *old ? ":" : "", old ? old : "") < 0)
		return -ENOMEM;
	ret = setenv("LD_LIBRARY_PATH", val, 1) ? -errno : 0;
	free(val);
	if (!ret)
		memmove(lib, slash + 1, strlen(slash + 1) + 1);
	else
		*slash = '/';
	return ret;
}

static int set_env_u64(const char *name, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	return setenv(name, buf, 1);
}

static bool known_backend(const char *name)
{
	static const char *const names[] = { "user", "kmod", "scx", "auto" };

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cores",         required_argument, NULL, 'c' },
		{ "policy",        required_argument, NULL, 'p' },
		{ "backend",       required_argument, NULL, 'b' },
		{ "time-slice-us", required_argument, NULL, 't' },
		{ "blocked-us",    required_argument, NULL, 'B' },
		{ "dump-signal",   required_argument, NULL, 'S' },
		{ "help",          no_argument,       NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *policy = NULL, *backend = NULL, *slice = NULL, *blocked = NULL;
	const char *dump_signal = NULL;
	struct umcg_config cfg = { .size = sizeof(cfg) };
	uint64_t cores = 0, slice_us = UMCG_RUN_TIME_SLICE_US_DFL, blocked_us = 0;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	char lib[PATH_MAX];
	cpu_set_t set;
	int opt, sig, ret;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:c:p:b:t:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			if (umcg_run_parse_u64(optarg, 1, UINT32_MAX, &cores))
				return usage_error("--cores: expected a whole number from 1 up, got '%s'",
						   optarg);
			if (online > 0 && cores > (uint64_t)online)
				return usage_error("--cores %llu: this machine has only %ld online CPUs",
						   (unsigned long long)cores, online);
			break;
		case 'p':
			policy = optarg;
			if (!umcg_policy_find(policy))
				return usage_error("--policy: unknown policy '%s' (expected steal, fifo or pinned)",
						   policy);
			break;
		case 'b':
			backend = optarg;
			if (!known_backend(backend))
				return usage_error("--backend: unknown backend '%s' (expected user, kmod, scx or auto)",
						   backend);
			break;
		case 't':
			slice = optarg;
			if (umcg_run_parse_u64(slice, 0, UMCG_RUN_US_MAX, &slice_us))
				return usage_error("--time-slice-us: expected microseconds (0 to %llu), got '%s'",
						   UMCG_RUN_US_MAX, slice);
			break;
		case 'B':
			blocked = optarg;
			if (umcg_run_parse_u64(blocked, 1, UMCG_RUN_US_MAX, &blocked_us))
				return usage_error("--blocked-us: expected microseconds (1 to %llu), got '%s'",
						   UMCG_RUN_US_MAX, blocked);
			break;
		case 'S':
			dump_signal = optarg;
			if (umcg_run_parse_signal(dump_signal, &sig))
				return usage_error("--dump-signal: expected a signal name or number other than KILL, STOP and URG, got '%s'",
						   dump_signal);
			break;
		case 'h':
			usage(stdout);
			return 0;
		case ':':
			return usage_error("option '%s' needs a value", argv[optind - 1]);
		default:
			if (optopt)
				return usage_error("unknown option '-%c'", optopt);
			return usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return usage_error("no program given");
	if (!dump_signal && umcg_run_dump_signal(&sig))
		return usage_error("$" UMCG_RUN_ENV_DUMP_SIGNAL "='%s' is not a usable signal",
				   getenv(UMCG_RUN_ENV_DUMP_SIGNAL));
	if (!backend && getenv(UMCG_RUN_ENV_BACKEND) && *getenv(UMCG_RUN_ENV_BACKEND) &&
	    !known_backend(getenv(UMCG_RUN_ENV_BACKEND)))
		return usage_error("$" UMCG_RUN_ENV_BACKEND "='%s': expected user, kmod, scx or auto",
				   getenv(UMCG_RUN_ENV_BACKEND));

	/*
	 * The group's cores come from our affinity mask, as libumcg counts.
	 * Under an outer umcg-run this thread is a worker pinned to one CPU:
	 * count the CPUs the managed processes may use instead, as the
	 * library does when it widens a child's mask.
	 */
	if (sched_getaffinity(0, sizeof(set), &set)) {
		fprintf(stderr, PROG ": sched_getaffinity: %s\n", strerror(errno));
		return EXIT_SETUP;
	}
	if (umcg_self() && getenv(UMCG_RUN_ENV_CPUS) &&
	    umcg_run_parse_cpus(getenv(UMCG_RUN_ENV_CPUS), &set))
		return usage_error("$" UMCG_RUN_ENV_CPUS "='%s' is not a CPU list",
				   getenv(UMCG_RUN_ENV_CPUS));
	if (cores > (uint64_t)CPU_COUNT(&set))
		return usage_error("--cores %llu: this process may run on only %d CPUs",
				   (unsigned long long)cores, CPU_COUNT(&set));
	if (!cores)
		cores = CPU_COUNT(&set);

	/*
	 * Try the group here, so that a backend that is not available fails
	 * before the program starts.  -EBUSY: we run under an outer umcg-run,
	 * whose library already set a group up in this process.
	 */
	cfg.nr_cores = cores;
	cfg.policy = policy ? umcg_policy_find(policy) : NULL;
	cfg.backend = backend;
	cfg.time_slice_ns = slice_us * 1000;
	cfg.blocked_ns = blocked_us * 1000;
	ret = umcg_init(&cfg);
	/* The default slice is not worth failing for (kmod without preemption). */
	if (ret == -EOPNOTSUPP && !slice && slice_us) {
		fprintf(stderr, PROG ": backend '%s' cannot preempt: running with no time slice\n",
			backend ? backend : getenv(UMCG_RUN_ENV_BACKEND) ?
			getenv(UMCG_RUN_ENV_BACKEND) : "auto");
		slice_us = 0;
		cfg.time_slice_ns = 0;
		ret = umcg_init(&cfg);
	}
	if (ret == 0) {
		umcg_fini();
	} else if (ret == -ENODEV) {
		fprintf(stderr, PROG ": backend '%s' is not available on this system\n",
			backend ? backend : getenv(UMCG_RUN_ENV_BACKEND) ?
			getenv(UMCG_RUN_ENV_BACKEND) : "auto");
		return EXIT_SETUP;
	} else if (ret != -EBUSY) {
		fprintf(stderr, PROG ": cannot set up a group of %llu cores: %s\n",
			(unsigned long long)cores, strerror(-ret));
		return EXIT_SETUP;
	}

	if (find_preload(lib, sizeof(lib))) {
		fprintf(stderr, PROG ": cannot find %s (looked for $%s, next to %s in the build tree, and in %s)\n",
			UMCG_RUN_PRELOAD_NAME, UMCG_RUN_ENV_PRELOAD, PROG, UMCG_RUN_INSTALL_PATH);
		return EXIT_SETUP;
	}
	ret = preload_name(lib);
	if (ret) {
		fprintf(stderr, PROG ": %s: cannot be preloaded: %s\n", lib,
			ret == -EINVAL ? "LD_PRELOAD and LD_LIBRARY_PATH cannot hold a "
			"directory with ':' or ';', or a file name with ':' or ' '" :
			strerror(-ret));
		return EXIT_SETUP;
	}

	if (set_env_u64(UMCG_RUN_ENV_CORES, cores) ||
	    (policy ? setenv(UMCG_RUN_ENV_POLICY, policy, 1) : unsetenv(UMCG_RUN_ENV_POLICY)) ||
	    set_env_u64(UMCG_RUN_ENV_TIME_SLICE_US, slice_us) ||
	    (blocked ? set_env_u64(UMCG_RUN_ENV_BLOCKED_US, blocked_us)
		     : unsetenv(UMCG_RUN_ENV_BLOCKED_US)) ||
	    (backend && setenv(UMCG_RUN_ENV_BACKEND, backend, 1)) ||
	    (dump_signal && setenv(UMCG_RUN_ENV_DUMP_SIGNAL, dump_signal, 1)) ||
	    /*
	     * Go's runtime sizes itself by the affinity mask it reads with a
	     * raw system call, which the preloaded library cannot show the
	     * group's CPUs: tell it the cores, unless the user did.
	     */
	    (!getenv("GOMAXPROCS") && set_env_u64("GOMAXPROCS", cores)) ||
	    append_preload(lib)) {
		fprintf(stderr, PROG ": cannot set the environment: %s\n", strerror(errno));
		return EXIT_SETUP;
	}

	execvp(argv[optind], argv + optind);
	ret = errno;
	fprintf(stderr, PROG ": %s: %s\n", argv[optind],
		ret == ENOENT && !strchr(argv[optind], '/') ? "command not found" : strerror(ret));
	return ret == ENOENT || ret == ENOTDIR ? EXIT_NOTFOUND : EXIT_NOEXEC;
}
