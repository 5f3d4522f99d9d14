// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Description: umcg_chan_t on the user backend: FIFO order, the capacity
 * bound, close semantics (-EPIPE, blocked parties released), rendezvous,
 * a worker ping-pong on one core, mixed workers and plain threads, errors.
 */
#include <stdlib.h>

#include "kselftest_harness.h"
#include "sync_test.h"

FIXTURE(chan) {
};

FIXTURE_VARIANT(chan) {
	unsigned int nr_cores;
};

FIXTURE_VARIANT_ADD(chan, one_core) {
	.nr_cores = 1,
};

FIXTURE_VARIANT_ADD(chan, two_cores) {
	.nr_cores = 2,
};

FIXTURE_SETUP(chan)
{
	ASSERT_EQ(0, st_init(variant->nr_cores, 0));
}

FIXTURE_TEARDOWN(chan)
{
	umcg_fini();
}

#define NR_FIFO		2000

struct fifo {
	umcg_chan_t *c;
	int id;
	int errors;
	long received;
};

/* Sends (id << 20 | seq) for seq = 0 .. NR_FIFO - 1. */
static void *fifo_send_fn(void *arg)
{
	struct fifo *f = arg;

	for (int i = 0; i < NR_FIFO; i++) {
		long v = (long)f->id << 20 | i;

		if (umcg_chan_send(f->c, &v))
			__atomic_fetch_add(&f->errors, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

/* Receives both producers' streams; each must come in its own order. */
static void *fifo_recv_fn(void *arg)
{
	struct fifo *f = arg;
	int next[2] = { 0, 0 };

	for (int i = 0; i < 2 * NR_FIFO; i++) {
		long v;

		if (umcg_chan_recv(f->c, &v) || (v >> 20) > 1 || (v & 0xfffff) != next[v >> 20]) {
			f->errors++;
			continue;
		}
		next[v >> 20]++;
		f->received++;
	}
	return NULL;
}

TEST_F(chan, fifo_order)
{
	struct fifo p0 = { .id = 0 }, p1 = { .id = 1 }, r = { 0 };
	umcg_thread_t *s0, *s1, *rt;
	umcg_chan_t *c;

	ASSERT_EQ(0, umcg_chan_create(&c, 4, sizeof(long)));
	p0.c = p1.c = r.c = c;
	ASSERT_EQ(0, st_spawn(&rt, fifo_recv_fn, &r));
	ASSERT_EQ(0, st_spawn(&s0, fifo_send_fn, &p0));
	ASSERT_EQ(0, st_spawn(&s1, fifo_send_fn, &p1));
	ASSERT_EQ(0, umcg_join(s0, NULL));
	ASSERT_EQ(0, umcg_join(s1, NULL));
	ASSERT_EQ(0, umcg_join(rt, NULL));
	EXPECT_EQ(0, st_get(&p0.errors) + st_get(&p1.errors) + r.errors);
	EXPECT_EQ(2 * NR_FIFO, r.received);
	EXPECT_EQ(-EAGAIN, umcg_chan_try_recv(c, &r.received));
	EXPECT_EQ(0, umcg_chan_destroy(c));
}

struct one {
	umcg_chan_t *c;
	int value;
	int ret;
};

static void *send_one_fn(void *arg)
{
	struct one *o = arg;

	o->ret = umcg_chan_send(o->c, &o->value);
	return NULL;
}

static void *recv_one_fn(void *arg)
{
	struct one *o = arg;

	o->ret = umcg_chan_recv(o->c, &o->value);
	return NULL;
}

/* Never more than capacity elements in the channel; a sender waits. */
TEST_F(chan, capacity)
{
	struct one blocked = { .value = 3, .ret = 1 };
	umcg_thread_t *t;
	umcg_chan_t *c;
	int v;

	ASSERT_EQ(0, umcg_chan_create(&c, 3, sizeof(int)));
	for (v = 0; v < 3; v++)
		ASSERT_EQ(0, umcg_chan_try_send(c, &v));
	EXPECT_EQ(-EAGAIN, umcg_chan_try_send(c, &v));

	/* A worker sending into the full channel parks until there is room. */
	blocked.c = c;
	ASSERT_EQ(0, st_spawn(&t, send_one_fn, &blocked));
	ASSERT_EQ(UMCG_STATE_PARKED, st_wait_state(t, UMCG_STATE_PARKED, ST_PATIENCE_MS));
	EXPECT_EQ(1, blocked.ret);
	EXPECT_EQ(-EAGAIN, umcg_chan_try_send(c, &v));
	ASSERT_EQ(0, umcg_chan_try_recv(c, &v));
	EXPECT_EQ(0, v);
	ASSERT_EQ(0, umcg_join(t, NULL));
	EXPECT_EQ(0, blocked.ret);
	/* Its element went in behind the others; still full. */
	EXPECT_EQ(-EAGAIN, umcg_chan_try_send(c, &v));
	for (int i = 1; i <= 3; i++) {
		ASSERT_EQ(0, umcg_chan_try_recv(c, &v));
		EXPECT_EQ(i, v);
	}
	EXPECT_EQ(-EAGAIN, umcg_chan_try_recv(c, &v));
	EXPECT_EQ(0, umcg_chan_destroy(c));
}

TEST_F(chan, close_drains)
{
	umcg_chan_t *c;
	int v;

	ASSERT_EQ(0, umcg_chan_create(&c, 2, sizeof(int)));
	v = 1;
	ASSERT_EQ(0, umcg_chan_send(c, &v));
	v = 2;
	ASSERT_EQ(0, umcg_chan_send(c, &v));
	ASSERT_EQ(0, umcg_chan_close(c));
	EXPECT_EQ(-EPIPE, umcg_chan_close(c));
	EXPECT_EQ(-EPIPE, umcg_chan_send(c, &v));
	EXPECT_EQ(-EPIPE, umcg_chan_try_send(c, &v));
	ASSERT_EQ(0, umcg_chan_recv(c, &v));
	EXPECT_EQ(1, v);
	ASSERT_EQ(0, umcg_chan_try_recv(c, &v));
	EXPECT_EQ(2, v);
	EXPECT_EQ(-EPIPE, umcg_chan_recv(c, &v));
	EXPECT_EQ(-EPIPE, umcg_chan_try_recv(c, &v));
	EXPECT_EQ(0, umcg_chan_destroy(c));
}

/* Close releases blocked receivers and blocked senders with -EPIPE. */
TEST_F(chan, close_releases)
{
	struct one r[3], s[2];
	umcg_thread_t *rt[3], *st[2];
	umcg_chan_t *rc, *sc;

	ASSERT_EQ(0, umcg_chan_create(&rc, 1, sizeof(int)));
	ASSERT_EQ(0, umcg_chan_create(&sc, 0, sizeof(int)));
	for (int i = 0; i < 3; i++) {
		r[i] = (struct one){ .c = rc, .value = -1, .ret = 1 };
		ASSERT_EQ(0, st_spawn(&rt[i], recv_one_fn, &r[i]));
	}
	for (int i = 0; i < 2; i++) {
		s[i] = (struct one){ .c = sc, .value = i, .ret = 1 };
		ASSERT_EQ(0, st_spawn(&st[i], send_one_fn, &s[i]));
	}
	for (int i = 0; i < 3; i++)
		ASSERT_EQ(UMCG_STATE_PARKED, st_wait_state(rt[i], UMCG_STATE_PARKED,
							   ST_PATIENCE_MS));
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(UMCG_STATE_PARKED, st_wait_state(st[i], UMCG_STATE_PARKED,
							   ST_PATIENCE_MS));
	EXPECT_EQ(-EBUSY, umcg_chan_destroy(rc));
	EXPECT_EQ(-EBUSY, umcg_chan_destroy(sc));
	ASSERT_EQ(0, umcg_chan_close(rc));
	ASSERT_EQ(0, umcg_chan_close(sc));
	for (int i = 0; i < 3; i++) {
		ASSERT_EQ(0, umcg_join(rt[i], NULL));
		EXPECT_EQ(-EPIPE, r[i].ret);
		EXPECT_EQ(-1, r[i].value);
	}
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, umcg_join(st[i], NULL));
		EXPECT_EQ(-EPIPE, s[i].ret);
	}
	EXPECT_EQ(0, umcg_chan_destroy(rc));
	EXPECT_EQ(0, umcg_chan_destroy(sc));
}

TEST_F(chan, rendezvous)
{
	struct one o = { .value = 42, .ret = 1 };
	umcg_thread_t *t;
	umcg_chan_t *c;
	int v = 5;

	ASSERT_EQ(0, umcg_chan_create(&c, 0, sizeof(int)));
	o.c = c;
	/* Nobody on the other side. */
	EXPECT_EQ(-EAGAIN, umcg_chan_try_send(c, &v));
	EXPECT_EQ(-EAGAIN, umcg_chan_try_recv(c, &v));

	/* A sender waits for its receiver. */
	ASSERT_EQ(0, st_spawn(&t, send_one_fn, &o));
	ASSERT_EQ(UMCG_STATE_PARKED, st_wait_state(t, UMCG_STATE_PARKED, ST_PATIENCE_MS));
	EXPECT_EQ(1, o.ret);
	ASSERT_EQ(0, umcg_chan_try_recv(c, &v));
	EXPECT_EQ(42, v);
	ASSERT_EQ(0, umcg_join(t, NULL));
	EXPECT_EQ(0, o.ret);

	/* A receiver waits for its sender. */
	o = (struct one){ .c = c, .value = -1, .ret = 1 };
	ASSERT_EQ(0, st_spawn(&t, recv_one_fn, &o));
	ASSERT_EQ(UMCG_STATE_PARKED, st_wait_state(t, UMCG_STATE_PARKED, ST_PATIENCE_MS));
	v = 17;
	ASSERT_EQ(0, umcg_chan_try_send(c, &v));
	ASSERT_EQ(0, umcg_join(t, NULL));
	EXPECT_EQ(0, o.ret);
	EXPECT_EQ(17, o.value);
	EXPECT_EQ(0, umcg_chan_destroy(c));
}

#define NR_PINGS	2000

struct ping {
	umcg_chan_t *to, *from;
	int errors;
};

static void *ping_fn(void *arg)
{
	struct ping *p = arg;

	for (int i = 0; i < NR_PINGS; i++) {
		int v = 2 * i;

		if (umcg_chan_send(p->to, &v) || umcg_chan_recv(p->from, &v) || v != 2 * i + 1)
			p->errors++;
	}
	return NULL;
}

static void *pong_fn(void *arg)
{
	struct ping *p = arg;

	for (int i = 0; i < NR_PINGS; i++) {
		int v;

		if (umcg_chan_recv(p->from, &v) || v != 2 * i)
			p->errors++;
		v++;
		if (umcg_chan_send(p->to, &v))
			p->errors++;
	}
	return NULL;
}

/* Two workers play ping-pong over rendezvous channels on one core. */
TEST(ping_pong_one_core)
{
	struct ping a = { 0 }, b = { 0 };
	struct umcg_stats st;
	umcg_thread_t *ta, *tb;
	umcg_chan_t *ab, *ba;
	uint64_t start;

	ASSERT_EQ(0, st_init(1, 0));
	ASSERT_EQ(0, umcg_chan_create(&ab, 0, sizeof(int)));
	ASSERT_EQ(0, umcg_chan_create(&ba, 0, sizeof(int)));
	a = (struct ping){ .to = ab, .from = ba };
	b = (struct ping){ .to = ba, .from = ab };
	start = st_now_ns();
	ASSERT_EQ(0, st_spawn(&tb, pong_fn, &b));
	ASSERT_EQ(0, st_spawn(&ta, ping_fn, &a));
	ASSERT_EQ(0, umcg_join(ta, NULL));
	ASSERT_EQ(0, umcg_join(tb, NULL));
	EXPECT_EQ(0, a.errors);
	EXPECT_EQ(0, b.errors);
	/* Each round trip hands the core over at least twice. */
	ASSERT_EQ(0, umcg_stats(&st));
	EXPECT_LE(2 * NR_PINGS, st.switches);
	TH_LOG("%d round trips in %llu us, %llu switches, %llu parks", NR_PINGS,
	       (unsigned long long)(st_now_ns() - start) / 1000,
	       (unsigned long long)st.switches, (unsigned long long)st.parks);
	EXPECT_EQ(0, umcg_chan_destroy(ab));
	EXPECT_EQ(0, umcg_chan_destroy(ba));
	EXPECT_EQ(0, umcg_fini());
}

#define NR_MIXED	1000

struct mixed {
	umcg_chan_t *c;
	long sent, received;
	int count;
	int errors;
};

static void *mixed_send_fn(void *arg)
{
	struct mixed *m = arg;

	for (long i = 1; i <= NR_MIXED; i++) {
		if (umcg_chan_send(m->c, &i))
			__atomic_fetch_add(&m->errors, 1, __ATOMIC_RELAXED);
		else
			__atomic_fetch_add(&m->sent, i, __ATOMIC_RELAXED);
	}
	return NULL;
}

static void *mixed_recv_fn(void *arg)
{
	struct mixed *m = arg;
	long v;
	int ret;

	while (!(ret = umcg_chan_recv(m->c, &v))) {
		__atomic_fetch_add(&m->received, v, __ATOMIC_RELAXED);
		__atomic_fetch_add(&m->count, 1, __ATOMIC_RELAXED);
	}
	if (ret != -EPIPE)
		__atomic_fetch_add(&m->errors, 1, __ATOMIC_RELAXED);
	return NULL;
}

/* Workers and plain threads on both ends; close ends the receivers. */
TEST_F(chan, mixed_threads)
{
	struct mixed m = { 0 };
	umcg_thread_t *ws[2], *wr[2];
	pthread_t ps, pr;

	ASSERT_EQ(0, umcg_chan_create(&m.c, 1, sizeof(long)));
	for (int i = 0; i < 2; i++) {
		ASSERT_EQ(0, st_spawn(&wr[i], mixed_recv_fn, &m));
		ASSERT_EQ(0, st_spawn(&ws[i], mixed_send_fn, &m));
	}
	ASSERT_EQ(0, st_pthread(&pr, mixed_recv_fn, &m));
	ASSERT_EQ(0, st_pthread(&ps, mixed_send_fn, &m));
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, umcg_join(ws[i], NULL));
	ASSERT_EQ(0, pthread_join(ps, NULL));
	ASSERT_EQ(0, umcg_chan_close(m.c));
	for (int i = 0; i < 2; i++)
		ASSERT_EQ(0, umcg_join(wr[i], NULL));
	ASSERT_EQ(0, pthread_join(pr, NULL));
	EXPECT_EQ(0, st_get(&m.errors));
	EXPECT_EQ(3 * NR_MIXED, st_get(&m.count));
	EXPECT_EQ(3L * NR_MIXED * (NR_MIXED + 1) / 2, m.received);
	EXPECT_EQ(m.sent, m.received);
	EXPECT_EQ(0, umcg_chan_destroy(m.c));
}

