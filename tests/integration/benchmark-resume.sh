#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch benchmark --resume DIR alone goes on with what DIR's benchmark.json
# recorded (the model, the server's address, the task set and its range,
# the options, never the API key); an option given again must be the same
# (but those that may change: the server's address, the workers, retries),
# and a mismatch is a usage error that names the option and both values.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
IMAGE=$(hutch_test_rootfs debian) || tap_skip_all "debian test rootfs unavailable (tests/setup-host.sh)"
tmp=$(hutch_test_tmpdir)
json() { "$AGENT_PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

set_dir=$tmp/set
mkdir -p "$set_dir/r"
printf 'dataset: "json"\ndata_files: "r/data.jsonl"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
  >"$set_dir/r/config.yaml"
for t in one two three; do
  printf '{"id": "%s", "problem_statement": "TASK-%s", "ground_truth": "%s"}\n' "$t" "$t" "$t"
done >"$set_dir/r/data.jsonl"
printf 'def compute_score(answer, truth, **row):\n    return 1.0 if answer.strip() == truth else 0.0\n' \
  >"$set_dir/r/reward.py"
steps() { # the steps of task $1: write its answer, submit
  printf '{"match": "TASK-%s", "steps": [{"calls": [["execute_bash", {"command": "echo %s > /testbed/answer.txt"}]]}, {"calls": [["submit", {}]]}]}' "$1" "$1"
}
# The first request of all fails (500, one try): that task is not finished.
mock_start "{\"first\": [{\"status\": 500}], \"tasks\": [$(steps one), $(steps two), $(steps three)]}"

tap_status 3 "a run whose first task the model's API fails" "$HUTCH_BIN" benchmark "$set_dir" --task r --model mock \
  --base-url "$MOCK_URL" --api-key secret-key --rootfs "$IMAGE" --max-steps 7 --task-timeout 300 --end-id 2 \
  --max-tries 1 --retry-delay 0.05 --output-dir "$tmp/out"
OUT=$(ls -d "$tmp"/out/*/ | head -n 1)
OUT=${OUT%/}
tap_is "$(json "$OUT/benchmark.json" 'sorted(o.split("=")[0] for o in d["options"])')" \
  "['--base-url', '--max-steps', '--max-tries', '--model', '--retry-delay', '--rootfs', '--task-timeout']" \
  "benchmark.json records the options"
tap_is "$(json "$OUT/benchmark.json" '[o for o in d["options"] if o.startswith(("--model", "--max-steps", "--task-timeout"))]')" \
  "['--task-timeout=300', '--model=mock', '--max-steps=7']" "with their values"
tap_unlike "$(cat "$OUT/benchmark.json")" "secret-key" "but not the API key"

# ---- a mismatch names the option ----
n_before=$(mock_count)
tap_status 2 "--resume with another --max-steps is a usage error" "$HUTCH_BIN" benchmark --resume "$OUT" --max-steps 9
tap_like "$tap_stderr" "--max-steps: the run began with '7'; this command gives '9'" "naming the option and both values"
tap_status 2 "--resume with another --model" "$HUTCH_BIN" benchmark --resume "$OUT" --model other
tap_like "$tap_stderr" "--model: the run began with 'mock'; this command gives 'other'" "names --model"
tap_status 2 "--resume with LLM-in-Sandbox's spelling of another model" "$HUTCH_BIN" benchmark --resume "$OUT" --llm_name other
tap_like "$tap_stderr" "--model: the run began with 'mock'" "names it by hutch's spelling"
tap_status 2 "--resume with an option the run began without" "$HUTCH_BIN" benchmark --resume "$OUT" --tool-timeout 30
tap_like "$tap_stderr" "--tool-timeout: the run began without it" "says the run began without it"
tap_status 2 "--resume with another --task-timeout" "$HUTCH_BIN" benchmark --resume "$OUT" --task-timeout 60
tap_like "$tap_stderr" "--task-timeout: the run began with '300'" "names hutch benchmark's own options too"
tap_status 2 "--resume with another --end-id" "$HUTCH_BIN" benchmark --resume "$OUT" --end-id 3
tap_like "$tap_stderr" "--end-id: the run began with 2" "and the range"
tap_status 2 "--resume with another --task" "$HUTCH_BIN" benchmark --resume "$OUT" --task other
tap_like "$tap_stderr" "--task: the run began with 'r'" "and the task"
tap_is "$(mock_count)" "$n_before" "no mismatch asked the model anything"

# ---- --resume DIR alone ----
tap_status 0 "--resume DIR alone goes on with what the run recorded" "$HUTCH_BIN" benchmark --resume "$OUT"
tap_is "$(json "$OUT/results.json" '(d["total"], float(d["mean_score"]), d["num_errors"])')" "(2, 1.0, 0)" \
  "both tasks of its range finish (--end-id 2 kept: not the third)"
tap_like "$(mock_request "$n_before" 'r["body"]["messages"][1]["content"]')" "^TASK-one" \
  "the unfinished task ran, at the recorded server's address"
tap_is "$(mock_request "$n_before" '(r["body"]["model"], r["authorization"])')" "('mock', 'Bearer sk-placeholder')" \
  "with the recorded model, and not the first command's key"
traj=$OUT/$("$AGENT_PY" -c 'import json, sys
print([l for l in map(json.loads, open(sys.argv[1])) if l["id"] == "one"][0]["run_dir"])' "$OUT/results.jsonl")/trajectory.json
tap_is "$(json "$traj" 'd["hutch"]["limits"]["max_steps"]')" "7" "with the recorded --max-steps"

# Options that may change: given, they win without complaint.
tap_status 0 "--resume with another --num-workers and --retry-delay" "$HUTCH_BIN" benchmark --resume "$OUT" \
  --num-workers 2 --retry-delay 0.1 --base-url "$MOCK_URL"
tap_status 0 "--resume with the recorded values given again" "$HUTCH_BIN" benchmark --resume "$OUT" --model mock \
  --max-steps 7 --rootfs "$IMAGE"

tap_status 2 "--resume of a directory that is no run" "$HUTCH_BIN" benchmark --resume "$tmp"
tap_like "$tap_stderr" "no benchmark.json there: not a run directory of hutch benchmark" "says so"

# ---- a benchmark.json that is not the user's alone, or edited ----
cp -a "$OUT" "$tmp/shared"
chmod g+w "$tmp/shared/benchmark.json"
"$HUTCH_BIN" benchmark --resume "$tmp/shared" >/dev/null 2>"$tmp/shared.err"
tap_like "$(cat "$tmp/shared.err")" "benchmark.json is not yours alone.*not used" \
  "a benchmark.json others may write: its options are not taken"
cp -a "$OUT" "$tmp/edited"
"$AGENT_PY" -c 'import json, sys
p = sys.argv[1]; d = json.load(open(p)); d["options"].append("--run-timeout=1"); json.dump(d, open(p, "w"))' \
  "$tmp/edited/benchmark.json"
tap_status 2 "a recorded option hutch benchmark does not take is refused" "$HUTCH_BIN" benchmark --resume "$tmp/edited"
tap_like "$tap_stderr" "does not take there: --run-timeout" "naming it"
tap_done
