// SPDX-License-Identifier: GPL-2.0
/*
 * api_errors - every public call of umcg.h rejects bad arguments and bad
 * callers with the documented -errno, leaves no state behind, and never
 * crashes (C8's "bad input gets an error code" for the library), on the
 * user backend.
 *
 * Before umcg_init(): group calls say -ESRCH, worker-only calls -EPERM.
 * umcg_init(): short size -EINVAL, longer size with a non-zero tail -E2BIG
 * (zero tail accepted), unknown flags, more cores than CPUs, a first CPU
 * past the last, an incomplete policy and an unknown backend -EINVAL, a
 * known backend that is not available ("kmod", "scx") -ENODEV, a second
 * init -EBUSY; after each failure a good init works.  umcg_spawn(): no fn,
 * bad attr size/flags/pad/core/stack, a name over 15 characters, no handle
 * for a joinable thread.  Worker-only calls from the main thread -EPERM;
 * join on self -EDEADLK, on NULL or a detached thread -EINVAL; unpark of a
 * DONE thread -ESRCH; out-of-range timeouts -EINVAL; attach/detach misuse;
 * dump and dump_on_signal arguments; umcg_blocking_enter() and _leave():
 * -EPERM from a plain thread, unknown flags and a leave without its enter
 * -EINVAL, nested pairs accepted.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "kselftest_harness.h"
#include "contract.h"

static void *a_return(void *arg)
{
	return arg;
}

/* --- before umcg_init() ------------------------------------------------ */

FIXTURE(no_group)
{
	bool inited;
};

FIXTURE_SETUP(no_group)
{
	/* No umcg_init(): these tests are about calls without a group. */
}

FIXTURE_TEARDOWN(no_group)
{
	if (self->inited)
		EXPECT_EQ(0, umcg_fini());
}

TEST_F(no_group, calls_before_init)
{
	struct umcg_stats st;
	umcg_thread_t *t = (umcg_thread_t *)&st;	/* never dereferenced */

	EXPECT_EQ(NULL, umcg_backend_name());
	EXPECT_EQ(-ESRCH, umcg_nr_cores());
	EXPECT_EQ(-ESRCH, umcg_stats(&st));
	EXPECT_EQ(-EINVAL, umcg_stats(NULL));
	EXPECT_EQ(-ESRCH, umcg_dump(stderr));
	EXPECT_EQ(-EINVAL, umcg_dump(NULL));
	EXPECT_EQ(-ESRCH, umcg_dump_on_signal(SIGUSR2));
	EXPECT_EQ(-ESRCH, umcg_fini());
	EXPECT_EQ(-ESRCH, umcg_spawn(&t, NULL, a_return, NULL));
	EXPECT_EQ(-EINVAL, umcg_spawn(&t, NULL, NULL, NULL));
	EXPECT_EQ(-ESRCH, umcg_attach(&t));
	EXPECT_EQ(-EPERM, umcg_detach());
	EXPECT_EQ(NULL, umcg_self());
	/* Worker-only calls from a thread that is not a worker. */
	EXPECT_EQ(-EPERM, umcg_yield());
	EXPECT_EQ(-EPERM, umcg_park());
	EXPECT_EQ(-EPERM, umcg_park_timeout(1000));
	EXPECT_EQ(-EPERM, umcg_sleep_ns(1000));
	EXPECT_EQ(-EPERM, umcg_blocking_enter(0));
	EXPECT_EQ(-EPERM, umcg_blocking_leave());
	EXPECT_EQ(-EINVAL, umcg_switch_to(NULL));
	/* NULL handles. */
	EXPECT_EQ(-EINVAL, umcg_unpark(NULL));
	EXPECT_EQ(-EINVAL, umcg_join(NULL, NULL));
	EXPECT_EQ(-EINVAL, umcg_thread_state(NULL));
	EXPECT_EQ(-EINVAL, umcg_thread_tid(NULL));
	EXPECT_EQ(-EINVAL, umcg_thread_core(NULL));
	EXPECT_EQ(NULL, umcg_thread_policy_data(NULL));
}

/* A bad config: refused with @err, and no group is left behind. */
#define EXPECT_INIT_FAILS(err, cfgp) do {				\
	EXPECT_EQ(err, umcg_init(cfgp));				\
	EXPECT_EQ(NULL, umcg_backend_name());				\
	EXPECT_EQ(-ESRCH, umcg_nr_cores());				\
} while (0)

