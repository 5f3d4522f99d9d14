/* SPDX-License-Identifier: GPL-2.0 */
/*
 * native_lib.h - the "native library" of bench/native: the routine every
 * task of the native-blocking workload calls, from C (bench/native), from
 * Go through cgo (bench/peers/go-native) and from Java through JNI
 * (bench/peers/java, PeerNative).  It knows nothing of libumcg: it is the
 * kind of C code a program calls and whose blocking its runtime cannot see.
 *
 * One step of task i: compute C us (a busy loop calibrated once per process
 * on the thread's CPU clock, so a preempted step still does the same work),
 * then block in the kernel for B us:
 *   NB_READ   read() on the task's own pipe, which the feeder thread writes
 *             B us after the task asked;
 *   NB_MUTEX  pthread_mutex_lock() of the mutex the task shares with its
 *             partner (tasks 2k and 2k+1), then, holding it, the NB_READ
 *             block: so a task waits up to B us for the partner's hold and
 *             then blocks B us itself;
 *   NB_FAULT  a touch of the task's page of a shared memfd mapping whose
 *             page was just removed from the file (MADV_REMOVE): a missing
 *             page fault that sleeps in the kernel (userfaultfd) until the
 *             feeder fills the page (UFFDIO_COPY) B us after the task asked.
 * The feeder is one thread (timer slack 1 ns; SCHED_FIFO priority 1 where
 * allowed, as a device's completion does not queue behind the tasks)
 * serving a FIFO of deadlines with clock_nanosleep(TIMER_ABSTIME): every
 * request has the same B, so the FIFO is in deadline order.
 *
 * Calls return 0 or a negative errno unless said otherwise; nb_setup()
 * also writes the reason for a failure into @why.
 */
#ifndef NATIVE_LIB_H
#define NATIVE_LIB_H

#include <stddef.h>
#include <stdint.h>

enum { NB_READ, NB_MUTEX, NB_FAULT, NB_NR_VARIANTS };

/* "read", "mutex", "fault" -> NB_*, or -1. */
int nb_variant(const char *name);
const char *nb_variant_name(int variant);

/*
 * Sets up @ntasks tasks (at most NB_MAX_TASKS) of @variant with C = @c_us
 * and B = @b_us and starts the feeder.  One set-up at a time per process.
 */
#define NB_MAX_TASKS	65536
int nb_setup(int variant, int ntasks, long c_us, long b_us, char *why, size_t len);

/*
 * One step of task @task (0 .. ntasks - 1), counted when done.  Returns 0
 * to go on, 1 once nb_stop() was called (stop looping), or a negative
 * errno (the step failed; nb_teardown() returns it too).
 */
int nb_step(int task);
/* The parts of a step, for a caller with a lock of its own (Java's
 * synchronized): the compute, the NB_READ block, the count. */
void nb_compute(int task);
int nb_block_read(int task);
int nb_count(int task);

/* Tells the tasks to stop (nb_step() returns 1 from now on). */
void nb_stop(void);
/* After every task returned: stops the feeder, frees; the first error. */
int nb_teardown(void);

/*
 * Steps done so far (all tasks), this process's CPU time and the monotonic
 * clock (ns), and its context switches (getrusage: every thread).
 */
void nb_snapshot(uint64_t *done, uint64_t *cpu_ns, uint64_t *wall_ns, long *ctxsw);

/* After nb_setup(): whether the feeder runs SCHED_FIFO (1) or not (0). */
extern int nb_feeder_fifo;

/* The busy loop's iterations per microsecond (calibrating on first use). */
double nb_iters_per_us(void);

#endif /* NATIVE_LIB_H */
