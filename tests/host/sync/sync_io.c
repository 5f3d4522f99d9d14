// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Description: umcg_io_* on the user backend with one core and the
 * monitor's block detection out of reach (blocked_ns 10 s): a worker
 * waiting for a pipe or socket must park, or the worker that would make
 * the fd ready never runs.  Also plain threads, restart after
 * umcg_io_fini(), errors, errno left alone.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <string.h>

#include "kselftest_harness.h"
#include "sync_test.h"

FIXTURE(io) {
	int pipe[2];
};

FIXTURE_SETUP(io)
{
	self->pipe[0] = self->pipe[1] = -1;
	ASSERT_EQ(0, st_init(1, 10000 * ST_MS));
	ASSERT_EQ(0, pipe(self->pipe));
}

FIXTURE_TEARDOWN(io)
{
	umcg_fini();
	umcg_io_fini();
	close(self->pipe[0]);
	close(self->pipe[1]);
}

struct pipe_read {
	int fd;
	char buf[16];
	ssize_t ret;
	int done;
};

static void *reader_fn(void *arg)
{
	struct pipe_read *r = arg;

	r->ret = umcg_io_read(r->fd, r->buf, sizeof(r->buf));
	st_set(&r->done, 1);
	return NULL;
}

struct pipe_write {
	int fd;
	umcg_thread_t *reader;
	int reader_state;	/* as the writer saw it before writing */
	ssize_t ret;
};

static void *writer_fn(void *arg)
{
	struct pipe_write *w = arg;

	/* We run at all only if the reader gave the one core away. */
	w->reader_state = st_wait_state(w->reader, UMCG_STATE_PARKED, ST_PATIENCE_MS);
	w->ret = umcg_io_write(w->fd, "hello", 5);
	return NULL;
}

/*
 * Waits up to ST_PATIENCE_MS for *@done; if it does not come, unblocks a
 * reader stuck in the kernel by writing to @fd, so the test fails instead
 * of hanging.
 */
static int wait_done_or_rescue(int *done, int fd)
{
	if (st_wait_at_least(done, 1, ST_PATIENCE_MS) == 1)
		return 1;
	if (write(fd, "rescue", 6) != 6)
		return -1;
	return 0;
}

TEST_F(io, read_parks)
{
	struct pipe_read r = { .fd = self->pipe[0] };
	struct pipe_write w = { .fd = self->pipe[1] };
	umcg_thread_t *rt, *wt;

	ASSERT_EQ(0, st_spawn(&rt, reader_fn, &r));
	w.reader = rt;
	ASSERT_EQ(0, st_spawn(&wt, writer_fn, &w));
	ASSERT_EQ(1, wait_done_or_rescue(&r.done, self->pipe[1]))
		TH_LOG("the reader blocked the core instead of parking");
	ASSERT_EQ(0, umcg_join(wt, NULL));
	ASSERT_EQ(0, umcg_join(rt, NULL));
	EXPECT_EQ(UMCG_STATE_PARKED, w.reader_state);
	EXPECT_EQ(5, w.ret);
	ASSERT_EQ(5, r.ret);
	EXPECT_EQ(0, memcmp(r.buf, "hello", 5));
	/* The fd was made non-blocking. */
	EXPECT_TRUE(fcntl(self->pipe[0], F_GETFL) & O_NONBLOCK);
}

#define STREAM_BYTES	(256 * 1024)

struct stream {
	int fd;
	long bytes;
	int errors;
	int done;
};

static void *stream_write_fn(void *arg)
{
	struct stream *s = arg;
	unsigned char buf[3000];

	while (s->bytes < STREAM_BYTES) {
		size_t n = sizeof(buf);
		ssize_t ret;

		if (n > (size_t)(STREAM_BYTES - s->bytes))
			n = STREAM_BYTES - s->bytes;
		for (size_t i = 0; i < n; i++)
			buf[i] = (unsigned char)((s->bytes + i) % 251);
		ret = umcg_io_write(s->fd, buf, n);
		if (ret <= 0) {
			s->errors++;
			break;
		}
		s->bytes += ret;
	}
	st_set(&s->done, 1);
	return NULL;
}

