#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch fork: new live sandboxes from a live one's files, each independent.
# A parent writes in its layer (files, a deletion, hard and symbolic
# links, a fifo, a sparse file larger than its disk), /tmp, /dev/shm and a
# read-write bind; a child sees the layer's files and nothing of /tmp and
# /dev/shm, its binds as declared (the rw one shared, the ro one read-only),
# the parent's environment, hostname and limits, no process of the
# parent's.  After the fork every write path is tried both ways (parent to
# child, child to parent, child to child): none crosses.  -n 3 gives three
# distinct ids; a paused parent stays paused; what is refused exits 2 or
# 125 and leaves nothing made, the parent running; a child that cannot
# start (a name taken, a layer too deep to copy) undoes the whole fork; a
# --net proxy parent's child has its own proxy and address; the audit logs
# record it.  From inside a child nothing leads to the parent.
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
mkdir -p "$tmp/rw" "$tmp/ro"
echo host >"$tmp/ro/file"
made=()
cleanup() {
  local i
  for i in "${made[@]}"; do "$HUTCH_BIN" rm -f "$i" >/dev/null 2>&1; done
  rm -rf "$tmp"
}
trap cleanup EXIT

json_field() { # JSON FIELD: a top-level member, lists as their items one a line
  python3 -c '
import json, sys
v = json.loads(sys.argv[1]).get(sys.argv[2])
print("\n".join(v) if isinstance(v, list) else ("" if v is None else v))' "$1" "$2"
}
ps_entry() { # ID FIELD: a member of the sandbox's `hutch ps --json` entry
  "$HUTCH_BIN" ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["id"] == sys.argv[1]:
        v = s.get(sys.argv[2]); print(json.dumps(v) if isinstance(v, (dict, list)) else ("" if v is None else v))' "$1" "$2"
}
count_sandboxes() { "$HUTCH_BIN" ps -q | wc -l; }
# Inside: every pid but init's and this shell's own.
others='for p in /proc/[0-9]*; do p=${p#/proc/}; [ "$p" = 1 ] || [ "$p" = $$ ] || echo "$p"; done'
fork_json() { # DESCRIPTION ARGS...: hutch fork --json ARGS; the children in $kids
  kids=
  tap_ok "$1" "$HUTCH_BIN" fork --json "${@:2}" || return 1
  out=$tap_stdout
  kids=$(json_field "$out" children)
  made+=($kids)
}

pname="forkp-$$"
parent=$("$HUTCH_BIN" create --rootfs "$img" --name "$pname" --hostname forkhost --env FORKVAR=carried \
  --disk 64M --bind "$tmp/rw:/rw" --bind "$tmp/ro:/ro:ro")
tap_check $? "a parent: named, hostname, --env, --disk 64M, a rw and a ro bind"
made+=("$parent")
pin() { "$HUTCH_BIN" exec --in "$parent" "$@"; }
tap_ok "it writes its layer: files, a changed image file, a deletion, links, a fifo, a sparse file of 1 GiB" pin -- sh -c '
  echo up >/root/up && head -c 1048576 /dev/urandom >/root/big && md5sum /root/big >/root/big.md5 &&
  ln /root/big /root/big.link && ln -s /etc/hostname /root/sym && mkfifo /root/fifo &&
  echo changed >>/etc/profile && rm /bin/vi && mkdir -p /opt/a/b/c && echo deep >/opt/a/b/c/f &&
  dd if=/dev/zero of=/root/sparse bs=1 count=1 seek=1073741823 2>/dev/null && echo added >/etc/added'
tap_ok "and /tmp, /dev/shm and the rw bind" pin -- sh -c 'echo t >/tmp/t && echo s >/dev/shm/s && echo p >/rw/fromparent'
tap_ok "a process of its own runs" pin -- sh -c 'sleep 1000 >/dev/null 2>&1 &'
limits_p=$(pin -- sh -c 'df -k /tmp | awk "NR == 2 {print \$2}"; ulimit -n')

