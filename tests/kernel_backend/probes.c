// SPDX-License-Identifier: GPL-2.0
/*
 * Description: libumcg's static probes (USDT, libumcg/src/probes.h,
 * Documentation/tracing.md), the scheduling events of every backend, as
 * perf sees them.  The workload of trace_workload.h runs under
 * perf record -e 'sdt_umcg:*' on this program's backend (and, in the kmod
 * build, once more on the user backend); its threads B, P, Q and S must
 * show:
 *
 *   register, wake, pick (or handoff) and exit of each worker
 *   block of B, then a wake of B after it
 *   park of Q, switch of P to Q (next = Q)
 *   preempt of S
 *
 * with the CPU argument of each a CPU of this machine.
 *
 *   listed  perf buildid-cache --add libumcg.so.0, then perf list sdt
 *           shows all nine probes
 *   perf    the run above, read back with perf script
 *
 * SKIP without a working perf or without uprobes.  A missing event fails
 * the test and names it.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kselftest_harness.h"

#include <umcg.h>

#include "kernel_backend.h"
#include "trace_workload.h"

#define PERF		"/usr/bin/perf"

static const char *const pr_names[] = {
	"register", "wake", "pick", "handoff", "block", "preempt", "park",
	"switch", "exit",
};
#define NR_PROBES	(sizeof(pr_names) / sizeof(pr_names[0]))

/* One record of perf script: "comm tid [cpu] time: sdt_umcg:NAME: (ip) argN=V" */
struct pr_ev {
	char name[16];
	long rec_tid;
	long arg[4];		/* arg1..arg3 at [1..3]; -2: absent */
};

#define PR_MAX_EVS	50000

struct pr_log {
	struct pr_ev *evs;
	int n, lines;
	char first[6][200];
};

static bool pr_parse(const char *line, struct pr_ev *ev)
{
	const char *p = strstr(line, "sdt_umcg:"), *e, *a;
	size_t n;

	memset(ev, 0, sizeof(*ev));
	for (int i = 0; i < 4; i++)
		ev->arg[i] = -2;
	if (!p || sscanf(line, "%*s %ld", &ev->rec_tid) != 1)
		return false;
	p += strlen("sdt_umcg:");
	e = strchr(p, ':');
	if (!e || (n = (size_t)(e - p)) >= sizeof(ev->name))
		return false;
	memcpy(ev->name, p, n);
	for (a = strstr(e, " arg"); a; a = strstr(a + 1, " arg")) {
		int i;
		long v;

		if (sscanf(a, " arg%d=%ld", &i, &v) == 2 && i >= 1 && i <= 3)
			ev->arg[i] = v;
	}
	return true;
}

static void pr_log_read(struct pr_log *log, FILE *f)
{
	char line[512];

	log->evs = calloc(PR_MAX_EVS, sizeof(*log->evs));
	while (log->evs && fgets(line, sizeof(line), f)) {
		if (log->lines < 6)
			snprintf(log->first[log->lines], sizeof(log->first[0]), "%.190s", line);
		log->lines++;
		if (log->n < PR_MAX_EVS && pr_parse(line, &log->evs[log->n]))
			log->n++;
	}
}

/* The index of the first event @name about @tid (arg1) from index @from, or -1. */
static int pr_find(const struct pr_log *log, int from, const char *name, long tid)
{
	for (int i = from < 0 ? 0 : from; i < log->n; i++)
		if (!strcmp(log->evs[i].name, name) && log->evs[i].arg[1] == tid)
			return i;
	return -1;
}

