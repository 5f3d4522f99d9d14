#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# top.sh PART - "umcgctl top" on top_workload, whose shape is known: 2
# cores, 3 workers that compute and yield, 2 blocked in read(), 2 parked,
# the main thread unmanaged.  TAP output; exit 77 (skip) with the reason
# when a tool or a right the part needs is missing.
#
#   batch      --json and -b output: every sample's counts match the
#              workload, switches/s > 0; the checker fails on a planted
#              wrong count; the list mode finds the process; the area goes
#              at exit; UMCG_STATS=0 publishes nothing; with
#              $UMCG_BACKEND set (the guest's top_debug), top shows it
#   tmux       the interactive screen in a detached tmux session: the
#              process, its counts and a non-zero switches/s on screen; q quits
#   access     (root) the area is 0600 and its owner's: nobody can neither
#              read nor write it, and umcgctl as nobody says so; an area
#              someone else planted for a process is refused
#   malformed  short, bad-magic, wrong-version, wrong-size and world-readable
#              areas give a clear error and exit 1, never a crash; stale
#              areas (dead or unrelated pid) are removed
set -u
part=${1:?usage: top.sh batch|tmux|access|malformed}
umcgctl=${UMCGCTL:?}
workload=${TOP_WORKLOAD:?}
# The workload's main thread; with ThreadSanitizer, its background thread too.
unmanaged=$((1 + ${TOP_TSAN:-0}))
. "$(dirname "$0")/lib.sh"
cleanup_more() {
	[ -n "${tmux_sock:-}" ] && tmux -L "$tmux_sock" kill-server 2> /dev/null
	[ -n "${spid:-}" ] && kill "$spid" 2> /dev/null
}

# workers_line FILE: FILE (top's text or screen) has the workload's line:
# 7 workers, the 3 yielders running, runnable or woken (a sample may catch
# both cores between two of them), 2 blocked, 2 parked.
workers_line() {
	local line r q w
	line=$(grep -Eo "workers 7: running [0-9]+ runnable [0-9]+ woken [0-9]+ blocked 2 parked 2 new 0 done 0  unmanaged $unmanaged" "$1") ||
		return 1
	read -r r q w <<< "$(echo "$line" | sed -E 's/.*running ([0-9]+) runnable ([0-9]+) woken ([0-9]+).*/\1 \2 \3/')"
	[ $((r + q + w)) = 3 ] && [ "$r" -le 2 ]
}

# check_json FILE Y B P CORES: every sample of FILE (umcgctl top --json)
# shows the workload as set up; one at least with every yielder's core
# taken (running = CORES).  Prints why not.
check_json() {
	UNMANAGED=$unmanaged python3 - "$@" <<'EOF'
import json, os, sys
path, y, b, p, cores = sys.argv[1], *map(int, sys.argv[2:])
unmanaged = int(os.environ["UNMANAGED"])
bad, full = [], False
samples = [json.loads(l) for l in open(path) if l.strip()]
if not samples:
    bad.append("no samples")
for i, s in enumerate(samples):
    if len(s["processes"]) != 1:
        bad.append(f"sample {i}: {len(s['processes'])} processes")
        continue
    q = s["processes"][0]
    st = q["state"]
    want = {"workers": y + b + p, "blocked": b, "parked": p, "unmanaged": unmanaged,
            "cores": cores, "queued": y, "done": 0, "new": 0}
    got = {"workers": q["workers"], "blocked": st["blocked"], "parked": st["parked"],
           "unmanaged": q["unmanaged"], "cores": len(q["cores"]),
           "queued": st["running"] + st["runnable"] + st["woken"],
           "done": st["done"], "new": st["new"]}
    for k in want:
        if want[k] != got[k]:
            bad.append(f"sample {i}: {k} {got[k]}, want {want[k]}")
    # A sample may catch both cores between two yielders (seen on scx).
    if not 0 <= st["running"] <= cores:
        bad.append(f"sample {i}: running {st['running']}")
    full |= st["running"] == min(cores, y)
    if not q["rates"] or q["rates"]["switches"] <= 0:
        bad.append(f"sample {i}: switches/s {q['rates'] and q['rates']['switches']}")
    if not q["fresh"]:
        bad.append(f"sample {i}: no fresh snapshot")
    names = {c["name"] for c in q["cores"]}
    if not all(n.startswith("yield-") or n == "" for n in names):
        bad.append(f"sample {i}: cores run {sorted(names)}")
if not full:
    bad.append(f"no sample with running = {min(cores, y)}")
for m in bad:
    print("#  " + m)
sys.exit(1 if bad else 0)
EOF
}

