// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * backend_scx.c - the "scx" backend: the umcg sched_ext scheduler (bpf/,
 * Documentation/scx.rst), as "umcgctl load" pins it under /sys/fs/bpf/umcg.
 *
 * Auto-selection takes it first when its probe succeeds (our scheduler
 * enabled, its programs' pins open to this process), see backend.c; or
 * asked for by name (cfg.backend "scx" or UMCG_BACKEND=scx).
 *
 * Words.  Each thread keeps its state word in t->task, as with "user": the
 * scheduler's shared area is read-only (frozen), so the library cannot
 * write there.  The scheduler publishes what it saw of each registered
 * thread into its slot of that area (struct umcg_task: state, blocked_ns,
 * cpu, seq); the servers compare each slot's seq with the last one they
 * looked at (scx.last_seq: the area's event bits cannot be cleared) and
 * turn changes into events, which they apply at once (umcg_apply_event()),
 * under scx.lock, so that events of one thread are applied in order:
 *
 *   published BLOCKED or RUNNABLE with a blocked_ns not seen before, of a
 *     worker outside libumcg (t->in_lib 0)          -> UMCG_EV_BLOCKED
 *     (the scheduler stamps blocked_ns only for sleeps that began outside
 *     libumcg: t->in_lib is read here only for older schedulers); one
 *     of a worker the policy has queued (it ran unpicked) waits for its
 *     pick (scx_block_unpicked())
 *   published RUNNABLE (woken, held by the scheduler), the worker outside
 *     libumcg and BLOCKED for the runtime           -> UMCG_EV_WOKEN; it
 *     stays held until the runtime makes it RUNNING (C3)
 *   published RUNNABLE | UMCG_TF_PREEMPT (its time slice ended, outside
 *     libumcg), the worker RUNNING for the runtime -> UMCG_EV_PREEMPTED;
 *     it stays held until the runtime makes it RUNNING again (C6); if the
 *     runtime has it queued already, it stays held for that pick
 *   published RUNNABLE otherwise: a sleep inside libumcg (its own futex
 *     waits, a lock) ended; that is no block, and the scheduler must not
 *     hold it: umcg_pick onto its CPU at once
 *   published DONE (it exited without unregistering) -> UMCG_EV_EXITED
 *
 * A worker that slept in wait() (libumcg's futex wait) records the
 * blocked_ns of that sleep as seen (scx.base_bns) before it leaves
 * libumcg, so a server that looks late does not take the sleep for a
 * block of its next run (for schedulers that stamped such sleeps).
 * Each look reads a slot whole (scx_snapshot()).
 *
 *   register   the "umcg_register" program (BPF_PROG_TEST_RUN, raw
 *              bpf(2): no libbpf here), then sched_setscheduler(SCHED_EXT)
 *   wake(t)    futex-wake t's word; if its slot then reads RUNNING (it
 *              woke inside libumcg and runs on, on the CPU its affinity
 *              names: pin_by_waker), that is all.  Otherwise "umcg_pick"
 *              onto its core's CPU: a held worker moves there; one still
 *              asleep in scx_wait() (scx.in_wait, with the slot's seq read
 *              before it was made RUNNING) goes there straight from its
 *              wake-up (bpf/umcg_enforce.bpf.h, i); one that ran on and
 *              blocked elsewhere meanwhile is left to the scheduler
 *   server     SCHED_EXT too, registered with UMCG_SCX_REGISTER_BELL:
 *              with nothing to do it sleeps in the kernel, in a futex
 *              wait on both its core's wake_seq and its bell (its slot's
 *              word in the shared area, read-only for us), which the
 *              scheduler rings when a worker of ours blocks or is held
 *              on its CPU, or exits: it reads the bell, then looks, then
 *              waits for the bell to move from what it read, so a ring
 *              after its read ends the wait.  A ring wakes this server
 *              alone, and nothing of another process rings it; our own
 *              threads wake it with a futex wake of wake_seq
 *              (server_wake), no program run.  Where another server of
 *              the process has the bell of the same CPU (-EBUSY: one of
 *              an earlier group, not unregistered yet), it registers
 *              with UMCG_SCX_REGISTER_DOORBELL (never held) but sleeps
 *              on wake_seq alone, at most as long as a bell server does
 *              (news found at that bound counts as missed-news).
 *              Where the kernel has no bells (-EOPNOTSUPP: before Linux
 *              6.18, where only root may use the scheduler), it
 *              registers with UMCG_SCX_REGISTER_DOORBELL and sleeps in poll() on
 *              the scheduler's doorbell ring ("wake"), rung for the same
 *              news and by "umcg_poke" (server_wake); it drains the ring,
 *              then looks, then sleeps.  Every ring wakes every sleeping
 *              doorbell server: one with nothing to do sleeps again.
 *              It is never held runnable: a held thread keeps its CPU's
 *              runqueue non-empty for sched_ext, and once the kernel's
 *              deadline server for sched_ext has found nothing to run
 *              there (the held thread is not dispatched), it is not
 *              started again until that runqueue has no sched_ext task
 *              at all, so a busy fair-class thread on that CPU starves
 *              every sched_ext task there until the watchdog ejects the
 *              scheduler.  Without either (an older scheduler) it is
 *              held in sched_yield() as before
 *   unregister SCHED_OTHER, then the "umcg_unregister" program
 *
 * Time slices (C6): the scheduler measures and preempts (Documentation/
 * scx.rst, "Time slice").  Workers register with the group's slice and
 * the address of their t->in_lib, which the scheduler reads in their own
 * context at a slice end: outside libumcg it holds the worker and
 * publishes RUNNABLE | UMCG_TF_PREEMPT (above); inside, it lets the
 * worker run on and publishes RUNNING | UMCG_TF_PREEMPT with a new seq,
 * which the worker takes as a request to yield as it leaves libumcg
 * (scx_preempt_deferred(), once per seq).  Servers keep no slice clock.
 * A slice over UMCG_SCX_SLICE_MAX_NS fails init with -EINVAL.
 *
 * If the scheduler goes away (unloaded, ejected), every thread is moved to
 * the fair class by the kernel.  Hand-offs are futex wakes first, so none
 * is lost; picks and pokes then fail and are ignored.  A server notices
 * within SCX_GONE_CHECK_NS (its sched_yield() no longer holds it) and
 * from then on sleeps on c->wake_seq like the user backend's, woken by
 * server_wake; blocks are no longer seen (no monitor thread: C2 is lost,
 * nothing hangs).  Gone means: sched_ext is not enabled with our
 * scheduler, or its enable_seq moved since umcg_init() (a later load does
 * not know our threads).  From then on umcg_backend_name() says
 * "scx-fallback", for the rest of the group (scx_report_name()).
 *
 * Limits: the scheduler has UMCG_SCX_MAX_TASKS slots and
 * UMCG_SCX_MAX_GROUPS processes for the whole machine.  worker_reserve
 * fails with -EAGAIN when the published area shows no free slot left (a
 * plain thread's spawn first waits for exiting workers to free some, until
 * SCX_RESERVE_WAIT_NS pass without one freed), or when no server of the
 * group could register (no group left).  Another process can still take the last slot between
 * reserve and register; the thread then runs as a plain thread
 * (umcg_thread_start()'s failure path).
 *
 * Pins (bpf/scx_pin.h).  Each is opened with the least access it needs:
 * the programs with BPF_F_RDONLY (BPF_OBJ_GET of a program needs only
 * read permission on its pin with that flag, and the descriptor can run
 * it all the same); "shared" and "wake" read-write, because mmap() of a
 * map needs a descriptor with write access even for a read-only mapping
 * (shared is frozen, so nothing can write it anyway) and the doorbell's
 * consumer position is written (the doorbell is root's only: whoever maps
 * it can make every sleeper's poll() return).  Whether this process may
 * open them is up to "umcgctl load" (root only by default, --group GROUP,
 * --users);
 * when it may not, probe fails and says whom the load let in.  A forked
 * child does not inherit the backend's state.
 *
 * Lock order: group->threads_lock, then scx.lock, then core->lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/bpf.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "backend.h"
#include <uapi/umcg_scx.h>

#ifndef SCHED_EXT
#define SCHED_EXT		7
#endif

#define SCX_SYSFS		"/sys/kernel/sched_ext"
#define SCX_BPFFS		"/sys/fs/bpf"
#define SCX_PIN_DIR		SCX_BPFFS "/umcg"
/* How long a worker's registration waits for the servers to register. */
#define SCX_SERVER_WAIT_NS	(10ULL * 1000 * 1000 * 1000)
/* How often a looping server checks that the scheduler is still there. */
#define SCX_GONE_CHECK_NS	(10ULL * 1000 * 1000)
/* A server's sleep when the scheduler cannot hold it (gone, unregistered). */
#define SCX_SLEEP_NS		(10ULL * 1000 * 1000)
/* Tries of a pick that finds its worker between wake-up and enqueue. */
#define SCX_PICK_TRIES		50
/* How long a plain thread's spawn waits for a slot to be freed: -EAGAIN. */
#define SCX_RESERVE_WAIT_NS	(2ULL * 1000 * 1000 * 1000)
/* Exits one look of the table reports after dropping scx.lock. */
#define SCX_EXITED_BATCH	16
/* How often server 0 looks for a dump request (umcg_dump_on_signal()). */
#define SCX_DUMP_POLL_NS	(100ULL * 1000 * 1000)
/*
 * Longest sleep of a doorbell server: bounds the delay of a ring it missed
 * (the ring was full, or another server drained it between this one's
 * drain and its poll()), and how late it sees the scheduler go away.
 */
#define SCX_DOORBELL_MS		50
/*
 * Longest sleep of a bell server.  A ring is never lost by design (the
 * bell is read before the look, and the wait compares it); the bound makes
 * a block the server was not told of (a defect, counted in
 * scx.bell_missed and printed by the dump) cost at most this long, as the
 * doorbell's timeout does, instead of leaving a core idle for good.
 */
#define SCX_BELL_SLEEP_NS	(50ULL * 1000 * 1000)

enum { SCX_PROG_REGISTER, SCX_PROG_PICK, SCX_PROG_UNREGISTER, SCX_PROG_POKE,
       SCX_NR_PROGS };

static const char *const scx_prog_names[SCX_NR_PROGS] = {
	"umcg_register", "umcg_pick", "umcg_unregister", "umcg_poke",
};

/*
 * The process's view of the scheduler: opened and mapped by the first
 * umcg_init() with this backend, and kept (released workers keep running
 * the programs' cleanup at exit).  A umcg_init() after the scheduler was
 * loaded again (its enable_seq moved since the open) opens and maps the
 * new instance: the old one's descriptors and mapping stay, unused, for
 * threads of the earlier group that may still reach them.  scx.lock
 * guards slots[] and the polling; the rest is written under umcg_init()'s
 * lock, while no group of this backend runs.
 */
static struct {
	pthread_mutex_t lock;
	bool open;
	/* sched_ext's enable_seq when the descriptors were opened. */
	uint64_t open_seq;
	int prog_fd[SCX_NR_PROGS];
	const volatile struct umcg_scx_shared *sh;
	size_t map_len;
	/* Slot -> our worker registered there, with a reference. */
	struct umcg_thread *_Atomic slots[UMCG_SCX_MAX_TASKS];
	/* Slot -> its seq when a server last looked; its last blocked_ns seen. */
	_Atomic uint64_t last_seq[UMCG_SCX_MAX_TASKS];
	_Atomic uint64_t base_bns[UMCG_SCX_MAX_TASKS];
	/* Slot -> its worker sleeps in (or is about to sleep in) scx_wait(). */
	_Atomic uint32_t in_wait[UMCG_SCX_MAX_TASKS];
	/*
	 * Slot -> what its next wake() picks, read by scx_wake_prepare()
	 * before its worker was made RUNNING: the slot's seq, shifted left
	 * by one, with bit 0 set if it was in scx_wait() then.  Written and
	 * read by the one thread that hands the worker a core.
	 */
	_Atomic uint64_t wake_seq[UMCG_SCX_MAX_TASKS];
	/*
	 * Slot -> look at it again though its seq did not move: set by the
	 * waker whose pick found the worker asleep in a block that scx_look()
	 * left pending (see there), cleared by the look.
	 */
	_Atomic uint32_t relook[UMCG_SCX_MAX_TASKS];
	/*
	 * One past the highest slot a worker of ours registered in: the
	 * servers' scans stop there (the scheduler hands out the lowest
	 * free slot).  Only grows; raised before the slot enters slots[].
	 */
	_Atomic unsigned int slot_hwm;
	/*
	 * Slot -> a worker of ours that left it without unregistering, whose
	 * DONE a registration there overwrote before a server read it
	 * (scx_worker_register()), with the table's reference: the next look
	 * reports it (scx_poll_events()).  Under scx.lock.
	 */
	struct umcg_thread *_Atomic orphans[UMCG_SCX_MAX_TASKS];
	/* Reserved workers not registered yet. */
	_Atomic unsigned int nr_pending;
	/* The scheduler went away: nothing holds threads any more. */
	_Atomic bool gone;
	/* Bell sleeps that ran to their bound with news waiting. */
	_Atomic uint64_t bell_missed;
	/* sched_ext's enable_seq when the group started; 0: unknown. */
	uint64_t enable_seq;
	/* The doorbell ring: its descriptor (-1: none), its two positions. */
	int wake_fd;
	_Atomic uint64_t *wake_cons;
	const _Atomic uint64_t *wake_prod;
} scx = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake_fd = -1,
};

struct scx_server {
	_Atomic pid_t tid;		/* registered: its tid; else 0 */
	_Atomic bool started;		/* server_start() is done, either way */
	bool doorbell;			/* registered with the doorbell */
	bool bell;			/* registered with its own bell */
	/*
	 * Another server of this process has the bell of its CPU (one of an
	 * earlier group, still leaving): it sleeps on wake_seq alone, for
	 * the bell's bound at most.
	 */
	_Atomic bool no_bell;
	uint32_t slot;			/* its slot: shared.bell[slot] */
	/*
	 * A bell server is in (or about to enter) its futex wait: set before
	 * it reads wake_seq for the last time, cleared after; server_wake()
	 * reads it after it moved wake_seq (both seq_cst), and skips the
	 * futex wake while it reads false.
	 */
	_Atomic bool asleep;
};

struct scx_group {
	struct scx_server *servers;	/* by core index */
	_Atomic uint32_t nr_started;	/* futex word: servers done starting */
};

/* The calling thread's slot, -1 when it is not registered. */
static __thread int scx_self_slot = -1;
/*
 * A server's own: its last bell sleep ran to its bound, unrung (set by
 * scx_server_wait()); events its next look applies are then news no ring
 * announced (scx.bell_missed).  scx_applied counts what its looks apply.
 */
static __thread bool scx_after_bound;
static __thread unsigned long scx_applied;

/*
 * A worker's slot + 1 (0: none), for its wakers, kept in the reserved
 * field of its own word t->task, which only this backend uses (the
 * scheduler never sees it: its words are in the shared area).
 */
static int scx_slot_of(const struct umcg_thread *t)
{
	return (int)__atomic_load_n(&t->task.reserved[0], __ATOMIC_ACQUIRE) - 1;
}

static void scx_set_slot(struct umcg_thread *t, int slot)
{
	__atomic_store_n(&t->task.reserved[0], (uint64_t)(slot + 1), __ATOMIC_RELEASE);
}

static long scx_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

/* A descriptor of pin @name, opened with BPF_OBJ_GET @flags, or -errno. */
static int scx_obj_get(const char *name, uint32_t flags)
{
	char path[128];
	union bpf_attr a;
	long fd;

	snprintf(path, sizeof(path), SCX_PIN_DIR "/%s", name);
	memset(&a, 0, sizeof(a));
	a.pathname = (uint64_t)(uintptr_t)path;
	a.file_flags = flags;
	fd = scx_bpf(BPF_OBJ_GET, &a);
	return fd < 0 ? -errno : (int)fd;
}

/*
 * Run program @prog on @ctx as the calling thread; the program writes its
 * results back into @ctx.  Its return value (0 or -errno), or -errno of
 * bpf(2) itself.
 */
static int scx_run(int prog, void *ctx, size_t size)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.test.prog_fd = scx.prog_fd[prog];
	a.test.ctx_in = (uint64_t)(uintptr_t)ctx;
	a.test.ctx_size_in = size;
	if (scx_bpf(BPF_PROG_TEST_RUN, &a))
		return -errno;
	return (int)a.test.retval;
}

/* Read sysfs file @name of sched_ext into @buf, without the newline. */
static int scx_sysfs_read(const char *name, char *buf, size_t len)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), SCX_SYSFS "/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/* 0 when our scheduler is the one enabled, else -ENODEV and *@why. */
static int scx_check_loaded(const char **why)
{
	static char msg[160];
	char state[32], ops[64];

	if (access(SCX_SYSFS, F_OK)) {
		*why = "the kernel has no sched_ext (" SCX_SYSFS " is missing)";
		return -ENODEV;
	}
	if (scx_sysfs_read("state", state, sizeof(state)) || strcmp(state, "enabled")) {
		*why = "no sched_ext scheduler is loaded (umcgctl load)";
		return -ENODEV;
	}
	if (scx_sysfs_read("root/ops", ops, sizeof(ops)) || strcmp(ops, UMCG_SCX_OPS_NAME)) {
		snprintf(msg, sizeof(msg), "the sched_ext scheduler loaded is \"%s\", "
			 "not umcg's", ops);
		*why = msg;
		return -ENODEV;
	}
	return 0;
}

