// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * stats.c - the statistics area (uapi/umcg_stats.h): where the group's
 * counters live, published for "umcgctl top".
 *
 * The area is the one home of the counters: g->stats and each core's
 * c->stats point into it, and the runtime adds to them there with relaxed
 * atomics.  Published, it is a shared-memory object of its own, made
 * O_EXCL with mode 0600 (only this user and root may open it: an object
 * someone else made first is never used, the group then keeps its
 * counters in anonymous memory), unlinked at umcg_fini() and at exit.  A
 * forked child keeps a private copy (umcg_stats_atfork_child()).
 *
 * What is not a counter — how many workers are in each state, who owns
 * each core — is read from the runtime's own data only when a reader
 * asks: the stats thread sleeps on the area's request word (a shared
 * futex) and, woken, walks the group's threads as umcg_dump() does.  So
 * nothing is counted twice and a switch pays only its counters and the
 * hand-off sample below.
 *
 * Hand-off latency: a core that loses its owner records when
 * (umcg_stats_vacated()); a thread handed to the policy records when
 * (t->ready_ns); the thread that gets the core next, once back in its
 * wait for a core with RUNNING read, takes the later of the two from now
 * and counts it in the core's log2 histogram.  Two monotonic clock reads
 * (vDSO) per switch, but only once a reader asked for a snapshot (the
 * area's req_seq is not 0, umcg_stats_timing()): until then no switch
 * reads the clock for the statistics.
 *
 * Lock order: group->threads_lock, then core->lock (the snapshot).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend.h"
#include "internal.h"

struct umcg_stats_area {
	struct umcg_stats_header *hdr;
	size_t size;
	bool published;			/* a named object, not anonymous memory */
	bool thread_started;
	_Atomic bool stop;
	pthread_t thread;
	char name[32];
	struct umcg_thread **owners;	/* the cores' owners: umcg_stats_snapshot(),
					 * on the area's thread only */
};

/*
 * The name to unlink at exit, if umcg_fini() did not; only by the process
 * that made it (a forked child inherits the variables, not the name).
 */
static char umcg_stats_exit_name[32];
static pid_t umcg_stats_exit_pid;
static pthread_once_t umcg_stats_exit_once = PTHREAD_ONCE_INIT;

static void umcg_stats_atexit(void)
{
	if (umcg_stats_exit_name[0] && umcg_stats_exit_pid == getpid())
		shm_unlink(umcg_stats_exit_name);
}

/* The published area, for a forked child to make its own copy of. */
static struct umcg_stats_area *_Atomic umcg_stats_current;

/*
 * A forked child must not count into its parent's published counters, nor
 * answer its readers: it gets a private copy at the same address (the
 * group's pointers stay valid) and no stats thread.
 */
static void umcg_stats_atfork_child(void)
{
	struct umcg_stats_area *a = atomic_load(&umcg_stats_current);
	void *copy;

	if (!a || !a->published)
		return;
	copy = malloc(a->size);
	if (copy)
		memcpy(copy, a->hdr, a->size);
	if (mmap(a->hdr, a->size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED && copy)
		memcpy(a->hdr, copy, a->size);
	free(copy);
	a->published = false;
	a->thread_started = false;	/* the parent's: not in this process */
}

static void umcg_stats_atexit_register(void)
{
	atexit(umcg_stats_atexit);
	pthread_atfork(NULL, NULL, umcg_stats_atfork_child);
}

static struct umcg_stats_core *umcg_stats_core_at(struct umcg_stats_header *h, unsigned int i)
{
	return (struct umcg_stats_core *)((char *)h + UMCG_STATS_HEADER_SIZE +
					  (size_t)i * UMCG_STATS_CORE_SIZE);
}

/* $UMCG_STATS is "0": keep the area private. */
static bool umcg_stats_wanted(void)
{
	const char *s = getenv(UMCG_STATS_ENV);

	return !s || strcmp(s, "0");
}

/* A fresh named object of @size bytes, mapped; NULL when there is none. */
static void *umcg_stats_map_named(struct umcg_stats_area *a, size_t size)
{
	void *p = MAP_FAILED;
	int fd;

	snprintf(a->name, sizeof(a->name), UMCG_STATS_SHM_FMT, (int)getpid());
	fd = shm_open(a->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) {
		/*
		 * Left by a dead process that had our pid.  Only its owner
		 * (or root) can unlink it (/dev/shm is sticky): one of
		 * another user's stays, and is not used.
		 */
		if (!shm_unlink(a->name))
			fd = shm_open(a->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	}
	if (fd < 0)
		return NULL;
	if (!ftruncate(fd, (off_t)size))
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		shm_unlink(a->name);
		return NULL;
	}
	return p;
}

int umcg_stats_area_create(struct umcg_group *g, const char *backend, const char *policy)
{
	struct umcg_stats_area *a = calloc(1, sizeof(*a));
	struct umcg_stats_header *h = NULL;
	size_t size = UMCG_STATS_SIZE(g->nr_cores);

	if (!a)
		return -ENOMEM;
	a->owners = calloc(g->nr_cores, sizeof(*a->owners));
	if (!a->owners) {
		free(a);
		return -ENOMEM;
	}
	if (umcg_stats_wanted()) {
		h = umcg_stats_map_named(a, size);
		a->published = h != NULL;
	}
	if (!h) {
		h = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (h == MAP_FAILED) {
			free(a->owners);
			free(a);
			return -ENOMEM;
		}
	}
	a->hdr = h;
	a->size = size;
	/* A new object reads zero: fill in all but the magic, then it. */
	h->version = UMCG_STATS_VERSION;
	h->header_size = UMCG_STATS_HEADER_SIZE;
	h->core_size = UMCG_STATS_CORE_SIZE;
	h->nr_cores = g->nr_cores;
	h->size = size;
	h->pid = (__u32)getpid();
	h->flags = UMCG_STATS_F_LIVE;
	h->start_ns = umcg_now_ns();
	strncpy(h->backend, backend, sizeof(h->backend) - 1);
	strncpy(h->policy, policy, sizeof(h->policy) - 1);
	g->stats = (struct umcg_group_counters *)&h->spawned_total;
	for (unsigned int i = 0; i < g->nr_cores; i++) {
		struct umcg_stats_core *sc = umcg_stats_core_at(h, i);

		sc->cpu = (__u32)g->cores[i].cpu;
		g->cores[i].stats = (struct umcg_core_counters *)&sc->switches_total;
	}
	__atomic_store_n(&h->magic, UMCG_STATS_MAGIC, __ATOMIC_RELEASE);
	g->stats_area = a;
	if (a->published) {
		pthread_once(&umcg_stats_exit_once, umcg_stats_atexit_register);
		memcpy(umcg_stats_exit_name, a->name, sizeof(umcg_stats_exit_name));
		umcg_stats_exit_pid = getpid();
		atomic_store(&umcg_stats_current, a);
	}
	return 0;
}

static long umcg_stats_futex(_Atomic uint32_t *word, int op, uint32_t val)
{
	/* Not FUTEX_PRIVATE_FLAG: the waker is another process. */
	return syscall(SYS_futex, word, op, val, NULL, NULL, 0);
}

/*
 * Every worker's state and every core's owner, into the area.  The threads
 * are read one by one while they run, so a worker that leaves a core and
 * the one that takes it could both read RUNNING; "running" therefore counts
 * only RUNNING workers that own a core in the cores' snapshot, taken first,
 * and a RUNNING worker that owns none there is on its way on or off a core:
 * it counts as runnable.  So running <= cores in every sample, it agrees
 * with the cores' owners, and each worker counts once.
 */
static void umcg_stats_snapshot(struct umcg_group *g, struct umcg_stats_header *h)
{
	uint32_t count[UMCG_STATS_NR_ST] = { 0 }, workers = 0;
	struct umcg_stats sums;
	struct umcg_thread **owner = g->stats_area->owners;
	struct cds_list_head *pos;

	pthread_mutex_lock(&g->threads_lock);
	for (unsigned int i = 0; i < g->nr_cores; i++) {
		struct umcg_core *c = &g->cores[i];
		struct umcg_stats_core *sc = umcg_stats_core_at(h, i);
		char name[16] = "";
		uint32_t tid = 0;

		pthread_mutex_lock(&c->lock);
		owner[i] = c->current;
		if (c->current) {
			tid = (uint32_t)c->current->tid;
			memcpy(name, c->current->name, sizeof(name) - 1);
		}
		pthread_mutex_unlock(&c->lock);
		__atomic_store_n(&sc->cur_tid, tid, __ATOMIC_RELAXED);
		memcpy(sc->cur_name, name, sizeof(sc->cur_name));
	}
	cds_list_for_each(pos, &g->threads) {
		struct umcg_thread *t = cds_list_entry(pos, struct umcg_thread, all_node);
		unsigned int st;

		switch (umcg_state_of(umcg_thread_load_state(t))) {
		case UMCG_TASK_NEW:
			st = UMCG_STATS_ST_NEW;
			break;
		case UMCG_TASK_RUNNING:
			st = UMCG_STATS_ST_RUNNABLE;
			for (unsigned int i = 0; i < g->nr_cores; i++) {
				if (owner[i] == t) {
					owner[i] = NULL;	/* one worker per core */
					st = UMCG_STATS_ST_RUNNING;
					break;
				}
			}
			break;
		case UMCG_TASK_RUNNABLE:
			st = (atomic_load_explicit(&t->ready_why, memory_order_relaxed) &
			      UMCG_ENQ_WAKEUP) || umcg_kernel_made_runnable(t) ?
			     UMCG_STATS_ST_WOKEN : UMCG_STATS_ST_RUNNABLE;
			break;
		case UMCG_TASK_BLOCKED:
			st = UMCG_STATS_ST_BLOCKED;
			break;
		case UMCG_TASK_PARKED:
			st = UMCG_STATS_ST_PARKED;
			break;
		default:
			st = UMCG_STATS_ST_DONE;
			break;
		}
		count[st]++;
		workers++;
	}
	pthread_mutex_unlock(&g->threads_lock);
	memcpy(h->state, count, sizeof(h->state));
	h->workers = workers;
	umcg_stats_core_sums(g, &sums);
	atomic_store_explicit(&g->stats->blocks, sums.blocks, memory_order_relaxed);
	atomic_store_explicit(&g->stats->preempts, sums.preempts, memory_order_relaxed);
	atomic_store_explicit(&g->stats->steals, sums.steals, memory_order_relaxed);
	atomic_store_explicit(&g->stats->handoffs, sums.handoffs, memory_order_relaxed);
	h->snap_ns = umcg_now_ns();
}

void umcg_stats_core_sums(struct umcg_group *g, struct umcg_stats *st)
{
	st->switches = st->yields = st->parks = 0;
	st->blocks = st->preempts = st->steals = st->handoffs = 0;
	for (unsigned int i = 0; i < g->nr_cores; i++) {
		struct umcg_core_counters *cs = g->cores[i].stats;

		st->switches += atomic_load_explicit(&cs->switches, memory_order_relaxed);
		st->yields += atomic_load_explicit(&cs->yields, memory_order_relaxed);
		st->parks += atomic_load_explicit(&cs->parks, memory_order_relaxed);
		st->blocks += atomic_load_explicit(&cs->blocks, memory_order_acquire);
		st->preempts += atomic_load_explicit(&cs->preempts, memory_order_acquire);
		st->steals += atomic_load_explicit(&cs->steals, memory_order_relaxed);
		st->handoffs += atomic_load_explicit(&cs->handoffs, memory_order_relaxed);
	}
}

static void *umcg_stats_main(void *arg)
{
	struct umcg_group *g = arg;
	struct umcg_stats_area *a = g->stats_area;
	struct umcg_stats_header *h = a->hdr;
	_Atomic uint32_t *req = (_Atomic uint32_t *)&h->req_seq;
	uint32_t served = atomic_load(req);

	/* The snapshot a reader finds before it ever asks. */
	umcg_stats_snapshot(g, h);
	__atomic_store_n(&h->snap_seq, served, __ATOMIC_RELEASE);
	for (;;) {
		uint32_t want = atomic_load(req);

		if (atomic_load(&a->stop))
			break;
		if (want != served) {
			umcg_stats_snapshot(g, h);
			__atomic_store_n(&h->snap_seq, want, __ATOMIC_RELEASE);
			served = want;
			continue;
		}
		umcg_stats_futex(req, FUTEX_WAIT, want);
	}
	return NULL;
}

int umcg_stats_area_start(struct umcg_group *g)
{
	struct umcg_stats_area *a = g->stats_area;
	int ret;

	if (!a->published)
		return 0;
	ret = umcg_own_thread_create(&a->thread, umcg_stats_main, g);
	if (ret)
		return ret;
	a->thread_started = true;
	pthread_setname_np(a->thread, "umcg-stats");
	return 0;
}

void umcg_stats_area_unpublish(struct umcg_group *g)
{
	struct umcg_stats_area *a = g->stats_area;
	struct umcg_stats_header *h = a->hdr;

	__atomic_fetch_and(&h->flags, ~UMCG_STATS_F_LIVE, __ATOMIC_RELAXED);
	if (a->thread_started) {
		atomic_store(&a->stop, true);
		__atomic_fetch_add(&h->req_seq, 1, __ATOMIC_SEQ_CST);
		umcg_stats_futex((_Atomic uint32_t *)&h->req_seq, FUTEX_WAKE, INT_MAX);
		pthread_join(a->thread, NULL);
		a->thread_started = false;
	}
	if (a->published) {
		if (umcg_stats_exit_pid == getpid())
			shm_unlink(a->name);
		umcg_stats_exit_name[0] = '\0';
		a->published = false;
	}
	atomic_compare_exchange_strong(&umcg_stats_current, &a, NULL);
}

void umcg_stats_area_destroy(struct umcg_group *g)
{
	struct umcg_stats_area *a = g->stats_area;

	if (!a)
		return;
	umcg_stats_area_unpublish(g);
	munmap(a->hdr, a->size);
	free(a->owners);
	free(a);
	g->stats_area = NULL;
}

void umcg_stats_own_thread(struct umcg_group *g)
{
	if (g && g->stats_area)
		__atomic_fetch_add(&g->stats_area->hdr->own_threads, 1, __ATOMIC_RELAXED);
}

bool umcg_stats_timing(const struct umcg_group *g)
{
	const struct umcg_stats_area *a = g->stats_area;

	return a && __atomic_load_n(&a->hdr->req_seq, __ATOMIC_RELAXED);
}

void umcg_stats_vacated(struct umcg_core *c, uint64_t ns)
{
	uint64_t now;

	if (!umcg_stats_timing(c->group))
		return;
	now = umcg_now_ns();

	/* The kernel's block time, if it is one of the last second's. */
	if (!ns || ns > now || now - ns > 1000000000ULL)
		ns = now;
	atomic_store_explicit(&c->stats->vacated_ns, ns, memory_order_relaxed);
}

void umcg_stats_filled(struct umcg_core *c)
{
	if (atomic_load_explicit(&c->stats->vacated_ns, memory_order_relaxed))
		atomic_store_explicit(&c->stats->vacated_ns, 0, memory_order_relaxed);
}

void umcg_stats_handoff_done(struct umcg_thread *self)
{
	struct umcg_group *g = self->group;
	int idx = atomic_load_explicit(&self->core, memory_order_relaxed);
	struct umcg_core_counters *cc;
	uint64_t from, ready, now, d;
	unsigned int b;

	if (!g || idx < 0 || (unsigned int)idx >= g->nr_cores)
		return;
	cc = g->cores[idx].stats;
	if (!atomic_load_explicit(&cc->vacated_ns, memory_order_relaxed))
		return;
	from = atomic_exchange_explicit(&cc->vacated_ns, 0, memory_order_relaxed);
	if (!from)
		return;
	ready = atomic_load_explicit(&self->ready_ns, memory_order_relaxed);
	if (ready > from)
		from = ready;
	now = umcg_now_ns();
	d = now > from ? now - from : 0;
	b = d ? 63 - (unsigned int)__builtin_clzll(d) : 0;
	if (b >= UMCG_STATS_HIST_BUCKETS)
		b = UMCG_STATS_HIST_BUCKETS - 1;
	atomic_fetch_add_explicit(&cc->hist[b], 1, memory_order_relaxed);
}
