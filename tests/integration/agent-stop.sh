#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch run stopped from outside keeps what the model made.  Ctrl-C at a
# terminal, SIGTERM, and the death of the program that started it (its
# parent SIGKILLed: hutch run gets SIGTERM) stop the tool call, copy the
# output directory back into files/ and mark the trajectory partial.  A
# SIGKILL of hutch run itself takes its sandbox with it (by design: nothing
# of a sandbox outlives the process that owns it): files/ then holds the
# output directory as the last step's end left it, copied at each step's
# end (what changed since, within bounds), and the trajectory says so.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
AGENT_IMAGE=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"

requests_seen() { [ "$(mock_count)" -ge "$1" ]; }
# Gone, or a zombie nobody reaped yet.
gone() { ! kill -0 "$1" 2>/dev/null || [[ "$(ps -o stat= -p "$1" 2>/dev/null)" == Z* ]]; }
leftovers() {
  for id in $("$HUTCH_BIN" ps 2>/dev/null | awk 'NR>1 {print $1}'); do "$HUTCH_BIN" rm "$id" >/dev/null 2>&1; done
}
# Step 1 writes two files (one in a subdirectory), step 2 a third, then
# runs until it is stopped.
nap=$((200000 + RANDOM))
script='[{"calls": [["execute_bash", {"command": "echo hi > /testbed/output/partial.txt; mkdir /testbed/output/sub; echo deep > /testbed/output/sub/f"}]]},
 {"calls": [["execute_bash", {"command": "echo late > /testbed/output/late.txt; sleep '"$nap"'"}]]}]'
files() { (cd "$RUN_DIR/files" 2>/dev/null && find . -type f | sort | tr '\n' ' '); }
# After a stop, WHAT: files/ copied back whole, the trajectory saying so,
# the sandbox gone.
kept() {
  tap_is "$(files)" "./late.txt ./partial.txt ./sub/f " \
    "$1: files/ holds the output directory as it was when the command was stopped"
  tap_is "$(traj 't["hutch"]["end_reason"], t["hutch"].get("partial"), t["hutch"].get("files_from")' 2>&1)" \
    "('interrupted', True, 'end')" "$1: the trajectory says the run was stopped, and that files/ was copied at its end"
  tap_is "$("$HUTCH_BIN" ps 2>/dev/null | grep -c running)" "0" "$1: the sandbox is gone"
}

# ---- Ctrl-C at a terminal, during a long tool call ----
mock_start "$script"
AGENT_OUT=$(hutch_test_tmpdir)
rec=$AGENT_OUT/terminal.rec
HRUN_LOUD=1 _hrun_opts
# ^C once the live line shows the second step's command running.
tap_ok "Ctrl-C typed at hutch run's terminal while the second step's command runs" \
  "$AGENT_PY" "$HUTCH_SRCDIR/tests/lib/pty-drive.py" record "$rec" "step 2: bash echo late[^\\n]* [0-9]+ s, no output" -- \
  "$HUTCH_BIN" run "${HRUN_OPTS[@]}" --net none --query q
tap_is "$tap_stdout" "status 130" "the run ends with 130"
RUN_DIR=$(ls -d "$AGENT_OUT"/2* 2>/dev/null | head -n 1)
kept "Ctrl-C"
tap_is "$(cat "$RUN_DIR/files/late.txt" 2>&1)" "late" "what the stopped step wrote is there too"
tap_like "$(tr -d '\r' <"$rec")" "stopped: copying back /testbed/output" "the terminal says what hutch does after ^C"

# ---- the program that started hutch run is SIGKILLed: hutch run gets SIGTERM ----
mock_start "$script"
AGENT_OUT=$(hutch_test_tmpdir)
(
  hrun --query q >"$AGENT_OUT/parent.out" 2>"$AGENT_OUT/parent.err"
  echo "parent went on" >"$AGENT_OUT/parent.after"
) &
parent=$!
tap_ok "the run's second command runs" hutch_wait_until 30 pgrep -x -f "sleep $nap"
agent=$(pgrep -P "$parent" | head -n 1)
kill -9 "$parent"
wait "$parent" 2>/dev/null
tap_ok "hutch run ends when its parent was SIGKILLed" hutch_wait_until 30 gone "$agent"
RUN_DIR=$(ls -d "$AGENT_OUT"/2* 2>/dev/null | head -n 1)
kept "the parent SIGKILLed"

# ---- SIGTERM, with --shell persistent ----
mock_start "$script"
AGENT_OUT=$(hutch_test_tmpdir)
(AGENT_EXEC=exec hrun --query q --shell persistent >"$AGENT_OUT/term.out" 2>/dev/null) &
pid=$!
tap_ok "the run's second command runs in the persistent shell" hutch_wait_until 30 pgrep -x -f "sleep $nap"
kill -TERM "$pid"
wait "$pid"
tap_is "$?" "143" "SIGTERM ends the run with 143"
RUN_DIR=$(tail -n 1 "$AGENT_OUT/term.out")
kept "SIGTERM, persistent shell"