/*
 * Why pin @name cannot be opened (-@err), into @buf: for a permission
 * error, whom "umcgctl load" let in, read from the pin's mode and group.
 */
static void scx_pin_why(char *buf, size_t len, const char *name, int err)
{
	char path[128], grbuf[1024], who[160];
	struct group gr, *grp = NULL;
	struct stat st;

	snprintf(path, sizeof(path), SCX_PIN_DIR "/%s", name);
	if (err == -EPERM) {
		snprintf(buf, len, "%s: %s: the kernel or a security module "
			 "refuses bpf() to this process", path, strerror(-err));
		return;
	}
	if (err == -ENOENT) {
		snprintf(buf, len, "%s: %s (loaded without the enforcer, or not "
			 "by umcgctl load?)", path, strerror(-err));
		return;
	}
	if (err != -EACCES) {
		snprintf(buf, len, "%s: %s", path, strerror(-err));
		return;
	}
	if (stat(path, &st)) {
		snprintf(buf, len, "%s: permission denied: a directory on the way "
			 "is not searchable (umcgctl load gives others search "
			 "permission on " SCX_BPFFS ")", path);
		return;
	}
	if (!(st.st_mode & 0077)) {
		snprintf(buf, len, "%s: permission denied: the scheduler was loaded "
			 "for root only; see umcgctl load --group GROUP or --users",
			 path);
		return;
	}
	if (st.st_mode & 0070) {
		getgrgid_r(st.st_gid, &gr, grbuf, sizeof(grbuf), &grp);
		if (grp)
			snprintf(who, sizeof(who), "group %s (gid %u)", grp->gr_name,
				 (unsigned int)st.st_gid);
		else
			snprintf(who, sizeof(who), "gid %u", (unsigned int)st.st_gid);
		snprintf(buf, len, "%s: permission denied: the scheduler was loaded "
			 "for root and %s, which this process is not in; see "
			 "umcgctl load --group", path, who);
		return;
	}
	snprintf(buf, len, "%s: permission denied (mode %04o)", path,
		 (unsigned int)(st.st_mode & 07777));
}