# ---- one child ---------------------------------------------------------------
fork_json "hutch fork --json" "$pname"
a=$kids
tap_like "$a" "^[0-9a-f]{12}$" "one child, a fresh id"
tap_ok "not the parent's" test "$a" != "$parent"
tap_is "$(json_field "$out" id)" "$parent" "--json names the parent"
tap_is "$(json_field "$out" was_paused)" "False" "it was running"
tap_like "$(json_field "$out" method)" "^(ptrace|cgroup)$" "paused for the copy by ptrace or the cgroup's freezer"
tap_like "$(json_field "$out" paused_ms)" "^[0-9.e+-]+$" "for paused_ms"
tap_is "$(ps_entry "$parent" status)" running "the parent runs on"
ain() { "$HUTCH_BIN" exec --in "$a" "$@"; }
tap_ok "the child sees the parent's layer: the file" ain -- grep -qx up /root/up
tap_ok "the 1 MB file, intact" ain -- sh -c 'cd /root && md5sum -c big.md5'
tap_ok "its hard link, still one" ain -- sh -c '[ "$(stat -c %i /root/big)" = "$(stat -c %i /root/big.link)" ]'
tap_is "$(ain -- readlink /root/sym)" "/etc/hostname" "the symlink, as it was"
tap_ok "the fifo" ain -- test -p /root/fifo
tap_ok "the changed image file" ain -- sh -c 'tail -n 1 /etc/profile | grep -qx changed'
tap_status 1 "the deletion" ain -- test -e /bin/vi
tap_ok "a deep directory" ain -- grep -qx deep /opt/a/b/c/f
tap_ok "the sparse file, 1 GiB long within the child's 64 MB" ain -- sh -c '[ "$(stat -c %s /root/sparse)" = 1073741824 ]'
tap_status 1 "nothing of the parent's /tmp" ain -- test -e /tmp/t
tap_status 1 "nor of its /dev/shm" ain -- test -e /dev/shm/s
tap_ok "both empty" ain -- sh -c 'test -z "$(ls -A /tmp)$(ls -A /dev/shm)"'
tap_ok "the rw bind, bound again as declared: the parent's file there" ain -- grep -qx p /rw/fromparent
tap_ok "the ro bind's file" ain -- grep -qx host /ro/file
tap_fails "the ro bind is read-only" ain -- sh -c 'echo x >/ro/x'
tap_ok "and stays so on the host" test ! -e "$tmp/ro/x"
tap_is "$(ain -- sh -c 'echo $FORKVAR')" "carried" "the parent's environment"
tap_is "$(ain -- hostname)" "forkhost" "its hostname"
tap_is "$(ain -- sh -c 'df -k /tmp | awk "NR == 2 {print \$2}"; ulimit -n')" "$limits_p" \
  "its limits (the 64 MB tmpfs, the open files)"
tap_ok "which hold the copy (a 64 MB file does not fit)" ain -- sh -c \
  'if head -c 67108864 /dev/zero >/root/fill 2>/dev/null; then rm -f /root/fill; exit 1; fi; rm -f /root/fill'
tap_ok "no process of the parent's in it" ain -- sh -c "$others"
tap_is "$tap_stdout" "" "only its init"
tap_ok "while the parent's runs on" pin -- sh -c "$others"
tap_like "$tap_stdout" "[0-9]" "(the parent's sleep)"
tap_is "$(ps_entry "$a" forked_from)" "$parent" "ps --json: forked_from"
tap_is "$(ps_entry "$parent" forked_from)" "" "the parent's is null"
tap_is "$(ps_entry "$a" name)" "" "the child has no name"
tap_is "$(ps_entry "$parent" name)" "$pname" "the parent keeps its name"

# ---- every write path, both ways ---------------------------------------------
tap_ok "after the fork, the parent writes its layer, /tmp, /dev/shm, a file it had" pin -- sh -c \
  'echo p2 >/root/after-p && echo p2 >/tmp/after-p && echo p2 >/dev/shm/after-p && echo p2 >>/root/up && echo p2 >>/root/big'
tap_ok "the child writes its own, changes the parent's files, removes one" ain -- sh -c \
  'echo c >/root/after-c && echo c >/tmp/after-c && echo c >/dev/shm/after-c && echo c >>/root/up && rm /etc/added &&
   echo c >>/root/big.link && echo c >/rw/fromchild'