part_batch() {
	need python3
	local cases=9
	[ -n "${UMCG_BACKEND:-}" ] && cases=10
	echo "TAP version 13"
	echo "1..$cases"
	start_workload -c 2 -y 3 -b 2 -p 2 || { not_ok "workload starts"; return; }
	"$umcgctl" top --json -n 3 -d 0.5 -p "$wpid" > "$tmp/json" 2> "$tmp/jerr"
	check "top --json -n 3 -d 0.5 -p PID exits 0 ($(head -c 200 "$tmp/jerr"))" test $? = 0
	check "JSON samples match the workload (7 workers: 3 queued, 2 blocked, 2 parked; switches/s > 0)" \
		check_json "$tmp/json" 3 2 2 2
	sed -n 1p "$tmp/json" | cut -c1-400 | sed 's/^/# /'
	# The checker fails on a count the workload did not set up.
	if check_json "$tmp/json" 3 3 2 2 > "$tmp/planted"; then
		not_ok "planted wrong count (3 blocked) fails the check"
	else
		ok "planted wrong count (3 blocked) fails the check: $(grep -m1 blocked "$tmp/planted")"
	fi
	"$umcgctl" top -b -n 1 -d 0.5 -p "$wpid" > "$tmp/text"
	check "top -b shows the process" grep -q "^PID $wpid top_workload  backend " "$tmp/text"
	# In the guest: the backend asked for is the one the workload runs on.
	[ -n "${UMCG_BACKEND:-}" ] &&
		check "top -b shows backend $UMCG_BACKEND" \
			grep -q "^PID $wpid top_workload  backend $UMCG_BACKEND " "$tmp/text"
	check "top -b shows 3 queued or running, 2 blocked, 2 parked, $unmanaged unmanaged" \
		workers_line "$tmp/text"
	sed 's/^/# /' "$tmp/text"
	"$umcgctl" top -b -n 1 -d 0.2 > "$tmp/all"
	check "top -b without -p lists the process" grep -q "^PID $wpid " "$tmp/all"
	wpid_was=$wpid
	stop_workload
	check "the workload exits 0" test $? = 0
	check "its area is gone after exit" test ! -e "/dev/shm/umcg.$wpid_was"
	UMCG_STATS=0 start_workload -c 1 -y 1 -b 0 -p 0
	"$umcgctl" top -b -n 1 -d 0.1 -p "$wpid" > "$tmp/none" 2>&1
	rc=$?
	check "UMCG_STATS=0: no area, top -p says so and exits 1 ($(head -c 200 "$tmp/none"))" \
		eval "[ $rc = 1 ] && [ ! -e /dev/shm/umcg.$wpid ] && grep -q 'publishes no libumcg statistics' '$tmp/none'"
	stop_workload
}