static void *stream_read_fn(void *arg)
{
	struct stream *s = arg;
	unsigned char buf[1000];

	while (s->bytes < STREAM_BYTES) {
		ssize_t ret = umcg_io_read(s->fd, buf, sizeof(buf));

		if (ret <= 0) {
			s->errors++;
			break;
		}
		for (ssize_t i = 0; i < ret; i++)
			if (buf[i] != (unsigned char)((s->bytes + i) % 251))
				s->errors++;
		s->bytes += ret;
	}
	st_set(&s->done, 1);
	return NULL;
}

/* Both ends park in turn: the writer on a full pipe, the reader on empty. */
TEST_F(io, stream)
{
	struct stream w = { .fd = self->pipe[1] }, r = { .fd = self->pipe[0] };
	struct umcg_stats st;
	umcg_thread_t *wt, *rt;

	fcntl(self->pipe[1], F_SETPIPE_SZ, 4096);
	ASSERT_EQ(0, st_spawn(&rt, stream_read_fn, &r));
	ASSERT_EQ(0, st_spawn(&wt, stream_write_fn, &w));
	ASSERT_EQ(1, st_wait_at_least(&r.done, 1, 10000));
	ASSERT_EQ(0, umcg_join(wt, NULL));
	ASSERT_EQ(0, umcg_join(rt, NULL));
	EXPECT_EQ(0, w.errors);
	EXPECT_EQ(0, r.errors);
	EXPECT_EQ(STREAM_BYTES, w.bytes);
	EXPECT_EQ(STREAM_BYTES, r.bytes);
	ASSERT_EQ(0, umcg_stats(&st));
	EXPECT_LT(2, st.parks);
}

struct server {
	int lfd;
	char buf[8];
	ssize_t ret;
	int done;
};

static void *accept_fn(void *arg)
{
	struct server *s = arg;
	int fd = umcg_io_accept(s->lfd, NULL, NULL);

	if (fd < 0) {
		s->ret = fd;
	} else {
		s->ret = umcg_io_read(fd, s->buf, 4);
		close(fd);
	}
	st_set(&s->done, 1);
	return NULL;
}

struct client {
	struct sockaddr_in addr;
	umcg_thread_t *server;
	int server_state;
	int connect_ret;
	ssize_t write_ret;
};

static void *connect_fn(void *arg)
{
	struct client *c = arg;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	c->server_state = st_wait_state(c->server, UMCG_STATE_PARKED, ST_PATIENCE_MS);
	c->connect_ret = umcg_io_connect(fd, (struct sockaddr *)&c->addr, sizeof(c->addr));
	c->write_ret = umcg_io_write(fd, "ping", 4);
	close(fd);
	return NULL;
}

TEST_F(io, accept_connect)
{
	struct server s = { .ret = 1 };
	struct client c = { .addr = { .sin_family = AF_INET } };
	socklen_t len = sizeof(c.addr);
	umcg_thread_t *st, *ct;
	int wake;

	s.lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s.lfd < 0)
		SKIP(return, "no IPv4 sockets: %s", strerror(errno));
	c.addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s.lfd, (struct sockaddr *)&c.addr, sizeof(c.addr)) ||
	    listen(s.lfd, 4) || getsockname(s.lfd, (struct sockaddr *)&c.addr, &len))
		SKIP(return, "no loopback: %s", strerror(errno));

	ASSERT_EQ(0, st_spawn(&st, accept_fn, &s));
	c.server = st;
	ASSERT_EQ(0, st_spawn(&ct, connect_fn, &c));
	if (st_wait_at_least(&s.done, 1, ST_PATIENCE_MS) != 1) {
		/* Rescue an acceptor stuck in the kernel, then fail. */
		wake = socket(AF_INET, SOCK_STREAM, 0);
		connect(wake, (struct sockaddr *)&c.addr, sizeof(c.addr));
		write(wake, "xxxx", 4);
		close(wake);
		ASSERT_TRUE(0) TH_LOG("the acceptor blocked the core instead of parking");
	}
	ASSERT_EQ(0, umcg_join(ct, NULL));
	ASSERT_EQ(0, umcg_join(st, NULL));
	EXPECT_EQ(UMCG_STATE_PARKED, c.server_state);
	EXPECT_EQ(0, c.connect_ret);
	EXPECT_EQ(4, c.write_ret);
	ASSERT_EQ(4, s.ret);
	EXPECT_EQ(0, memcmp(s.buf, "ping", 4));
	close(s.lfd);
}

