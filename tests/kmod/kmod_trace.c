// SPDX-License-Identifier: GPL-2.0
/*
 * Description: umcg.ko's tracepoints (kmod/umcg_trace.h,
 * Documentation/tracing.md).  A small libumcg program on the kmod
 * backend (one core, "fifo", a 10 ms time slice) makes each event happen
 * to threads whose tids it knows:
 *
 *   B  blocks in read() on a pipe that the main thread then writes: a
 *      block, a wake and a hold (reason wake) of B, a pick of B
 *   Q  parks; P switches to Q (a switch from P to Q), Q unparks P
 *   S  spins 300 ms without a libumcg call: the server's slice check
 *      preempts it (a preempt of S, a hold of S, reason preempt)
 *
 * and every worker registers and unregisters (register, exit).
 *
 *   events_listed   /sys/kernel/tracing/events/umcg/ has the eight events,
 *                   each format with the common fields
 *   tracefs         the program runs with the umcg events enabled in a
 *                   trace instance of its own; its trace must have each
 *                   event above with the right tids, this process as the
 *                   group, a cpu below the CPU count that matches the CPU
 *                   the record was written on, and the state words the
 *                   moves leave (block: BLOCKED, wake and hold: RUNNABLE)
 *   perf            the same program run by perf record -e 'umcg:*' (this
 *                   binary, --workload), read back with perf script;
 *                   SKIP without a working perf
 *
 * A missing event fails the test and names it.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <umcg.h>
#include <umcg/policy.h>

#include "kernel_backend.h"
#include "trace_workload.h"

#define TRACEFS		"/sys/kernel/tracing"
#define PERF		"/usr/bin/perf"

static const char *const tr_events[] = {
	"umcg_register", "umcg_block", "umcg_wake", "umcg_hold",
	"umcg_pick", "umcg_switch", "umcg_preempt", "umcg_exit",
};
#define NR_EVENTS	(sizeof(tr_events) / sizeof(tr_events[0]))

/* One record, from a tracefs trace line or a perf script line. */
struct tr_ev {
	char name[32];
	int rec_cpu;		/* the CPU the record was written on */
	long tid, cpu, group, state, next;
	char reason[16], kind[16];
	bool has_next;
};

#define TR_MAX_EVS	20000

struct tr_log {
	struct tr_ev *evs;
	int n;
	int lines;		/* lines read */
	char first[8][256];	/* for the log of a failure */
};

/*
 * Parse "... [CPU] ...: [umcg:]umcg_NAME: key=val key=val ..." into @ev.
 * false if the line is no umcg record.
 */
static bool tr_parse(const char *line, struct tr_ev *ev)
{
	const char *p = strstr(line, ": umcg_"), *b, *e;
	char buf[512], *tok, *save;
	size_t n;

	if (p) {
		p += 2;		/* tracefs: "...: umcg_block: ..." */
	} else {
		p = strstr(line, "umcg:umcg_");
		if (p)
			p += 5;	/* perf script: "umcg:umcg_block: ..." */
	}
	memset(ev, 0, sizeof(*ev));
	ev->tid = ev->cpu = ev->group = ev->state = ev->next = -1;
	/* The record's CPU: the first "[NNN]" before the event. */
	b = strchr(line, '[');
	if (!p || !b || b > p || sscanf(b, "[%d]", &ev->rec_cpu) != 1)
		return false;
	e = strchr(p, ':');
	if (!e || (n = (size_t)(e - p)) >= sizeof(ev->name))
		return false;
	memcpy(ev->name, p, n);
	snprintf(buf, sizeof(buf), "%s", e + 1);
	for (tok = strtok_r(buf, " \n", &save); tok;
	     tok = strtok_r(NULL, " \n", &save)) {
		char *v = strchr(tok, '=');

		if (!v)
			continue;
		*v++ = '\0';
		if (!strcmp(tok, "tid"))
			ev->tid = strtol(v, NULL, 0);
		else if (!strcmp(tok, "cpu"))
			ev->cpu = strtol(v, NULL, 0);
		else if (!strcmp(tok, "group"))
			ev->group = strtol(v, NULL, 0);
		else if (!strcmp(tok, "state"))
			ev->state = strtol(v, NULL, 0);
		else if (!strcmp(tok, "next")) {
			ev->next = strtol(v, NULL, 0);
			ev->has_next = true;
		} else if (!strcmp(tok, "reason"))
			snprintf(ev->reason, sizeof(ev->reason), "%s", v);
		else if (!strcmp(tok, "kind"))
			snprintf(ev->kind, sizeof(ev->kind), "%s", v);
	}
	return true;
}

