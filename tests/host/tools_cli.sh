#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tools_cli.sh - the command-line tools reject bad input with a message and
# exit code 2, and answer --help.  TAP output.
#
# umcgctl is a build output: $UMCGCTL, else the build tree's, found from the
# working directory ctest gives this test (<build>/tests/host).  Its
# sched_ext subcommands are checked only for usage errors, which come before
# any look at the machine, so the checks hold with or without sched_ext.
top=$(cd "$(dirname "$0")/../.." && pwd)
umcgctl=${UMCGCTL:-$PWD/../../tools/umcgctl}
n=0 fail=0

check() { # check WANT_RC WANT_TEXT CMD...
	local want_rc=$1 want=$2 out rc
	shift 2
	n=$((n + 1))
	out=$("$@" 2>&1 < /dev/null)
	rc=$?
	if [ $rc = "$want_rc" ] && grep -q -- "$want" <<< "$out"; then
		echo "ok $n $*"
	else
		echo "not ok $n $* (exit $rc, want $want_rc and '$want'; got: $(head -c 200 <<< "$out"))"
		fail=$((fail + 1))
	fi
}

skip() { # skip REASON CMD...
	local why=$1
	shift
	n=$((n + 1))
	echo "ok $n $* # SKIP $why"
}

# The umcgctl checks: WANT_RC WANT_TEXT ARG...
ctl_checks=(
	"0|umcgctl unload|--help"
	"0|Usage: umcgctl load|load --help"
	"0|Usage: umcgctl stats|stats -h"
	"2|unknown option '--bogus'|load --bogus"
	"2|bad --slice-us '0'|load --slice-us 0"
	"2|bad --slice-us 'abc'|load --slice-us abc"
	"2|bad --timeout-ms '30001'|load --timeout-ms 30001"
	"2|option '--timeout-ms' needs an argument|load --timeout-ms"
	"2|unexpected argument 'extra'|load extra"
	"2|unexpected argument 'now'|unload now"
	"2|unknown option '--verbose'|status --verbose"
	"2|bad --interval '0'|stats --interval 0"
	"2|--count needs --interval|stats --count 3"
	"2|bad --count 'x'|stats -i 1 -n x"
	"2|unknown option '--force'|eject --force"
	"2|unknown command 'frobnicate'|frobnicate"
)

# "umcgctl top" needs no sched_ext: checked whenever umcgctl is there.
top_checks=(
	"0|Usage: umcgctl top|top --help"
	"2|bad --delay '0'|top -d 0"
	"2|bad --delay 'x'|top -b -d x"
	"2|bad --count '0'|top -b -n 0"
	"2|bad --pid 'abc'|top -p abc"
	"2|option '--pid' needs an argument|top --pid"
	"2|unknown option '--bogus'|top --bogus"
	"2|unexpected argument 'extra'|top -b extra"
)

echo "TAP version 13"
echo "1..$((10 + ${#ctl_checks[@]} + ${#top_checks[@]}))"
check 0 "Usage: umcg-vm" "$top/tools/umcg-vm" --help
check 2 "unknown option '--bogus'" "$top/tools/umcg-vm" --bogus test x
check 2 "expected a positive number" "$top/tools/umcg-vm" --cpus two test x
check 2 "expected seconds" "$top/tools/umcg-vm" --timeout -5 test x
check 2 "expected auto, kvm or tcg" "$top/tools/umcg-vm" --accel xen test /bin/true
check 2 "no tests given" "$top/tools/umcg-vm" test
check 2 "missing or not executable" "$top/tools/umcg-vm" test /nonexistent/test
check 2 "no command given" "$top/tools/umcg-vm" run --
check 0 "Usage: umcg-root" "$top/tools/umcg-root" help
check 2 "Usage: umcg-root" "$top/tools/umcg-root" frobnicate

ctl_skip=
if [ ! -x "$umcgctl" ]; then
	ctl_skip="no umcgctl at $umcgctl (set UMCGCTL)"
elif ! "$umcgctl" load --help > /dev/null 2>&1; then
	ctl_skip="umcgctl built without the sched_ext scheduler (no bpf/)"
fi
for c in "${ctl_checks[@]}"; do
	IFS='|' read -r rc text args <<< "$c"
	# shellcheck disable=SC2086 # the arguments split on purpose
	if [ -n "$ctl_skip" ]; then
		skip "$ctl_skip" umcgctl $args
	else
		check "$rc" "$text" "$umcgctl" $args
	fi
done
for c in "${top_checks[@]}"; do
	IFS='|' read -r rc text args <<< "$c"
	# shellcheck disable=SC2086 # the arguments split on purpose
	if [ ! -x "$umcgctl" ]; then
		skip "no umcgctl at $umcgctl (set UMCGCTL)" umcgctl $args
	else
		check "$rc" "$text" "$umcgctl" $args
	fi
done
[ $fail = 0 ]
