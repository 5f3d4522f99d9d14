#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# umcg_run.sh PART - umcg-run, libumcg-preload.so and "umcgctl dump".  TAP;
# exit 0 (all passed or skipped), 1 (a failure), 77 (everything skipped).
#
#   cli   bad options and environment: exit 2 and a message; a backend that
#         is not available: exit 1; a missing program: 127
#   c1    a plain pthread program under --cores 1 and --cores 2 never has
#         more CPU-bound sections running than cores (C1); without umcg-run
#         it does (so the check can fail); it stays correct either way; the
#         same with the other policies, under a time slice, and as the child
#         of a managed shell; exit() while a worker spins on the only core;
#         a thread started before the library's constructor; a bad setting
#   c2    on one core, with the monitor's blocked_us at 30 s (so that only
#         the interposed calls' own hand-off can be quick), each interposed
#         blocking call lets another thread run at once (pthread_load
#         --handoff), with the default and the fifo policy
#   dump  "umcgctl dump PID" makes a running umcg-run'ed program write a
#         dump listing its threads to its stderr, on the default signal
#         (not SIGUSR1 or SIGUSR2, which stay the program's) and on another;
#         UMCG_DUMP_SIGNAL=none takes no signal, and with no time slice no
#         SIGURG either
#   machine  what an unmodified program sees (machine.c): nproc and the
#         affinity calls report the group's CPUs (2 under --cores 2), a
#         worker's own setaffinity is honoured or fails with EINVAL; a Go
#         program (goprocs/, cgo) gets GOMAXPROCS = the cores, or the
#         user's own GOMAXPROCS; OpenMP (omp_procs.c) and a JVM (Procs.java:
#         availableProcessors()) size themselves for the cores;
#         children started with system(), popen(), posix_spawn() and fork(),
#         and a program the worker executes itself, get the program's CPUs
#         and SCHED_OTHER; a SIGTERM that the program
#         blocks and takes with sigwait() reaches sigwait, run after run;
#         four threads spin-waiting on a flag a fifth sets finish on one
#         core under the default time slice (and, with --time-slice-us 0,
#         do not: the check can fail)
#
# Set by ctest: UMCG_RUN, UMCGCTL, UMCG_RUN_LOAD, UMCG_RUN_EARLY (binaries),
# UMCG_RUN_PRELOAD_LIB and UMCG_RUN_SANITIZED (1 in sanitizer builds).
part=${1:?usage: umcg_run.sh cli|c1|c2|dump|machine}
run=${UMCG_RUN:?} ctl=${UMCGCTL:?} load=${UMCG_RUN_LOAD:?} lib=${UMCG_RUN_PRELOAD_LIB:?}
machine=${UMCG_RUN_MACHINE:?}
early=${UMCG_RUN_EARLY:?}
unset UMCG_BACKEND UMCG_DUMP_SIGNAL UMCG_RUN_CORES UMCG_RUN_POLICY UMCG_RUN_TIME_SLICE_US GOMAXPROCS OMP_NUM_THREADS \
	UMCG_RUN_BLOCKED_US UMCG_RUN_CPUS UMCG_RUN_PRELOAD LD_PRELOAD
