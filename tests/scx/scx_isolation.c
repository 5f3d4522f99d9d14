// SPDX-License-Identifier: GPL-2.0
/*
 * Description: isolation of the umcg sched_ext scheduler (bpf/umcg.bpf.c
 * with the enforcer, bpf/umcg_enforce.bpf.h) between processes.
 *
 * plain_process_keeps_fair_class: while a umcg process (a forked child
 * whose server and worker registered and are SCHED_EXT) runs, a plain
 * process with more CPU-bound threads than CPUs, pinned to the same CPUs,
 * keeps SCHED_OTHER for every thread and every one of its threads makes
 * progress; the scheduler stays loaded.
 *
 * hostile_garbage: a hostile process runs "umcg_register" and "umcg_pick"
 * with garbage (random bytes, wrong context sizes, a bad pointer, unknown
 * flags, reserved fields, out-of-range CPUs, tids of another umcg
 * process's server and workers, random tids), before and after it
 * registers threads of its own, and each call fails with exactly the
 * documented error; so do, where the scheduler has them, "umcg_pick" with
 * UMCG_SCX_PICK_WOKEN and the victim's seq, "umcg_unregister" with garbage
 * and "umcg_poke" of the victim's CPU.  It cannot update the frozen shared map (-EPERM), map
 * it writable (-EPERM), make a read-only mapping writable (-EACCES) or
 * write it through /proc/self/mem.  A victim umcg process meanwhile keeps
 * its worker blocking and waking (and being picked) in a loop: it makes
 * progress, every published slot and event bitmap not the hostile's own
 * is unchanged, and a worker of the victim held RUNNABLE cannot be picked
 * by the hostile: it stays held until the scheduler releases it.  The
 * scheduler is still loaded afterwards (sysfs state "enabled", ops
 * "umcg").
 *
 * exec_of_registered_thread: a registered thread that is not the leader
 * calls execve(), so it takes the leader's tid and the leader (registered
 * too) gets its old one; both exit.  The scheduler must not take this for
 * a corrupt slot and eject itself for every process.
 *
 * Skips on kernels without sched_ext and when the scheduler cannot be
 * loaded.  Needs the machine's sched_ext to itself and at least 2 CPUs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "kselftest_harness.h"
#include "scx_loader.h"
#include "scx_test.h"
#include <uapi/umcg.h>
#include <uapi/umcg_scx.h>


/* Generous: TCG is slow. */
#define WAIT_MS		20000
#define SERVER_CPU	1
#define HOSTILE_CPU	0
/* Plain CPU-bound threads per CPU of the plain process. */
#define PLAIN_PER_CPU	3
#define MAX_PLAIN	(PLAIN_PER_CPU * 2)
#define MAX_HOSTILE	4
/* Random garbage calls per program. */
#define NR_GARBAGE	200

static bool timed_out(long long t0, long long ms)
{
	return scx_now_ns() - t0 > ms * 1000000LL;
}

/* The check scx_loader and umcgctl make: sysfs says ours is enabled. */
static bool scheduler_loaded(char *why, size_t len)
{
	char state[32] = "", ops[64] = "";

	umcg_scx_sysfs_read("state", state, sizeof(state));
	umcg_scx_sysfs_read("root/ops", ops, sizeof(ops));
	snprintf(why, len, "state \"%s\", ops \"%s\"", state, ops);
	return !strcmp(state, "enabled") && !strcmp(ops, UMCG_SCX_OPS_NAME);
}

/*
 * Shared between the test and its forked children (MAP_SHARED anonymous):
 * the umcg process (server, worker w, in the victim also worker w2), the
 * plain process and the hostile process.
 */
struct proc_shm {
	/* umcg process */
	atomic_int	server_tid, w_tid, w2_tid;
	atomic_int	server_ret, w_ret, w2_ret;	/* 1: registered */
	atomic_int	server_slot, w_slot, w2_slot;	/* -1 until known */
	atomic_int	group;
	atomic_ulong	w_count;		/* w's loop passes */
	atomic_bool	w_spin;			/* w spins instead of sleeping */
	atomic_bool	pick_w2;		/* the server picks w2 when held */
	atomic_int	w2_reads;		/* w2 entered read() */
	atomic_int	w2_runs;		/* w2 returned from read() */
	atomic_llong	w2_woken_ns;		/* its slot's woken_ns then */
	atomic_llong	w2_ran_ns;		/* when read() returned */
	atomic_bool	stop;
	int		w2_pipe[2];

	/* plain process */
	atomic_int	plain_nr;
	atomic_int	plain_tid[MAX_PLAIN];
	atomic_ulong	plain_count[MAX_PLAIN];
	atomic_bool	plain_stop;

	/* hostile process */
	atomic_int	h_phase;		/* 1: garbage done; 2: all done */
	atomic_bool	h_go_held;		/* parent: w2 is woken, go */
	atomic_bool	h_release;		/* parent: exit now */
	atomic_int	h_nr_slots;
	atomic_int	h_slot[MAX_HOSTILE];
	atomic_int	h_group;		/* -1: none */
	atomic_int	h_calls;		/* checked calls */
	atomic_int	h_held_picks;		/* picks of the held w2 */
	atomic_int	h_fail;			/* failed checks */
	char		h_msg[512];		/* the first failure */
};

struct child_ctx {
	struct proc_shm			*p;
	int				reg_fd, pick_fd;
	int				unreg_fd, poke_fd;	/* <0: none */
	const volatile struct umcg_scx_shared *sh;
};

static __u32 slot_state(const volatile struct umcg_scx_shared *sh, int slot)
{
	if (slot < 0 || slot >= UMCG_SCX_MAX_TASKS)
		return ~0U;
	return sh->task[slot].state & UMCG_TASK_STATE_MASK;
}

/* ---- the umcg process: a server and one or two workers on SERVER_CPU ---- */

static void maybe_pick(struct child_ctx *c, int slot, int tid)
{
	struct umcg_scx_pick_args pk = { .tid = tid, .cpu = SERVER_CPU };

	if (slot >= 0 && slot_state(c->sh, slot) == UMCG_TASK_RUNNABLE)
		scx_run_prog(c->pick_fd, &pk, sizeof(pk));
}

