#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch benchmark's workers share one LLM client policy: at most
# --max-inflight requests in flight across all of them, a 429 told to one
# holds them all back, and a worker killed mid-request frees its place.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
IMAGE=$(hutch_test_rootfs debian) || tap_skip_all "debian test rootfs unavailable (tests/setup-host.sh)"
tmp=$(hutch_test_tmpdir)
export HUTCH_STATE_DIR=$tmp/state
mkdir -p "$HUTCH_STATE_DIR" "$tmp/set/g"

# Twelve tasks of two model calls each; SCRIPT_HANG seconds per answer.
make_set() {
  "$AGENT_PY" - "$tmp" "$1" <<'PY'
import json, sys
tmp, hang = sys.argv[1], float(sys.argv[2])
rows, tasks = [], []
for i in range(12):
    rows.append({"id": "g%02d" % i, "problem_statement": "GATE-%02d: say %d" % (i, i), "ground_truth": str(i)})
    tasks.append({"match": "GATE-%02d:" % i, "steps": [
        {"hang": hang, "calls": [["execute_bash", {"command": "echo %d > /testbed/answer.txt" % i}]]},
        {"hang": hang, "calls": [["submit", {}]]}]})
json.dump(rows, open(tmp + "/set/g/data.json", "w"))
json.dump({"tasks": tasks}, open(tmp + "/script.json", "w"))
PY
}
printf 'dataset: "json"\ndata_files: "g/data.json"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
  >"$tmp/set/g/config.yaml"
printf 'def compute_score(a, g, **k):\n    return 1.0 if a == g else 0.0\n' >"$tmp/set/g/reward.py"
hbench() {
  "$HUTCH_BIN" benchmark "$tmp/set" --task g --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" \
    --output-dir "$tmp/out" "$@"
}
score() {
  local out
  out=$(printf '%s\n' "$tap_stdout" | tail -n 1)
  "$AGENT_PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["total"], float(d["mean_score"]), d["num_errors"])' \
    "$out/results.json"
}
reqs() {
  "$AGENT_PY" -c '
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(eval(sys.argv[2]))' "$MOCK_REQUESTS" "$1"
}

# ---- the cap on requests in flight, across workers ----
make_set 0.3
mock_start "$(cat "$tmp/script.json")"
tap_status 0 "4 workers, --max-inflight 2" hbench --num-workers 4 --max-inflight 2
tap_is "$(score)" "12 1.0 0" "every task done"
tap_is "$(reqs 'max(r["inflight"] for r in rs)')" "2" "never more than 2 requests at the server at once"
mock_start "$(cat "$tmp/script.json")"
tap_status 0 "4 workers, the default cap (one per worker)" hbench --num-workers 4
tap_check "$(($(reqs 'max(r["inflight"] for r in rs)') < 3))" "more requests at once without the lower cap"
tap_status 2 "--max-inflight 0 is refused" hbench --max-inflight 0

# ---- a 429 to one worker holds back every worker ----
make_set 0
script=$("$AGENT_PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
d["first"] = [{"status": 429, "retry_after": "2", "error": "slow down"}]
print(json.dumps(d))' "$tmp/script.json")
mock_start "$script"
tap_status 0 "4 workers, the server's first answer is 429 with Retry-After: 2" \
  hbench --num-workers 4 --retry-delay 0.05
tap_is "$(score)" "12 1.0 0" "every task done"
# Requests already on their way when the 429 was given arrive just after it
# (within a second, even in a slow sanitizer build on a loaded machine);
# after that, none until the 2 seconds it asked for are over.
tap_is "$(reqs '[round(r["time"] - rs[0]["time"], 1) for r in rs[1:] if 1.0 < r["time"] - rs[0]["time"] < 1.8]')" "[]" \
  "no worker sends a request while the backoff holds"
tap_check "$(reqs 'int(rs[-1]["time"] - rs[0]["time"] < 1.8)')" "the run went on after it"

# ---- a worker killed with its request out frees its place ----
script=$("$AGENT_PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
d["tasks"][0]["steps"][0] = {"hang": 120}
print(json.dumps(d))' "$tmp/script.json")
mock_start "$script"
start=$(date +%s)
tap_status 0 "--max-inflight 1, the only request in flight never answered" \
  hbench --num-workers 2 --max-inflight 1 --task-timeout 10 --retry-delay 0.05
out=$(printf '%s\n' "$tap_stdout" | tail -n 1)
# The task beside it may have waited out its own time limit for the place.
tap_is "$("$AGENT_PY" -c '
import json, sys
ls = [json.loads(l) for l in open(sys.argv[1])]
print([l["error"] for l in ls if l["id"] == "g00"], len(ls), sum(l["score"] for l in ls) >= 10)' "$out/results.jsonl")" \
  "['Timeout'] 12 True" "its task ends at --task-timeout; the others get the place it held"
tap_check $(($(date +%s) - start >= 60)) "and the run ends ($(($(date +%s) - start)) s)"

# ---- and so does one killed with SIGKILL ----
mock_start "$script"
start=$(date +%s)
(hbench --num-workers 2 --max-inflight 1 --retry-delay 0.05 --task-timeout 100 --output-dir "$tmp/out-kill" >"$tmp/kill.out" 2>&1) &
bg=$!
for _ in $(seq 400); do
  grep -q "GATE-00" "$MOCK_REQUESTS" 2>/dev/null && break
  sleep 0.05
done
# The hutch run of g00 (hutch-agent, which holds the place) and nothing else:
# the process named hutch-agent (a fork of the agent spawner, whose command
# line it keeps) that writes g00's log.
victims=$(for p in $(pgrep -x hutch-agent); do
  case $(readlink "/proc/$p/fd/2") in "$tmp"/out-kill/*/logs/g00.txt) echo "$p" ;; esac
done)
tap_ok "the worker holding the only place is found" test -n "$victims"
# shellcheck disable=SC2086 # one pid a word
kill -KILL $victims
wait "$bg"
tap_is "$?" "125" "the run ends, incomplete (status 125): the killed task did not finish"
out=$(tail -n 1 "$tmp/kill.out")
tap_is "$("$AGENT_PY" -c '
import json, sys
ls = [json.loads(l) for l in open(sys.argv[1])]
print(sorted((l["id"], l["end"]) for l in ls if l["score"] != 1), len(ls))' "$out/results.jsonl")" "[('g00', 'infra_error')] 12" \
  "every other task had its turn; the killed one's record says hutch failed it"
tap_check $(($(date +%s) - start >= 60)) "at once, not at a time limit ($(($(date +%s) - start)) s)"

tap_done