static void tr_log_read(struct tr_log *log, FILE *f)
{
	char line[1024];

	log->evs = calloc(TR_MAX_EVS, sizeof(*log->evs));
	while (log->evs && fgets(line, sizeof(line), f)) {
		if (line[0] == '#')
			continue;
		if (log->lines < 8)
			snprintf(log->first[log->lines], sizeof(log->first[0]),
				 "%.200s", line);
		log->lines++;
		if (log->n < TR_MAX_EVS && tr_parse(line, &log->evs[log->n]))
			log->n++;
	}
}

/* Does @log have an event @name matching the rest (-1, NULL: any)? */
static const struct tr_ev *tr_find(const struct tr_log *log, const char *name,
				   long tid, long next, const char *reason)
{
	for (int i = 0; i < log->n; i++) {
		const struct tr_ev *ev = &log->evs[i];

		if (strcmp(ev->name, name))
			continue;
		if (tid >= 0 && ev->tid != tid)
			continue;
		if (next >= 0 && ev->next != next)
			continue;
		if (reason && strcmp(ev->reason, reason))
			continue;
		return ev;
	}
	return NULL;
}

/* Is @ev's record of one of @t's threads: this group, a plausible cpu? */
static bool tr_plausible(const struct tr_ev *ev, const struct tr_tids *t,
			 long ncpus)
{
	return ev->group == t->group && ev->cpu >= 0 && ev->cpu < ncpus &&
	       ev->cpu == ev->rec_cpu;
}

/*
 * Check @log against the workload's @t.  Each expectation that fails
 * names the missing event.
 */
