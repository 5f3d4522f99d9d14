// SPDX-License-Identifier: GPL-2.0
/*
 * loadgen - drive a TCP echo server on 127.0.0.1 with C connections, one
 * request in flight on each, and print requests per second and latency
 * percentiles.  bench/server uses the same engine (loadgen_core.c).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "loadgen.h"

static void usage(void)
{
	printf("Usage: loadgen -p PORT [OPTIONS]\n\n"
	       "Opens C connections to the echo server at 127.0.0.1:PORT, keeps one\n"
	       "request in flight on each, and prints one line:\n"
	       "  conns=C reqs=N req_per_s=R p50_us=X p99_us=Y p999_us=Z errors=E\n\n"
	       "Options:\n"
	       "  -p, --port N       server port (required)\n"
	       "  -c, --conns C      connections (default 100)\n"
	       "  -d, --seconds S    measured seconds, after a warm-up (default 2)\n"
	       "  -s, --size B       bytes per request (default 64)\n"
	       "  -T, --threads N    client threads (default 1)\n"
	       "  -h, --help         this text\n");
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "conns", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 'd' },
		{ "size", required_argument, NULL, 's' },
		{ "threads", required_argument, NULL, 'T' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct loadgen_cfg cfg = { .conns = 100, .threads = 1, .size = 64, .secs = 2 };
	struct loadgen_res res;
	int c, ret;

	bench_prog = "loadgen";
	opterr = 0;
	while ((c = getopt_long(argc, argv, "p:c:d:s:T:h", lo, NULL)) != -1) {
		switch (c) {
		case 'p': cfg.port = bench_parse_long("--port", optarg, 1, 65535); break;
		case 'c': cfg.conns = bench_parse_long("--conns", optarg, 1, 1000000); break;
		case 'd': cfg.secs = bench_parse_long("--seconds", optarg, 1, 3600); break;
		case 's': cfg.size = bench_parse_long("--size", optarg, 1, 4096); break;
		case 'T': cfg.threads = bench_parse_long("--threads", optarg, 1, 256); break;
		case 'h': usage(); return 0;
		default:
			bench_usage_error("unknown option or missing value: '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		bench_usage_error("unexpected argument '%s'", argv[optind]);
	if (!cfg.port)
		bench_usage_error("--port is required");
	if (cfg.threads > cfg.conns)
		cfg.threads = cfg.conns;
	signal(SIGPIPE, SIG_IGN);
	if (bench_raise_nofile() < cfg.conns + 16)
		bench_die("%d connections need more open files than RLIMIT_NOFILE allows",
			  cfg.conns);
	ret = loadgen_run(&cfg, &res);
	if (ret)
		bench_die("connecting to 127.0.0.1:%d: %s", cfg.port, strerror(-ret));
	printf("conns=%d reqs=%ld req_per_s=%.1f p50_us=%.1f p99_us=%.1f p999_us=%.1f errors=%ld\n",
	       cfg.conns, res.reqs, res.req_per_s, res.p50_us, res.p99_us, res.p999_us,
	       res.errors);
	return res.errors ? 1 : 0;
}
