// SPDX-License-Identifier: GPL-2.0
/*
 * top.c - "umcgctl top": a live view of the libumcg processes of this
 * machine, from the statistics area each publishes (uapi/umcg_stats.h,
 * /dev/shm/umcg.<pid>).
 *
 * Every sample asks each process for a fresh snapshot (its request word,
 * a shared futex), waits a little for the answer, and copies the whole
 * area with pread(): nothing of a process's file is trusted before the
 * header checks, and a file that shrinks under us gives a short read, not
 * a SIGBUS.  The one store into the file, the request, goes through a
 * mapping of its first page, guarded against SIGBUS.
 *
 * Rates are differences of the counters between two samples over the
 * time between them; the latency percentiles come from the difference of
 * the histograms.  Documentation/umcgctl.md describes the output.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <uapi/umcg_stats.h>

#include "umcgctl.h"

/* How long a sample waits for a process to answer its request. */
#define TOP_SNAP_WAIT_NS	200000000ULL

static const char top_usage[] =
	"Usage: umcgctl top [-p PID] [-d SECS] [-n COUNT] [-b] [--json]\n"
	"\n"
	"A live view of the libumcg processes (those that publish their\n"
	"statistics: /dev/shm/umcg.<pid>; $UMCG_STATS=0 turns that off):\n"
	"workers per state, unmanaged threads, switches and blocks per second,\n"
	"hand-off latency percentiles and each core's owner.\n"
	"\n"
	"  -p, --pid PID     only process PID (an error if it publishes nothing)\n"
	"  -d, --delay SECS  seconds between samples (default 1; 0.1 to 3600)\n"
	"  -n, --count N     stop after N samples (batch default 1)\n"
	"  -b, --batch       plain text, no screen control, for scripts\n"
	"      --json        batch, one JSON object per sample and line\n"
	"\n"
	"Interactive: the screen is redrawn every SECS; q quits.\n"
	"Exit status: 0 done, 1 failed (as printed), 2 bad arguments.\n";

/* One process's area, as last read. */
struct top_proc {
	int pid;
	char comm[32];
	unsigned char *buf;		/* the area: header, then cores */
	size_t size;
	bool fresh;			/* it answered the request */
	unsigned int tasks;		/* threads in /proc/PID/task */
	uint64_t read_ns;
	bool seen;			/* found in this sample */
};

struct top_state {
	struct top_proc *procs;
	size_t nr, cap;
	int only_pid;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static const struct umcg_stats_header *hdr_of(const struct top_proc *p)
{
	return (const struct umcg_stats_header *)p->buf;
}

static const struct umcg_stats_core *core_of(const struct top_proc *p, unsigned int i)
{
	return (const struct umcg_stats_core *)(p->buf + UMCG_STATS_HEADER_SIZE +
						(size_t)i * UMCG_STATS_CORE_SIZE);
}

/* Does @pid map its area (so it is the process that made it)?  1, 0, -errno. */
static int maps_area(int pid, const char *path)
{
	char maps[64], line[512];
	size_t n = strlen(path);
	int found = 0;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	f = fopen(maps, "r");
	if (!f)
		return -errno;
	while (!found && fgets(line, sizeof(line), f)) {
		char *s = strchr(line, '/');

		if (s && !strncmp(s, path, n) && (s[n] == '\n' || s[n] == '\0'))
			found = 1;
	}
	fclose(f);
	return found;
}

static void read_comm(int pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "r");
	if (!f || !fgets(buf, (int)len, f))
		snprintf(buf, len, "?");
	else
		buf[strcspn(buf, "\n")] = '\0';
	if (f)
		fclose(f);
}

static unsigned int count_tasks(int pid)
{
	char path[64];
	struct dirent *d;
	unsigned int n = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir)))
		if (d->d_name[0] != '.')
			n++;
	closedir(dir);
	return n;
}

/* The request store: a SIGBUS (the file shrank) jumps back here. */
static sigjmp_buf bus_jmp;
static volatile sig_atomic_t bus_armed;

