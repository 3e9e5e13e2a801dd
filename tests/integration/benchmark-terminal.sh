#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# What hutch benchmark shows while it works: a line per task (its score,
# steps, tokens and time; how it ended and why when that was not a plain
# finish; no score when it is not finished), a live line at a terminal, the
# totals at the end; --quiet and --json (one JSON object per event) for
# scripts; nothing of a task set's or a sandbox's text unescaped.  And the
# two paths that could still hand out numbers nobody measured: `benchmark
# judge` against a judge that is down or failing, and --mode llm past
# --task-timeout.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
IMAGE=$(hutch_test_rootfs debian) || tap_skip_all "debian test rootfs unavailable (tests/setup-host.sh)"
tmp=$(hutch_test_tmpdir)
export HUTCH_STATE_DIR=$tmp/state
mkdir -p "$HUTCH_STATE_DIR"
. "$HUTCH_SRCDIR/tests/lib/bench.sh"
esc=$'\033'
hb() {
  "$HUTCH_BIN" benchmark --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" --retry-delay 0.05 "$@"
}

# Four tasks: hK answers K; h3's reward raises (a scoring error); h1 takes
# three seconds (a live line to see); h5's id holds an ESC sequence.
set=$tmp/set
mkdir -p "$set/h"
printf 'dataset: "json"\ndata_files: "h/data.jsonl"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
  >"$set/h/config.yaml"
cat >"$set/h/reward.py" <<'EOF'
def compute_score(agent_answer, ground_truth, **kwargs):
    if ground_truth == "3":
        raise ValueError("a reward that fails\nfor h3")
    return 1.0 if agent_answer == ground_truth else 0.0
EOF
{
  for k in 1 2 3; do
    printf '{"id": "h%s", "problem_statement": "H-%s", "ground_truth": "%s"}\n' "$k" "$k" "$k"
  done
  printf '{"id": "h5\\u001b[2J", "problem_statement": "H-5", "ground_truth": "5"}\n'
} >"$set/h/data.jsonl"
script='{"tasks": ['
for k in 1 2 3 5; do
  cmd="echo $k > /testbed/answer.txt"
  [ "$k" = 1 ] && cmd="sleep 3; $cmd"
  script+='{"match": "H-'$k'", "steps": [{"calls": [["execute_bash", {"command": "'$cmd'"}]]}]}'
  [ "$k" = 5 ] || script+=', '
done
script+=']}'

# ---- lines, stderr no terminal ----
mock_start "$script"
tap_status 0 "a run of four tasks, stderr no terminal" hb "$set" --task h --num-workers 2 --output-dir "$tmp/out/lines"
OUT=$(printf '%s\n' "$tap_stdout" | tail -n 1)
tap_is "$(printf '%s\n' "$tap_stdout" | wc -l)" "1" "stdout is the run directory alone"
err=$tap_stderr
tap_like "$err" "hutch benchmark: h: 4 tasks \(4 to run\), 2 workers, model mock; output " "a line when it starts"
tap_like "$err" "\[[1-4]/4\] h2  score 1\.0000  2 steps  220 tokens  [0-9.]+ s" \
  "a finished task's line: its score, steps, tokens and time"
tap_like "$err" "\[[1-4]/4\] h3  score 0\.0000  scoring_error  2 steps  220 tokens  [0-9.]+ s: reward: ValueError: a reward that fails\\\\nfor h3" \
  "a task that ended in an error: how it ended, and why, on one line"
tap_like "$err" "h5\\\\x1b\[2J  score 1\.0000" "an id with an ESC sequence is written escaped"
tap_unlike "$err" "$esc" "no ESC of the task set's reaches the terminal"
tap_like "$err" "mean score 0\.7500 over 4 tasks, 1 errors" "the mean at the end"
tap_like "$err" "hutch benchmark: totals over 4 tasks: 8 steps, 880 tokens \(800 in, 80 out\), model [0-9.]+ s, tools [0-9.]+ s" \
  "and the totals: steps, tokens in and out, model and tool time"
tap_is "$(lines 'sorted((l["id"][:2], l.get("steps"), l.get("tokens_in"), l.get("tokens_out")) for l in ls)')" \
  "[('h1', 2, 200, 20), ('h2', 2, 200, 20), ('h3', 2, 200, 20), ('h5', 2, 200, 20)]" \
  "results.jsonl holds each task's steps and tokens, the numbers the lines show"