static void *server_fn(void *arg)
{
	struct child_ctx *c = arg;
	struct proc_shm *p = c->p;
	struct umcg_scx_register_args a = {
		.flags = UMCG_REGISTER_SERVER, .cpu = SERVER_CPU,
	};
	int ret;

	ret = scx_pin_self(SERVER_CPU);
	if (!ret)
		ret = scx_set_ext(true);
	if (!ret)
		ret = scx_run_prog(c->reg_fd, &a, sizeof(a));
	if (!ret) {
		atomic_store(&p->server_slot, a.slot);
		atomic_store(&p->group, a.group);
	}
	atomic_store(&p->server_tid, scx_gettid());
	atomic_store(&p->server_ret, ret ? ret : 1);
	if (ret)
		return NULL;
	/*
	 * Held between runs; the scheduler runs it when its CPU's worker
	 * blocks, on news and on the heartbeat.  It picks its workers back
	 * as libumcg's would (w2 only when the test wants it to).
	 */
	while (!atomic_load(&p->stop)) {
		maybe_pick(c, atomic_load(&p->w_slot), atomic_load(&p->w_tid));
		if (atomic_load(&p->pick_w2))
			maybe_pick(c, atomic_load(&p->w2_slot),
				   atomic_load(&p->w2_tid));
		sched_yield();
	}
	scx_set_ext(false);
	return NULL;
}

static int register_worker(struct child_ctx *c, atomic_int *slot,
			   atomic_int *tid, atomic_int *res)
{
	struct umcg_scx_register_args a = {
		.flags = UMCG_REGISTER_WORKER,
		.server_tid = atomic_load(&c->p->server_tid),
	};
	int ret;

	ret = scx_pin_self(SERVER_CPU);
	if (!ret)
		ret = scx_set_ext(true);
	if (!ret)
		ret = scx_run_prog(c->reg_fd, &a, sizeof(a));
	if (!ret)
		atomic_store(slot, a.slot);
	atomic_store(tid, scx_gettid());
	atomic_store(res, ret ? ret : 1);
	return ret;
}

/* w: blocks (sleeps) and wakes in a loop, or spins; counts its passes. */
static void *w_fn(void *arg)
{
	struct child_ctx *c = arg;
	struct proc_shm *p = c->p;

	if (register_worker(c, &p->w_slot, &p->w_tid, &p->w_ret))
		return NULL;
	while (!atomic_load(&p->stop)) {
		atomic_fetch_add(&p->w_count, 1);
		if (!atomic_load(&p->w_spin))
			usleep(2000);
	}
	scx_set_ext(false);
	return NULL;
}

/* w2: blocks in read() until the test writes its pipe. */
static void *w2_fn(void *arg)
{
	struct child_ctx *c = arg;
	struct proc_shm *p = c->p;
	char b;

	if (register_worker(c, &p->w2_slot, &p->w2_tid, &p->w2_ret))
		return NULL;
	while (!atomic_load(&p->stop)) {
		int slot = atomic_load(&p->w2_slot);

		atomic_fetch_add(&p->w2_reads, 1);
		if (read(p->w2_pipe[0], &b, 1) != 1)
			break;
		atomic_store(&p->w2_ran_ns, scx_now_ns());
		atomic_store(&p->w2_woken_ns, c->sh->task[slot].woken_ns);
		atomic_fetch_add(&p->w2_runs, 1);
	}
	scx_set_ext(false);
	return NULL;
}

/* Body of the forked umcg process; never returns. */
static void umcg_proc(struct child_ctx *c, bool with_w2)
{
	struct proc_shm *p = c->p;
	pthread_t server, w, w2;

	if (pthread_create(&server, NULL, server_fn, c))
		_exit(2);
	while (!atomic_load(&p->server_ret))
		usleep(1000);
	if (atomic_load(&p->server_ret) != 1)
		_exit(3);
	if (pthread_create(&w, NULL, w_fn, c))
		_exit(4);
	if (with_w2 && pthread_create(&w2, NULL, w2_fn, c))
		_exit(5);
	while (!atomic_load(&p->stop))
		usleep(10000);
	/* Let w2 out of read(), and picked if it is held. */
	atomic_store(&p->pick_w2, true);
	if (with_w2) {
		if (write(p->w2_pipe[1], "x", 1) != 1)
			_exit(6);
		pthread_join(w2, NULL);
	}
	pthread_join(w, NULL);
	pthread_join(server, NULL);
	_exit(0);
}

/* ---- the plain process: CPU-bound SCHED_OTHER threads ---- */

struct plain_arg {
	struct proc_shm	*p;
	int		i;
	cpu_set_t	cpus;
};

static void *plain_fn(void *arg)
{
	struct plain_arg *a = arg;
	struct proc_shm *p = a->p;

	sched_setaffinity(0, sizeof(a->cpus), &a->cpus);
	atomic_store(&p->plain_tid[a->i], scx_gettid());
	while (!atomic_load(&p->plain_stop))
		atomic_fetch_add(&p->plain_count[a->i], 1);
	return NULL;
}

static void plain_proc(struct proc_shm *p, int nr, const cpu_set_t *cpus)
{
	struct plain_arg a[MAX_PLAIN];
	pthread_t t[MAX_PLAIN];

	for (int i = 0; i < nr; i++) {
		a[i] = (struct plain_arg){ .p = p, .i = i, .cpus = *cpus };
		if (pthread_create(&t[i], NULL, plain_fn, &a[i]))
			_exit(2);
	}
	for (int i = 0; i < nr; i++)
		pthread_join(t[i], NULL);
	_exit(0);
}

/* ---- the hostile process ---- */

struct hostile {
	struct child_ctx	*c;
	size_t			map_len;
	int			shared_fd;
	unsigned int		seed;
};

static void hfail(struct proc_shm *p, int line, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (atomic_fetch_add(&p->h_fail, 1))
		return;
	n = snprintf(p->h_msg, sizeof(p->h_msg), "line %d: ", line);
	va_start(ap, fmt);
	vsnprintf(p->h_msg + n, sizeof(p->h_msg) - n, fmt, ap);
	va_end(ap);
}

/* Expect call @expr to return exactly @want. */
#define HEXPECT(h, want, expr) do {					\
	int __w = (want), __r = (expr);					\
									\
	atomic_fetch_add(&(h)->c->p->h_calls, 1);			\
	if (__r != __w)							\
		hfail((h)->c->p, __LINE__, "%s: %d, expected %d",	\
		      #expr, __r, __w);					\
} while (0)

static int reg(struct hostile *h, struct umcg_scx_register_args a)
{
	return scx_run_prog(h->c->reg_fd, &a, sizeof(a));
}

