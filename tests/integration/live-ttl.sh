#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Time limits of live sandboxes: create --ttl removes the sandbox when it
# runs out (its archived log ends "ttl expired"), hutch ttl extends and
# clears it, paused time does not count, --on-ttl pause leaves it paused,
# a killed keeper is made up for by the next ps, bad durations are usage
# errors, and a create without --ttl starts no keeper.  Margins are wide:
# CI runs this on a loaded 2-core machine.
. "$(dirname "$0")/../lib/tap.sh"

[ -n "$HUTCH_STATE_DIR" ] || tap_skip_all "HUTCH_STATE_DIR is not set"
state=$HUTCH_STATE_DIR
img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
H() { timeout 60 "$HUTCH_BIN" "$@"; }
tmp=$(hutch_test_tmpdir)
trap 'H rm --all >/dev/null 2>&1; rm -rf "$tmp"' EXIT

# This user's keepers (the keeper names itself hutch-keeper), one pid a line.
keepers() { pgrep -x -u "$(id -u)" hutch-keeper | sort -n; }
# The keeper a sandbox's state records, when it is alive.
keeper_of() {
  python3 -c 'import json, sys
k = json.load(open(sys.argv[1])).get("helpers", {}).get("keeper", {})
print(k.get("pid", ""))' "$state/$1/state.json" 2>/dev/null
}
listed() { H ps -q 2>/dev/null | grep -qx "$1"; }
gone() { ! listed "$1" && [ ! -e "$state/$1" ]; }
paused() { H ps -q --filter status=paused 2>/dev/null | grep -qx "$1"; }
# A member of sandbox ID's entry in ps --json.
ps_field() { # ID FIELD
  H ps --json | python3 -c 'import json, sys
for s in json.load(sys.stdin):
    if s["id"] == sys.argv[1]: v = s.get(sys.argv[2]); print("null" if v is None else v)' "$1" "$2"
}
# The records of sandbox ID's audit log (live or archived): "TYPE KEY=VALUE" a line.
audit_records() { # ID KEY...
  H audit --json "$1" | python3 -c 'import json, sys
for r in json.load(sys.stdin)["records"]:
    print(" ".join([r["type"]] + ["%s=%s" % (k, r[k]) for k in sys.argv[1:] if k in r]))' "${@:2}"
}
now() { date +%s.%N; }
since() { python3 -c 'import sys; print("%.1f" % (float(sys.argv[2]) - float(sys.argv[1])))' "$1" "$(now)"; }
at_least() { python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)' "$1" "$2"; }

# ---- bad input: usage errors, nothing made ----
ls -A "$state" >"$tmp/before"
for bad in 10x 0 -5 "" 5y abc 1e12; do
  tap_status 2 "create --ttl '$bad' is a usage error" H create --rootfs "$img" --ttl "$bad"
done
tap_like "$tap_stderr" "--ttl wants a duration such as 90s, 10m or 2h" "saying what it wants"
tap_status 2 "--on-ttl sometimes" H create --rootfs "$img" --ttl 10s --on-ttl sometimes
tap_status 2 "--on-ttl without --ttl" H create --rootfs "$img" --on-ttl pause
tap_like "$tap_stderr" "--on-ttl needs --ttl" "saying why"
tap_status 2 "--ttl is not an option of exec" H exec --rootfs "$img" --ttl 10s -- true
tap_is "$(ls -A "$state")" "$(cat "$tmp/before")" "the refused creates left nothing"
tap_status 125 "hutch ttl of a missing sandbox" H ttl 000000000000 10s
tap_like "$tap_stderr" "no sandbox with id '000000000000'" "says there is none"
tap_status 2 "hutch ttl without a duration" H ttl 000000000000
tap_status 2 "hutch ttl with a bad duration" H ttl 000000000000 soon
tap_like "$tap_stderr" "DURATION wants 90s, 10m, 2h" "saying what it wants"

# ---- a create without --ttl starts no keeper ----
# What a create leaves running, caught as a child subreaper's orphans: its
# output on the first line, then NAME:PID of each live process, sorted.
left_behind() {
  python3 - "$HUTCH_BIN" "$@" <<'PY'
import ctypes, os, subprocess, sys, time
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
print(subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, text=True).stdout.strip())
time.sleep(0.5)
names = []
for k in open("/proc/self/task/%d/children" % os.getpid()).read().split():
    stat = open("/proc/%s/stat" % k).read()
    if stat[stat.rindex(")") + 2] != "Z":
        names.append("%s:%s" % (open("/proc/%s/comm" % k).read().strip(), k))
