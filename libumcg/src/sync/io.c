// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * io.c - blocking I/O calls that park the worker (Loom's model).
 *
 * The fd is made non-blocking and the call tried.  When it would block, a
 * worker queues a waiter on the fd's record in a small hash table and arms
 * the fd in the process's one epoll instance (EPOLLONESHOT, interest = the
 * union of what its waiters want), then parks.  The poller thread (a plain
 * thread, started on first use) takes each event, claims the waiters it
 * satisfies, re-arms the fd for those left, and unparks the claimed ones,
 * which try their call again.  A plain thread simply poll()s.
 *
 * Locking:
 *   io.ctl   (pthread mutex) serialises starting and stopping the poller;
 *            never taken by the poller itself.
 *   io.lock  (internal spin lock) covers io.state, the table, every
 *            record and its wait lists, and the epoll_ctl() that arms a
 *            record, so the armed interest always matches the lists.
 *   Order: io.ctl, then io.lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sync_internal.h"

#define IO_BUCKETS	64
#define IO_EVENTS	64
#define IO_STOP_KEY	UINT64_MAX

#define IO_STOPPED	0
#define IO_RUNNING	1
#define IO_STOPPING	2

/* Waiters of one fd. */
struct io_fd {
	struct cds_list_head node;	/* in its bucket */
	int fd;
	struct cds_list_head readers;	/* usync_waiter, events EPOLLIN */
	struct cds_list_head writers;	/* usync_waiter, events EPOLLOUT */
};

static struct {
	pthread_mutex_t ctl;
	uint32_t lock;
	int state;			/* IO_*: written under ctl and lock */
	int epfd, evfd;			/* valid while not IO_STOPPED */
	bool hooks;			/* atexit/atfork registered (under ctl) */
	pthread_t thread;
	struct cds_list_head buckets[IO_BUCKETS];	/* zero: empty */
} io = { .ctl = PTHREAD_MUTEX_INITIALIZER };

static struct cds_list_head *io_bucket(int fd)
{
	struct cds_list_head *h = &io.buckets[(unsigned int)fd % IO_BUCKETS];

	usync_list_ready(h);
	return h;
}

/* Under io.lock. */
static struct io_fd *io_find(int fd)
{
	struct cds_list_head *h = io_bucket(fd);
	struct io_fd *r;

	cds_list_for_each_entry(r, h, node)
		if (r->fd == fd)
			return r;
	return NULL;
}

/* Under io.lock: arm @r's fd for what its waiters want.  0 or -errno. */
static int io_arm(struct io_fd *r)
{
	struct epoll_event ev = { .data.u64 = (uint64_t)r->fd };

	ev.events = EPOLLONESHOT;
	if (!cds_list_empty(&r->readers))
		ev.events |= EPOLLIN | EPOLLRDHUP;
	if (!cds_list_empty(&r->writers))
		ev.events |= EPOLLOUT;
	if (!epoll_ctl(io.epfd, EPOLL_CTL_MOD, r->fd, &ev))
		return 0;
	if (errno != ENOENT)
		return -errno;
	if (!epoll_ctl(io.epfd, EPOLL_CTL_ADD, r->fd, &ev))
		return 0;
	if (errno == EEXIST && !epoll_ctl(io.epfd, EPOLL_CTL_MOD, r->fd, &ev))
		return 0;
	return -errno;
}

/* Under io.lock: claim @r's waiters satisfied by @events onto @woken. */
static void io_claim(struct io_fd *r, uint32_t events, struct cds_list_head *woken)
{
	struct cds_list_head *lists[2] = { &r->readers, &r->writers };
	uint32_t want[2] = { EPOLLIN | EPOLLRDHUP | EPOLLERR | EPOLLHUP,
			     EPOLLOUT | EPOLLERR | EPOLLHUP };

	for (int i = 0; i < 2; i++) {
		if (!(events & want[i]))
			continue;
		while (!cds_list_empty(lists[i])) {
			struct usync_waiter *w = cds_list_first_entry(lists[i],
								       struct usync_waiter, node);

			usync_list_move_tail(&w->node, woken);
			usync_claim(w, 0);
		}
	}
}