static int pick(struct hostile *h, __u32 tid, __u32 cpu, __u32 flags,
		__u32 pad)
{
	struct umcg_scx_pick_args pk = {
		.tid = tid, .cpu = cpu, .flags = flags, .pad = pad,
	};

	return scx_run_prog(h->c->pick_fd, &pk, sizeof(pk));
}

static void fill_random(struct hostile *h, void *buf, size_t len)
{
	unsigned char *b = buf;

	for (size_t i = 0; i < len; i++)
		b[i] = rand_r(&h->seed);
}

/*
 * Random contexts of every size around the real one, and longer ones: a
 * context shorter than the fields the program touches is refused by the
 * kernel (-EINVAL), a longer one is read only as far as the struct goes.
 */
static void garbage_calls(struct hostile *h, __u32 own_worker)
{
	static unsigned char buf[4096];
	struct umcg_scx_register_args *ra = (void *)buf;
	struct umcg_scx_pick_args *pa = (void *)buf;

	for (int i = 0; i < NR_GARBAGE; i++) {
		size_t len = i % 2 ? sizeof(*ra) : sizeof(buf);

		fill_random(h, buf, len);
		/*
		 * Random fields are all but never valid; keep them invalid
		 * (-EINVAL: reserved0), so that this thread does not register.
		 */
		if (!ra->reserved0)
			ra->reserved0 = 1;
		HEXPECT(h, -EINVAL, scx_run_prog(h->c->reg_fd, buf, len));
	}
	for (int i = 0; i < NR_GARBAGE; i++) {
		size_t len = i % 2 ? sizeof(*pa) : sizeof(buf);

		fill_random(h, buf, len);
		if (!pa->flags && !pa->pad && pa->tid)
			pa->pad = 1;
		HEXPECT(h, -EINVAL, scx_run_prog(h->c->pick_fd, buf, len));
	}
	/* Valid fields, random tids: none is a worker of ours. */
	for (int i = 0; i < NR_GARBAGE; i++) {
		__u32 tid = 1 + rand_r(&h->seed) % (4 << 20);

		if (tid == own_worker)
			continue;
		HEXPECT(h, -ESRCH, pick(h, tid, i % 2, 0, 0));
	}
	/* Sizes and pointers. */
	memset(buf, 0, sizeof(buf));
	HEXPECT(h, -EINVAL, scx_run_prog(h->c->reg_fd, NULL, 0));
	HEXPECT(h, -EINVAL, scx_run_prog(h->c->reg_fd, buf, 1));
	HEXPECT(h, -EINVAL, scx_run_prog(h->c->reg_fd, buf, sizeof(*ra) - 1));
	HEXPECT(h, -EINVAL, scx_run_prog(h->c->pick_fd, NULL, 0));
	HEXPECT(h, -EINVAL, scx_run_prog(h->c->pick_fd, buf, sizeof(*pa) - 1));
	HEXPECT(h, -EINVAL, scx_run_prog(h->c->pick_fd, buf, 65536));
	HEXPECT(h, -EFAULT, scx_run_prog(h->c->reg_fd, (void *)8, sizeof(*ra)));
	HEXPECT(h, -EFAULT, scx_run_prog(h->c->pick_fd, (void *)8, sizeof(*pa)));
}

/* Calls about the victim's threads and out-of-range fields. */
static void targeted_calls(struct hostile *h)
{
	struct proc_shm *p = h->c->p;
	__u32 vs = atomic_load(&p->server_tid), vw = atomic_load(&p->w_tid);
	__u32 vw2 = atomic_load(&p->w2_tid);
	__u32 victims[] = { vs, vw, vw2, 1 };
	unsigned int nr = libbpf_num_possible_cpus();

	for (unsigned int i = 0; i < sizeof(victims) / sizeof(victims[0]); i++) {
		__u32 t = victims[i];

		HEXPECT(h, -ESRCH, reg(h, (struct umcg_scx_register_args){
			.flags = UMCG_REGISTER_WORKER, .server_tid = t }));
		for (unsigned int cpu = 0; cpu < 2; cpu++)
			HEXPECT(h, -ESRCH, pick(h, t, cpu, 0, 0));
		HEXPECT(h, -EINVAL, pick(h, t, nr, 0, 0));
		HEXPECT(h, -EINVAL, pick(h, t, UMCG_SCX_MAX_CPUS, 0, 0));
		HEXPECT(h, -EINVAL, pick(h, t, ~0U, 0, 0));
		HEXPECT(h, -EINVAL, pick(h, t, 0, 1, 0));
		HEXPECT(h, -EINVAL, pick(h, t, 0, ~0U, 0));
		HEXPECT(h, -EINVAL, pick(h, t, 0, 0, 1));
		HEXPECT(h, -EINVAL, reg(h, (struct umcg_scx_register_args){
			.flags = UMCG_REGISTER_SERVER, .cpu = 0,
			.server_tid = t }));
		HEXPECT(h, -EINVAL, reg(h, (struct umcg_scx_register_args){
			.flags = UMCG_REGISTER_WORKER, .server_tid = t,
			.cpu = SERVER_CPU }));
	}
	HEXPECT(h, -EINVAL, pick(h, 0, 0, 0, 0));
	HEXPECT(h, -ESRCH, pick(h, scx_gettid(), 0, 0, 0));
	/* Out-of-range CPUs, a CPU outside the caller's affinity. */
	HEXPECT(h, -EINVAL, reg(h, (struct umcg_scx_register_args){
		.flags = UMCG_REGISTER_SERVER, .cpu = nr }));
	HEXPECT(h, -EINVAL, reg(h, (struct umcg_scx_register_args){
		.flags = UMCG_REGISTER_SERVER, .cpu = UMCG_SCX_MAX_CPUS }));
	HEXPECT(h, -EINVAL, reg(h, (struct umcg_scx_register_args){
		.flags = UMCG_REGISTER_SERVER, .cpu = ~0U }));
	HEXPECT(h, -EINVAL, reg(h, (struct umcg_scx_register_args){
		.flags = UMCG_REGISTER_SERVER, .cpu = SERVER_CPU }));
	/* Unknown flags, reserved fields; the out fields are ignored. */
	HEXPECT(h, -EINVAL, reg(h, (struct umcg_scx_register_args){
		.flags = 0 }));
	HEXPECT(h, -EINVAL, reg(h, (struct umcg_scx_register_args){
		.flags = UMCG_REGISTER_WORKER | UMCG_REGISTER_SERVER }));
	HEXPECT(h, -EINVAL, reg(h, (struct umcg_scx_register_args){
		.flags = ~0U }));
	HEXPECT(h, -EINVAL, reg(h, (struct umcg_scx_register_args){
		.flags = UMCG_REGISTER_SERVER, .reserved0 = 1 }));
	HEXPECT(h, -EINVAL, reg(h, (struct umcg_scx_register_args){
		.flags = UMCG_REGISTER_SERVER, .slice_ns = 1 }));
	HEXPECT(h, -EINVAL, reg(h, (struct umcg_scx_register_args){
		.flags = UMCG_REGISTER_SERVER, .in_lib = ~0ULL }));
	HEXPECT(h, -ESRCH, reg(h, (struct umcg_scx_register_args){
		.flags = UMCG_REGISTER_WORKER, .server_tid = vs,
		.slot = atomic_load(&p->w_slot),
		.group = atomic_load(&p->group),
		.task_off = ~0ULL, .events_off = ~0ULL }));
}