part_tmux() {
	need tmux
	echo "TAP version 13"
	echo "1..5"
	start_workload -c 2 -y 3 -b 2 -p 2 || { not_ok "workload starts"; return; }
	tmux_sock=umcg-top-$$
	# Not with fd 9: the workload's stdin must close when we say.
	# tmux runs the command through a shell: quote the path (it may hold
	# spaces, as a checkout's path may).
	printf -v cmd '%q top -d 0.5 -p %d; echo top-exit=$?; sleep 10' "$umcgctl" "$wpid"
	TERM=${TERM:-xterm} tmux -L "$tmux_sock" -f /dev/null new-session -d -s top -x 160 -y 40 \
		"$cmd" 9>&-
	sleep 2.5
	tmux -L "$tmux_sock" capture-pane -p -t top > "$tmp/screen"
	sed 's/^/# /' "$tmp/screen"
	check "the screen shows the process" grep -q "^PID $wpid top_workload " "$tmp/screen"
	check "the screen shows 7 workers, 2 blocked, 2 parked, $unmanaged unmanaged" \
		workers_line "$tmp/screen"
	sw=$(grep -o 'switches/s [0-9.]*' "$tmp/screen" | head -1 | cut -d' ' -f2)
	check "the screen shows switches/s > 0 (${sw:-none})" \
		python3 -c "import sys; sys.exit(0 if float('${sw:-0}') > 0 else 1)"
	tmux -L "$tmux_sock" send-keys -t top q
	sleep 1
	tmux -L "$tmux_sock" capture-pane -p -t top > "$tmp/after"
	check "q quits, exit status 0" grep -q '^top-exit=0' "$tmp/after"
	stop_workload
	check "the workload exits 0" test $? = 0
}

