# SPDX-License-Identifier: GPL-2.0
#
# lib.sh - what top.sh and debug.sh share: TAP lines, skips, and
# top_workload started in the background with its standard input on a
# fifo (it runs until stop_workload closes it).  Source it after setting
# $workload; it makes $tmp and removes it at exit, with whatever
# cleanup_more (if the script defines it) stops.
n=0 fail=0
tmp=$(mktemp -d /tmp/umcg-top.XXXXXX)
wpid=

cleanup() {
	[ -n "$wpid" ] && kill "$wpid" 2> /dev/null && wait "$wpid" 2> /dev/null
	declare -F cleanup_more > /dev/null && cleanup_more
	rm -rf "$tmp"
}
trap cleanup EXIT

ok() { n=$((n + 1)); echo "ok $n $*"; }
not_ok() { n=$((n + 1)); echo "not ok $n $*"; fail=$((fail + 1)); }
check() { # check DESCRIPTION CMD...: ok when CMD succeeds
	local what=$1
	shift
	if "$@"; then ok "$what"; else not_ok "$what"; fi
}
skip_all() { echo "1..0 # SKIP $*"; exit 77; }
need() { command -v "$1" > /dev/null || skip_all "no $1 here"; }

# Starts the workload (ARGS); sets wpid.
start_workload() {
	rm -f "$tmp/in" "$tmp/out"
	mkfifo "$tmp/in"
	"$workload" "$@" < "$tmp/in" > "$tmp/out" 2> "$tmp/err" &
	wpid=$!
	exec 9> "$tmp/in"	# the workload runs until this closes
	for _ in $(seq 100); do
		grep -q '^ready' "$tmp/out" 2> /dev/null && return 0
		sleep 0.1
	done
	echo "# workload did not start: $(cat "$tmp/err")"
	return 1
}

# Closes its input and waits: its exit status.
stop_workload() {
	exec 9>&-
	wait "$wpid"
	local rc=$?
	wpid=
	return $rc
}
