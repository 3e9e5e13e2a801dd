#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch reset: a live sandbox back to its image's state, whatever it did to
# stay: background processes, a double-forked daemon, one that ignores
# SIGTERM, a command running at the reset, files in /root, /tmp, /dev/shm
# and /etc, a SysV shared memory segment.  After it only PID 1 runs inside
# and no old process is left on the host; id, name and labels stay, the
# audit log goes on (a reset record, verified), exec --in from another
# process works, and so does a handle opened before (Python's attach).
# A paused sandbox comes back running; --to IMAGE; and what is refused
# (an unknown image, a changed policy) is refused before anything stops.
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
name="reset-$$"

json_field() { # JSON FIELD
  python3 -c 'import json, sys; v = json.loads(sys.argv[1]).get(sys.argv[2]); print("" if v is None else v)' "$1" "$2"
}
ps_entry() { # ID FIELD: a member of the sandbox's `hutch ps --json` entry
  "$HUTCH_BIN" ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["id"] == sys.argv[1]:
        v = s.get(sys.argv[2]); print(json.dumps(v) if isinstance(v, (dict, list)) else ("" if v is None else v))' "$1" "$2"
}
# The host pids of init's tree, init included, one a line, sorted.
tree() {
  ps -eo pid=,ppid= | awk -v init="$1" '{pp[$1] = $2}
    END {for (p in pp) {q = p; for (i = 0; i < 64 && q > 1; i++) {if (q == init) {print p; break}; q = pp[q]}}}' |
    sort -n
}
alive() { # PIDS: those still running (zombies are not)
  local p
  for p in "$@"; do
    [ -e /proc/"$p" ] && [ "$(sed 's/.*) //' /proc/"$p"/stat 2>/dev/null | cut -d' ' -f1)" != Z ] && echo "$p"
  done
}
# Inside: every pid but init's and this shell's own (a glob: no ps, no ls).
others='for p in /proc/[0-9]*; do p=${p#/proc/}; [ "$p" = 1 ] || [ "$p" = $$ ] || echo "$p"; done'

id=$("$HUTCH_BIN" create --rootfs "$img" --name "$name" --label pool=rl --label slot=3)
tap_check $? "a named, labelled sandbox"
hin() { "$HUTCH_BIN" exec --in "$name" "$@"; }
init=$(ps_entry "$id" pid)

# What a sandbox does to outlive a reset.
tap_ok "background processes start" hin -- sh -c 'sleep 1000 & sleep 1001 & trap "" TERM HUP; sleep 1002 &'
# Its loop's sleep is long: counted between two short ones, the daemon
# would have one process fewer than the points below count.
tap_ok "a double-forked daemon starts (its parent exits)" hin -- sh -c \
  '(sh -c "trap \"\" TERM HUP INT; while :; do sleep 1000; done" </dev/null >/dev/null 2>&1 &) ; exit 0'
tap_ok "a process group of its own (setsid) starts" hin -- sh -c 'setsid sh -c "sleep 1003" </dev/null >/dev/null 2>&1 &'
tap_ok "files in /root, /tmp, /dev/shm, /etc and a new directory" hin -- sh -c \
  'echo r >/root/r && echo t >/tmp/t && echo s >/dev/shm/s && echo e >/etc/planted && mkdir -p /opt/new/deep && echo d >/opt/new/deep/d'
"$HUTCH_BIN" exec --in "$name" -- sleep 1004 >/dev/null 2>&1 &
running=$!
at_least() { [ "$(hin -- sh -c "$others" | wc -l)" -ge "$1" ]; }
hutch_wait_until 10 at_least 7
tap_ok "the processes run inside" hin -- sh -c "$others"
before=$(printf '%s\n' "$tap_stdout" | wc -l)
tap_check $((before < 7)) "at least 7 of them besides init ($before)"
old=$(tree "$init")
tap_check $(($(printf '%s\n' "$old" | wc -l) < 8)) "and on the host, in init's tree"

# A handle opened before the reset, in another process, used after it.
py_ok=
if [ -n "${HUTCH_PYTHON:-}" ] && [ -d "$HUTCH_BUILDDIR/python/build/lib/hutch" ]; then
  PYTHONPATH=$HUTCH_BUILDDIR/python/build/lib "$HUTCH_PYTHON" - "$id" "$tmp" >"$tmp/py.out" 2>&1 <<'EOF' &
