#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What a model (or the sandbox through it) can make `hutch run` hold is
# bounded: the tool calls of one reply (the rest answered "not run"), each
# call a step, the bytes of one observation and of the whole conversation,
# the run's wall-clock time, and the --tools hutch editor's undo history.
# Each case replays an attack with the mock model and measures the peak
# memory of hutch run (tests/lib/maxrss.py) and the size of trajectory.json.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
AGENT_IMAGE=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"

rss=$(hutch_test_tmpdir)/rss
# rss_mb: the peak memory of the last hrun_rss, in MiB.
rss_mb() { echo $(($(cat "$rss") / 1024)); }
traj_bytes() { stat -c %s "$RUN_DIR/trajectory.json"; }
# script PY: the mock's script, printed by the python expression PY
# (`call(name, args)` makes one call; `E` is str_replace_editor).
script() {
  "$AGENT_PY" -c '
import json, sys
def call(name, args): return [name, args]
E = "str_replace_editor"
print(json.dumps(eval("(" + sys.argv[1] + ")")))' "$1"
}

# 1. Two replies of 300 calls, each printing 1 MB on one line (the
# issue's attack: 1.77 GB of memory, a 600 MB trajectory.json).
mb='head -c 1000000 /dev/zero | tr "\\0" a'
mock_start "$(script "[{'calls': [call('execute_bash', {'command': '$mb'})] * 300}] * 2")"
tap_status 0 "two replies of 300 calls printing 1 MB each: the run goes on and submits" \
  hrun_rss "$rss" --query q --max-token-limit 100000000
run_dir
tap_diag "peak memory $(rss_mb) MiB, trajectory.json $(traj_bytes) bytes"
tap_check $(($(rss_mb) >= 150)) "hutch run's peak memory stays under 150 MiB"
tap_check $(($(traj_bytes) >= 4000000)) "trajectory.json stays under 4 MB"
tap_is "$(mock_request 1 'len(r["body"]["messages"][2]["tool_calls"])')" "32" \
  "the reply goes back with its first 32 calls (twice --max-calls-per-reply)"
tap_is "$(mock_request 1 '[m.get("tool_call_id") for m in r["body"]["messages"][3:35]] == [c["id"] for c in r["body"]["messages"][2]["tool_calls"]]')" \
  "True" "each of them answered by a tool message, in order"
tap_is "$(mock_request 1 'sum(1 for m in r["body"]["messages"][3:35] if m["content"].startswith("Exit code: 0"))')" "16" \
  "the first 16 calls were run (--max-calls-per-reply)"
tap_like "$(mock_request 1 'r["body"]["messages"][19]["content"]')" \
  "^ERROR: not run: this reply has 300 tool calls, and at most 16 of one reply are run" \
  "the 17th is answered 'not run', with why"
tap_like "$(mock_request 1 'r["body"]["messages"][34]["content"]')" "268 more calls of this reply .*left out" \
  "the last answer says how many calls were left out"
tap_check $(($(mock_request 1 'len(r["body"]["messages"][3]["content"])') > 70000)) \
  "one call's observation is cut to --max-observation-size (64K)"
tap_like "$(mock_request 1 'r["body"]["messages"][3]["content"]')" \
  "Observation truncated in middle: [0-9]+ bytes left out" "with a marker saying how much was left out"
tap_is "$(traj 't["metadata"]["total_steps"]')" "33" "each call run is a step (16 + 16 + the submit)"

# 2. One reply of 50,000 calls (a 4 MB reply; the 16 MiB reply limit
# allows about 100,000).
mock_start "$(script "[{'calls': [call('nop', {})] * 50000}]")"
tap_status 0 "a reply of 50,000 calls" hrun_rss "$rss" --query q
run_dir
tap_diag "peak memory $(rss_mb) MiB, trajectory.json $(traj_bytes) bytes"
tap_check $(($(rss_mb) >= 150)) "hutch run's peak memory stays under 150 MiB"
tap_check $(($(traj_bytes) >= 200000)) "trajectory.json stays under 200 kB"
tap_is "$(mock_request 1 'len(r["body"]["messages"][2]["tool_calls"]) == sum(1 for m in r["body"]["messages"] if m["role"] == "tool")')" \
  "True" "every call the conversation holds is answered"

# 3. Every call counts against --max-steps.
mock_start "$(script "[{'calls': [call('execute_bash', {'command': 'echo %d' % i}) for i in range(3)]}]")"
tap_status 1 "a reply of 3 calls with --max-steps 2: the run ends unfinished" hrun --query q --max-steps 2
run_dir
tap_is "$(traj 't["hutch"]["end_reason"]')" "max_steps" "end_reason max_steps"
tap_like "$(traj 't["steps"][2]["observation"]')" "^ERROR: not run: .*--max-steps" \
  "the call past the step budget is answered 'not run'"
tap_is "$(mock_count)" "1" "and no more model calls"