/* The programs, with the flags scx_open() opens them with. */
static int scx_prog_get(int prog)
{
	return scx_obj_get(scx_prog_names[prog], BPF_F_RDONLY);
}

/*
 * 0 when the shared area behind @fd carries the ABI this library was built
 * with (uapi/umcg_scx.h), else -ENODEV and why, into @buf.
 */
static int scx_check_abi(int fd, char *buf, size_t len)
{
	long page = sysconf(_SC_PAGESIZE);
	const volatile struct umcg_scx_shared *sh;
	uint32_t magic, version;

	sh = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, 0);
	if (sh == MAP_FAILED) {
		snprintf(buf, len, SCX_PIN_DIR "/shared: mmap: %s", strerror(errno));
		return -ENODEV;
	}
	magic = __atomic_load_n(&sh->abi_magic, __ATOMIC_ACQUIRE);
	version = sh->abi_version;
	munmap((void *)sh, page);
	if (magic == UMCG_SCX_ABI_MAGIC && version == UMCG_SCX_ABI_VERSION)
		return 0;
	if (magic != UMCG_SCX_ABI_MAGIC)
		snprintf(buf, len, "the umcg scheduler loaded publishes no ABI "
			 "version (built before uapi/umcg_scx.h had one); this "
			 "libumcg needs ABI version %u: load the scheduler built "
			 "with it (umcgctl load)", UMCG_SCX_ABI_VERSION);
	else
		snprintf(buf, len, "the umcg scheduler loaded has ABI version %u, "
			 "this libumcg needs %u (uapi/umcg_scx.h): load the "
			 "scheduler built with it (umcgctl load)", version,
			 UMCG_SCX_ABI_VERSION);
	return -ENODEV;
}

static int scx_probe(const char **why)
{
	static char msg[512];
	int ret, fd;

	ret = scx_check_loaded(why);
	if (ret)
		return ret;
	/* What scx_open() needs, opened as it opens it. */
	for (int i = 0; i <= SCX_NR_PROGS; i++) {
		const char *name = i < SCX_NR_PROGS ? scx_prog_names[i] : "shared";

		fd = i < SCX_NR_PROGS ? scx_prog_get(i) : scx_obj_get(name, 0);
		if (fd < 0) {
			scx_pin_why(msg, sizeof(msg), name, fd);
			*why = msg;
			return -ENODEV;
		}
		ret = i < SCX_NR_PROGS ? 0 : scx_check_abi(fd, msg, sizeof(msg));
		close(fd);
		if (ret) {
			*why = msg;
			return ret;
		}
	}
	return 0;
}

/*
 * Open the doorbell ring and map its consumer page (writable) and producer
 * page.  Best effort: without it the servers are held in sched_yield().
 */
static void scx_open_doorbell(long page)
{
	void *cons, *prod;
	int fd;

	/* Read-write: the consumer page is mapped writable. */
	fd = scx_obj_get("wake", 0);
	if (fd < 0)
		return;
	cons = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (cons == MAP_FAILED) {
		close(fd);
		return;
	}
	prod = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, page);
	if (prod == MAP_FAILED) {
		munmap(cons, page);
		close(fd);
		return;
	}
	scx.wake_cons = cons;
	scx.wake_prod = prod;
	scx.wake_fd = fd;
}

/* Consume everything rung so far: poll() then sleeps until the next ring. */
static void scx_doorbell_drain(void)
{
	uint64_t prod = atomic_load_explicit(scx.wake_prod, memory_order_acquire);

	atomic_store_explicit(scx.wake_cons, prod, memory_order_release);
	/* The drain before the look that follows it (scx_server_wait()). */
	atomic_thread_fence(memory_order_seq_cst);
}

/* sched_ext's count of scheduler loads since boot; 0 if it has none. */
static uint64_t scx_enable_seq(void)
{
	char buf[32];

	if (scx_sysfs_read("enable_seq", buf, sizeof(buf)))
		return 0;
	return strtoull(buf, NULL, 10);
}

/*
 * Open the programs and map the shared area, once per scheduler instance.
 * Under umcg_init()'s lock.
 */
static int scx_open(void)
{
	long page = sysconf(_SC_PAGESIZE);
	int fds[SCX_NR_PROGS], sfd, ret, i;
	uint64_t seq = scx_enable_seq();
	char why[512];
	void *map;
	size_t len;

	if (scx.open && (!seq || seq == scx.open_seq))
		return 0;
	for (i = 0; i < SCX_NR_PROGS; i++) {
		fds[i] = scx_prog_get(i);
		if (fds[i] < 0) {
			ret = fds[i];
			goto out_progs;
		}
	}
	/* Read-write: mmap() needs it, although the map is frozen. */
	sfd = scx_obj_get("shared", 0);
	if (sfd < 0) {
		ret = sfd;
		goto out_progs;
	}
	ret = scx_check_abi(sfd, why, sizeof(why));
	if (ret) {
		fprintf(stderr, "libumcg: backend \"scx\": %s\n", why);
		close(sfd);
		goto out_progs;
	}
	len = (sizeof(struct umcg_scx_shared) + page - 1) / page * page;
	/* Frozen: only a read-only mapping is allowed, and all we need. */
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, sfd, 0);
	ret = -errno;
	close(sfd);
	if (map == MAP_FAILED)
		goto out_progs;
	for (i = 0; i < SCX_NR_PROGS; i++)
		scx.prog_fd[i] = fds[i];
	/* Another instance's slots: nothing seen of them applies. */
	if (scx.open) {
		for (i = 0; i < UMCG_SCX_MAX_TASKS; i++) {
			atomic_store(&scx.last_seq[i], 0);
			atomic_store(&scx.base_bns[i], 0);
			atomic_store(&scx.in_wait[i], 0);
			atomic_store(&scx.wake_seq[i], 0);
			atomic_store(&scx.relook[i], 0);
		}
		atomic_store(&scx.slot_hwm, 0);
		scx.wake_fd = -1;
		scx.wake_cons = NULL;
		scx.wake_prod = NULL;
	}
	scx.sh = map;
	scx.map_len = len;
	scx_open_doorbell(page);
	scx.open_seq = seq;
	scx.open = true;
	return 0;