static void pr_check(struct __test_metadata *_metadata, const struct pr_log *log,
		     const struct tr_tids *t, const char *backend)
{
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	const pid_t w[] = { t->b, t->p, t->q, t->s };
	const char *const wn[] = { "B", "P", "Q", "S" };
	int i, blk, bad = 0;

	TH_LOG("%s: B %d, P %d, Q %d, S %d; %d sdt_umcg records of %d lines",
	       backend, t->b, t->p, t->q, t->s, log->n, log->lines);
	EXPECT_LT(0, log->n) {
		for (i = 0; i < log->lines && i < 6; i++)
			TH_LOG("line: %s", log->first[i]);
	}
	/* Every probe but register and exit has a CPU second (-1: none). */
	for (i = 0; i < log->n; i++) {
		const struct pr_ev *ev = &log->evs[i];

		if (!strcmp(ev->name, "register") || !strcmp(ev->name, "exit"))
			continue;
		if ((ev->arg[2] < -1 || ev->arg[2] >= ncpus) && bad++ < 5)
			TH_LOG("implausible cpu: %s of %ld: cpu %ld (%ld CPUs)",
			       ev->name, ev->arg[1], ev->arg[2], ncpus);
	}
	EXPECT_EQ(0, bad);
	for (i = 0; i < 4; i++) {
		EXPECT_LE(0, pr_find(log, 0, "register", w[i]))
			TH_LOG("missing: register of %s (tid %d)", wn[i], w[i]);
		EXPECT_LE(0, pr_find(log, 0, "wake", w[i]))
			TH_LOG("missing: wake of %s (tid %d)", wn[i], w[i]);
		EXPECT_TRUE(pr_find(log, 0, "pick", w[i]) >= 0 ||
			    pr_find(log, 0, "handoff", w[i]) >= 0)
			TH_LOG("missing: pick or handoff of %s (tid %d)", wn[i], w[i]);
		EXPECT_LE(0, pr_find(log, 0, "exit", w[i]))
			TH_LOG("missing: exit of %s (tid %d)", wn[i], w[i]);
	}
	blk = pr_find(log, 0, "block", t->b);
	EXPECT_LE(0, blk) TH_LOG("missing: block of B (tid %d)", t->b);
	if (blk >= 0)
		EXPECT_LE(0, pr_find(log, blk + 1, "wake", t->b))
			TH_LOG("missing: wake of B (tid %d) after its block", t->b);
	EXPECT_LE(0, pr_find(log, 0, "park", t->q))
		TH_LOG("missing: park of Q (tid %d)", t->q);
	i = pr_find(log, 0, "switch", t->p);
	EXPECT_TRUE(i >= 0 && log->evs[i].arg[3] == t->q)
		TH_LOG("missing: switch of P (tid %d) to Q (next %d)", t->p, t->q);
	EXPECT_LE(0, pr_find(log, 0, "preempt", t->s))
		TH_LOG("missing: preempt of S (tid %d)", t->s);
}

/* The file libumcg.so.0 was loaded from, into @buf. */
static const char *pr_libumcg(char *buf, size_t size)
{
	Dl_info info;

	if (!dladdr((void *)umcg_init, &info) || !info.dli_fname)
		return NULL;
	if (!realpath(info.dli_fname, buf)) {
		snprintf(buf, size, "%s", info.dli_fname);
	}
	return buf;
}

FIXTURE(sdt)
{
	char dir[64];
	char lib[PATH_MAX];
	char probes_added;
};

FIXTURE_SETUP(sdt)
{
	const char *why = kb_backend_get();
	char built[PATH_MAX];

	self->probes_added = 0;
	if (why)
		SKIP(return, "%s", why);
	if (access(PERF, X_OK))
		SKIP(return, PERF " is not installed");
	{
		char *const argv[] = { PERF, "version", NULL };

		if (tr_run(argv, NULL))
			SKIP(return, PERF " version does not run here");
	}
	ASSERT_NE(NULL, pr_libumcg(built, sizeof(built)));
	snprintf(self->dir, sizeof(self->dir), "/tmp/umcg_probes.XXXXXX");
	ASSERT_NE(NULL, mkdtemp(self->dir));
	/*
	 * uprobe_events separates its fields with spaces: a library under
	 * a path with one cannot be probed.  Trace a copy here, loaded by
	 * the workload through LD_LIBRARY_PATH (searched before RUNPATH).
	 */
	snprintf(self->lib, sizeof(self->lib), "%s/libumcg.so.0", self->dir);
	{
		char *const argv[] = { "/bin/cp", built, self->lib, NULL };

		ASSERT_EQ(0, tr_run(argv, NULL)) TH_LOG("cp %s %s", built, self->lib);
	}
	setenv("LD_LIBRARY_PATH", self->dir, 1);
	/* perf keeps its build-id cache (what it reads the notes from) in $HOME. */
	setenv("HOME", self->dir, 1);
	{
		char *const argv[] = { PERF, "buildid-cache", "--add", self->lib, NULL };

		ASSERT_EQ(0, tr_run(argv, NULL)) TH_LOG("perf buildid-cache --add %s", self->lib);
	}
}

