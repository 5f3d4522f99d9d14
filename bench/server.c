// SPDX-License-Identifier: GPL-2.0
/*
 * server - the echo servers of examples/ under load: requests per second
 * and p50/p99 latency for C connections, each with one request in flight.
 *
 *   pthread/threads  echo-threads, a pthread per connection (role=base)
 *   epoll/epoll      echo-epoll, one event loop per CPU
 *   umcg/threads     echo-threads --umcg: a libumcg worker per connection,
 *                    the same plain blocking read()/write()
 *   umcg/threads-io  echo-threads --umcg --io: umcg_io_read/write, which
 *                    park the worker while the socket is not ready
 *   go, java         the peers: a goroutine (peer-go echo) or a Java 21
 *                    virtual thread (PeerEcho) per connection
 *
 * Each server runs in its own process; the load generator (loadgen_core.c)
 * runs in this one.  Then each server runs once more, with the kernel's
 * counters on its process (opened before it runs, so inherited by every
 * thread it makes): its context switches and system calls per request
 * answered in the measured time; the load generator's are not counted.
 */
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "loadgen.h"

static struct bench_opts opts;
static char examples[PATH_MAX];
static int conns[16], nconns;

struct server {
	pid_t pid;
	int port;
};

/*
 * Starts @argv, with @count opened on it first unless NULL; 0 and the port
 * it listens on, or -1 and @why.
 */
