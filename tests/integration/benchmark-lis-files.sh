#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch benchmark writes LLM-in-Sandbox 0.2.0's files as its runner writes
# them: results.json, trajectory.json and logs/ID.txt byte for byte, times
# and the server's address apart.  The expected files are
# tests/golden/lis-bench/out/, written by LLM-in-Sandbox's own runner on the
# same task folders (tests/golden/lis-bench/tasks/, one of them laid out as
# its demo folder) and the same scripted replies (README there).
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
IMAGE=$(hutch_test_rootfs debian) || tap_skip_all "debian test rootfs unavailable (tests/setup-host.sh)"
GOLDEN=$HUTCH_SRCDIR/tests/golden/lis-bench
tmp=$(hutch_test_tmpdir)
export HUTCH_STATE_DIR=$tmp/state
mkdir -p "$HUTCH_STATE_DIR"
unset LLM_NAME LLM_BASE_URL LLM_API_KEY LLM_TEMPERATURE LLM_NUM_WORKERS OPENAI_BASE_URL

# same FILE GOLDEN: the two files equal once each time (a float) and the
# server's address are masked; else a diff of the first differences.
same() {
  "$AGENT_PY" - "$1" "$2" <<'PY'
import difflib, re, sys
FLOAT = r'-?(?:[0-9]+\.[0-9]+(?:e[+-][0-9]+)?|[0-9]+e[+-][0-9]+)'
def mask(path):
    try:
        text = open(path, encoding="utf-8", newline="").read()
    except OSError as e:
        return "<%s>" % e
    text = re.sub(r'("(?:elapsed_time_seconds|exec_time)": )' + FLOAT, r'\1TIME', text)
    return re.sub(r'("llm_base_url": )"[^"]*"', r'\1"URL"', text)
got, want = mask(sys.argv[1]), mask(sys.argv[2])
if got != want:
    d = difflib.unified_diff(want.splitlines(True), got.splitlines(True), "lis", "hutch", n=1)
    sys.stderr.write("".join(list(d)[:60]))
    sys.exit(1)
PY
}

# edge has two tasks whose model API fails: hutch runs every task, writes
# LLM-in-Sandbox's files as its runner would, and says (status 3) that
# those two are not finished, for --resume to run again.
declare -A want_status=([demo]=0 [edge]=3)
for set in demo edge; do
  mock_start "$(cat "$GOLDEN/replies/$set.json")"
  tap_status "${want_status[$set]}" "$set: hutch benchmark runs the task set (status ${want_status[$set]})" \
    "$HUTCH_BIN" benchmark "$GOLDEN/tasks" --task "$set" --model mock --base-url "$MOCK_URL" --rootfs "$IMAGE" \
    --output-dir "$tmp/out-$set" --retry-delay 0.05 --num-workers 1
  out=$(printf '%s\n' "$tap_stdout" | tail -n 1)
  for f in results.json trajectory.json; do
    same "$out/$f" "$GOLDEN/out/$set/$f" 2>"$tmp/diff"
    tap_check $? "$set: $f is LLM-in-Sandbox's, byte for byte (times and the URL apart)"
    [ -s "$tmp/diff" ] && tap_diag "$(cat "$tmp/diff")"
  done
  for g in "$GOLDEN/out/$set/logs/"*.txt; do
    f=$(basename "$g")
    same "$out/logs/$f" "$g" 2>"$tmp/diff"
    tap_check $? "$set: logs/$f is LLM-in-Sandbox's, byte for byte"
    [ -s "$tmp/diff" ] && tap_diag "$(head -c 3000 "$tmp/diff")"
  done
  tap_is "$(ls "$out/logs" | sort | tr '\n' ' ')" "$(ls "$GOLDEN/out/$set/logs" | sort | tr '\n' ' ')" \
    "$set: logs/ holds one file per task, as LLM-in-Sandbox's"
done

# hutch's own facts stay in hutch's files: the failed API is an error there,
# and so is the reward.py that raised, whose answer is kept.
line() {
  "$AGENT_PY" -c '
import json, sys
for l in open(sys.argv[1]):
    d = json.loads(l)
    if d["id"] == sys.argv[2]:
        print(eval(sys.argv[3]))' "$out/results.jsonl" "$@"
}
tap_like "$(line edge_api '(d["score"], d["end"], d["error"])')" "^\(0(\.0)?, 'api_error', [\"'].+[\"']\)$" \
  "results.jsonl: the task whose model API failed is an error in hutch's own record, not finished"
tap_like "$(line edge_api_late '(d["score"], d["error"])')" "^\(0(\.0)?, [\"'].+[\"']\)$" \
  "results.jsonl: so is the one whose API failed after it wrote its answer (LLM-in-Sandbox scores it)"
tap_like "$(line edge_raise '(d["agent_answer"], d["error"])')" "^\('boom', '.*ZeroDivisionError.*'\)$" \
  "results.jsonl: a reward.py that raised keeps the answer and the error"
tap_like "$(cat "$out/summary.md")" "edge_api" "summary.md lists the tasks with hutch's errors"

# Where hutch departs from LLM-in-Sandbox's bytes on purpose: the control
# characters rich keeps (ESC here) are escaped in the log, so that reading
# it in a terminal runs nothing of the model's.
mock_start '{"tasks": [{"match": "E-INT", "steps": [{"content": "clear \u001b[2J now", "calls": [["execute_bash", {"command": "printf int > /testbed/answer.txt"}]]}, {"calls": [["submit", {}]]}]}]}'
tap_status 0 "a thought with an escape sequence" \
  "$HUTCH_BIN" benchmark "$GOLDEN/tasks" --task edge --start_id 1 --end_id 2 --model mock --base-url "$MOCK_URL" \
  --rootfs "$IMAGE" --output-dir "$tmp/out-esc" --retry-delay 0.05
out=$(printf '%s\n' "$tap_stdout" | tail -n 1)
tap_like "$(cat "$out/logs/edge_int.txt")" 'clear \\x1b\[2J now' "is shown escaped in logs/ID.txt"
tap_unlike "$(cat "$out/logs/edge_int.txt")" $'\x1b' "which holds no escape character"

tap_done