for f in /root/after-p /tmp/after-p /dev/shm/after-p; do
  tap_status 1 "the child does not see the parent's $f" ain -- test -e "$f"
done
for f in /root/after-c /tmp/after-c /dev/shm/after-c; do
  tap_status 1 "the parent does not see the child's $f" pin -- test -e "$f"
done
tap_is "$(pin -- cat /root/up | tr '\n' ' ')" "up p2 " "the parent's /root/up: its own writes only"
tap_is "$(ain -- cat /root/up | tr '\n' ' ')" "up c " "the child's: its own"
tap_ok "the parent still has the file the child removed" pin -- test -e /etc/added
tap_is "$(pin -- tail -c 3 /root/big.link)" "p2" "a write through the child's hard link stays in the child"
tap_is "$(ain -- tail -c 2 /root/big)" "c" "and reaches the child's other name"
tap_is "$(cat "$tmp/rw/fromchild" 2>/dev/null)" "c" "the rw bind is shared, as declared (the host sees the child's file)"
tap_ok "and so does the parent" pin -- grep -qx c /rw/fromchild

# ---- three more --------------------------------------------------------------
fork_json "hutch fork -n 3 --label pool=f --ttl 1h" -n 3 --label pool=f --ttl 1h "$parent"
tap_is "$(printf '%s\n' $kids | sort -u | wc -l)" 3 "three distinct ids"
tap_unlike "$kids" "$a|$parent" "none of them an earlier one"
b=$(printf '%s\n' $kids | sed -n 1p)
c=$(printf '%s\n' $kids | sed -n 3p)
for k in $kids; do
  # One seed for all: each child reads it from its start (a shared offset
  # once left the later children an empty layer).
  tap_ok "child $k sees the parent's layer as it is now" "$HUTCH_BIN" exec --in "$k" -- sh -c \
    'test -e /root/after-p && test -e /etc/added && grep -qx up /root/up && ! test -e /root/after-c && ! test -e /tmp/after-p'
done
tap_ok "a child writes" "$HUTCH_BIN" exec --in "$b" -- sh -c 'echo b >/root/b && echo b >/tmp/b && echo b >/dev/shm/b'
for f in /root/b /tmp/b /dev/shm/b; do
  tap_status 1 "its sibling does not see $f" "$HUTCH_BIN" exec --in "$c" -- test -e "$f"
  tap_status 1 "nor the first child" ain -- test -e "$f"
  tap_status 1 "nor the parent" pin -- test -e "$f"
done
tap_status 1 "nor does it see the first child's files" "$HUTCH_BIN" exec --in "$b" -- test -e /root/after-c
tap_is "$(ps_entry "$b" labels)" '{"pool": "f"}' "--label: every child's"
tap_ok "--ttl: each child's limit" test "$(ps_entry "$c" ttl)" = 3600
tap_is "$(ps_entry "$parent" ttl)" "" "the parent has none"

