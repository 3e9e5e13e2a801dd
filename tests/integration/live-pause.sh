#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch pause / resume: a paused sandbox runs nothing (its counters and the
# CPU time of its tasks stand still, no new process appears) whatever its
# processes do to undo it (a SIGCONT timer armed before, a `kill -CONT -1`
# loop, a fork storm under way at the pause); exec --in and cp are refused,
# rm works, resume lets it go on, and a pauser killed takes the sandbox's
# processes with it rather than leaving them running.
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
helper="$HUTCH_BUILDDIR/tests/helpers/pause-escape"
[ -x "$helper" ] || tap_skip_all "no $helper (make check builds it)"
tmp=$(hutch_test_tmpdir)
mkdir -p "$tmp/out"

json_field() { # JSON FIELD: a top-level member of a JSON object
  python3 -c 'import json, sys; v = json.loads(sys.argv[1]).get(sys.argv[2]); print("" if v is None else v)' "$1" "$2"
}
init_of() {
  "$HUTCH_BIN" ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["id"] == sys.argv[1]: print(s["pid"])' "$1"
}
# The host pids of init's tree, init included, one a line, sorted.
tree() {
  ps -eo pid=,ppid= | awk -v init="$1" '{pp[$1] = $2}
    END {for (p in pp) {q = p; for (i = 0; i < 64 && q > 1; i++) {if (q == init) {print p; break}; q = pp[q]}}}' |
    sort -n
}
# utime + stime (clock ticks) of every thread of these pids.
ticks() {
  local p
  for p in "$@"; do cat /proc/"$p"/task/*/stat 2>/dev/null; done |
    sed 's/.*) //' | awk '{s += $12 + $13} END {print s + 0}'
}
# Each counter of $tmp/out, "name=value" on one line.  A loop rewrites its
# file (truncate, then write), so a look can find it empty: a running loop's
# is looked at again.  No fork here: these run in tight waits on a loaded
# machine.
names="c k t f"
counter() { # NAME: sets v to its value
  local i
  v=
  for i in 1 2 3 4 5; do
    read -r v 2>/dev/null <"$tmp/out/$1"
    [ -z "$v" ] || return 0
    sleep 0.01
  done
}
counters() {
  local f v
  for f in $names; do
    counter "$f"
    printf '%s=%s ' "$f" "$v"
  done
}
# BEFORE: every counter moved since BEFORE, each seen moving at some look
# of this wait (not all at one look: that is luck on a loaded machine).
moved=
all_advanced() {
  local f kv was v
  for f in $names; do
    case " $moved " in *" $f "*) continue ;; esac
    was=
    for kv in $1; do [ "${kv%%=*}" != "$f" ] || was=${kv#*=}; done
    counter "$f"
    [ -z "$v" ] || [ "$v" = "$was" ] || moved="$moved $f"
  done
  for f in $names; do
    case " $moved " in *" $f "*) ;; *) return 1 ;; esac
  done
}
advanced_within() { # SECS BEFORE
  moved=
  hutch_wait_until "$1" all_advanced "$2" || {
    echo "counters that did not move from $2: not ${moved:-any} of $names" >&2
    return 1
  }
}

id=$("$HUTCH_BIN" create --rootfs "$img" --bind "$tmp/out:/out" --bind "$helper:/usr/bin/pause-escape:ro")
tap_check $? "a sandbox to pause"
init=$(init_of "$id")
hin() { "$HUTCH_BIN" exec --in "$id" "$@"; }

# What runs in it: a counter, a `kill -CONT -1` loop (which would undo a
# pause made of SIGSTOP), the SIGCONT timer, and a fork storm.
tap_ok "a counter starts" hin -- sh -c \
  'i=0; while :; do i=$((i + 1)); echo $i >/out/c; sleep 0.02; done >/dev/null 2>&1 &'
tap_ok "a kill -CONT -1 loop starts" hin -- sh -c \
  'i=0; while :; do kill -CONT -1; i=$((i + 1)); echo $i >/out/k; done >/dev/null 2>&1 &'
tap_ok "a timer that sends SIGCONT every 10 ms starts" hin -- sh -c 'pause-escape timer /out/t >/dev/null 2>&1 &'
tap_ok "a fork storm starts" hin -- sh -c 'pause-escape forks /out/f >/dev/null 2>&1 &'
start=$(counters)
tap_ok "every loop makes progress before the pause" advanced_within 60 "$start"

tap_ok "hutch pause" "$HUTCH_BIN" pause --json "$id"
method=$(json_field "$tap_stdout" method)
pause_s=$(json_field "$tap_stdout" seconds)
if "$HUTCH_BIN" ps --json | grep -q "\"id\":\"$id\".*\"cgroup\":\""; then want=cgroup; else want=ptrace; fi
tap_is "$method" "$want" "the method: the cgroup's freezer with a cgroup, else ptrace"
tap_like "$(json_field "$tap_stdout" state)" "^paused$" "--json says paused"

# Held: over one second, nothing of the sandbox runs.
pids1=$(tree "$init")
# shellcheck disable=SC2086
cpu1=$(ticks $pids1)
before=$(counters)
sleep 1
pids2=$(tree "$init")
# shellcheck disable=SC2086
cpu2=$(ticks $pids2)
after=$(counters)
tap_is "$after" "$before" "no counter moves while paused (counter, kill -CONT -1 loop, SIGCONT timer, fork storm)"
tap_is "$cpu2" "$cpu1" "the tasks' utime+stime stand still"
tap_is "$pids2" "$pids1" "no new process appears"
tap_ok "the sandbox still has its processes" test "$(printf '%s\n' "$pids1" | wc -l)" -ge 5
if [ "$method" = ptrace ]; then
  # shellcheck disable=SC2086
  states=$(for p in $pids1; do cat /proc/"$p"/task/*/stat 2>/dev/null; done | sed 's/.*) //' | cut -d' ' -f1 | sort -u)
  tap_like "$(printf '%s\n' "$states" | grep -v '^Z$')" "^t$" "every thread is in a ptrace stop (state t), or an unreaped zombie"
