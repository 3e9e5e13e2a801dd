#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# hutch benchmark never hands out a number it did not measure: a server
# that is down is refused before any task (nothing written), one still
# starting is waited for (--wait-for-endpoint), the run stops after
# --max-api-failures tasks in a row end on a failure of the model's API,
# such a task is not finished (--resume runs it again; --retry-errors runs
# the tasks that ended in other errors), each task's record says how it
# ended, a task's time limit is its hutch run's own (--run-timeout), and a
# merge with a shard missing or unfinished exits non-zero unless
# --allow-partial, which names what is missing.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
IMAGE=$(hutch_test_rootfs debian) || tap_skip_all "debian test rootfs unavailable (tests/setup-host.sh)"
tmp=$(hutch_test_tmpdir)
export HUTCH_STATE_DIR=$tmp/state
mkdir -p "$HUTCH_STATE_DIR"
json() { "$AGENT_PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
. "$HUTCH_SRCDIR/tests/lib/bench.sh"
bench_dir() { OUT=$(printf '%s\n' "$tap_stdout" | tail -n 1); }
# hb URL ARGS...: hutch benchmark against the model server at URL.
hb() {
  local url=$1
  shift
  "$HUTCH_BIN" benchmark --base-url "$url" --model mock --rootfs "$IMAGE" --retry-delay 0.05 "$@"
}
# entries: what is in a directory (nothing when it is not there).
entries() { find "$1" -mindepth 1 2>/dev/null | wc -l; }
demo=$HUTCH_SRCDIR/examples/tasks

# A task set of four: task hK answers K, which is right; reward.py raises
# for h3 until the task folder holds a file `fixed`.
set=$tmp/set
mkdir -p "$set/h"
printf 'dataset: "json"\ndata_files: "h/data.jsonl"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
  >"$set/h/config.yaml"
cat >"$set/h/reward.py" <<'EOF'
import os
def compute_score(agent_answer, ground_truth, **kwargs):
    if ground_truth == "3" and not os.path.exists("/hutch-task/fixed"):
        raise ValueError("a reward that fails for h3")
    return 1.0 if agent_answer == ground_truth else 0.0
EOF
for k in 1 2 3 4; do
  printf '{"id": "h%s", "problem_statement": "H-%s", "ground_truth": "%s"}\n' "$k" "$k" "$k"
done >"$set/h/data.jsonl"
hscript='{"tasks": ['
for k in 1 2 3 4; do
  hscript+='{"match": "H-'$k'", "steps": [{"calls": [["execute_bash", {"command": "echo '$k' > /testbed/answer.txt"}]]}]}'
  [ "$k" = 4 ] || hscript+=', '
done
hscript+=']}'

# ---- a server that is down: refused before any task, nothing written ----
dead=http://127.0.0.1:$(free_port)/v1
tap_status 3 "the demo set against a server that is down stops before any task, status 3" \
  hb "$dead" "$demo" --task demo --num-workers 4 --output-dir "$tmp/out/dead"
tap_like "$tap_stderr" "127\.0\.0\.1:[0-9]+/v1/models.*connect" "naming the endpoint and what came of the request"
tap_like "$tap_stderr" "hint: .*--wait-for-endpoint" "and saying how to wait for a server still starting"
tap_unlike "$tap_stderr" "mean score" "no score is printed"
tap_is "$(entries "$tmp/out/dead")" "0" "nothing is written: no run directory, no result"

# ---- a server still starting: --wait-for-endpoint ----
port=$(free_port)
(
  hb "http://127.0.0.1:$port/v1" "$set" --task h --num-workers 2 --output-dir "$tmp/out/wait" --wait-for-endpoint 1m \
    >"$tmp/wait.out" 2>"$tmp/wait.err"
  echo $? >"$tmp/wait.rc"
) &
bg=$!
sleep 2
MOCK_PORT=$port mock_start "$hscript"
wait "$bg"
tap_is "$(cat "$tmp/wait.rc")" "0" "--wait-for-endpoint 1m: a server that comes up 2 s later is waited for"
tap_like "$(cat "$tmp/wait.err")" "waiting up to 60 s for the model's API" "saying it waits"
OUT=$(tail -n 1 "$tmp/wait.out")
tap_is "$(lines 'sorted((l["id"], l["score"], l.get("end")) for l in ls)')" \
  "[('h1', 1, 'finished'), ('h2', 1, 'finished'), ('h3', 0, 'scoring_error'), ('h4', 1, 'finished')]" \
  "then every task runs; each line says how its task ended (h3's reward failed)"
tap_is "$(grep -c . "$MOCK_REQUESTS.get" 2>/dev/null)" "1" "the pre-flight is one request once the server is up"
tap_is "$("$AGENT_PY" -c 'import json, sys; print(json.loads(open(sys.argv[1]).readline())["path"])' \
  "$MOCK_REQUESTS.get" 2>/dev/null)" "/v1/models" "GET /v1/models: no completion, no token spent"
tap_is "$(mock_count)" "8" "the completions are the tasks' own (two each)"
tap_status 3 "--wait-for-endpoint 2 gives up at its limit" \
  hb "$dead" "$set" --task h --output-dir "$tmp/out/dead2" --wait-for-endpoint 2
tap_like "$tap_stderr" "did not answer within 2 s" "and says so"
tap_is "$(entries "$tmp/out/dead2")" "0" "writing nothing"

# ---- a key or a model the endpoint refuses: refused before any task ----
MOCK_API_KEY=right mock_start "$hscript"
tap_status 3 "an endpoint that refuses the key is refused before any task" \
  hb "$MOCK_URL" "$set" --task h --output-dir "$tmp/out/key" --api-key wrong
tap_like "$tap_stderr" "HTTP 401.*hint: check the API key" "naming the status and the fix"
tap_is "$(mock_count)" "0" "no task ran"
tap_is "$(entries "$tmp/out/key")" "0" "nothing is written"
MOCK_MODELS=qwen3,llama mock_start '[{"status": 404, "error": "The model `mock` does not exist."}]'
tap_status 3 "a model the endpoint does not list, and that a completion confirms it does not serve, is refused" \
  hb "$MOCK_URL" "$set" --task h --output-dir "$tmp/out/model"
tap_like "$tap_stderr" "'mock'.*qwen3, llama" "naming the models it serves"
tap_is "$(mock_count) $(mock_request 0 'r["body"]["max_tokens"]')" "1 1" "after one completion of one token"
tap_is "$(entries "$tmp/out/model")" "0" "nothing is written"

# ---- a server that fails during the run: it stops; the tasks are not finished ----
mock_start '[{"status": 500, "error": "the server is gone", "repeat": 1000}]'
tap_status 3 "the run stops when --max-api-failures 2 tasks in a row end on an API failure, status 3" \
  hb "$MOCK_URL" "$demo" --task demo --num-workers 1 --max-tries 1 --max-api-failures 2 --output-dir "$tmp/out/api"
bench_dir
tap_like "$tap_stderr" "2 tasks in a row ended on a failure of the model's API" "saying why"
tap_like "$tap_stderr" "incomplete.*go on with --resume" "and that the run is incomplete"
tap_unlike "$tap_stderr" "mean score" "printing no score"
tap_is "$(lines '[(l["id"], l.get("end"), l["error"].startswith("the model\x27s API failed"), "the server is gone" in l["error"]) for l in ls]')" \
  "[('demo_001', 'api_error', True, True), ('demo_002', 'api_error', True, True)]" \
  "results.jsonl records both tasks as ended on an API error, with the server's message"
tap_ok "no results.json nor trajectory.json: the run measured nothing" \
  test ! -e "$OUT/results.json" -a ! -e "$OUT/trajectory.json"
tap_is "$(json "$OUT/benchmark.json" '(d["status"]["complete"], d["status"]["tasks"], d["status"]["ends"]["api_error"], d["status"]["not_run"])' 2>/dev/null)" \
  "(False, 20, 2, 18)" "benchmark.json's status: incomplete, 2 API errors, 18 not run"
tap_like "$(cat "$OUT/summary.md" 2>/dev/null)" "Incomplete: no score" "summary.md says so, and shows no score"
API=$OUT
# With --max-api-failures 0 the run goes through every task: LLM-in-Sandbox's
# files are written as its runner would (the failed runs scored as they
# ended, no error), hutch's say the tasks are not finished.
tap_status 3 "--max-api-failures 0: every task is run, and the run is still incomplete (status 3)" \
  hb "$MOCK_URL" "$demo" --task demo --num-workers 2 --max-tries 1 --max-api-failures 0 --output-dir "$tmp/out/api0"
bench_dir
tap_is "$(json "$OUT/results.json" '(d["total"], d["mean_score"], d["num_errors"])' 2>/dev/null)" "(20, 0.0, 0)" \
  "results.json is LLM-in-Sandbox's view: 20 tasks scored as they ended, no error"
tap_is "$(json "$OUT/benchmark.json" '(d["status"]["complete"], d["status"]["ends"]["api_error"], d["status"]["not_run"])' 2>/dev/null)" \
  "(False, 20, 0)" "benchmark.json: incomplete, 20 API errors"
tap_ok "no report.html (its head would be a mean score)" test ! -e "$OUT/report.html"
tap_unlike "$tap_stderr" "mean score" "and no mean score printed"
mock_start '[{"status": 500, "error": "the server is gone", "repeat": 1000}]'
tap_status 3 "by default the run stops after 3" \
  hb "$MOCK_URL" "$demo" --task demo --num-workers 1 --max-tries 1 --output-dir "$tmp/out/api3"
bench_dir
tap_is "$(lines 'len(ls)')" "3" "(three tasks recorded)"

# ---- --resume runs them again ----
mock_start "$(cat "$demo/demo/mock-replies.json")"
tap_status 0 "--resume runs the tasks that ended on an API failure, and those not run" \
  "$HUTCH_BIN" benchmark --resume "$API" --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" --retry-delay 0.05 \
  --num-workers 4
tap_like "$tap_stderr" "20 tasks \(20 to run\)" "all twenty"
tap_is "$(json "$API/results.json" '(d["total"], float(d["mean_score"]), d["num_errors"])' 2>/dev/null)" "(20, 0.95, 0)" \
  "results.json is the whole run's"
tap_is "$(OUT=$API lines 'len(ls), sorted(set(l.get("end") for l in ls))')" "(20, ['finished'])" \
  "results.jsonl has each task once, finished"
tap_is "$(grep -c '"api_error"' "$API/results.retried.jsonl" 2>/dev/null)" "2" \
  "the two failed attempts are kept aside in results.retried.jsonl"
tap_is "$(json "$API/benchmark.json" 'd["status"]["complete"]' 2>/dev/null)" "True" "and benchmark.json says complete"

# ---- --retry-errors runs the tasks that ended in other errors ----
WAITED=$(tail -n 1 "$tmp/wait.out")
tap_is "$(json "$WAITED/results.json" '(d["total"], d["num_errors"])' 2>/dev/null)" "(4, 1)" \
  "a complete run with a task's scoring error has its results.json"
mock_start "$hscript"
tap_status 0 "--resume of it runs nothing" \
  "$HUTCH_BIN" benchmark --resume "$WAITED" --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" --retry-delay 0.05
tap_is "$(mock_count)" "0" "(no request)"
touch "$set/h/fixed"
tap_status 0 "--resume --retry-errors runs the task that ended in an error again" \
  "$HUTCH_BIN" benchmark --resume "$WAITED" --retry-errors --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" \
  --retry-delay 0.05
tap_like "$(mock_request 0 'r["body"]["messages"][1]["content"]')" "^H-3" "that task alone"
tap_is "$(OUT=$WAITED lines 'sorted((l["id"], l["score"], l.get("end")) for l in ls)')" \
  "[('h1', 1, 'finished'), ('h2', 1, 'finished'), ('h3', 1, 'finished'), ('h4', 1, 'finished')]" "now scored"
tap_is "$(json "$WAITED/results.json" '(d["total"], d["mean_score"], d["num_errors"])')" "(4, 1.0, 0)" \
  "and results.json says so"
rm -f "$set/h/fixed"
tap_status 2 "--retry-errors without --resume is refused" hb "$MOCK_URL" "$set" --task h --retry-errors

# ---- a task's time limit is its hutch run's own ----
mkdir -p "$set/t"
cp "$set/h/config.yaml" "$set/h/reward.py" "$set/t/"
sed -i 's|h/data|t/data|' "$set/t/config.yaml"
printf '%s\n' '{"id": "slow", "problem_statement": "T-HANG", "ground_truth": "x"}' >"$set/t/data.jsonl"
mock_start '{"tasks": [{"match": "T-HANG", "steps": [{"calls": [["execute_bash", {"command": "echo partial > /testbed/partial.txt"}]]}, {"hang": 60}]}]}'
start=$(date +%s)
tap_status 0 "a task whose model stops answering, with --task-timeout 5" \
  hb "$MOCK_URL" "$set" --task t --task-timeout 5 --output-dir "$tmp/out/slow"
took=$(($(date +%s) - start))
bench_dir
tap_is "$(lines '[(l["id"], l["error"], l.get("end"), l["exit_code"]) for l in ls]')" \
  "[('slow', 'Timeout', 'timeout', 124)]" "ends on its own at its limit (hutch run's --run-timeout: status 124)"
run=$OUT/$(lines 'ls[0].get("run_dir", "none")')
tap_is "$(json "$run/trajectory.json" '(d["hutch"]["limits"]["run_timeout"], d["hutch"]["end_reason"])' 2>/dev/null)" \
  "(5, 'time_limit')" "its trajectory records the limit and why it ended"
tap_is "$(cat "$run/files/partial.txt" 2>/dev/null)" "partial" "and its files are copied back"
tap_check $((took >= 50)) "without waiting for the model (${took}s)"

# ---- merge: a shard missing, a shard not finished ----
# One port for the shards' servers: their base URL is their configuration's.
MOCK_PORT=$(free_port)
export MOCK_PORT
mock_start "$hscript"
for k in 0 1; do
  tap_status 0 "shard $k of 3" hb "$MOCK_URL" "$set" --task h --shard "$k/3" --output-dir "$tmp/out/shards"
  bench_dir
  shard[k]=$OUT
done
tap_status 4 "a merge with a shard missing exits 4" \
  "$HUTCH_BIN" benchmark merge "${shard[0]}" "${shard[1]}" --output-dir "$tmp/out/merged"
tap_like "$tap_stderr" "shard 2 of 3 is missing" "naming it"
tap_like "$tap_stderr" "hint: .*--allow-partial" "and how to merge what there is"
tap_is "$(entries "$tmp/out/merged")" "0" "writing nothing"
tap_status 0 "--allow-partial merges the shards there are" \
  "$HUTCH_BIN" benchmark merge "${shard[0]}" "${shard[1]}" --output-dir "$tmp/out/merged" --allow-partial
bench_dir
tap_is "$(json "$OUT/benchmark.json" '(d["status"]["complete"], d["status"]["missing_shards"])' 2>/dev/null)" \
  "(False, [2])" "benchmark.json names the missing shard"
tap_like "$(cat "$OUT/summary.md")" "Partial: shard 2 of 3 missing" "so does summary.md"
tap_is "$(json "$OUT/results.json" '(d["total"], d.get("missing_shards"))')" "(3, [2])" \
  "and results.json, over the tasks it has"
mock_start '[{"status": 500, "error": "the server is gone", "repeat": 100}]'
tap_status 3 "shard 2 of 3 against a server that fails" \
  hb "$MOCK_URL" "$set" --task h --shard 2/3 --output-dir "$tmp/out/shards" --max-tries 1 --max-api-failures 1
bench_dir
shard[2]=$OUT
tap_status 4 "a merge with a shard that did not finish exits 4" \
  "$HUTCH_BIN" benchmark merge "${shard[@]}" --output-dir "$tmp/out/merged2"
tap_like "$tap_stderr" "shard 2 of 3 .*is incomplete" "naming it"
tap_is "$(entries "$tmp/out/merged2")" "0" "writing nothing"
tap_ok "nothing is left" leftovers

tap_done
