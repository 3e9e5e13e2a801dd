#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The cgroup v2 suite, run as root inside the test VM (tests/vm/run-vm, from
# tests/integration/cgroup-vm.sh): real limits as root, and as an
# unprivileged user in a subtree delegated the way systemd's user@.service
# does it; then the same user without delegation.  TAP on stdout.
#
# Needs: HUTCH_BIN, HUTCH_POLICY, HUTCH_SRCDIR, HUTCH_TEST_BUSYBOX (the
# busybox test rootfs tarball), HUTCH_VM_USER (an unprivileged user).
. "$HUTCH_SRCDIR/tests/lib/tap.sh"

cg=/sys/fs/cgroup
user=${HUTCH_VM_USER:-hutchtest}
uid=$(id -u "$user") || tap_skip_all "no user $user"
gid=$(id -g "$user")
work=/tmp/vm
mkdir -p "$work/root" "$work/user"
chown "$uid:$gid" "$work/user"
export HUTCH_STORE=$work/root/store HUTCH_STATE_DIR=$work/root/state HUTCH_CACHE_DIR=$work/root/cache TMPDIR=$work/root
# json_get JSON EXPR: EXPR over the object j, "" when it does not apply.
# One python3 answers every call, through a coprocess: under TCG each start
# of python3 (its modules read over 9p) costs the emulated CPUs 2 s, and
# the suite asks some forty questions.  A request is JSON and EXPR, an
# answer what print() would write without its newline, each ended by a NUL.
coproc JSON_GET {
  /usr/bin/python3 -c '
import json, sys
buf = b""
def field():
    global buf
    while b"\0" not in buf:
        chunk = sys.stdin.buffer.raw.read(65536)
        if not chunk:
            sys.exit(0)
        buf += chunk
    f, buf = buf.split(b"\0", 1)
    return f.decode("utf-8", "surrogateescape")
while True:
    doc, expr = field(), field()
    try:
        j = json.loads(doc)
        answer = str(eval(expr, {"j": j}))
    except Exception as e:
        print("json_get: %s" % e, file=sys.stderr, flush=True)
        answer = ""
    sys.stdout.buffer.write(answer.rstrip("\n").replace("\0", "").encode("utf-8", "surrogateescape") + b"\0")
    sys.stdout.flush()'
}
json_get() {
  local answer=
  { printf '%s\0%s\0' "$1" "$2" >&"${JSON_GET[1]}" && IFS= read -r -d '' answer <&"${JSON_GET[0]}"; } ||
    echo "json_get: the python3 coprocess does not answer" >&2
  printf '%s\n' "$answer"
}
# For whoever looks at where the suite's time goes: the guest's uptime at
# each part's start.
mark() { tap_diag "at $(cut -d' ' -f1 /proc/uptime) s: $*"; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

mark "start"
"$HUTCH_BIN" rootfs import --name busybox "$HUTCH_TEST_BUSYBOX" >/dev/null 2>&1
tap_ok "the busybox rootfs is imported" "$HUTCH_BIN" rootfs ls
img=busybox

# ---- the delegated subtree, made the way systemd makes user@UID.service ----
slice=$cg/user.slice/user-$uid.slice
svc=$slice/user@$uid.service
mkdir -p "$slice/session-1.scope" "$svc"
echo "+cpu +memory +pids +io" >"$cg/user.slice/cgroup.subtree_control"
echo "+cpu +memory +pids +io" >"$slice/cgroup.subtree_control"
# Delegate=yes: the service's cgroup and the files of /sys/kernel/cgroup/delegate belong to the user.
chown "$uid:$gid" "$svc"
for f in $(cat /sys/kernel/cgroup/delegate 2>/dev/null || echo cgroup.procs cgroup.subtree_control cgroup.threads); do
  [ -e "$svc/$f" ] && chown "$uid:$gid" "$svc/$f"
done
# What the user's own systemd then does: init.scope and app.slice, controllers down to app.slice.
setpriv --reuid="$uid" --regid="$gid" --init-groups sh -c "
  mkdir -p '$svc/init.scope' '$svc/app.slice/shell.scope' &&
  echo '+cpu +memory +pids +io' >'$svc/cgroup.subtree_control' &&
  echo '+cpu +memory +pids +io' >'$svc/app.slice/cgroup.subtree_control'"
tap_check $? "a delegated user@$uid.service-like subtree"

# as_user CGROUP CMD...: run CMD as the user, started in CGROUP (moved there
# by root first, as logind and systemd place a user's processes).
as_user() {
  local where=$1
  shift
  env -i PATH="$PATH" HOME="$work/user" TMPDIR="$work/user" HUTCH_STORE="$work/user/store" \
    HUTCH_STATE_DIR="$work/user/state" HUTCH_CACHE_DIR="$work/user/cache" HUTCH_POLICY="$HUTCH_POLICY" \
    bash -c 'echo $$ >"$0/cgroup.procs" && exec setpriv --reuid='"$uid"' --regid='"$gid"' --init-groups "$@"' \
    "$where" "$@"
}
# scoped CMD...: as the user, in a new scope of its own, like
# `systemd-run --user --scope -p Delegate=yes CMD`.
scoped() {
  as_user "$svc/app.slice/shell.scope" sh -c 'd=$0-$$.scope; mkdir "$d" && echo $$ >"$d/cgroup.procs" && exec "$@"' \
    "$svc/app.slice/run" "$@"
}
as_user "$svc/app.slice/shell.scope" "$HUTCH_BIN" rootfs import --name busybox "$HUTCH_TEST_BUSYBOX" >/dev/null 2>&1
tap_ok "and for the user" as_user "$svc/app.slice/shell.scope" "$HUTCH_BIN" rootfs ls

# A kernel without user xattrs on tmpfs (before 6.6) keeps the writable
# layer on disk, saying so in this line (sandbox.c).
disk_warning=
if [ "$(uname -r | awk -F. '{ print ($1 < 6 || ($1 == 6 && $2 < 6)) }')" = 1 ]; then
  disk_warning='hutch: warning: degraded mode "disk unbounded" \(Linux before 6\.6\): .*'
fi

# limit_cases LABEL RUNNER...: the cases every mode must pass.
limit_cases() {
  local label=$1 cgpath
  shift
  local run=("$@")

  tap_ok "$label: default limits use a cgroup" "${run[@]}" "$HUTCH_BIN" exec --rootfs $img --json -- cat /proc/self/cgroup
  if [ -n "$disk_warning" ]; then
    # Linux before 6.6: tmpfs has no user xattrs, so the writable layer is
    # on disk, announced (the shipped policy's fallback allows it).
    tap_like "$tap_stderr" "^$disk_warning\$" "$label: no warning but the disk one (Linux $(uname -r))"
  else
    tap_is "$tap_stderr" "" "$label: no warning"
  fi
  local out=${tap_stdout#*$'\n'}
  tap_is "${tap_stdout%%$'\n'*}" "0::/" "$label: the sandbox sees its own cgroup as its root"
  tap_is "$(json_get "$out" 'j["limits"]["mode"]')" "cgroup" "$label: --json mode cgroup"
  tap_is "$(json_get "$out" 'j["limits"]["degraded"]')" "False" "$label: not degraded"
  cgpath=$(json_get "$out" 'j["limits"]["cgroup"]')
  tap_like "$cgpath" "^$cg/.*/hutch/[0-9a-f]{12}$|^$cg/hutch/[0-9a-f]{12}$" "$label: in a hutch/<id> cgroup ($cgpath)"
  tap_ok "$label: that cgroup is gone afterwards" test ! -e "$cgpath"

  mark "$label: memory"
  # A 200 MB allocation under 64M: the OOM killer, reported as such.
  tap_status 137 "$label: 200 MB under --memory 64M is killed" \
    "${run[@]}" "$HUTCH_BIN" exec --rootfs $img --memory 64M --json -- dd if=/dev/zero of=/dev/null bs=200M count=1
  tap_like "$tap_stderr" "hutch: killed: out of memory at 64 MiB" "$label: reported as out of memory"
  tap_is "$(json_get "$tap_stdout" 'j["oom_killed"]')" "True" "$label: --json oom_killed"
  tap_is "$(json_get "$tap_stdout" 'j["usage"]["memory_max"]')" "67108864" "$label: --json memory_max"
  cgpath=$(json_get "$tap_stdout" 'j["limits"]["cgroup"]')
  tap_ok "$label: its cgroup is gone afterwards" test ! -e "$cgpath"
  tap_ok "$label: a 100 MB allocation under --memory 512M" \
    "${run[@]}" "$HUTCH_BIN" exec --rootfs $img --memory 512M --json -- dd if=/dev/zero of=/dev/null bs=100M count=1
  local peak
  peak=$(json_get "$tap_stdout" 'j["usage"]["memory_peak"]')
  tap_ok "$label: memory.peak shows it (${peak:-nothing} bytes)" test "${peak:-0}" -gt 100000000

  mark "$label: cpu"
  # A busy loop under --cpus 0.5 gets about half a CPU.
  tap_status 124 "$label: a busy loop under --cpus 0.5 --timeout 2" \
    "${run[@]}" "$HUTCH_BIN" exec --rootfs $img --cpus 0.5 --timeout 2 --json -- sh -c 'while :; do :; done'
  local busy=$tap_stdout share
  share=$(json_get "$busy" 'round(j["usage"]["cpu_usec"] / 1e6 / j["wall_seconds"], 3)')
  tap_ok "$label: gets close to 50 % of a CPU (got ${share:-nothing})" \
    test "$(json_get "$busy" '0.35 <= round(j["usage"]["cpu_usec"] / 1e6 / j["wall_seconds"], 3) <= 0.6')" = True
  tap_is "$(json_get "$busy" 'j["usage"]["throttled"]')" "True" "$label: cpu.stat shows throttling"
  tap_diag "$label: cpu.stat: $(json_get "$busy" 'j["usage"]')"

  mark "$label: pids"
  # A fork loop under --pids 20 stops there.
  local forkloop='sh -c '"'"'i=0; while [ $i -lt 60 ]; do sleep 30 & i=$((i+1)); done'"'"' 2>/dev/null; set -- /proc/[0-9]*; echo $#'
  tap_ok "$label: a fork loop under --pids 20" "${run[@]}" "$HUTCH_BIN" exec --rootfs $img --pids 20 -- sh -c "$forkloop"
  local n=${tap_stdout##*$'\n'}
  tap_ok "$label: stops at 20 processes (saw $n)" test "$n" -le 20 -a "$n" -ge 15

  mark "$label: long-lived sandboxes"
  # Long-lived: per-exec reports, the cgroup removed by rm, also when dead.
  local id
  id=$("${run[@]}" "$HUTCH_BIN" create --rootfs $img --memory 64M)
  tap_like "$id" "^[0-9a-f]{12}$" "$label: create --memory 64M"
  cgpath=$(sed -n 's/.*"cgroup":"\([^"]*\)".*/\1/p' "$(state_dir "$label")/$id/state.json")
  tap_ok "$label: its cgroup exists ($cgpath)" test -d "$cgpath"
  tap_is "$(cat "$cgpath/memory.max" 2>&1)" "67108864" "$label: memory.max 64 MiB"
  tap_is "$(cat "$cgpath/memory.swap.max" 2>&1)" "0" "$label: memory.swap.max 0"
  tap_status 137 "$label: exec --in: 200 MB is killed" \
    "${run[@]}" "$HUTCH_BIN" exec --in "$id" --json -- dd if=/dev/zero of=/dev/null bs=200M count=1
  tap_is "$(json_get "$tap_stdout" 'j["oom_killed"]')" "True" "$label: exec --in --json oom_killed"
  tap_ok "$label: the sandbox lives on" "${run[@]}" "$HUTCH_BIN" exec --in "$id" -- true
  tap_ok "$label: ps --json" "${run[@]}" "$HUTCH_BIN" ps --json
  tap_is "$(json_get "$tap_stdout" '[s["usage"]["oom_kills"] for s in j if s["id"] == "'"$id"'"][0]')" "1" \
    "$label: ps --json: the sandbox's OOM kills"
  tap_ok "$label: rm" "${run[@]}" "$HUTCH_BIN" rm "$id"
  tap_ok "$label: the cgroup is gone after rm" test ! -e "$cgpath"

  id=$("${run[@]}" "$HUTCH_BIN" create --rootfs $img --pids 50)
  cgpath=$(sed -n 's/.*"cgroup":"\([^"]*\)".*/\1/p' "$(state_dir "$label")/$id/state.json")
  local pid
  pid=$(sed -n 's/.*"pid":\([0-9]*\).*/\1/p' "$(state_dir "$label")/$id/state.json")
  kill -9 "$pid"
  sleep 0.5
  tap_ok "$label: a dead sandbox" "${run[@]}" "$HUTCH_BIN" ps
  tap_like "$tap_stdout" "$id .*dead" "$label: is listed as dead"
  tap_ok "$label: rm of the dead sandbox" "${run[@]}" "$HUTCH_BIN" rm "$id"
  tap_ok "$label: removes its cgroup" test ! -e "$cgpath"

  mark "$label: pause"
  # Pause with the cgroup's freezer: a busy `kill -CONT -1` loop gets no
  # CPU while paused, exec --in is refused, resume lets it go on.
  id=$("${run[@]}" "$HUTCH_BIN" create --rootfs $img)
  cgpath=$(sed -n 's/.*"cgroup":"\([^"]*\)".*/\1/p' "$(state_dir "$label")/$id/state.json")
  "${run[@]}" "$HUTCH_BIN" exec --in "$id" -- sh -c 'while :; do kill -CONT -1; done >/dev/null 2>&1 &'
  local u1 u2 u3
  tap_ok "$label: pause" "${run[@]}" "$HUTCH_BIN" pause --json "$id"
  tap_is "$(json_get "$tap_stdout" 'j["method"]')" "cgroup" "$label: pause uses the cgroup's freezer"
  tap_diag "$label: pause took $(json_get "$tap_stdout" 'j["seconds"]') s"
  tap_like "$(cat "$cgpath/cgroup.events")" "frozen 1" "$label: cgroup.events says frozen"
  u1=$(sed -n 's/^usage_usec //p' "$cgpath/cpu.stat")
  sleep 1
  u2=$(sed -n 's/^usage_usec //p' "$cgpath/cpu.stat")
  tap_is "$u2" "$u1" "$label: no CPU time while paused (cpu.stat usage_usec)"
  tap_status 125 "$label: exec --in a paused sandbox is refused" "${run[@]}" "$HUTCH_BIN" exec --in "$id" -- true
  tap_like "$tap_stderr" "is paused \\(cgroup\\)" "$label: saying it is paused by the cgroup"
  tap_ok "$label: ps" "${run[@]}" "$HUTCH_BIN" ps
  tap_like "$tap_stdout" "$id .*paused:cgroup" "$label: ps shows paused:cgroup"
  tap_ok "$label: resume" "${run[@]}" "$HUTCH_BIN" resume "$id"
  tap_like "$(cat "$cgpath/cgroup.events")" "frozen 0" "$label: cgroup.events says thawed"
  sleep 0.5
  u3=$(sed -n 's/^usage_usec //p' "$cgpath/cpu.stat")
  tap_ok "$label: the loop runs again ($u2 -> $u3 us)" test "$u3" -gt "$u2"
  # Reset of a frozen sandbox: its cgroup made anew, thawed, init alone in it.
  tap_ok "$label: pause before a reset" "${run[@]}" "$HUTCH_BIN" pause "$id"
  tap_ok "$label: reset of the paused sandbox" "${run[@]}" "$HUTCH_BIN" reset "$id"
  # Made by the process that reset it: a user's goes under that one's scope.
  cgpath=$(sed -n 's/.*"cgroup":"\([^"]*\)".*/\1/p' "$(state_dir "$label")/$id/state.json")
  tap_ok "$label: the reset sandbox has a cgroup ($cgpath)" test -d "$cgpath"
  tap_like "$(cat "$cgpath/cgroup.events")" "frozen 0" "$label: the new cgroup is not frozen"
  tap_is "$(wc -l <"$cgpath/cgroup.procs")" "1" "$label: only the new init in it (the loop is gone)"
  tap_ok "$label: exec --in after the reset" "${run[@]}" "$HUTCH_BIN" exec --in "$id" -- true
  tap_ok "$label: pause again" "${run[@]}" "$HUTCH_BIN" pause "$id"
  tap_ok "$label: rm of a paused sandbox" "${run[@]}" "$HUTCH_BIN" rm "$id"
  tap_ok "$label: removes its cgroup" test ! -e "$cgpath"

  # A fork with a cgroup: the parent frozen by its freezer for the copy and
  # thawed after; the child in a cgroup of its own with the parent's limits.
  mark "$label: fork"
  id=$("${run[@]}" "$HUTCH_BIN" create --rootfs $img --memory 64M)
  cgpath=$(sed -n 's/.*"cgroup":"\([^"]*\)".*/\1/p' "$(state_dir "$label")/$id/state.json")
  "${run[@]}" "$HUTCH_BIN" exec --in "$id" -- sh -c 'echo parent >/root/p; sleep 1000 >/dev/null 2>&1 &'
  tap_ok "$label: fork --json" "${run[@]}" "$HUTCH_BIN" fork --json "$id"
  tap_is "$(json_get "$tap_stdout" 'j["method"]')" "cgroup" "$label: the parent was paused by its cgroup's freezer"
  local child ccg
  child=$(json_get "$tap_stdout" 'j["children"][0]')
  ccg=$(sed -n 's/.*"cgroup":"\([^"]*\)".*/\1/p' "$(state_dir "$label")/$child/state.json")
  tap_ok "$label: the child has a cgroup of its own ($ccg)" test -d "$ccg" -a "$ccg" != "$cgpath"
  tap_is "$(cat "$ccg/memory.max" 2>&1)" "67108864" "$label: with the parent's memory.max"
  tap_like "$(cat "$cgpath/cgroup.events")" "frozen 0" "$label: the parent is thawed after the fork"
  tap_is "$(wc -l <"$ccg/cgroup.procs")" "1" "$label: the child's cgroup holds its init only (no process of the parent's)"
  tap_is "$("${run[@]}" "$HUTCH_BIN" exec --in "$child" -- cat /root/p)" "parent" "$label: the child has the parent's file"
  tap_ok "$label: pause the parent" "${run[@]}" "$HUTCH_BIN" pause "$id"
  tap_ok "$label: fork of the paused parent" "${run[@]}" "$HUTCH_BIN" fork --json "$id"
  tap_is "$(json_get "$tap_stdout" 'j["was_paused"]')" "True" "$label: it was paused"
  tap_like "$(cat "$cgpath/cgroup.events")" "frozen 1" "$label: and stays frozen"
  local child2
  child2=$(json_get "$tap_stdout" 'j["children"][0]')
  tap_ok "$label: rm the parent and its children" "${run[@]}" "$HUTCH_BIN" rm "$id" "$child" "$child2"
  tap_ok "$label: the child's cgroup is gone" test ! -e "$ccg"

  # A snapshot and a fork SIGKILLed during their copy leave the sandbox
  # frozen by its freezer, which nothing of theirs undoes: the next listing
  # thaws it (the copy held the sandbox's lock, free once it is gone), and
  # a command runs in it again.
  mark "$label: killed copies"
  id=$("${run[@]}" "$HUTCH_BIN" create --rootfs $img)
  cgpath=$(sed -n 's/.*"cgroup":"\([^"]*\)".*/\1/p' "$(state_dir "$label")/$id/state.json")
  "${run[@]}" "$HUTCH_BIN" exec --in "$id" -- sh -c 'dd if=/dev/zero of=/big bs=1M count=100 2>/dev/null &&
    mkdir /many && cd /many && seq 5000 | xargs touch'
  local verb bg
  for verb in snapshot fork; do
    "${run[@]}" "$HUTCH_BIN" "$verb" "$id" >/dev/null 2>&1 &
    bg=$!
    tap_ok "$label: $verb: the sandbox is frozen for its copy" hutch_wait_until 60 grep -q "frozen 1" "$cgpath/cgroup.events"
    # hutch itself: the user's runner is a shell function, whose subshell
    # ($bg) is its parent.
    kill -9 $(pgrep -f -x "$HUTCH_BIN $verb $id") "$bg" 2>/dev/null
    wait "$bg" 2>/dev/null
    tap_like "$(cat "$cgpath/cgroup.events")" "frozen 1" "$label: $verb SIGKILLed: still frozen"
    tap_ok "$label: $verb SIGKILLed: ps" "${run[@]}" "$HUTCH_BIN" ps
    tap_like "$tap_stdout" "$id .*running" "$label: $verb SIGKILLed: the next listing shows it running"
    tap_like "$(cat "$cgpath/cgroup.events")" "frozen 0" "$label: $verb SIGKILLed: and has thawed it"
    tap_ok "$label: $verb SIGKILLed: a command runs in it" "${run[@]}" "$HUTCH_BIN" exec --in "$id" -- true
  done
  # Where ptrace and pidfd_getfd are refused (Yama's ptrace_scope 3; a
  # filter here), the layer is asked of the running init and the freezer
  # pauses: a fork still works.  As root: the filter's no_new_privs would
  # also stop the user's setuid newuidmap.
  if [ "$label" = root ] && [ -x "${HUTCH_TEST_DENY:-}" ]; then
    tap_ok "$label: fork where ptrace is refused" "$HUTCH_TEST_DENY" --ptrace "$HUTCH_BIN" fork --json "$id"
    tap_is "$(json_get "$tap_stdout" 'j["method"]')" "cgroup" "$label: paused by the freezer"
    child=$(json_get "$tap_stdout" 'j["children"][0]')
    tap_ok "$label: its child runs" "${run[@]}" "$HUTCH_BIN" exec --in "$child" -- test -s /big
    "${run[@]}" "$HUTCH_BIN" rm "$child" >/dev/null 2>&1
  fi
  tap_ok "$label: killed copies: rm" "${run[@]}" "$HUTCH_BIN" rm "$id"
  tap_is "$("${run[@]}" "$HUTCH_BIN" ps -q | wc -l)" 0 "$label: killed copies: no child of the fork is left"

  # A time limit with a cgroup: --on-ttl pause ends frozen by the freezer;
  # a plain --ttl removes the sandbox and its cgroup.
  id=$("${run[@]}" "$HUTCH_BIN" create --rootfs $img --ttl 2s --on-ttl pause)
  cgpath=$(sed -n 's/.*"cgroup":"\([^"]*\)".*/\1/p' "$(state_dir "$label")/$id/state.json")
  tap_like "$cgpath" "/hutch/$id\$" "$label: --ttl 2s --on-ttl pause: it has a cgroup"
  tap_ok "$label: frozen when its time runs out" hutch_wait_until 30 grep -q "frozen 1" "$cgpath/cgroup.events"
  tap_ok "$label: ps" "${run[@]}" "$HUTCH_BIN" ps
  tap_like "$tap_stdout" "$id .*paused:cgroup" "$label: ps shows paused:cgroup"
  tap_ok "$label: rm" "${run[@]}" "$HUTCH_BIN" rm "$id"
  id=$("${run[@]}" "$HUTCH_BIN" create --rootfs $img --ttl 2s)
  cgpath=$(sed -n 's/.*"cgroup":"\([^"]*\)".*/\1/p' "$(state_dir "$label")/$id/state.json")
  tap_like "$cgpath" "/hutch/$id\$" "$label: --ttl 2s: it has a cgroup"
  tap_ok "$label: removed when its time runs out" hutch_wait_until 30 test ! -e "$(state_dir "$label")/$id"
  tap_ok "$label: and its cgroup with it" test ! -e "$cgpath"
}
state_dir() { if [ "$1" = root ]; then echo "$work/root/state"; else echo "$work/user/state"; fi; }

# ---------------- as root ----------------
mark "root"
limit_cases root
tap_ok "root: --cgroup-parent" "$HUTCH_BIN" exec --rootfs $img --cgroup-parent /custom.slice/hutch --json -- true
tap_like "$(json_get "$tap_stdout" 'j["limits"]["cgroup"]')" "^$cg/custom.slice/hutch/[0-9a-f]{12}$" \
  "root: the sandbox's cgroup is under it"
tap_is "$(cat "$cg/custom.slice/cgroup.subtree_control")" "cpu memory pids" \
  "root: controllers enabled down the path"

# ---------------- an unprivileged user, delegated ----------------
mark "user, delegated"
limit_cases user scoped
selfs=("$svc"/app.slice/run-*.scope/hutch/self)
tap_ok "user: hutch moved itself out of its scope first (${selfs[0]})" test -d "${selfs[0]}"
tap_status 125 "user: a scope shared with other processes is refused" \
  as_user "$svc/app.slice/shell.scope" sh -c "sleep 5 & exec '$HUTCH_BIN' exec --rootfs $img --memory 64M -- true"
tap_like "$tap_stderr" "holds processes other than hutch" "user: naming the no-internal-processes rule"
tap_like "$tap_stderr" "systemd-run --user --scope -p Delegate=yes" "user: and the fix"

# ---------------- the same user without delegation ----------------
mark "user, no delegation"
nodel() { as_user "$slice/session-1.scope" "$@"; }
tap_status 125 "no delegation: an explicit --memory is refused" nodel "$HUTCH_BIN" exec --rootfs $img --memory 64M -- true
tap_like "$tap_stderr" "resource limits: --memory cannot be applied without a cgroup" "no delegation: names the option"
tap_like "$tap_stderr" "cgroup /user.slice/user-$uid.slice/session-1.scope is not delegated to uid $uid" \
  "no delegation: names the cause"
tap_like "$tap_stderr" "Delegate=cpu cpuset io memory pids" "no delegation: the Delegate= drop-in"
tap_like "$tap_stderr" "systemd-run --user --scope -p Delegate=yes hutch" "no delegation: systemd-run"
tap_like "$tap_stderr" "run hutch as root" "no delegation: root"
# Said once a day per state directory: this user's may hold its stamp.
rm -f "$work/user/state/.warned-no-cgroup"
tap_ok "no delegation: default limits degrade" nodel "$HUTCH_BIN" exec --rootfs $img --json -- true
tap_like "$(printf '%s\n' "$tap_stderr" | grep -v 'disk unbounded')" '^hutch: warning: limits: no cgroup here: rlimits per process, memory watched by init; not limited: .*; see `hutch doctor`$' \
  "no delegation: one short warning line pointing at hutch doctor"
tap_is "$(printf '%s\n' "$tap_stderr" | grep -v 'disk unbounded' | grep -c .)" "1" "no delegation: only one line (and the disk one before Linux 6.6)"
tap_is "$(json_get "$tap_stdout" 'j["limits"]["degraded"]')" "True" "no delegation: --json degraded"
tap_like "$(json_get "$tap_stdout" 'j["limits"]["reason"]')" "is not delegated" "no delegation: --json has the cause"

# ---------------- start cost: cgroup vs none ----------------
mark "start cost"
# bench LABEL CGROUP-OPTION RUNNER...: the same start with and without a
# cgroup, interleaved, median of 7 each; and hutch's own timing of its
# cgroup step (HUTCH_DEBUG), which the emulated VM's noise does not hide.
bench() {
  local label=$1 opt=$2 i t0 t1
  shift 2
  local with=() without=() steps
  : >"$work/bench.log"
  for i in $(seq 7); do
    t0=$(date +%s%N); "$@" "$HUTCH_BIN" exec --rootfs $img --no-cgroups -- true 2>/dev/null; t1=$(date +%s%N)
    without+=($(((t1 - t0) / 1000)))
    t0=$(date +%s%N); "$@" env HUTCH_DEBUG=1 "$HUTCH_BIN" exec --rootfs $img $opt -- true 2>>"$work/bench.log"; t1=$(date +%s%N)
    with+=($(((t1 - t0) / 1000)))
  done
  local mw mo ms mr
  mw=$(printf '%s\n' "${with[@]}" | median)
  mo=$(printf '%s\n' "${without[@]}" | median)
  ms=$(sed -n 's/.*: \([0-9.]*\) ms to set up.*/\1/p' "$work/bench.log" | median)
  mr=$(sed -n 's/.*set up, \([0-9.]*\) ms to remove.*/\1/p' "$work/bench.log" | median)
  tap_diag "bench $label: hutch exec -- true, median of 7: ${mo} us without a cgroup, ${mw} us with one;" \
    "the cgroup step: ${ms} ms to set up (locate, mkdir, limits), ${mr} ms to remove"
  echo "bench $label without_us=$mo with_us=$mw cgroup_setup_ms=$ms cgroup_remove_ms=$mr" >>/run/results/bench
}
# The figures are for bench/cgroup-vm (HUTCH_VM_BENCH=1), not the test
# suite: under emulation fourteen starts of each kind took a sixth of the
# suite's time, to assert nothing.
[ "${HUTCH_VM_BENCH:-0}" != 1 ] || bench root ""
# The user's benchmark runs from a scope of its own, its sandboxes go under
# a --cgroup-parent beside it (a shell and hutch cannot share a scope).
mkdir -p "$svc/app.slice/bench.scope" "$svc/app.slice/hutch-bench"
chown "$uid:$gid" "$svc/app.slice/bench.scope" "$svc/app.slice/bench.scope/cgroup.procs" "$svc/app.slice/hutch-bench" \
  "$svc/app.slice/hutch-bench/cgroup.procs" "$svc/app.slice/hutch-bench/cgroup.subtree_control"
bench_user() { as_user "$svc/app.slice/bench.scope" "$@"; }
tap_ok "user: --cgroup-parent in the delegated subtree" \
  bench_user "$HUTCH_BIN" exec --rootfs $img --cgroup-parent "$svc/app.slice/hutch-bench" --json -- true
tap_like "$(json_get "$tap_stdout" 'j["limits"]["cgroup"]')" "^$svc/app.slice/hutch-bench/[0-9a-f]{12}$" \
  "user: the sandbox's cgroup is under it"
[ "${HUTCH_VM_BENCH:-0}" != 1 ] || bench user "--cgroup-parent $svc/app.slice/hutch-bench" bench_user

mark "end"
tap_done