import os, sys, time
import hutch
sid, tmp = sys.argv[1], sys.argv[2]
sb = hutch.Sandbox.attach(sid)
print("before", sb.exec(["cat", "/root/r"]).stdout.decode().strip(), flush=True)
open(os.path.join(tmp, "py.ready"), "w").close()
while not os.path.exists(os.path.join(tmp, "py.go")):
    time.sleep(0.02)
r = sb.exec(["sh", "-c", "test -e /root/r && echo left || echo gone; echo $$"])
print("after", r.exit_code, r.stdout.decode().split(), flush=True)
sb.write_file("/root/from-py", "p")
print("file", sb.exists("/root/from-py"), flush=True)
sb.close()
EOF
  py=$!
  hutch_wait_until 20 test -e "$tmp/py.ready" && py_ok=1
fi

tap_ok "hutch reset" "$HUTCH_BIN" reset --json "$name"
out=$tap_stdout
tap_is "$(json_field "$out" id)" "$id" "the same id"
tap_is "$(json_field "$out" name)" "$name" "the same name"
tap_is "$(json_field "$out" generation)" 1 "generation 1"
tap_like "$(json_field "$out" seconds)" '^[0-9.e-]+$' "how long it took"
printf '# reset of a busy sandbox: %s s\n' "$(json_field "$out" seconds)"

tap_ok "exec --in after the reset, by name" hin -- sh -c "$others"
tap_is "$tap_stdout" "" "only PID 1 (and this shell) runs inside"
tap_is "$(alive $old)" "" "no process of the old sandbox is left on the host"
new_init=$(ps_entry "$id" pid)
tap_ok "a new init" test "$new_init" != "$init"
tap_is "$(tree "$new_init" | wc -l)" 1 "alone in its tree on the host"
wait "$running"
rc=$?
tap_check $((rc == 0)) "the command running at the reset ended, not successfully ($rc)"
for f in /root/r /tmp/t /dev/shm/s /etc/planted /opt/new; do
  tap_status 1 "$f is gone" hin -- test -e "$f"
done
tap_ok "/tmp and /dev/shm are empty" hin -- sh -c 'test -z "$(ls -A /tmp)$(ls -A /dev/shm)"'
tap_ok "the image's files are there" hin -- test -x /bin/busybox
tap_is "$(ps_entry "$id" name)" "$name" "ps: the name kept"
tap_is "$(ps_entry "$id" labels)" '{"pool": "rl", "slot": "3"}' "ps: the labels kept"
tap_is "$(ps_entry "$id" status)" running "ps: running"
tap_ok "hutch audit verifies the log across the reset" "$HUTCH_BIN" audit "$name"
tap_like "$tap_stdout" '"type":"start",' "the start record is still there"
tap_like "$tap_stdout" '"type":"reset",.*"generation":1,' "then a reset record with its generation"
tap_like "$tap_stdout" '"type":"command",.*"argv":\["sh","-c","for p in' "and the commands after it"
tap_like "$tap_stdout" 'verified' "verified"

if [ -n "$py_ok" ]; then
  touch "$tmp/py.go"
  wait "$py"
  tap_check $? "a Python handle attached before the reset keeps working after it"
  tap_like "$(cat "$tmp/py.out")" "before r" "it read the old sandbox's file before"
  tap_like "$(cat "$tmp/py.out")" "after 0 \['gone'" "and runs in the new one after (the file gone)"
  tap_like "$(cat "$tmp/py.out")" "file True" "and writes files into the new one"
  tap_ok "what it wrote is in the new sandbox" hin -- test -e /root/from-py
else
  tap_skip "a Python handle across the reset" "the Python package is not built"
fi

# A paused sandbox comes back running.
tap_ok "a process to pause" hin -- sh -c 'sleep 1000 &'
tap_ok "hutch pause" "$HUTCH_BIN" pause "$name"
tap_ok "reset a paused sandbox" "$HUTCH_BIN" reset --json "$name"
tap_is "$(json_field "$tap_stdout" generation)" 2 "generation 2"
tap_is "$(ps_entry "$id" status)" running "it runs again"
tap_ok "exec --in works" hin -- sh -c "$others"
tap_is "$tap_stdout" "" "with only PID 1 inside"
tap_status 125 "resume says it is not paused" "$HUTCH_BIN" resume "$name"
tap_ok "the audit log still verifies" "$HUTCH_BIN" audit "$name"
tap_like "$tap_stdout" '"type":"reset",.*"generation":2,.*"paused":"(ptrace|cgroup)"' "the reset record names the pause"

