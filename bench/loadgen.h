/* SPDX-License-Identifier: GPL-2.0 */
/*
 * loadgen.h - the bundled load generator: C TCP connections to an echo
 * server on 127.0.0.1, each with one request in flight (closed loop).
 */
#ifndef LOADGEN_H
#define LOADGEN_H

struct bench_count;

struct loadgen_cfg {
	int port;
	int conns;		/* connections */
	int threads;		/* client threads sharing them */
	int size;		/* bytes per request */
	double secs;		/* measured time, after a warm-up */
	/* If not NULL: started and stopped at the measured time's ends. */
	struct bench_count *count;
};

struct loadgen_res {
	long reqs;		/* requests answered in the measured time */
	double req_per_s;
	double p50_us, p99_us, p999_us;
	long errors;		/* connections that failed */
};

/* 0, or a negative errno if the connections could not be made. */
int loadgen_run(const struct loadgen_cfg *cfg, struct loadgen_res *res);

#endif /* LOADGEN_H */