else
  tap_skip "ptrace stop states" "method $method"
fi

tap_ok "ps" "$HUTCH_BIN" ps
tap_like "$tap_stdout" "$id +[0-9]+ +paused:$method" "shows paused and the method"
tap_ok "ps --json" "$HUTCH_BIN" ps --json
tap_like "$tap_stdout" "\"id\":\"$id\",[^}]*\"status\":\"paused\",\"pause_method\":\"$method\"" "as does ps --json"

tap_status 125 "exec --in a paused sandbox is refused" hin -- true
tap_like "$tap_stderr" "sandbox $id is paused \\($method\\)" "saying it is paused"
tap_like "$tap_stderr" "hint: .*hutch resume $id" "and how to resume it"
echo data >"$tmp/in"
tap_status 125 "cp into a paused sandbox is refused" "$HUTCH_BIN" cp "$tmp/in" "$id:/root/in"
tap_like "$tap_stderr" "is paused" "saying it is paused"
tap_status 125 "pausing it again fails" "$HUTCH_BIN" pause "$id"
tap_like "$tap_stderr" "already paused" "saying it is already paused"
tap_is "$(counters)" "$before" "and none of these ran anything"

tap_ok "hutch resume" "$HUTCH_BIN" resume --json "$id"
resume_s=$(json_field "$tap_stdout" seconds)
tap_ok "every loop goes on after the resume" advanced_within 60 "$after"
tap_ok "exec --in works again" hin -- true
tap_status 1 "the refused cp wrote nothing" hin -- test -e /root/in
tap_status 125 "resuming a running sandbox fails" "$HUTCH_BIN" resume "$id"
tap_like "$tap_stderr" "is not paused" "saying it is not paused"
tap_ok "ps shows it running again" "$HUTCH_BIN" ps --json
tap_like "$tap_stdout" "\"id\":\"$id\",[^}]*\"status\":\"running\"" "status running"
tap_ok "the audit log" "$HUTCH_BIN" audit "$id"
tap_like "$tap_stdout" "\"type\":\"pause\",.*\"method\":\"$method\"" "records the pause and its method"
tap_like "$tap_stdout" "\"type\":\"resume\",.*\"paused_seconds\":" "and the resume"
printf '# pause %s s, resume %s s (method %s, busy sandbox)\n' "$pause_s" "$resume_s" "$method"

