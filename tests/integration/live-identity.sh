#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Names and labels of long-lived sandboxes: create --name/--label, a name
# wherever an id goes (exec --in, cp, audit, rm), ps -q and --filter, rm -f,
# and a name's uniqueness (a duplicate, a race, a stale link).
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
state=$HUTCH_STATE_DIR
[ -n "$state" ] || tap_skip_all "HUTCH_STATE_DIR is not set"
H() { timeout 30 "$HUTCH_BIN" "$@"; }

# ---- create with a name and labels; the name goes where an id goes ----
tap_ok "create --name --label" H create --rootfs "$img" --name web.1 --label team=a --label tier=front
a=$tap_stdout
tap_like "$a" "^[0-9a-f]{12}$" "prints the id"
tap_ok "exec --in NAME" H exec --in web.1 -- sh -c 'echo hello > /root/f; echo ran'
tap_is "$tap_stdout" "ran" "runs in the named sandbox"
tap_ok "exec --in ID" H exec --in "$a" -- cat /root/f
tap_is "$tap_stdout" "hello" "the same sandbox as by its id"
tap_ok "cp NAME:/PATH out" H cp -q web.1:/root/f "$tmp/f"
tap_is "$(cat "$tmp/f" 2>/dev/null)" "hello" "copied out of the named sandbox"
tap_ok "audit NAME" H audit --json web.1
start=$(python3 -c 'import json, sys
r = [r for r in json.load(sys.stdin)["records"] if r["type"] == "start"][0]
print(r["sandbox"], r.get("name"), ",".join(r.get("labels", [])))' <<<"$tap_stdout")
tap_is "$start" "$a web.1 team=a,tier=front" "its start record has the id, the name and the labels"

# ---- the name is unique; bad names are usage errors ----
tap_status 125 "a second create with the same name fails" H create --rootfs "$img" --name web.1
tap_like "$tap_stderr" "name web\\.1 is taken by sandbox $a" "saying which sandbox has it"
ls "$state" >"$tmp/dirs"
tap_status 2 "an id-like name is a usage error" H create --rootfs "$img" --name 0123456789ab
tap_like "$tap_stderr" "could be a sandbox's id" "saying why"
tap_status 2 "a name with a slash" H create --rootfs "$img" --name a/b
tap_status 2 "a name starting with a dot" H create --rootfs "$img" --name .x
tap_status 2 "a name of 65 characters" H create --rootfs "$img" --name "$(printf 'n%.0s' {1..65})"
tap_status 2 "a label without =" H create --rootfs "$img" --label team
tap_status 2 "a label with a control character" H create --rootfs "$img" --label "team=a$(printf '\t')b"
tap_status 2 "--name is not an option of exec" H exec --rootfs "$img" --name x -- true
tap_is "$(ls "$state")" "$(cat "$tmp/dirs")" "none of the refused creates left anything in the state directory"

# ---- ps ----
tap_ok "a second sandbox with other labels" H create --rootfs "$img" --name db --label team=b
b=$tap_stdout
tap_ok "a third, unnamed" H create --rootfs "$img"
c=$tap_stdout
tap_ok "ps -q" H ps -q
tap_is "$(sort <<<"$tap_stdout")" "$(printf '%s\n' "$a" "$b" "$c" | sort)" "prints exactly the ids, one a line"
tap_ok "ps -q --filter label=team=a" H ps -q --filter label=team=a
tap_is "$tap_stdout" "$a" "only the sandbox with that label"
tap_ok "ps -q --filter label=team" H ps -q --filter label=team
tap_is "$(sort <<<"$tap_stdout")" "$(printf '%s\n' "$a" "$b" | sort)" "label=KEY: every sandbox with the key"
tap_ok "two filters" H ps -q --filter label=team --filter name=db
tap_is "$tap_stdout" "$b" "must both match"
tap_ok "status=running" H ps -q --filter status=running --filter label=team=a
tap_is "$tap_stdout" "$a" "a running sandbox is running"
tap_ok "status=dead" H ps -q --filter status=dead
tap_is "$tap_stdout" "" "and none is dead"
tap_status 2 "a filter of an unknown kind" H ps --filter colour=red
tap_status 2 "a status that does not exist" H ps --filter status=asleep
tap_ok "ps" H ps
printf '%s\n' "$tap_stdout" >"$tmp/ps"
tap_ok "has a NAME column, the last" grep -qE '^ID +PID +.* IMAGE +NAME$' "$tmp/ps"
tap_ok "with the sandbox's name" grep -qE "^$a +[0-9]+ +running .* web\\.1\$" "$tmp/ps"
tap_ok "and - for none" grep -qE "^$c +[0-9]+ +running .* -\$" "$tmp/ps"
jq_ps() { # JSON: each sandbox of ps --json as "ID NAME LABELS"
  python3 -c 'import json, sys
for s in json.loads(sys.argv[1]):
    print(s["id"], s["name"], ",".join("%s=%s" % kv for kv in sorted(s["labels"].items())))' "$@"
}
tap_ok "ps --json" H ps --json --filter name=web.1
tap_is "$(jq_ps "$tap_stdout")" "$a web.1 team=a,tier=front" "--json has the name and the labels"
tap_ok "ps --json of the unnamed" H ps --json --filter status=running
tap_like "$(jq_ps "$tap_stdout")" "(^|"$'\n'")$c None ("$'\n'"|$)" "name null, labels {}"

# ---- rm, rm -f, and the name given back ----
tap_ok "rm -f of a missing id" H rm -f 000000000000
tap_is "$tap_stderr" "" "says nothing"
tap_ok "rm -f of a missing name" H rm -f no-such-name
tap_is "$tap_stderr" "" "says nothing"
tap_status 125 "plain rm of a missing id still fails" H rm 000000000000
tap_like "$tap_stderr" "no sandbox with id '000000000000'" "as it did"
tap_status 125 "plain rm of a missing name fails" H rm no-such-name
tap_like "$tap_stderr" "no sandbox with id or name 'no-such-name'" "naming it"
tap_ok "rm -f of a missing one beside a present one" H rm -f no-such-name "$c"
tap_fails "the present one is gone" test -d "$state/$c"
tap_ok "rm NAME" H rm web.1
tap_fails "removes the sandbox" test -d "$state/$a"
tap_fails "and its name" test -L "$state/.names/web.1"
tap_ok "the name can be used again" H create --rootfs "$img" --name web.1
a2=$tap_stdout
tap_status 1 "exec --in the name reaches the new sandbox" H exec --in web.1 -- cat /root/f
tap_like "$tap_stderr" "can't open '/root/f'" "not the old one's files"
tap_ok "rm by id" H rm "$a2"
tap_fails "gives the name back too" test -L "$state/.names/web.1"

# ---- a stale link (its sandbox gone without giving it back) ----
ln -s ../0000deadbeef "$state/.names/stale"
tap_ok "a name whose link points to no sandbox" H create --rootfs "$img" --name stale
s=$tap_stdout
tap_is "$(readlink "$state/.names/stale")" "../$s" "is taken over"
tap_ok "and names the new sandbox" H exec --in stale -- true
tap_ok "rm" H rm stale

# ---- two creates racing for one name: exactly one wins ----
for i in 1 2 3 4; do
  H create --rootfs "$img" --name race >"$tmp/race$i.out" 2>"$tmp/race$i.err" &
done
wait
won=$(cat "$tmp"/race?.out | grep -c .)
tap_is "$won" 1 "of four concurrent creates with one name, one wins"
tap_is "$(grep -l 'is taken by' "$tmp"/race?.err | wc -l)" 3 "the others say the name is taken"
tap_ok "ps --filter name=race" H ps -q --filter name=race
tap_is "$tap_stdout" "$(cat "$tmp"/race?.out)" "is the winner"
tap_ok "rm the winner and db" H rm race db
tap_ok "ps -q" H ps -q
tap_is "$tap_stdout" "" "nothing is left"
tap_done
