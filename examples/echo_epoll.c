// SPDX-License-Identifier: GPL-2.0
/*
 * echo-epoll - the event-loop way to write the same TCP echo server as
 * echo-threads: N threads, each with its own SO_REUSEPORT listening socket
 * and epoll instance, non-blocking sockets, level-triggered.
 *
 * Prints "echo-epoll: listening on port N" once ready.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static int listen_on(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd, one = 1;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 4096)) {
		fprintf(stderr, "echo-epoll: error: listen: %s\n", strerror(errno));
		exit(1);
	}
	return fd;
}

/* Writes all of @buf; waits for room in the rare case the socket is full. */
static int write_all(int fd, const char *buf, ssize_t n)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	ssize_t off = 0, w;

	while (off < n) {
		w = write(fd, buf + off, n - off);
		if (w > 0) {
			off += w;
		} else if (w < 0 && errno == EAGAIN) {
			poll(&p, 1, -1);
		} else {
			return -1;
		}
	}
	return 0;
}

static void *loop(void *arg)
{
	int lfd = (int)(intptr_t)arg, ep, one = 1;
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = lfd }, evs[256];
	char buf[4096];

	ep = epoll_create1(0);
	if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev)) {
		fprintf(stderr, "echo-epoll: error: epoll: %s\n", strerror(errno));
		exit(1);
	}
	for (;;) {
		int n = epoll_wait(ep, evs, 256, -1);

		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;
			ssize_t r;

			if (fd == lfd) {
				int c;

				while ((c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK)) >= 0) {
					setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
					ev.events = EPOLLIN;
					ev.data.fd = c;
					epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev);
				}
				continue;
			}
			r = read(fd, buf, sizeof(buf));
			if (r > 0 && !write_all(fd, buf, r))
				continue;
			if (r < 0 && errno == EAGAIN)
				continue;
			close(fd);	/* also leaves the epoll set */
		}
	}
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: echo-epoll [OPTIONS]\n\n"
		"A TCP echo server on 127.0.0.1: one epoll event loop per thread.\n"
		"Prints \"echo-epoll: listening on port N\".\n\n"
		"Options:\n"
		"  -p, --port N      port (default 0: any free port)\n"
		"  -t, --threads N   event-loop threads (default: one per CPU)\n"
		"  -h, --help        this text\n");
}

static long number(const char *opt, const char *arg, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < min || v > max) {
		fprintf(stderr, "echo-epoll: error: %s: expected %ld..%ld, got '%s'\n",
			opt, min, max, arg);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "threads", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int c, port = 0, nthreads = sysconf(_SC_NPROCESSORS_ONLN), lfd;
	struct rlimit rl;
	pthread_t t;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "p:t:h", lo, NULL)) != -1) {
		switch (c) {
		case 'p': port = number("--port", optarg, 0, 65535); break;
		case 't': nthreads = number("--threads", optarg, 1, 1024); break;
		case 'h': usage(stdout); return 0;
		default:
			fprintf(stderr, "echo-epoll: error: unknown option or missing value: '%s'\n",
				argv[optind - 1]);
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "echo-epoll: error: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (nthreads < 1)
		nthreads = 1;

	lfd = listen_on(port);
	getsockname(lfd, (struct sockaddr *)&sa, &sl);
	port = ntohs(sa.sin_port);
	for (int i = 1; i < nthreads; i++)
		if (pthread_create(&t, NULL, loop, (void *)(intptr_t)listen_on(port))) {
			fprintf(stderr, "echo-epoll: error: pthread_create failed\n");
			return 1;
		}
	printf("echo-epoll: listening on port %d\n", port);
	fflush(stdout);
	loop((void *)(intptr_t)lfd);
	return 0;
}