# ---- SIGKILL of hutch run itself ----
mock_start "$script"
AGENT_OUT=$(hutch_test_tmpdir)
(AGENT_EXEC=exec hrun --query q >/dev/null 2>&1) &
pid=$!
tap_ok "the run's second command runs" hutch_wait_until 30 pgrep -x -f "sleep $nap"
kill -9 "$pid"
wait "$pid" 2>/dev/null
RUN_DIR=$(ls -d "$AGENT_OUT"/2* 2>/dev/null | head -n 1)
tap_is "$(files)" "./partial.txt ./sub/f " "after kill -9, files/ holds what the first step's end left"
tap_is "$(cat "$RUN_DIR/files/sub/f" 2>&1)" "deep" "with its contents"
tap_is "$(traj 't["hutch"]["end_reason"], t["hutch"].get("partial"), t["hutch"].get("files_from"), t["hutch"].get("files_step"), len(t["steps"])' 2>&1)" \
  "(None, True, 'step', 1, 1)" "the trajectory says the run did not end and files/ is from the end of step 1"
leftovers

# ---- the copy at each step's end takes what changed; the copy at the end replaces it ----
mock_start '[{"calls": [["execute_bash", {"command": "echo a > /testbed/output/a"}]]},
 {"calls": [["execute_bash", {"command": "true"}]]},
 {"calls": [["execute_bash", {"command": "echo b > /testbed/output/b"}]]},
 {"calls": [["execute_bash", {"command": "sleep '"$nap"'"}]]}]'
AGENT_OUT=$(hutch_test_tmpdir)
(AGENT_EXEC=exec hrun --query q >/dev/null 2>&1) &
pid=$!
tap_ok "the run's fourth command runs" hutch_wait_until 30 pgrep -x -f "sleep $nap"
kill -9 "$pid"
wait "$pid" 2>/dev/null
RUN_DIR=$(ls -d "$AGENT_OUT"/2* 2>/dev/null | head -n 1)
tap_is "$(traj 't["hutch"].get("files_step"), t["hutch"].get("step_copies", {}).get("count"), t["hutch"].get("step_copies", {}).get("files")' 2>&1)" \
  "(3, 3, 2)" "three copies at the steps' ends, two files copied: an unchanged one is not copied again"
tap_is "$(files)" "./a ./b " "files/ as step 3 left it"
leftovers
mock_start '[{"calls": [["execute_bash", {"command": "echo a > /testbed/output/a; echo b > /testbed/output/b"}]]},
 {"calls": [["execute_bash", {"command": "rm /testbed/output/b"}]]}]'
AGENT_OUT=$(hutch_test_tmpdir)
tap_status 0 "a run that removes a file its first step made" hrun --query q
run_dir
tap_is "$(files)" "./a " "the copy at the end replaces what the copies at the steps' ends left"
tap_is "$(traj 't["hutch"].get("partial"), t["hutch"].get("files_from"), t["hutch"].get("files_step")' 2>&1)" \
  "(False, 'end', None)" "a run that ended on its own is not partial"
tap_ok "nothing is left beside files/" test ! -e "$RUN_DIR/files.incomplete" -a ! -e "$RUN_DIR/files.old"

# ---- the copy at each step's end is bounded ----
# --copy-limit 5000 is also what all of them together may copy: the second
# rewrite of a 3000-byte file is past it.  They stop for the run; the last
# one that was made stays whole.
mock_start '[{"calls": [["execute_bash", {"command": "head -c 3000 /dev/zero | tr \"\\\\0\" a > /testbed/output/a"}]]},
 {"calls": [["execute_bash", {"command": "head -c 3000 /dev/zero | tr \"\\\\0\" b > /testbed/output/a"}]]},
 {"calls": [["execute_bash", {"command": "sleep '"$nap"'"}]]}]'
AGENT_OUT=$(hutch_test_tmpdir)
(AGENT_EXEC=exec hrun --query q --copy-limit 5000 >/dev/null 2>&1) &
pid=$!
tap_ok "the run's third command runs" hutch_wait_until 30 pgrep -x -f "sleep $nap"
# The trajectory of step 2 is saved after its copy.
RUN_DIR=$(ls -d "$AGENT_OUT"/2* 2>/dev/null | head -n 1)
saved2() { [ "$(traj 'len(t["steps"])' 2>/dev/null)" = 2 ]; }
hutch_wait_until 30 saved2
kill -9 "$pid"
wait "$pid" 2>/dev/null
tap_is "$(tr -d a <"$RUN_DIR/files/a" | wc -c) $(wc -c <"$RUN_DIR/files/a")" "0 3000" \
  "files/a is step 1's, whole: step 2's copy did not fit in what was left"
tap_is "$(traj 't["hutch"].get("files_step"), t["hutch"].get("step_copies", {}).get("stopped")' 2>&1)" \
  "(1, 'bytes')" "the trajectory says which bound stopped the copies"
tap_like "$(cat "$RUN_DIR/run.log")" "copies of files/ at each step's end stop" "and run.log"
leftovers

mock_stop
tap_done