out_progs:
	while (i--)
		close(fds[i]);
	return ret;
}

/*
 * Did the scheduler go away?  Not enabled any more, or enabled again
 * since the group started (a new load does not know our threads).
 * Sticky: once gone, it stays gone for the group.
 */
static bool scx_gone_check(void)
{
	const char *why;
	uint64_t seq;

	if (atomic_load(&scx.gone))
		return true;
	if (scx_check_loaded(&why) ||
	    (scx.enable_seq && (seq = scx_enable_seq()) && seq != scx.enable_seq)) {
		atomic_store(&scx.gone, true);
		return true;
	}
	return false;
}

/*
 * umcg_backend_name(): "scx" until the group saw the scheduler go, then
 * "scx-fallback" for good (the threads run under the kernel's normal
 * scheduler, see the top of this file).  Looks again when not gone yet,
 * so the answer is at most one call late.  Any thread: scx.gone is
 * atomic and only ever set while the group lives.
 */
static const char *scx_report_name(struct umcg_group *g)
{
	return scx_gone_check() ? "scx-fallback" : "scx";
}

static const volatile struct umcg_task *scx_task(unsigned int slot)
{
	return &scx.sh->task[slot & (UMCG_SCX_MAX_TASKS - 1)];
}

static uint64_t scx_pub_seq(unsigned int slot)
{
	return __atomic_load_n(&scx_task(slot)->seq, __ATOMIC_ACQUIRE);
}

static uint64_t scx_pub_bns(unsigned int slot)
{
	return __atomic_load_n(&scx_task(slot)->blocked_ns, __ATOMIC_ACQUIRE);
}

static inline void scx_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* What one publish of a slot wrote, read whole (scx_snapshot()). */
struct scx_snap {
	uint64_t seq, bns;
	uint32_t word, cpu;
};

/* Reads of a slot that catch a publish in progress before we give up. */
#define SCX_SNAP_TRIES		1000

/*
 * Slot @slot as one publish left it: seq, then the fields, then the begin
 * counter, which every publish moves ahead of seq before it writes and
 * seq catches up with after (uapi/umcg_scx.h, UMCG_SCX_TASK_BEGIN).
 * Begin equal to the seq read first: no publish touched the fields
 * meanwhile.  A publish in progress has written its word but not moved
 * seq yet: its word taken with the seq before it is seen as that older
 * move, and the same word again with the new seq as a move of its own (a
 * hold handled twice: the second time the worker read queued already and
 * was released unpicked, C1).  False if a publish stayed in progress for
 * all SCX_SNAP_TRIES reads (its writer lost its CPU): the caller looks
 * again later; its seq moves when it is done.  Not sched_yield(): a
 * server that yields runs dispatch, which releases a held worker when
 * fair-class threads wait (enf_dispatch_contended()).  A scheduler that
 * never writes begin (0) is read as before: seq equal before and after.
 */
static bool scx_snapshot(unsigned int slot, struct scx_snap *sn)
{
	const volatile struct umcg_task *ut = scx_task(slot);
	uint64_t begin;

	for (unsigned int i = 0; i < SCX_SNAP_TRIES; i++) {
		sn->seq = scx_pub_seq(slot);
		sn->word = __atomic_load_n(&ut->state, __ATOMIC_ACQUIRE);
		sn->bns = scx_pub_bns(slot);
		sn->cpu = __atomic_load_n(&ut->cpu, __ATOMIC_RELAXED);
		atomic_thread_fence(memory_order_acquire);
		begin = __atomic_load_n(&ut->reserved[UMCG_SCX_TASK_BEGIN], __ATOMIC_RELAXED);
		if (begin == sn->seq || (!begin && sn->seq == scx_pub_seq(slot)))
			return true;
		scx_relax();
	}
	return false;
}

static int scx_init(struct umcg_group *g)
{
	struct scx_group *sg;
	int ret;

	if (g->time_slice_ns > UMCG_SCX_SLICE_MAX_NS) {
		fprintf(stderr, "libumcg: backend \"scx\": a time slice of %llu ns is "
			"longer than the scheduler's limit (%llu ns)\n",
			(unsigned long long)g->time_slice_ns, UMCG_SCX_SLICE_MAX_NS);
		return -EINVAL;
	}
	ret = scx_open();
	if (ret == -ENODEV)	/* another ABI: scx_open() said which */
		return ret;
	if (ret) {
		fprintf(stderr, "libumcg: backend \"scx\": cannot open the scheduler's "
			"pins in " SCX_PIN_DIR ": %s\n", strerror(-ret));
		return ret;
	}
	sg = calloc(1, sizeof(*sg));
	if (!sg)
		return -ENOMEM;
	sg->servers = calloc(g->nr_cores, sizeof(*sg->servers));
	if (!sg->servers) {
		free(sg);
		return -ENOMEM;
	}
	/* The instance scx_open() opened: a later load is a gone one. */
	scx.enable_seq = scx.open_seq;
	atomic_store(&scx.gone, false);
	g->backend_priv = sg;
	return 0;
}

/* After every server stopped: forget the workers, drop the table's references. */
static void scx_fini(struct umcg_group *g)
{
	struct scx_group *sg = g->backend_priv;

	pthread_mutex_lock(&scx.lock);
	for (unsigned int i = 0; i < UMCG_SCX_MAX_TASKS; i++) {
		struct umcg_thread *t = atomic_exchange(&scx.slots[i], NULL);
		struct umcg_thread *o = atomic_exchange(&scx.orphans[i], NULL);

		if (t)
			umcg_ref_put(t);
		if (o)
			umcg_ref_put(o);
	}
	pthread_mutex_unlock(&scx.lock);
	free(sg->servers);
	free(sg);
	g->backend_priv = NULL;
}

/* Wait (bounded) until every server of @g finished server_start(). */
static void scx_wait_servers(struct umcg_group *g)
{
	struct scx_group *sg = g->backend_priv;
	uint64_t end = umcg_now_ns() + SCX_SERVER_WAIT_NS;
	uint32_t n;

	while ((n = atomic_load(&sg->nr_started)) < g->nr_cores && umcg_now_ns() < end)
		umcg_futex_wait(&sg->nr_started, n, umcg_now_ns() + 1000000ULL);
}

/* The tid of a registered server of @g, core @core's if it has one; 0: none. */
static pid_t scx_server_tid(struct umcg_group *g, int core)
{
	struct scx_group *sg = g->backend_priv;
	pid_t tid;

	scx_wait_servers(g);
	if (core >= 0 && (unsigned int)core < g->nr_cores) {
		tid = atomic_load(&sg->servers[core].tid);
		if (tid)
			return tid;
	}
	for (unsigned int i = 0; i < g->nr_cores; i++) {
		tid = atomic_load(&sg->servers[i].tid);
		if (tid)
			return tid;
	}
	return 0;
}

/* Slots the published area shows taken, by any process. */
static unsigned int scx_slots_taken(void)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < UMCG_SCX_MAX_TASKS; i++) {
		uint32_t s = __atomic_load_n(&scx_task(i)->state, __ATOMIC_RELAXED) &
			     UMCG_TASK_STATE_MASK;

		if (s != UMCG_TASK_NEW && s != UMCG_TASK_DONE)
			n++;
	}
	return n;
}

