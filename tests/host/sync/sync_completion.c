// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Description: struct umcg_completion and umcg_async_call() on the user
 * backend: completed from a plain thread while a worker is parked, before
 * the wait, with many waiters, timeouts, the stack-lifetime pattern,
 * start failures, errors.
 */
#include <string.h>

#include "kselftest_harness.h"
#include "sync_test.h"

FIXTURE(completion) {
};

FIXTURE_VARIANT(completion) {
	unsigned int nr_cores;
};

FIXTURE_VARIANT_ADD(completion, one_core) {
	.nr_cores = 1,
};

FIXTURE_VARIANT_ADD(completion, two_cores) {
	.nr_cores = 2,
};

FIXTURE_SETUP(completion)
{
	ASSERT_EQ(0, st_init(variant->nr_cores, 0));
}

FIXTURE_TEARDOWN(completion)
{
	umcg_fini();
}

struct waiter {
	struct umcg_completion *c;
	int64_t result;
	int ret;
	int done;
};

static void *wait_fn(void *arg)
{
	struct waiter *w = arg;

	w->ret = umcg_completion_wait(w->c, &w->result);
	st_set(&w->done, 1);
	return NULL;
}

struct completer {
	struct umcg_completion *c;
	int64_t value;
	int ret;
};

static void *complete_fn(void *arg)
{
	struct completer *k = arg;

	k->ret = umcg_completion_complete(k->c, k->value);
	return NULL;
}

/* A worker parks on the completion; a plain thread completes it. */
TEST_F(completion, from_plain_thread)
{
	struct umcg_completion c;
	struct waiter w = { .c = &c, .ret = 1 };
	struct completer k = { .c = &c, .value = 42 };
	umcg_thread_t *t;
	pthread_t p;

	ASSERT_EQ(0, umcg_completion_init(&c));
	ASSERT_EQ(0, st_spawn(&t, wait_fn, &w));
	ASSERT_EQ(UMCG_STATE_PARKED, st_wait_state(t, UMCG_STATE_PARKED, ST_PATIENCE_MS));
	EXPECT_EQ(0, st_get(&w.done));
	ASSERT_EQ(0, st_pthread(&p, complete_fn, &k));
	ASSERT_EQ(0, pthread_join(p, NULL));
	ASSERT_EQ(0, umcg_join(t, NULL));
	EXPECT_EQ(0, k.ret);
	EXPECT_EQ(0, w.ret);
	EXPECT_EQ(42, w.result);
}

TEST_F(completion, before_wait)
{
	struct umcg_completion c = UMCG_COMPLETION_INITIALIZER;
	struct waiter w = { .c = &c, .ret = 1 };
	int64_t r = 0;
	umcg_thread_t *t;

	ASSERT_EQ(0, umcg_completion_complete(&c, -7));
	EXPECT_EQ(-EALREADY, umcg_completion_complete(&c, 8));
	/* Plain thread, with and without a result, and with a timeout. */
	ASSERT_EQ(0, umcg_completion_wait(&c, &r));
	EXPECT_EQ(-7, r);
	ASSERT_EQ(0, umcg_completion_wait(&c, NULL));
	r = 0;
	ASSERT_EQ(0, umcg_completion_wait_timeout(&c, &r, 0));
	EXPECT_EQ(-7, r);
	/* A worker does not park for a done completion. */
	ASSERT_EQ(0, st_spawn(&t, wait_fn, &w));
	ASSERT_EQ(0, umcg_join(t, NULL));
	EXPECT_EQ(0, w.ret);
	EXPECT_EQ(-7, w.result);
}