FIXTURE_TEARDOWN(sdt)
{
	char cmd[PATH_MAX + 64];

	if (self->probes_added) {
		char *const argv[] = { PERF, "probe", "-q", "-d", "sdt_umcg:*", NULL };

		tr_run(argv, NULL);
	}
	if (self->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", self->dir);
		if (system(cmd))
			TH_LOG("could not remove %s", self->dir);
	}
}

TEST_F(sdt, listed)
{
	char out[PATH_MAX], line[256];
	bool seen[NR_PROBES] = { 0 };
	size_t i;
	FILE *f;

	snprintf(out, sizeof(out), "%s/list", self->dir);
	{
		char *const argv[] = { PERF, "list", "sdt", NULL };

		ASSERT_EQ(0, tr_run(argv, out));
	}
	f = fopen(out, "re");
	ASSERT_NE(NULL, f);
	while (fgets(line, sizeof(line), f))
		for (i = 0; i < NR_PROBES; i++) {
			char want[32];

			snprintf(want, sizeof(want), "sdt_umcg:%s ", pr_names[i]);
			if (strstr(line, want))
				seen[i] = true;
		}
	fclose(f);
	for (i = 0; i < NR_PROBES; i++) {
		EXPECT_TRUE(seen[i]) TH_LOG("perf list sdt: no sdt_umcg:%s in %s",
					    pr_names[i], self->lib);
	}
}

/* The workload on @backend under perf record, checked. */
static void pr_record(struct __test_metadata *_metadata,
		      FIXTURE_DATA(sdt) *self, const char *backend)
{
	char exe[PATH_MAX], data[PATH_MAX], tids[PATH_MAX], script[PATH_MAX];
	struct tr_tids t = { 0 };
	struct pr_log log = { 0 };
	ssize_t n;
	FILE *f;
	int ret;

	if (!self->probes_added) {
		char *const argv[] = { PERF, "probe", "-q", "sdt_umcg:*", NULL };

		ret = tr_run(argv, NULL);
		if (ret && access("/sys/kernel/tracing/uprobe_events", F_OK) &&
		    access("/sys/kernel/debug/tracing/uprobe_events", F_OK))
			SKIP(return, "no uprobes: no uprobe_events in tracefs");
		ASSERT_EQ(0, ret) TH_LOG("perf probe 'sdt_umcg:*' failed");
		self->probes_added = 1;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	ASSERT_LT(0, n);
	exe[n] = '\0';
	snprintf(data, sizeof(data), "%s/%s.data", self->dir, backend);
	snprintf(tids, sizeof(tids), "%s/%s.tids", self->dir, backend);
	snprintf(script, sizeof(script), "%s/%s.script", self->dir, backend);
	{
		char *const argv[] = {
			PERF, "record", "-q", "-N", "-B", "-e", "sdt_umcg:*",
			"-o", data, "--", exe, "--workload", tids, (char *)backend, NULL,
		};

		ret = tr_run(argv, NULL);
		ASSERT_EQ(0, ret) TH_LOG("perf record ... %s --workload on %s: %d",
					 exe, backend, ret);
	}
	f = fopen(tids, "re");
	ASSERT_NE(NULL, f) TH_LOG("%s: %s", tids, strerror(errno));
	ASSERT_EQ(5, fscanf(f, "%d %d %d %d %d", &t.group, &t.b, &t.p, &t.q, &t.s));
	fclose(f);
	{
		char *const argv[] = { PERF, "script", "-i", data, NULL };

		ASSERT_EQ(0, tr_run(argv, script));
	}
	f = fopen(script, "re");
	ASSERT_NE(NULL, f);
	pr_log_read(&log, f);
	fclose(f);
	ASSERT_NE(NULL, log.evs);
	pr_check(_metadata, &log, &t, backend);
	free(log.evs);
}

TEST_F_TIMEOUT(sdt, perf, 250)
{
	pr_record(_metadata, self, KB_BACKEND);
}

#ifndef KB_BACKEND_SCX
/* The user backend's moves (its monitor's) through the same probes. */
TEST_F_TIMEOUT(sdt, perf_user, 250)
{
	pr_record(_metadata, self, "user");
}
#endif

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "--workload"))
		return tr_workload_main(argv[2], argv[3]);
	return test_harness_run(argc, argv);
}