TEST_F(no_group, bad_configs)
{
	struct umcg_config good = ct_config(1, NULL), c;
	struct umcg_policy_ops no_pick = *umcg_policy_find("fifo");
	struct {
		struct umcg_config cfg;
		uint64_t tail[2];
	} big;
	int ncpus = ct_nr_cpus();

	c = good;
	c.size = 0;
	EXPECT_INIT_FAILS(-EINVAL, &c);
	c.size = sizeof(c) - 1;
	EXPECT_INIT_FAILS(-EINVAL, &c);
	c.size = 8;
	EXPECT_INIT_FAILS(-EINVAL, &c);

	memset(&big, 0, sizeof(big));
	big.cfg = good;
	big.cfg.size = sizeof(big);
	big.tail[1] = 1;
	EXPECT_INIT_FAILS(-E2BIG, &big.cfg);

	c = good;
	c.flags = 1U << 31;
	EXPECT_INIT_FAILS(-EINVAL, &c);
	c.flags = UMCG_CONFIG_ATTACH_CALLER << 1;
	EXPECT_INIT_FAILS(-EINVAL, &c);

	c = good;
	c.nr_cores = ncpus + 1;
	EXPECT_INIT_FAILS(-EINVAL, &c);
	c.nr_cores = 1U << 20;
	EXPECT_INIT_FAILS(-EINVAL, &c);
	c.nr_cores = UINT32_MAX;
	EXPECT_INIT_FAILS(-EINVAL, &c);
	c = good;
	c.first_cpu = CPU_SETSIZE;
	EXPECT_INIT_FAILS(-EINVAL, &c);
	c.first_cpu = UINT32_MAX;
	EXPECT_INIT_FAILS(-EINVAL, &c);
	c.first_cpu = CPU_SETSIZE - 1;	/* no CPU of ours that high */
	EXPECT_INIT_FAILS(-EINVAL, &c);

	c = good;
	no_pick.pick = NULL;
	c.policy = &no_pick;
	EXPECT_INIT_FAILS(-EINVAL, &c);

	c = good;
	c.backend = "bogus";
	EXPECT_INIT_FAILS(-EINVAL, &c);
	c.backend = "USER";
	EXPECT_INIT_FAILS(-EINVAL, &c);

	/* A zero tail is fine: the struct may grow. */
	memset(&big, 0, sizeof(big));
	big.cfg = good;
	big.cfg.size = sizeof(big);
	ASSERT_EQ(0, umcg_init(&big.cfg));
	self->inited = true;
	EXPECT_STREQ("user", umcg_backend_name());
	EXPECT_EQ(-EBUSY, umcg_init(&good));
	EXPECT_EQ(-EBUSY, umcg_init(NULL));
	EXPECT_EQ(1, umcg_nr_cores());
}

TEST_F(no_group, unavailable_backends)
{
	struct umcg_config c = ct_config(1, NULL);

	if (!access("/dev/umcg", F_OK))
		SKIP(return, "/dev/umcg exists: the kmod backend may be available");
	c.backend = "kmod";
	EXPECT_INIT_FAILS(-ENODEV, &c);
	if (!access("/sys/kernel/sched_ext/root/ops", F_OK))
		SKIP(return, "sched_ext is present: the scx backend may be available");
	c.backend = "scx";
	EXPECT_INIT_FAILS(-ENODEV, &c);

	c.backend = "user";
	ASSERT_EQ(0, umcg_init(&c));
	self->inited = true;
	EXPECT_STREQ("user", umcg_backend_name());
}

/* cfg NULL: every CPU, the default policy, the best backend (here: user). */
TEST_F(no_group, null_config)
{
	unsetenv("UMCG_BACKEND");
	ASSERT_EQ(0, umcg_init(NULL));
	self->inited = true;
	EXPECT_EQ(ct_nr_cpus(), umcg_nr_cores());
	EXPECT_STREQ("user", umcg_backend_name());
}

/* backend NULL: $UMCG_BACKEND decides. */
TEST_F(no_group, backend_from_environment)
{
	struct umcg_config c = ct_config(1, NULL);

	c.backend = NULL;
	ASSERT_EQ(0, setenv("UMCG_BACKEND", "bogus", 1));
	EXPECT_INIT_FAILS(-EINVAL, &c);
	ASSERT_EQ(0, setenv("UMCG_BACKEND", "user", 1));
	ASSERT_EQ(0, umcg_init(&c));
	self->inited = true;
	EXPECT_STREQ("user", umcg_backend_name());
	unsetenv("UMCG_BACKEND");
}

