// SPDX-License-Identifier: GPL-2.0
/*
 * nonuser - what umcg.ko costs a process that does not use it (C9): a
 * pipe ping-pong between two ordinary processes (one byte each way, each
 * side blocking in read(), so every round trip is two sleeping schedules),
 * timed
 *
 *   unloaded     with umcg.ko not loaded (the base)
 *   idle         loaded, nobody using it (the block hook is not armed)
 *   workersN     loaded, while another user's process (nobody) holds N
 *                registered workers asleep in read() (the hook armed; its
 *                group in the hook's table of groups, its N threads in
 *                that group's own task hash)
 *
 * all in the same boot, so only the ratios to "unloaded" mean anything:
 * each case after the base also prints its median over the base's
 * (ratio_to_unloaded).
 * The module is unloaded with delete_module() and loaded from --module
 * with finit_module() (root only); it is left loaded or not as found.
 * Next to each time: the hook's calls per round trip (hook_calls of
 * /sys/class/misc/umcg), 0 unless it is armed, and the table entries
 * those calls examined per round trip (hook_entries).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uapi/umcg.h>

#include "bench.h"

#define HOOK_CALLS	"/sys/class/misc/umcg/hook_calls"
#define HOOK_ENTRIES	"/sys/class/misc/umcg/hook_entries"
#define NOBODY		65534

static struct bench_opts opts;
static const char *module_path;
static long nr_workers = 4096;

static void usage(void)
{
	printf("Usage: nonuser [OPTIONS]\n\n"
	       "A pipe ping-pong between two processes that do not use umcg: with\n"
	       "umcg.ko unloaded, loaded and idle, and loaded while another user's\n"
	       "process holds N workers asleep.  Needs root and --module.\n\n"
	       "Options:\n"
	       "  -m, --module PATH    umcg.ko for the running kernel\n"
	       "  -w, --workers N      the other user's workers (default 4096)\n"
	       BENCH_COMMON_HELP);
}

static bool loaded(void)
{
	return access("/sys/module/umcg", F_OK) == 0;
}

static int load(void)
{
	int fd = open(module_path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, "", 0) ? -errno : 0;
	close(fd);
	return ret == -EEXIST ? 0 : ret;
}

static int unload(void)
{
	return syscall(SYS_delete_module, "umcg", O_NONBLOCK) ? -errno : 0;
}

static long counter(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = -1;

	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

/* The other side of the ping-pong: echo every byte until EOF. */
static void pong(int in, int out)
{
	char c;

	bench_pin_self(0);
	while (read(in, &c, 1) == 1)
		if (write(out, &c, 1) != 1)
			break;
	_exit(0);
}

/*
 * One case: reps repetitions of opts.ms each; prints the median ns per
 * round trip, its ratio to @base unless that is 0, and the hook's calls
 * and entries examined per round trip (nothing if @variant is NULL: a
 * warm-up).  Returns the median.
 */