static int start(char *const argv[], struct server *s, struct bench_count *count,
		 char *why, size_t len)
{
	struct pollfd p;
	char line[256], c;
	int fd[2], go[2];
	ssize_t n, got = 0;

	if (pipe(fd) || pipe(go))
		bench_die("pipe: %s", strerror(errno));
	fflush(stdout);
	s->pid = fork();
	if (s->pid < 0)
		bench_die("fork: %s", strerror(errno));
	if (!s->pid) {
		/* Until the counters are on this process. */
		close(go[1]);
		if (read(go[0], &c, 1) < 0)
			_exit(127);
		close(go[0]);
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execvp(argv[0], argv);
		fprintf(stderr, "server: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(go[0]);
	if (count)
		bench_count_open(count, s->pid);
	close(go[1]);
	close(fd[1]);
	p.fd = fd[0];
	p.events = POLLIN;
	while (got < (ssize_t)sizeof(line) - 1 && !memchr(line, '\n', got)) {
		if (poll(&p, 1, 120000) <= 0)	/* a JVM under TCG starts slowly */
			break;
		n = read(fd[0], line + got, sizeof(line) - 1 - got);
		if (n <= 0)
			break;
		got += n;
	}
	line[got] = '\0';
	close(fd[0]);
	if (sscanf(line, "%*s listening on port %d", &s->port) == 1)
		return 0;
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
	snprintf(why, len, "%s did not start (see its message above)", basename(argv[0]));
	return -1;
}

static void stop(struct server *s)
{
	kill(s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
}

/* Not measured: a JIT, lazily made threads, socket caches. */
static void warm_up(const struct server *s)
{
	struct loadgen_cfg cfg = {
		.port = s->port, .conns = conns[0], .threads = 1, .size = 64,
		.secs = opts.ms / 4000.0,
	};
	struct loadgen_res res;

	loadgen_run(&cfg, &res);
}

/* The server once more with counters on it: one load run per C. */
static void counted(const char *impl, const char *backend, const char *variant,
		    const char *role, char *const argv[])
{
	struct bench_count c;
	struct server s;
	char why[256];

	if (start(argv, &s, &c, why, sizeof(why))) {
		bench_count_close(&c);
		bench_result_fail("server", impl, backend, variant, why);
		return;
	}
	warm_up(&s);
	for (int j = 0; j < nconns; j++) {
		struct loadgen_cfg cfg = {
			.port = s.port, .conns = conns[j], .threads = 1, .size = 64,
			.secs = opts.ms / 1000.0, .count = &c,
		};
		struct loadgen_res res;
		char kase[32];
		struct bench_count failed = c;
		int ret;

		snprintf(kase, sizeof(kase), "c%d", conns[j]);
		ret = loadgen_run(&cfg, &res);
		if (ret) {
			snprintf(why, sizeof(why), "%d connections: %s", conns[j], strerror(-ret));
			bench_count_fail(&failed, why);
		}
		bench_count_result(ret ? &failed : &c, "server", impl, backend, variant, kase,
				   role, res.reqs, 0, 0);
	}
	stop(&s);
	bench_count_close(&c);
}

static void measure(const char *impl, const char *backend, const char *variant,
		    const char *role, char *const argv[])
{
	struct server s;
	char why[256];

	bench_progress("%s/%s/%s", impl, backend, variant);
	if (start(argv, &s, NULL, why, sizeof(why))) {
		bench_result_fail("server", impl, backend, variant, why);
		return;
	}
	warm_up(&s);
	for (int j = 0; j < nconns; j++) {
		struct loadgen_cfg cfg = {
			.port = s.port, .conns = conns[j], .threads = 1, .size = 64,
			.secs = opts.ms / 1000.0,
		};
		double rps[1000], p50[1000], p99[1000], p999[1000];
		struct loadgen_res res;
		char kase[32], note[128] = "";
		long worst = 0;
		int ret = 0;

		snprintf(kase, sizeof(kase), "c%d", conns[j]);
		for (int r = 0; r < opts.reps && !ret; r++) {
			ret = loadgen_run(&cfg, &res);
			if (res.errors)
				bench_progress("%s/%s/%s %s: %ld connections failed", impl,
					       backend, variant, kase, res.errors);
			if (res.errors > worst)
				worst = res.errors;
			rps[r] = res.req_per_s;
			p50[r] = res.p50_us;
			p99[r] = res.p99_us;
			p999[r] = res.p999_us;
		}
		if (ret) {
			snprintf(why, sizeof(why), "%d connections: %s", conns[j], strerror(-ret));
			bench_result_fail("server", impl, backend, variant, why);
			break;
		}
		/* The server dropped connections: say so next to its figure. */
		if (worst)
			snprintf(note, sizeof(note), "up to %ld of %d connections failed",
				 worst, conns[j]);
		bench_result_why("server", impl, backend, variant, kase, "req_per_s", false,
				 bench_median(rps, opts.reps), opts.reps, role,
				 worst ? note : NULL);
		bench_result("server", impl, backend, variant, kase, "p50_us", true,
			     bench_median(p50, opts.reps), opts.reps, role);
		bench_result("server", impl, backend, variant, kase, "p99_us", true,
			     bench_median(p99, opts.reps), opts.reps, role);
		bench_result("server", impl, backend, variant, kase, "p999_us", true,
			     bench_median(p999, opts.reps), opts.reps, role);
	}
	stop(&s);
	counted(impl, backend, variant, role, argv);
}

static void usage(void)
{
	printf("Usage: %s [OPTIONS]\n\n"
	       "Runs the echo servers of examples/ (thread per connection on pthreads\n"
	       "and on libumcg workers, and an epoll event loop) under the bundled\n"
	       "load generator; prints requests/s, p50, p99 and p99.9 latency (us).\n"
	       "-t is the measured time of one load run (default 1000 ms).\n\n"
	       "Options:\n"
	       "  -c, --conns LIST     connection counts (default 100,1000)\n"
	       "      --examples DIR   where echo-threads and echo-epoll are\n"
	       "                       (default: ../examples next to this program)\n"
	       "      --no-peers       skip the Go and Java 21 servers (peer-go echo,\n"
	       "                       java PeerEcho, found next to this program)\n"
	       BENCH_COMMON_HELP, bench_prog);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "conns", required_argument, NULL, 'c' },
		{ "examples", required_argument, NULL, 'E' },
		{ "no-peers", no_argument, NULL, 'P' },
		BENCH_COMMON_LONGOPTS, { 0 }
	};
	const char *names[BENCH_MAX_BACKENDS];
	char why[BENCH_MAX_BACKENDS][200];
	char list[256] = "100,1000", self[PATH_MAX];
	char threads[PATH_MAX + 32], epoll[PATH_MAX + 32], go[PATH_MAX + 32];
	char java[PATH_MAX + 32], java_cls[PATH_MAX + 64];
	bool peers = true;
	long nofile, cl[16];
	int c, nb;
	ssize_t n;

	bench_opts_init(&opts, "server", argv);
	opts.ms = 1000;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	snprintf(examples, sizeof(examples), "%s/../examples", dirname(self));
	while ((c = getopt_long(argc, argv, "c:" BENCH_COMMON_SHORTOPTS, lo, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage();
			return 0;
		case 'c':
			snprintf(list, sizeof(list), "%s", optarg);
			break;
		case 'E':
			snprintf(examples, sizeof(examples), "%s", optarg);
			break;
		case 'P':
			peers = false;
			break;
		default:
			if (!bench_opt(&opts, c, optarg))
				bench_usage_error("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		bench_usage_error("unexpected argument '%s'", argv[optind]);
	nconns = bench_parse_list("--conns", list, cl, 16, 1, 1000000);
	for (int j = 0; j < nconns; j++)
		conns[j] = (int)cl[j];
	if (opts.smoke)
		opts.ms = 200;
	snprintf(threads, sizeof(threads), "%s/echo-threads", examples);
	snprintf(epoll, sizeof(epoll), "%s/echo-epoll", examples);
	snprintf(go, sizeof(go), "%s/peer-go", self);
	snprintf(java, sizeof(java), "%s/java", self);
	snprintf(java_cls, sizeof(java_cls), "%s/PeerEcho.class", java);
	if (access(threads, X_OK) || access(epoll, X_OK))
		bench_usage_error("no echo-threads or echo-epoll in %s (see --examples)", examples);
	signal(SIGPIPE, SIG_IGN);
	nofile = bench_raise_nofile();
	for (int j = 0; j < nconns; j++)
		if (conns[j] + 64 > nofile)
			bench_die("%d connections need more open files than RLIMIT_NOFILE (%ld)",
				  conns[j], nofile);

	nb = bench_backends(&opts, names, why);
	if (!opts.no_pthread) {
		char *pa[] = { threads, NULL }, *ea[] = { epoll, NULL };

		measure("pthread", "stock", "threads", "base", pa);
		measure("epoll", "stock", "epoll", NULL, ea);
	}
	if (peers) {
		char *ga[] = { go, "echo", NULL };
		char *ja[] = { "java", "-XX:+UseSerialGC", "-cp", java, "PeerEcho", NULL };

		if (!access(go, X_OK))
			measure("go", "goroutines", "goroutines", NULL, ga);
		else
			bench_result_fail("server", "go", "goroutines", "goroutines",
					  "not built (no Go toolchain where it was built)");
		if (!access(java_cls, R_OK) && !system("java -version >/dev/null 2>&1"))
			measure("java", "vthreads", "vthreads", NULL, ja);
		else
			bench_result_fail("server", "java", "vthreads", "vthreads",
					  "not built or no java 21 here");
	}
	for (int i = 0; i < nb; i++) {
		char *ua[] = { threads, "--umcg", "--backend", (char *)names[i], NULL };
		char *ia[] = { threads, "--umcg", "--backend", (char *)names[i], "--io", NULL };

		if (why[i][0]) {
			bench_result_na("server", names[i], why[i]);
			continue;
		}
		measure("umcg", names[i], "threads", NULL, ua);
		measure("umcg", names[i], "threads-io", NULL, ia);
	}
	return 0;
}
