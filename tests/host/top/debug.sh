#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# debug.sh PART - debuggers and profilers on a libumcg program: workers are
# real kernel threads, so gdb, core dumps and perf see each one, by name,
# in its own code.  top_workload's workers are named by kind (yield-N
# compute in top_workload_compute() and yield, block-N block in read() in
# top_workload_blocker(), park-N park in top_workload_parker()).  TAP
# output; exit 77 (skip) with the reason when the tool is missing or the
# kernel forbids it (ptrace: yama's ptrace_scope; perf:
# perf_event_paranoid).  With $UMCG_BACKEND set (kmod in the guest) the
# workload runs on that backend.
#
#   gdb    gdb -p PID -batch -ex 'info threads' -ex 'thread apply all bt':
#          every worker by name, its backtrace through its function; a
#          planted name that does not exist fails the check
#   core   gcore of the process, loaded in gdb: every worker's thread (by
#          its tid: a core file carries no thread names) with the same
#          backtrace
#   perf   perf record -g of a run: perf report --sort comm,sym puts the
#          yielders' samples in top_workload_compute(), under their names
set -u
part=${1:?usage: debug.sh gdb|core|perf}
workload=${TOP_WORKLOAD:?}
. "$(dirname "$0")/lib.sh"

# ptrace_scope 3 forbids attaching at all; 1 and 2 allow root (and, for 1,
# a parent): this script attaches to its own child.
ptrace_check() {
	local scope
	scope=$(cat /proc/sys/kernel/yama/ptrace_scope 2> /dev/null || echo none)
	if [ "$scope" = 3 ]; then
		skip_all "yama ptrace_scope is 3: no process may ptrace"
	fi
	if [ "$scope" = 2 ] && [ "$(id -u)" != 0 ]; then
		skip_all "yama ptrace_scope is 2: only root may ptrace"
	fi
}

# The workers: "name tid" lines from /proc, the truth the checks compare to.
worker_tids() {
	local t
	for t in /proc/"$wpid"/task/*; do
		read -r name < "$t/comm"
		case $name in yield-*|block-*|park-*) echo "$name ${t##*/}" ;; esac
	done
}

# check_gdb OUT TIDS [EXTRA_NAME]: every worker of TIDS (name tid lines)
# shows in OUT (gdb's info threads + thread apply all bt), by name when
# BYNAME=1, else by tid, with a backtrace through its kind's function.
# EXTRA_NAME: a worker that must be there too (a planted one).
check_gdb() {
	python3 - "$@" <<'EOF'
import re, sys
out, tids = open(sys.argv[1]).read(), [l.split() for l in open(sys.argv[2]) if l.strip()]
byname = sys.argv[3] == "1"
if len(sys.argv) > 4:
    tids.append([sys.argv[4], "0"])
funcs = {"yield": ("yielder", "top_workload_compute"), "block": ("top_workload_blocker",),
         "park": ("top_workload_parker",)}
# "Thread 3 (Thread 0x7f.. (LWP 123) "yield-0"):" then "#0 ..." frames.
bts = {}
for m in re.finditer(r'^Thread \d+ \(.*?LWP (\d+)\)(?: "([^"]*)")?\):\n((?:#.*\n?|  .*\n?)*)', out, re.M):
    bts[m.group(1)] = (m.group(2), m.group(3))
bad = []
if len(tids) < 2:
    bad.append(f"only {len(tids)} workers in /proc")
for name, tid in tids:
    if byname:
        found = [t for t, (nm, _) in bts.items() if nm == name]
        if not found:
            bad.append(f"no thread named {name}")
            continue
        if not re.search(r'LWP %s\) "%s"' % (found[0], re.escape(name)), out):
            bad.append(f"{name}: not in info threads")
        bt = bts[found[0]][1]
    else:
        if tid not in bts:
            bad.append(f"no thread LWP {tid} ({name})")
            continue
        bt = bts[tid][1]
    want = funcs[name.split("-")[0]]
    if not any(re.search(r'\b%s\b' % f, bt) for f in want):
        bad.append(f"{name}: backtrace not through {' or '.join(want)}: {bt[:300]!r}")
for b in bad:
    print("#  " + b)
print(f"#  {len(tids)} workers checked, {len(bts)} threads in gdb's output")
sys.exit(1 if bad else 0)
EOF
}

part_gdb() {
	need gdb
	need python3
	ptrace_check
	start_workload -c 2 -y 2 -b 2 -p 1 || skip_all "workload did not start"
	worker_tids > "$tmp/tids"
	gdb -p "$wpid" -nx -batch -ex 'info threads' -ex 'thread apply all bt' \
		> "$tmp/gdb" 2>&1
	if grep -q 'ptrace: Operation not permitted' "$tmp/gdb"; then
		skip_all "gdb may not attach: $(grep -m1 ptrace "$tmp/gdb")"
	fi
	echo "TAP version 13"
	echo "1..4"
	grep -E '^\*? +[0-9]+ +Thread' "$tmp/gdb" | sed 's/^/# /'
	check "gdb -p lists every worker by name, backtrace through its function ($(wc -l < "$tmp/tids") workers: $(cut -d' ' -f1 "$tmp/tids" | sort | tr '\n' ' '))" \
		check_gdb "$tmp/gdb" "$tmp/tids" 1
	if check_gdb "$tmp/gdb" "$tmp/tids" 1 yield-9 > "$tmp/planted"; then
		not_ok "a planted worker name (yield-9) fails the check"
	else
		ok "a planted worker name (yield-9) fails the check: $(grep -m1 'yield-9' "$tmp/planted")"
	fi
	y0=$(awk '/^yield-0 / { print $2 }' "$tmp/tids")
	a=$(awk '{ print $14 + $15 }' "/proc/$wpid/task/$y0/stat")
	sleep 0.3
	b=$(awk '{ print $14 + $15 }' "/proc/$wpid/task/$y0/stat")
	check "yield-0 runs on after gdb detached (CPU ticks $a -> $b)" test "$a" != "$b"
	stop_workload
	check "the workload exits 0 after the attach" test $? = 0
}