/* --- with a group ---------------------------------------------------------- */

FIXTURE(group)
{
	bool inited;
};

FIXTURE_SETUP(group)
{
	struct umcg_config cfg = ct_config(1, NULL);

	ASSERT_EQ(0, umcg_init(&cfg));
	self->inited = true;
}

FIXTURE_TEARDOWN(group)
{
	if (self->inited)
		EXPECT_EQ(0, umcg_fini());
}

/* A refused spawn: @err, and nothing was created. */
#define EXPECT_SPAWN_FAILS(err, tp, attr, fn) do {			\
	struct umcg_stats __s0, __s1;					\
	ASSERT_EQ(0, umcg_stats(&__s0));				\
	EXPECT_EQ(err, umcg_spawn(tp, attr, fn, NULL));			\
	ASSERT_EQ(0, umcg_stats(&__s1));				\
	EXPECT_EQ(__s0.spawned, __s1.spawned);				\
	EXPECT_EQ(__s0.live, __s1.live);				\
} while (0)

TEST_F(group, bad_spawns)
{
	struct umcg_attr good = ct_attr(-1), a;
	struct {
		struct umcg_attr attr;
		uint64_t tail[2];
	} big;
	umcg_thread_t *t = NULL;
	void *v = NULL;

	EXPECT_SPAWN_FAILS(-EINVAL, &t, NULL, NULL);
	EXPECT_SPAWN_FAILS(-EINVAL, &t, &good, NULL);
	EXPECT_SPAWN_FAILS(-EINVAL, NULL, NULL, a_return);
	EXPECT_SPAWN_FAILS(-EINVAL, NULL, &good, a_return);

	a = good;
	a.size = 0;
	EXPECT_SPAWN_FAILS(-EINVAL, &t, &a, a_return);
	a.size = sizeof(a) - 1;
	EXPECT_SPAWN_FAILS(-EINVAL, &t, &a, a_return);
	memset(&big, 0, sizeof(big));
	big.attr = good;
	big.attr.size = sizeof(big);
	big.tail[0] = 0xff;
	EXPECT_SPAWN_FAILS(-E2BIG, &t, &big.attr, a_return);

	a = good;
	a.flags = 1U << 31;
	EXPECT_SPAWN_FAILS(-EINVAL, &t, &a, a_return);
	a.flags = UMCG_ATTR_DETACHED << 1;
	EXPECT_SPAWN_FAILS(-EINVAL, &t, &a, a_return);
	a = good;
	a.pad = 1;
	EXPECT_SPAWN_FAILS(-EINVAL, &t, &a, a_return);

	a = good;
	a.core = 1;			/* one core: only 0 */
	EXPECT_SPAWN_FAILS(-EINVAL, &t, &a, a_return);
	a.core = -2;
	EXPECT_SPAWN_FAILS(-EINVAL, &t, &a, a_return);
	a.core = INT32_MAX;
	EXPECT_SPAWN_FAILS(-EINVAL, &t, &a, a_return);
	a.core = INT32_MIN;
	EXPECT_SPAWN_FAILS(-EINVAL, &t, &a, a_return);

	a = good;
	a.name = "sixteen-chars-xx";
	EXPECT_SPAWN_FAILS(-EINVAL, &t, &a, a_return);

	a = good;
	a.stack_size = 1;		/* below PTHREAD_STACK_MIN */
	EXPECT_SPAWN_FAILS(-EINVAL, &t, &a, a_return);

	/* The limits themselves are fine. */
	a = good;
	a.name = "fifteen-chars-x";
	a.core = 0;
	ASSERT_EQ(0, umcg_spawn(&t, &a, a_return, (void *)0x42));
	ASSERT_EQ(0, ct_join(t, &v, 2000));
	EXPECT_EQ((void *)0x42, v);
	memset(&big, 0, sizeof(big));
	big.attr = good;
	big.attr.size = sizeof(big);
	ASSERT_EQ(0, umcg_spawn(&t, &big.attr, a_return, NULL));
	ASSERT_EQ(0, ct_join(t, NULL, 2000));
}

static void *a_read_comm(void *arg)
{
	char *buf = arg, path[64];
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/comm", gettid());
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	n = read(fd, buf, 31);
	close(fd);
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return NULL;
}