# 4. The whole conversation's bytes are bounded.
kb='head -c 60000 /dev/zero | tr "\\0" b'
mock_start "$(script "[{'calls': [call('execute_bash', {'command': '$kb'})] * 16}] * 10")"
tap_status 1 "16 calls of 60 kB each with --max-conversation-size 300K: the run ends" \
  hrun --query q --max-conversation-size 300K --max-token-limit 100000000
run_dir
tap_is "$(traj 't["hutch"]["end_reason"]')" "conversation_limit" "end_reason conversation_limit"
tap_like "$(traj 't["steps"][-1]["observation"]')" "^ERROR: not run: .*--max-conversation-size" \
  "the calls after it are answered 'not run'"
tap_like "$(traj '[s["observation"] for s in t["steps"] if "left out" in s["observation"]][0]')" \
  "left out: the run's conversation reached --max-conversation-size" "the observation that crossed it is replaced by a note"
tap_check $(($(traj_bytes) >= 600000)) "trajectory.json stays near the bound"
tap_is "$(mock_count)" "1" "no more model calls"

# 5. An overall wall-clock limit, through a long command and through a
# model that does not answer.
mock_start "$(script "[{'calls': [call('execute_bash', {'command': 'echo early > /testbed/output/early.txt'})]},
  {'calls': [call('execute_bash', {'command': 'sleep 60'})]}]")"
start=$SECONDS
tap_status 124 "--run-timeout 3 with a command of 60 s: the run ends, exit 124" hrun --query q --run-timeout 3
tap_check $((SECONDS - start >= 30)) "well before the command would have ended"
run_dir
tap_is "$(traj 't["hutch"]["end_reason"]')" "time_limit" "end_reason time_limit"
tap_is "$(cat "$RUN_DIR/files/early.txt" 2>/dev/null)" "early" "the output directory is still copied back"
tap_like "$(traj 't["steps"][1]["observation"]')" "took too long" "the command's step is in the trajectory"
mock_start '[{"hang": 60}]'
start=$SECONDS
tap_status 124 "--run-timeout 2 with a model that does not answer: exit 124" hrun --query q --run-timeout 2
tap_check $((SECONDS - start >= 30)) "well before the model's timeout"
run_dir
tap_is "$(traj 't["hutch"]["end_reason"]')" "time_limit" "end_reason time_limit"

# 6. The --tools hutch editor's undo history on a 59 MiB file edited
# repeatedly (the issue's attack: 40 inserts, 2.4 GB of memory).
make_big='yes 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrstuvwxyz | head -c 61865984 > /testbed/big.txt'
mock_start "$(script "[{'calls': [call('execute_bash', {'command': '$make_big'})]}]
  + [{'calls': [call(E, {'command': 'insert', 'path': '/testbed/big.txt', 'insert_line': 0, 'new_str': 'line %d' % i})]} for i in range(8)]
  + [{'calls': [call(E, {'command': 'undo_edit', 'path': '/testbed/big.txt'})]}] * 2
  + [{'calls': [call('execute_bash', {'command': 'head -n 1 /testbed/big.txt'})]}]")"
tap_status 0 "8 inserts into a 59 MiB file, then two undos" hrun_rss "$rss" --query q --tools hutch
run_dir
tap_diag "peak memory $(rss_mb) MiB"
tap_check $(($(rss_mb) >= 400)) "hutch run's peak memory stays under 400 MiB"
tap_like "$(traj 't["steps"][9]["observation"]')" "undone successfully" "the last edit is undone"
tap_like "$(traj 't["steps"][10]["observation"]')" "ERROR: .*no longer kept.*64 MiB" \
  "an undo past what the history keeps says so"
tap_like "$(traj 't["steps"][11]["observation"]')" "STDOUT\]"$'\n'"line 6$" "and changes nothing"

# 7. Calls written as text (--tools hutch): 60,000 Qwen3-Coder calls, then
# 4 MB of "<p" before the one parameter tag, which each call's search for
# its parameters went on to (112 s before it was bounded to the call).
mock_start "$(script "[{'content': '<function=nop>\\n</function>' * 60000 + '<p' * 2000000 + '<parameter=x>'}]")"
start=$SECONDS
tap_status 0 "a reply's text with 60,000 calls" hrun_rss "$rss" --query q --tools hutch --max-token-limit 100000000
tap_check $((SECONDS - start >= 30)) "is read in linear time (under 30 s; it took $((SECONDS - start)) s)"
tap_is "$(mock_request 1 'sum(1 for m in r["body"]["messages"][3:] if m["role"] == "user")')" "32" \
  "32 of its calls are answered"
tap_check $(($(rss_mb) >= 150)) "hutch run's peak memory stays under 150 MiB"

# 8. An error message as long as a reply is cut in the log and on stderr.
mock_start "$(script "[{'status': 400, 'error': 'no ' * 300000}]")"
tap_status 3 "an HTTP 400 with a 900 kB message: exit 3" hrun --query q
tap_check $((${#tap_stderr} >= 10000)) "stderr stays short (${#tap_stderr} bytes)"
run_dir
tap_check $(($(stat -c %s "$RUN_DIR/run.log") >= 10000)) "and so does run.log"

mock_stop
tap_done