part_access() {
	[ "$(id -u)" = 0 ] || skip_all "needs root to run as nobody"
	command -v setpriv > /dev/null || skip_all "no setpriv"
	id nobody > /dev/null 2>&1 || skip_all "no user nobody"
	[ -x /usr/bin/python3 ] || skip_all "no /usr/bin/python3 (to plant an area as nobody)"
	echo "TAP version 13"
	echo "1..7"
	as_nobody() { setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups -- "$@"; }
	# umcgctl where nobody can run it (the checkout may be private).
	chmod 755 "$tmp"
	cp "$umcgctl" "$tmp/umcgctl"
	chmod 755 "$tmp/umcgctl"
	start_workload -c 1 -y 1 -b 1 -p 0 || { not_ok "workload starts"; return; }
	f=/dev/shm/umcg.$wpid
	check "the area is mode 0600, owned by root ($(stat -c '%a %U' "$f"))" \
		test "$(stat -c '%a %U' "$f")" = "600 root"
	check "nobody cannot read it" eval "! as_nobody head -c 8 $f > /dev/null 2>&1"
	check "nobody cannot write it" eval "! as_nobody sh -c 'echo x >> $f' 2> /dev/null"
	as_nobody "$tmp/umcgctl" top -b -n 1 -d 0.1 -p "$wpid" > "$tmp/nobody" 2>&1
	rc=$?
	check "umcgctl top as nobody: exit 1, permission denied ($(head -c 200 "$tmp/nobody"))" \
		eval "[ $rc = 1 ] && grep -q 'Permission denied' '$tmp/nobody'"
	check "root reads it (exit 0)" sh -c "'$umcgctl' top -b -n 1 -d 0.1 -p $wpid > /dev/null"
	stop_workload
	# An area that nobody made for a process of root's: refused.
	sleep 30 &
	spid=$!
	cp /dev/null "$tmp/planted"
	# The system's python3: one found in root's PATH (a pyenv shim under
	# /root, say) may be one nobody cannot run.
	as_nobody /usr/bin/python3 -c "
import struct, os
fd = os.open('/dev/shm/umcg.$spid', os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
os.write(fd, struct.pack('<QIIII', 0x7461747367636d75, 1, 448, 512, 1) + bytes(448 + 512 - 24))
"
	"$umcgctl" top -b -n 1 -d 0.1 -p "$spid" > "$tmp/planted" 2>&1
	rc=$?
	check "an area nobody planted for root's process: exit 1, refused ($(head -c 200 "$tmp/planted"))" \
		eval "[ $rc = 1 ] && grep -q 'owned by another user' '$tmp/planted'"
	rm -f "/dev/shm/umcg.$spid"
	kill "$spid"; spid=
	check "umcgctl itself runs as nobody (top --help), so the denial in 4 is the area's" \
		eval "as_nobody '$tmp/umcgctl' top --help > /dev/null"
}

# A file for live pid $spid with the bytes python3 writes from "$1".
plant() {
	python3 - "$spid" "$1" <<'EOF'
import os, struct, sys
pid, kind = int(sys.argv[1]), sys.argv[2]
M = 0x7461747367636d75
def hdr(magic=M, version=2, hsize=448, csize=512, cores=1, size=None):
    size = 448 + cores * 512 if size is None else size
    h = struct.pack("<QIIIIQII", magic, version, hsize, csize, cores, size, pid, 1)
    return h + bytes(448 - len(h)) + bytes(cores * 512)
data = {
    "short": b"umcgstat!!",
    "magic": hdr(magic=0x1234),
    "version": hdr(version=99),
    "size": hdr(cores=2, size=448 + 512),
    "cores": hdr(cores=0, size=448),
    "valid": hdr(),
}[kind]
path = f"/dev/shm/umcg.{pid}"
if os.path.exists(path):
    os.unlink(path)
fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
os.write(fd, data)
os.close(fd)
EOF
}

part_malformed() {
	need python3
	echo "TAP version 13"
	echo "1..10"
	sleep 60 &
	spid=$!
	for c in "short|too short" "magic|bad magic" "version|version this umcgctl does not know" \
		 "size|size does not match" "cores|implausible number of cores"; do
		kind=${c%%|*} want=${c#*|}
		plant "$kind"
		"$umcgctl" top -b -n 1 -d 0.1 -p "$spid" > "$tmp/o" 2>&1
		rc=$?
		check "$kind area: exit 1 with '$want' ($(head -c 160 "$tmp/o"))" \
			eval "[ $rc = 1 ] && grep -q '$want' '$tmp/o'"
	done
	plant valid
	chmod 644 "/dev/shm/umcg.$spid"
	"$umcgctl" top -b -n 1 -d 0.1 -p "$spid" > "$tmp/o" 2>&1
	rc=$?
	check "world-readable area: exit 1, ignored ($(head -c 160 "$tmp/o"))" \
		eval "[ $rc = 1 ] && grep -q 'readable or writable by other users' '$tmp/o'"
	# Malformed areas among others: the list mode warns and goes on.
	plant magic
	"$umcgctl" top -b -n 1 -d 0.1 > "$tmp/o" 2> "$tmp/e"
	rc=$?
	check "list mode with a bad area: exit 0, a warning ($(head -c 160 "$tmp/e"))" \
		eval "[ $rc = 0 ] && grep -q 'bad magic' '$tmp/e'"
	# A well-formed area that the live process does not map: stale.
	plant valid
	"$umcgctl" top -b -n 1 -d 0.1 -p "$spid" > "$tmp/o" 2>&1
	rc=$?
	check "an area its pid does not map: exit 1, stale, removed" \
		eval "[ $rc = 1 ] && grep -q 'publishes no libumcg' '$tmp/o' && [ ! -e /dev/shm/umcg.$spid ]"
	kill "$spid"
	wait "$spid" 2> /dev/null
	# A dead process's area: removed by the list mode.
	plant valid
	dead=$spid spid=
	"$umcgctl" top -b -n 1 -d 0.1 > /dev/null 2>&1
	check "a dead process's area is removed by the list mode" test ! -e "/dev/shm/umcg.$dead"
	check "umcgctl top -p 0 is a usage error (exit 2)" \
		eval "'$umcgctl' top -p 0 > /dev/null 2>&1; [ \$? = 2 ]"
}

case $part in
batch|tmux|access|malformed) ;;
*) echo "top.sh: unknown part '$part'" >&2; exit 2 ;;
esac
[ -r /dev/shm ] || skip_all "no /dev/shm"
"part_$part"
[ $fail = 0 ]