static void tr_check(struct __test_metadata *_metadata,
		     const struct tr_log *log, const struct tr_tids *t)
{
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	const pid_t workers[] = { t->b, t->p, t->q, t->s };
	const char *const wname[] = { "B", "P", "Q", "S" };
	const struct tr_ev *ev;
	int ours = 0, bad = 0;

	TH_LOG("group %d: B %d, P %d, Q %d, S %d; %d umcg records of %d lines",
	       t->group, t->b, t->p, t->q, t->s, log->n, log->lines);
	for (int i = 0; i < log->n; i++) {
		ev = &log->evs[i];
		if (ev->group != t->group)
			continue;
		ours++;
		if (!tr_plausible(ev, t, ncpus) && bad++ < 5)
			TH_LOG("implausible: %s tid %ld cpu %ld (record on %d, %ld CPUs)",
			       ev->name, ev->tid, ev->cpu, ev->rec_cpu, ncpus);
	}
	EXPECT_LT(0, ours) {
		for (int i = 0; i < log->lines && i < 8; i++)
			TH_LOG("line: %s", log->first[i]);
	}
	EXPECT_EQ(0, bad);

	for (int i = 0; i < 4; i++) {
		ev = tr_find(log, "umcg_register", workers[i], -1, NULL);
		EXPECT_TRUE(ev && !strcmp(ev->kind, "worker") &&
			    (ev->state & 0xff) == UMCG_TASK_NEW)
			TH_LOG("missing: umcg_register of %s (tid %d) as a NEW worker",
			       wname[i], workers[i]);
		ev = tr_find(log, "umcg_exit", workers[i], -1, "unregister");
		EXPECT_TRUE(ev != NULL)
			TH_LOG("missing: umcg_exit reason=unregister of %s (tid %d)",
			       wname[i], workers[i]);
	}
	ev = tr_find(log, "umcg_block", t->b, -1, NULL);
	EXPECT_TRUE(ev && (ev->state & 0xff) == UMCG_TASK_BLOCKED && ev->has_next)
		TH_LOG("missing: umcg_block of B (tid %d) reading BLOCKED", t->b);
	ev = tr_find(log, "umcg_wake", t->b, -1, NULL);
	EXPECT_TRUE(ev && (ev->state & 0xff) == UMCG_TASK_RUNNABLE)
		TH_LOG("missing: umcg_wake of B (tid %d) reading RUNNABLE", t->b);
	ev = tr_find(log, "umcg_hold", t->b, -1, "wake");
	EXPECT_TRUE(ev && (ev->state & 0xff) == UMCG_TASK_RUNNABLE)
		TH_LOG("missing: umcg_hold reason=wake of B (tid %d)", t->b);
	EXPECT_TRUE(tr_find(log, "umcg_pick", -1, t->b, NULL) != NULL)
		TH_LOG("missing: umcg_pick of B (next=%d)", t->b);
	EXPECT_TRUE(tr_find(log, "umcg_switch", t->p, t->q, NULL) != NULL)
		TH_LOG("missing: umcg_switch of P (tid %d) to Q (next=%d)",
		       t->p, t->q);
	EXPECT_TRUE(tr_find(log, "umcg_preempt", -1, t->s, NULL) != NULL)
		TH_LOG("missing: umcg_preempt of S (next=%d)", t->s);
	EXPECT_TRUE(tr_find(log, "umcg_hold", t->s, -1, "preempt") != NULL)
		TH_LOG("missing: umcg_hold reason=preempt of S (tid %d)", t->s);
	EXPECT_TRUE(tr_find(log, "umcg_register", -1, -1, NULL) &&
		    tr_find(log, "umcg_exit", -1, -1, NULL));
}

/* Write @val to tracefs file @path; 0 or -errno. */
static int tr_write(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	ssize_t n;
	int err;

	if (fd < 0)
		return -errno;
	n = write(fd, val, strlen(val));
	err = n < 0 ? -errno : 0;
	close(fd);
	return err;
}

/* NULL when tracefs is mounted at TRACEFS (mounting it if need be). */
static const char *tr_tracefs(void)
{
	if (!access(TRACEFS "/events", F_OK))
		return NULL;
	if (mount("tracefs", TRACEFS, "tracefs", 0, NULL) &&
	    access(TRACEFS "/events", F_OK))
		return "no tracefs at " TRACEFS " and mounting it failed";
	return NULL;
}

FIXTURE(trace)
{
	char inst[128];
	bool made;
};

FIXTURE_SETUP(trace)
{
	const char *why = kb_backend_get();

	if (why)
		SKIP(return, "%s", why);
	if (geteuid() != 0)
		SKIP(return, "tracefs needs root");
	why = tr_tracefs();
	if (why)
		SKIP(return, "%s", why);
	snprintf(self->inst, sizeof(self->inst), TRACEFS "/instances/umcg_test_%d",
		 getpid());
}

FIXTURE_TEARDOWN(trace)
{
	if (self->made)
		EXPECT_EQ(0, rmdir(self->inst)) TH_LOG("rmdir %s: %s", self->inst,
						       strerror(errno));
	if (!kb_backend_get())
		KB_EXPECT_BACKEND_KEPT();
}

TEST_F(trace, events_listed)
{
	static const char *const fields[] = {
		"field:pid_t tid;", "field:int cpu;", "field:pid_t group;",
	};
	char path[256], buf[8192];

	for (size_t i = 0; i < NR_EVENTS; i++) {
		int fd;
		size_t n;

		snprintf(path, sizeof(path), TRACEFS "/events/umcg/%s/format",
			 tr_events[i]);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		ASSERT_LE(0, fd) TH_LOG("missing: %s (%s)", path, strerror(errno));
		n = umcg_test_read_all(fd, buf, sizeof(buf) - 1);
		close(fd);
		buf[n] = '\0';
		for (size_t j = 0; j < sizeof(fields) / sizeof(fields[0]); j++) {
			EXPECT_TRUE(strstr(buf, fields[j]) != NULL)
				TH_LOG("%s: no \"%s\"", path, fields[j]);
		}
		EXPECT_TRUE(strstr(buf, "print fmt:") != NULL);
	}
}

