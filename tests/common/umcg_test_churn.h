/* SPDX-License-Identifier: GPL-2.0 */
/*
 * umcg_test_churn.h - one step of worker churn for stress tests: the calls
 * by which a worker races the runtime's and the kernel's moves of itself
 * and its peers.  Called by a worker; include after <umcg.h>.
 */
#ifndef UMCG_TEST_CHURN_H
#define UMCG_TEST_CHURN_H

#include <errno.h>
#include <time.h>
#include <unistd.h>

enum umcg_test_churn_op {
	UMCG_CHURN_YIELD,	/* umcg_yield() */
	UMCG_CHURN_NANOSLEEP,	/* 100 us, behind libumcg's back */
	UMCG_CHURN_READ,	/* one byte from a pipe (umcg_test_feeder.h) */
	UMCG_CHURN_PARK,	/* umcg_park_timeout(200 us) */
	UMCG_CHURN_UNPARK,	/* umcg_unpark(peer) */
	UMCG_CHURN_SWITCH,	/* umcg_switch_to(peer): parks us */
	UMCG_CHURN_NOTHING,
};

/*
 * Do @op (@read_fd: the pipe's read end; @peer: another worker, possibly
 * us).  Returns 0, or the error of a call that must not fail: a timeout,
 * a peer that is busy (-EBUSY) or gone (-ESRCH) are no errors here.
 */
static inline int umcg_test_churn(enum umcg_test_churn_op op, int read_fd,
				  umcg_thread_t *peer)
{
	struct timespec ts = { 0, 100 * 1000 };
	int ret = 0;
	char c;

	switch (op) {
	case UMCG_CHURN_YIELD:
		return umcg_yield();
	case UMCG_CHURN_NANOSLEEP:
		nanosleep(&ts, NULL);
		return 0;
	case UMCG_CHURN_READ:
		return read(read_fd, &c, 1) == 1 ? 0 : -EIO;
	case UMCG_CHURN_PARK:
		ret = umcg_park_timeout(200 * 1000);
		return ret == -ETIMEDOUT ? 0 : ret;
	case UMCG_CHURN_UNPARK:
		ret = umcg_unpark(peer);
		return ret == -ESRCH ? 0 : ret;
	case UMCG_CHURN_SWITCH:
		ret = peer == umcg_self() ? 0 : umcg_switch_to(peer);
		return ret == -EBUSY || ret == -ESRCH ? 0 : ret;
	default:
		return 0;
	}
}

#endif /* UMCG_TEST_CHURN_H */