# ---- at a terminal: the live line ----
mock_start "$script"
rec=$tmp/live.rec
tap_ok "the same run at a terminal" "$AGENT_PY" "$HUTCH_SRCDIR/tests/lib/pty-drive.py" record "$rec" -- \
  "$HUTCH_BIN" benchmark --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" --retry-delay 0.05 "$set" \
  --task h --num-workers 1 --output-dir "$tmp/out/tty"
tap_is "$tap_stdout" "status 0" "it ends with 0"
live=$(cat -v "$rec")
tap_like "$live" '\^M\^\[\[K\[\.+\] 0/4  1 running  no score yet  0 errors  [0-9]+ s' \
  "a live line while the first task runs: progress, tasks running, no score yet, time"
tap_like "$live" '\^M\^\[\[K\[#+\.*\] [1-3]/4  1 running  mean [01]\.[0-9]{3}  [01] errors?  [0-9]+ s' \
  "redrawn in place as tasks end, with the mean so far"
tap_like "$live" '\^M\^\[\[K\[[0-9]/4\] h[1-5]' "cleared before each task's line"
tap_unlike "$live" '\^\[\[2J' "the task set's controls never reach the terminal"
tap_like "$live" 'totals over 4 tasks' "the totals at the end"

# ---- --quiet ----
mock_start "$script"
tap_status 0 "--quiet" hb "$set" --task h --num-workers 2 --output-dir "$tmp/out/quiet" --quiet
tap_is "$tap_stderr" "" "prints nothing on stderr when nothing went wrong"
tap_is "$(printf '%s\n' "$tap_stdout" | wc -l)" "1" "and the run directory on stdout"
OUT=$(printf '%s\n' "$tap_stdout" | tail -n 1)
tap_is "$(grep -c -- '--quiet' "$OUT"/runs/*/run.log 2>/dev/null | awk -F: '{s += $2} END {print s + 0}')" "0" \
  "--quiet is hutch benchmark's: the tasks' runs do not get it"

