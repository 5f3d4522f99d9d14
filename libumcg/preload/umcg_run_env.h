/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * umcg_run_env.h - the contract between umcg-run, libumcg-preload.so and
 * "umcgctl dump": the environment variables the launcher sets and the
 * preloaded library reads, and the parsers both sides share so that a value
 * the launcher accepts is a value the library accepts.
 *
 * Every parser returns 0 or -EINVAL and never sets errno.  Header-only:
 * the three users are separate programs and share no library but libumcg.
 * Needs _GNU_SOURCE (sigabbrev_np(), CPU_COUNT()).
 */
#ifndef UMCG_RUN_ENV_H
#define UMCG_RUN_ENV_H

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Managed cores: the first N CPUs of the affinity mask; 0: all of them. */
#define UMCG_RUN_ENV_CORES		"UMCG_RUN_CORES"
/* Policy name, as umcg_policy_find() takes it; empty: the default. */
#define UMCG_RUN_ENV_POLICY		"UMCG_RUN_POLICY"
/*
 * Time slice in microseconds; 0: no preemption (C6).  umcg-run always sets
 * it (default UMCG_RUN_TIME_SLICE_US_DFL); unset, the library preempts
 * nothing.
 */
#define UMCG_RUN_ENV_TIME_SLICE_US	"UMCG_RUN_TIME_SLICE_US"
#define UMCG_RUN_TIME_SLICE_US_DFL	10000ULL
/* User backend: how long a blocked worker keeps its core; 0: default. */
#define UMCG_RUN_ENV_BLOCKED_US		"UMCG_RUN_BLOCKED_US"
/*
 * CPU list ("0-3,6") the first managed process was allowed to run on.
 * A worker's affinity is narrowed to its core's CPU, and a child process
 * it starts inherits that; a preloaded child widens its mask back to this
 * list when the narrowed mask is too small for the cores it needs.
 */
#define UMCG_RUN_ENV_CPUS		"UMCG_RUN_CPUS"
/* Read by libumcg itself: "scx", "kmod", "user" or "auto". */
#define UMCG_RUN_ENV_BACKEND		"UMCG_BACKEND"
/*
 * Signal that asks for a thread dump (name or number, or "none"); read by
 * umcgctl too.
 */
#define UMCG_RUN_ENV_DUMP_SIGNAL	"UMCG_DUMP_SIGNAL"
/* umcg-run only: use this preload library instead of searching for it. */
#define UMCG_RUN_ENV_PRELOAD		"UMCG_RUN_PRELOAD"

/*
 * The default dump signal: a real-time one counted from the top, which
 * programs seldom take (they count theirs up from SIGRTMIN), and not
 * SIGUSR1 or SIGUSR2, which the JVM (its thread suspend signal), Go and
 * many servers use.  Signal 61 with glibc.
 */
#define UMCG_RUN_DUMP_SIGNAL_DFL	(SIGRTMAX - 3)
#define UMCG_RUN_DUMP_SIGNAL_DFL_NAME	"RTMAX-3"
#define UMCG_RUN_PRELOAD_NAME		"libumcg-preload.so"

/* Bounds of the microsecond settings: 1000 s keeps the nanoseconds exact. */
#define UMCG_RUN_US_MAX			1000000000ULL

/*
 * Decimal number in [@min, @max], nothing else (no sign, no spaces, no
 * suffix).  0 or -EINVAL.
 */
