/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * probes.h - libumcg's static probes (USDT, provider "umcg").
 *
 * One probe per scheduling decision the library makes or learns of, on
 * every backend: what umcg.ko's tracepoints are for the kmod backend, for
 * the scx and user backends too.  Documentation/tracing.md lists them;
 * perf sees them as sdt_umcg:* once "perf buildid-cache --add" has read
 * libumcg.so.0, bpftrace as usdt:...:umcg:*.
 *
 * A probe is a single nop in the code and a note in .note.stapsdt that
 * says where its arguments are (<sys/sdt.h>); a tool turns the nop into a
 * breakpoint (a uprobe) only while it traces.  Arguments are values the
 * caller already has in hand, so a probe nobody traces costs the nop.
 * Without <sys/sdt.h> at build time the probes compile to nothing.
 *
 * Every probe has the thread it is about (its tid) first and, where there
 * is one, the CPU of the core (umcg_core.cpu, -1 for none) second.  No
 * argument is a constant (perf drops constants), and every site of one
 * probe has the same arguments (perf makes one event of them all).
 *
 *   register (tid)                  the thread became a worker
 *   wake     (tid, cpu, why)        it was handed to the policy as RUNNABLE:
 *                                   its wait for a core begins; cpu is the
 *                                   waker's core, why its UMCG_ENQ_* flags
 *   pick     (tid, cpu)             the library gave it core cpu and woke it
 *   handoff  (tid, cpu)             the kernel ran it, staged, on cpu when
 *                                   the core's owner blocked (kmod)
 *   block    (tid, cpu)             it left cpu blocked in the kernel
 *   preempt  (tid, cpu)             it left cpu at the end of its slice
 *   park     (tid, cpu)             it left cpu parked (umcg_park())
 *   switch   (tid, cpu, next)       it gave cpu to next (umcg_switch_to())
 *   exit     (tid)                  it is done
 */
#ifndef UMCG_PROBES_H
#define UMCG_PROBES_H

#ifdef UMCG_HAVE_SDT
#define SDT_USE_VARIADIC
#include <sys/sdt.h>
#define umcg_probe(name, ...)	STAP_PROBEV(umcg, name, __VA_ARGS__)
#else
#define umcg_probe(name, ...)	do { } while (0)
#endif

#endif /* UMCG_PROBES_H */