#ifdef UMCG_SCX_PICK_WOKEN
/*
 * The later commands: "pick woken" of another process's worker, with the
 * seq it publishes; unregister with garbage; poke of a CPU that only
 * another process serves.  @own_cpu: the CPU its own server serves, or -1.
 */
static void later_calls(struct hostile *h, int own_cpu)
{
	struct proc_shm *p = h->c->p;
	const volatile struct umcg_scx_shared *sh = h->c->sh;
	__u32 vw = atomic_load(&p->w_tid), vw2 = atomic_load(&p->w2_tid);
	int w = atomic_load(&p->w_slot), w2 = atomic_load(&p->w2_slot);
	struct umcg_scx_unregister_args ua;
	struct umcg_scx_poke_args po;
	unsigned char buf[64];

	for (unsigned int cpu = 0; cpu < 2; cpu++) {
		HEXPECT(h, -ESRCH, pick(h, vw2, cpu, UMCG_SCX_PICK_WOKEN,
					(__u32)sh->task[w2].seq));
		HEXPECT(h, -ESRCH, pick(h, vw, cpu, UMCG_SCX_PICK_WOKEN,
					(__u32)sh->task[w].seq));
	}
	HEXPECT(h, -EINVAL, pick(h, vw2, 0, UMCG_SCX_PICK_WOKEN | 1, 0));
	if (h->c->unreg_fd >= 0) {
		ua = (struct umcg_scx_unregister_args){ .flags = 1 };
		HEXPECT(h, -EINVAL, scx_run_prog(h->c->unreg_fd, &ua, sizeof(ua)));
		ua = (struct umcg_scx_unregister_args){ .pad = 1 };
		HEXPECT(h, -EINVAL, scx_run_prog(h->c->unreg_fd, &ua, sizeof(ua)));
		ua = (struct umcg_scx_unregister_args){ .reserved = ~0ULL };
		HEXPECT(h, -EINVAL, scx_run_prog(h->c->unreg_fd, &ua, sizeof(ua)));
		HEXPECT(h, -EINVAL, scx_run_prog(h->c->unreg_fd, &ua, sizeof(ua) - 1));
		HEXPECT(h, -EINVAL, scx_run_prog(h->c->unreg_fd, NULL, 0));
		for (int i = 0; i < NR_GARBAGE / 4; i++) {
			fill_random(h, buf, sizeof(buf));
			buf[0] |= 1;	/* flags: never valid */
			HEXPECT(h, -EINVAL, scx_run_prog(h->c->unreg_fd, buf,
						     sizeof(buf)));
		}
		/* This thread never registered. */
		ua = (struct umcg_scx_unregister_args){ 0 };
		HEXPECT(h, -ENOENT, scx_run_prog(h->c->unreg_fd, &ua, sizeof(ua)));
	}
	if (h->c->poke_fd >= 0) {
		po = (struct umcg_scx_poke_args){ .cpu = SERVER_CPU };
		HEXPECT(h, own_cpu == SERVER_CPU ? 0 : -ESRCH,
			scx_run_prog(h->c->poke_fd, &po, sizeof(po)));
		if (own_cpu >= 0) {
			po = (struct umcg_scx_poke_args){ .cpu = own_cpu };
			HEXPECT(h, 0, scx_run_prog(h->c->poke_fd, &po, sizeof(po)));
		}
		po = (struct umcg_scx_poke_args){ .cpu = SERVER_CPU, .flags = 1 };
		HEXPECT(h, -EINVAL, scx_run_prog(h->c->poke_fd, &po, sizeof(po)));
		po = (struct umcg_scx_poke_args){ .cpu = SERVER_CPU, .reserved = 1 };
		HEXPECT(h, -EINVAL, scx_run_prog(h->c->poke_fd, &po, sizeof(po)));
		po = (struct umcg_scx_poke_args){ .cpu = UMCG_SCX_MAX_CPUS };
		HEXPECT(h, -EINVAL, scx_run_prog(h->c->poke_fd, &po, sizeof(po)));
		po = (struct umcg_scx_poke_args){ .cpu = ~0U };
		HEXPECT(h, -EINVAL, scx_run_prog(h->c->poke_fd, &po, sizeof(po)));
		HEXPECT(h, -EINVAL, scx_run_prog(h->c->poke_fd, &po, sizeof(po) - 1));
	}
}
#else
static void later_calls(struct hostile *h, int own_cpu)
{
}
#endif