static inline int umcg_run_parse_u64(const char *s, uint64_t min, uint64_t max,
				     uint64_t *out)
{
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * A signal: a number ("12"), a name with or without "SIG" ("USR2",
 * "SIGUSR2", any case), or "RTMIN+n" / "RTMAX-n"; "none", "off" or "0"
 * for no signal (*@sig = 0).  Refuses the signals a dump cannot use:
 * SIGKILL, SIGSTOP, SIGURG (the user backend's preemption signal) and the
 * C library's reserved ones.  0 or -EINVAL.
 */
static inline int umcg_run_parse_signal(const char *s, int *sig)
{
	uint64_t n;
	int v = -1;

	if (!s || !*s)
		return -EINVAL;
	if (!strcasecmp(s, "none") || !strcasecmp(s, "off") || !strcmp(s, "0")) {
		*sig = 0;
		return 0;
	}
	if (umcg_run_parse_u64(s, 1, NSIG - 1, &n) == 0) {
		v = (int)n;
	} else {
		if (!strncasecmp(s, "SIG", 3))
			s += 3;
		if (!strncasecmp(s, "RTMIN", 5) || !strncasecmp(s, "RTMAX", 5)) {
			int base = !strncasecmp(s, "RTMIN", 5) ? SIGRTMIN : SIGRTMAX;
			int dir = base == SIGRTMIN ? 1 : -1;

			s += 5;
			n = 0;
			if (*s && (*s != (dir > 0 ? '+' : '-') ||
				   umcg_run_parse_u64(s + 1, 0, SIGRTMAX - SIGRTMIN, &n)))
				return -EINVAL;
			v = base + dir * (int)n;
		} else {
			for (int i = 1; i < NSIG; i++) {
				const char *abbrev = sigabbrev_np(i);

				if (abbrev && !strcasecmp(s, abbrev)) {
					v = i;
					break;
				}
			}
		}
	}
	/* Between 31 and SIGRTMIN: the C library's own (thread cancellation). */
	if (v < 1 || v >= NSIG || v > SIGRTMAX || (v > 31 && v < SIGRTMIN) ||
	    v == SIGKILL || v == SIGSTOP || v == SIGURG)
		return -EINVAL;
	*sig = v;
	return 0;
}

/*
 * $UMCG_DUMP_SIGNAL, or the default when unset or empty; 0 for "none".
 * 0, or -EINVAL with *@sig untouched.
 */
static inline int umcg_run_dump_signal(int *sig)
{
	const char *s = getenv(UMCG_RUN_ENV_DUMP_SIGNAL);

	if (!s || !*s) {
		*sig = UMCG_RUN_DUMP_SIGNAL_DFL;
		return 0;
	}
	return umcg_run_parse_signal(s, sig);
}

/*
 * @sig's name for messages, "SIGUSR2" or "SIGRTMAX-3", into @buf; "none"
 * for 0.
 */
static inline const char *umcg_run_signal_name(int sig, char *buf, size_t len)
{
	const char *abbrev = sig > 0 && sig < SIGRTMIN ? sigabbrev_np(sig) : NULL;

	if (!sig)
		snprintf(buf, len, "none");
	else if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else if (sig >= SIGRTMIN && sig - SIGRTMIN <= SIGRTMAX - sig)
		snprintf(buf, len, "SIGRTMIN+%d", sig - SIGRTMIN);
	else if (sig >= SIGRTMIN && sig <= SIGRTMAX)
		snprintf(buf, len, "SIGRTMAX-%d", SIGRTMAX - sig);
	else
		snprintf(buf, len, "signal %d", sig);
	return buf;
}

/* Writes @set as a CPU list ("0-3,6") into @buf.  0 or -EINVAL (too long). */
static inline int umcg_run_format_cpus(const cpu_set_t *set, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int c = 0; c < CPU_SETSIZE; c++) {
		int end = c;
		int n;

		if (!CPU_ISSET(c, set))
			continue;
		while (end + 1 < CPU_SETSIZE && CPU_ISSET(end + 1, set))
			end++;
		n = end > c ? snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", c, end)
			    : snprintf(buf + used, len - used, "%s%d", used ? "," : "", c);
		if (n < 0 || (size_t)n >= len - used)
			return -EINVAL;
		used += (size_t)n;
		c = end;
	}
	return used ? 0 : -EINVAL;
}

/* Parses a CPU list ("0-3,6") into @set.  0 or -EINVAL (also when empty). */
static inline int umcg_run_parse_cpus(const char *s, cpu_set_t *set)
{
	CPU_ZERO(set);
	if (!s || !*s)
		return -EINVAL;
	while (*s) {
		char num[16];
		uint64_t lo, hi;
		size_t n = strspn(s, "0123456789");

		if (!n || n >= sizeof(num))
			return -EINVAL;
		memcpy(num, s, n);
		num[n] = '\0';
		if (umcg_run_parse_u64(num, 0, CPU_SETSIZE - 1, &lo))
			return -EINVAL;
		s += n;
		hi = lo;
		if (*s == '-') {
			s++;
			n = strspn(s, "0123456789");
			if (!n || n >= sizeof(num))
				return -EINVAL;
			memcpy(num, s, n);
			num[n] = '\0';
			if (umcg_run_parse_u64(num, lo, CPU_SETSIZE - 1, &hi))
				return -EINVAL;
			s += n;
		}
		for (uint64_t c = lo; c <= hi; c++)
			CPU_SET(c, set);
		if (*s == ',' && s[1])
			s++;
		else if (*s)
			return -EINVAL;
	}
	return 0;
}

#endif /* UMCG_RUN_ENV_H */