part_core() {
	[ "${TOP_SANITIZED:-0}" = 1 ] &&
		skip_all "sanitizer build: gcore would dump the sanitizer's shadow memory"
	need gdb
	need gcore
	need python3
	ptrace_check
	start_workload -c 2 -y 2 -b 2 -p 1 || skip_all "workload did not start"
	worker_tids > "$tmp/tids"
	gcore -o "$tmp/core" "$wpid" > "$tmp/gcore" 2>&1
	if [ ! -s "$tmp/core.$wpid" ]; then
		grep -q 'not permitted' "$tmp/gcore" &&
			skip_all "gcore may not attach: $(grep -m1 'not permitted' "$tmp/gcore")"
	fi
	echo "TAP version 13"
	echo "1..4"
	core=$tmp/core.$wpid
	check "gcore wrote a core ($(stat -c %s "$core" 2> /dev/null || echo none) bytes)" \
		test -s "$core"
	stop_workload
	check "the workload exits 0 after gcore" test $? = 0
	gdb -nx -batch -ex 'info threads' -ex 'thread apply all bt' "$workload" "$core" \
		> "$tmp/gdb" 2>&1
	grep -E '^\*? +[0-9]+ +(Thread|LWP)' "$tmp/gdb" | sed 's/^/# /'
	check "the core shows every worker's thread (by tid) with a backtrace through its function" \
		check_gdb "$tmp/gdb" "$tmp/tids" 0
	echo "park-7 999999999" >> "$tmp/tids"
	if check_gdb "$tmp/gdb" "$tmp/tids" 0 > "$tmp/planted"; then
		not_ok "a planted worker (park-7, tid 999999999) fails the check"
	else
		ok "a planted worker (park-7, tid 999999999) fails the check: $(grep -m1 'park-7' "$tmp/planted")"
	fi
}

part_perf() {
	need perf
	need python3
	local paranoid
	paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2> /dev/null || echo 2)
	if [ "$(id -u)" != 0 ] && [ "$paranoid" -gt 2 ]; then
		skip_all "perf_event_paranoid is $paranoid: no user-space profiling for non-root"
	fi
	perf record -g -o "$tmp/perf.data" -- "$workload" -c 2 -y 3 -b 1 -p 1 -s 2 \
		> "$tmp/rec" 2>&1 < /dev/null
	rc=$?
	if [ $rc != 0 ] && grep -Eqi 'permission|paranoid|not supported|No such device' "$tmp/rec"; then
		skip_all "perf record cannot sample here: $(grep -Ei -m1 'permission|paranoid|not supported|No such device' "$tmp/rec")"
	fi
	echo "TAP version 13"
	echo "1..4"
	check "perf record -g of the workload exits 0 ($(grep -m1 -io 'captured and wrote.*' "$tmp/rec"))" \
		test $rc = 0
	perf report -i "$tmp/perf.data" --stdio --no-children --sort comm,sym > "$tmp/report" 2> "$tmp/rerr"
	grep -E '^ +[0-9.]+%' "$tmp/report" | head -8 | sed 's/^/# /'
	# Lines "  41.23%  yield-0  [.] top_workload_compute".
	share() { # share COMM_RE SYM: percent of samples with both
		awk -v c="$1" -v s="$2" '$1 ~ /%$/ && $2 ~ c && $NF == s { sub("%", "", $1); t += $1 }
			END { printf "%.1f", t }' "$tmp/report"
	}
	pct=$(share '^yield-[0-9]+$' top_workload_compute)
	check "perf report --sort comm,sym: ${pct}% of samples in yield-N's top_workload_compute (want >= 20%)" \
		awk -v p="$pct" 'BEGIN { exit !(p >= 20) }'
	perf report -i "$tmp/perf.data" --stdio --no-children --comm yield-0 -G \
		--sort sym > "$tmp/graph" 2> /dev/null
	if [ "${TOP_TSAN:-0}" = 1 ]; then
		ok "# SKIP the call graph: ThreadSanitizer's runtime frames hide the workers' own"
	elif ! grep -q 'top_workload_compute' "$tmp/graph"; then
		# Debian 12's perf 6.1 files the samples under another comm
		# with --comm (the thread names itself after it starts).
		ok "# SKIP the call graph: $(perf version) reports no top_workload_compute under --comm yield-0"
	else
		# The worker's thread entry, libumcg's umcg_worker_main(), above
		# the compute function (the frames between may be unwound
		# wrongly when a sample hits a prologue: not checked).
		check "the call graph of yield-0's samples goes from umcg_worker_main() to top_workload_compute()" \
			awk '/top_workload_compute/ && seen { ok = 1 } /umcg_worker_main/ { seen = 1 } END { exit !ok }' "$tmp/graph"
	fi
	planted=$(share '^yield-[0-9]+$' top_workload_missing)
	check "a planted symbol (top_workload_missing) has no share (${planted}%): the check can fail" \
		awk -v p="$planted" 'BEGIN { exit !(p < 20) }'
}

case $part in
gdb|core|perf) "part_$part" ;;
*) echo "debug.sh: unknown part '$part'" >&2; exit 2 ;;
esac
[ $fail = 0 ]