/* The shared map: frozen, so no update and no writable mapping. */
static void map_writes(struct hostile *h)
{
	struct proc_shm *p = h->c->p;
	struct umcg_scx_shared *junk = calloc(1, sizeof(*junk));
	__u32 zero = 0;
	void *m;
	int fd;

	if (!junk) {
		hfail(p, __LINE__, "calloc");
		return;
	}
	memset(junk, 0xa5, sizeof(*junk));
	HEXPECT(h, -EPERM, bpf_map_update_elem(h->shared_fd, &zero, junk,
					       BPF_ANY) ? -errno : 0);
	HEXPECT(h, -EPERM, bpf_map_update_elem(h->shared_fd, &zero, junk,
					       BPF_EXIST) ? -errno : 0);
	/* A new descriptor of the same map is no better. */
	fd = bpf_map_get_fd_by_id(({
		struct bpf_map_info info = { 0 };
		__u32 len = sizeof(info);

		bpf_map_get_info_by_fd(h->shared_fd, &info, &len);
		info.id;
	}));
	HEXPECT(h, -EPERM, fd < 0 ? -1000 - errno :
		bpf_map_update_elem(fd, &zero, junk, BPF_ANY) ? -errno : 0);
	if (fd >= 0)
		close(fd);
	free(junk);

	m = mmap(NULL, h->map_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		 h->shared_fd, 0);
	HEXPECT(h, -EPERM, m == MAP_FAILED ? -errno : 0);
	if (m != MAP_FAILED)
		munmap(m, h->map_len);
	m = mmap(NULL, h->map_len, PROT_READ, MAP_SHARED, h->shared_fd, 0);
	HEXPECT(h, 0, m == MAP_FAILED ? -errno : 0);
	if (m == MAP_FAILED)
		return;
	HEXPECT(h, -EACCES, mprotect(m, h->map_len, PROT_READ | PROT_WRITE) ?
			    -errno : 0);
	/* Nor through /proc/self/mem, which may write read-only mappings. */
	fd = open("/proc/self/mem", O_RDWR);
	if (fd >= 0) {
		unsigned char x = 0xa5;
		ssize_t n = pwrite(fd, &x, 1, (off_t)(unsigned long)m);

		atomic_fetch_add(&p->h_calls, 1);
		if (n != -1)
			hfail(p, __LINE__, "/proc/self/mem wrote the shared map");
		close(fd);
	}
	munmap(m, h->map_len);
}

struct h_thread {
	struct hostile	*h;
	struct umcg_scx_register_args a;
	int		ret;
	int		ret2;		/* registering again */
	int		tid;
	int		pipe[2];
	bool		ready;
};

/* A thread of the hostile: registers with @a, then waits on its pipe. */
static void *h_thread_fn(void *arg)
{
	struct h_thread *t = arg;
	char b;

	t->tid = scx_gettid();
	t->ret = scx_run_prog(t->h->c->reg_fd, &t->a, sizeof(t->a));
	if (!t->ret) {
		struct umcg_scx_register_args again = t->a;
		int n = atomic_fetch_add(&t->h->c->p->h_nr_slots, 1);

		if (n < MAX_HOSTILE)
			atomic_store(&t->h->c->p->h_slot[n], t->a.slot);
		atomic_store(&t->h->c->p->h_group, t->a.group);
		again.slot = 0;
		again.group = 0;
		again.task_off = 0;
		again.events_off = 0;
		t->ret2 = scx_run_prog(t->h->c->reg_fd, &again, sizeof(again));
	}
	__atomic_store_n(&t->ready, true, __ATOMIC_SEQ_CST);
	read(t->pipe[0], &b, 1);
	return NULL;
}

static int h_thread_start(struct hostile *h, struct h_thread *t, pthread_t *pt)
{
	t->h = h;
	if (pipe(t->pipe) || pthread_create(pt, NULL, h_thread_fn, t))
		return -1;
	while (!__atomic_load_n(&t->ready, __ATOMIC_SEQ_CST))
		usleep(1000);
	return 0;
}

/* Body of the forked hostile process; never returns. */
static void hostile_proc(struct hostile *h)
{
	struct proc_shm *p = h->c->p;
	struct h_thread srv = {
		.a = { .flags = UMCG_REGISTER_SERVER, .cpu = HOSTILE_CPU },
	};
	struct h_thread wrk = { .a = { .flags = UMCG_REGISTER_WORKER } };
	pthread_t srv_t, wrk_t;
	__u32 vw2 = atomic_load(&p->w2_tid);
	long long t0;

	if (scx_pin_self(HOSTILE_CPU))
		hfail(p, __LINE__, "pin: %m");
	fprintf(stderr, "# hostile: seed %u\n", h->seed);

	/* 1. Not registered: no group of its own. */
	garbage_calls(h, 0);
	targeted_calls(h);
	later_calls(h, -1);
	map_writes(h);

	/* 2. With a server and a (sleeping) worker of its own. */
	if (h_thread_start(h, &srv, &srv_t) || srv.ret) {
		hfail(p, __LINE__, "hostile server register: %d", srv.ret);
		goto out;
	}
	wrk.a.server_tid = srv.tid;
	if (h_thread_start(h, &wrk, &wrk_t) || wrk.ret) {
		hfail(p, __LINE__, "hostile worker register: %d", wrk.ret);
		goto out;
	}
	/* A second registration of the same thread. */
	HEXPECT(h, -EBUSY, srv.ret2);
	HEXPECT(h, -EBUSY, wrk.ret2);
	/* Its own server is no worker; its own worker is not held. */
	HEXPECT(h, -ESRCH, pick(h, srv.tid, HOSTILE_CPU, 0, 0));
	{
		/* With the policy and published state if it fails. */
		int ret = pick(h, wrk.tid, HOSTILE_CPU, 0, 0);
		int ws = wrk.a.slot & (UMCG_SCX_MAX_TASKS - 1);

		atomic_fetch_add(&p->h_calls, 1);
		if (ret != -EAGAIN)
			hfail(p, __LINE__, "pick of its own sleeping worker %d: %d, expected %d (policy %d, the server's %d, its own %d; slot %d state %#x seq %llu)",
			      wrk.tid, ret, -EAGAIN, sched_getscheduler(wrk.tid),
			      sched_getscheduler(srv.tid), sched_getscheduler(0),
			      ws, h->c->sh->task[ws].state,
			      (unsigned long long)h->c->sh->task[ws].seq);
	}
	garbage_calls(h, wrk.tid);
	targeted_calls(h);
	later_calls(h, HOSTILE_CPU);
	map_writes(h);

	/* 3. The victim's w2 is held: it cannot pick it, on any CPU. */
	atomic_store(&p->h_phase, 1);
	while (!atomic_load(&p->h_go_held) && !atomic_load(&p->h_release))
		usleep(1000);
	t0 = scx_now_ns();
	while (atomic_load(&p->h_go_held) && !atomic_load(&p->w2_runs) &&
	       !timed_out(t0, WAIT_MS)) {
		HEXPECT(h, -ESRCH, pick(h, vw2, atomic_load(&p->h_held_picks) % 2,
					0, 0));
		atomic_fetch_add(&p->h_held_picks, 1);
		usleep(500);
	}
out:
	atomic_store(&p->h_phase, 2);
	while (!atomic_load(&p->h_release))
		usleep(1000);
	_exit(0);
}