# ---- nothing inside leads to the parent ----------------------------------------
tap_ok "a child's mount table" ain -- cat /proc/self/mountinfo
tap_unlike "$tap_stdout" "$parent" "names nothing of the parent's"
tap_ok "the child's init holds nothing readable inside" ain -- sh -c '
  n=0
  for f in /proc/1/fd/*; do readlink "$f" >/dev/null 2>&1 && n=$((n + 1)); ls "$f/" >/dev/null 2>&1 && n=$((n + 1)); done
  ls /proc/1/root/ >/dev/null 2>&1 && n=$((n + 1)); [ $n -eq 0 ]'
if [ "$HUTCH_TEST_MODE" = root ]; then
  apid=$(ps_entry "$a" pid)
  tap_is "$(for f in /proc/"$apid"/fd/*; do readlink "$f"; done | grep -c upper)" 0 \
    "the child's init holds no fd of a layer (the parent's was closed after the copy)"
else
  tap_skip "the child's init's fds, from the host" "root only (init is not dumpable)"
fi

# ---- a paused parent stays paused ---------------------------------------------
tap_ok "pause the parent" "$HUTCH_BIN" pause "$parent"
fork_json "fork of the paused parent" "$pname"
d=$kids
tap_is "$(json_field "$out" was_paused)" "True" "--json: it was paused"
tap_is "$(json_field "$out" paused_ms)" "0" "and the fork paused nothing"
tap_is "$(ps_entry "$parent" status)" paused "the parent is still paused"
tap_ok "the child runs, with the parent's files" "$HUTCH_BIN" exec --in "$d" -- test -e /root/after-p
tap_ok "resume the parent" "$HUTCH_BIN" resume "$parent"

# ---- refused ------------------------------------------------------------------
n0=$(count_sandboxes)
tap_status 2 "-n 0 is refused" "$HUTCH_BIN" fork -n 0 "$parent"
tap_status 2 "-n 65 is refused" "$HUTCH_BIN" fork -n 65 "$parent"
tap_like "$tap_stderr" "1 to 64" "naming the range"
tap_status 2 "-n x is refused" "$HUTCH_BIN" fork -n x "$parent"
tap_status 2 "no id" "$HUTCH_BIN" fork
tap_status 2 "two ids" "$HUTCH_BIN" fork "$parent" "$a"
tap_status 2 "a name given twice" "$HUTCH_BIN" fork -n 2 --name "x-$$" --name "x-$$" "$parent"
tap_status 2 "more names than children" "$HUTCH_BIN" fork --name "x-$$" --name "y-$$" "$parent"
tap_status 2 "a bad name" "$HUTCH_BIN" fork --name "-bad" "$parent"
tap_status 2 "--on-ttl without --ttl" "$HUTCH_BIN" fork --on-ttl pause "$parent"
tap_status 125 "a sandbox that is not there" "$HUTCH_BIN" fork "no-such-$$"
tap_like "$tap_stderr" "no-such-$$" "names it"
tap_is "$(count_sandboxes)" "$n0" "nothing was made"

# A child that cannot start undoes the fork: the first starts, the second's
# name is taken (the parent's own).
tap_status 125 "fork -n 2 whose second child's name is taken" "$HUTCH_BIN" fork -n 2 --name "fresh-$$" \
  --name "$pname" "$parent"
tap_like "$tap_stderr" "child 2 of 2" "says which child"
tap_like "$tap_stderr" "$pname" "and the name"
tap_is "$(count_sandboxes)" "$n0" "the first child was removed again"
tap_status 125 "its name is free again" "$HUTCH_BIN" exec --in "fresh-$$" -- true
tap_is "$(ps_entry "$parent" status)" running "the parent was resumed"
tap_ok "and works" pin -- grep -qx added /etc/added

# A layer the copy refuses (deeper than 256 directories) fails in the
# child, after the clone, with the parent paused.
tap_ok "the parent makes a tree 260 directories deep" pin -- sh -c \
  'cd /root && i=0; while [ $i -lt 260 ]; do mkdir d && cd d || exit 1; i=$((i + 1)); done'
tap_status 125 "its fork fails" "$HUTCH_BIN" fork -n 2 "$parent"
tap_like "$tap_stderr" "more than 256 directories deep" "in the copy, saying why"
tap_is "$(count_sandboxes)" "$n0" "no child is left"
tap_is "$(ps_entry "$parent" status)" running "the parent runs"
tap_ok "and works" pin -- rm -rf /root/d
fork_json "once the tree is gone it forks again" "$parent"
tap_ok "and is removed" "$HUTCH_BIN" rm "$kids"

# A dead parent.
dead=$("$HUTCH_BIN" create --rootfs "$img")
made+=("$dead")
kill -9 "$(ps_entry "$dead" pid)" 2>/dev/null
is_dead() { [ "$(ps_entry "$dead" status)" = dead ]; }
hutch_wait_until 10 is_dead
tap_status 125 "a dead sandbox is not forked" "$HUTCH_BIN" fork "$dead"
tap_like "$tap_stderr" "not running" "saying so"

# A policy changed since the parent was made: ESTALE, as for a reset.
mkdir -p "$tmp/policy"
cp "$HUTCH_SRCDIR"/policies/default.policy "$tmp/policy/p.policy"
seccomp=$(sed -n 's/^seccomp *= *//p' "$tmp/policy/p.policy")
cp "$HUTCH_SRCDIR/policies/$seccomp" "$tmp/policy/$seccomp"
pp=$("$HUTCH_BIN" create --rootfs "$img" --policy "$tmp/policy/p.policy")
tap_check $? "a sandbox with a policy of its own"
made+=("$pp")
fork_json "it forks while the policy is unchanged" "$pp"
echo "# changed" >>"$tmp/policy/p.policy"
tap_status 125 "a changed policy: refused" "$HUTCH_BIN" fork "$pp"
tap_like "$tap_stderr" "policy .*changed since it was made" "saying the policy changed (ESTALE)"

