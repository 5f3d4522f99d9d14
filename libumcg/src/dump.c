// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * dump.c - counters and the thread dump.
 *
 * A thread's time in state is now (CLOCK_MONOTONIC, read here) less the
 * coarse clock's time of its last state change (t->state_since_ns, see
 * umcg_set_state_time()): exact to a clock tick (1-4 ms), never negative;
 * no switch reads the fine clock for it.
 *
 * Lock order: group->threads_lock, then core->lock (read-only here).
 */
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "backend.h"

static const char *const umcg_state_names[] = {
	[UMCG_TASK_NEW]		= "NEW",
	[UMCG_TASK_RUNNABLE]	= "RUNNABLE",
	[UMCG_TASK_RUNNING]	= "RUNNING",
	[UMCG_TASK_BLOCKED]	= "BLOCKED",
	[UMCG_TASK_PARKED]	= "PARKED",
	[UMCG_TASK_DONE]	= "DONE",
};

int umcg_stats(struct umcg_stats *st)
{
	struct umcg_group *g = atomic_load(&umcg_group);

	if (!st)
		return -EINVAL;
	if (!g)
		return -ESRCH;
	/*
	 * live first: a worker counts itself exited, then not live (a
	 * release), so a @live read here covers every exit it no longer counts.
	 */
	st->live = atomic_load_explicit(&g->stats->live, memory_order_acquire);
	st->spawned = atomic_load(&g->stats->spawned);
	st->exited = atomic_load(&g->stats->exited);
	umcg_stats_core_sums(g, st);
	return 0;
}

int umcg_dump(FILE *f)
{
	struct umcg_group *g = atomic_load(&umcg_group);
	struct umcg_thread *t, *self;
	struct cds_list_head *pos;
	struct umcg_stats st;
	uint64_t now = umcg_now_ns();

	if (!f)
		return -EINVAL;
	if (!g)
		return -ESRCH;
	self = umcg_lib_hold();
	umcg_stats(&st);
	fprintf(f, "umcg: backend %s, policy %s, %u cores, %llu live workers\n",
		g->backend->name, g->policy->name, g->nr_cores,
		(unsigned long long)st.live);
	fprintf(f, "umcg: switches %llu yields %llu parks %llu blocks %llu "
		"preempts %llu steals %llu spawned %llu exited %llu\n",
		(unsigned long long)st.switches, (unsigned long long)st.yields,
		(unsigned long long)st.parks, (unsigned long long)st.blocks,
		(unsigned long long)st.preempts, (unsigned long long)st.steals,
		(unsigned long long)st.spawned, (unsigned long long)st.exited);
	/* Threads left unmanaged (a backend's limit), a policy's wrong picks. */
	fprintf(f, "umcg: refused %llu policy-errors %llu",
		(unsigned long long)atomic_load(&g->stats->refused),
		(unsigned long long)atomic_load(&g->stats->policy_errors));
	/* News a server found only when its bounded sleep ended. */
	if (g->backend->missed_news)
		fprintf(f, " missed-news %llu", (unsigned long long)g->backend->missed_news());
	fputc('\n', f);

	pthread_mutex_lock(&g->threads_lock);
	for (unsigned int i = 0; i < g->nr_cores; i++) {
		struct umcg_core *c = &g->cores[i];

		pthread_mutex_lock(&c->lock);
		if (c->current)
			fprintf(f, "core %u (cpu %d): tid %d\n", i, c->cpu, c->current->tid);
		else
			fprintf(f, "core %u (cpu %d): idle\n", i, c->cpu);
		pthread_mutex_unlock(&c->lock);
	}
	fprintf(f, "%8s %-15s %-8s %4s %12s %10s %8s %8s\n", "tid", "name", "state",
		"core", "in-state-us", "switches", "blocks", "preempts");
	/* Not _for_each_entry: the head is no struct umcg_thread (alignment). */
	cds_list_for_each(pos, &g->threads) {
		uint32_t s;

		t = cds_list_entry(pos, struct umcg_thread, all_node);
		s = umcg_state_of(umcg_thread_load_state(t));

		fprintf(f, "%8d %-15s %-8s %4d %12llu %10llu %8llu %8llu\n", t->tid,
			t->name[0] ? t->name : "-",
			s <= UMCG_TASK_DONE ? umcg_state_names[s] : "?",
			atomic_load(&t->core),
			(unsigned long long)(now - atomic_load(&t->state_since_ns)) / 1000,
			(unsigned long long)atomic_load(&t->nr_switches),
			(unsigned long long)atomic_load(&t->nr_blocks),
			(unsigned long long)atomic_load(&t->nr_preempts));
	}
	pthread_mutex_unlock(&g->threads_lock);
	fflush(f);
	umcg_lib_unhold(self);
	return 0;
}

/* The handler only raises a flag: the monitor writes the dump. */
static void umcg_dump_handler(int sig)
{
	struct umcg_group *g = atomic_load(&umcg_group);

	if (g)
		atomic_store(&g->dump_requested, 1);
}

int umcg_dump_on_signal(int sig)
{
	struct umcg_group *g = atomic_load(&umcg_group);
	struct sigaction sa = { 0 };
	int old;

	if (sig < 0 || sig >= NSIG || sig == SIGKILL || sig == SIGSTOP || sig == SIGURG)
		return -EINVAL;
	if (!g)
		return -ESRCH;
	old = atomic_exchange(&g->dump_signal, sig);
	if (old) {
		sa.sa_handler = SIG_DFL;
		sigaction(old, &sa, NULL);
	}
	if (!sig)
		return 0;
	sa.sa_handler = umcg_dump_handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	return sigaction(sig, &sa, NULL) ? -errno : 0;
}