/* ---- the fixture ---- */

FIXTURE(iso) {
	struct umcg_scx *s;
	struct proc_shm *p;
	struct child_ctx c;
	int shared_fd;
	size_t map_len;
	pid_t kids[3];
	int nr_kids;
};

FIXTURE_SETUP(iso)
{
	struct umcg_scx_opts opts = { .timeout_ms = UMCG_SCX_TIMEOUT_MS_DFL };
	char ops[64] = "";
	void *m;
	int ret;

	self->s = NULL;
	self->p = NULL;
	self->c.sh = NULL;
	self->nr_kids = 0;
	ret = umcg_scx_probe();
	if (ret == -ENOENT)
		SKIP(return, "no sched_ext in this kernel (/sys/kernel/sched_ext is missing)");
	if (ret == -EPERM)
		SKIP(return, "loading a sched_ext scheduler needs root");
	umcg_scx_sysfs_read("root/ops", ops, sizeof(ops));
	ASSERT_EQ(0, ret) TH_LOG("sched_ext is not free (\"%s\" loaded?): %s",
				 ops, strerror(-ret));
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		SKIP(return, "needs 2 CPUs");
	ret = umcg_scx_open(&self->s, &opts);
	if (ret)
		SKIP(return, "the scheduler cannot be loaded: %s", strerror(-ret));
	ret = umcg_scx_attach(self->s);
	if (ret)
		SKIP(return, "the scheduler cannot be attached: %s", strerror(-ret));

	self->c.reg_fd = umcg_scx_obj_fd(self->s, "umcg_register");
	self->c.pick_fd = umcg_scx_obj_fd(self->s, "umcg_pick");
	self->shared_fd = umcg_scx_obj_fd(self->s, "shared");
	/* Commands of later slices: checked where the scheduler has them. */
	self->c.unreg_fd = umcg_scx_obj_fd(self->s, "umcg_unregister");
	self->c.poke_fd = umcg_scx_obj_fd(self->s, "umcg_poke");
	ASSERT_LE(0, self->c.reg_fd);
	ASSERT_LE(0, self->c.pick_fd);
	ASSERT_LE(0, self->shared_fd);
	self->map_len = (sizeof(struct umcg_scx_shared) + getpagesize() - 1) /
			getpagesize() * getpagesize();
	m = mmap(NULL, self->map_len, PROT_READ, MAP_SHARED, self->shared_fd, 0);
	ASSERT_NE(MAP_FAILED, m) TH_LOG("mmap shared: %m");
	self->c.sh = m;
	m = mmap(NULL, sizeof(*self->p), PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, m);
	self->p = m;
	self->c.p = self->p;
	atomic_store(&self->p->server_slot, -1);
	atomic_store(&self->p->w_slot, -1);
	atomic_store(&self->p->w2_slot, -1);
	atomic_store(&self->p->h_group, -1);
	atomic_store(&self->p->pick_w2, true);
	ASSERT_EQ(0, pipe(self->p->w2_pipe));
}

FIXTURE_TEARDOWN(iso)
{
	struct user_exit_info ei;

	if (self->p) {
		atomic_store(&self->p->stop, true);
		atomic_store(&self->p->plain_stop, true);
		atomic_store(&self->p->h_release, true);
	}
	for (int i = 0; i < self->nr_kids; i++) {
		long long t0 = scx_now_ns();
		int status;

		while (waitpid(self->kids[i], &status, WNOHANG) == 0) {
			if (timed_out(t0, WAIT_MS)) {
				kill(self->kids[i], SIGKILL);
				waitpid(self->kids[i], &status, 0);
				break;
			}
			usleep(10000);
		}
	}
	if (self->s) {
		umcg_scx_exit_info(self->s, &ei);
		if (ei.kind != UMCG_SCX_EXIT_NONE)
			TH_LOG("scheduler exited: %s (%d): %s: %s",
			       umcg_scx_exit_kind_name(ei.kind), ei.kind,
			       ei.reason, ei.msg);
	}
	if (self->c.sh)
		munmap((void *)self->c.sh, self->map_len);
	if (self->p)
		munmap(self->p, sizeof(*self->p));
	umcg_scx_close(self->s);
}

static pid_t start_umcg_proc(FIXTURE_DATA(iso) *self, bool with_w2)
{
	struct proc_shm *p = self->p;
	long long t0;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return pid;
	if (pid == 0)
		umcg_proc(&self->c, with_w2);
	self->kids[self->nr_kids++] = pid;
	t0 = scx_now_ns();
	while ((!atomic_load(&p->server_ret) || !atomic_load(&p->w_ret) ||
		(with_w2 && !atomic_load(&p->w2_ret))) && !timed_out(t0, WAIT_MS))
		usleep(1000);
	return pid;
}

static bool kid_alive(pid_t pid)
{
	int status;

	return waitpid(pid, &status, WNOHANG) == 0;
}

/* True if @n advances within WAIT_MS; *@v is its new value. */
static bool advances(atomic_ulong *n, unsigned long *v)
{
	unsigned long v0 = atomic_load(n);
	long long t0 = scx_now_ns();

	while (atomic_load(n) == v0 && !timed_out(t0, WAIT_MS))
		usleep(1000);
	*v = atomic_load(n);
	return *v != v0;
}