# ---- --json ----
mock_start "$script"
tap_status 0 "--json" hb "$set" --task h --num-workers 2 --output-dir "$tmp/out/json" --json
tap_is "$tap_stderr" "" "stderr as with --quiet"
printf '%s\n' "$tap_stdout" >"$tmp/events"
ev() { "$AGENT_PY" -c '
import json, sys
es = [json.loads(l) for l in open(sys.argv[1])]
print(eval(sys.argv[2]))' "$tmp/events" "$1"; }
tap_is "$(ev '[e["event"] for e in es]')" "['start', 'task', 'task', 'task', 'task', 'end']" \
  "stdout: a JSON object per event and nothing else (start, a task each, end)"
tap_is "$(ev '(es[0]["schema"], es[0]["task_set"], es[0]["tasks"], es[0]["to_run"], es[0]["workers"], es[0]["model"])')" \
  "(1, 'h', 4, 4, 2, 'mock')" "the start event: schema, task set, tasks, workers, model"
tap_is "$(ev 'sorted((e["id"][:2], e["end"], e["measured"], e["score"], e["steps"], e["tokens"]) for e in es if e["event"] == "task")')" \
  "[('h1', 'finished', True, 1, 2, 220), ('h2', 'finished', True, 1, 2, 220), ('h3', 'scoring_error', True, 0, 2, 220), ('h5', 'finished', True, 1, 2, 220)]" \
  "each task's event: its end, score, steps and tokens"
tap_is "$(ev '(lambda e: (e["complete"], e["mean_score"], e["measured"], e["errors"], e["steps"], e["tokens_in"], e["tokens_out"], e["exit_code"], e["ends"]["scoring_error"]))(es[-1])')" \
  "(True, 0.75, 4, 1, 8, 800, 80, 0, 1)" "the end event: complete, the mean, the totals, the exit status"
OUT=$(ev 'es[-1]["output"]')
tap_ok "the end event names the run directory" test -s "$OUT/results.json"
tap_unlike "$(cat "$tmp/events")" "$esc" "no ESC in the JSON lines either"

# A run that stops: the events say it, with no score.
mock_start '[{"status": 500, "error": "gone", "repeat": 100}]'
tap_status 3 "--json, a server that fails every request" hb "$set" --task h --output-dir "$tmp/out/jfail" --json \
  --max-tries 1 --max-api-failures 2
printf '%s\n' "$tap_stdout" >"$tmp/events"
tap_is "$(ev '[(e["event"], e.get("end"), e.get("score")) for e in es][1:]')" \
  "[('task', 'api_error', None), ('task', 'api_error', None), ('end', None, None)]" \
  "a task the API failed has score null"
tap_is "$(ev '(lambda e: (e["complete"], e["mean_score"], e["exit_code"], e["not_run"], e["stopped"]))(es[-1])')" \
  "(False, None, 3, 2, \"2 tasks in a row ended on a failure of the model's API\")" \
  "the end event: incomplete, no mean, status 3, why it stopped"
tap_like "$tap_stderr" "the run stops: 2 tasks in a row" "stderr says why it stops"
tap_unlike "$tap_stderr" "\[1/4\]" "and has no progress lines"

tap_status 2 "--json takes no value" hb "$set" --task h --json=yes
tap_like "$tap_stderr" "--json takes no value" "saying so"

# ---- benchmark judge: a judge that is down, or failing, writes nothing ----
TRAJ=$(ls "$tmp"/out/lines/*/trajectory.json)
dead=http://127.0.0.1:$(free_port)/v1
tap_status 3 "judge against a judge that is down: status 3" \
  "$HUTCH_BIN" benchmark judge --input "$TRAJ" --judge-model j --judge-base-url "$dead" --output "$tmp/judged.json"
tap_like "$tap_stderr" "127\.0\.0\.1:[0-9]+/v1/models.*hint: start the model's server" "naming the endpoint and the fix"
tap_ok "nothing written" test ! -e "$tmp/judged.json"
mock_start '[{"status": 400, "error": "bad request", "repeat": 100}]'
tap_status 3 "judge whose every judgment fails: status 3" \
  "$HUTCH_BIN" benchmark judge --input "$TRAJ" --judge-model j --judge-base-url "$MOCK_URL" --output "$tmp/judged.json" \
  --num-repeats 2
tap_like "$tap_stderr" "8 of 8 judgments were not made \(the first: .*bad request.*\): nothing written" \
  "saying how many judgments were not made, and why"
tap_ok "nothing written: no mean of failed judgments" test ! -e "$tmp/judged.json"
mock_start '[{"status": 400, "error": "bad request", "repeat": 100}]'
tap_status 0 "--allow-errors writes them as LLM-in-Sandbox's judge.py does" \
  "$HUTCH_BIN" benchmark judge --input "$TRAJ" --judge-model j --judge-base-url "$MOCK_URL" --output "$tmp/judged.json" \
  --num-repeats 2 --allow-errors
tap_like "$tap_stderr" "warning: 8 of 8 judgments were not made, each scored 0 \(--allow-errors\)" "and says so"
tap_is "$("$AGENT_PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["stats"]["errors"], float(d["stats"]["mean_score"]))' "$tmp/judged.json" 2>/dev/null)" \
  "4 0.0" "the file records the errors"

# ---- --mode llm: the model's time is bounded by --task-timeout ----
mock_start '[{"hang": 30, "repeat": 10}]'
start=$SECONDS
tap_status 0 "--mode llm --task-timeout 2 against a model that takes 30 s" \
  hb "$set" --task h --mode llm --task-timeout 2 --end-id 1 --output-dir "$tmp/out/llm"
OUT=$(printf '%s\n' "$tap_stdout" | tail -n 1)
err=$tap_stderr
tap_ok "the task ends at its limit, not at 1800 s ($((SECONDS - start)) s)" test $((SECONDS - start)) -lt 20
tap_is "$(lines '[(l["id"], l.get("end"), l["score"]) for l in ls]')" "[('h1', 'timeout', 0)]" \
  "recorded as a timeout, a measured end"
tap_like "$err" "h1  score 0\.0000  timeout  .*within the task's time limit \(2 s, --task-timeout\)" "its line says why"

mock_stop
tap_is "$(leftovers)" "" "nothing of the runs is left"
tap_done