static int scx_worker_reserve(struct umcg_group *g)
{
	unsigned int pending;

	if (atomic_load(&scx.gone)) {
		atomic_fetch_add(&scx.nr_pending, 1);
		return 0;
	}
	if (!scx_server_tid(g, -1) && !scx_gone_check())
		return -EAGAIN;		/* no server: no group for us */
	pending = atomic_fetch_add(&scx.nr_pending, 1) + 1;
	/*
	 * Full: a plain thread (not a worker, which would keep its core
	 * from the workers that may be exiting) waits for exiting workers to
	 * give slots back, as long as they do: it gives up after
	 * SCX_RESERVE_WAIT_NS in which no slot was freed.
	 */
	for (uint64_t end = umcg_now_ns() + SCX_RESERVE_WAIT_NS, low = ~0ULL;;) {
		unsigned int taken = scx_slots_taken();

		if (taken + pending <= UMCG_SCX_MAX_TASKS)
			return 0;
		if (taken < low) {
			low = taken;
			end = umcg_now_ns() + SCX_RESERVE_WAIT_NS;
		}
		if (umcg_current || umcg_now_ns() >= end)
			break;
		usleep(1000);
		pending = atomic_load(&scx.nr_pending);
	}
	atomic_fetch_sub(&scx.nr_pending, 1);
	return -EAGAIN;
}

static void scx_worker_unreserve(struct umcg_group *g)
{
	atomic_fetch_sub(&scx.nr_pending, 1);
}

static int scx_set_ext(pid_t tid, bool on)
{
	struct sched_param sp = { 0 };

	return sched_setscheduler(tid, on ? SCHED_EXT : SCHED_OTHER, &sp) ? -errno : 0;
}

/*
 * The calling worker @t, in slot @slot, leaves the table and the
 * scheduler; the table's reference goes if the table still held it.
 */
static void scx_table_leave(struct umcg_thread *t, int slot)
{
	struct umcg_scx_unregister_args a = { 0 };
	bool put = false;

	pthread_mutex_lock(&scx.lock);
	if (atomic_load(&scx.slots[slot]) == t) {
		atomic_store(&scx.slots[slot], NULL);
		put = true;
	}
	pthread_mutex_unlock(&scx.lock);
	scx_set_slot(t, -1);
	scx_self_slot = -1;
	scx_run(SCX_PROG_UNREGISTER, &a, sizeof(a));
	if (put)
		umcg_ref_put(t);
}

static void scx_apply(struct umcg_core *c, struct umcg_thread *t, uint32_t type);
static void scx_server_wake(struct umcg_core *c);

/* The calling thread registers as a worker; its word stays t->task. */
static int scx_worker_register(struct umcg_group *g, struct umcg_thread *t)
{
	struct umcg_scx_register_args a = { .flags = UMCG_REGISTER_WORKER };
	int core = t->pref_core >= 0 ? t->pref_core : t->spawn_core;
	struct umcg_thread *old;
	unsigned int slot;
	int ret, old_core = -1;

	if (atomic_load(&scx.gone))
		goto plain;
	a.server_tid = (uint32_t)scx_server_tid(g, core);
	if (!a.server_tid)
		return scx_gone_check() ? 0 : -EAGAIN;
	/*
	 * The scheduler reads t->in_lib (in our context) as we fall asleep
	 * and at slice ends: a sleep inside libumcg is not held (we may
	 * hold what our server needs, a file page's lock in a page fault
	 * included), a slice end there is deferred.
	 */
	a.flags |= UMCG_SCX_REGISTER_IN_LIB;
	a.in_lib = (uint64_t)(uintptr_t)&t->in_lib;
	if (g->time_slice_ns) {
		a.flags |= UMCG_SCX_REGISTER_SLICE;
		a.slice_ns = g->time_slice_ns;
	}
	/*
	 * Registered first, SCHED_EXT then: the running thread changes class
	 * and keeps running.  The other way round it would be one of
	 * nobody's for the scheduler (its FIFO) in between, where a CPU busy
	 * with direct hand-offs (or with fair-class threads) may leave it
	 * long enough for the watchdog.
	 */
	ret = scx_run(SCX_PROG_REGISTER, &a, sizeof(a));
	if (ret && scx_gone_check())
		goto plain;
	if (ret || a.slot >= UMCG_SCX_MAX_TASKS) {
		fprintf(stderr, "libumcg: scx: registering worker %d: %s\n",
			t->tid, strerror(ret ? -ret : ERANGE));
		return ret == -ENOSPC || !ret ? -EAGAIN : ret;
	}
	/*
	 * In the table before SCHED_EXT: from then on every sleep of ours is
	 * a hold the scheduler publishes (a contended scx.lock, here, is
	 * one), and only a worker in the table is looked at and released
	 * (scx_look()).  The other way round such a hold had nobody to end
	 * it but the hold timer.
	 */
	slot = a.slot;
	umcg_ref_get(t);	/* the table's, dropped by unregister or fini */
	pthread_mutex_lock(&scx.lock);
	if (atomic_load(&scx.slot_hwm) <= slot)
		atomic_store(&scx.slot_hwm, slot + 1);	/* under scx.lock */
	/*
	 * Still in the table there: a worker of ours that lost the slot
	 * without unregistering (scx_table_leave() takes it out before it
	 * frees the slot), whose DONE our registration overwrote before a
	 * server read it.  A server reports it (we hold threads_lock, which
	 * the report takes); one still waiting there (twice in a row before
	 * a server looked, rare) only gets its core back: its exit goes
	 * unreported.
	 */
	old = atomic_load(&scx.slots[slot]);
	if (old && !atomic_load(&scx.orphans[slot])) {
		old_core = atomic_load(&old->core);
		atomic_store(&scx.orphans[slot], old);
	} else if (old) {
		scx_apply(&g->cores[0], old, UMCG_EV_BLOCKED);
		umcg_ref_put(old);
		old = NULL;
	}
	atomic_store(&scx.last_seq[slot], scx_pub_seq(slot));
	atomic_store(&scx.base_bns[slot], scx_pub_bns(slot));
	atomic_store(&scx.in_wait[slot], 0);
	atomic_store(&scx.relook[slot], 0);
	atomic_store(&scx.slots[slot], t);
	pthread_mutex_unlock(&scx.lock);
	/* Not @old itself: a server may have reported and freed it by now. */
	if (old_core >= 0 && (unsigned int)old_core < g->nr_cores)
		scx_server_wake(&g->cores[old_core]);
	scx_self_slot = (int)slot;
	scx_set_slot(t, (int)slot);
	ret = scx_set_ext(0, true);
	if (ret) {
		fprintf(stderr, "libumcg: scx: worker %d: SCHED_EXT: %s\n",
			t->tid, strerror(-ret));
		scx_table_leave(t, (int)slot);
		return ret;
	}
	/* Counted as taken in the published area from now on. */
	atomic_fetch_sub(&scx.nr_pending, 1);
	return 0;

plain:
	/* The scheduler is gone: futex hand-offs only, as a plain thread. */
	atomic_fetch_sub(&scx.nr_pending, 1);
	return 0;
}

/* The calling worker leaves: out of the table, the scheduler, SCHED_EXT. */
static void scx_worker_unregister(struct umcg_group *g, struct umcg_thread *t)
{
	int slot = scx_self_slot;

	if (slot < 0)
		return;
	/* Out of sched_ext first: a sleep on scx.lock below is no hold then. */
	scx_set_ext(0, false);
	scx_table_leave(t, slot);
}

/*
 * umcg_fini() let @t go (all servers stopped, the table is empty): the
 * kernel must leave it alone, held or not.  SCHED_OTHER takes it out of
 * any hold; its registration ends with the thread (exit_task).
 */
static void scx_worker_release(struct umcg_group *g, struct umcg_thread *t)
{
	scx_set_ext(t->tid, false);
}

