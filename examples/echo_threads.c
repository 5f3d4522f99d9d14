// SPDX-License-Identifier: GPL-2.0
/*
 * echo-threads - a thread-per-connection TCP echo server written with plain
 * blocking calls: accept() in the main thread, one thread per connection
 * doing read() and write() until the peer closes.
 *
 * By default each connection gets a pthread, scheduled by the kernel.  With
 * --umcg each connection gets a libumcg worker instead (umcg_spawn()), the
 * same code scheduled by libumcg; --io makes the workers use umcg_io_read()
 * and umcg_io_write(), which park instead of blocking (the Loom model).
 * The same binary run with --umcg off under umcg-run is the unmodified
 * program under libumcg.
 *
 * Prints "echo-threads: listening on port N" once ready.
 */
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <umcg.h>
#include <umcg/sync.h>

static bool use_umcg, use_io;
static long stack_kib = 64;

static ssize_t do_read(int fd, void *buf, size_t len)
{
	if (use_io)
		return umcg_io_read(fd, buf, len);
	return read(fd, buf, len);
}

static ssize_t do_write(int fd, const void *buf, size_t len)
{
	if (use_io)
		return umcg_io_write(fd, buf, len);
	return write(fd, buf, len);
}

static void *serve(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char buf[4096];
	ssize_t n, off, w;

	while ((n = do_read(fd, buf, sizeof(buf))) > 0) {
		for (off = 0; off < n; off += w) {
			w = do_write(fd, buf + off, n - off);
			if (w <= 0)
				goto out;
		}
	}
out:
	close(fd);
	return NULL;
}

static int start(int fd)
{
	if (use_umcg) {
		struct umcg_attr a = {
			.size = sizeof(a), .flags = UMCG_ATTR_DETACHED, .core = -1,
			.stack_size = stack_kib * 1024,
		};

		return umcg_spawn(NULL, &a, serve, (void *)(intptr_t)fd);
	} else {
		pthread_attr_t a;
		pthread_t t;
		int ret;

		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&a, stack_kib * 1024);
		ret = -pthread_create(&t, &a, serve, (void *)(intptr_t)fd);
		pthread_attr_destroy(&a);
		return ret;
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: echo-threads [OPTIONS]\n\n"
		"A thread-per-connection TCP echo server on 127.0.0.1 with plain\n"
		"blocking calls.  Prints \"echo-threads: listening on port N\".\n\n"
		"Options:\n"
		"  -p, --port N        port (default 0: any free port)\n"
		"      --umcg          one libumcg worker per connection, not a pthread\n"
		"      --backend NAME  libumcg backend (user, kmod, scx; default auto)\n"
		"      --cores N       managed cores (default 0: all CPUs)\n"
		"      --io            workers use umcg_io_read/write (park, not block)\n"
		"      --stack-kib K   stack of each connection's thread (default 64)\n"
		"  -h, --help          this text\n");
}

static long number(const char *opt, const char *arg, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max) {
		fprintf(stderr, "echo-threads: error: %s: expected %ld..%ld, got '%s'\n",
			opt, min, max, arg);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "umcg", no_argument, NULL, 'U' },
		{ "backend", required_argument, NULL, 'B' },
		{ "cores", required_argument, NULL, 'C' },
		{ "io", no_argument, NULL, 'I' },
		{ "stack-kib", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct umcg_config cfg = { .size = sizeof(cfg) };
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	struct rlimit rl;
	int c, lfd, one = 1, port = 0, ret;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "p:h", lo, NULL)) != -1) {
		switch (c) {
		case 'p': port = number("--port", optarg, 0, 65535); break;
		case 'U': use_umcg = true; break;
		case 'B': cfg.backend = optarg; break;
		case 'C': cfg.nr_cores = number("--cores", optarg, 0, 1024); break;
		case 'I': use_io = true; break;
		case 'S': stack_kib = number("--stack-kib", optarg, 16, 1 << 20); break;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "echo-threads: error: unknown option or missing value: '%s'\n",
				argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "echo-threads: error: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if ((use_io || cfg.backend || cfg.nr_cores) && !use_umcg) {
		fprintf(stderr, "echo-threads: error: --io, --backend and --cores need --umcg\n");
		return 2;
	}

	signal(SIGPIPE, SIG_IGN);
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (use_umcg) {
		ret = umcg_init(&cfg);
		if (ret) {
			fprintf(stderr, "echo-threads: error: umcg_init: %s\n", strerror(-ret));
			return 1;
		}
	}

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(port);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 4096) ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl)) {
		fprintf(stderr, "echo-threads: error: listen: %s\n", strerror(errno));
		return 1;
	}
	printf("echo-threads: listening on port %d\n", ntohs(sa.sin_port));
	fflush(stdout);

	for (;;) {
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			fprintf(stderr, "echo-threads: error: accept: %s\n", strerror(errno));
			return 1;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		ret = start(fd);
		if (ret) {
			fprintf(stderr, "echo-threads: cannot start a thread: %s\n", strerror(-ret));
			close(fd);
		}
	}
}