static void bus_handler(int sig)
{
	(void)sig;
	if (bus_armed)
		siglongjmp(bus_jmp, 1);
	signal(SIGBUS, SIG_DFL);
	raise(SIGBUS);
}

/*
 * Ask the process behind @fd for a snapshot; returns the request number
 * to wait for, or 0 when the request could not be made.
 */
static uint32_t request_snapshot(int fd)
{
	struct sigaction sa = { .sa_handler = bus_handler }, old;
	long page = sysconf(_SC_PAGESIZE);
	struct umcg_stats_header *h;
	uint32_t want = 0;

	h = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED)
		return 0;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, &old);
	if (!sigsetjmp(bus_jmp, 1)) {
		bus_armed = 1;
		want = __atomic_add_fetch(&h->req_seq, 1, __ATOMIC_SEQ_CST);
		syscall(SYS_futex, &h->req_seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
	} else {
		want = 0;
	}
	bus_armed = 0;
	sigaction(SIGBUS, &old, NULL);
	munmap(h, (size_t)page);
	return want ? want : 1;	/* 0 is a valid sequence: never "none" */
}

/* The header's checks; NULL when it may be believed, else why not. */
static const char *header_problem(const struct umcg_stats_header *h, off_t file_size, int pid)
{
	if (h->magic != UMCG_STATS_MAGIC)
		return "not a umcg statistics area (bad magic)";
	if (h->version != UMCG_STATS_VERSION)
		return "statistics version this umcgctl does not know";
	if (h->header_size != UMCG_STATS_HEADER_SIZE || h->core_size != UMCG_STATS_CORE_SIZE)
		return "header or core size does not match its version";
	if (h->nr_cores == 0 || h->nr_cores > UMCG_STATS_MAX_CORES)
		return "implausible number of cores";
	if (h->size != UMCG_STATS_SIZE(h->nr_cores) || (off_t)h->size != file_size)
		return "size does not match its number of cores, or the file's length";
	if ((int)h->pid != pid)
		return "published by another process ID";
	return NULL;
}

/*
 * Read process @pid's area into @p.  0; -ENOENT when @pid publishes
 * nothing (no file, or the file is stale); else -errno with *@why set.
 */
static int read_area(int pid, struct top_proc *p, const char **why)
{
	char path[96], shm[64];
	struct umcg_stats_header h;
	struct stat st, pst;
	uint32_t want;
	uint64_t deadline;
	unsigned char *buf;
	ssize_t n;
	int fd, ret;

	*why = NULL;
	snprintf(shm, sizeof(shm), UMCG_STATS_SHM_FMT, pid);
	snprintf(path, sizeof(path), UMCG_STATS_SHM_DIR "%s", shm);
	fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == EACCES)
		fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			return -ENOENT;
		*why = strerror(errno);
		return -errno;
	}
	ret = -EINVAL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		*why = "not a regular file";
		goto out;
	}
	snprintf(shm, sizeof(shm), "/proc/%d", pid);
	if (stat(shm, &pst)) {
		ret = -ENOENT;	/* no such process: stale */
		goto out;
	}
	if (st.st_uid != pst.st_uid) {
		*why = "owned by another user than the process: ignored";
		ret = -EPERM;
		goto out;
	}
	if (st.st_mode & 077) {
		*why = "readable or writable by other users: ignored";
		ret = -EPERM;
		goto out;
	}
	if (st.st_size < (off_t)UMCG_STATS_HEADER_SIZE) {
		*why = "too short for a statistics header";
		goto out;
	}
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h)) {
		*why = "short read of the header";
		goto out;
	}
	*why = header_problem(&h, st.st_size, pid);
	if (*why)
		goto out;
	if (maps_area(pid, path) != 1) {
		ret = -ENOENT;	/* the pid runs another program now: stale */
		goto out;
	}
	want = 0;
	if (h.flags & UMCG_STATS_F_LIVE)
		want = request_snapshot(fd);
	deadline = now_ns() + TOP_SNAP_WAIT_NS;
	p->fresh = false;
	while (want) {
		uint32_t seq;

		if (pread(fd, &seq, sizeof(seq), offsetof(struct umcg_stats_header, snap_seq)) !=
		    (ssize_t)sizeof(seq))
			break;
		if ((int32_t)(seq - want) >= 0) {
			p->fresh = true;
			break;
		}
		if (now_ns() > deadline)
			break;
		usleep(1000);
	}
	buf = malloc(h.size);
	if (!buf) {
		*why = "out of memory";
		ret = -ENOMEM;
		goto out;
	}
	n = pread(fd, buf, h.size, 0);
	if (n != (ssize_t)h.size ||
	    (*why = header_problem((struct umcg_stats_header *)buf, (off_t)h.size, pid))) {
		if (!*why)
			*why = "the file changed while it was read";
		free(buf);
		goto out;
	}
	free(p->buf);
	p->buf = buf;
	p->size = h.size;
	p->pid = pid;
	p->read_ns = now_ns();
	p->tasks = count_tasks(pid);
	read_comm(pid, p->comm, sizeof(p->comm));
	ret = 0;
