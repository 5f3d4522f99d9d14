/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note OR MIT */
/*
 * umcg_stats.h - the statistics area a libumcg process publishes while it
 * runs, read by "umcgctl top".
 *
 * libumcg keeps its group's counters in this area (they are not copied:
 * the runtime's hot paths add to these very words, with relaxed atomics,
 * each core's in its own cache lines) and, unless $UMCG_STATS is "0",
 * backs the area with the POSIX shared-memory object UMCG_STATS_SHM_FMT
 * (/dev/shm/umcg.<pid>), created O_EXCL with mode 0600, so that only the
 * process's own user and root can open it.  It is unlinked at umcg_fini()
 * and at exit; one left behind by a process that died names a pid that no
 * longer runs (or runs another program): readers ignore it, and umcgctl
 * removes it.
 *
 * Layout, at offset 0:
 *
 *   struct umcg_stats_header   UMCG_STATS_HEADER_SIZE bytes
 *   struct umcg_stats_core     @nr_cores of them, UMCG_STATS_CORE_SIZE each
 *
 * and @size = UMCG_STATS_SIZE(@nr_cores) is the object's length.  A reader
 * checks @magic, @version, @header_size, @core_size and @size against the
 * file before it trusts anything else; a version it does not know is not
 * read.  Fields are only ever added in @reserved space, with a new @version.
 *
 * Counters (the *_total fields, per core and per group) only grow, from 0
 * at umcg_init(); readers take differences over their own interval.  The
 * per-core ones are written by whichever thread acts on that core, the
 * group ones by any thread.
 * Everything else is a snapshot: the process's stats thread refreshes it
 * when a reader asks, by incrementing @req_seq and FUTEX_WAKE on it (a
 * shared futex: the area is a file), and stores the request it served in
 * @snap_seq after the snapshot's fields (a release).  A reader that sees
 * @snap_seq reach its request reads a snapshot at least that recent.
 *
 * All fields are little-endian native words of the writer; the area never
 * leaves the machine.
 */
#ifndef _UAPI_UMCG_STATS_H
#define _UAPI_UMCG_STATS_H

#include <linux/types.h>

#include "umcg.h"	/* __UMCG_STATIC_ASSERT */

/* "umcgstat" in memory, little-endian. */
#define UMCG_STATS_MAGIC	0x7461747367636d75ULL
#define UMCG_STATS_VERSION	2

/* shm_open() name of process @pid's area ("/umcg.%d"). */
#define UMCG_STATS_SHM_FMT	"/umcg.%d"
/* Where Linux mounts the shm_open() names. */
#define UMCG_STATS_SHM_DIR	"/dev/shm"
#define UMCG_STATS_SHM_PREFIX	"umcg."

/* $UMCG_STATS: "0" keeps the area private (anonymous memory, no file). */
#define UMCG_STATS_ENV		"UMCG_STATS"

/* Bounds a reader enforces before it believes @nr_cores. */
#define UMCG_STATS_MAX_CORES	4096

/*
 * Hand-off latency histogram: bucket i counts samples of [2^i, 2^(i+1))
 * nanoseconds (bucket 0 also counts 0 ns), the last one everything from
 * 2^(UMCG_STATS_HIST_BUCKETS - 1) ns (about 1.1 s) up.
 *
 * A sample is the time a core spent between owners: from the moment
 * libumcg took the core from its worker — the worker left RUNNING itself
 * (yield, park, switch, exit, an announced blocking call), or the
 * monitor (user backend) or a kernel event (kmod, scx) reported it
 * blocked, stamped with the kernel's block time where the kernel records
 * one (struct umcg_task.blocked_ns) — until the next worker given that
 * core is back in its own code (it saw RUNNING in libumcg).  A worker the
 * kernel runs from the stage on a block (kmod's hand-off) or out of its
 * hold resumes without passing libumcg: not sampled.  Samples are taken
 * (two clock reads per switch) only from a reader's first request on
 * (@req_seq not 0): before one, the histogram reads zero.
 */
#define UMCG_STATS_HIST_BUCKETS	31

/* Per-state counts in the snapshot (struct umcg_stats_header.state). */
#define UMCG_STATS_ST_NEW	0	/* created, not yet handed to the policy */
#define UMCG_STATS_ST_RUNNABLE	1	/* queued after a yield, preemption or start */
#define UMCG_STATS_ST_WOKEN	2	/* RUNNABLE after a wake (its blocking call
					 * completed, or unparked): held until picked (C3) */
#define UMCG_STATS_ST_RUNNING	3
#define UMCG_STATS_ST_BLOCKED	4
#define UMCG_STATS_ST_PARKED	5	/* also sleeping (umcg_sleep_ns()) and joining */
#define UMCG_STATS_ST_DONE	6	/* exited, not yet joined */
#define UMCG_STATS_NR_ST	8	/* two spare */

/* Flags of struct umcg_stats_header.flags. */
#define UMCG_STATS_F_LIVE	(1U << 0)	/* the group runs (cleared at umcg_fini()) */