static double measure(const char *variant, const char *role, double base)
{
	int to[2], from[2], status;
	double v[64];
	long calls = 0, entries = 0, total = 0;
	double median;
	int reps = opts.reps > 64 ? 64 : opts.reps;
	cpu_set_t all;
	pid_t pid;
	char c = 'x';

	if (sched_getaffinity(0, sizeof(all), &all))
		bench_die("sched_getaffinity: %s", strerror(errno));
	if (pipe(to) || pipe(from))
		bench_die("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		bench_die("fork: %s", strerror(errno));
	if (!pid) {
		close(to[1]);
		close(from[0]);
		pong(to[0], from[1]);
	}
	close(to[0]);
	close(from[1]);
	bench_pin_self(0);

	/* Warm up. */
	for (int i = 0; i < 100; i++)
		if (write(to[1], &c, 1) != 1 || read(from[0], &c, 1) != 1)
			bench_die("ping-pong: %s", strerror(errno));
	for (int r = 0; r < reps; r++) {
		long c0 = counter(HOOK_CALLS), n = 0;
		long e0 = counter(HOOK_ENTRIES);
		uint64_t t0 = bench_now_ns(), t1;
		uint64_t end = t0 + (uint64_t)(opts.ms * 1e6);

		do {
			for (int i = 0; i < 50; i++)
				if (write(to[1], &c, 1) != 1 ||
				    read(from[0], &c, 1) != 1)
					bench_die("ping-pong: %s", strerror(errno));
			n += 50;
			t1 = bench_now_ns();
		} while (t1 < end);
		v[r] = (double)(t1 - t0) / n;
		if (c0 >= 0)
			calls += counter(HOOK_CALLS) - c0;
		if (e0 >= 0)
			entries += counter(HOOK_ENTRIES) - e0;
		total += n;
	}
	close(to[1]);
	close(from[0]);
	waitpid(pid, &status, 0);
	sched_setaffinity(0, sizeof(all), &all);

	median = bench_median(v, reps);
	if (!variant)
		return median;
	bench_result("nonuser", "pthread", "stock", variant, "-",
		     "ns_per_roundtrip", true, median, reps, role);
	if (base > 0)
		bench_result("nonuser", "pthread", "stock", variant, "-",
			     "ratio_to_unloaded", true, median / base, reps,
			     NULL);
	bench_result("nonuser", "pthread", "stock", variant, "-",
		     "hook_calls_per_roundtrip", true,
		     (double)calls / total, total, NULL);
	bench_result("nonuser", "pthread", "stock", variant, "-",
		     "hook_entries_per_roundtrip", true,
		     (double)entries / total, total, NULL);
	return median;
}

static void *holder_thread(void *arg)
{
	int *fds = arg;
	struct umcg_register_args a = {
		.size = sizeof(a),
		.flags = UMCG_REGISTER_WORKER,
	};
	char c;

	if (ioctl(fds[0], UMCG_IOC_REGISTER, &a)) {
		c = 'f';
		if (write(fds[2], &c, 1) < 0)
			return NULL;
		return NULL;
	}
	c = 'r';
	if (write(fds[2], &c, 1) < 0)
		return NULL;
	/* Asleep as a registered worker until the holder is killed. */
	if (read(fds[1], &c, 1) < 0)
		return NULL;
	return NULL;
}

/*
 * Another user's process with @n workers asleep: returns its pid once
 * they are registered, or -1 with *@why set.
 */
static pid_t holder_start(long n, const char **why)
{
	static char msg[160];
	int ready[2], block[2];
	long got = 0, ok = 0;
	pid_t pid;
	char c;

	if (pipe(ready) || pipe(block)) {
		*why = "pipe failed";
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		*why = "fork failed";
		return -1;
	}
	if (!pid) {
		struct rlimit rl = { RLIM_INFINITY, RLIM_INFINITY };
		pthread_attr_t attr;
		int fds[3];

		close(ready[0]);
		close(block[1]);
		setrlimit(RLIMIT_NPROC, &rl);
		if (setgroups(0, NULL) || setgid(NOBODY) || setuid(NOBODY))
			_exit(1);
		fds[0] = open("/dev/" UMCG_DEVICE_NAME, O_RDWR);
		fds[1] = block[0];
		fds[2] = ready[1];
		if (fds[0] < 0)
			_exit(1);
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, 64 << 10);
		for (long i = 0; i < n; i++) {
			pthread_t t;

			if (pthread_create(&t, &attr, holder_thread, fds)) {
				c = 'f';
				if (write(ready[1], &c, 1) < 0)
					_exit(1);
			}
		}
		for (;;)
			pause();
	}
	close(ready[1]);
	close(block[0]);
	while (got < n && read(ready[0], &c, 1) == 1) {
		got++;
		ok += c == 'r';
	}
	close(ready[0]);
	if (ok < n) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		snprintf(msg, sizeof(msg),
			 "the other user registered %ld of %ld workers", ok, n);
		*why = msg;
		return -1;
	}
	/* block[1] stays open in the parent until the holder is killed. */
	return pid;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		BENCH_COMMON_LONGOPTS,
		{ "module", required_argument, NULL, 'm' },
		{ "workers", required_argument, NULL, 'w' },
		{ 0 }
	};
	const char *why = NULL;
	char variant[32];
	uint64_t t_start = bench_now_ns();
	double base;
	bool was_loaded;
	pid_t holder;
	int c, ret;

	bench_opts_init(&opts, "nonuser", argv);
	while ((c = getopt_long(argc, argv, BENCH_COMMON_SHORTOPTS "m:w:", lo,
				NULL)) != -1) {
		if (c == 'h') {
			usage();
			return 0;
		}
		if (c == 'm') {
			module_path = optarg;
			continue;
		}
		if (c == 'w') {
			nr_workers = bench_parse_long("--workers", optarg, 1,
						      4096);
			continue;
		}
		if (!bench_opt(&opts, c, optarg))
			bench_usage_error("unknown option '%s'", argv[optind - 1]);
	}
	if (optind < argc)
		bench_usage_error("unexpected argument '%s'", argv[optind]);
	if (opts.smoke)
		nr_workers = nr_workers < 64 ? nr_workers : 64;
	snprintf(variant, sizeof(variant), "workers%ld", nr_workers);

	if (geteuid() != 0)
		why = "needs root (loads and unloads umcg.ko)";
	else if (!module_path || access(module_path, R_OK))
		why = "no umcg.ko for this kernel (--module)";
	was_loaded = loaded();
	if (!why && was_loaded && (ret = unload()))
		why = ret == -EWOULDBLOCK ? "umcg.ko is in use" :
		      "umcg.ko cannot be unloaded";
	if (!why && (ret = load()))
		why = "umcg.ko does not load here";
	if (!why)
		unload();
	if (why) {
		bench_result_fail("nonuser", "pthread", "stock", "unloaded", why);
		return 0;
	}

	bench_progress("unloaded (%.1f s)", (bench_now_ns() - t_start) / 1e9);
	/*
	 * The first case measured ran slower than the next ones in the
	 * guests, by up to 2x under TCG: one untimed pass first.
	 */
	measure(NULL, NULL, 0);
	base = measure("unloaded", "base", 0);
	if (load())
		bench_die("loading %s: %s", module_path, strerror(errno));
	bench_progress("loaded, idle (%.1f s)", (bench_now_ns() - t_start) / 1e9);
	measure("idle", NULL, base);
	bench_progress("loaded, another user holds %ld workers",
		       nr_workers);
	holder = holder_start(nr_workers, &why);
	bench_progress("workers registered (%.1f s)",
		       (bench_now_ns() - t_start) / 1e9);
	if (holder < 0) {
		bench_result_fail("nonuser", "pthread", "stock", variant, why);
	} else {
		measure(variant, NULL, base);
		kill(holder, SIGKILL);
		waitpid(holder, NULL, 0);
	}
	if (!was_loaded) {
		/* The killed holder's group goes with its last thread. */
		for (int i = 0; i < 100 && unload() == -EWOULDBLOCK; i++)
			usleep(50000);
	}
	return 0;
}