TEST_F_TIMEOUT(iso, plain_process_keeps_fair_class, 120)
{
	struct proc_shm *p = self->p;
	unsigned long before[MAX_PLAIN], w_before, v;
	int nr = PLAIN_PER_CPU * 2;
	char why[128];
	cpu_set_t cpus;
	pid_t plain;
	long long t0;

	/* The umcg process: server and worker on SERVER_CPU, SCHED_EXT. */
	ASSERT_LT(0, start_umcg_proc(self, false));
	ASSERT_EQ(1, atomic_load(&p->server_ret));
	ASSERT_EQ(1, atomic_load(&p->w_ret));
	ASSERT_TRUE(advances(&p->w_count, &v));
	ASSERT_EQ(SCHED_EXT, sched_getscheduler(atomic_load(&p->server_tid)));
	ASSERT_EQ(SCHED_EXT, sched_getscheduler(atomic_load(&p->w_tid)));

	/* The plain process: 3 threads per CPU, on the umcg CPU and CPU 0. */
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	CPU_SET(SERVER_CPU, &cpus);
	plain = fork();
	ASSERT_LE(0, plain);
	if (plain == 0)
		plain_proc(p, nr, &cpus);
	self->kids[self->nr_kids++] = plain;
	t0 = scx_now_ns();
	for (int i = 0; i < nr; i++)
		while (!atomic_load(&p->plain_tid[i]) && !timed_out(t0, WAIT_MS))
			usleep(1000);
	w_before = atomic_load(&p->w_count);
	for (int i = 0; i < nr; i++) {
		pid_t tid = atomic_load(&p->plain_tid[i]);

		ASSERT_NE(0, tid) TH_LOG("plain thread %d did not start", i);
		ASSERT_EQ(SCHED_OTHER, sched_getscheduler(tid))
			TH_LOG("plain thread %d (tid %d)", i, tid);
		before[i] = atomic_load(&p->plain_count[i]);
	}
	/* About a second of competition on the same CPUs. */
	sleep(1);
	for (int i = 0; i < nr; i++) {
		t0 = scx_now_ns();
		while (atomic_load(&p->plain_count[i]) == before[i] &&
		       !timed_out(t0, WAIT_MS))
			usleep(1000);
		EXPECT_LT(before[i], atomic_load(&p->plain_count[i]))
			TH_LOG("plain thread %d made no progress", i);
		EXPECT_EQ(SCHED_OTHER,
			  sched_getscheduler(atomic_load(&p->plain_tid[i])));
	}
	TH_LOG("umcg worker passes during the competition: %lu",
	       atomic_load(&p->w_count) - w_before);
	EXPECT_EQ(SCHED_EXT, sched_getscheduler(atomic_load(&p->server_tid)));
	EXPECT_EQ(SCHED_EXT, sched_getscheduler(atomic_load(&p->w_tid)));
	ASSERT_TRUE(scheduler_loaded(why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_FALSE(umcg_scx_exited(self->s));

	/* The competition over, the umcg worker goes on. */
	atomic_store(&p->plain_stop, true);
	ASSERT_TRUE(advances(&p->w_count, &v));
	ASSERT_TRUE(kid_alive(self->kids[0]));
	ASSERT_TRUE(scheduler_loaded(why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_FALSE(umcg_scx_exited(self->s));
}

/* Is @slot one of the hostile process's own? */
static bool hostile_slot(struct proc_shm *p, int slot)
{
	int n = atomic_load(&p->h_nr_slots);

	for (int i = 0; i < n && i < MAX_HOSTILE; i++)
		if (atomic_load(&p->h_slot[i]) == slot)
			return true;
	return false;
}

/*
 * Compare the shared area with @snap: every slot but the moving worker w
 * and the hostile's own, every group's events but the hostile's.  w's
 * fixed fields too.  The first difference, or 0.
 */
static int shared_diff(struct proc_shm *p, const volatile struct umcg_scx_shared *sh,
		       const struct umcg_scx_shared *snap, char *why, size_t len)
{
	int w = atomic_load(&p->w_slot), hg = atomic_load(&p->h_group);

	for (int i = 0; i < UMCG_SCX_MAX_TASKS; i++) {
		struct umcg_task cur;

		memcpy(&cur, (const void *)&sh->task[i], sizeof(cur));
		if (hostile_slot(p, i))
			continue;
		if (i == w) {
			if (cur.server_tid != snap->task[i].server_tid ||
			    cur.cpu != snap->task[i].cpu) {
				snprintf(why, len, "w's slot %d: server %u cpu %u",
					 i, cur.server_tid, cur.cpu);
				return -1;
			}
			continue;
		}
		if (memcmp(&cur, &snap->task[i], sizeof(cur))) {
			snprintf(why, len, "slot %d: state %#x seq %llu (was %#x %llu)",
				 i, cur.state, (unsigned long long)cur.seq,
				 snap->task[i].state,
				 (unsigned long long)snap->task[i].seq);
			return -1;
		}
	}
	for (int g = 0; g < UMCG_SCX_MAX_GROUPS; g++) {
		if (g == hg)
			continue;
		for (int k = 0; k < UMCG_SCX_EVENT_WORDS; k++)
			if (sh->events[g][k] != snap->events[g][k]) {
				snprintf(why, len, "events[%d][%d]: %#llx (was %#llx)",
					 g, k, (unsigned long long)sh->events[g][k],
					 (unsigned long long)snap->events[g][k]);
				return -1;
			}
	}
	return 0;
}

TEST_F_TIMEOUT(iso, hostile_garbage, 240)
{
	struct proc_shm *p = self->p;
	struct umcg_scx_shared *snap;
	struct hostile h = {
		.c = &self->c, .map_len = self->map_len,
		.shared_fd = self->shared_fd,
		.seed = (unsigned int)scx_now_ns() ^ getpid(),
	};
	const volatile struct umcg_task *w2;
	unsigned long v;
	long long t0, held_ns;
	char why[160];
	pid_t victim, hostile;
	__u64 seq;
	int w2_slot;

	/* The victim: server, w (sleeps and wakes in a loop), w2 (in read()). */
	victim = start_umcg_proc(self, true);
	ASSERT_LT(0, victim);
	ASSERT_EQ(1, atomic_load(&p->server_ret));
	ASSERT_EQ(1, atomic_load(&p->w_ret));
	ASSERT_EQ(1, atomic_load(&p->w2_ret));
	ASSERT_TRUE(advances(&p->w_count, &v));
	w2_slot = atomic_load(&p->w2_slot);
	w2 = &self->c.sh->task[w2_slot];

	/* w2 settles in read(): BLOCKED, and nothing moves for a while. */
	t0 = scx_now_ns();
	for (;;) {
		seq = w2->seq;
		if (atomic_load(&p->w2_reads) && slot_state(self->c.sh, w2_slot) ==
		    UMCG_TASK_BLOCKED) {
			usleep(500 * 1000);
			if (seq == w2->seq)
				break;
		}
		ASSERT_FALSE(timed_out(t0, WAIT_MS))
			TH_LOG("w2 never settles: state %u",
			       slot_state(self->c.sh, w2_slot));
		usleep(10000);
	}
	atomic_store(&p->pick_w2, false);
	/* w's moves have set every event bit of the victim by now. */
	ASSERT_TRUE(advances(&p->w_count, &v));
	snap = malloc(sizeof(*snap));
	ASSERT_NE(NULL, snap);
	memcpy(snap, (const void *)self->c.sh, sizeof(*snap));

	/* The hostile: garbage, victims' tids, map writes. */
	hostile = fork();
	ASSERT_LE(0, hostile);
	if (hostile == 0)
		hostile_proc(&h);
	self->kids[self->nr_kids++] = hostile;
	t0 = scx_now_ns();
	while (!atomic_load(&p->h_phase) && !timed_out(t0, 10 * WAIT_MS))
		usleep(10000);
	ASSERT_EQ(1, atomic_load(&p->h_phase)) TH_LOG("%s", p->h_msg);
	TH_LOG("hostile: %d calls checked, %d failed", atomic_load(&p->h_calls),
	       atomic_load(&p->h_fail));
	EXPECT_EQ(0, atomic_load(&p->h_fail)) TH_LOG("%s", p->h_msg);

	/* The victim goes on, and nothing it published has changed. */
	ASSERT_TRUE(advances(&p->w_count, &v));
	EXPECT_EQ(0, shared_diff(p, self->c.sh, snap, why, sizeof(why)))
		TH_LOG("%s", why);
	EXPECT_EQ(UMCG_TASK_BLOCKED, slot_state(self->c.sh, w2_slot));
	EXPECT_EQ(seq, w2->seq);
	EXPECT_EQ(0, atomic_load(&p->w2_runs));
	ASSERT_TRUE(scheduler_loaded(why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_FALSE(umcg_scx_exited(self->s));

	/*
	 * w2 woken and held; the hostile keeps picking it.  Only the
	 * scheduler's release, UMCG_SCX_HOLD_MAX_NS later, runs it.
	 */
	ASSERT_EQ(1, write(p->w2_pipe[1], "x", 1));
	t0 = scx_now_ns();
	while (slot_state(self->c.sh, w2_slot) == UMCG_TASK_BLOCKED &&
	       !atomic_load(&p->w2_runs) && !timed_out(t0, WAIT_MS))
		usleep(500);
	atomic_store(&p->h_go_held, true);
	t0 = scx_now_ns();
	while (!atomic_load(&p->w2_runs) && !timed_out(t0, WAIT_MS))
		usleep(1000);
	ASSERT_EQ(1, atomic_load(&p->w2_runs));
	held_ns = atomic_load(&p->w2_ran_ns) - atomic_load(&p->w2_woken_ns);
	TH_LOG("w2 held %lld ms; the hostile tried %d picks meanwhile",
	       held_ns / 1000000, atomic_load(&p->h_held_picks));
	EXPECT_LT(0, atomic_load(&p->h_held_picks));
	/* A little slack: held_ns is taken just before woken_ns. */
	EXPECT_LE((long long)UMCG_SCX_HOLD_MAX_NS - 10000000LL, held_ns);
	t0 = scx_now_ns();
	while (atomic_load(&p->h_phase) != 2 && !timed_out(t0, WAIT_MS))
		usleep(1000);
	EXPECT_EQ(2, atomic_load(&p->h_phase));
	EXPECT_EQ(0, atomic_load(&p->h_fail)) TH_LOG("%s", p->h_msg);

	/* The hostile gone (its threads exit, DONE), the victim goes on. */
	atomic_store(&p->h_release, true);
	ASSERT_EQ(hostile, waitpid(hostile, NULL, 0));
	self->nr_kids--;
	ASSERT_TRUE(advances(&p->w_count, &v));
	ASSERT_TRUE(kid_alive(victim));
	EXPECT_EQ(SCHED_EXT, sched_getscheduler(atomic_load(&p->server_tid)));
	EXPECT_EQ(SCHED_EXT, sched_getscheduler(atomic_load(&p->w_tid)));
	EXPECT_EQ(atomic_load(&p->server_tid),
		  self->c.sh->task[atomic_load(&p->w_slot)].server_tid);
	EXPECT_EQ(atomic_load(&p->server_tid), w2->server_tid);
	ASSERT_TRUE(scheduler_loaded(why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_FALSE(umcg_scx_exited(self->s));
	free(snap);
}

struct exec_ctx {
	int	reg_fd;
	int	pipe;
	int	leader_tid;
};

/* Registers as a worker of the leader, then execs: takes the leader's tid. */
static void *exec_thread_fn(void *arg)
{
	struct exec_ctx *e = arg;
	struct umcg_scx_register_args a = {
		.flags = UMCG_REGISTER_WORKER, .server_tid = e->leader_tid,
	};
	int ret = scx_run_prog(e->reg_fd, &a, sizeof(a));

	if (write(e->pipe, &ret, sizeof(ret)) != sizeof(ret) || ret)
		_exit(3);
	execl("/bin/true", "true", (char *)NULL);
	_exit(4);
}

TEST_F_TIMEOUT(iso, exec_of_registered_thread, 90)
{
	struct exec_ctx e = { .reg_fd = self->c.reg_fd };
	int fds[2], ret = -1, status;
	char why[160];
	pid_t kid;
	long long t0;

	ASSERT_EQ(0, pipe(fds));
	kid = fork();
	ASSERT_LE(0, kid);
	if (kid == 0) {
		struct umcg_scx_register_args a = {
			.flags = UMCG_REGISTER_SERVER, .cpu = 0,
		};
		pthread_t t;

		close(fds[0]);
		ret = scx_run_prog(e.reg_fd, &a, sizeof(a));
		if (write(fds[1], &ret, sizeof(ret)) != sizeof(ret) || ret)
			_exit(2);
		e.pipe = fds[1];
		e.leader_tid = scx_gettid();
		if (pthread_create(&t, NULL, exec_thread_fn, &e))
			_exit(5);
		pause();
		_exit(6);
	}
	close(fds[1]);
	ASSERT_EQ(sizeof(ret), read(fds[0], &ret, sizeof(ret)));
	ASSERT_EQ(0, ret) TH_LOG("the leader's register: %d", ret);
	ASSERT_EQ(sizeof(ret), read(fds[0], &ret, sizeof(ret)));
	ASSERT_EQ(0, ret) TH_LOG("the thread's register: %d", ret);
	ASSERT_EQ(kid, waitpid(kid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
		TH_LOG("status %#x", status);
	/* exit_task runs when the tasks are freed: give it time. */
	t0 = scx_now_ns();
	while (!umcg_scx_exited(self->s) && !timed_out(t0, 3000))
		usleep(10000);
	ASSERT_TRUE(scheduler_loaded(why, sizeof(why))) TH_LOG("%s", why);
	ASSERT_FALSE(umcg_scx_exited(self->s));
}

TEST_HARNESS_MAIN
