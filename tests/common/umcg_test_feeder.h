/* SPDX-License-Identifier: GPL-2.0 */
/*
 * umcg_test_feeder.h - a plain thread (no worker) that writes one byte to
 * a pipe at a steady pace, for tests whose workers block in read() on it.
 * Start and stop from one thread; the feeder itself touches only @fd and
 * @stop.
 */
#ifndef UMCG_TEST_FEEDER_H
#define UMCG_TEST_FEEDER_H

#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

struct umcg_test_feeder {
	pthread_t thread;
	int fd;			/* the pipe's write end */
	unsigned int every_us;	/* one byte per this many microseconds */
	_Atomic int stop;
	int started;
};

static void *umcg_test_feeder_main(void *arg)
{
	struct umcg_test_feeder *f = arg;

	while (!atomic_load(&f->stop)) {
		usleep(f->every_us);
		if (write(f->fd, "x", 1) != 1)
			break;
	}
	return NULL;
}

/* Start feeding @fd, a byte every @every_us.  0 or an errno value. */
static inline int umcg_test_feeder_start(struct umcg_test_feeder *f, int fd,
					 unsigned int every_us)
{
	int ret;

	f->fd = fd;
	f->every_us = every_us;
	atomic_store(&f->stop, 0);
	ret = pthread_create(&f->thread, NULL, umcg_test_feeder_main, f);
	f->started = !ret;
	return ret;
}

/* Stop and join the feeder, if it started. */
static inline void umcg_test_feeder_stop(struct umcg_test_feeder *f)
{
	if (!f->started)
		return;
	atomic_store(&f->stop, 1);
	pthread_join(f->thread, NULL);
	f->started = 0;
}

#endif /* UMCG_TEST_FEEDER_H */