/* Every waiter, worker or plain thread, gets the one result. */
TEST_F(completion, many_waiters)
{
	struct umcg_completion c;
	struct waiter w[5];
	struct completer k = { .c = &c, .value = 1LL << 40 };
	umcg_thread_t *t[4];
	pthread_t p, pc;

	ASSERT_EQ(0, umcg_completion_init(&c));
	for (int i = 0; i < 5; i++)
		w[i] = (struct waiter){ .c = &c, .ret = 1 };
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, st_spawn(&t[i], wait_fn, &w[i]));
	ASSERT_EQ(0, st_pthread(&p, wait_fn, &w[4]));
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(UMCG_STATE_PARKED, st_wait_state(t[i], UMCG_STATE_PARKED,
							   ST_PATIENCE_MS));
	ASSERT_EQ(0, st_pthread(&pc, complete_fn, &k));
	ASSERT_EQ(0, pthread_join(pc, NULL));
	for (int i = 0; i < 4; i++)
		ASSERT_EQ(0, umcg_join(t[i], NULL));
	ASSERT_EQ(0, pthread_join(p, NULL));
	for (int i = 0; i < 5; i++) {
		EXPECT_EQ(0, w[i].ret);
		EXPECT_EQ(1LL << 40, w[i].result);
	}
}

struct timed {
	struct umcg_completion *c;
	int ret;
	uint64_t elapsed;
};

static void *timed_fn(void *arg)
{
	struct timed *t = arg;
	uint64_t start = st_now_ns();

	t->ret = umcg_completion_wait_timeout(t->c, NULL, 20 * ST_MS);
	t->elapsed = st_now_ns() - start;
	return NULL;
}

TEST_F(completion, timeout)
{
	struct umcg_completion c;
	struct timed tw = { .c = &c, .ret = 1 }, tp = { .c = &c, .ret = 1 };
	int64_t r;
	umcg_thread_t *t;

	ASSERT_EQ(0, umcg_completion_init(&c));
	ASSERT_EQ(0, st_spawn(&t, timed_fn, &tw));
	timed_fn(&tp);
	ASSERT_EQ(0, umcg_join(t, NULL));
	EXPECT_EQ(-ETIMEDOUT, tw.ret);
	EXPECT_LE(20 * ST_MS, tw.elapsed);
	EXPECT_GT(2000 * ST_MS, tw.elapsed);
	EXPECT_EQ(-ETIMEDOUT, tp.ret);
	EXPECT_LE(20 * ST_MS, tp.elapsed);
	/* The timed-out waiters are gone: completing wakes nobody stale. */
	ASSERT_EQ(0, umcg_completion_complete(&c, 3));
	ASSERT_EQ(0, umcg_completion_wait_timeout(&c, &r, 20 * ST_MS));
	EXPECT_EQ(3, r);
}

/*
 * The completion lives on the waiter's stack and dies as the wait returns,
 * while the completer may still be in umcg_completion_complete(): ASan
 * catches a completer that touches it too late.
 */
#define NR_LIFETIME	300

static void *late_complete_fn(void *arg)
{
	umcg_completion_complete(arg, 5);
	return NULL;
}

/* The completion dies with this frame, as soon as the wait returns. */
static __attribute__((noinline)) int wait_once(pthread_t *p)
{
	struct umcg_completion c;
	int64_t r = -1;

	umcg_completion_init(&c);
	if (st_pthread(p, late_complete_fn, &c))
		return -1;
	if (umcg_completion_wait(&c, &r) || r != 5)
		return -1;
	return 0;
}

/* Reuse the stack the completion was on. */
static __attribute__((noinline)) void scribble(void)
{
	char junk[512];

	memset(junk, 0x5a, sizeof(junk));
	__asm__ __volatile__("" : : "r"(junk) : "memory");	/* keep the stores */
}

static void *lifetime_fn(void *arg)
{
	int *errors = arg;

	for (int i = 0; i < NR_LIFETIME; i++) {
		pthread_t p;

		if (wait_once(&p)) {
			(*errors)++;
			break;
		}
		scribble();
		pthread_join(p, NULL);
	}
	return NULL;
}

TEST_F(completion, stack_lifetime)
{
	umcg_thread_t *t;
	int errors = 0;

	ASSERT_EQ(0, st_spawn(&t, lifetime_fn, &errors));
	ASSERT_EQ(0, umcg_join(t, NULL));
	EXPECT_EQ(0, errors);
}