out:
	close(fd);
	return ret;
}

/* A stale file (its process is gone): remove it if it is ours to remove. */
static void remove_stale(int pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), UMCG_STATS_SHM_DIR "/" UMCG_STATS_SHM_PREFIX "%d", pid);
	if (lstat(path, &st) || !S_ISREG(st.st_mode))
		return;
	if (st.st_uid == geteuid() || geteuid() == 0)
		unlink(path);
}

static struct top_proc *proc_slot(struct top_state *s, int pid)
{
	for (size_t i = 0; i < s->nr; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	if (s->nr == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct top_proc *n = realloc(s->procs, cap * sizeof(*n));

		if (!n)
			return NULL;
		s->procs = n;
		s->cap = cap;
	}
	memset(&s->procs[s->nr], 0, sizeof(s->procs[0]));
	s->procs[s->nr].pid = pid;
	return &s->procs[s->nr++];
}

static void proc_drop(struct top_state *s, size_t i)
{
	free(s->procs[i].buf);
	s->procs[i] = s->procs[--s->nr];
}

/* The pids of /dev/shm/umcg.<pid>, in @pids (up to @max); how many. */
static size_t list_pids(int *pids, size_t max)
{
	DIR *dir = opendir(UMCG_STATS_SHM_DIR);
	struct dirent *d;
	size_t n = 0;

	if (!dir)
		return 0;
	while ((d = readdir(dir)) && n < max) {
		const char *s = d->d_name;
		char *end;
		long v;

		if (strncmp(s, UMCG_STATS_SHM_PREFIX, strlen(UMCG_STATS_SHM_PREFIX)))
			continue;
		s += strlen(UMCG_STATS_SHM_PREFIX);
		if (!isdigit((unsigned char)*s))
			continue;
		errno = 0;
		v = strtol(s, &end, 10);
		if (*end || errno || v <= 0 || v > INT_MAX)
			continue;
		pids[n++] = (int)v;
	}
	closedir(dir);
	return n;
}

/*
 * One sample of every process into the state: previous values are kept
 * in @prev (a copy of the areas of the last sample).  0, or 1 when -p's
 * process cannot be read (printed).
 */
static int top_sample(struct top_state *s, bool quiet_errors)
{
	static int pids[4096];
	size_t n;

	for (size_t i = 0; i < s->nr; i++)
		s->procs[i].seen = false;
	if (s->only_pid) {
		pids[0] = s->only_pid;
		n = 1;
	} else {
		n = list_pids(pids, sizeof(pids) / sizeof(pids[0]));
	}
	for (size_t i = 0; i < n; i++) {
		struct top_proc tmp = { 0 }, *p;
		const char *why;
		int ret;

		p = proc_slot(s, pids[i]);
		if (!p)
			return 1;
		tmp = *p;
		ret = read_area(pids[i], &tmp, &why);
		if (ret == -ENOENT) {
			remove_stale(pids[i]);
			if (s->only_pid) {
				umcgctl_err("top", "process %d publishes no libumcg statistics "
					    "(not running, no libumcg, or $" UMCG_STATS_ENV "=0)",
					    pids[i]);
				return 1;
			}
			continue;
		}
		if (ret) {
			if (s->only_pid) {
				umcgctl_err("top", "process %d: " UMCG_STATS_SHM_DIR "/"
					    UMCG_STATS_SHM_PREFIX "%d: %s", pids[i], pids[i], why);
				return 1;
			}
			if (!quiet_errors)
				umcgctl_err("top", UMCG_STATS_SHM_DIR "/" UMCG_STATS_SHM_PREFIX
					    "%d: %s", pids[i], why);
			continue;
		}
		*p = tmp;
		p->seen = true;
	}
	for (size_t i = 0; i < s->nr;) {
		if (!s->procs[i].seen)
			proc_drop(s, i);
		else
			i++;
	}
	return 0;
}

/* The upper bound of the bucket that holds quantile @q of @h's @n samples. */
static uint64_t hist_quantile(const uint64_t *h, uint64_t n, double q)
{
	uint64_t want = (uint64_t)(q * (double)n + 0.999999), sum = 0;

	if (!want)
		want = 1;
	for (unsigned int b = 0; b < UMCG_STATS_HIST_BUCKETS; b++) {
		sum += h[b];
		if (sum >= want)
			return 1ULL << (b + 1);
	}
	return 1ULL << UMCG_STATS_HIST_BUCKETS;
}

static void fmt_ns(char *buf, size_t len, uint64_t ns)
{
	if (ns < 10000)
		snprintf(buf, len, "%lluns", (unsigned long long)ns);
	else if (ns < 10000000)
		snprintf(buf, len, "%.1fus", (double)ns / 1e3);
	else if (ns < 10000000000ULL)
		snprintf(buf, len, "%.1fms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.1fs", (double)ns / 1e9);
}

/* What one process did since its previous sample. */
struct top_view {
	const struct umcg_stats_header *h;
	double dt;			/* seconds; 0 without a previous sample */
	double switches, blocks, yields, parks, preempts, steals, handoffs;
	uint64_t lat_n, p50, p99;
	unsigned int unmanaged;
	double *core_rate;		/* switches/s of each core, or NULL */
};

static double rate(uint64_t now, uint64_t then, double dt)
{
	return dt > 0 && now >= then ? (double)(now - then) / dt : 0;
}

static void view_of(const struct top_proc *p, const struct top_proc *prev, struct top_view *v)
{
	const struct umcg_stats_header *h = hdr_of(p), *ph = NULL;
	uint64_t hist[UMCG_STATS_HIST_BUCKETS] = { 0 };
	unsigned int alive;

	memset(v, 0, sizeof(*v));
	v->h = h;
	v->core_rate = calloc(h->nr_cores, sizeof(*v->core_rate));
	if (prev && prev->buf && prev->size == p->size && p->read_ns > prev->read_ns) {
		ph = hdr_of(prev);
		v->dt = (double)(p->read_ns - prev->read_ns) / 1e9;
	}
	for (unsigned int i = 0; i < h->nr_cores; i++) {
		const struct umcg_stats_core *c = core_of(p, i), *pc = ph ? core_of(prev, i) : NULL;

		if (pc) {
			if (v->core_rate)
				v->core_rate[i] = rate(c->switches_total, pc->switches_total, v->dt);
			v->switches += rate(c->switches_total, pc->switches_total, v->dt);
			v->yields += rate(c->yields_total, pc->yields_total, v->dt);
			v->parks += rate(c->parks_total, pc->parks_total, v->dt);
			v->blocks += rate(c->blocks_total, pc->blocks_total, v->dt);
			v->preempts += rate(c->preempts_total, pc->preempts_total, v->dt);
			v->steals += rate(c->steals_total, pc->steals_total, v->dt);
			v->handoffs += rate(c->handoffs_total, pc->handoffs_total, v->dt);
		}
		for (unsigned int b = 0; b < UMCG_STATS_HIST_BUCKETS; b++) {
			uint64_t d = c->hist[b] - (pc && c->hist[b] >= pc->hist[b] ? pc->hist[b] : 0);

			hist[b] += d;
			v->lat_n += d;
		}
	}
	if (v->lat_n) {
		v->p50 = hist_quantile(hist, v->lat_n, 0.50);
		v->p99 = hist_quantile(hist, v->lat_n, 0.99);
	}
	alive = h->workers - h->state[UMCG_STATS_ST_DONE];
	v->unmanaged = p->tasks > alive + h->own_threads ? p->tasks - alive - h->own_threads : 0;
}

static const char *const state_names[UMCG_STATS_NR_ST] = {
	[UMCG_STATS_ST_NEW] = "new",
	[UMCG_STATS_ST_RUNNABLE] = "runnable",
	[UMCG_STATS_ST_WOKEN] = "woken",
	[UMCG_STATS_ST_RUNNING] = "running",
	[UMCG_STATS_ST_BLOCKED] = "blocked",
	[UMCG_STATS_ST_PARKED] = "parked",
	[UMCG_STATS_ST_DONE] = "done",
};

/* The display order. */
static const unsigned int state_order[] = {
	UMCG_STATS_ST_RUNNING, UMCG_STATS_ST_RUNNABLE, UMCG_STATS_ST_WOKEN,
	UMCG_STATS_ST_BLOCKED, UMCG_STATS_ST_PARKED, UMCG_STATS_ST_NEW, UMCG_STATS_ST_DONE,
};

/* A NUL-padded fixed field as a printable string. */
static void field_str(char *out, size_t len, const char *in, size_t inlen)
{
	size_t i;

	for (i = 0; i < inlen && i + 1 < len && in[i]; i++)
		out[i] = isprint((unsigned char)in[i]) ? in[i] : '?';
	out[i] = '\0';
}

static void print_text(FILE *f, const struct top_proc *p, const struct top_view *v, const char *eol)
{
	const struct umcg_stats_header *h = v->h;
	char backend[17], policy[17], a[32], b[32];

	field_str(backend, sizeof(backend), h->backend, sizeof(h->backend));
	field_str(policy, sizeof(policy), h->policy, sizeof(h->policy));
	fprintf(f, "PID %d %s  backend %s  policy %s  cores %u  up %.1f s%s%s", p->pid, p->comm,
		backend, policy, h->nr_cores,
		p->read_ns > h->start_ns ? (double)(p->read_ns - h->start_ns) / 1e9 : 0.0,
		p->fresh ? "" : "  (no fresh snapshot)", eol);
	fprintf(f, "  workers %u:", h->workers);
	for (size_t i = 0; i < sizeof(state_order) / sizeof(state_order[0]); i++)
		fprintf(f, " %s %u", state_names[state_order[i]], h->state[state_order[i]]);
	fprintf(f, "  unmanaged %u%s", v->unmanaged, eol);
	if (v->dt > 0)
		fprintf(f, "  switches/s %.1f  blocks/s %.1f  yields/s %.1f  parks/s %.1f  "
			"preempts/s %.1f  handoffs/s %.1f%s", v->switches, v->blocks, v->yields,
			v->parks, v->preempts, v->handoffs, eol);
	else
		fprintf(f, "  switches/s -  blocks/s -  (rates from the next sample)%s", eol);
	if (v->lat_n) {
		fmt_ns(a, sizeof(a), v->p50);
		fmt_ns(b, sizeof(b), v->p99);
		fprintf(f, "  hand-off latency p50 <= %s  p99 <= %s  (%llu samples)%s", a, b,
			(unsigned long long)v->lat_n, eol);
	} else {
		fprintf(f, "  hand-off latency -  (no samples)%s", eol);
	}
	fprintf(f, "  %4s %4s %11s  %s%s", "core", "cpu", "switches/s", "running", eol);
	for (unsigned int i = 0; i < h->nr_cores; i++) {
		const struct umcg_stats_core *c = core_of(p, i);
		char name[17];

		field_str(name, sizeof(name), c->cur_name, sizeof(c->cur_name));
		fprintf(f, "  %4u %4u %11.1f  ", i, c->cpu, v->core_rate ? v->core_rate[i] : 0.0);
		if (c->cur_tid)
			fprintf(f, "%u %s%s", c->cur_tid, name[0] ? name : "-", eol);
		else
			fprintf(f, "idle%s", eol);
	}
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void print_json(FILE *f, const struct top_proc *p, const struct top_view *v)
{
	const struct umcg_stats_header *h = v->h;
	uint64_t blocks = 0, preempts = 0, steals = 0, handoffs = 0;
	char backend[17], policy[17], name[17];

	field_str(backend, sizeof(backend), h->backend, sizeof(h->backend));
	field_str(policy, sizeof(policy), h->policy, sizeof(h->policy));
	fprintf(f, "{\"pid\":%d,\"comm\":", p->pid);
	json_str(f, p->comm);
	fprintf(f, ",\"backend\":");
	json_str(f, backend);
	fprintf(f, ",\"policy\":");
	json_str(f, policy);
	fprintf(f, ",\"nr_cores\":%u,\"uptime_s\":%.3f,\"fresh\":%s,\"workers\":%u,\"state\":{",
		h->nr_cores,
		p->read_ns > h->start_ns ? (double)(p->read_ns - h->start_ns) / 1e9 : 0.0,
		p->fresh ? "true" : "false", h->workers);
	for (size_t i = 0; i < sizeof(state_order) / sizeof(state_order[0]); i++)
		fprintf(f, "%s\"%s\":%u", i ? "," : "", state_names[state_order[i]],
			h->state[state_order[i]]);
	fprintf(f, "},\"unmanaged\":%u,\"own_threads\":%u,\"threads\":%u,\"live\":%llu",
		v->unmanaged, h->own_threads, p->tasks, (unsigned long long)h->live);
	if (v->dt > 0)
		fprintf(f, ",\"interval_s\":%.3f,\"rates\":{\"switches\":%.1f,\"blocks\":%.1f,"
			"\"yields\":%.1f,\"parks\":%.1f,\"preempts\":%.1f,\"steals\":%.1f,"
			"\"handoffs\":%.1f}", v->dt, v->switches, v->blocks, v->yields, v->parks,
			v->preempts, v->steals, v->handoffs);
	else
		fprintf(f, ",\"interval_s\":0,\"rates\":null");
	/* The cores' own counters, not the header's sums of the last snapshot. */
	for (unsigned int i = 0; i < h->nr_cores; i++) {
		const struct umcg_stats_core *c = core_of(p, i);

		blocks += c->blocks_total;
		preempts += c->preempts_total;
		steals += c->steals_total;
		handoffs += c->handoffs_total;
	}
	fprintf(f, ",\"totals\":{\"spawned\":%llu,\"exited\":%llu,\"blocks\":%llu,"
		"\"preempts\":%llu,\"steals\":%llu,\"handoffs\":%llu,\"refused\":%llu,"
		"\"policy_errors\":%llu}",
		(unsigned long long)h->spawned_total, (unsigned long long)h->exited_total,
		(unsigned long long)blocks, (unsigned long long)preempts,
		(unsigned long long)steals, (unsigned long long)handoffs,
		(unsigned long long)h->refused_total, (unsigned long long)h->policy_errors_total);
	fprintf(f, ",\"handoff_ns\":{\"samples\":%llu", (unsigned long long)v->lat_n);
	if (v->lat_n)
		fprintf(f, ",\"p50\":%llu,\"p99\":%llu", (unsigned long long)v->p50,
			(unsigned long long)v->p99);
	fprintf(f, "},\"cores\":[");
	for (unsigned int i = 0; i < h->nr_cores; i++) {
		const struct umcg_stats_core *c = core_of(p, i);

		field_str(name, sizeof(name), c->cur_name, sizeof(c->cur_name));
		fprintf(f, "%s{\"core\":%u,\"cpu\":%u,\"tid\":%u,\"name\":", i ? "," : "", i,
			c->cpu, c->cur_tid);
		json_str(f, name);
		fprintf(f, ",\"switches_total\":%llu,\"switches_per_s\":%.1f}",
			(unsigned long long)c->switches_total,
			v->core_rate ? v->core_rate[i] : 0.0);
	}
	fprintf(f, "]}");
}

/* One frame: every process, against the previous sample @prev. */
static void print_frame(FILE *f, const struct top_state *s, const struct top_state *prev,
			bool json, bool screen, double delay)
{
	const char *eol = screen ? "\033[K\r\n" : "\n";
	char when[32];
	time_t t = time(NULL);
	struct tm tm;

	localtime_r(&t, &tm);
	strftime(when, sizeof(when), "%H:%M:%S", &tm);
	if (json) {
		fprintf(f, "{\"time\":%lld,\"processes\":[", (long long)t);
	} else {
		if (screen)
			fputs("\033[H", f);
		fprintf(f, "umcgctl top - %s  %zu libumcg process%s  every %.1f s%s%s", when,
			s->nr, s->nr == 1 ? "" : "es", delay, screen ? "  (q quits)" : "", eol);
		if (!s->nr)
			fprintf(f, "no libumcg process publishes statistics%s", eol);
	}
	for (size_t i = 0; i < s->nr; i++) {
		const struct top_proc *p = &s->procs[i], *pp = NULL;
		struct top_view v;

		for (size_t j = 0; prev && j < prev->nr; j++)
			if (prev->procs[j].pid == p->pid)
				pp = &prev->procs[j];
		view_of(p, pp, &v);
		if (json) {
			if (i)
				fputc(',', f);
			print_json(f, p, &v);
		} else {
			fputs(eol, f);
			print_text(f, p, &v, eol);
		}
		free(v.core_rate);
	}
	if (json)
		fputs("]}\n", f);
	else if (screen)
		fputs("\033[J", f);
	else
		fputs("\n", f);
	fflush(f);
}

/* Copy of @s's areas, for the next frame's differences. */
static void state_copy(struct top_state *dst, const struct top_state *src)
{
	for (size_t i = 0; i < dst->nr; i++)
		free(dst->procs[i].buf);
	dst->nr = 0;
	for (size_t i = 0; i < src->nr; i++) {
		struct top_proc *p = proc_slot(dst, src->procs[i].pid);

		if (!p)
			return;
		*p = src->procs[i];
		p->buf = malloc(src->procs[i].size);
		if (!p->buf) {
			dst->nr--;
			return;
		}
		memcpy(p->buf, src->procs[i].buf, src->procs[i].size);
	}
}

static struct termios saved_tio;
static bool tio_saved;

static void screen_restore(void)
{
	if (tio_saved)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
	tio_saved = false;
	fputs("\033[?25h\n", stdout);
	fflush(stdout);
}

static volatile sig_atomic_t top_quit;

static void quit_handler(int sig)
{
	(void)sig;
	top_quit = 1;
}

/* Wait @ms for a key; true when the user asked to quit. */
static bool wait_key(int ms, bool *stdin_ok)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000ULL;

	while (!top_quit) {
		struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
		uint64_t now = now_ns();
		int left = now >= end ? 0 : (int)((end - now) / 1000000ULL);
		char c;

		if (!left)
			return false;
		if (!*stdin_ok) {
			usleep((useconds_t)left * 1000);
			continue;
		}
		if (poll(&pfd, 1, left) <= 0)
			continue;
		if (read(STDIN_FILENO, &c, 1) != 1) {
			*stdin_ok = false;	/* end of input: keys no more */
			continue;
		}
		if (c == 'q' || c == 'Q' || c == 3 /* ^C in raw mode */)
			return true;
	}
	return true;
}

int umcgctl_top(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid",	required_argument,	NULL, 'p' },
		{ "delay",	required_argument,	NULL, 'd' },
		{ "count",	required_argument,	NULL, 'n' },
		{ "batch",	no_argument,		NULL, 'b' },
		{ "json",	no_argument,		NULL, 'j' },
		{ "help",	no_argument,		NULL, 'h' },
		{ 0 }
	};
	struct top_state cur = { 0 }, prev = { 0 };
	bool batch = false, json = false, stdin_ok = true;
	unsigned long long count = 0;
	double delay = 1.0;
	char *end;
	int c, ret = UMCGCTL_OK;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:p:d:n:bh", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': {
			unsigned long v;