print(" ".join(sorted(names)))
PY
}
out=$(left_behind create --rootfs "$img")
plain=${out%%$'\n'*}
tap_like "$plain" "^[0-9a-f]{12}$" "a create without --ttl"
tap_is "$(wc -w <<<"${out#*$'\n'}")" 1 "leaves one process running, its init (${out#*$'\n'})"
out=$(left_behind create --rootfs "$img" --ttl 1h)
withttl=${out%%$'\n'*}
tap_like "$withttl" "^[0-9a-f]{12}$" "a create with --ttl"
tap_like "${out#*$'\n'}" "^([^ ]+ )?hutch-keeper:[0-9]+( [^ ]+)?$" "leaves two, its init and its keeper (${out#*$'\n'})"
seen=$(grep -oE 'hutch-keeper:[0-9]+' <<<"$out" | cut -d: -f2)
tap_ok "rm it" H rm "$withttl"
tap_unlike "$(cat "$state/$plain/state.json")" '"(ttl|helpers)"' "and records no limit"
tap_is "$(ps_field "$plain" ttl_left)" "null" "ps --json: ttl_left null"

# ---- --ttl 2s: removed at its deadline, the log archived ----
t0=$(now)
out=$(left_behind create --rootfs "$img" --ttl 2s --json)
short=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["id"])' "${out%%$'\n'*}")
tap_like "$short" "^[0-9a-f]{12}$" "create --ttl 2s"
tap_like "${out%%$'\n'*}" '"ttl":2,"on_ttl":"remove"' "--json has the ttl and its action"
k=$(grep -oE 'hutch-keeper:[0-9]+' <<<"$out" | cut -d: -f2)
tap_ok "its keeper ($k)" test -n "$k"
seen+=" $k"
tap_ok "gone within 15 s" hutch_wait_until 15 gone "$short"
took=$(since "$t0")
tap_ok "not before its 2 s ($took s)" at_least "$took" 1.9
tap_ok "hutch audit of the removed sandbox" H audit "$short"
tap_is "$(audit_records "$short" reason | tail -1)" "end reason=ttl expired" "its archived log ends with reason ttl expired"
tap_like "$(audit_records "$short" seconds on_ttl by)" "ttl seconds=2 on_ttl=remove by=create" "the ttl record of create"
tap_like "$(audit_records "$short" action by)" "ttl_expired action=remove by=keeper" "and the keeper's ttl_expired"
# None of the keepers this test has seen runs.
no_keepers() {
  local p
  for p in $seen; do ps -o stat= -p "$p" 2>/dev/null | grep -qv '^Z' && return 1; done
  return 0
}
tap_ok "its keeper has ended" hutch_wait_until 10 no_keepers

# ---- hutch ttl extends it, and none clears it ----
tap_ok "create --ttl 5s" H create --rootfs "$img" --ttl 5s
ext=$tap_stdout
k=$(keeper_of "$ext")
tap_ok "its keeper runs ($k), recorded in the state" test -n "$k"
seen+=" $k"
tap_like "$(keepers)" "(^|"$'\n'")$k("$'\n'"|$)" "named hutch-keeper"
tap_ok "hutch ttl ID 30s" H ttl "$ext" 30s
tap_like "$tap_stdout" "^$ext: removed in (29|30)s" "says when"
tap_is "$(keeper_of "$ext")" "$k" "the same keeper keeps the new limit"
sleep 7
tap_ok "it outlives its first deadline" listed "$ext"
tap_ok "hutch ttl --json" H ttl --json "$ext" 40s
tap_like "$tap_stdout" '"ttl":40,"ttl_left":(39|40)[.0-9]*,"on_ttl":"remove"' "--json has the new limit"
tap_is "$(ps_field "$ext" ttl)" "40" "ps --json: its ttl"
left=$(ps_field "$ext" ttl_left)
tap_ok "ps --json: ttl_left counts down from it ($left)" python3 -c "import sys; sys.exit(not 20 < $left < 40)"
tap_ok "ps" H ps
tap_like "$tap_stdout" "(^|"$'\n'")ID +.* TTL +IMAGE +NAME("$'\n'"|$)" "has a TTL column"
tap_like "$tap_stdout" "(^|"$'\n'")$ext +[0-9]+ +running .* ([23][0-9]|40)s +[^ ]+ +-("$'\n'"|$)" "with the time left"
k=$(keeper_of "$ext")
tap_ok "hutch ttl ID none" H ttl "$ext" none
tap_like "$tap_stdout" "no time limit" "says it has none"
tap_ok "clearing it ends the keeper" hutch_wait_until 10 sh -c "! kill -0 $k 2>/dev/null"
tap_is "$(ps_field "$ext" ttl)" "null" "ps: no ttl"
tap_ok "a limit set on the plain sandbox" H ttl "$plain" 1h
k=$(keeper_of "$plain")
tap_like "$(keepers)" "(^|"$'\n'")$k("$'\n'"|$)" "starts a keeper for it ($k)"
seen+=" $k"
tap_like "$(audit_records "$plain" seconds by)" "ttl seconds=3600 by=set_ttl" "recorded in its log"
k=$(keeper_of "$plain")
tap_ok "rm" H rm "$ext" "$plain"
tap_ok "rm stops its keeper" hutch_wait_until 5 sh -c "! kill -0 $k 2>/dev/null"

