// SPDX-License-Identifier: GPL-2.0
/*
 * top_workload - a libumcg program with a known shape, for "umcgctl top"
 * and the debugger tests: Y workers that compute and yield, B that block
 * in read() on a pipe, P that park; every worker named after its kind.
 *
 *   top_workload [-c CORES] [-y Y] [-b B] [-p P] [-s SECS]
 *
 * Prints "ready PID" once every worker has started, then runs until a
 * line (or end of file) on standard input, or for SECS seconds with -s;
 * then wakes everyone, joins them and exits 0.
 */
#include <stdatomic.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <umcg.h>

static _Atomic int stop;	/* set by main, read by the workers */
static int pipes[2];
static _Atomic unsigned long sink;	/* keeps the computation */

/* The yielders' own code, where perf must find their samples. */
__attribute__((noinline)) unsigned long top_workload_compute(unsigned long n)
{
	unsigned long x = n;

	for (unsigned long i = 0; i < 20000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

static void *yielder(void *arg)
{
	unsigned long x = (unsigned long)arg;

	while (!stop) {
		x = top_workload_compute(x);
		umcg_yield();
	}
	atomic_store_explicit(&sink, x, memory_order_relaxed);
	return NULL;
}

/* Blocks in read() until main writes one byte per blocker. */
__attribute__((noinline)) void *top_workload_blocker(void *arg)
{
	char c;

	(void)arg;
	while (read(pipes[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

__attribute__((noinline)) void *top_workload_parker(void *arg)
{
	(void)arg;
	while (!stop)
		umcg_park();
	return NULL;
}

int main(int argc, char **argv)
{
	int cores = 2, ny = 3, nb = 2, np = 2, secs = 0, opt, ret;

	/* Names up to "block-999": at most 999 workers of a kind. */
	umcg_thread_t **t;
	char line[64];

	while ((opt = getopt(argc, argv, "c:y:b:p:s:")) != -1) {
		switch (opt) {
		case 'c': cores = atoi(optarg); break;
		case 'y': ny = atoi(optarg); break;
		case 'b': nb = atoi(optarg); break;
		case 'p': np = atoi(optarg); break;
		case 's': secs = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: %s [-c CORES] [-y Y] [-b B] [-p P] [-s SECS]\n", argv[0]);
			return 2;
		}
	}
	if (ny < 0 || nb < 0 || np < 0 || ny > 999 || nb > 999 || np > 999 || cores < 1) {
		fprintf(stderr, "%s: 0 to 999 workers of each kind, 1 core or more\n", argv[0]);
		return 2;
	}
	if (pipe(pipes))
		return 1;
	struct umcg_config cfg = { .size = sizeof(cfg), .nr_cores = (uint32_t)cores };

	ret = umcg_init(&cfg);
	if (ret) {
		fprintf(stderr, "umcg_init: %s\n", strerror(-ret));
		return 1;
	}
	t = calloc((size_t)(ny + nb + np), sizeof(*t));
	for (int i = 0; i < ny + nb + np; i++) {
		char name[16];
		struct umcg_attr a = { .size = sizeof(a), .core = -1, .name = name };
		void *(*fn)(void *);

		if (i < ny) {
			snprintf(name, sizeof(name), "yield-%d", i % 1000);
			fn = yielder;
		} else if (i < ny + nb) {
			snprintf(name, sizeof(name), "block-%d", (i - ny) % 1000);
			fn = top_workload_blocker;
		} else {
			snprintf(name, sizeof(name), "park-%d", (i - ny - nb) % 1000);
			fn = top_workload_parker;
		}
		ret = umcg_spawn(&t[i], &a, fn, (void *)(unsigned long)(i + 1));
		if (ret) {
			fprintf(stderr, "umcg_spawn: %s\n", strerror(-ret));
			return 1;
		}
	}
	/* Every worker has run once (its tid is known) and settled. */
	for (int i = 0; i < ny + nb + np; i++)
		while (!umcg_thread_tid(t[i]))
			usleep(1000);
	usleep(200000);
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (secs)
		sleep((unsigned int)secs);
	else
		(void)!fgets(line, sizeof(line), stdin);
	atomic_store(&stop, 1);
	for (int i = 0; i < nb; i++)
		(void)!write(pipes[1], "x", 1);
	for (int i = ny + nb; i < ny + nb + np; i++)
		umcg_unpark(t[i]);
	for (int i = 0; i < ny + nb + np; i++)
		umcg_join(t[i], NULL);
	free(t);
	ret = umcg_fini();
	return ret ? 1 : 0;
}