static void *io_poller_main(void *arg)
{
	struct epoll_event evs[IO_EVENTS];
	int epfd = (int)(intptr_t)arg;
	bool stop = false;

	while (!stop) {
		int n = epoll_wait(epfd, evs, IO_EVENTS, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		for (int i = 0; i < n; i++) {
			struct cds_list_head woken;
			struct io_fd *r, *dead = NULL;

			if (evs[i].data.u64 == IO_STOP_KEY) {
				stop = true;
				continue;
			}
			CDS_INIT_LIST_HEAD(&woken);
			usync_lock(&io.lock);
			r = io_find((int)evs[i].data.u64);
			if (r) {
				io_claim(r, evs[i].events, &woken);
				if (cds_list_empty(&r->readers) && cds_list_empty(&r->writers)) {
					cds_list_del(&r->node);
					dead = r;
				} else if (io_arm(r) < 0) {
					/* Cannot re-arm: let the rest retry too. */
					io_claim(r, EPOLLERR, &woken);
					cds_list_del(&r->node);
					dead = r;
				}
			}
			usync_unlock(&io.lock);
			free(dead);
			usync_wake_list(&woken);
		}
	}
	return NULL;
}

/* Stop the poller; with @wake, wake its waiters (they retry). */
static void io_stop(bool wake)
{
	struct cds_list_head woken;
	uint64_t one = 1;
	ssize_t n;

	CDS_INIT_LIST_HEAD(&woken);
	pthread_mutex_lock(&io.ctl);
	usync_lock(&io.lock);
	if (io.state != IO_RUNNING) {
		usync_unlock(&io.lock);
		pthread_mutex_unlock(&io.ctl);
		return;
	}
	io.state = IO_STOPPING;
	usync_unlock(&io.lock);

	do
		n = write(io.evfd, &one, sizeof(one));
	while (n < 0 && errno == EINTR);
	pthread_join(io.thread, NULL);

	usync_lock(&io.lock);
	for (int i = 0; i < IO_BUCKETS; i++) {
		struct cds_list_head *h = io_bucket(i);

		while (!cds_list_empty(h)) {
			struct io_fd *r = cds_list_first_entry(h, struct io_fd, node);

			io_claim(r, EPOLLERR, &woken);
			cds_list_del(&r->node);
			free(r);
		}
	}
	close(io.epfd);
	close(io.evfd);
	io.epfd = io.evfd = -1;
	io.state = IO_STOPPED;
	usync_unlock(&io.lock);
	/*
	 * At exit nobody is woken: the process is going, and a woken
	 * waiter would only start a poller again.
	 */
	if (wake)
		usync_wake_list(&woken);
	pthread_mutex_unlock(&io.ctl);
}

static void io_atexit(void)
{
	io_stop(false);
}

/* In a child the poller is gone, and every waiter was another thread. */
static void io_atfork_child(void)
{
	pthread_mutex_init(&io.ctl, NULL);
	io.lock = 0;
	if (io.state == IO_STOPPED)
		return;
	for (int i = 0; i < IO_BUCKETS; i++) {
		struct cds_list_head *h = io_bucket(i);

		while (!cds_list_empty(h)) {
			struct io_fd *r = cds_list_first_entry(h, struct io_fd, node);

			cds_list_del(&r->node);
			free(r);
		}
	}
	close(io.epfd);
	close(io.evfd);
	io.epfd = io.evfd = -1;
	io.state = IO_STOPPED;
}

/* Start the poller unless it runs.  0 or -errno. */
static int io_start(void)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = IO_STOP_KEY };
	sigset_t all, old;
	int ret = 0, epfd, evfd;

	pthread_mutex_lock(&io.ctl);
	if (io.state == IO_RUNNING)	/* written under io.ctl only */
		goto out;
	if (!io.hooks) {
		if (atexit(io_atexit) || pthread_atfork(NULL, NULL, io_atfork_child)) {
			ret = -ENOMEM;
			goto out;
		}
		io.hooks = true;
	}
	epfd = epoll_create1(EPOLL_CLOEXEC);
	if (epfd < 0) {
		ret = -errno;
		goto out;
	}
	evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (evfd < 0 || epoll_ctl(epfd, EPOLL_CTL_ADD, evfd, &ev)) {
		ret = -errno;
		if (evfd >= 0)
			close(evfd);
		close(epfd);
		goto out;
	}
	/* The poller takes no signals: they are for the application. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = -pthread_create(&io.thread, NULL, io_poller_main, (void *)(intptr_t)epfd);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		close(evfd);
		close(epfd);
		goto out;
	}
	pthread_setname_np(io.thread, "umcg-io");
	usync_lock(&io.lock);
	io.epfd = epfd;
	io.evfd = evfd;
	io.state = IO_RUNNING;
	usync_unlock(&io.lock);
out:
	pthread_mutex_unlock(&io.ctl);
	return ret;
}

/* Wait in poll(2) until @fd is ready for @events (EPOLLIN/EPOLLOUT). */
static int io_poll(int fd, uint32_t events)
{
	struct pollfd p = { .fd = fd, .events = events == EPOLLIN ? POLLIN : POLLOUT };

	for (;;) {
		int n = poll(&p, 1, -1);

		if (n > 0)
			return (p.revents & POLLNVAL) ? -EBADF : 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

/*
 * Wait until @fd may be ready for @events: park on the poller for a
 * worker, poll() for anyone else.  0 (retry the call) or -errno.
 */
static int io_wait(int fd, uint32_t events)
{
	struct io_fd *r, *spare = NULL;
	struct usync_waiter w;
	int ret;

	if (!umcg_self())
		return io_poll(fd, events);
	for (;;) {
		usync_lock(&io.lock);
		if (io.state != IO_RUNNING) {
			usync_unlock(&io.lock);
			if (io_start() < 0)
				goto poll;
			continue;
		}
		r = io_find(fd);
		if (r || spare)
			break;
		usync_unlock(&io.lock);
		spare = malloc(sizeof(*spare));
		if (!spare)
			goto poll;
	}
	if (!r) {
		r = spare;
		spare = NULL;
		r->fd = fd;
		CDS_INIT_LIST_HEAD(&r->readers);
		CDS_INIT_LIST_HEAD(&r->writers);
		cds_list_add_tail(&r->node, io_bucket(fd));
	}
	usync_waiter_init(&w);
	w.events = events;
	cds_list_add_tail(&w.node, events == EPOLLIN ? &r->readers : &r->writers);
	ret = io_arm(r);
	if (ret < 0) {
		/* Not pollable by epoll (e.g. a regular file): poll() it. */
		cds_list_del(&w.node);
		if (cds_list_empty(&r->readers) && cds_list_empty(&r->writers)) {
			cds_list_del(&r->node);
			spare = r;
		}
		usync_unlock(&io.lock);
		goto poll;
	}
	usync_unlock(&io.lock);
	free(spare);
	usync_wait(&w, 0);
	return 0;
poll:
	free(spare);
	return io_poll(fd, events);
}

/* Make @fd non-blocking.  0 or -errno. */
static int io_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0)
		return -errno;
	if (!(fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static inline bool io_again(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK;
}

/*
 * The retry loop of read and write: @op until it neither fails with EINTR
 * nor would block, parking on @events meanwhile.  errno is preserved.
 */
static ssize_t io_rw(int fd, void *buf, size_t count, uint32_t events,
		     ssize_t (*op)(int fd, void *buf, size_t count))
{
	int saved = errno;
	ssize_t ret;

	if ((!buf && count) || count > SSIZE_MAX)
		return -EINVAL;
	ret = io_nonblock(fd);
	while (!ret) {
		ret = op(fd, buf, count);
		if (ret >= 0)
			break;
		ret = -errno;
		if (ret == -EINTR)
			ret = 0;
		else if (io_again(-ret))
			ret = io_wait(fd, events);
	}
	errno = saved;
	return ret;
}

static ssize_t io_write_op(int fd, void *buf, size_t count)
{
	return write(fd, buf, count);
}

ssize_t umcg_io_read(int fd, void *buf, size_t count)
{
	return io_rw(fd, buf, count, EPOLLIN, read);
}

ssize_t umcg_io_write(int fd, const void *buf, size_t count)
{
	return io_rw(fd, (void *)buf, count, EPOLLOUT, io_write_op);
}

int umcg_io_accept(int fd, struct sockaddr *addr, socklen_t *addrlen)
{
	int saved = errno, ret;

	if (addr && !addrlen)
		return -EINVAL;
	ret = io_nonblock(fd);
	while (!ret) {
		ret = accept(fd, addr, addrlen);
		if (ret >= 0)
			break;
		ret = -errno;
		if (ret == -EINTR)
			ret = 0;
		else if (io_again(-ret))
			ret = io_wait(fd, EPOLLIN);
	}
	errno = saved;
	return ret;
}

int umcg_io_connect(int fd, const struct sockaddr *addr, socklen_t addrlen)
{
	int saved = errno, ret, err;
	bool started = false;
	socklen_t len;

	if (!addr)
		return -EINVAL;
	ret = io_nonblock(fd);
	while (!ret) {
		if (!connect(fd, addr, addrlen))
			break;
		ret = -errno;
		if (ret == -EISCONN && started) {
			ret = 0;	/* the connection we started is up */
			break;
		}
		if (ret == -EINPROGRESS || ret == -EALREADY || ret == -EINTR) {
			/* In progress: wait, read its outcome, then look again. */
			started = true;
			ret = io_wait(fd, EPOLLOUT);
			len = sizeof(err);
			if (!ret && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
				ret = -errno;
			else if (!ret)
				ret = -err;
		} else if (io_again(-ret)) {
			/* AF_UNIX with a full backlog: wait, then try again. */
			ret = io_wait(fd, EPOLLOUT);
		}
	}
	errno = saved;
	return ret;
}

int umcg_io_fini(void)
{
	int saved = errno;

	io_stop(true);
	errno = saved;
	return 0;
}
