#!/bin/bash
# hutch benchmark's agent spawner (the process that forks each task's
# agent): killed in the middle of a run, it takes the run with it (no task
# is recorded as finished with an error it did not make, --resume runs the
# rest); and no agent's memory holds what another task's request held.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
IMAGE=$(hutch_test_rootfs debian) || tap_skip_all "debian test rootfs unavailable (tests/setup-host.sh)"
tmp=$(hutch_test_tmpdir)
export HUTCH_STATE_DIR=$tmp/state
mkdir -p "$HUTCH_STATE_DIR" "$tmp/set/s"

printf 'dataset: "json"\ndata_files: "s/data.jsonl"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
  >"$tmp/set/s/config.yaml"
printf 'def compute_score(a, g, **k):\n    return 1.0 if a == g else 0.0\n' >"$tmp/set/s/reward.py"
# Three tasks, one worker: the first answers, the second waits on the
# model (HANG), the third answers.
w() { printf '{"calls": [["execute_bash", {"command": "echo %s > /testbed/answer.txt"}]]}' "$1"; }
script() {
  printf '{"tasks": [{"match": "S-ONE", "steps": [%s]}, {"match": "S-TWO", "steps": [%s]}, {"match": "S-THREE", "steps": [%s]}]}' \
    "$(w 1)" "$1" "$(w 3)"
}
cat >"$tmp/set/s/data.jsonl" <<'JSONL'
{"id": "one", "problem_statement": "S-ONE", "ground_truth": "1"}
{"id": "two", "problem_statement": "S-TWO", "ground_truth": "2"}
{"id": "three", "problem_statement": "S-THREE", "ground_truth": "3"}
JSONL
hbench() {
  "$HUTCH_BIN" benchmark "$tmp/set" --task s --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" \
    --output-dir "$tmp/out" --retry-delay 0.05 --num-workers 1 "$@"
}
lines() { "$AGENT_PY" -c '
import json, sys
ls = [json.loads(l) for l in open(sys.argv[1])]
print(eval(sys.argv[2]))' "$OUT/results.jsonl" "$1"; }
leftovers() {
  local left
  for _ in $(seq 100); do
    left=
    [ -n "$("$HUTCH_BIN" ps 2>/dev/null | awk 'NR > 1')" ] && left+="an entry of hutch ps "
    grep -qF "$HUTCH_STATE_DIR" /proc/self/mountinfo && left+="a mount under the state directory "
    pgrep -f "$tmp/out" >/dev/null && left+="a process of this test's runs "
    [ -z "$left" ] && return 0
    sleep 0.1
  done
  echo "$left"
  return 1
}
child_named() { # PARENT COMM: the pid of PARENT's child named COMM
  local p
  for p in $(pgrep -P "$1"); do
    [ "$(cat /proc/"$p"/comm 2>/dev/null)" = "$2" ] && echo "$p" && return 0
  done
  return 1
}

# ---- the spawner killed (kill -9) while the second task's agent runs ----
mock_start "$(script '{"hang": 120}')"
(exec "$HUTCH_BIN" benchmark "$tmp/set" --task s --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" \
  --output-dir "$tmp/out" --retry-delay 0.05 --num-workers 1 >"$tmp/killed.out" 2>"$tmp/killed.err") &
runner=$!
for _ in $(seq 600); do
  grep -q S-TWO "$MOCK_REQUESTS" && break
  sleep 0.05
done
spawner=$(child_named "$runner" hutch-spawner)
tap_ok "the runner's child hutch-spawner is there while the second task runs" test -n "$spawner"
kill -9 "${spawner:-0}"
timeout 120 tail --pid="$runner" -f /dev/null
wait "$runner"
rc=$?
OUT=$(tail -n 1 "$tmp/killed.out")
tap_check $((rc == 0)) "the run stops with an error (status $rc)"
tap_like "$(cat "$tmp/killed.err")" "agent spawner.*--resume" "and says the agent spawner ended, and to go on with --resume"
tap_is "$(lines 'sorted(l["id"] for l in ls)')" "['one']" \
  "only the task that finished is recorded (the others are not failures of theirs)"
tap_ok "nothing is left after the spawner's kill -9" leftovers
mock_start "$(script "$(w 2)")"
tap_status 0 "--resume runs the other two" "$HUTCH_BIN" benchmark --resume "$OUT" --base-url "$MOCK_URL" \
  --model mock --rootfs "$IMAGE" --retry-delay 0.05
tap_is "$(lines 'sorted((l["id"], l["score"], l["error"]) for l in ls)')" \
  "[('one', 1, None), ('three', 1, None), ('two', 1, None)]" "and every task is scored"

tap_done
