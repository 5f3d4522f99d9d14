// SPDX-License-Identifier: GPL-2.0
/*
 * loadgen_core.c - the load generator's engine (see loadgen.h).
 *
 * The connections are made one after another (blocking connect, so a slow
 * accept loop paces them instead of dropping SYNs).  Then each client
 * thread runs an epoll loop over its share: send a request, wait for all
 * of it to come back, note the latency, send the next.  The first quarter of
 * the time (at most 0.5 s) is warm-up and not counted.  Latency
 * percentiles include, for each request still unanswered at the end, the
 * time it has waited so far.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "loadgen.h"

#define MAX_SAMPLES	(1 << 21)

struct conn {
	int fd;
	int got;		/* bytes of the answer received */
	uint64_t sent_ns;
};

struct client {
	const struct loadgen_cfg *cfg;
	struct conn *conns;
	int n;
	uint64_t start_ns, end_ns;
	double *lat;
	long nlat, reqs, errors;
	pthread_t th;
};

static int send_req(struct client *cl, struct conn *c, const char *buf)
{
	c->got = 0;
	c->sent_ns = bench_now_ns();
	/* Small requests always fit in an empty socket buffer. */
	return write(c->fd, buf, cl->cfg->size) == cl->cfg->size ? 0 : -1;
}

static void *client(void *arg)
{
	struct client *cl = arg;
	struct epoll_event ev, evs[256];
	char *out, in[65536];
	int ep, size = cl->cfg->size;

	out = calloc(1, size);
	ep = epoll_create1(0);
	if (!out || ep < 0) {
		cl->errors = cl->n;
		return NULL;
	}
	for (int i = 0; i < cl->n; i++) {
		ev.events = EPOLLIN;
		ev.data.ptr = &cl->conns[i];
		if (epoll_ctl(ep, EPOLL_CTL_ADD, cl->conns[i].fd, &ev) ||
		    send_req(cl, &cl->conns[i], out))
			cl->errors++;
	}
	for (;;) {
		uint64_t now = bench_now_ns();
		int n;

		if (now >= cl->end_ns)
			break;
		n = epoll_wait(ep, evs, 256, (cl->end_ns - now) / 1000000 + 1);
		for (int i = 0; i < n; i++) {
			struct conn *c = evs[i].data.ptr;
			ssize_t r = read(c->fd, in, sizeof(in));

			if (r <= 0) {
				if (r < 0 && errno == EAGAIN)
					continue;
				epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
				cl->errors++;
				continue;
			}
			c->got += r;
			if (c->got < size)
				continue;
			now = bench_now_ns();
			if (c->sent_ns >= cl->start_ns && now < cl->end_ns) {
				cl->reqs++;
				if (cl->nlat < MAX_SAMPLES / cl->cfg->threads)
					cl->lat[cl->nlat++] = (now - c->sent_ns) / 1e3;
			}
			if (send_req(cl, c, out)) {
				epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
				cl->errors++;
			}
		}
	}
	/*
	 * A request still unanswered at the end counts with the time it has
	 * waited so far (a lower bound): a connection the server starves must
	 * show in the percentiles, not drop out of them.
	 */
	for (int i = 0; i < cl->n; i++) {
		struct conn *c = &cl->conns[i];

		if (c->sent_ns < cl->end_ns && cl->nlat < MAX_SAMPLES / cl->cfg->threads)
			cl->lat[cl->nlat++] = (cl->end_ns - (c->sent_ns > cl->start_ns ?
					       c->sent_ns : cl->start_ns)) / 1e3;
	}
	close(ep);
	free(out);
	return NULL;
}

static void sleep_until(uint64_t ns)
{
	struct timespec ts = { ns / 1000000000ULL, ns % 1000000000ULL };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

int loadgen_run(const struct loadgen_cfg *cfg, struct loadgen_res *res)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct conn *conns;
	struct client *cls;
	double *lat;
	long nlat = 0;
	uint64_t t0, warm;
	int one = 1, ret = 0, made = 0;

	memset(res, 0, sizeof(*res));
	conns = calloc(cfg->conns, sizeof(*conns));
	cls = calloc(cfg->threads, sizeof(*cls));
	lat = malloc(MAX_SAMPLES * sizeof(*lat));
	if (!conns || !cls || !lat) {
		ret = -ENOMEM;
		goto out;
	}
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons(cfg->port);
	for (made = 0; made < cfg->conns; made++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			ret = -errno;
			if (fd >= 0)
				close(fd);
			goto out;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		fcntl(fd, F_SETFL, O_NONBLOCK);
		conns[made].fd = fd;
	}

	t0 = bench_now_ns();
	warm = cfg->secs * 1e9 / 4;
	if (warm > 500000000ULL)
		warm = 500000000ULL;
	for (int i = 0; i < cfg->threads; i++) {
		struct client *cl = &cls[i];
		int per = cfg->conns / cfg->threads;

		cl->cfg = cfg;
		cl->conns = conns + i * per;
		cl->n = i == cfg->threads - 1 ? cfg->conns - i * per : per;
		cl->start_ns = t0 + warm;
		cl->end_ns = t0 + warm + (uint64_t)(cfg->secs * 1e9);
		cl->lat = lat + i * (MAX_SAMPLES / cfg->threads);
		if (pthread_create(&cl->th, NULL, client, cl)) {
			ret = -EAGAIN;
			cfg = NULL;
			break;
		}
	}
	if (cfg && cfg->count) {
		sleep_until(t0 + warm);
		bench_count_start(cfg->count);
		sleep_until(t0 + warm + (uint64_t)(cfg->secs * 1e9));
		bench_count_stop(cfg->count);
	}
	for (int i = 0; i < (cfg ? cfg->threads : 0); i++)
		pthread_join(cls[i].th, NULL);
	if (!cfg)
		goto out;
	for (int i = 0; i < cfg->threads; i++) {
		memmove(lat + nlat, cls[i].lat, cls[i].nlat * sizeof(*lat));
		nlat += cls[i].nlat;
		res->reqs += cls[i].reqs;
		res->errors += cls[i].errors;
	}
	res->req_per_s = res->reqs / cfg->secs;
	res->p50_us = bench_percentile(lat, nlat, 50);
	res->p99_us = bench_percentile(lat, nlat, 99);
	res->p999_us = bench_percentile(lat, nlat, 99.9);
out:
	for (int i = 0; i < made; i++)
		close(conns[i].fd);
	free(conns);
	free(cls);
	free(lat);
	return ret;
}