# What is refused leaves the sandbox as it was.
tap_ok "a file to keep" hin -- sh -c 'echo keep >/root/keep; sleep 1000 &'
kept_init=$(ps_entry "$id" pid)
tap_status 125 "reset --to an image that is not there" "$HUTCH_BIN" reset --to "no-such-image-$$" "$name"
tap_status 125 "reset of a sandbox that is not there" "$HUTCH_BIN" reset "no-such-$$"
tap_like "$tap_stderr" "no-such-$$" "names it"
tap_status 2 "reset without an id" "$HUTCH_BIN" reset
tap_status 2 "--store without --to" "$HUTCH_BIN" reset --store "$tmp" "$name"
tap_is "$(ps_entry "$id" pid)" "$kept_init" "its init is the same"
tap_ok "and its file is there" hin -- cat /root/keep

# A policy changed since the sandbox was made: ESTALE, nothing stopped.
pol_dir="$tmp/policy"
mkdir -p "$pol_dir"
cp "$HUTCH_SRCDIR"/policies/default.policy "$pol_dir/p.policy"
seccomp=$(sed -n 's/^seccomp *= *//p' "$pol_dir/p.policy")
cp "$HUTCH_SRCDIR/policies/$seccomp" "$pol_dir/$seccomp"
pid2=$("$HUTCH_BIN" create --rootfs "$img" --policy "$pol_dir/p.policy")
tap_check $? "a sandbox with a policy of its own"
tap_ok "it resets while the policy is unchanged" "$HUTCH_BIN" reset "$pid2"
"$HUTCH_BIN" exec --in "$pid2" -- sh -c 'echo x >/root/x'
echo "# changed" >>"$pol_dir/p.policy"
tap_status 125 "a changed policy: refused" "$HUTCH_BIN" reset "$pid2"
tap_like "$tap_stderr" "policy .*changed since it was made.*Stale" "saying the policy changed (ESTALE)"
tap_like "$tap_stderr" "hint: recreate it" "and to recreate it"
tap_ok "the sandbox was not stopped" "$HUTCH_BIN" exec --in "$pid2" -- cat /root/x
sed -i '$d' "$pol_dir/p.policy"
tap_ok "the policy as it was: it resets again" "$HUTCH_BIN" reset "$pid2"
printf ' ' >>"$pol_dir/$seccomp"
tap_status 125 "a changed seccomp profile: refused too" "$HUTCH_BIN" reset "$pid2"
"$HUTCH_BIN" rm "$pid2" >/dev/null

# --to: another image from now on.  A SysV segment where the image has ipcmk.
if deb=$(hutch_test_rootfs debian); then
  tap_ok "reset --to the Debian image" "$HUTCH_BIN" reset --to "$deb" --json "$name"
  tap_is "$(json_field "$tap_stdout" image)" "$deb" "it runs the Debian image"
  tap_ok "its files" hin -- test -e /etc/debian_version
  tap_ok "a SysV shared memory segment" hin -- ipcmk -M 65536
  tap_ok "ipcs lists it" hin -- ipcs -m
  tap_like "$tap_stdout" "65536" "ipcs lists it"
  tap_ok "reset (the Debian image still)" "$HUTCH_BIN" reset "$name"
  tap_ok "ipcs" hin -- ipcs -m
  tap_unlike "$tap_stdout" "65536" "the segment is gone"
  tap_ok "still Debian" hin -- test -e /etc/debian_version
  tap_ok "reset --to busybox again" "$HUTCH_BIN" reset --to "$img" "$name"
  tap_status 1 "no Debian file left" hin -- test -e /etc/debian_version
else
  tap_skip "reset --to and a SysV segment" "the debian test rootfs is unavailable"
fi

tap_ok "rm" "$HUTCH_BIN" rm "$name"
tap_status 125 "a removed sandbox cannot be reset" "$HUTCH_BIN" reset "$id"
tap_ok "its archived audit log verifies" "$HUTCH_BIN" audit "$id"
tap_like "$tap_stdout" '"type":"end",' "and ends with the end record"
rm -rf "$tmp"
tap_done