static void *late_write_fn(void *arg)
{
	int fd = *(int *)arg;

	usleep(20000);
	return (void *)(intptr_t)write(fd, "late", 4);
}

/* A plain thread waits in poll() itself; the poller is not started. */
TEST_F(io, plain_thread)
{
	char buf[8];
	pthread_t p;
	void *wret;
	uint64_t start = st_now_ns();

	ASSERT_EQ(0, st_pthread(&p, late_write_fn, &self->pipe[1]));
	ASSERT_EQ(4, umcg_io_read(self->pipe[0], buf, sizeof(buf)));
	EXPECT_LE(10 * ST_MS, st_now_ns() - start);
	EXPECT_EQ(0, memcmp(buf, "late", 4));
	ASSERT_EQ(0, pthread_join(p, &wret));
	EXPECT_EQ(4, (intptr_t)wret);
}

/* umcg_io_fini() stops the poller; the next wait starts a new one. */
TEST_F(io, fini_restart)
{
	for (int round = 0; round < 3; round++) {
		struct pipe_read r = { .fd = self->pipe[0] };
		struct pipe_write w = { .fd = self->pipe[1] };
		umcg_thread_t *rt, *wt;

		ASSERT_EQ(0, st_spawn(&rt, reader_fn, &r));
		w.reader = rt;
		ASSERT_EQ(0, st_spawn(&wt, writer_fn, &w));
		ASSERT_EQ(1, wait_done_or_rescue(&r.done, self->pipe[1]));
		ASSERT_EQ(0, umcg_join(wt, NULL));
		ASSERT_EQ(0, umcg_join(rt, NULL));
		EXPECT_EQ(UMCG_STATE_PARKED, w.reader_state);
		EXPECT_EQ(5, r.ret);
		EXPECT_EQ(0, umcg_io_fini());
	}
	EXPECT_EQ(0, umcg_io_fini());
}

TEST_F(io, errors)
{
	char buf[4];

	errno = 1234;
	EXPECT_EQ(-EINVAL, umcg_io_read(self->pipe[0], NULL, 1));
	EXPECT_EQ(-EINVAL, umcg_io_write(self->pipe[1], NULL, 1));
	EXPECT_EQ(-EINVAL, umcg_io_read(self->pipe[0], buf, (size_t)SSIZE_MAX + 1));
	EXPECT_EQ(-EINVAL, umcg_io_connect(self->pipe[0], NULL, 0));
	EXPECT_EQ(-EINVAL, umcg_io_accept(self->pipe[0], (struct sockaddr *)buf, NULL));
	EXPECT_EQ(-EBADF, umcg_io_read(-1, buf, sizeof(buf)));
	EXPECT_EQ(-EBADF, umcg_io_write(-1, buf, sizeof(buf)));
	EXPECT_EQ(-EBADF, umcg_io_accept(-1, NULL, NULL));
	EXPECT_EQ(-ENOTSOCK, umcg_io_accept(self->pipe[0], NULL, NULL));
	/* A zero-length read of an empty pipe returns 0 at once. */
	EXPECT_EQ(0, umcg_io_read(self->pipe[0], NULL, 0));
	EXPECT_EQ(1234, errno);
}

TEST_HARNESS_MAIN