TEST_F(group, name_is_the_thread_name)
{
	struct umcg_attr a = ct_attr(-1);
	char comm[32] = "";
	umcg_thread_t *t;

	a.name = "fifteen-chars-x";
	ASSERT_EQ(0, umcg_spawn(&t, &a, a_read_comm, comm));
	ASSERT_EQ(0, ct_join(t, NULL, 2000));
	EXPECT_STREQ("fifteen-chars-x", comm);
}

TEST_F(group, worker_only_calls_from_main)
{
	umcg_thread_t *t;

	ASSERT_EQ(0, umcg_spawn(&t, NULL, a_return, NULL));
	EXPECT_EQ(-EPERM, umcg_yield());
	EXPECT_EQ(-EPERM, umcg_park());
	EXPECT_EQ(-EPERM, umcg_park_timeout(1000));
	EXPECT_EQ(-EPERM, umcg_sleep_ns(1000));
	EXPECT_EQ(-EPERM, umcg_switch_to(t));
	EXPECT_EQ(-EPERM, umcg_blocking_enter(UMCG_BLOCKING_NOW));
	EXPECT_EQ(-EPERM, umcg_blocking_leave());
	EXPECT_EQ(-EINVAL, umcg_park_timeout(UINT64_MAX));
	EXPECT_EQ(-EINVAL, umcg_sleep_ns(UINT64_MAX));
	EXPECT_EQ(-EPERM, umcg_detach());
	EXPECT_EQ(NULL, umcg_self());
	ASSERT_EQ(0, ct_join(t, NULL, 2000));
}

struct a_results {
	umcg_thread_t *done;
	int join_self, join_null, unpark_null, unpark_done;
	int park_timeout_max, sleep_max, attach, detach, fini;
	int switch_null;
	int leave_alone, enter_bad, enter, enter_nested, leave_nested, leave, leave_extra;
	int state_after;
};

static void *a_worker_misuse(void *arg)
{
	struct a_results *r = arg;
	umcg_thread_t *t;

	r->join_self = umcg_join(umcg_self(), NULL);
	r->join_null = umcg_join(NULL, NULL);
	r->unpark_null = umcg_unpark(NULL);
	r->unpark_done = umcg_unpark(r->done);
	r->park_timeout_max = umcg_park_timeout(UINT64_MAX);
	r->sleep_max = umcg_sleep_ns(UINT64_MAX);
	r->attach = umcg_attach(&t);
	r->detach = umcg_detach();
	r->fini = umcg_fini();
	r->switch_null = umcg_switch_to(NULL);
	r->leave_alone = umcg_blocking_leave();
	r->enter_bad = umcg_blocking_enter(1U << 7);
	r->enter = umcg_blocking_enter(0);
	r->enter_nested = umcg_blocking_enter(UMCG_BLOCKING_NOW);
	r->leave_nested = umcg_blocking_leave();
	r->leave = umcg_blocking_leave();
	r->leave_extra = umcg_blocking_leave();
	r->state_after = umcg_thread_state(umcg_self());
	return NULL;
}

TEST_F(group, worker_misuse)
{
	struct a_results r = { 0 };
	umcg_thread_t *w;

	ASSERT_EQ(0, umcg_spawn(&r.done, NULL, a_return, NULL));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(r.done) == UMCG_STATE_DONE, 2000));
	ASSERT_EQ(0, umcg_spawn(&w, NULL, a_worker_misuse, &r));
	ASSERT_EQ(0, ct_join(w, NULL, 5000));
	EXPECT_EQ(-EDEADLK, r.join_self);
	EXPECT_EQ(-EINVAL, r.join_null);
	EXPECT_EQ(-EINVAL, r.unpark_null);
	EXPECT_EQ(-ESRCH, r.unpark_done);
	EXPECT_EQ(-EINVAL, r.park_timeout_max);
	EXPECT_EQ(-EINVAL, r.sleep_max);
	EXPECT_EQ(-EBUSY, r.attach);
	EXPECT_EQ(-EINVAL, r.detach);
	EXPECT_EQ(-EDEADLK, r.fini);
	EXPECT_EQ(-EINVAL, r.switch_null);
	EXPECT_EQ(-EINVAL, r.leave_alone);
	EXPECT_EQ(-EINVAL, r.enter_bad);
	EXPECT_EQ(0, r.enter);
	EXPECT_EQ(0, r.enter_nested);
	EXPECT_EQ(0, r.leave_nested);
	EXPECT_EQ(0, r.leave);
	EXPECT_EQ(-EINVAL, r.leave_extra);
	EXPECT_EQ(UMCG_STATE_RUNNING, r.state_after);
	/* From main too. */
	EXPECT_EQ(-ESRCH, umcg_unpark(r.done));
	EXPECT_EQ(0, umcg_join(r.done, NULL));
}