static int scx_server_start(struct umcg_group *g, struct umcg_core *c)
{
	struct scx_group *sg = g->backend_priv;
	struct scx_server *srv = &sg->servers[c->idx];
	struct umcg_scx_register_args a = {
		.flags = UMCG_REGISTER_SERVER,
		.cpu = (uint32_t)c->cpu,
	};
	int ret;

	/* Registered first, as a worker is (scx_worker_register()). */
	a.flags |= UMCG_SCX_REGISTER_BELL;
	ret = scx_run(SCX_PROG_REGISTER, &a, sizeof(a));
	if (ret == -EBUSY) {
		/*
		 * Another server of ours has this CPU's bell (one of an
		 * earlier group that has not unregistered yet): never held
		 * (registered as a doorbell server, but not reading the
		 * ring), it wakes at the bell's bound; what it finds then
		 * counts as missed news.
		 */
		a.flags = UMCG_REGISTER_SERVER | UMCG_SCX_REGISTER_DOORBELL;
		ret = scx_run(SCX_PROG_REGISTER, &a, sizeof(a));
		srv->no_bell = !ret;
	} else if (ret == -EOPNOTSUPP) {
		/* No bells in this kernel: the doorbell ring, if we have it. */
		a.flags = UMCG_REGISTER_SERVER;
		if (scx.wake_fd >= 0)
			a.flags |= UMCG_SCX_REGISTER_DOORBELL;
		ret = scx_run(SCX_PROG_REGISTER, &a, sizeof(a));
	}
	if (!ret) {
		ret = scx_set_ext(0, true);
		if (ret) {
			struct umcg_scx_unregister_args u = { 0 };

			scx_run(SCX_PROG_UNREGISTER, &u, sizeof(u));
		}
	}
	if (ret) {
		srv->no_bell = false;
		fprintf(stderr, "libumcg: scx: registering the server of core %d "
			"(CPU %d): %s\n", c->idx, c->cpu, strerror(-ret));
	} else {
		srv->doorbell = (a.flags & UMCG_SCX_REGISTER_DOORBELL) && !srv->no_bell;
		srv->bell = a.flags & UMCG_SCX_REGISTER_BELL;
		srv->slot = a.slot;
		atomic_store(&srv->tid, gettid());
	}
	atomic_store(&srv->started, true);
	atomic_fetch_add(&sg->nr_started, 1);
	umcg_futex_wake(&sg->nr_started, INT_MAX);
	return ret;
}

/* The server of @c stops: leave the scheduler (best effort). */
static void scx_server_leave(struct umcg_core *c)
{
	struct scx_group *sg = c->group->backend_priv;
	struct scx_server *srv = &sg->servers[c->idx];
	struct umcg_scx_unregister_args a = { 0 };

	if (atomic_load(&srv->tid) != gettid())
		return;
	atomic_store(&srv->tid, 0);
	scx_set_ext(0, false);
	scx_run(SCX_PROG_UNREGISTER, &a, sizeof(a));
}

/*
 * Sleep on our word.  in_wait tells wakers that a sleep the scheduler
 * publishes now is this one (scx_wake()); once it ended, record its
 * blocked_ns as seen before we leave the library (top of this file).
 */
static int scx_wait(struct umcg_thread *self, uint32_t seen, uint64_t abs_ns)
{
	int slot = scx_self_slot, ret;

	if (slot >= 0)
		atomic_store(&scx.in_wait[slot], 1);
	ret = umcg_state_wait(self, seen, abs_ns);
	if (slot >= 0) {
		atomic_store(&scx.base_bns[slot], scx_pub_bns(slot));
		atomic_store(&scx.in_wait[slot], 0);
	}
	return ret;
}

/*
 * Pick @tid (slot @slot) onto @cpu, as of the slot's seq @seq.  @woken:
 * the caller has just woken it from scx_wait(), and read @seq after that
 * wake-up: then a worker still asleep in that sleep (the slot has not
 * moved since) goes to @cpu as it wakes, and the hold of that wake-up is
 * moved (UMCG_SCX_PICK_WOKEN).  Otherwise the hold the caller saw at @seq
 * is moved (UMCG_SCX_PICK_SEQ).  Never a later hold: the worker ran on
 * since, and that hold is a block of its own (C3), not the caller's to
 * end (-ESTALE).  Retried while the slot reads RUNNABLE (between its
 * wake-up and its enqueue, the pick cannot find it yet).  0, or the
 * program's error; errors of bpf(2) itself (the scheduler went away) are
 * returned as they are.
 */
static int scx_pick(pid_t tid, int slot, int cpu, bool woken, uint64_t seq)
{
	struct umcg_scx_pick_args a = {
		.tid = (uint32_t)tid,
		.cpu = (uint32_t)cpu,
		.flags = woken ? UMCG_SCX_PICK_WOKEN : UMCG_SCX_PICK_SEQ,
		.pad = (uint32_t)seq,
	};
	int ret = -EAGAIN;

	for (int i = 0; i < SCX_PICK_TRIES && ret == -EAGAIN; i++) {
		ret = scx_run(SCX_PROG_PICK, &a, sizeof(a));
		if (ret != -EAGAIN)
			break;
		if ((__atomic_load_n(&scx_task(slot)->state, __ATOMIC_ACQUIRE) &
		     UMCG_TASK_STATE_MASK) != UMCG_TASK_RUNNABLE)
			break;	/* not held, and not about to be */
		scx_relax();
	}
	return ret;
}

/*
 * scx_pick() onto @cpu, or, when @cpu is outside @t's affinity (-EINVAL:
 * a sched_setaffinity() or cpuset change of someone else's, or the kernel
 * broke it when the CPU went offline), onto the first CPU it may run on:
 * it runs now, where it can, rather than held until its hold time ends.
 */
static int scx_pick_allowed(struct umcg_thread *t, int slot, int cpu, bool woken,
			    uint64_t seq)
{
	cpu_set_t set;
	int ret;

	ret = scx_pick(t->tid, slot, cpu, woken, seq);
	if (ret != -EINVAL || sched_getaffinity(t->tid, sizeof(set), &set))
		return ret;
	for (int i = 0; i < CPU_SETSIZE; i++)
		if (i != cpu && CPU_ISSET(i, &set))
			return scx_pick(t->tid, slot, i, woken, seq);
	return ret;
}

/*
 * @t is about to be made RUNNING by the caller (backend.h): what its wake
 * picks.  Not in scx_wake(): the waker may lose its CPU between making @t
 * RUNNING and the pick, and @t, woken by the futex (or moved by its
 * hold's end), may run on, block and be held again meanwhile; a seq read
 * then named that new hold, which the pick moved: a block of @t's own
 * ended by nobody's pick (C3), its user code run while libumcg had it
 * queued (C1; traced in scx_backend_stress: a wake entered before a
 * nanosleep() of its worker, picked the hold of that nanosleep 5 ms
 * later).  Read here, @t is still held or asleep in scx_wait(): a worker
 * not RUNNING does not leave libumcg.
 */
static void scx_wake_prepare(struct umcg_thread *t)
{
	int slot = scx_slot_of(t);
	uint64_t seq;

	if (slot < 0 || slot >= UMCG_SCX_MAX_TASKS)
		return;
	seq = __atomic_load_n(&scx_task(slot)->seq, __ATOMIC_SEQ_CST);
	/* After seq: still in scx_wait() means seq was read during that sleep. */
	atomic_store(&scx.wake_seq[slot], seq << 1 | !!atomic_load(&scx.in_wait[slot]));
}

/*
 * Does worker @slot run for the scheduler, as of the wake-up we just gave
 * it (the kernel's wake-up of a worker asleep in scx_wait() publishes that
 * before futex_wake() returns, unless the kernel queued the wake-up to the
 * worker's CPU: then the slot still reads BLOCKED; a hold publishes
 * RUNNABLE)?  Then a
 * umcg_pick has nothing to do: it never slept, it woke inside libumcg and
 * runs on (where its affinity, set by umcg_pin_to_core(), puts it), or the
 * hold timer released it.
 */
static bool scx_woken_running(int slot)
{
	struct scx_snap sn;

	return scx_snapshot(slot, &sn) &&
	       (sn.word & UMCG_TASK_STATE_MASK) == UMCG_TASK_RUNNING;
}

/* Does worker @slot sleep, for the scheduler? */
static bool scx_asleep(int slot)
{
	struct scx_snap sn;

	return scx_snapshot(slot, &sn) &&
	       (sn.word & UMCG_TASK_STATE_MASK) == UMCG_TASK_BLOCKED;
}

static void scx_wake(struct umcg_thread *t)
{
	struct umcg_group *g = t->group;
	int core = atomic_load(&t->core);
	int slot = scx_slot_of(t);
	uint64_t ws;

	/* No system call unless @t sleeps in scx_wait() (counted). */
	umcg_state_wake(t);
	if (atomic_load(&scx.gone) || core < 0 || !g || slot < 0 ||
	    slot >= UMCG_SCX_MAX_TASKS)
		return;
	/*
	 * The futex wake came first, so a failed pick loses nothing: at
	 * worst the scheduler holds the thread until its hold time ends.
	 * The seq and in_wait were read before @t was made RUNNING
	 * (scx_wake_prepare()): a worker in scx_wait() then is woken from
	 * that sleep (whose end is published once futex_wake() returned:
	 * quiescent() ran before the wake-up found it off its runqueue); a
	 * worker not in it was held (the policy picked it after its wake-up
	 * was published): that hold only.  Whatever it did since it ran on
	 * is not ours to end (-ESTALE).
	 */
	if (scx_woken_running(slot))
		return;
	ws = atomic_load(&scx.wake_seq[slot]);
	if (!scx_pick_allowed(t, slot, g->cores[core].cpu, ws & 1, ws >> 1) ||
	    !scx_asleep(slot))
		return;
	/* Asleep in a block left pending (scx_block_unpicked()): look again. */
	atomic_store(&scx.relook[slot], 1);
	scx_server_wake(&g->cores[core]);
}

