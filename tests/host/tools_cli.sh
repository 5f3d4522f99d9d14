#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tools_cli.sh - the command-line tools reject bad input with a message and
# exit code 2, and answer --help.  TAP output.
top=$(cd "$(dirname "$0")/../.." && pwd)
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

echo "TAP version 13"
echo "1..10"
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
[ $fail = 0 ]