# ---- paused time does not count ----
t0=$(now)
tap_ok "create --ttl 6s" H create --rootfs "$img" --ttl 6s
pz=$tap_stdout
tap_ok "pause it" H pause "$pz"
sleep 8
tap_ok "paused past its deadline, it is still there ($(since "$t0") s)" listed "$pz"
left=$(ps_field "$pz" ttl_left)
tap_ok "its time left stood still ($left s)" python3 -c "import sys; sys.exit(not 3 < $left <= 6)"
tap_ok "resume" H resume "$pz"
t1=$(now)
sleep 1.5
tap_ok "running again, it is still there" listed "$pz"
tap_ok "then gone" hutch_wait_until 30 gone "$pz"
took=$(since "$t1")
tap_ok "what was left ran from the resume ($took s)" at_least "$took" 2.5
tap_like "$(audit_records "$pz" reason | tail -1)" "end reason=ttl expired" "ended by its ttl"

# ---- --on-ttl pause ----
tap_ok "create --ttl 2s --on-ttl pause" H create --rootfs "$img" --ttl 2s --on-ttl pause
op=$tap_stdout
tap_ok "ends paused" hutch_wait_until 20 paused "$op"
tap_like "$(audit_records "$op" action by)" "ttl_expired action=pause by=keeper" "the log says why"
tap_is "$(ps_field "$op" ttl)" "null" "its limit is used up"
tap_ok "resume" H resume "$op"
tap_ok "it runs" H exec --in "$op" -- true
tap_ok "rm" H rm "$op"

# ---- a killed keeper: the next open, or ps, acts ----
# Each keeper is killed at once, well before its deadline; nothing lists
# the sandboxes until the open (which acts on its own sandbox alone).
tap_ok "create --ttl 4s" H create --rootfs "$img" --ttl 4s
kk=$tap_stdout
k=$(keeper_of "$kk")
tap_like "$(keepers)" "(^|"$'\n'")$k("$'\n'"|$)" "its keeper"
seen+=" $k"
kill -9 "$k"
tap_ok "and another" H create --rootfs "$img" --ttl 4s
ko=$tap_stdout
kill -9 "$(keeper_of "$ko")"
sleep 6
tap_ok "past its deadline with no keeper, it is still there" test -d "$state/$kk"
tap_status 125 "exec --in the other" H exec --in "$ko" -- true
tap_like "$tap_stderr" "sandbox $ko: its time limit ran out \(ttl expired\); it is removed" "fails: it was removed"
tap_fails "its directory is gone" test -e "$state/$ko"
tap_ok "the first one is still there" test -d "$state/$kk"
tap_ok "hutch ps" H ps
tap_like "$tap_stderr" "sandbox $kk: its time limit ran out while no keeper watched it: removed now" "says so on stderr"
tap_unlike "$tap_stdout" "$kk" "and does not list it"
tap_ok "it is gone" gone "$kk"
tap_like "$(audit_records "$kk" action by)" "ttl_expired action=remove by=backstop" "the log says who"
tap_is "$(audit_records "$kk" reason | tail -1)" "end reason=ttl expired" "and ends with reason ttl expired"

# A reset starts the sandbox again under its id: the limit goes on, with a
# keeper that watches the new init (the old one ended with the old init).
tap_ok "create --ttl 60s for a reset" H create --ttl 60s --rootfs "$img"
rs=$(printf %s "$tap_stdout" | tail -1)
old_keeper=$(keeper_of "$rs")
tap_ok "hutch reset" H reset "$rs"
tap_is "$(ps_field "$rs" ttl)" "60" "the limit is kept across the reset"
left=$(ps_field "$rs" ttl_left)
tap_ok "and its time left goes on from before ($left)" python3 -c "import sys; sys.exit(not 0 < $left <= 60)"
new_keeper=$(keeper_of "$rs")
tap_ok "a new keeper watches it ($old_keeper -> $new_keeper)" test -n "$new_keeper" -a "$new_keeper" != "$old_keeper"
tap_ok "and runs" kill -0 "$new_keeper"
tap_ok "hutch ttl after the reset" H ttl "$rs" 2s
tap_ok "the new keeper removes it at the deadline" hutch_wait_until 30 gone "$rs"

tap_ok "no keeper is left" hutch_wait_until 10 no_keepers
tap_done