static int scx_switch_to(struct umcg_thread *self, uint32_t seen, struct umcg_thread *next)
{
	scx_wake(next);
	umcg_ref_put(next);
	return scx_wait(self, seen, 0);
}

/* A CPU to let @t run libumcg code on: its own, else where it slept. */
static int scx_cpu_for(struct umcg_thread *t, uint32_t slept_cpu)
{
	return t->pinned_cpu >= 0 ? t->pinned_cpu : (int)slept_cpu;
}

/*
 * Let @t, held though it slept inside libumcg, run (see the top of this
 * file): the hold published at @seq only.
 */
static void scx_release_held(struct umcg_thread *t, int slot,
			     uint32_t slept_cpu, uint64_t seq)
{
	scx_pick_allowed(t, slot, scx_cpu_for(t, slept_cpu), false, seq);
}

static void scx_apply(struct umcg_core *c, struct umcg_thread *t, uint32_t type)
{
	struct umcg_event ev = { .type = type, .thread = t };

	scx_applied++;
	umcg_apply_event(c, &ev);
}

/*
 * @t's time slice ended and the scheduler holds it (published RUNNABLE |
 * UMCG_TF_PREEMPT, which it does only while @t is outside libumcg): if
 * @t owns its core (RUNNING), take the core and queue @t
 * (UMCG_EV_PREEMPTED, C6); if the policy holds it already (RUNNABLE: it
 * ran unpicked after an earlier hold expired), its pick moves it.  Under
 * scx.lock, so no other server takes a RUNNING @t's core meanwhile, and
 * @t, held, does not give it away.  False: not ours to keep, release it.
 */
static bool scx_preempted(struct umcg_core *c, struct umcg_thread *t)
{
	switch (umcg_state_of(umcg_thread_load_state(t))) {
	case UMCG_TASK_RUNNING:
		scx_apply(c, t, UMCG_EV_PREEMPTED);
		return true;
	case UMCG_TASK_RUNNABLE:
		return true;
	default:
		return false;
	}
}

/* The seq of the last request to yield honoured by this worker. */
static __thread uint64_t scx_preempt_seq;

/*
 * Called by a worker as it leaves libumcg: did the scheduler find its time
 * slice used up while it was inside, and ask it to yield (published
 * RUNNING | UMCG_TF_PREEMPT)?  Each request (seq) once.  The scheduler
 * publishes that only in the worker's own context, so the two reads agree.
 */
static bool scx_preempt_deferred(struct umcg_thread *self)
{
	int slot = scx_self_slot;
	struct scx_snap sn;

	if (slot < 0 || slot >= UMCG_SCX_MAX_TASKS || atomic_load(&scx.gone))
		return false;
	if (!scx_snapshot(slot, &sn))
		return false;
	if ((sn.word & (UMCG_TASK_STATE_MASK | UMCG_TF_PREEMPT)) !=
	    (UMCG_TASK_RUNNING | UMCG_TF_PREEMPT) || sn.seq == scx_preempt_seq)
		return false;
	scx_preempt_seq = sn.seq;
	return true;
}

/*
 * Worker @t, out of the table, lost its slot without unregistering (the
 * scheduler published DONE there).  Under scx.lock.  Returns true when
 * @t exited: the caller applies UMCG_EV_EXITED and drops the table's
 * reference once it has dropped scx.lock (the exit report takes
 * group->threads_lock, which comes before scx.lock).
 *
 * The scheduler publishes DONE from exit_task, which the kernel also runs
 * for every live thread when the scheduler goes away (unloaded, ejected):
 * such a thread runs on under the fair class.  Its tid tells them apart:
 * a thread other than the leader is unhashed (tgkill() fails with ESRCH)
 * before its last schedule, hence before its exit_task.  For a live one
 * (and a zombie leader, which still has its tid) the core is taken back
 * as for a block, here, and the reference dropped.
 */
static bool scx_left_slot(struct umcg_core *c, struct umcg_thread *t)
{
	if (syscall(SYS_tgkill, getpid(), t->tid, 0) && errno == ESRCH)
		return true;
	scx_apply(c, t, UMCG_EV_BLOCKED);
	umcg_ref_put(t);
	return false;
}

/*
 * A block of @t (published @st, a blocked_ns not seen before) while the
 * policy has it queued: its hold ended unpicked (runs_unpicked), it ran
 * on and slept again.  That block takes no core (it owns none); once the
 * policy picks @t, it does: scx_look() leaves it pending (base_bns not
 * moved) while @t sleeps, and the pick, which then finds @t asleep, asks
 * for another look (scx_wake()), where @t is RUNNING and the block takes
 * its core.  Applied now, the block would be dropped, and the pick would
 * give the core to a thread asleep in the kernel, the core lost until it
 * woke (seen under umcg-run: a pthread_cond_wait() for good).  A block
 * that ended already and was held again needs no pick of its own: the
 * policy's pick moves that hold.
 */
static bool scx_block_unpicked(struct umcg_thread *t, uint32_t st)
{
	return (st == UMCG_TASK_BLOCKED || st == UMCG_TASK_RUNNABLE) &&
	       umcg_state_of(umcg_thread_load_state(t)) == UMCG_TASK_RUNNABLE;
}

/*
 * What slot @slot (worker @t) published since we last looked: one
 * consistent snapshot, then the events.  Under scx.lock.  Returns true
 * when @t exited (scx_left_slot()).
 */
static bool scx_look(struct umcg_core *c, unsigned int slot, struct umcg_thread *t)
{
	struct scx_snap sn;
	uint64_t seq, bns, base;
	uint32_t st, word, cpu;
	bool in_lib;

	if (!scx_snapshot(slot, &sn))
		return false;	/* still pending: the next look */
	seq = sn.seq;
	word = sn.word;
	bns = sn.bns;
	cpu = sn.cpu;
	st = word & UMCG_TASK_STATE_MASK;
	/* The exchange first: the waker set relook after it made @t RUNNING. */
	if (!atomic_exchange(&scx.relook[slot], 0) &&
	    seq == atomic_load(&scx.last_seq[slot]))
		return false;
	atomic_store(&scx.last_seq[slot], seq);

	if (st == UMCG_TASK_DONE) {
		/* It exited registered (no umcg exit path): out of the table. */
		atomic_store(&scx.slots[slot], NULL);
		return scx_left_slot(c, t);
	}
	if (st != UMCG_TASK_BLOCKED && st != UMCG_TASK_RUNNABLE)
		return false;
	/* in_lib first, then base: see scx_wait(). */
	in_lib = atomic_load(&t->in_lib) != 0;
	base = atomic_load(&scx.base_bns[slot]);
	if (bns != base && !in_lib && scx_block_unpicked(t, st)) {
		if (st == UMCG_TASK_BLOCKED)
			return false;	/* pending until its pick: scx_wake() */
		/* Over, and held again: the policy's pick moves that hold. */
		atomic_store(&scx.base_bns[slot], bns);
		return false;
	}
	if (bns != base && atomic_compare_exchange_strong(&scx.base_bns[slot], &base, bns) &&
	    !in_lib)
		scx_apply(c, t, UMCG_EV_BLOCKED);
	if (st != UMCG_TASK_RUNNABLE)
		return false;
	if (!atomic_load(&t->in_lib) &&
	    umcg_state_of(umcg_thread_load_state(t)) == UMCG_TASK_BLOCKED) {
		/* Held until the policy picks it: C3. */
		scx_apply(c, t, UMCG_EV_WOKEN);
		return false;
	}
	if ((word & UMCG_TF_PREEMPT) && scx_preempted(c, t))
		return false;
	scx_release_held(t, slot, cpu, seq);
	return false;
}

/*
 * Look at every slot of ours and apply what changed, in order, under
 * scx.lock (one server at a time); exits after it (scx_look()), at most
 * SCX_EXITED_BATCH a call.  Returns 0: the events are applied here
 * already.
 */