static void *a_park_until(void *arg)
{
	_Atomic int *flag = arg;

	while (!atomic_load(flag))
		umcg_park();
	return NULL;
}

TEST_F(group, join_detached)
{
	struct umcg_attr a = ct_attr(-1);
	_Atomic int flag = 0;
	umcg_thread_t *t;
	struct umcg_stats st;

	a.flags = UMCG_ATTR_DETACHED;
	ASSERT_EQ(0, umcg_spawn(&t, &a, a_park_until, &flag));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(t) == UMCG_STATE_PARKED, 2000));
	EXPECT_EQ(-EINVAL, umcg_join(t, NULL));
	atomic_store(&flag, 1);
	ASSERT_EQ(0, umcg_unpark(t));
	ASSERT_TRUE(CT_WAIT(umcg_stats(&st) == 0 && st.live == 0, 2000));
	EXPECT_EQ(0, umcg_thread_put(t));
}

struct a_join2 {
	_Atomic int flag;
	umcg_thread_t *target;
	_Atomic int first_waiting;
	int second;
	int first;
	void *first_value;
};

static void *a_first_joiner(void *arg)
{
	struct a_join2 *j = arg;

	atomic_store(&j->first_waiting, 1);
	j->first = umcg_join(j->target, &j->first_value);
	return NULL;
}

static void *a_second_joiner(void *arg)
{
	struct a_join2 *j = arg;

	j->second = umcg_join(j->target, NULL);
	return NULL;
}

static void *a_target(void *arg)
{
	struct a_join2 *j = arg;

	while (!atomic_load(&j->flag))
		umcg_park();
	return (void *)0x99;
}

/* A thread already being joined by a worker: another worker gets -EINVAL. */
TEST_F(group, second_joiner)
{
	struct a_join2 j = { 0 };
	umcg_thread_t *j1, *j2;

	ASSERT_EQ(0, umcg_spawn(&j.target, NULL, a_target, &j));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(j.target) == UMCG_STATE_PARKED, 2000));
	ASSERT_EQ(0, umcg_spawn(&j1, NULL, a_first_joiner, &j));
	ASSERT_TRUE(CT_WAIT(umcg_thread_state(j1) == UMCG_STATE_PARKED, 2000));
	ASSERT_EQ(0, umcg_spawn(&j2, NULL, a_second_joiner, &j));
	ASSERT_EQ(0, ct_join(j2, NULL, 2000));
	EXPECT_EQ(-EINVAL, j.second);
	atomic_store(&j.flag, 1);
	ASSERT_EQ(0, umcg_unpark(j.target));
	ASSERT_EQ(0, ct_join(j1, NULL, 2000));
	EXPECT_EQ(0, j.first);
	EXPECT_EQ((void *)0x99, j.first_value);
}

TEST_F(group, dump_arguments)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	EXPECT_EQ(-EINVAL, umcg_dump(NULL));
	EXPECT_EQ(-EINVAL, umcg_dump_on_signal(-1));
	EXPECT_EQ(-EINVAL, umcg_dump_on_signal(NSIG));
	EXPECT_EQ(-EINVAL, umcg_dump_on_signal(SIGKILL));
	EXPECT_EQ(-EINVAL, umcg_dump_on_signal(SIGSTOP));
	/* The user backend's preemption signal is not for dumps. */
	EXPECT_EQ(-EINVAL, umcg_dump_on_signal(SIGURG));
	EXPECT_EQ(0, umcg_dump_on_signal(SIGUSR2));
	EXPECT_EQ(0, umcg_dump_on_signal(0));

	f = open_memstream(&buf, &len);
	ASSERT_NE(NULL, f);
	EXPECT_EQ(0, umcg_dump(f));
	fclose(f);
	ASSERT_NE(NULL, buf);
	EXPECT_NE(NULL, strstr(buf, "user")) TH_LOG("%s", buf);
	free(buf);
}

TEST_HARNESS_MAIN