# ---- --net proxy: each child its own proxy and address ---------------------------
net_address() { ps_entry "$1" network | python3 -c 'import json, sys; print(json.load(sys.stdin).get("address", ""))'; }
np=$("$HUTCH_BIN" create --rootfs "$img" --net proxy)
tap_check $? "a --net proxy sandbox"
made+=("$np")
fork_json "its fork" "$np"
npc=$kids
tap_like "$(ps_entry "$npc" network)" '"mode": "proxy"' "the child has --net proxy too"
addr_p=$(net_address "$np")
addr_c=$(net_address "$npc")
tap_like "$addr_c" '^10\.' "with an address of its own ($addr_c)"
tap_ok "not the parent's ($addr_p)" test "$addr_c" != "$addr_p"
tap_ok "on its own eth0" "$HUTCH_BIN" exec --in "$npc" -- sh -c 'ip -4 addr show eth0'
tap_like "$tap_stdout" "inet $addr_c/" "which has it"
tap_like "$("$HUTCH_BIN" exec --in "$npc" -- sh -c 'echo $http_proxy')" "^http://" "and its proxy's address in its environment"

# ---- the audit logs ---------------------------------------------------------------
tap_ok "hutch audit verifies the parent's log" "$HUTCH_BIN" audit "$pname"
log=$tap_stdout
tap_like "$log" "\"type\":\"pause\",.*\"type\":\"resume\",.*\"type\":\"fork\",.*\"n\":1,\"children\":\\[\"$a\"\\]" \
  "a fork record naming the child, after its pause and resume"
tap_like "$log" "\"type\":\"fork\",.*\"n\":3,\"children\":\\[\"[0-9a-f]{12}\",\"[0-9a-f]{12}\",\"[0-9a-f]{12}\"\\]" \
  "one naming the three"
tap_like "$log" "\"type\":\"fork\",.*\"was_paused\":true" "one of the paused parent"
tap_like "$log" "\"type\":\"fork\",.*\"error\":\".*child 2 of 2" "the failed fork, with its error"
tap_like "$log" "verified" "verified"
gone=$(printf '%s\n' "$log" | grep '"type":"fork"' | grep 'child 2 of 2' | grep -oE '"children":\["[0-9a-f]{12}"' |
  grep -oE '[0-9a-f]{12}')
tap_like "$gone" "^[0-9a-f]{12}$" "it names the child it had started"
tap_ok "whose archived log verifies" "$HUTCH_BIN" audit "$gone"
tap_like "$tap_stdout" "\"forked_from\":\"$parent\"" "and says whose fork it was"
tap_like "$tap_stdout" '"type":"end",.*"destroyed"' "and that it was removed"
tap_ok "hutch audit verifies the child's log" "$HUTCH_BIN" audit "$a"
tap_like "$tap_stdout" "\"type\":\"start\",.*\"forked_from\":\"$parent\"" "its start record names the parent"
tap_ok "a child of -n 3's log" "$HUTCH_BIN" audit "$c"
tap_like "$tap_stdout" '"type":"ttl",.*"by":"fork"' "records its time limit, set by the fork"

tap_ok "rm the parent" "$HUTCH_BIN" rm "$parent"
tap_ok "its children live on" ain -- grep -qx up /root/up
tap_done