static int scx_poll_events(struct umcg_core *c, struct umcg_event *ev, int max)
{
	struct umcg_thread *exited[SCX_EXITED_BATCH];
	unsigned long applied = scx_applied;
	unsigned int hwm;
	int n = 0;

	pthread_mutex_lock(&scx.lock);
	hwm = atomic_load(&scx.slot_hwm);
	for (unsigned int i = 0; i < hwm; i++) {
		struct umcg_thread *o = atomic_load(&scx.orphans[i]);
		struct umcg_thread *t = atomic_load(&scx.slots[i]);

		if (!t && !o)
			continue;
		/* Full: what is left still shows as pending, we come back. */
		if (n + 2 > SCX_EXITED_BATCH)
			break;
		if (o) {
			atomic_store(&scx.orphans[i], NULL);
			if (scx_left_slot(c, o))
				exited[n++] = o;
		}
		if (t && scx_look(c, i, t))
			exited[n++] = t;
	}
	pthread_mutex_unlock(&scx.lock);
	/* A thread's exit is its last event: nothing of it can follow. */
	for (int i = 0; i < n; i++) {
		scx_apply(c, exited[i], UMCG_EV_EXITED);
		umcg_ref_put(exited[i]);
	}
	if (scx_after_bound && scx_applied != applied)
		atomic_fetch_add(&scx.bell_missed, 1);
	scx_after_bound = false;
	return 0;
}

static bool scx_events_pending(void)
{
	unsigned int n = atomic_load(&scx.slot_hwm);

	for (unsigned int i = 0; i < n; i++)
		if ((atomic_load(&scx.slots[i]) &&
		     (scx_pub_seq(i) != atomic_load(&scx.last_seq[i]) ||
		      atomic_load(&scx.relook[i]))) ||
		    atomic_load(&scx.orphans[i]))
			return true;
	return false;
}

/*
 * Until c->wake_seq moves from @seen, a slot of ours changed, or the group
 * stops: sleep on our bell and wake_seq (read the bell, look, wait for
 * either to move), which the scheduler rings on news and
 * scx_server_wake() moves; with the doorbell instead, sleep on it (drain,
 * look, poll()); with neither, yield, which is where the scheduler holds
 * us (it runs us on news).  Without the scheduler: sleep on wake_seq,
 * with a timeout.
 */
static uint64_t scx_missed_news(void)
{
	return atomic_load(&scx.bell_missed);
}

static int scx_server_wait(struct umcg_core *c, uint32_t seen)
{
	struct umcg_group *g = c->group;
	struct scx_group *sg = g->backend_priv;
	struct scx_server *srv = &sg->servers[c->idx];
	bool registered = atomic_load(&srv->tid) == gettid();
	bool doorbell = registered && srv->doorbell;
	/* One whose CPU's bell is another's sleeps as a bell server does. */
	bool bell = registered && (srv->bell || atomic_load(&srv->no_bell));
	const volatile uint32_t *bellw = registered && srv->bell ?
					 &scx.sh->bell[srv->slot] : NULL;
	uint64_t checked = umcg_now_ns(), dump_ns = 0;
	struct pollfd pfd = { .fd = scx.wake_fd, .events = POLLIN };
	uint32_t rung = 0, last_rung = 0;
	int ret = 0;

	if (bellw)
		last_rung = __atomic_load_n(bellw, __ATOMIC_ACQUIRE);
	for (;;) {
		uint64_t now;

		if (bellw) {
			/* Read before the look: a ring after it fails the wait. */
			rung = __atomic_load_n(bellw, __ATOMIC_ACQUIRE);
			atomic_thread_fence(memory_order_seq_cst);
		}
		if (doorbell && !atomic_load(&scx.gone)) {
			/* Drained before the look: a ring after it wakes poll(). */
			scx_doorbell_drain();
		}
		if (atomic_load(&g->stopping)) {
			scx_server_leave(c);
			return 0;
		}
		if (atomic_load(&c->wake_seq) != seen || scx_events_pending())
			return 0;
		now = umcg_now_ns();
		if (c->idx == 0 && atomic_load(&g->dump_signal) && now >= dump_ns) {
			if (atomic_exchange(&g->dump_requested, 0))
				umcg_dump(stderr);
			dump_ns = now + SCX_DUMP_POLL_NS;
		}
		if (!registered || atomic_load(&scx.gone)) {
			umcg_futex_wait(&c->wake_seq, seen, umcg_now_ns() + SCX_SLEEP_NS);
			continue;
		}
		if (bell) {
			/*
			 * Rung with no news: the scheduler's exit rings every
			 * bell (or a worker's news was applied by another
			 * server meanwhile).  The sleep is bounded
			 * (SCX_BELL_SLEEP_NS, the dump's poll for server 0):
			 * news found only at the bound is a missed ring,
			 * counted.
			 */
			uint64_t until = now + (c->idx == 0 && atomic_load(&g->dump_signal) ?
						SCX_DUMP_POLL_NS : SCX_BELL_SLEEP_NS);

			if (rung != last_rung && scx_gone_check())
				continue;
			last_rung = rung;
			atomic_store(&srv->asleep, true);
			if (atomic_load(&c->wake_seq) == seen)
				ret = bellw ? umcg_futex_wait2(&c->wake_seq, seen, bellw,
							       rung, until) :
					      umcg_futex_wait(&c->wake_seq, seen, until);
			atomic_store(&srv->asleep, false);
			/*
			 * Slept the whole bound unrung: what the next look
			 * applies no ring announced.  (A slot's seq also moves
			 * for what needs no server, a sleep inside libumcg:
			 * only applied events count.)
			 */
			scx_after_bound = ret == -ETIMEDOUT &&
					  (!bellw || __atomic_load_n(bellw, __ATOMIC_ACQUIRE) == rung) &&
					  atomic_load(&c->wake_seq) == seen;
			ret = 0;
			continue;
		}
		if (doorbell) {
			/* No ring for that long: the scheduler may be gone. */
			if (poll(&pfd, 1, SCX_DOORBELL_MS) == 0)
				scx_gone_check();
			continue;
		}
		/* Held, we come back only on news: a quick return means it is gone. */
		if (now - checked >= SCX_GONE_CHECK_NS) {
			checked = now;
			if (scx_gone_check())
				continue;
		}
		sched_yield();
	}
}

static void scx_server_wake(struct umcg_core *c)
{
	struct scx_group *sg = c->group->backend_priv;
	struct umcg_scx_poke_args a = { .cpu = (uint32_t)c->cpu };
	pid_t tid;

	if (!sg)
		return;
	tid = atomic_load(&sg->servers[c->idx].tid);
	if (tid == gettid())
		return;		/* awake: it looks again before it yields */
	/*
	 * A bell server sleeps on wake_seq too: no program to run, and no
	 * wake while it is not asleep (it reads wake_seq again first).  Once
	 * the scheduler is gone it sleeps on wake_seq alone, without the
	 * flag: a waker that saw gone false moved wake_seq before the server
	 * set it, hence before its wait compares.
	 */
	if (tid && (sg->servers[c->idx].bell ||
		    atomic_load(&sg->servers[c->idx].no_bell)) &&
	    !atomic_load(&scx.gone)) {
		if (atomic_load(&sg->servers[c->idx].asleep))
			umcg_futex_wake(&c->wake_seq, 1);
		return;
	}
	if (tid && !atomic_load(&scx.gone) && scx_run(SCX_PROG_POKE, &a, sizeof(a)) == 0)
		return;
	umcg_futex_wake(&c->wake_seq, 1);
}

const struct umcg_backend_ops umcg_backend_scx = {
	.name			= "scx",
	.probe			= scx_probe,
	.init			= scx_init,
	.fini			= scx_fini,
	.worker_register	= scx_worker_register,
	.worker_unregister	= scx_worker_unregister,
	.server_start		= scx_server_start,
	.wait			= scx_wait,
	.wake			= scx_wake,
	.switch_to		= scx_switch_to,
	.server_wait		= scx_server_wait,
	.server_wake		= scx_server_wake,
	.poll_events		= scx_poll_events,
	.missed_news		= scx_missed_news,
	.worker_reserve		= scx_worker_reserve,
	.worker_unreserve	= scx_worker_unreserve,
	.worker_release		= scx_worker_release,
	.report_name		= scx_report_name,
	.preempt_deferred	= scx_preempt_deferred,
	.wake_prepare		= scx_wake_prepare,
	.pin_by_waker		= true,
	.kernel_moves		= false,
	.runs_unpicked		= true,
};