# Threads, a vfork loop, a relay of orphans (each process forks the next
# and exits, so the live one's parent is gone by the time a walk down the
# tree would look under it), and a process traced by another inside (a
# debugger's case: the pauser cannot seize it, and stops it with SIGSTOP
# instead, which only its tracer, held, could end).
tap_ok "four threads counting start" hin -- sh -c 'pause-escape threads /out/h >/dev/null 2>&1 &'
tap_ok "a vfork loop starts" hin -- sh -c 'pause-escape vforks /out/v >/dev/null 2>&1 &'
tap_ok "a relay of orphans starts" hin -- sh -c 'pause-escape orphans /out/o >/dev/null 2>&1 &'
tap_ok "a traced process starts" hin -- sh -c 'pause-escape traced /out/p >/dev/null 2>&1 &'
names="c h v o"
if hutch_wait_until 5 test -s "$tmp/out/p"; then names="c h v o p"; fi
start=$(counters)
tap_ok "they make progress ($names)" advanced_within 60 "$start"
tap_ok "pause them" "$HUTCH_BIN" pause "$id"
pids1=$(tree "$init")
before=$(counters)
sleep 1
tap_is "$(counters)" "$before" "no thread, vfork child, orphan or traced process moves while paused"
tap_is "$(tree "$init")" "$pids1" "and no new process appears"
tap_ok "resume them" "$HUTCH_BIN" resume "$id"
tap_ok "they go on" advanced_within 60 "$before"
if [ "$names" = "c h v o p" ]; then
  tap_ok "the traced process is still traced by its tracer, running" hin -- sh -c \
    'for p in /proc/[0-9]*; do grep -q "^TracerPid:[[:space:]]*[1-9]" $p/status 2>/dev/null && exit 0; done; exit 1'
else
  tap_skip "the traced process" "ptrace is refused inside the sandbox here"
fi

# A `hutch pause` killed after the freeze but before its record: the mark
# is empty; once it is old, resume undoes the freeze all the same.
names="c"
tap_ok "pause" "$HUTCH_BIN" pause "$id"
pauser=$(json_field "$(cat "$HUTCH_STATE_DIR/$id/paused")" pauser_pid)
: >"$HUTCH_STATE_DIR/$id/paused"
touch -d '-1 min' "$HUTCH_STATE_DIR/$id/paused"
before=$(counters)
tap_ok "ps still shows an unfinished pause as paused" "$HUTCH_BIN" ps --json
tap_like "$tap_stdout" "\"id\":\"$id\",[^}]*\"status\":\"paused\"" "status paused"
tap_ok "resume undoes a pause whose record was never written" "$HUTCH_BIN" resume "$id"
tap_ok "the counter goes on" advanced_within 60 "$before"
gone_pid() { ! kill -0 "$1" 2>/dev/null || grep -q '^[0-9]* (.*) Z' /proc/"$1"/stat 2>/dev/null; }
tap_ok "its pauser has ended" hutch_wait_until 10 gone_pid "$pauser"

# rm while paused: the stopped (or frozen) tasks die, nothing is left.
tap_ok "pause again" "$HUTCH_BIN" pause "$id"
pids=$(tree "$init")
if [ "$method" = ptrace ]; then
  pauser=$(json_field "$(cat "$HUTCH_STATE_DIR/$id/paused")" pauser_pid)
else
  pauser=""
fi
tap_ok "rm of a paused sandbox" "$HUTCH_BIN" rm "$id"
left=""
for p in $pids; do
  if kill -0 "$p" 2>/dev/null && ! grep -q '^[0-9]* (.*) Z' /proc/"$p"/stat 2>/dev/null; then left="$left $p"; fi
done
tap_is "$left" "" "none of its processes is left"
tap_ok "its state directory is gone" test ! -e "$HUTCH_STATE_DIR/$id"
if [ -n "$pauser" ]; then
  tap_ok "its pauser has ended" hutch_wait_until 10 gone_pid "$pauser"
else
  tap_skip "its pauser has ended" "method $method has no pauser"
fi
no_escape() { ! pgrep -u "$(id -u)" -f "^pause-escape [a-z]+ /out/" >/dev/null; }
tap_ok "the fork storm and timer are gone" hutch_wait_until 10 no_escape