/* A callback-style "operation": a helper thread completes it later. */
struct op {
	int64_t input;
	int gated;		/* complete only once the test opens the gate */
	int gate;
	int fail;		/* start returns this instead of starting */
	int sync;		/* complete before start returns */
	int started;
};

struct op_run {
	struct umcg_completion *c;
	struct op *op;
};

static void *op_thread(void *arg)
{
	struct op_run *run = arg;

	if (run->op->gated)
		st_wait_at_least(&run->op->gate, 1, ST_PATIENCE_MS);
	else
		usleep(1000);
	umcg_completion_complete(run->c, run->op->input * 2);
	free(run);
	return NULL;
}

static int op_start(void *arg, struct umcg_completion *c)
{
	struct op *op = arg;
	struct op_run *run;
	pthread_t p;

	if (op->fail)
		return op->fail;
	op->started++;
	if (op->sync)
		return umcg_completion_complete(c, op->input * 2);
	run = malloc(sizeof(*run));
	if (!run)
		return -ENOMEM;
	*run = (struct op_run){ .c = c, .op = op };
	if (pthread_create(&p, NULL, op_thread, run)) {
		free(run);
		return -EAGAIN;
	}
	pthread_detach(p);
	return 0;
}

struct call {
	struct op op;
	int64_t result;
	int ret;
};

static void *call_fn(void *arg)
{
	struct call *k = arg;

	k->ret = umcg_async_call(op_start, &k->op, &k->result);
	return NULL;
}

TEST_F(completion, async_call)
{
	struct call k = { .op = { .input = 21, .gated = 1 }, .ret = 1 };
	umcg_thread_t *t;

	/* A worker parks until the helper thread completes. */
	ASSERT_EQ(0, st_spawn(&t, call_fn, &k));
	ASSERT_EQ(UMCG_STATE_PARKED, st_wait_state(t, UMCG_STATE_PARKED, ST_PATIENCE_MS));
	EXPECT_EQ(1, k.ret);
	st_set(&k.op.gate, 1);
	ASSERT_EQ(0, umcg_join(t, NULL));
	EXPECT_EQ(0, k.ret);
	EXPECT_EQ(42, k.result);
	EXPECT_EQ(1, k.op.started);

	/* Completed inside start. */
	k = (struct call){ .op = { .input = 5, .sync = 1 }, .ret = 1 };
	ASSERT_EQ(0, st_spawn(&t, call_fn, &k));
	ASSERT_EQ(0, umcg_join(t, NULL));
	EXPECT_EQ(0, k.ret);
	EXPECT_EQ(10, k.result);

	/* From a plain thread. */
	k = (struct call){ .op = { .input = -4 }, .ret = 1 };
	call_fn(&k);
	EXPECT_EQ(0, k.ret);
	EXPECT_EQ(-8, k.result);

	/* start fails: its error, nothing waited for. */
	k = (struct call){ .op = { .fail = -ENOSPC }, .ret = 1, .result = 99 };
	call_fn(&k);
	EXPECT_EQ(-ENOSPC, k.ret);
	EXPECT_EQ(99, k.result);
}

TEST(errors)
{
	struct umcg_completion c, zero = { 0 };
	int64_t r;

	EXPECT_EQ(-EINVAL, umcg_completion_init(NULL));
	EXPECT_EQ(-EINVAL, umcg_completion_complete(NULL, 1));
	EXPECT_EQ(-EINVAL, umcg_completion_wait(NULL, &r));
	EXPECT_EQ(-EINVAL, umcg_completion_wait_timeout(NULL, &r, 1));
	EXPECT_EQ(-EINVAL, umcg_completion_complete(&zero, 1));
	EXPECT_EQ(-EINVAL, umcg_completion_wait(&zero, &r));
	EXPECT_EQ(-EINVAL, umcg_async_call(NULL, NULL, &r));
	ASSERT_EQ(0, umcg_completion_init(&c));
	EXPECT_EQ(-ETIMEDOUT, umcg_completion_wait_timeout(&c, &r, 0));
}

TEST_HARNESS_MAIN