/**
 * struct umcg_stats_header - the area's first bytes
 * @magic:        UMCG_STATS_MAGIC
 * @version:      UMCG_STATS_VERSION
 * @header_size:  UMCG_STATS_HEADER_SIZE
 * @core_size:    UMCG_STATS_CORE_SIZE
 * @nr_cores:     managed cores: struct umcg_stats_core entries that follow
 * @size:         UMCG_STATS_SIZE(nr_cores): the object's length
 * @pid:          the publishing process
 * @flags:        UMCG_STATS_F_*
 * @start_ns:     CLOCK_MONOTONIC time of umcg_init()
 * @backend:      "user", "kmod" or "scx", NUL-padded
 * @policy:       the policy's name, NUL-padded (cut at 15 characters)
 * @own_threads:  libumcg's own threads in the process (servers, monitor,
 *                the stats thread): neither workers nor unmanaged
 * @pad0:         zero
 * @spawned_total ... @policy_errors_total: group counters, as struct
 *                umcg_stats in <umcg.h> (@refused_total: threads that could
 *                not be made workers; @live: workers not yet done, a level).
 *                Since version 2, @blocks_total, @preempts_total,
 *                @steals_total and @handoffs_total are counted per core
 *                (struct umcg_stats_core), so that no cache line is shared
 *                by the cores on every block; here they are the cores'
 *                sums as of @snap_ns, part of the snapshot
 * @req_seq:      a reader's request for a snapshot (increment, then
 *                FUTEX_WAKE, shared)
 * @snap_seq:     the request the snapshot below answers
 * @snap_ns:      CLOCK_MONOTONIC time of the snapshot
 * @state:        workers in each UMCG_STATS_ST_* at @snap_ns
 * @workers:      workers in the group's list at @snap_ns
 * @pad1:         zero
 * @reserved:     zero
 */
struct umcg_stats_header {
	__u64	magic;
	__u32	version;
	__u32	header_size;
	__u32	core_size;
	__u32	nr_cores;
	__u64	size;
	__u32	pid;
	__u32	flags;
	__u64	start_ns;
	char	backend[16];
	char	policy[16];
	__u32	own_threads;
	__u32	pad0[3];
	/* 96: counters, one cache line's worth, written by any thread */
	__u64	spawned_total;
	__u64	exited_total;
	__u64	blocks_total;
	__u64	preempts_total;
	__u64	steals_total;
	__u64	live;
	__u64	handoffs_total;
	__u64	refused_total;
	__u64	policy_errors_total;
	/* 168: the snapshot */
	__u32	req_seq;
	__u32	snap_seq;
	__u64	snap_ns;
	__u32	state[UMCG_STATS_NR_ST];
	__u32	workers;
	__u32	pad1;
	__u64	reserved[28];
};
#define UMCG_STATS_HEADER_SIZE	448

/**
 * struct umcg_stats_core - one managed core, in cache lines of its own
 * @switches_total: times a worker was given this core
 * @yields_total:   yields that gave this core away
 * @parks_total:    parks (and switches away) that gave this core away
 * @vacated_ns:     libumcg's own: when the core lost its last owner, 0 if
 *                  it has one or the time was sampled already
 * @hist:           hand-off latency samples (UMCG_STATS_HIST_BUCKETS)
 * @hist_pad:       zero
 * @cpu:            the CPU it runs on
 * @cur_tid:        snapshot: tid of the worker that owns it, 0 for none
 * @cur_name:       snapshot: that worker's name, NUL-padded
 * @blocks_total:   workers that left this core blocked in the kernel
 *                  (version 2)
 * @preempts_total: workers this core's time slice preempted (version 2)
 * @steals_total:   runnable workers this core took from another core's
 *                  queue (version 2)
 * @handoffs_total: blocks on this core whose core the kernel gave straight
 *                  to the worker staged next (version 2)
 * @reserved:       zero
 */
struct umcg_stats_core {
	__u64	switches_total;
	__u64	yields_total;
	__u64	parks_total;
	__u64	vacated_ns;
	__u64	hist[UMCG_STATS_HIST_BUCKETS];
	__u64	hist_pad;
	/* 288: the snapshot */
	__u32	cpu;
	__u32	cur_tid;
	char	cur_name[16];
	/* 312: counters again (version 2) */
	__u64	blocks_total;
	__u64	preempts_total;
	__u64	steals_total;
	__u64	handoffs_total;
	__u64	reserved[21];
};
#define UMCG_STATS_CORE_SIZE	512

#define UMCG_STATS_SIZE(nr_cores) \
	((__u64)UMCG_STATS_HEADER_SIZE + (__u64)(nr_cores) * UMCG_STATS_CORE_SIZE)

__UMCG_STATIC_ASSERT(sizeof(struct umcg_stats_header) == UMCG_STATS_HEADER_SIZE,
		     "struct umcg_stats_header layout");
__UMCG_STATIC_ASSERT(sizeof(struct umcg_stats_core) == UMCG_STATS_CORE_SIZE,
		     "struct umcg_stats_core layout");
__UMCG_STATIC_ASSERT(__builtin_offsetof(struct umcg_stats_header, spawned_total) == 96,
		     "group counters at 96");
__UMCG_STATIC_ASSERT(__builtin_offsetof(struct umcg_stats_header, req_seq) == 168,
		     "snapshot at 168");
__UMCG_STATIC_ASSERT(__builtin_offsetof(struct umcg_stats_core, cpu) == 288,
		     "core snapshot at 288");
__UMCG_STATIC_ASSERT(__builtin_offsetof(struct umcg_stats_core, blocks_total) == 312,
		     "core event counters at 312");

#endif /* _UAPI_UMCG_STATS_H */