TEST_F_TIMEOUT(trace, tracefs, 250)
{
	struct tr_tids t = { 0 };
	struct tr_log log = { 0 };
	char path[256];
	const char *why;
	FILE *f;
	int ret;

	ASSERT_EQ(0, mkdir(self->inst, 0700)) TH_LOG("mkdir %s: %s", self->inst,
						     strerror(errno));
	self->made = true;
	snprintf(path, sizeof(path), "%s/buffer_size_kb", self->inst);
	EXPECT_EQ(0, tr_write(path, "2048"));
	snprintf(path, sizeof(path), "%s/events/umcg/enable", self->inst);
	ASSERT_EQ(0, tr_write(path, "1"));

	ret = tr_workload(&t, &why, "kmod");

	ASSERT_EQ(0, tr_write(path, "0"));
	TH_LOG("block hook: %s", kb_hook(path, sizeof(path)));
	ASSERT_EQ(0, ret) TH_LOG("%s: %s", why, strerror(-ret));
	snprintf(path, sizeof(path), "%s/trace", self->inst);
	f = fopen(path, "re");
	ASSERT_NE(NULL, f);
	tr_log_read(&log, f);
	fclose(f);
	ASSERT_NE(NULL, log.evs);
	tr_check(_metadata, &log, &t);
	free(log.evs);
}

TEST_F_TIMEOUT(trace, perf, 250)
{
	char dir[] = "/tmp/kmod_trace.XXXXXX";
	char exe[PATH_MAX], data[PATH_MAX], tids[PATH_MAX], script[PATH_MAX];
	struct tr_tids t = { 0 };
	struct tr_log log = { 0 };
	ssize_t n;
	FILE *f;
	int ret;

	if (access(PERF, X_OK))
		SKIP(return, PERF " is not installed");
	{
		char *const argv[] = { PERF, "version", NULL };

		if (tr_run(argv, NULL))
			SKIP(return, PERF " version does not run here");
	}
	ASSERT_NE(NULL, mkdtemp(dir));
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ASSERT_LT(0, n);
	exe[n] = '\0';
	snprintf(data, sizeof(data), "%s/perf.data", dir);
	snprintf(tids, sizeof(tids), "%s/tids", dir);
	snprintf(script, sizeof(script), "%s/script", dir);
	{
		char *const argv[] = {
			PERF, "record", "-q", "-N", "-B", "-e", "umcg:*",
			"-o", data, "--", exe, "--workload", tids, NULL,
		};

		ret = tr_run(argv, NULL);
		EXPECT_EQ(0, ret) TH_LOG("perf record ... %s --workload: %d", exe, ret);
	}
	f = fopen(tids, "re");
	ASSERT_NE(NULL, f) TH_LOG("%s: %s", tids, strerror(errno));
	ASSERT_EQ(5, fscanf(f, "%d %d %d %d %d", &t.group, &t.b, &t.p, &t.q,
			    &t.s));
	fclose(f);
	{
		char *const argv[] = {
			PERF, "script", "-i", data, "-F", "trace:tid,cpu,event,trace",
			NULL,
		};

		ret = tr_run(argv, script);
		EXPECT_EQ(0, ret) TH_LOG("perf script: %d", ret);
	}
	f = fopen(script, "re");
	ASSERT_NE(NULL, f);
	tr_log_read(&log, f);
	fclose(f);
	ASSERT_NE(NULL, log.evs);
	tr_check(_metadata, &log, &t);
	free(log.evs);
	unlink(data);
	unlink(tids);
	unlink(script);
	rmdir(dir);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--workload"))
		return tr_workload_main(argv[2], "kmod");
	return test_harness_run(argc, argv);
}