TEST(errors)
{
	umcg_chan_t *c;
	int v = 0;

	EXPECT_EQ(-EINVAL, umcg_chan_create(NULL, 1, 1));
	EXPECT_EQ(-EINVAL, umcg_chan_create(&c, SIZE_MAX / 2, 4));
	EXPECT_EQ(-EINVAL, umcg_chan_send(NULL, &v));
	EXPECT_EQ(-EINVAL, umcg_chan_try_send(NULL, &v));
	EXPECT_EQ(-EINVAL, umcg_chan_recv(NULL, &v));
	EXPECT_EQ(-EINVAL, umcg_chan_try_recv(NULL, &v));
	EXPECT_EQ(-EINVAL, umcg_chan_close(NULL));
	EXPECT_EQ(-EINVAL, umcg_chan_destroy(NULL));

	ASSERT_EQ(0, umcg_chan_create(&c, 1, sizeof(int)));
	EXPECT_EQ(-EINVAL, umcg_chan_send(c, NULL));
	EXPECT_EQ(-EINVAL, umcg_chan_try_recv(c, NULL));
	EXPECT_EQ(0, umcg_chan_destroy(c));

	/* Elements of size 0: events, and NULL is a fine element. */
	ASSERT_EQ(0, umcg_chan_create(&c, 2, 0));
	EXPECT_EQ(0, umcg_chan_try_send(c, NULL));
	EXPECT_EQ(0, umcg_chan_try_send(c, NULL));
	EXPECT_EQ(-EAGAIN, umcg_chan_try_send(c, NULL));
	EXPECT_EQ(0, umcg_chan_try_recv(c, NULL));
	EXPECT_EQ(0, umcg_chan_destroy(c));
}

TEST_HARNESS_MAIN
