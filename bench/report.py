#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""report.py - turn run-suite result lines into the table, perf.md and plots.

Reads the "env=NAME bench=..." lines that tools/umcg-bench collected, and
  - prints one table (each benchmark x implementation/backend, per
    environment: the median and its ratio to the stock-scheduler baseline
    of the same environment and run),
  - with --md FILE writes Documentation/perf.md (method, machine, kernels,
    the table, the issue's targets as met / not met with the reason),
  - with --plots DIR writes gnuplot data and scripts (DIR/*.gp); the
    caller runs gnuplot on them to make the PNGs.
Every figure comes from the input; nothing is hard-coded.
"""
import argparse
import math
import os
import sys
from collections import OrderedDict

BENCHES = ["switch", "pipeline", "handoff", "wakeup", "server", "mariadb", "apache", "jvm",
           "scale", "nonuser"]

UNITS = {
    "ns_per_switch": "ns/switch",
    "msgs_per_s": "msgs/s",
    "us_to_next": "us",
    "us_to_next_p90": "us (p90)",
    "kernel_handoffs_per_block": "kernel hand-offs/block",
    "p50_us": "us p50",
    "p99_us": "us p99",
    "p999_us": "us p99.9",
    "req_per_s": "req/s",
    "spawn_per_s": "spawns/s",
    "join_per_s": "joins/s",
    "kib_per_worker": "KiB/worker",
    "kib_user": "KiB user",
    "kib_kernel": "KiB kernel",
    "max_n": "largest N",
    "tps": "transactions/s",
    "p95_ms": "ms p95",
    "p99_ms": "ms p99",
    "errors": "errors",
    "available_processors": "availableProcessors()",
    "jcmd_threads": "threads in jcmd Thread.print",
    "ns_per_roundtrip": "ns/round trip",
    "hook_calls_per_roundtrip": "hook calls/round trip",
}

# The kernel's counts per operation (bench/README.md: what is counted and
# subtracted); in the table each sits under its implementation's first
# figure, with the operation in the unit.
COUNT_METRICS = ["ctxsw_per_op", "syscalls_per_op"]
COUNT_UNITS = {"ctxsw_per_op": "ctxsw", "syscalls_per_op": "syscalls"}
OPS = {"switch": "switch", "pipeline": "msg", "handoff": "block", "wakeup": "wake",
       "server": "req"}


def unit_of(r):
    if r["metric"] in COUNT_METRICS:
        return "%s/%s" % (COUNT_UNITS[r["metric"]], OPS.get(r["bench"], "op"))
    return UNITS.get(r["metric"], r["metric"])


def backend_na(r):
    """A backend (or benchmark) that did not run at all, not one missing count."""
    return r["value"] == "n/a" and r["metric"] == "-"


def parse(path):
    recs, meta, fails = [], OrderedDict(), []
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.startswith("env="):
                continue
            reason = None
            if " reason=" in line:
                line, reason = line.split(" reason=", 1)
            toks = line.split()
            env = toks[0][4:]
            if len(toks) > 1 and toks[1] == "meta":
                d = meta.setdefault(env, OrderedDict())
                for t in toks[2:]:
                    k, _, v = t.partition("=")
                    d[k] = v.replace("_", " ") if k == "cpu" else v
                continue
            r = dict(t.split("=", 1) for t in toks if "=" in t)
            r["reason"] = reason
            if r.get("status") == "failed":
                fails.append(r)
                continue
            if r["value"] != "n/a":
                r["value"] = float(r["value"])
            recs.append(r)
    return recs, meta, fails


def envs_of(recs, meta):
    seen = list(meta.keys())
    for r in recs:
        if r["env"] not in seen:
            seen.append(r["env"])
    return seen


class Results:
    def __init__(self, recs):
        self.recs = recs
        self.base = {}
        self.idx = {}
        for r in recs:
            if r["value"] == "n/a":
                continue
            key = (r["env"], r["bench"], r["case"], r["metric"])
            if r.get("role") == "base":
                self.base[key] = r["value"]
            self.idx[key + (r["impl"], r["backend"], r["variant"])] = r["value"]

    def get(self, env, bench, case, metric, impl, backend, variant):
        return self.idx.get((env, bench, case, metric, impl, backend, variant))

    def ratio(self, r):
        b = self.base.get((r["env"], r["bench"], r["case"], r["metric"]))
        v = r["value"]
        if b is None or v == "n/a" or not b or not v:
            return None
        return b / v if r["better"] == "lower" else v / b

    def na(self, env, bench, backend):
        for r in self.recs:
            if (r["env"], r["bench"], r["backend"]) == (env, bench, backend) \
                    and r["value"] == "n/a":
                return r["reason"] or "not available"
        return None

    def available(self, env, backend):
        return any(r["env"] == env and r["backend"] == backend and r["value"] != "n/a"
                   for r in self.recs)


def fmt(v):
    if v is None:
        return "-"
    if v == "n/a":
        return "n/a"
    a = abs(v)
    if a >= 1e6:
        return "%.2fM" % (v / 1e6)
    if a >= 1e4:
        return "%.0fk" % (v / 1e3)
    if a >= 100:
        return "%.0f" % v
    if a >= 10:
        return "%.1f" % v
    return "%.2f" % v


def table_rows(res, envs):
    """Rows: (label, metric, {env: cell}) in a stable order."""
    rows = OrderedDict()
    notes = OrderedDict()
    for r in res.recs:
        if backend_na(r):
            key = (BENCHES.index(r["bench"]) if r["bench"] in BENCHES else 99,
                   r["bench"], (9, 0), "", r["impl"], r["backend"], r["variant"])
        else:
            if not keep_in_table(r):
                continue
            key = (BENCHES.index(r["bench"]) if r["bench"] in BENCHES else 99,
                   r["bench"], case_order(r["case"]), r["metric"],
                   r["impl"], r["backend"], r["variant"])
        row = rows.setdefault(key, {"r": r, "cells": {}})
        if r["value"] == "n/a":
            why = r["reason"] or "not available"
            n = notes.setdefault(why, len(notes) + 1)
            row["cells"][r["env"]] = "n/a [%d]" % n
        elif r["metric"] in COUNT_METRICS:
            # A count, not a time: no ratio to the stock scheduler's.
            cell = fmt(r["value"])
            if r["reason"]:
                cell += " [%d]" % notes.setdefault(r["reason"], len(notes) + 1)
            row["cells"][r["env"]] = cell
        else:
            q = res.ratio(r)
            cell = fmt(r["value"])
            if r["reason"]:
                cell += " [%d]" % notes.setdefault(r["reason"], len(notes) + 1)
            if r.get("role") == "base":
                cell += " (base)"
            elif q is not None:
                cell += " (x%.2f)" % q
            row["cells"][r["env"]] = cell
    out = []
    def metric_order(bench, metric):
        ms = TABLE_METRICS.get(bench, [])
        if metric in COUNT_METRICS:	# under the first figure, after it
            return (0, 1 + COUNT_METRICS.index(metric))
        return (ms.index(metric) if metric in ms else 99, 0)

    def order(k):
        m = metric_order(k[1], k[3])
        return (k[0], k[2], m[0], impl_order(k[4]), k[5], k[6], m[1])

    for key in sorted(rows, key=order):
        r = rows[key]["r"]
        if backend_na(r):
            label = "%s %s" % (r["bench"], impl_label(r))
            what = ""
        else:
            label = "%s %s %s" % (r["bench"], "" if r["case"] == "-" else r["case"],
                                  impl_label(r))
            what = unit_of(r)
        out.append((" ".join(label.split()), what, rows[key]["cells"]))
    return out, notes


def impl_label(r):
    if r["impl"] == "umcg":
        return "umcg/%s %s" % (r["backend"], r["variant"]) if r["variant"] != "-" \
            else "umcg/%s" % r["backend"]
    if r["impl"] == "pthread":
        return "pthread %s" % r["variant"]
    if r["impl"] == "epoll":
        return "epoll"
    return r["impl"] if r["variant"] == "-" else "%s %s" % (r["impl"], r["variant"])


def impl_order(impl):
    return {"pthread": 0, "epoll": 1, "umcg": 2, "go": 3, "java": 4}.get(impl, 5)


def case_order(case):
    if case == "-":
        return (0, 0)
    digits = "".join(c for c in case if c.isdigit())
    return (1, int(digits) if digits else 0, case)


TABLE_METRICS = {
    "switch": ["ns_per_switch"],
    "pipeline": ["msgs_per_s"],
    "handoff": ["us_to_next", "kernel_handoffs_per_block"],
    "wakeup": ["p50_us", "p99_us", "p999_us"],
    "server": ["req_per_s", "p99_us"],
    "mariadb": ["tps", "p99_ms", "errors"],
    "apache": ["req_per_s", "p99_us", "errors"],
    "jvm": ["req_per_s", "p99_us", "errors", "available_processors"],
    "scale": ["spawn_per_s", "join_per_s", "kib_per_worker", "max_n"],
    "nonuser": ["ns_per_roundtrip", "ratio_to_unloaded", "hook_calls_per_roundtrip",
                "hook_entries_per_roundtrip"],
}


def keep_in_table(r):
    if r["metric"] not in TABLE_METRICS.get(r["bench"], []) and \
            not (r["metric"] in COUNT_METRICS and r["bench"] in OPS):
        return False
    if r["bench"] == "pipeline" and r["case"] not in ("k2", "k8", "k64"):
        return False
    return True


def render_text(rows, notes, envs):
    hdr = ["benchmark", "unit"] + envs
    data = [[lab, what] + [cells.get(e, "") for e in envs] for lab, what, cells in rows]
    w = [max(len(x[i]) for x in [hdr] + data) for i in range(len(hdr))]
    lines = ["  ".join(h.ljust(w[i]) for i, h in enumerate(hdr)),
             "  ".join("-" * w[i] for i in range(len(hdr)))]
    for d in data:
        lines.append("  ".join(c.ljust(w[i]) for i, c in enumerate(d)).rstrip())
    for why, n in notes.items():
        lines.append("[%d] %s" % (n, why))
    return "\n".join(lines)


def render_md(rows, notes, envs):
    lines = ["| benchmark | unit | " + " | ".join(envs) + " |",
             "|---|---|" + "---|" * len(envs)]
    for lab, what, cells in rows:
        lines.append("| %s | %s | %s |" % (lab, what, " | ".join(cells.get(e, "") for e in envs)))
    lines.append("")
    for why, n in notes.items():
        lines.append("[%d] %s  " % (n, why))
    return "\n".join(lines)


# ---- targets ----

# Why a target is out of reach where it is not met: what the design costs
# (see "Where the time goes" in bench/README.md for the profiles behind it).
# Printed under a target only when some backend did not meet it.
WHY = [
    # switch
    "A kmod `umcg_switch_to()` is one system call (UMCG_IOC_SWITCH: wake the "
    "target on the caller's CPU, then sleep) and one kernel context switch, "
    "plus libumcg's bookkeeping in user space (about 520 instructions: the two "
    "state words, the core's owner under its lock, clock reads). The futex "
    "pair pays two system calls and a context switch, so one system call less "
    "is what the design saves where both run on one CPU: the pinned pair is "
    "the bound, and 5x the unpinned pair is reachable only where the stock "
    "scheduler's cross-CPU wake-ups are very dear. The user backend cannot do wake-and-wait in one call: it wakes "
    "the target, then waits, and the woken target often preempts it in "
    "between (about 1.5 context switches per switch on the host). On scx a "
    "switch_to is a futex wake of the target (asleep in libumcg, so not "
    "held: its wake-up runs it on the CPU its affinity names) and a futex "
    "wait, with a umcg_pick program run only when the wake-up was queued "
    "to another CPU and the slot still read BLOCKED (system calls/op above "
    "2 say how often), and the context switches of the sched_ext class on "
    "top.",
    # pipeline
    "Each hop is one switch (above), so the ratio follows switch's: met where "
    "the stock scheduler spreads the ring over CPUs and pays cross-CPU "
    "wake-ups for it, not where it keeps the ring on one CPU itself.",
    # handoff
    "With kmod the library stages the core's next worker (here B, unparked "
    "while A owns the core) and the module's hook runs it when A blocks: one "
    "context switch, the server not woken (kernel hand-offs/block says how "
    "many blocks went so). Its time is still more than one switch_to's: the "
    "gap runs from just before A's read() to B back in its own code, so it "
    "also holds the read()'s way into the kernel and B's way out of "
    "UMCG_IOC_WAIT and umcg_park() (the core's owner recorded under its lock), "
    "where a switch_to is one ioctl; not profiled yet. The scx scheduler has "
    "no staged worker yet: its "
    "block goes to the core's server first (the doorbell, a wake-up and "
    "context switch), which asks the policy and wakes the next worker (a "
    "second one), with a BPF program run and several system calls between.",
    # wakeup
    "The built-in policies run a woken worker when a core frees: without a "
    "time slice nothing preempts a running worker for it, while the stock "
    "scheduler preempts on wake-up. With more runnable threads than cores the "
    "wake-up latency is the queueing behind running workers; a policy that "
    "favours woken workers, with a slice, would be needed.",
    # server
    "Thread-per-connection pays a hand-off (block, server, next worker) on "
    "every read that blocks, and with the user backend a blocked worker keeps "
    "its core until the monitor notices; an epoll loop serves many ready "
    "connections per wake-up with no switch at all. On kmod the module's "
    "limit of threads per process also drops connections beyond it.",
    # scale
    "Every worker is a kernel thread and needs a pid: the host's "
    "kernel.pid_max (32768) bounds it there; in the guests, their memory "
    "does, and on kmod the module's fixed table of threads per process.",
]


def targets(res, envs):
    """[(target text, [(env, backend, status, detail)])]"""
    out = []
    backends = ["kmod", "scx", "user"]

    def each(fn):
        rows = []
        for env in envs:
            for b in backends:
                if not res.available(env, b):
                    # The host has no kernel backends by design (no module
                    # loading, no sched_ext): judge those in the VM only.
                    if b == "user" or not env.startswith("vm-"):
                        continue
                    why = res.na(env, "switch", b) or "not run in this environment"
                    rows.append((env, b, "not met", "backend not available: " + why))
                    continue
                st, detail = fn(env, b)
                if b == "user":
                    st += " (user backend, for reference)"
                rows.append((env, b, st, detail))
        return rows

    def switch(env, b):
        v = res.get(env, "switch", "-", "ns_per_switch", "umcg", b, "switch_to")
        fu = res.get(env, "switch", "-", "ns_per_switch", "pthread", "stock", "futex")
        fp = res.get(env, "switch", "-", "ns_per_switch", "pthread", "stock", "futex-pinned")
        if None in (v, fu, fp) or not v:
            return "not measured", "a switch figure is missing"
        ok = fu / v >= 5 and v <= fp
        return ("met" if ok else "not met"), \
            "switch_to %s ns; unpinned futex %s ns (x%.2f, needs x5); pinned futex %s ns (x%.2f, needs x1)" % (
                fmt(v), fmt(fu), fu / v, fmt(fp), fp / v)
    out.append(("switch on kmod/scx >= 5x faster than unpinned futex wake+wait "
                "and no slower than the pinned pair", each(switch)))

    def pipeline(env, b):
        base = res.get(env, "pipeline", "k8", "msgs_per_s", "pthread", "stock", "sem")
        vs = [(res.get(env, "pipeline", "k8", "msgs_per_s", "umcg", b, v), v)
              for v in ("switch_to", "unpark")]
        vs = [x for x in vs if x[0] is not None]
        if not base or not vs:
            return "not measured", "a pipeline K=8 figure is missing"
        best = max(vs)
        return ("met" if best[0] / base >= 3 else "not met"), \
            "K=8: " + ", ".join("%s %s msgs/s (x%.2f)" % (v, fmt(x), x / base) for x, v in vs) + \
            "; semaphores %s msgs/s; needs x3" % fmt(base)
    out.append(("pipeline >= 3x pthreads at K = 8", each(pipeline)))

    def handoff(env, b):
        h = res.get(env, "handoff", "-", "us_to_next", "umcg", b, "read")
        s = res.get(env, "switch", "-", "ns_per_switch", "umcg", b, "switch_to")
        k = res.get(env, "handoff", "-", "kernel_handoffs_per_block", "umcg", b, "read")
        if h is None or not s:
            return "not measured", "a handoff or switch figure is missing"
        # A block the kernel hands to the staged worker is one context
        # switch; one that goes through the server, two.
        cs = 2 - (k or 0)
        return ("met" if h * 1000 <= 1.2 * s and cs <= 1.1 else "not met"), \
            "hand-off %s us = %.2f switches (one switch %s ns), %.2f context switches per block " \
            "(%.0f%% handed over by the kernel); needs <= 1.2 and <= 1.1" % (
                fmt(h), h * 1000 / s, fmt(s), cs, 100 * (k or 0))
    out.append(("handoff on kmod/scx within 1.2x of one switch, <= 1.1 context switches per block",
                each(handoff)))

    def wakeup(env, b):
        rs = [r for r in res.recs if r["env"] == env and r["bench"] == "wakeup"
              and r["metric"] == "p99_us" and r["backend"] == b and r["value"] != "n/a"]
        if not rs:
            return "not measured", "no wakeup figure"
        r = rs[0]
        base = res.base.get((env, "wakeup", r["case"], "p99_us"))
        if not base:
            return "not measured", "no stock-scheduler wakeup figure"
        q = r["value"] / base
        return ("met" if q <= 0.5 else "not met"), \
            "p99 %s us vs stock %s us (%.2fx of stock; needs <= 0.5x)" % (fmt(r["value"]), fmt(base), q)
    out.append(("wakeup p99 <= 0.5x the stock scheduler's", each(wakeup)))

    def server(env, b):
        c = "c1000"
        ep = res.get(env, "server", c, "req_per_s", "epoll", "stock", "epoll")
        pp = res.get(env, "server", c, "p99_us", "pthread", "stock", "threads")
        parts, ok_any = [], False
        for v in ("threads", "threads-io"):
            rps = res.get(env, "server", c, "req_per_s", "umcg", b, v)
            p99 = res.get(env, "server", c, "p99_us", "umcg", b, v)
            if None in (rps, p99, ep, pp) or not ep:
                continue
            ok = rps >= 0.9 * ep and p99 <= pp
            ok_any |= ok and v == "threads"
            parts.append("%s: %s req/s = %.2fx epoll (needs 0.9x), p99 %s us vs pthreads %s us%s" % (
                v, fmt(rps), rps / ep, fmt(p99), fmt(pp), " (this variant meets both)" if ok else ""))
        if not parts:
            return "not measured", "a C=1000 server figure is missing"
        return ("met" if ok_any else "not met"), "C=1000: " + "; ".join(parts)
    out.append(("server (plain blocking calls) >= 0.9x epoll's requests/s at C = 1000, "
                "p99 no worse than pthreads'", each(server)))

    def scale(env, b):
        mx = res.get(env, "scale", "-", "max_n", "umcg", b, "stack64k")
        if mx is None:
            rs = [r for r in res.recs if r["env"] == env and r["bench"] == "scale"
                  and r["metric"] == "max_n" and r["backend"] == b and r["value"] != "n/a"]
            mx = rs[0]["value"] if rs else None
        if mx is None:
            return "not measured", "no scale figure"
        kib, why = None, None
        for r in res.recs:
            if r["env"] == env and r["bench"] == "scale" and r["backend"] == b \
                    and r["metric"] == "max_n" and r["value"] != "n/a":
                why = r["reason"]
            if r["env"] == env and r["bench"] == "scale" and r["backend"] == b \
                    and r["metric"] == "kib_per_worker" and r["case"] == "n%d" % mx:
                kib = r["value"]
        ok = mx >= 100000 and kib is not None and kib <= 32
        return ("met" if ok else "not met"), \
            "largest N %d at %s KiB per worker (needs 100000 at <= 32 KiB)%s" % (
                mx, fmt(kib), "; stopped: " + why if why else "")
    out.append(("100,000 live workers at <= 32 KiB each", each(scale)))

    # After the others: WHY[] is indexed by the targets above.
    def handoff_interposed(env):
        h = res.get(env, "handoff", "-", "us_to_next", "umcg", "user", "read-interposed")
        s = res.get(env, "switch", "-", "ns_per_switch", "umcg", "user", "switch_to")
        if h is None or not s:
            return "not measured", "a read-interposed or user switch figure is missing"
        return ("met" if h * 1000 <= 5 * s else "not met"), \
            "hand-off %s us = %.1f switches (one switch %s ns); needs <= 5" % (fmt(h), h * 1000 / s, fmt(s))
    out.append(("handoff on user, a read() umcg-run interposes, within 5x of one switch",
                [(env, "user") + handoff_interposed(env) for env in envs]))

    # bench/realservers: (bench, variant, throughput metric, p99 metric).
    real = [("mariadb", "oltp_read_write", "tps", "p99_ms"),
            ("mariadb", "oltp_read_only", "tps", "p99_ms"),
            ("apache", "static", "req_per_s", "p99_us"),
            ("apache", "dynamic", "req_per_s", "p99_us"),
            ("jvm", "platform", "req_per_s", "p99_us")]

    def highest(env, bench, variant, metric):
        cs = [r["case"] for r in res.recs if r["env"] == env and r["bench"] == bench
              and r["variant"] == variant and r["metric"] == metric and r.get("role") == "base"
              and r["value"] != "n/a"]
        return max(cs, key=lambda c: int(c[1:]) if c[1:].isdigit() else 0) if cs else None

    def realservers(env, b):
        need = 0.9 if b == "user" else 1.0
        parts, ok_all, seen = [], True, False
        for bench, variant, tm, pm in real:
            c = highest(env, bench, variant, tm)
            if c is None:
                continue
            base = res.base.get((env, bench, c, tm))
            v = res.get(env, bench, c, tm, "umcg", b, variant)
            if v is None:
                why = res.na(env, bench, b) or "no figure"
                parts.append("%s %s: not measured (%s)" % (bench, variant, why))
                ok_all = False
                continue
            seen = True
            p, pb = res.get(env, bench, c, pm, "umcg", b, variant), res.base.get((env, bench, c, pm))
            err = res.get(env, bench, c, "errors", "umcg", b, variant)
            ok = bool(base) and v >= need * base and (p is None or pb is None or p <= pb) and not err
            ok_all &= ok
            parts.append("%s %s %s: x%.2f of stock%s%s" % (
                bench, variant, c, v / base if base else float("nan"),
                ", p99 %s vs %s" % (fmt(p), fmt(pb)) if p is not None and pb is not None else "",
                ", %d errors" % err if err else ""))
        if not seen:
            return "not measured", "; ".join(parts) or "no real-server figure"
        return ("met" if ok_all else "not met"), "; ".join(parts) + \
            "; needs x%.1f and p99 no worse, 0 errors" % need
    out.append(("real servers under umcg-run (MariaDB, Apache httpd, a JVM): throughput at the "
                "highest concurrency >= 1.0x the stock scheduler's on the kernel backends "
                "(0.9x on user), p99 no worse, no errors", each(realservers)))

    # The system calls of one switch against their physical limit (kmod's
    # fused ioctl; scx's futex wake + wait), and scx's time against kmod's
    # in the same boot: counts emulation cannot distort, and a ratio.
    def switch_calls(env, b):
        need = {"kmod": 1, "scx": 2}[b]
        v = res.get(env, "switch", "-", "ns_per_switch", "umcg", b, "switch_to")
        sc = res.get(env, "switch", "-", "syscalls_per_op", "umcg", b, "switch_to")
        if v is None or sc is None:
            return "not measured", "a switch_to time or system-call count is missing"
        ok = sc <= need + 0.05
        detail = "%.2f system calls per switch (needs <= %d)" % (sc, need)
        if b == "scx":
            k = res.get(env, "switch", "-", "ns_per_switch", "umcg", "kmod", "switch_to")
            if not k:
                return "not measured", detail + "; no kmod switch_to in this boot"
            ok = ok and v <= 1.3 * k
            detail += "; %s ns = x%.2f of kmod's %s ns (needs <= x1.3)" % (fmt(v), v / k, fmt(k))
        return ("met" if ok else "not met"), detail
    out.append(("switch_to: kmod 1 system call per switch; scx at most 2, within 1.3x of "
                "kmod's time", [(env, b) + switch_calls(env, b) for env in envs
                                for b in ("kmod", "scx") if env.startswith("vm-") and
                                res.available(env, b)]))
    return out


# ---- counts against the physical limits ----

# (bench, case, impl, backend, variant, what, ctxsw limit, syscalls limit):
# what the operation cannot do with fewer of (bench/README.md, "Counts").
LIMITS = [
    ("switch", "-", "umcg", "kmod", "switch_to", "switch", 1, 1),
    ("switch", "-", "umcg", "scx", "switch_to", "switch", 1, 2),
    ("switch", "-", "umcg", "user", "switch_to", "switch", 1, 2),
    ("switch", "-", "pthread", "stock", "futex-pinned", "switch", 1, None),
    ("pipeline", "k8", "umcg", "kmod", "switch_to", "message, K=8", 1, 1),
    ("pipeline", "k8", "umcg", "scx", "switch_to", "message, K=8", 1, 2),
    ("pipeline", "k8", "pthread", "stock", "sem", "message, K=8", 1, None),
    ("handoff", "-", "umcg", "kmod", "read", "block (sample)", 2, None),
    ("handoff", "-", "umcg", "scx", "read", "block (sample)", 2, None),
    ("handoff", "-", "pthread", "stock", "yield-pinned", "block (sample)", 2, None),
]


def limits_md(res, envs):
    L = ["| environment | implementation | per | context switches (limit) | "
         "system calls (limit) |", "|---|---|---|---|---|"]
    for env in envs:
        for bench, case, impl, backend, variant, what, lc, ls in LIMITS:
            cs = res.get(env, bench, case, "ctxsw_per_op", impl, backend, variant)
            sc = res.get(env, bench, case, "syscalls_per_op", impl, backend, variant)
            if cs is None and sc is None:
                continue
            L.append("| %s | %s %s | %s | %s (%d) | %s (%s) |" % (
                env, bench, impl_label({"impl": impl, "backend": backend,
                                        "variant": variant}), what,
                fmt(cs) if cs is not None else "n/a", lc,
                fmt(sc) if sc is not None else "n/a", ls if ls else "-"))
    return "\n".join(L) if len(L) > 2 else "No counts in this run.\n"


# ---- plots ----

def plots(res, envs, d):
    os.makedirs(d, exist_ok=True)
    made = []
    for env in envs:
        safe = env.replace("+", "_")
        # pipeline: msgs/s against K, one line per implementation.
        series = OrderedDict()
        for r in res.recs:
            if r["env"] == env and r["bench"] == "pipeline" and r["value"] != "n/a" \
                    and r["metric"] == "msgs_per_s":
                series.setdefault(impl_label(r), []).append(
                    (int(r["case"][1:]), r["value"]))
        if series:
            dat = os.path.join(d, "pipeline-%s.dat" % safe)
            with open(dat, "w") as f:
                for lab, pts in series.items():
                    f.write('"%s"\n' % lab)
                    for k, v in sorted(pts):
                        f.write("%d %g\n" % (k, v))
                    f.write("\n\n")
            gp = os.path.join(d, "pipeline-%s.gp" % safe)
            with open(gp, "w") as f:
                f.write(GP_HEAD % ("pipeline-%s.png" % safe))
                f.write('set title "pipeline: ring of K threads (%s)"\n' % env)
                f.write('set xlabel "K (threads in the ring)"\nset ylabel "messages/s"\n')
                f.write("set logscale x 2\nset logscale y\nset key outside right\n")
                f.write('set ylabel "messages/s (log)"\n')
                f.write("plot for [i=0:%d] '%s' index i using 1:2 with linespoints title columnheader(1)\n"
                        % (len(series) - 1, os.path.basename(dat)))
            made.append(gp)
        # latency percentiles: wakeup p50/p99/p99.9 and server p50/p99 at C=1000.
        for bench, case, metrics, title in (
                ("wakeup", None, ["p50_us", "p99_us", "p999_us"], "wake-up latency"),
                ("server", "c1000", ["p50_us", "p99_us", "p999_us"], "echo server latency, C=1000")):
            rows = OrderedDict()
            for r in res.recs:
                if r["env"] == env and r["bench"] == bench and r["value"] != "n/a" \
                        and r["metric"] in metrics and (case is None or r["case"] == case):
                    rows.setdefault(impl_label(r), {})[r["metric"]] = r["value"]
            if not rows:
                continue
            dat = os.path.join(d, "%s-%s.dat" % (bench, safe))
            with open(dat, "w") as f:
                f.write("# impl " + " ".join(metrics) + "\n")
                for lab, m in rows.items():
                    f.write('"%s" %s\n' % (lab, " ".join("%g" % m.get(x, float("nan")) for x in metrics)))
            gp = os.path.join(d, "%s-%s.gp" % (bench, safe))
            with open(gp, "w") as f:
                f.write(GP_HEAD % ("%s-latency-%s.png" % (bench, safe)))
                f.write('set title "%s (%s)"\n' % (title, env))
                f.write('set ylabel "microseconds (log)"\nset logscale y\n')
                f.write("set style data histogram\nset style histogram cluster gap 1\n")
                f.write("set style fill solid 0.8 border -1\nset boxwidth 0.9\n")
                f.write("set xtics rotate by -20\nset key top left\n")
                f.write("set xrange [-0.6:%g]\n" % (len(rows) - 0.4))
                f.write("plot " + ", ".join(
                    "'%s' using %d:xtic(1) title '%s'" % (os.path.basename(dat), i + 2,
                                                         metrics[i].replace("_us", "").replace("p999", "p99.9"))
                    for i in range(len(metrics))) + "\n")
            made.append(gp)
    return made


GP_HEAD = "set terminal pngcairo size 900,500 noenhanced\nset output '%s'\nset grid\n"


def main():
    ap = argparse.ArgumentParser(description="Table, perf.md and plots from run-suite results.")
    ap.add_argument("results", help="file with the env=... result lines")
    ap.add_argument("--md", help="write perf.md here")
    ap.add_argument("--plots", help="write gnuplot data and scripts into this directory")
    ap.add_argument("--info", help="file with key=value lines about the run (for perf.md)")
    ap.add_argument("--png-dir", help="perf.md shows the PNG plots found here")
    a = ap.parse_args()

    recs, meta, fails = parse(a.results)
    if not recs:
        sys.exit("report.py: no results in %s" % a.results)
    res = Results(recs)
    envs = envs_of(recs, meta)
    rows, notes = table_rows(res, envs)
    print(render_text(rows, notes, envs))
    nt = native_text(res, envs)
    if nt:
        print("\n" + nt)
    for f in fails:
        print("FAILED: %s in %s: %s" % (f["bench"], f["env"], f["reason"]))

    if a.plots:
        plots(res, envs, a.plots)
    if a.md:
        info = OrderedDict()
        if a.info:
            with open(a.info) as f:
                for line in f:
                    k, _, v = line.rstrip("\n").partition("=")
                    info[k] = v
        pngs = sorted(f for f in os.listdir(a.png_dir) if f.endswith(".png")) \
            if a.png_dir and os.path.isdir(a.png_dir) else []
        write_md(a.md, res, envs, meta, info, rows, notes, fails, pngs)


def write_md(path, res, envs, meta, info, rows, notes, fails, pngs):
    L = []
    L.append("<!-- SPDX-License-Identifier: GPL-2.0 -->")
    L.append("# Performance: libumcg against the stock scheduler\n")
    L.append("Written by `tools/umcg-bench` on %s from one run (`%s`, commit %s). "
             "Every figure below comes from that run; rerun the command to refresh it.\n"
             % (info.get("date", "?"), info.get("command", "tools/umcg-bench"), info.get("commit", "?")))
    L.append("## Method\n")
    L.append(METHOD)
    L.append("## Machine and kernels\n")
    L.append("| environment | kernel | CPUs | CPU | memory | in a VM | notes |")
    L.append("|---|---|---|---|---|---|---|")
    for env in envs:
        m = meta.get(env, {})
        L.append("| %s | %s | %s | %s | %s MiB | %s | %s |" % (
            env, m.get("kernel", "?"), m.get("cpus", "?"), m.get("cpu", "?"),
            int(m.get("mem_kib", "0")) // 1024, m.get("virtual_machine", "?"),
            info.get("notes-" + env, "")))
    L.append("")
    L.append("## Results\n")
    L.append("Median of the repetitions; in brackets the ratio to the stock-scheduler "
             "baseline (marked *base*) of the same environment in this run, oriented so "
             "that **above 1 is better than the stock scheduler** (for times: base / "
             "value, for rates: value / base). Under TCG only these ratios mean "
             "anything, not the absolute figures.\n")
    L.append(render_md(rows, notes, envs))
    if fails:
        L.append("\nBenchmarks that failed in this run:\n")
        for f in fails:
            L.append("- %s in %s: %s" % (f["bench"], f["env"], f["reason"]))
    L.append("\nAll result lines, including the figures not in the table (every "
             "pipeline K, p90 hand-off, server p50, scale join rate and the user/kernel "
             "split of memory): [perf/results.txt](perf/results.txt).\n")
    L.append("## Kernel counts against the physical limits\n")
    L.append(LIMITS_TEXT)
    L.append(limits_md(res, envs))
    L.append("")
    L.append("## Targets (issue 6)\n")
    L.append("Judged from the figures above. The kernel backends' targets can only be "
             "met where the backend ran; a backend that is not available counts as "
             "not met, with its reason.\n")
    for i, (text, rs) in enumerate(targets(res, envs)):
        L.append("**%s**\n" % text)
        for env, b, st, detail in rs:
            L.append("- %s, %s: **%s** — %s" % (env, b, st, detail))
        if i < len(WHY) and any(st.startswith("not met") for _, _, st, _ in rs):
            L.append("\n*Why, where not met:* " + WHY[i])
        L.append("")
    L.append(native_md(res, envs))
    L.append("## Plots\n")
    if not pngs:
        L.append("None in this run (gnuplot was not installed where it ran).\n")
    for png in pngs:
        L.append("![%s](perf/%s)\n" % (png[:-4], png))
    L.append("## Reading the numbers\n")
    L.append(READING)
    with open(path, "w") as f:
        f.write("\n".join(L) + "\n")


METHOD = """\
`tools/umcg-bench` builds everything (`tools/umcg-build`), runs the suite
(`bench/run-suite`) on the host inside the build root, then boots each target
kernel in the test VM (`tools/umcg-vm run`, `umcg.ko` and the sched_ext
scheduler loaded by the guest setup) and runs the same suite there. Each
benchmark measures plain threads under the stock scheduler (EEVDF) and
libumcg on every backend that `umcg_init()` accepts in that environment, in
the same process and boot; a backend that is refused is reported as n/a with
libumcg's reason.

- **switch**: two threads pass a token back and forth. Stock: futex
  wake+wait unpinned (*base*), both pinned to CPU 0, a pipe pair. libumcg:
  `umcg_switch_to()` between two workers on one managed core. ns per switch.
- **pipeline**: a message goes round a ring of K threads (K = 2..64), each
  waking the next and blocking. Stock: a POSIX semaphore per thread
  (*base*). libumcg (all cores): `umcg_switch_to()` to the next, and
  `umcg_unpark()` + `umcg_park()`. Messages (hops) per second.
- **handoff**: a worker blocks in a plain `read()` on an empty pipe while
  another is runnable for its core: time until that one runs. Stock: both
  pinned to one CPU, the other in a `sched_yield()` loop (*base*). libumcg:
  one managed core; on the user backend this is the monitor's detection
  delay. Variant read-interposed (user backend): the benchmark runs itself
  under `umcg-run -b user -c 1`, so the `read()` is the one umcg-run
  interposes, which hands the core on before it blocks. Median over every
  block.
- **wakeup**: schbench-style: a message thread wakes 4 workers per CPU at
  once, each spins 50 us and sleeps; p50/p99/p99.9 of wake-to-run time over
  all wakes. Stock: futex (*base*); libumcg: park/unpark, all cores.
- **server**: `examples/echo-threads` (a thread per connection, plain
  blocking `accept`/`read`/`write`) on pthreads (*base*), on libumcg
  workers (`--umcg`; `threads-io` uses `umcg_io_read/write`, which park),
  and `examples/echo-epoll` (one event loop per CPU). The bundled load
  generator (`bench/loadgen`, one client thread, 64-byte requests, one in
  flight per connection) drives C connections; a request still unanswered
  at the end counts with its waiting time so far.
- **scale**: spawn N workers that stay alive waiting, then release and join
  them (64 KiB stacks for both sides), N up the ladder until one fails or
  would not fit; memory per live worker = (VmRSS + KernelStack + Slab +
  PageTables deltas) / N from `/proc` (machine-wide kernel counters: other
  activity on the machine is noise).
- **nonuser**: what `umcg.ko` costs processes that do not use it: a pipe
  ping-pong between two plain processes (both pinned to CPU 0, each side
  blocking in `read()`), with the module unloaded (*base*), loaded and idle,
  and loaded while another user's process holds 4,096 registered workers
  asleep (`workers4096`); ns per round trip, and the block hook's calls per
  round trip (`hook_calls` of `/sys/class/misc/umcg`: 0 while it is not
  armed). Guests only (it loads and unloads the module).

**Counts** (`ctxsw/...` and `syscalls/...` rows, under each
implementation's first figure): the kernel's own counts from one more run of
each benchmark with the counters on, after the timed repetitions (the
system-call tracepoint slows every system call while it is open, so the
times are measured without it). Context switches: `getrusage(RUSAGE_SELF)`
`ru_nvcsw + ru_nivcsw` (every thread of the process, exited ones included);
system calls: a perf counter on the `raw_syscalls:sys_enter` tracepoint,
inherited by every thread made after it was opened, libumcg's own servers
and monitor included (opened before `umcg_init()`). The window is the timed
loop's; the counting's own read is subtracted, and the harness's work where
it falls in the window (handoff: the main thread that paces the samples and
B's report to it; wakeup: the message thread's sleeps between rounds and the
rounds' pacing calls). The server's are its own process's (perf counters
opened on it before it runs), per request answered; the load generator's
are not counted. Emulation makes each of these slower but does not change
how many there are, so unlike the times they compare across environments.
The physical limits: a hand-off needs one context switch; a switch needs one
system call on kmod (`UMCG_IOC_SWITCH`) and a futex wake + wait (two) on
scx and the user backend. A thread woken on an idle CPU costs no switch of
the process (the idle task's is not counted), and a waiter that finds its
word already changed skips its wait, so the stock scheduler's unpinned pairs
can show less than one switch and fewer than two system calls. `bench/README.md`
says per benchmark what is counted and subtracted.

The figures are medians of the repetitions (`--reps`); latency percentiles
are over all samples of all repetitions. Nothing in the suite asserts a
timing; `--smoke` (CI) only checks that every benchmark runs and prints
well-formed lines.
"""

LIMITS_TEXT = """\
What an operation cannot do with fewer of, against what this run counted
(per operation, from the counted run; see Method). A **switch** hands the
core from one thread to another: one context switch, and one system call on
kmod (`UMCG_IOC_SWITCH` wakes the target and sleeps in one call) but a futex
wake and a futex wait on scx and the user backend. The stock scheduler's
pairs (futex, semaphores) get no limit for their system calls: a waiter
that finds the word already changed (the woken thread ran first) skips its
wait, so they can make fewer than two. A pipeline message is one switch. A **handoff** sample is one block (the
hand-off: one context switch) plus B going back to wait so that A can have
the core again (a second one); its system calls depend on the backend's
protocol, so no limit is given. Counts above the limit are the backend's
own extra work (a server's wake-up and sleep on kmod's hand-off, a futex
wait that was not needed): these do not depend on the emulation.
"""

READING = """\
- The guest runs under TCG emulation (no KVM on this host): system calls,
  context switches and atomics cost many times what they cost on hardware,
  in different proportions, so compare ratios within one environment only.
- The host is a shared 2-CPU virtual machine; other work on it adds noise,
  which the medians reduce but do not remove.
- The user backend has no kernel help: a worker blocked in a call libumcg
  did not see keeps its core until the monitor notices (at least
  `blocked_ns`, 50 us by default, plus its sampling period), which is what
  `handoff` and the `threads` server measure for it. Its `umcg_switch_to()`
  is a futex wake of the target and a futex wait of the caller: the kernel
  work of the pinned futex pair, plus libumcg's bookkeeping.
- A worker that never calls into libumcg again after the monitor took its
  core (the plain `threads` echo server: only `read`/`write`) runs on under
  the kernel's scheduler beside the core's new owner (C1's exception on the
  user backend), while queued workers wait for a core the monitor frees
  only when an owner sleeps long enough; without a time slice
  (`time_slice_ns`, off by default) some connections can wait the whole
  measured time, which shows as a p99 equal to the run's length.
- The kmod backend registers a bounded number of threads per process (the
  module's limit, `max_tasks` of `UMCG_IOC_GET_INFO`): beyond it `umcg_spawn()`
  fails with `EAGAIN`, which bounds `scale` and makes the thread-per-connection
  server drop connections (noted next to its figure).
- Server latency counts a request still unanswered at the end of the run
  with the time it waited, so a starved connection shows: as a p99 or p99.9
  equal to the run's length (1 s), or in the plots, even where the p50 is
  small.
- Java under TCG: the JIT's compiled code is emulated as well and warms up
  slowly; the guests' Java figures say little about Java on hardware.
- The peers (`go`: goroutines and channels; `java`: Java 21 virtual
  threads) switch stacks in user space: a hand-off between two of them is a
  function call into their runtime's scheduler, with no system call and no
  kernel context switch, so where they win (`switch`, `pipeline`) that is
  why. libumcg keeps real kernel threads — native code, TLS, gdb, perf,
  signals and blocking system calls work unchanged — and pays at least one
  system call and one kernel context switch per hand-off for it. Their
  servers park on their runtime's poller (epoll underneath); so does
  libumcg's `threads-io` variant.
- A figure with a note number was measured with a caveat, listed under the
  table; n/a means the backend is not available there, with libumcg's reason.
"""

# ---- native blocking (bench/native, issue 17) ----
# Kept together here: its rows in the main table (tasks/s only), its own
# table (every implementation side by side, ratios to pthreads and to the
# peers) and its target.

BENCHES.append("native")
UNITS.update({"tasks_per_s": "tasks/s", "cores_busy": "cores busy",
              "blocks_per_op": "blocks/task"})
OPS["native"] = "task"
TABLE_METRICS["native"] = ["tasks_per_s"]
_keep_in_table_others = keep_in_table


def keep_in_table(r):
    if r["bench"] == "native":
        return r["metric"] == "tasks_per_s"
    return _keep_in_table_others(r)


NATIVE_COLS = [("pthread", "stock", "pthread"), ("umcg", "user", "umcg/user"),
               ("umcg", "kmod", "umcg/kmod"), ("umcg", "scx", "umcg/scx"),
               ("go", "goroutines", "go (cgo)"), ("java", "vthreads", "java (JNI)"),
               ("java-sync", "vthreads", "java (synchronized)")]


def native_get(res, env, case, variant, impl, backend, metric="tasks_per_s"):
    if impl == "java-sync":
        if variant != "mutex":
            return None
        return res.get(env, "native", case, metric, "java", backend, "mutex-sync")
    return res.get(env, "native", case, metric, impl, backend, variant)


def native_cases(res, env):
    seen = OrderedDict()
    for r in res.recs:
        if r["env"] == env and r["bench"] == "native" and r["metric"] == "tasks_per_s" \
                and r["value"] != "n/a" and r["impl"] in ("pthread", "umcg"):
            seen[(r["case"], r["variant"])] = 1

    def key(k):
        parts = k[0].split("-")
        try:
            nums = tuple(int(p[1:]) for p in parts)
        except ValueError:
            nums = (0,)
        return (nums, ["read", "mutex", "fault"].index(k[1]) if k[1] in ("read", "mutex", "fault") else 9)
    return sorted(seen, key=key)


def native_java_pinned(res, env, case, variant):
    """The best of the Java figures for this case (both are pinned in 21)."""
    vs = [native_get(res, env, case, variant, "java", "vthreads"),
          native_get(res, env, case, variant, "java-sync", "vthreads")]
    vs = [v for v in vs if v is not None]
    return max(vs) if vs else None


def native_ratio(x, other):
    if other:
        return "x%.2f" % (x / other)
    return "x inf" if x else "x -"


def native_tables(res, envs, md):
    out = []
    for env in envs:
        cases = native_cases(res, env)
        if not cases:
            continue
        cols = [c for c in NATIVE_COLS
                if any(native_get(res, env, k, v, c[0], c[1]) is not None for k, v in cases)]
        hdr = ["case (N = mult x cores, C/B us)", "variant"] + [c[2] for c in cols]
        rows = []
        for k, v in cases:
            base = native_get(res, env, k, v, "pthread", "stock")
            go = native_get(res, env, k, v, "go", "goroutines")
            jv = native_java_pinned(res, env, k, v)
            row = [k, v]
            for impl, backend, _ in cols:
                x = native_get(res, env, k, v, impl, backend)
                if x is None:
                    row.append("-")
                    continue
                busy = native_get(res, env, k, v, impl, backend, "cores_busy")
                cell = "%s/s" % fmt(x)
                if busy is not None:
                    cell += ", %.2f cores" % busy
                if impl == "umcg":
                    q = []
                    for other, name in ((base, "pthreads"), (go, "go"), (jv, "java")):
                        if other is not None:
                            q.append("%s %s" % (native_ratio(x, other), name))
                    if q:
                        cell += " (" + ", ".join(q) + ")"
                row.append(cell)
            rows.append(row)
        if md:
            out.append("**%s**\n" % env)
            out.append("| " + " | ".join(hdr) + " |")
            out.append("|" + "---|" * len(hdr))
            for row in rows:
                out.append("| " + " | ".join(row) + " |")
            out.append("")
        else:
            w = [max(len(x[i]) for x in [hdr] + rows) for i in range(len(hdr))]
            out.append("native blocking, %s:" % env)
            out.append("  ".join(h.ljust(w[i]) for i, h in enumerate(hdr)))
            for row in rows:
                out.append("  ".join(c.ljust(w[i]) for i, c in enumerate(row)).rstrip())
            out.append("")
    return "\n".join(out)


NATIVE_TARGET = ("native blocking on kmod/scx at N = 32x cores: >= 2x Go (cgo) and "
                 "Java 21 virtual threads (pinned), >= 1.0x pthreads (issue 17)")


def native_target(res, envs):
    rows = []
    for env in envs:
        for b in ("kmod", "scx", "user"):
            cases = [(k, v) for k, v in native_cases(res, env) if k.startswith("x32-")
                     and native_get(res, env, k, v, "umcg", b) is not None]
            if not cases:
                if b != "user" and env.startswith("vm-"):
                    why = res.na(env, "native", b) or "not run in this environment"
                    rows.append((env, b, "not met", "backend not available: " + why))
                continue
            parts, ok, missing = [], True, False
            for k, v in cases:
                x = native_get(res, env, k, v, "umcg", b)
                base = native_get(res, env, k, v, "pthread", "stock")
                go = native_get(res, env, k, v, "go", "goroutines")
                jv = native_java_pinned(res, env, k, v)
                if None in (base, go, jv):
                    missing = True
                    parts.append("%s %s: a pthreads, Go or Java figure is missing" % (v, k))
                    continue
                # A peer that completed nothing in its window is beaten by any
                # figure above 0 (shown as x inf).
                good = x >= 2 * go and x >= 2 * jv and x >= base and x > 0
                ok &= good
                parts.append("%s %s: %s go, %s java, %s pthreads%s" % (
                    v, k, native_ratio(x, go), native_ratio(x, jv), native_ratio(x, base),
                    "" if good else " (not met)"))
            st = "not measured" if missing and ok else ("met" if ok else "not met")
            if b == "user":
                st += " (user backend, for reference)"
            rows.append((env, b, st, "; ".join(parts) + "; needs x2, x2, x1"))
    return rows


NATIVE_WHY = (
    "Every kernel-backend block is seen (blocks/task about 1 on kmod) and its "
    "core handed on, but each block and wake-up costs more kernel work than "
    "the stock scheduler's sleep and wake-up: the blocked worker's wake-up goes "
    "through its core's server and the policy before it runs again (C3: the "
    "worker marks itself runnable and sleeps, the server is woken, picks it and "
    "wakes it), so a step pays about 3 context switches on kmod against 1.6 "
    "for pthreads, and on scx also the doorbell and the server's system calls "
    "(10 to 40 per step). Where a context switch or a system call costs tens of "
    "microseconds (TCG), that extra work is larger than the compute and the "
    "block themselves at C/B = 10/100, and throughput follows the kernel work "
    "per step rather than the cores left idle; pthreads lose no core to a "
    "block either, so 1.0x pthreads needs the hand-off to cost no more than "
    "the stock wake-up. Against the peers the margin comes from their "
    "runtimes: a goroutine in a cgo call keeps its thread and its P moves on "
    "only when sysmon sees the call run long (20 us at best, backing off "
    "towards 10 ms), and a Java 21 virtual thread in a native frame or inside "
    "synchronized pins its carrier (at most `parallelism`, the cores, tasks in "
    "flight). The user backend sees none of these blocks: its monitor takes a "
    "core only after two samples `blocked_ns` (50 us) apart find the owner "
    "asleep, after which that worker runs on outside the group until its next "
    "libumcg call, which this routine never makes, so few blocks lose their "
    "core (blocks/task well under 0.1) and a blocked worker's core idles.")

NATIVE_METHOD = """\
- **native** (issue 17): N tasks (N = 4x, 32x, 256x the managed cores) each
  repeat one call of a C routine (`bench/native_lib.c`) that computes C us
  (a busy loop calibrated on the thread's CPU clock) and then blocks in the
  kernel for B us, where libumcg cannot see it: *read*, a `read()` of the
  task's pipe that one feeder thread writes B us after the task asked;
  *mutex*, a `pthread_mutex_lock()` of the mutex a partner task holds over
  its own B us read; *fault*, a missing-page fault on the task's page of a
  shared memfd (shmem, not a file on the guest's 9p root) which the
  feeder fills with `UFFDIO_COPY` B us later. C/B = 10/100 and 100/1000
  us. Stock: N pthreads (*base*); libumcg: N workers on every core; Go: N
  goroutines calling the routine through cgo; Java 21: N virtual threads
  calling it through JNI, and (*synchronized*) the mutex variant with a
  Java monitor held over the native read. Tasks (steps) per second and
  the cores kept busy (process CPU time / wall time, the feeder and
  libumcg's own threads included). The full suite runs a subset of the
  grid (bench/README.md).
"""


def native_text(res, envs):
    t = native_tables(res, envs, False)
    if not t:
        return ""
    lines = [t, NATIVE_TARGET + ":"]
    for env, b, st, detail in native_target(res, envs):
        lines.append("  %s, %s: %s - %s" % (env, b, st, detail))
    return "\n".join(lines)


def native_md(res, envs):
    t = native_tables(res, envs, True)
    if not t:
        return ""
    L = ["## Native blocking (issue 17)\n", NATIVE_METHOD,
         "Tasks per second and cores busy per implementation; for libumcg the ratio "
         "to pthreads, to Go and to the better of the two Java figures, in the same "
         "run.\n", t, "**%s**\n" % NATIVE_TARGET]
    rs = native_target(res, envs)
    for env, b, st, detail in rs:
        L.append("- %s, %s: **%s** — %s" % (env, b, st, detail))
    if any(st.startswith("not met") for _, _, st, _ in rs):
        L.append("\n*Why, where not met:* " + NATIVE_WHY)
    L.append("")
    return "\n".join(L)


if __name__ == "__main__":
    main()