# The pauser killed with SIGKILL: the sandbox's tasks die with it
# (PTRACE_O_EXITKILL); they never go on unpaused.
if [ "$method" = ptrace ]; then
  rm -f "$tmp/out"/*
  id=$("$HUTCH_BIN" create --rootfs "$img" --bind "$tmp/out:/out")
  init=$(init_of "$id")
  hin -- sh -c 'i=0; while :; do i=$((i + 1)); echo $i >/out/c; sleep 0.02; done >/dev/null 2>&1 &'
  hutch_wait_until 20 test -s "$tmp/out/c"
  tap_ok "pause a second sandbox" "$HUTCH_BIN" pause "$id"
  pauser=$(json_field "$(cat "$HUTCH_STATE_DIR/$id/paused")" pauser_pid)
  tap_like "$pauser" "^[0-9]+$" "its pauser is recorded"
  pids=$(tree "$init")
  kill -9 "$pauser"
  gone() {
    local p
    for p in $pids; do
      if kill -0 "$p" 2>/dev/null && ! grep -q '^[0-9]* (.*) Z' /proc/"$p"/stat 2>/dev/null; then return 1; fi
    done
  }
  tap_ok "killing the pauser kills every process of the sandbox" hutch_wait_until 10 gone
  c1=$(cat "$tmp/out/c")
  sleep 0.5
  tap_is "$(cat "$tmp/out/c")" "$c1" "the counter never went on"
  tap_ok "ps" "$HUTCH_BIN" ps --json
  tap_like "$tap_stdout" "\"id\":\"$id\",[^}]*\"status\":\"dead\"" "shows the sandbox dead, not paused"
  tap_status 125 "resume says what happened" "$HUTCH_BIN" resume "$id"
  tap_like "$tap_stderr" "not running" "it is not running"
  tap_ok "rm cleans it" "$HUTCH_BIN" rm "$id"
else
  tap_skip "the pauser killed" "method $method has no pauser"
fi

# Where ptrace is refused (a seccomp filter around hutch here; Yama's
# ptrace_scope 3 elsewhere) and there is no cgroup, the pause fails closed:
# nothing stays held, and the doctor says why.
deny=$HUTCH_BUILDDIR/tests/helpers/deny-userns
if [ "$method" = ptrace ] && [ -x "$deny" ]; then
  rm -f "$tmp/out"/*
  id=$("$HUTCH_BIN" create --rootfs "$img" --bind "$tmp/out:/out")
  hin -- sh -c 'i=0; while :; do i=$((i + 1)); echo $i >/out/c; sleep 0.02; done >/dev/null 2>&1 &'
  hutch_wait_until 20 test -s "$tmp/out/c"
  tap_status 125 "pause where ptrace is refused fails" "$deny" --ptrace "$HUTCH_BIN" pause "$id"
  tap_like "$tap_stderr" "pause sandbox $id \\(ptrace\\): .*Operation not permitted" "naming the step and the errno"
  tap_like "$tap_stderr" "hint: .*ptrace_scope 3.*seccomp" "with the reasons"
  names="c"
  before=$(counters)
  tap_ok "nothing stays held: the counter goes on" advanced_within 60 "$before"
  tap_ok "ps" "$HUTCH_BIN" ps --json
  tap_like "$tap_stdout" "\"id\":\"$id\",[^}]*\"status\":\"running\"" "shows it running"
  tap_ok "no paused mark is left" test ! -e "$HUTCH_STATE_DIR/$id/paused"
  # (Its exit status is not asked: as the unprivileged user, no_new_privs,
  # which the filter needs, also stops the setuid newuidmap.)
  doc=$("$deny" --ptrace "$HUTCH_BIN" doctor --json 2>/dev/null)
  tap_is "$(printf '%s' "$doc" | python3 -c '
import json, sys
print([c["status"] for c in json.load(sys.stdin)["checks"] if c["id"] == "pause"])')" "['warn']" \
    "hutch doctor under the same filter: its pause check warns"
  tap_ok "hutch doctor without it" "$HUTCH_BIN" doctor --json
  tap_is "$(printf '%s' "$tap_stdout" | python3 -c '
import json, sys
print([c["status"] for c in json.load(sys.stdin)["checks"] if c["id"] == "pause"])')" "['ok']" \
    "its pause check passes"
  "$HUTCH_BIN" rm "$id"
else
  tap_skip "pause where ptrace is refused" "method $method, or no $deny"
fi

tap_status 2 "pause without an id" "$HUTCH_BIN" pause
tap_status 125 "pause of an unknown id" "$HUTCH_BIN" pause 0123456789ab
tap_ok "pause --help" "$HUTCH_BIN" pause --help
tap_like "$tap_stdout" "Usage: hutch pause" "prints its usage"
tap_done
