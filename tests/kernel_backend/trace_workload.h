/* SPDX-License-Identifier: GPL-2.0 */
/*
 * trace_workload.h - the workload of the tracing tests (tests/kmod/
 * kmod_trace.c: umcg.ko's tracepoints; probes.c: libumcg's static probes):
 * a small libumcg program (one core, "fifo", a 10 ms time slice) whose
 * threads, with tids it reports, each make known events happen:
 *
 *   B  blocks in read() on a pipe that the main thread then writes,
 *      then yields
 *   Q  parks; P switches to Q, Q unparks P
 *   S  spins 300 ms without a libumcg call, past its slice, while R
 *      waits for the core
 *
 * and every worker starts and exits.  tr_workload_main() is the body of
 * "PROGRAM --workload FILE", run under perf record; tr_run() runs a tool.
 * Include after kernel_backend.h.
 */
#ifndef TRACE_WORKLOAD_H
#define TRACE_WORKLOAD_H

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <umcg.h>
#include <umcg/policy.h>

#define SPIN_NS		(300 * KB_MS)
#define SLICE_NS	(10 * KB_MS)
#define WAIT_NS		(20000 * KB_MS)	/* emulated guests are slow */

/* The workload's threads. */
struct tr_tids {
	pid_t group, b, p, q, s;
};

struct tr_run {
	int pipefd[2];
	umcg_thread_t *p, *q;
	_Atomic pid_t b, pt, qt, s;
	_Atomic int err;
};

static void *tr_b(void *arg)
{
	struct tr_run *r = arg;
	char c;

	atomic_store(&r->b, gettid());
	if (read(r->pipefd[0], &c, 1) != 1)
		atomic_store(&r->err, -EIO);
	/*
	 * Back in libumcg: where a backend that sees no wake-ups (user)
	 * queues B for a core again.
	 */
	umcg_yield();
	return NULL;
}

static void *tr_q(void *arg)
{
	struct tr_run *r = arg;

	atomic_store(&r->qt, gettid());
	umcg_park();		/* until P switches to us */
	umcg_unpark(r->p);	/* P waits in its switch */
	return NULL;
}

static void *tr_p(void *arg)
{
	struct tr_run *r = arg;
	uint64_t end = kb_now_ns() + WAIT_NS;
	int ret;

	atomic_store(&r->pt, gettid());
	while (umcg_thread_state(r->q) != UMCG_STATE_PARKED && kb_now_ns() < end)
		umcg_yield();
	ret = umcg_switch_to(r->q);
	if (ret)
		atomic_store(&r->err, ret);
	return NULL;
}

/* R: waits behind S, then is done. */
static void *tr_r(void *arg)
{
	return arg;
}

static void *tr_s(void *arg)
{
	struct tr_run *r = arg;

	atomic_store(&r->s, gettid());
	kb_spin_ns(SPIN_NS);
	return NULL;
}

static bool tr_await(umcg_thread_t *t, int state)
{
	uint64_t end = kb_now_ns() + WAIT_NS;

	while (umcg_thread_state(t) != state && kb_now_ns() < end)
		usleep(1000);
	return umcg_thread_state(t) == state;
}

/* Wait until the group has recorded a block more than @before. */
static bool tr_await_block(uint64_t before)
{
	uint64_t end = kb_now_ns() + WAIT_NS;
	struct umcg_stats st;

	while (!umcg_stats(&st) && st.blocks <= before && kb_now_ns() < end)
		usleep(1000);
	return !umcg_stats(&st) && st.blocks > before;
}

/*
 * The program, on libumcg's @backend: 0 and the tids in @out, or -errno
 * (@why says where).
 * Leaves no group behind.
 */