			errno = 0;
			v = strtoul(optarg, &end, 10);
			if (!isdigit((unsigned char)optarg[0]) || *end || errno || !v || v > INT_MAX) {
				umcgctl_err("top", "bad --pid '%s': expected a process ID", optarg);
				return UMCGCTL_USAGE;
			}
			cur.only_pid = (int)v;
			break;
		}
		case 'd':
			errno = 0;
			delay = strtod(optarg, &end);
			if (!optarg[0] || *end || errno || !(delay >= 0.1 && delay <= 3600)) {
				umcgctl_err("top", "bad --delay '%s': expected seconds, 0.1 to 3600",
					    optarg);
				return UMCGCTL_USAGE;
			}
			break;
		case 'n':
			errno = 0;
			count = strtoull(optarg, &end, 10);
			if (!isdigit((unsigned char)optarg[0]) || *end || errno || !count ||
			    count > 1000000) {
				umcgctl_err("top", "bad --count '%s': expected 1 to 1000000", optarg);
				return UMCGCTL_USAGE;
			}
			break;
		case 'b':
			batch = true;
			break;
		case 'j':
			batch = json = true;
			break;
		case 'h':
			fputs(top_usage, stdout);
			return UMCGCTL_OK;
		default:
			return umcgctl_bad_option("top", argv, c);
		}
	}
	if (optind < argc) {
		umcgctl_err("top", "unexpected argument '%s' (see \"umcgctl top --help\")",
			    argv[optind]);
		return UMCGCTL_USAGE;
	}
	prev.only_pid = cur.only_pid;
	if (batch && !count)
		count = 1;

	signal(SIGINT, quit_handler);
	signal(SIGTERM, quit_handler);
	signal(SIGPIPE, SIG_IGN);
	if (!batch) {
		struct termios tio;

		if (isatty(STDIN_FILENO) && !tcgetattr(STDIN_FILENO, &saved_tio)) {
			tio = saved_tio;
			tio.c_lflag &= ~(ICANON | ECHO | ISIG);
			tio.c_cc[VMIN] = 1;
			tio.c_cc[VTIME] = 0;
			tio_saved = !tcsetattr(STDIN_FILENO, TCSANOW, &tio);
		}
		fputs("\033[?25l\033[H\033[2J", stdout);
	}

	/* The first sample is the base of the first frame's rates. */
	if (top_sample(&cur, !batch)) {
		ret = UMCGCTL_FAILED;
		goto out;
	}
	if (!batch)
		print_frame(stdout, &cur, NULL, false, true, delay);
	for (unsigned long long i = 0; !count || i < count; i++) {
		state_copy(&prev, &cur);
		if (batch) {
			struct timespec ts = { .tv_sec = (time_t)delay,
					       .tv_nsec = (long)((delay - (double)(time_t)delay) * 1e9) };

			while (nanosleep(&ts, &ts) && errno == EINTR && !top_quit)
				;
			if (top_quit)
				break;
		} else if (wait_key((int)(delay * 1000), &stdin_ok)) {
			break;
		}
		/* Bad areas were reported with the first sample. */
		if (top_sample(&cur, true)) {
			ret = UMCGCTL_FAILED;
			break;
		}
		print_frame(stdout, &cur, &prev, json, !batch, delay);
	}
out:
	if (!batch)
		screen_restore();
	for (size_t i = 0; i < cur.nr; i++)
		free(cur.procs[i].buf);
	for (size_t i = 0; i < prev.nr; i++)
		free(prev.procs[i].buf);
	free(cur.procs);
	free(prev.procs);
	return ret;
}
