#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What hutch run shows while it works: a compact line per step (the tool,
# its command or file in short, what became of it, its time, the model's
# time and tokens), a live line at a terminal while a tool call runs longer
# than a second, the totals at the end; --quiet and --json (one JSON object
# per event) for scripts.  Each tool result says what it is: an editor
# call that failed is no "exit 0", submit is no "-1".  Nothing the model
# or the sandbox wrote reaches the terminal unescaped.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
AGENT_IMAGE=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
esc=$'\033'

# A command with an ESC (clear the screen) and a C1 CSI in its own text.
# Steps: a command that exits 3; one that fills the disk (--disk 8M); an
# editor create that then fails with ENOSPC; a command past --tool-timeout;
# an unknown tool; the command with controls; submit.
script='[
 {"calls": [["execute_bash", {"command": "echo three; exit 3"}]]},
 {"calls": [["execute_bash", {"command": "dd if=/dev/zero of=/fill bs=1M count=64 2>/dev/null; true"}]]},
 {"calls": [["str_replace_editor", {"command": "create", "path": "/testbed/output/a.txt", "file_text": "hello world\n"}]]},
 {"calls": [["execute_bash", {"command": "sleep 30"}]]},
 {"calls": [["no_such_tool", {"x": 1}]]},
 {"calls": [["execute_bash", {"command": "echo \u001b[2J\u009bcleared"}]]},
 {"calls": [["submit", {}]]}
]'
mock_start "$script"
HRUN_LOUD=1 tap_status 0 "a run of seven steps, stderr no terminal" hrun --query q --disk 8M --tool-timeout 1 --net none
err=$tap_stderr
run_dir
line() { printf '%s\n' "$err" | grep "step $1:"; }
tap_like "$(line 1)" "step 1: bash echo three; exit 3 -> exit 3 \(" "a command's line: the tool, the command, its exit status"
tap_like "$(line 1)" "model [0-9.]+ s, 100 \+ 10 tokens" "and the model's time and tokens for the reply"
tap_like "$(line 3)" "step 3: edit create /testbed/output/a.txt -> error.*No space left on device" \
  "an editor call that failed with ENOSPC says so"
tap_unlike "$(line 3)" "exit" "and claims no exit status"
tap_like "$(line 4)" "step 4: bash sleep 30 -> timed out after 1 s" "a command past --tool-timeout"
tap_like "$(line 5)" "step 5: no_such_tool -> refused: unknown tool" "an unknown tool"
tap_like "$(line 7)" "step 7: submit -> submitted" "submit"
tap_unlike "$err" "-> -1" "no step says -1"
tap_unlike "$err" '\{"command"' "no raw JSON arguments"
tap_like "$(line 6)" 'echo \\x1b\[2J' "the command's ESC is shown escaped"
tap_unlike "$err" "$esc" "no escape character reaches stderr"
tap_unlike "$err" $'\xc2\x9b' "nor a C1 control"
tap_unlike "$err" $'\r' "no carriage return when stderr is no terminal (no live line)"
tap_like "$err" "end: submitted after 7 steps in [0-9.]+ s: model [0-9.]+ s \(7 calls\), tools [0-9.]+ s, 700 tokens in, 70 out" \
  "the totals at the end"

# ---- --quiet ----
mock_start '[{"calls": [["execute_bash", {"command": "echo hi"}]]}]'
tap_status 0 "--quiet" hrun --query q --net none
tap_unlike "$tap_stderr" "step 1" "--quiet: no step lines"
tap_is "$(printf '%s\n' "$tap_stdout" | wc -l)" "1" "stdout is the run directory alone"

# ---- --json ----
mock_start "$script"
tap_status 0 "--json" hrun --query q --disk 8M --tool-timeout 1 --net none --json
json=$tap_stdout
tap_unlike "$tap_stderr" "step 1" "--json: no step lines on stderr"
check=$("$AGENT_PY" -c '
import json, sys
ev = [json.loads(l) for l in sys.stdin.read().splitlines()]
steps = [e for e in ev if e["event"] == "step"]
s = {e["step"]: e for e in steps}
print(ev[0]["event"], ev[0]["schema"], ev[-1]["event"], len(steps))
print(s[1]["tool"], s[1]["result"], s[1]["exit_code"], s[1]["summary"])
print(s[3]["result"], "No space left on device" in s[3]["error"], "exit_code" in s[3])
print(s[4]["result"], s[5]["result"], s[7]["result"])
e = ev[-1]
print(e["end_reason"], e["exit_code"], e["steps"], e["prompt_tokens"], e["completion_tokens"], e["partial"])
print(sorted(set(x["event"] for x in ev)))
' <<<"$json" 2>&1)
tap_is "$check" "start 1 end 7
execute_bash exit 3 echo three; exit 3
error True False
timeout refused submitted
submitted 0 7 700 70 False
['end', 'log', 'model', 'sandbox', 'start', 'step', 'tool']" "one JSON object per event: start, sandbox, model, tool, step, log, end"
tap_unlike "$json" "$esc" "--json: no escape character on stdout"
tap_unlike "$json" $'\xc2\x9b' "nor a C1 control"
tap_like "$json" '\\u001b\[2J\\u009bcleared' "the command's controls are JSON escapes"
RUN_DIR=$("$AGENT_PY" -c 'import json, sys; print(json.loads(sys.stdin.read().splitlines()[-1])["run_dir"])' <<<"$json")
tap_ok "the end event names the run directory" test -s "$RUN_DIR/trajectory.json"

# What hutch run writes on stdout is its caller's choice: no settings file
# turns --json on.  (hutch benchmark's --json is its own, and never reaches
# its tasks' runs, whose stdout it reads: benchmark-terminal.sh.)
mock_start '[{"calls": [["execute_bash", {"command": "echo hi"}]]}]'
printf 'json: true\n' >"$AGENT_OUT/json.yaml"
tap_status 0 "a settings file with json: true" hrun --query q --net none --settings "$AGENT_OUT/json.yaml"
tap_is "$(printf '%s\n' "$tap_stdout" | wc -l) $(printf '%s\n' "$tap_stdout" | grep -c '^{')" "1 0" \
  "its key is not taken: stdout is the run directory"

# ---- at a terminal: the live line ----
mock_start '[{"calls": [["execute_bash", {"command": "echo start; sleep 3; echo \u001b[2Jdone"}]]}]'
AGENT_OUT=$(hutch_test_tmpdir)
rec=$AGENT_OUT/live.rec
HRUN_LOUD=1 _hrun_opts
tap_ok "hutch run at a terminal, a command of three seconds" \
  "$AGENT_PY" "$HUTCH_SRCDIR/tests/lib/pty-drive.py" record "$rec" -- \
  "$HUTCH_BIN" run "${HRUN_OPTS[@]}" --net none --query q
tap_is "$tap_stdout" "status 0" "it ends with 0"
live=$(cat -v "$rec")
tap_like "$live" 'step 1: bash echo start; sleep 3; echo \\x1b\[2Jdone \.\.\. [0-9]+ s, output arriving' \
  "a live line while the command runs: elapsed time, and that output arrives"
tap_like "$live" '\^M\^\[\[K' "redrawn in place"
tap_like "$live" 'step 1: bash .* -> exit 0' "then the step's line"
tap_unlike "$live" '\^\[\[2J' "the command's own controls never reach the terminal"

mock_stop
tap_done