ncpu=$(nproc)
tmp=$(mktemp -d)
bgpid=
cleanup() {
	[ -n "$bgpid" ] && kill "$bgpid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

n=0 fail=0 skipped=0
ok() { n=$((n + 1)); echo "ok $n $*"; }
not_ok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n $*"; }
skip() { n=$((n + 1)); skipped=$((skipped + 1)); echo "ok $n # SKIP $*"; }
# In sanitizer builds the sanitizer's runtime must come first in LD_PRELOAD.
if [ -n "${UMCG_RUN_SANITIZER_RT:-}" ] && [ -f "$UMCG_RUN_SANITIZER_RT" ]; then
	export LD_PRELOAD=$UMCG_RUN_SANITIZER_RT
	export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
	UMCG_RUN_SANITIZED=0
fi
preload_skip() { # true (and reports a skip) in sanitizer builds
	if [ "${UMCG_RUN_SANITIZED:-0}" = 1 ]; then
		skip "$1: ThreadSanitizer build (TSan cannot run a preloaded pthread_create interposer)"
		return 0
	fi
	return 1
}

# check WANT_RC WANT_TEXT CMD...: exit status and a line of the output.
check() {
	local want_rc=$1 want=$2 out rc
	shift 2
	out=$(timeout 20 "$@" 2>&1 < /dev/null)
	rc=$?
	if [ $rc = "$want_rc" ] && grep -q -- "$want" <<< "$out"; then
		ok "$* -> $rc"
	else
		not_ok "$* (exit $rc, want $want_rc and '$want'; got: $(head -c 300 <<< "$out"))"
	fi
}

# run_load NAME MAX_OP BOUND CMD...: pthread_load exits 0 with checks=ok
# and max_concurrency MAX_OP BOUND (-le, -gt).
run_load() {
	local name=$1 op=$2 bound=$3 out rc max
	shift 3
	out=$(timeout 30 "$@" "$load" 2>&1 < /dev/null)
	rc=$?
	max=$(sed -n 's/^max_concurrency=//p' <<< "$out")
	echo "# $name: exit $rc, max_concurrency=${max:-?}"
	if [ $rc = 0 ] && grep -q '^checks=ok$' <<< "$out" && [ -n "$max" ] &&
	   [ "$max" "$op" "$bound" ]; then
		ok "$name: max_concurrency $max $op $bound"
	else
		not_ok "$name (exit $rc, want 0, checks=ok and max_concurrency $op $bound; got: $(head -c 400 <<< "$out"))"
	fi
}

part_cli() {
	echo "1..26"
	check 0 "Usage: umcg-run" "$run" --help
	check 2 "unknown option '--bogus'" "$run" --bogus -- true
	check 2 "unknown option '-x'" "$run" -x -- true
	check 2 "option '--cores' needs a value" "$run" --cores
	check 2 "--cores: expected a whole number" "$run" --cores two -- true
	check 2 "--cores: expected a whole number" "$run" --cores 0 -- true
	check 2 "only $ncpu online CPUs" "$run" --cores $((ncpu + 1)) -- true
	check 2 "only $ncpu online CPUs" "$run" --cores 100000 -- true
	check 2 "unknown policy 'lifo'" "$run" --policy lifo -- true
	check 2 "unknown backend 'gpu'" "$run" --backend gpu -- true
	check 1 "backend 'kmod' is not available" "$run" --backend kmod -- true
	check 1 "backend 'scx' is not available" "$run" --backend scx -- true
	check 2 "expected user, kmod, scx or auto" env UMCG_BACKEND=gpu "$run" -- true
	check 2 "--time-slice-us: expected microseconds" "$run" --time-slice-us -5 -- true
	check 2 "--dump-signal: expected a signal" "$run" --dump-signal KILL -- true
	check 2 "UMCG_DUMP_SIGNAL='BOGUS' is not a usable signal" \
		env UMCG_DUMP_SIGNAL=BOGUS "$run" -- true
	check 2 "no program given" "$run" --cores 1
	check 127 "command not found" "$run" -- umcg-no-such-program-here
	check 127 "No such file or directory" "$run" -- /nonexistent/program
	: > "$tmp/noexec"
	check 126 "Permission denied" "$run" -- "$tmp/noexec"
	check 2 "no PID given" "$ctl" dump
	check 2 "'12x' is not a process ID" "$ctl" dump 12x
	sleep 30 & local victim=$! i
	# Until it has executed sleep, it is this shell, which catches USR2.
	for i in $(seq 100); do
		[ "$(cat /proc/$victim/comm 2>/dev/null)" = sleep ] && break
		sleep 0.05
	done
	check 1 "does not catch signal [0-9]* (SIGRTMAX-3)" "$ctl" dump "$victim"
	check 1 "does not catch signal 12 (SIGUSR2)" env UMCG_DUMP_SIGNAL=USR2 "$ctl" dump "$victim"
	check 2 "dumps are off" env UMCG_DUMP_SIGNAL=none "$ctl" dump "$victim"
	kill "$victim"; wait "$victim" 2>/dev/null
	check 1 "no process $victim" "$ctl" dump "$victim"
}

# Where max_concurrency is counted, with --time-slice-us 0: a section the
# slice cuts short lets another start (C1 counts workers on cores, not
# sections).
part_c1() {
	local out rc
	echo "1..10"
	if preload_skip "--cores 1"; then :; else
		run_load "umcg-run --cores 1" -le 1 "$run" --cores 1 -t 0 --
	fi
	if [ "$ncpu" -lt 2 ]; then
		skip "--cores 2: one CPU only"
	elif preload_skip "--cores 2"; then :; else
		run_load "umcg-run --cores 2" -le 2 "$run" --cores 2 -t 0 --
	fi
	# The same program on its own: the check above can fail.
	if [ "$ncpu" -lt 2 ]; then
		skip "without umcg-run: one CPU only"
	elif [ "${UMCG_RUN_SANITIZED:-0}" = 1 ]; then
		# Only the preloaded runs above make this comparison meaningful.
		skip "without umcg-run: sanitizer build (compares with the skipped runs)"
	else
		run_load "without umcg-run" -gt 1 env
	fi
	if preload_skip "fifo"; then :; else
		run_load "umcg-run --cores 1 --policy fifo" -le 1 "$run" --cores 1 -t 0 --policy fifo --
	fi
	if preload_skip "pinned"; then :; else
		run_load "umcg-run --cores 1 --policy pinned" -le 1 "$run" -c 1 -t 0 -p pinned --
	fi
	# Preempted sections interleave: only the results are checked.
	if preload_skip "time slice"; then :; else
		run_load "umcg-run --cores 1 --time-slice-us 1000" -ge 1 \
			"$run" --cores 1 --time-slice-us 1000 --
	fi
	# A managed shell's child: forked by a worker pinned to one CPU, it
	# must get the CPUs back to set up its own 2-core group.
	if [ "$ncpu" -lt 2 ]; then
		skip "child of a managed shell: one CPU only"
	elif preload_skip "child of a managed shell"; then :; else
		run_load "child of a managed shell, --cores 2" -le 2 \
			"$run" --cores 2 -t 0 -- sh -c '"$0"; r=$?; exit $r'
	fi
	# exit() from a thread that lost its core in a read libumcg did not see,
	# while a worker holds the only core and never blocks: must not hang.
	# The spinner gets 1 s to be created and given the core (the monitor
	# takes it after 50 us; 0.3 s was too short at a load average of 100).
	if preload_skip "exit while a worker spins"; then :; else
		out=$( (sleep 1; echo go) | timeout 10 "$run" --cores 1 -- "$load" --exit-spin 2>&1)
		rc=$?
		if [ $rc = 0 ] && grep -q '^spinner_ran=1$' <<< "$out"; then
			ok "exit while a worker spins on the only core"
		else
			not_ok "exit while a worker spins on the only core (exit $rc, want 0 and spinner_ran=1; got: $(head -c 300 <<< "$out"))"
		fi
	fi
	if preload_skip "thread started before the preload's constructor"; then :; else
		check 0 "^early=ok$" "$run" --cores 1 -- "$early"
	fi
	if preload_skip "bad environment"; then :; else
		# By file name, from LD_LIBRARY_PATH: LD_PRELOAD splits a
		# path with a space (as umcg-run does it then).
		check 2 "bad UMCG_RUN_CORES='many'" \
			env UMCG_RUN_CORES=many LD_LIBRARY_PATH="$(dirname "$lib")" \
			LD_PRELOAD="${LD_PRELOAD:+$LD_PRELOAD:}$(basename "$lib")" "$load"
	fi
}

# handoff_case NAME RUN-OPTION...: pthread_load --handoff under umcg-run.
handoff_case() {
	local name=$1 out rc
	shift
	out=$(timeout 20 "$run" "$@" -- "$load" --handoff 2>&1 < /dev/null)
	rc=$?
	sed 's/^/# /' <<< "$out"
	if [ $rc = 0 ] && grep -q '^checks=ok$' <<< "$out"; then
		ok "$name: every interposed call handed its core on"
	else
		not_ok "$name (exit $rc, want 0 and checks=ok; 124 is a call that kept its core; got: $(head -c 400 <<< "$out"))"
	fi
}

part_c2() {
	echo "1..2"
	if preload_skip "hand-off"; then :; else
		handoff_case "umcg-run --cores 1 --blocked-us 30000000" \
			--cores 1 --blocked-us 30000000
	fi
	if preload_skip "hand-off, fifo"; then :; else
		handoff_case "umcg-run --cores 1 --policy fifo --blocked-us 30000000" \
			--cores 1 --policy fifo --blocked-us 30000000
	fi
}

# Waits up to 10 s for FILE to hold a line matching RE.
wait_for() {
	local i
	for i in $(seq 100); do
		grep -q -- "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# dump_case NAME SIGNAL-ENV RUN-OPTION...: a held program, dumped.
dump_case() {
	local name=$1 sigenv=$2 tids tid missing= rc i rows
	shift 2
	rm -f "$tmp/in" "$tmp/out" "$tmp/err"
	mkfifo "$tmp/in"
	exec 3<> "$tmp/in"
	"$run" "$@" -- "$load" --hold < "$tmp/in" > "$tmp/out" 2> "$tmp/err" 3>&- &
	bgpid=$!
	if ! wait_for "$tmp/out" '^ready$'; then
		not_ok "$name: program not ready: $(head -c 300 "$tmp/out" "$tmp/err")"
		exec 3>&-
		return
	fi
	tids=$(sed -n 's/^tids=//p' "$tmp/out")
	if ! env $sigenv "$ctl" dump "$bgpid" > "$tmp/ctl" 2>&1; then
		not_ok "$name: umcgctl dump failed: $(cat "$tmp/ctl")"
	elif ! wait_for "$tmp/err" '^umcg: backend'; then
		not_ok "$name: no dump on the program's stderr: $(head -c 300 "$tmp/err")"
	else
		# Wait for the last thread row, then look for each tid.
		wait_for "$tmp/err" "^ *${tids##* } " || true
		for tid in $tids; do
			grep -Eq "^ *$tid " "$tmp/err" || missing="$missing $tid"
		done
		# Every thread of the program, and nothing else (no server, no
		# monitor: libumcg's own threads must not become workers).
		rows=$(grep -Ec '^ *[0-9]+ ' "$tmp/err")
		if [ -z "$missing" ] && [ "$rows" = "$(wc -w <<< "$tids")" ]; then
			ok "$name: the dump lists the program's $rows threads and no others"
		else
			not_ok "$name: tids$missing not in the dump, or $rows rows for tids $tids: $(head -c 600 "$tmp/err")"
		fi
		sed 's/^/# /' "$tmp/err"
	fi
	exec 3>&-
	# EOF on its stdin releases it; give it 10 s.
	for i in $(seq 100); do
		kill -0 "$bgpid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$bgpid" 2>/dev/null
	wait "$bgpid"
	rc=$?
	bgpid=
	if [ $rc = 0 ]; then
		ok "$name: the program exits 0 after the dump"
	else
		not_ok "$name: the program exited $rc: $(head -c 300 "$tmp/err")"
	fi
}

# caught PID SIG: does PID catch SIG (/proc's SigCgt)?
caught() {
	local mask
	mask=$(sed -n 's/^SigCgt:[[:space:]]*//p' "/proc/$1/status" 2>/dev/null)
	[ -n "$mask" ] && (( (0x$mask >> ($2 - 1)) & 1 ))
}

part_dump() {
	local pid i rt
	echo "1..7"
	if preload_skip "dump (default)" && preload_skip "exit after dump (default)" &&
	   preload_skip "dump (SIGUSR1)" && preload_skip "exit after dump (SIGUSR1)" &&
	   preload_skip "default signal" && preload_skip "none" && preload_skip "none, umcgctl"; then
		return
	fi
	dump_case "dump on the default signal" "" --cores 1
	dump_case "dump on --dump-signal USR1" "UMCG_DUMP_SIGNAL=USR1" --cores 1 --dump-signal USR1
	# The default is SIGRTMAX-3 (kill -l's RTMAX-3); USR1 and USR2 (the
	# JVM's suspend signal) are left alone.
	rt=$(kill -l RTMAX-3 2>/dev/null || echo 61)
	for sigenv in "" "UMCG_DUMP_SIGNAL=none"; do
		rm -f "$tmp/sig.out"
		# No time slice in the second: no SIGURG handler either.
		env $sigenv "$run" --cores 1 ${sigenv:+-t 0} -- "$machine" sigwait \
			> "$tmp/sig.out" 2>&1 &
		pid=$!
		wait_for "$tmp/sig.out" '^ready$' || true
		if [ -z "$sigenv" ]; then
			if caught $pid "$rt" && ! caught $pid 10 && ! caught $pid 12; then
				ok "default dump signal: catches $rt, not SIGUSR1 or SIGUSR2"
			else
				not_ok "default dump signal: SigCgt $(grep SigCgt /proc/$pid/status), want bit $rt and not 10, 12"
			fi
		else
			if kill -0 $pid 2>/dev/null && ! caught $pid "$rt" &&
			   ! caught $pid 10 && ! caught $pid 12 && ! caught $pid 23; then
				ok "UMCG_DUMP_SIGNAL=none, -t 0: no dump signal, no SIGURG caught"
			else
				not_ok "UMCG_DUMP_SIGNAL=none: SigCgt $(grep SigCgt /proc/$pid/status)"
			fi
			check 1 "does not catch signal $rt" "$ctl" dump "$pid"
		fi
		kill -TERM $pid 2>/dev/null
		wait $pid
	done
}

# val NAME TEXT: the value of NAME=... in TEXT.
val() { sed -n "s/^$1=//p" <<< "$2" | head -n 1; }

part_machine() {
	local out rc pid fails runs i j how cpus pol c
	echo "1..16"
	if [ "${UMCG_RUN_SANITIZED:-0}" = 1 ]; then
		for i in $(seq 16); do preload_skip "machine $i"; done
		return
	fi
	# nproc and the affinity calls: the group's CPUs.
	c=1
	[ "$ncpu" -ge 2 ] && c=2
	out=$(timeout 20 "$run" --cores $c -- nproc 2>&1 < /dev/null)
	if [ "$out" = "$c" ]; then
		ok "nproc under --cores $c: $out"
	else
		not_ok "nproc under --cores $c: '$out', want $c"
	fi
	out=$(timeout 20 "$run" --cores 1 -- nproc 2>&1 < /dev/null)
	if [ "$out" = 1 ]; then
		ok "nproc under --cores 1: $out"
	else
		not_ok "nproc under --cores 1: '$out', want 1"
	fi
	out=$(timeout 20 "$run" --cores $c -- "$machine" affinity 2>&1 < /dev/null)
	rc=$?
	sed 's/^/# /' <<< "$out"
	if [ $rc = 0 ] && [ "$(val affinity "$out")" = ok ] &&
	   [ "$(val main_cpus "$out")" = $c ] && [ "$(val main_pcpus "$out")" = $c ] &&
	   [ "$(val thread_cpus "$out")" = $c ] && [ "$(val thread_pcpus "$out")" = $c ] &&
	   [ "$(val pid_cpus "$out")" = $c ]; then
		ok "affinity calls under --cores $c report $c CPUs; set_one=$(val set_one "$out")"
	else
		not_ok "affinity calls under --cores $c (exit $rc; want $c CPUs everywhere and affinity=ok)"
	fi
	# Go's runtime reads the real mask (one CPU): umcg-run sets GOMAXPROCS.
	if [ -z "${UMCG_RUN_GOPROCS:-}" ] || [ ! -x "$UMCG_RUN_GOPROCS" ]; then
		skip "Go's GOMAXPROCS under --cores $c: no Go toolchain in this build"
		skip "Go's GOMAXPROCS set by the user: no Go toolchain in this build"
	else
		out=$(timeout 20 "$run" --cores $c -- "$UMCG_RUN_GOPROCS" 2>&1 < /dev/null)
		rc=$?
		sed 's/^/# /' <<< "$out"
		if [ $rc = 0 ] && [ "$(val gomaxprocs "$out")" = $c ]; then
			ok "Go under --cores $c: GOMAXPROCS $c (NumCPU $(val numcpu "$out"))"
		else
			not_ok "Go under --cores $c: GOMAXPROCS '$(val gomaxprocs "$out")', want $c (exit $rc)"
		fi
		out=$(GOMAXPROCS=3 timeout 20 "$run" --cores $c -- "$UMCG_RUN_GOPROCS" 2>&1 < /dev/null)
		rc=$?
		if [ $rc = 0 ] && [ "$(val gomaxprocs "$out")" = 3 ]; then
			ok "Go under --cores $c with GOMAXPROCS=3: the user's 3"
		else
			not_ok "Go under --cores $c with GOMAXPROCS=3: '$(val gomaxprocs "$out")' (exit $rc)"
		fi
	fi
	# OpenMP and a JVM read the mask through the C library: the cores.
	if [ -z "${UMCG_RUN_OMP:-}" ] || [ ! -x "$UMCG_RUN_OMP" ]; then
		skip "OpenMP under --cores $c: the compiler has no OpenMP"
	else
		out=$(timeout 20 "$run" --cores $c -- "$UMCG_RUN_OMP" 2>&1 < /dev/null)
		rc=$?
		sed 's/^/# /' <<< "$out"
		if [ $rc = 0 ] && [ "$(val omp_procs "$out")" = $c ] &&
		   [ "$(val omp_max_threads "$out")" = $c ] && [ "$(val omp_team "$out")" = $c ]; then
			ok "OpenMP under --cores $c: $c procs, $c threads"
		else
			not_ok "OpenMP under --cores $c: want $c procs, max threads and team (exit $rc)"
		fi
	fi
	if ! command -v java > /dev/null || [ ! -f "${UMCG_RUN_JAVA_SRC:-}" ]; then
		skip "a JVM under --cores $c: no java here"
	else
		out=$(timeout 120 "$run" --cores $c -- java -Xshare:auto "$UMCG_RUN_JAVA_SRC" 2>&1 < /dev/null)
		rc=$?
		sed 's/^/# /' <<< "$out"
		if [ $rc = 0 ] && [ "$(val jvm_procs "$out")" = $c ] &&
		   [ "$(val jvm_threads "$out")" = ok ]; then
			ok "a JVM under --cores $c: availableProcessors $c, its threads ran"
		else
			not_ok "a JVM under --cores $c: availableProcessors '$(val jvm_procs "$out")', want $c (exit $rc)"
		fi
	fi
	# The program's own check, unmanaged: setting one CPU is honoured.
	out=$(timeout 20 "$machine" affinity 2>&1 < /dev/null)
	rc=$?
	if [ $rc = 0 ] && [ "$(val affinity "$out")" = ok ] && [ "$(val set_one "$out")" = ok ]; then
		ok "affinity without umcg-run: set_one honoured"
	else
		not_ok "affinity without umcg-run (exit $rc): $(head -c 300 <<< "$out")"
	fi
	# Children: the program's CPUs (all $ncpu of this test's), SCHED_OTHER.
	out=$(timeout 20 "$run" --cores 1 -- "$machine" spawn 2>&1 < /dev/null)
	rc=$?
	sed 's/^/# /' <<< "$out"
	for how in system popen posix_spawn fork exec; do
		cpus=$(val ${how}_cpus "$out") pol=$(val ${how}_policy "$out")
		if [ "$cpus" = "$ncpu" ] && [ "$pol" = 0 ]; then
			ok "$how() child under --cores 1: $cpus CPUs, policy $pol"
		else
			not_ok "$how() child under --cores 1: '${cpus:-?}' CPUs, policy '${pol:-?}' (want $ncpu, 0; exit $rc)"
		fi
	done
	# SIGTERM, blocked by the program and taken by sigwait(): 20 runs.
	runs=20 fails=0
	for i in $(seq $runs); do
		: > "$tmp/sw.out"
		"$run" --cores $c -- "$machine" sigwait > "$tmp/sw.out" 2>&1 &
		pid=$!
		if ! wait_for "$tmp/sw.out" '^ready$'; then
			kill -KILL $pid 2>/dev/null
			wait $pid
			fails=$((fails + 1))
			echo "# run $i: never ready: $(head -c 200 "$tmp/sw.out")"
			continue
		fi
		kill -TERM $pid
		# 10 s to take it and exit (no subshell: it would run our trap).
		for j in $(seq 100); do
			kill -0 $pid 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL $pid 2>/dev/null
		wait $pid
		rc=$?
		if [ $rc != 0 ] || ! grep -q '^sigwait=SIGTERM$' "$tmp/sw.out"; then
			fails=$((fails + 1))
			echo "# run $i: exit $rc: $(head -c 200 "$tmp/sw.out")"
		fi
	done
	if [ $fails = 0 ]; then
		ok "SIGTERM reached sigwait() in $runs of $runs runs"
	else
		not_ok "SIGTERM reached sigwait() in $((runs - fails)) of $runs runs"
	fi
	# Spin-waits on one core: the default time slice lets the setter run.
	out=$(timeout 20 "$run" --cores 1 -- "$machine" spin 2>&1 < /dev/null)
	rc=$?
	if [ $rc = 0 ] && [ "$(val spin "$out")" = ok ]; then
		ok "4 spinners and a setter on one core, default time slice"
	else
		not_ok "4 spinners and a setter on one core, default time slice (exit $rc, 124: livelock): $(head -c 200 <<< "$out")"
	fi
	out=$(timeout 3 "$run" --cores 1 --time-slice-us 0 -- "$machine" spin 2>&1 < /dev/null)
	rc=$?
	if [ $rc = 124 ]; then
		ok "the same with --time-slice-us 0 livelocks (the check above can fail)"
	else
		not_ok "the same with --time-slice-us 0: exit $rc, want 124 (timeout): $(head -c 200 <<< "$out")"
	fi
}

echo "TAP version 13"
case $part in
cli) part_cli ;;
c1) part_c1 ;;
c2) part_c2 ;;
dump) part_dump ;;
machine) part_machine ;;
*) echo "Bail out! unknown part '$part'"; exit 1 ;;
esac
[ $fail = 0 ] || exit 1
[ $skipped = $n ] && exit 77
exit 0