static int tr_workload(struct tr_tids *out, const char **why, const char *backend)
{
	struct umcg_config cfg = { .size = sizeof(cfg) };
	struct tr_run r = { .pipefd = { -1, -1 } };
	umcg_thread_t *b, *s, *rr;
	struct umcg_stats st;
	int ret;

	*why = "pipe";
	if (pipe(r.pipefd))
		return -errno;
	cfg.nr_cores = 1;
	cfg.backend = backend;
	cfg.policy = umcg_policy_find("fifo");
	cfg.time_slice_ns = SLICE_NS;
	*why = "umcg_init";
	ret = umcg_init(&cfg);
	if (ret)
		goto out_pipe;

	/*
	 * B: block, wake, hold, pick.  The pipe is written once the library
	 * has recorded the block (its probe fires then: Documentation/
	 * tracing.md), so that B's wake comes after it in every trace.
	 */
	*why = "B";
	ret = umcg_stats(&st);
	if (ret)
		goto out_fini;
	ret = umcg_spawn(&b, NULL, tr_b, &r);
	if (ret)
		goto out_fini;
	if (!tr_await(b, UMCG_STATE_BLOCKED) || !tr_await_block(st.blocks)) {
		*why = "B's block";
		ret = -ETIMEDOUT;
		goto out_fini;
	}
	if (write(r.pipefd[1], "x", 1) != 1) {
		ret = -EIO;
		goto out_fini;
	}
	ret = umcg_join(b, NULL);
	if (ret)
		goto out_fini;

	/* P switches to Q. */
	*why = "P, Q";
	ret = umcg_spawn(&r.q, NULL, tr_q, &r);
	if (ret)
		goto out_fini;
	ret = umcg_spawn(&r.p, NULL, tr_p, &r);
	if (ret)
		goto out_fini;
	ret = umcg_join(r.p, NULL);
	if (!ret)
		ret = umcg_join(r.q, NULL);
	if (ret)
		goto out_fini;

	/*
	 * S runs past its slice while R waits for the core (with nothing
	 * else runnable, a backend that preempts only to run another worker,
	 * the user one, would let S run on).
	 */
	*why = "S";
	ret = umcg_spawn(&s, NULL, tr_s, &r);
	/* R only once S has the core: else R may run (and end) first. */
	if (!ret && !tr_await(s, UMCG_STATE_RUNNING))
		ret = -ETIMEDOUT;
	if (!ret)
		ret = umcg_spawn(&rr, NULL, tr_r, &r);
	if (!ret)
		ret = umcg_join(s, NULL);
	if (!ret)
		ret = umcg_join(rr, NULL);
	if (ret)
		goto out_fini;

	*why = "a worker";
	ret = atomic_load(&r.err);
	out->group = getpid();
	out->b = atomic_load(&r.b);
	out->p = atomic_load(&r.pt);
	out->q = atomic_load(&r.qt);
	out->s = atomic_load(&r.s);
out_fini:
	if (umcg_fini() && !ret) {
		*why = "umcg_fini";
		ret = -EIO;
	}
out_pipe:
	close(r.pipefd[0]);
	close(r.pipefd[1]);
	return ret;
}

/* Run @argv, its stdout to @out (NULL: /dev/null); its exit status or -1. */
static int tr_run(char *const argv[], const char *out)
{
	pid_t pid = fork();
	int status;

	if (pid < 0)
		return -1;
	if (!pid) {
		int fd = open(out ? out : "/dev/null",
			      O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			if (!out)
				dup2(fd, STDERR_FILENO);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* perf record's child: the workload, its tids to @path. */
static int tr_workload_main(const char *path, const char *backend)
{
	struct tr_tids t = { 0 };
	const char *why;
	int ret = tr_workload(&t, &why, backend);
	FILE *f;

	if (ret) {
		fprintf(stderr, "%s --workload: %s: %s\n", program_invocation_short_name,
			why, strerror(-ret));
		return 1;
	}
	f = fopen(path, "we");
	if (!f)
		return 1;
	fprintf(f, "%d %d %d %d %d\n", t.group, t.b, t.p, t.q, t.s);
	return fclose(f) ? 1 : 0;
}

#endif /* TRACE_WORKLOAD_H */
