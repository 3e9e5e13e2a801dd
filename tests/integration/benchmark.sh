#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch benchmark: LLM-in-Sandbox's task folders run unchanged, one hutch run
# per task in a sandbox of its own, answers scored by reward.py in another
# sandbox (no network, no host files, bounded), LIS's output layout, a
# results.jsonl that survives kill -9, --resume, and nothing left behind.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
# python3 in the image: the tasks and compute_score use it.
IMAGE=$(hutch_test_rootfs debian) || tap_skip_all "debian test rootfs unavailable (tests/setup-host.sh)"
tmp=$(hutch_test_tmpdir)
state=$tmp/state
mkdir -p "$state"
export HUTCH_STATE_DIR=$state

# hbench ARGS...: hutch benchmark against the mock, output under $tmp/out.
hbench() {
  ${BENCH_EXEC:-} "$HUTCH_BIN" benchmark --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" \
    --output-dir "$tmp/out" --retry-delay 0.05 "$@"
}
# After tap_status of hbench: the run directory it printed last.
bench_dir() { OUT=$(printf '%s\n' "$tap_stdout" | tail -n 1); }
json() { "$AGENT_PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
. "$HUTCH_SRCDIR/tests/lib/bench.sh"

# ---- the demo task set, four at a time ----
mock_start "$(cat "$HUTCH_SRCDIR/examples/tasks/demo/mock-replies.json")"
# The CPU time of this shell's reaped children (bash's times, second line;
# run here, not in a command substitution's subshell), in seconds: around
# the run, the whole hutch benchmark tree's.
times >"$tmp/times0"
tap_status 0 "the demo task set runs against the scripted model, 4 workers" \
  hbench "$HUTCH_SRCDIR/examples/tasks" --task demo --num-workers 4
times >"$tmp/times1"
tree_cpu=$("$AGENT_PY" -c 'import re, sys
def cpu(path):
    return sum(int(m) * 60 + float(x) for m, x in re.findall(r"(\d+)m([\d.]+)s", open(path).read().splitlines()[1]))
print(round(cpu(sys.argv[2]) - cpu(sys.argv[1]), 3))' "$tmp/times0" "$tmp/times1")
bench_dir
tap_like "$OUT" "/[0-9]{8}_[0-9]{6}_demo_openai_mock_LLMinSandbox$" \
  "the run directory is named as LLM-in-Sandbox names it"
tap_is "$(json "$OUT/results.json" '(d["task"], d["total"], float(d["mean_score"]), d["num_errors"])')" \
  "('demo', 20, 0.95, 0)" "results.json: 20 tasks, mean 0.95 (the scripted model gets demo_017 wrong), no error"
tap_is "$(json "$OUT/results.json" 'sorted(d["config"])')" \
  "['docker_image', 'extra_body', 'llm_base_url', 'llm_name', 'max_response_len', 'max_steps', 'max_token_limit', 'max_tokens_per_call', 'mode', 'save_litellm_response', 'temperature']" \
  "results.json's config has LLM-in-Sandbox's keys"
tap_is "$(json "$OUT/results.json" '(d["config"]["llm_name"], d["config"]["mode"], "elapsed_time_seconds" in d)')" \
  "('openai/mock', 'llm-in-sandbox', True)" "llm_name as LLM-in-Sandbox records it, the mode, the time"
tap_is "$(json "$OUT/trajectory.json" '(len(d), sorted(d["demo_006"]), float(d["demo_006"]["reward"]), d["demo_006"]["agent_answer"])')" \
  "(20, ['agent_answer', 'ground_truth', 'problem_statement', 'reward', 'trajectory'], 1.0, '42')" \
  "trajectory.json: each task's answer, reward, ground truth and problem"
tap_like "$(json "$OUT/trajectory.json" 'd["demo_006"]["trajectory"][1]["observation"]')" "42" \
  "and its steps, with what the tools answered (the input file was in /testbed/documents)"
tap_is "$(lines 'len(ls), len(set(l["id"] for l in ls))')" "(20, 20)" "results.jsonl: one line per task"
tap_is "$(lines 'sorted(set(k for l in ls for k in l["timings"]))')" \
  "['agent_cpu', 'copy_back', 'cpu', 'input_copy', 'model', 'own', 'reward', 'reward_cpu', 'runner', 'sandbox', 'start', 'teardown', 'tools']" \
  "results.jsonl: each task's timings, by phase and CPU"
tap_is "$(lines 'sum(0 < l["timings"]["agent_cpu"] < l["timings"]["cpu"] for l in ls)')" "20" \
  "each task's CPU time is more than its agent's (the scoring sandbox's is added)"
# A task's CPU counts its agent's sandbox and tools and its scoring (each
# reaped by a process of the task, but the scoring: the driver's process
# for the answer, which nobody reaps, reward_cpu): together most of the
# tree's, of which the rest is the runner's and the spawner's own and the
# slots' scoring sandboxes' starts; never more.
tap_like "$(lines 'round(sum(l["timings"]["cpu"] - l["timings"]["reward_cpu"] for l in ls) / '"$tree_cpu"', 2)')" '^(0\.[5-9][0-9]?|1\.0)$' \
  "the tasks' CPU times add up to most of the run's (${tree_cpu} s), not more"
tap_like "$(cat "$OUT/logs/demo_017.txt")" $'### Result ###\nProblem ID: demo_017\nAgent Answer: 7\nGround Truth: 12\nScore: 0.0000' \
  "logs/ID.txt ends with LLM-in-Sandbox's result block"
tap_is "$(lines '[l["score"] for l in ls if l["id"] in ("demo_019", "demo_020")]')" "[1, 1]" \
  "the coding tasks' functions ran against their tests in the scoring sandbox"
tap_ok "nothing is left: no sandbox, state, mount or process" leftovers
# Every task leaves an audit log of its agent's sandbox, each worker slot
# one of its scoring sandbox (4 workers: 4 slots, each started once), and
# hutch audit verifies each.
audits_verify() {
  local d a n=0 m=0
  for d in "$OUT"/runs/*/; do
    a=$(find "$d" -mindepth 2 -maxdepth 2 -name audit.jsonl | head -n 1)
    [ -n "$a" ] || { echo "missing in $d"; return 1; }
    "$HUTCH_BIN" audit --quiet "$a" >/dev/null || { echo "not verified: $a"; return 1; }
    n=$((n + 1))
  done
  for a in "$OUT"/runs/.reward-*-*.audit.jsonl; do
    "$HUTCH_BIN" audit --quiet "$a" >/dev/null || { echo "not verified: $a"; return 1; }
    grep -q '"read_only_root":true' "$a" || { echo "not read-only: $a"; return 1; }
    m=$((m + 1))
  done
  echo "$n agents, $m scoring sandboxes"
  [ "$n" -ge 20 ] && [ "$m" -eq 4 ]
}
tap_ok "every task's agent and every slot's scoring sandbox leave audit logs that hutch audit verifies" audits_verify
tap_is "$(lines 'sorted(set(l["timings"]["reward_cpu"] > 0 for l in ls))')" "[True]" \
  "every task was scored by its slot's scoring sandbox (reward_cpu)"
SINGLE=$OUT
# report.html: tests/integration/report.sh.

# ---- the LLM judge (LLM-in-Sandbox's judge.py) ----
mock_start '{"tasks": [{"match": "CANDIDATE ANSWER TO ASSESS: Paris", "steps": [{"content": "<think>INCORRECT?</think> CORRECT"}]},
  {"match": "CANDIDATE ANSWER TO ASSESS: 5\n", "steps": [{"content": "INCORRECT"}]}]}'
tap_status 0 "hutch benchmark judge scores a run's trajectory.json with a judge model" \
  "$HUTCH_BIN" benchmark judge --input "$SINGLE/trajectory.json" --judge_model judge \
  --judge_base_url "$MOCK_URL" --num_repeats 3 --num_workers 4
tap_is "$(printf '%s\n' "$tap_stdout" | tail -n 1)" "$SINGLE/trajectory_judged.json" "into trajectory_judged.json beside it"
tap_is "$(json "$SINGLE/trajectory_judged.json" '(d["judge_model"], d["num_repeats"], d["stats"]["num_problems"], d["stats"]["total_judgments"], d["stats"]["correct"], d["stats"]["incorrect"])')" \
  "('openai/judge', 3, 20, 60, 1, 1)" "each answer judged 3 times; the last verdict of a reply counts"
tap_is "$(json "$SINGLE/trajectory_judged.json" '(d["results"]["demo_018"]["verdict"], d["results"]["demo_018"]["individual_verdicts"], d["results"]["demo_001"]["score"])')" \
  "('CORRECT', ['CORRECT', 'CORRECT', 'CORRECT'], 0)" "majority verdict, mean score, per answer"
tap_is "$(mock_request 0 '(r["body"]["model"], r["body"]["temperature"], r["body"]["max_tokens"], len(r["body"]["messages"]))')" \
  "('judge', 0.7, 16384, 1)" "LLM-in-Sandbox's judge request: temperature 0.7, max_tokens 16384, one message"

# ---- shards (--shard K/N, Slurm's job array variables) and merge ----
mock_start "$(cat "$HUTCH_SRCDIR/examples/tasks/demo/mock-replies.json")"
shard_dirs=()
for k in 0 1 2; do
  if [ $k = 1 ]; then
    tap_status 0 "shard 1 of 3 from SLURM_ARRAY_TASK_ID and SLURM_ARRAY_TASK_COUNT" \
      env SLURM_ARRAY_TASK_ID=5 SLURM_ARRAY_TASK_MIN=4 SLURM_ARRAY_TASK_COUNT=3 \
      "$HUTCH_BIN" benchmark "$HUTCH_SRCDIR/examples/tasks" --task demo --base-url "$MOCK_URL" --model mock \
      --rootfs "$IMAGE" --output-dir "$tmp/shards" --retry-delay 0.05 --num-workers 2
  else
    tap_status 0 "shard $k of 3 with --shard $k/3" \
      "$HUTCH_BIN" benchmark "$HUTCH_SRCDIR/examples/tasks" --task demo --base-url "$MOCK_URL" --model mock \
      --rootfs "$IMAGE" --output-dir "$tmp/shards" --retry-delay 0.05 --num-workers 2 --shard $k/3
  fi
  bench_dir
  tap_like "$OUT" "_LLMinSandbox_shard${k}of3$" "shard $k writes a run directory of its own"
  shard_dirs+=("$OUT")
done
tap_is "$(for d in "${shard_dirs[@]}"; do json "$d/results.json" 'd["total"]'; done | tr '\n' ' ')" "7 7 6 " \
  "each shard runs every third task"
tap_status 0 "hutch benchmark merge combines them" "$HUTCH_BIN" benchmark merge "${shard_dirs[@]}" --output-dir "$tmp/merged"
bench_dir
tap_is "$(json "$OUT/results.json" '(d["total"], float(d["mean_score"]), d["num_errors"], all(d["config"][k] == v for k, v in json.load(open(sys.argv[3]))["config"].items() if k != "llm_base_url"))' "$SINGLE/results.json")" \
  "(20, 0.95, 0, True)" "the merged results.json is the single machine's (the mock server's port apart)"
tap_is "$(json "$OUT/trajectory.json" 'sorted((k, v["reward"], v["agent_answer"], len(v["trajectory"])) for k, v in d.items()) == sorted((k, v["reward"], v["agent_answer"], len(v["trajectory"])) for k, v in json.load(open(sys.argv[3])).items())' "$SINGLE/trajectory.json")" \
  "True" "and so is its trajectory.json"
tap_like "$(cat "$OUT/logs/demo_017.txt")" "Ground Truth: 12" "with each task's log"
tap_status 2 "a shard given twice is refused" "$HUTCH_BIN" benchmark merge "${shard_dirs[0]}" "${shard_dirs[0]}" \
  --output-dir "$tmp/merged"
tap_status 0 "a shard run with other settings" \
  "$HUTCH_BIN" benchmark "$HUTCH_SRCDIR/examples/tasks" --task demo --base-url "$MOCK_URL" --model mock \
  --rootfs "$IMAGE" --output-dir "$tmp/shards" --retry-delay 0.05 --shard 2/3 --max-steps 7
bench_dir
tap_status 2 "is not merged with the others" "$HUTCH_BIN" benchmark merge "${shard_dirs[0]}" "${shard_dirs[1]}" "$OUT" \
  --output-dir "$tmp/merged"
tap_like "$tap_stderr" "another task set or configuration" "and the message says why"
tap_status 2 "--shard 3/3 is refused" hbench "$HUTCH_SRCDIR/examples/tasks" --task demo --shard 3/3

# ---- --mode llm: LLM-in-Sandbox's vanilla mode on the same tasks ----
vanilla=$("$AGENT_PY" - "$HUTCH_SRCDIR/examples/tasks/demo/data.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
# The reply is the answer; the model gets the two coding tasks wrong.
say = lambda r: r["ground_truth"] if r["kind"] != "code" else "def nothing(): pass"
print(json.dumps({"tasks": [{"match": r["problem_statement"], "steps": [{"content": say(r)}]} for r in rows]}))
PY
)
mock_start "$vanilla"
tap_status 0 "--mode llm: one completion per task, no sandbox" \
  hbench "$HUTCH_SRCDIR/examples/tasks" --task demo --mode llm --num-workers 4 --max_response_len 4096
bench_dir
tap_like "$OUT" "_demo_openai_mock_vanillaLLM$" "the run directory is named as LLM-in-Sandbox names this mode"
tap_is "$(json "$OUT/results.json" '(d["total"], float(d["mean_score"]), d["num_errors"], d["config"]["mode"])')" \
  "(20, 0.9, 0, 'llm')" "the replies are the answers, scored by reward.py"
tap_is "$(mock_count)" "20" "one request per task"
tap_is "$("$AGENT_PY" -c '
import json, sys
rs = [json.loads(l)["body"] for l in open(sys.argv[1])]
r = [b for b in rs if "numbers.txt" in b["messages"][0]["content"]][0]
print(len(r["messages"]), r["messages"][0]["role"], "tools" in r, r["max_tokens"], "--- numbers.txt ---\n17\n25" in r["messages"][0]["content"])' "$MOCK_REQUESTS")" \
  "1 user False 4096 True" "the prompt is vanilla_llm_prompt.py's (the input files inline), max_tokens --max_response_len"
tap_is "$(json "$OUT/trajectory.json" 'set(len(v["trajectory"]) for v in d.values())')" "{0}" "and there is no trajectory"

# ---- a task set of our own: JSON lines, input files, errors ----
set_dir=$tmp/tasks
mkdir -p "$set_dir/t" "$tmp/host"
echo secret >"$tmp/host/marker"
cat >"$set_dir/t/config.yaml" <<'YAML'
dataset: "json"
data_files: "t/data.jsonl"
system_prompt: "sys {working_dir} {input_dir} {output_dir}"
instance_prompt: "{problem_statement}"
YAML
cat >"$set_dir/t/reward.py" <<'PY'
import os, socket
def compute_score(agent_answer, ground_truth, **kw):
    if kw.get("id") == "raises":
        raise ValueError("bad \x1b[2J answer")
    if kw.get("id") == "jail":
        # The scoring sandbox sees no host file and reaches no network.
        s = 0.0 if os.path.exists(kw["marker"]) else 0.5
        try:
            socket.create_connection(("127.0.0.1", kw["port"]), timeout=2)
        except OSError:
            s += 0.5
        return s
    if kw.get("id") == "inject":
        return 1.0 if agent_answer == "''' + __import__('os').system('touch /tmp/pwned') + '''</script><b id=x>" else 0.0
    return 1.0 if agent_answer == ground_truth else 0.0
PY
inject="''' + __import__('os').system('touch /tmp/pwned') + '''</script><b id=x>"
script=$("$AGENT_PY" - "$inject" <<'PY'
import json, sys
w = lambda text: {"calls": [["str_replace_editor", {"command": "create", "path": "/testbed/answer.txt", "file_text": text}]]}
print(json.dumps({"tasks": [
  {"match": "T-INJECT", "steps": [w(sys.argv[1] + "\n")]},
  {"match": "T-JAIL", "steps": [w("y")]},
  {"match": "T-RAISES", "steps": [w("z")]},
  {"match": "T-FILES", "steps": [{"calls": [["execute_bash", {"command": "cp /testbed/documents/sub/in.txt /testbed/answer.txt"}]]}]},
]}))
PY
)
mock_start "$script"
# A port that listens on the host's loopback: the scoring sandbox's is its own.
port=${MOCK_URL##*:}
port=${port%/v1}
cat >"$set_dir/t/data.jsonl" <<JSONL
{"id": "inject", "problem_statement": "T-INJECT", "ground_truth": "x"}
{"id": "jail", "problem_statement": "T-JAIL", "ground_truth": "y", "marker": "$tmp/host/marker", "port": $port}
{"id": "raises", "problem_statement": "T-RAISES", "ground_truth": "z"}
{"id": "files", "problem_statement": "T-FILES", "ground_truth": "abc", "input_files": {"sub/in.txt": "abc"}}
JSONL
tap_status 0 "a task set in JSON lines, with a reward that fails for one task" \
  hbench "$set_dir" --task t --num-workers 2
bench_dir
own_err=$tap_stderr
tap_is "$(lines 'sorted((l["id"], l["score"]) for l in ls)')" "[('files', 1), ('inject', 1), ('jail', 1), ('raises', 0)]" \
  "scores: the answer is data to reward.py, the scoring sandbox has no host file and no network"
tap_ok "the answer was never run as code" test ! -e /tmp/pwned
tap_like "$(lines '[l["error"] for l in ls if l["id"] == "raises"][0]')" "^reward: ValueError: bad .\[2J answer" \
  "a failing compute_score is that task's error"
tap_like "$own_err" 'raises  score 0\.0000  scoring_error  .* s: reward: ValueError: bad \\x1b\[2J answer' \
  "its progress line escapes what it quotes"
tap_unlike "$own_err" $'\x1b' "no escape sequence reaches the terminal"
tap_like "$(cat "$OUT/logs/raises.txt")" 'ERROR: bad \\x1b\[2J answer' \
  "nor through the task's log, which shows it escaped"
tap_unlike "$(cat "$OUT/logs/raises.txt")" $'\x1b' "(no escape character in it)"
tap_like "$(cat "$OUT/summary.md")" $'\n\\| 4 \\| 0.7500 \\| 1 \\| [0-9.]+ s \\|\n.*\\| ` raises ` \\| 0.0000 \\| [0-9.]+ s \\| ` reward: ValueError' \
  "summary.md: the run and each task at a glance"
tap_is "$(json "$OUT/results.json" '(d["total"], d["num_errors"])')" "(4, 1)" "and only that task's"
tap_is "$(mock_request 0 'r["body"]["messages"][0]["content"]')" "sys /testbed /testbed/documents /testbed" \
  "the directories are LLM-in-Sandbox's benchmark ones"

# ---- the reward's time is bounded; an import it lacks stops the run first ----
cat >"$set_dir/t/reward.py" <<'PY'
def compute_score(agent_answer, ground_truth, **kw):
    if kw.get("id") == "raises":
        while True:
            pass
    return 1.0
PY
mock_start "$script"
start=$(date +%s)
tap_status 0 "a compute_score that never returns" \
  hbench "$set_dir" --task t --reward-timeout 2 --start-id 2 --end-id 4 --num-workers 1
took=$(($(date +%s) - start))
bench_dir
tap_like "$(lines 'ls[0]["error"]')" "took longer than 2 s" "is stopped at --reward-timeout, as that task's error"
tap_check $((took >= 30)) "without holding up the run (${took}s)"
tap_is "$(lines '[l["id"] for l in ls]')" "['raises', 'files']" "--start-id and --end-id choose the tasks"
# The slot's scoring sandbox was stopped with the request; the next task of
# the slot is scored in a new one.
tap_is "$(lines '[(l["score"], l["error"]) for l in ls if l["id"] == "files"]')" "[(1, None)]" \
  "the slot's next task is scored"
tap_is "$(cd "$OUT/runs" && ls .reward-[0-9]*.audit.jsonl | tr '\n' ' ')" ".reward-0-0.audit.jsonl .reward-0-1.audit.jsonl " \
  "by the slot's second scoring sandbox"
mock_start "$script"
printf 'import no_such_module_here\ndef compute_score(a, g, **k):\n    return 1.0\n' >"$set_dir/t/reward.py"
tap_status 125 "a reward.py whose import fails stops the run before any task" hbench "$set_dir" --task t
tap_like "$tap_stderr" "ModuleNotFoundError.*no_such_module_here" "and says which module"
tap_is "$(mock_count)" "0" "no task ran"

# ---- the score cannot be forged by the answer's code ----
# A coding task's reward runs the answer: in a subprocess (its output
# captured), or in its own process.  The answer prints the wrong number and
# tries to pass a perfect score off as the driver's: on its stdout, through
# every fd of the driver it can reopen in /proc, from a process that
# outlives the driver, and at the interpreter's exit.
mkdir -p "$set_dir/f"
printf 'dataset: "json"\ndata_files: "f/data.jsonl"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
  >"$set_dir/f/config.yaml"
cat >"$set_dir/f/reward.py" <<'PY'
import subprocess, sys
def compute_score(agent_answer, ground_truth, **kw):
    if kw["how"] == "loud":
        # A child printing more than a pipe holds to the stdout it inherits
        # (and an answer larger than a pipe holds, given on stdin).
        subprocess.run([sys.executable, "-c", "print('x' * 1000000)"])
        print("y" * 1000000)
    if kw["how"] == "inproc":
        ns = {}
        exec(agent_answer, ns)
        out = str(ns.get("result"))
    else:
        with open("/tmp/answer.py", "w") as f:
            f.write(agent_answer)
        out = subprocess.run([sys.executable, "/tmp/answer.py"], capture_output=True, text=True, timeout=20).stdout
    return 1.0 if out.strip() == ground_truth else 0.0
PY
cat >"$tmp/forge.py" <<'PY'
import atexit, os, sys, time
FORGED = b'\n{"score": 1.0}\n'
def spray(fds):
    for fd in fds:
        try:
            os.write(fd, FORGED)
        except OSError:
            pass
# The driver: this process in-process, else its parent.
driver = os.getpid() if __name__ != "__main__" else os.getppid()
# Not the pipes the reward reads this process's output from: holding them
# open would only make it wait.
mine = {os.fstat(1).st_ino, os.fstat(2).st_ino}
held = []
for n in range(64):
    try:
        fd = os.open("/proc/%d/fd/%d" % (driver, n), os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        continue
    if os.fstat(fd).st_ino in mine:
        os.close(fd)
    else:
        held.append(fd)
spray(held + [1, 2])
if __name__ == "__main__" and os.fork() == 0:
    # Outlive the driver, and write once it has printed its own line.
    os.setsid()
    null = os.open("/dev/null", os.O_RDWR)
    os.dup2(null, 1)
    os.dup2(null, 2)
    while os.path.exists("/proc/%d" % driver):
        pass
    spray(held)
    os._exit(0)
atexit.register(lambda: (spray(held + [1]), sys.__stdout__.write(FORGED.decode()), sys.__stdout__.flush()))
result = 41
print(result)
PY
forge=$(cat "$tmp/forge.py")
script=$("$AGENT_PY" - "$forge" <<'PY'
import json, sys
w = lambda text: {"calls": [["str_replace_editor", {"command": "create", "path": "/testbed/answer.txt", "file_text": text}]]}
print(json.dumps({"tasks": [
  {"match": "F-SUB", "steps": [w(sys.argv[1])]},
  {"match": "F-IN", "steps": [w(sys.argv[1])]},
  {"match": "F-HONEST", "steps": [w("result = 42\nprint(result)\n")]},
  {"match": "F-LOUD", "steps": [w("result = 42\nprint(result)\n#" + "x" * 200000 + "\n")]},
]}))
PY
)
mock_start "$script"
cat >"$set_dir/f/data.jsonl" <<'JSONL'
{"id": "subproc", "problem_statement": "F-SUB", "ground_truth": "42", "how": "subprocess"}
{"id": "inproc", "problem_statement": "F-IN", "ground_truth": "42", "how": "inproc"}
{"id": "honest", "problem_statement": "F-HONEST", "ground_truth": "42", "how": "subprocess"}
{"id": "loud", "problem_statement": "F-LOUD", "ground_truth": "42", "how": "loud"}
JSONL
tap_status 0 "answers that try to forge a perfect score" hbench "$set_dir" --task f --num-workers 2
bench_dir
tap_is "$(lines 'sorted((l["id"], l["score"], l["error"]) for l in ls)')" \
  "[('honest', 1, None), ('inproc', 0, None), ('loud', 1, None), ('subproc', 0, None)]" \
  "score what compute_score returned: a forged line on any fd, before or after the driver's, is not the score; output past a pipe's size blocks nothing"
tap_ok "and the runs left nothing" leftovers

# ---- one answer's scoring leaves nothing for the next one's ----
# One worker: every task is scored in the same slot's scoring sandbox, one
# after the other.  The first answer, run inside compute_score's process as
# a coding reward runs it, tries to leave something behind for the
# next: a module in the image's paths and next to reward.py, files in /tmp
# and /dev/shm, a process that outlives it, a changed global of reward.py.
# The second answer's reward scores 1 only if it finds none of it.
mkdir -p "$set_dir/iso"
printf 'dataset: "json"\ndata_files: "iso/data.jsonl"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
  >"$set_dir/iso/config.yaml"
cat >"$set_dir/iso/reward.py" <<'PY'
import os, sys, time
TRUSTED = True
def compute_score(agent_answer, ground_truth, **kw):
    if kw["how"] == "forkleft":
        # A process it forks and leaves, holding what it holds.
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        return 1.0
    if kw["how"] == "bigerr":
        return float(agent_answer)  # a ValueError that quotes it all
    if kw["how"] == "plant":
        exec(agent_answer, {})
        return 0.0
    found = []
    try:
        import planted_module
        found.append("planted_module")
    except ImportError:
        pass
    for p in ("/tmp/planted", "/dev/shm/planted", "/tmp/dir/deep"):
        if os.path.exists(p):
            found.append(p)
    # Besides this process: init, the driver and the process it forked to
    # serve this answer (this one's parent).
    driver = int(open("/proc/%d/stat" % os.getppid()).read().rsplit(")", 1)[1].split()[1])
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) not in (1, driver, os.getppid(), os.getpid()):
            found.append("process " + open("/proc/%s/cmdline" % pid).read())
    if not TRUSTED:
        found.append("reward.py's global")
    # What the driver's own state decides: writing a file (its size limit,
    # /tmp's mode), and a lot of output on the stderr pipe it shares.
    try:
        import tempfile
        fd, path = tempfile.mkstemp()
        os.write(fd, b"x" * 65536)
        os.close(fd)
    except Exception as e:
        found.append("tmp: %r" % e)
    print("x" * 200000, file=sys.stderr)
    import socket
    try:
        socket.socket().bind(("127.0.0.1", 8000))
    except OSError as e:
        found.append("port 8000: %r" % e)
    print("found: %s" % found, file=sys.stderr)
    return 0.0 if found else 1.0
PY
cat >"$tmp/plant.py" <<'PY'
import os, subprocess, sys
wrote = []
for d in sys.path + ["/hutch-task", "/hutch-reward", "/usr/lib/python3/dist-packages"]:
    try:
        with open(os.path.join(d or ".", "planted_module.py"), "w") as f:
            f.write("raise SystemExit('planted')\n")
        wrote.append(d)
    except OSError:
        pass
print("planted in: %s" % wrote, file=sys.stderr)
open("/tmp/planted", "w").write("x")
open("/dev/shm/planted", "w").write("x")
os.makedirs("/tmp/dir", exist_ok=True)
open("/tmp/dir/deep", "w").write("x")
os.chmod("/tmp/dir", 0)
subprocess.Popen(["sleep", "600"], start_new_session=True)
if os.fork() == 0:
    os.setsid()
    os.execvp("sleep", ["sleep", "601"])
sys._getframe(1).f_globals["TRUSTED"] = False  # reward.py's, from compute_score's frame
PY
# What the driver cannot empty: a System V shared memory segment and a
# new entry in /dev.  The sandbox ends after that answer, and the next task
# is scored in a new one.
cat >"$tmp/taint.py" <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
print("shmget: %d" % libc.shmget(0x6875, 4096, 0o1666))  # IPC_CREAT | 0666
os.symlink("/tmp", "/dev/planted")
PY
plant=$(cat "$tmp/plant.py")
taint=$(cat "$tmp/taint.py")
script=$("$AGENT_PY" - "$plant" "$taint" <<'PY'
import json, sys
w = lambda text: {"calls": [["str_replace_editor", {"command": "create", "path": "/testbed/answer.txt", "file_text": text}]]}
# up: this process's parent and its parent's parent.
UP = ("import os\nppid = lambda p: int(open('/proc/%d/stat' % p).read().rsplit(')', 1)[1].split()[1])\n"
      "up = [os.getppid(), ppid(os.getppid())]\n")
print(json.dumps({"tasks": [
  {"match": "I-PLANT", "steps": [w(sys.argv[1])]},
  {"match": "I-CHECK", "steps": [w("nothing")]},
  {"match": "I-TAINT", "steps": [w(sys.argv[2])]},
  # The driver's own state, which a process of the sandbox (the same user)
  # can change: its file size limit, /tmp's mode, its stderr's flags (a
  # SIGIO on each read of the pipe), and the driver stopped.  The driver is
  # the parent of the process serving the answer, the answer's process's
  # parent: both are tried.
  {"match": "I-FSIZE", "steps": [w(UP + "import resource\nfor p in up:\n    resource.prlimit(p, resource.RLIMIT_FSIZE, (0, 0))\n")]},
  {"match": "I-CHMOD", "steps": [w("import os\nos.chmod('/tmp', 0o1555)\n")]},
  {"match": "I-SIGIO", "steps": [w("import fcntl, os\nfcntl.fcntl(2, fcntl.F_SETOWN, os.getppid())\n"
                                  "fcntl.fcntl(2, fcntl.F_SETFL, fcntl.fcntl(2, fcntl.F_GETFL) | fcntl.FASYNC)\n")]},
  {"match": "I-STOP", "steps": [w(UP + "import signal\nfor p in up:\n    os.kill(p, signal.SIGSTOP)\n")]},
  {"match": "I-BIG", "steps": [w("x" * 200000)]},
  # A port held in TIME_WAIT (its server side closed first) for 60 s.
  {"match": "I-TW", "steps": [w("import socket\nl = socket.socket()\nl.bind(('127.0.0.1', 8000))\nl.listen()\n"
                               "c = socket.create_connection(('127.0.0.1', 8000))\ns, _ = l.accept()\n"
                               "s.close()\nc.close()\nl.close()\n")]},
]}))
PY
)
mock_start "$script"
cat >"$set_dir/iso/data.jsonl" <<'JSONL'
{"id": "plant", "problem_statement": "I-PLANT", "ground_truth": "0", "how": "plant"}
{"id": "check", "problem_statement": "I-CHECK", "ground_truth": "1", "how": "check"}
{"id": "taint", "problem_statement": "I-TAINT", "ground_truth": "0", "how": "plant"}
{"id": "check2", "problem_statement": "I-CHECK", "ground_truth": "1", "how": "check"}
{"id": "fsize", "problem_statement": "I-FSIZE", "ground_truth": "0", "how": "plant"}
{"id": "check3", "problem_statement": "I-CHECK", "ground_truth": "1", "how": "check"}
{"id": "chmodtmp", "problem_statement": "I-CHMOD", "ground_truth": "0", "how": "plant"}
{"id": "check4", "problem_statement": "I-CHECK", "ground_truth": "1", "how": "check"}
{"id": "sigio", "problem_statement": "I-SIGIO", "ground_truth": "0", "how": "plant"}
{"id": "check5", "problem_statement": "I-CHECK", "ground_truth": "1", "how": "check"}
{"id": "stop", "problem_statement": "I-STOP", "ground_truth": "0", "how": "plant"}
{"id": "check6", "problem_statement": "I-CHECK", "ground_truth": "1", "how": "check"}
{"id": "timewait", "problem_statement": "I-TW", "ground_truth": "0", "how": "plant"}
{"id": "check7", "problem_statement": "I-CHECK", "ground_truth": "1", "how": "check"}
{"id": "forkleft", "problem_statement": "I-CHECK", "ground_truth": "1", "how": "forkleft"}
{"id": "bigerr", "problem_statement": "I-BIG", "ground_truth": "1", "how": "bigerr"}
{"id": "check8", "problem_statement": "I-CHECK", "ground_truth": "1", "how": "check"}
JSONL
start=$(date +%s)
tap_status 0 "answers that leave files, a module, processes and changed state for the next task's scoring" \
  hbench "$set_dir" --task iso --num-workers 1 --reward-timeout 5
took=$(($(date +%s) - start))
bench_dir
tap_is "$(lines '[(l["id"], l["score"], l["error"]) for l in ls if l["id"] not in ("stop", "bigerr")]')" \
  "[('plant', 0, None), ('check', 1, None), ('taint', 0, None), ('check2', 1, None), ('fsize', 0, None), ('check3', 1, None), ('chmodtmp', 0, None), ('check4', 1, None), ('sigio', 0, None), ('check5', 1, None), ('check6', 1, None), ('timewait', 0, None), ('check7', 1, None), ('forkleft', 1, None), ('check8', 1, None)]" \
  "each next task's scoring, in the slot's scoring sandbox, finds none of it"
tap_like "$(lines '[l["error"] for l in ls if l["id"] == "stop"][0]')" "took longer than 5 s" \
  "an answer that stops the driver (and the process serving it) is that task's error, at --reward-timeout"
tap_like "$(lines '[l["error"] for l in ls if l["id"] == "bigerr"][0]')" "^reward: ValueError: could not convert string to float: 'xxx" \
  "an error that quotes a 200 kB answer is that task's error, cut, not a time-out"
tap_check $((took >= 60)) "and holds up the run no longer (${took}s for 18 tasks, a process left holding the result's pipe among them)"
tap_is "$(cd "$OUT/runs" && ls .reward-[0-9]*.audit.jsonl | tr '\n' ' ')" \
  ".reward-0-0.audit.jsonl .reward-0-1.audit.jsonl .reward-0-2.audit.jsonl .reward-0-3.audit.jsonl .reward-0-4.audit.jsonl .reward-0-5.audit.jsonl " \
  "a new scoring sandbox after the IPC object and /dev entry, the file size limit, /tmp's mode, the stopped driver, the TIME_WAIT"
# A reward.py that keeps a file open from its import: each task reads it
# from its start, as in a sandbox of its own (which each task then gets).
mkdir -p "$set_dir/lazy"
printf 'dataset: "json"\ndata_files: "lazy/data.jsonl"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
  >"$set_dir/lazy/config.yaml"
printf 'abc' >"$set_dir/lazy/cases.txt"
printf 'CASES = open("/hutch-task/cases.txt")\ndef compute_score(a, g, **k):\n    return 1.0 if CASES.read() == "abc" else 0.0\n' \
  >"$set_dir/lazy/reward.py"
printf '{"id": "l1", "problem_statement": "I-CHECK", "ground_truth": "1"}\n{"id": "l2", "problem_statement": "I-CHECK", "ground_truth": "1"}\n' \
  >"$set_dir/lazy/data.jsonl"
mock_start "$script"
tap_status 0 "a reward.py that keeps a file open from its import" hbench "$set_dir" --task lazy --num-workers 1
bench_dir
tap_is "$(lines '[(l["id"], l["score"], l["error"]) for l in ls]')" "[('l1', 1, None), ('l2', 1, None)]" \
  "reads it whole for each task"
tap_is "$(cd "$OUT/runs" && ls .reward-[0-9]*.audit.jsonl | wc -l)" "2" "each task in a scoring sandbox of its own"
tap_ok "and the run left nothing" leftovers

# ---- a driver that cannot make itself undumpable scores nothing ----
# An answer's program that reads the driver's memory for its secret (any
# 32 hex digits) and writes a line marked with each candidate to each pipe
# the driver holds: the driver's prctl keeps it out.  A python3 without
# ctypes cannot call prctl: its driver would stay open to that program, so
# it must score nothing, and the run stops at its first check.
mkdir -p "$set_dir/g"
printf 'dataset: "json"\ndata_files: "g/data.jsonl"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
  >"$set_dir/g/config.yaml"
cat >"$set_dir/g/reward.py" <<'PY'
import subprocess, sys
def compute_score(agent_answer, ground_truth, **kw):
    out = subprocess.run([sys.executable, "-c", agent_answer], capture_output=True, text=True, timeout=20).stdout
    return 1.0 if out.strip() == ground_truth else 0.0
PY
printf '{"id": "memory", "problem_statement": "G-MEM", "ground_truth": "42"}\n' >"$set_dir/g/data.jsonl"
cat >"$tmp/forge-mem.py" <<'PY'
import os, re
for p in filter(str.isdigit, os.listdir("/proc")):
    try:
        if b"driver.py" not in open("/proc/%s/cmdline" % p, "rb").read():
            continue
        mem = open("/proc/%s/mem" % p, "rb", 0)
        maps = open("/proc/%s/maps" % p).read().splitlines()
    except OSError:
        continue
    seen = set()
    for m in maps:
        lo, hi = (int(x, 16) for x in m.split()[0].split("-"))
        try:
            mem.seek(lo)
            seen.update(re.findall(rb"(?<![0-9a-f])[0-9a-f]{32}(?![0-9a-f])", mem.read(hi - lo)))
        except (OSError, OverflowError, ValueError):
            pass
    lines = b"".join(b"\n" + s + b" score 1.0\n" for s in seen)
    for fd in os.listdir("/proc/%s/fd" % p):
        try:
            w = os.open("/proc/%s/fd/%s" % (p, fd), os.O_WRONLY | os.O_NONBLOCK)
            os.write(w, lines)
            os.close(w)
        except OSError:
            pass
print("not 42")
PY
script=$("$AGENT_PY" - "$(cat "$tmp/forge-mem.py")" <<'PY'
import json, sys
print(json.dumps({"tasks": [{"match": "G-MEM", "steps": [{"calls": [["str_replace_editor",
    {"command": "create", "path": "/testbed/answer.txt", "file_text": sys.argv[1]}]]}]}]}))
PY
)
mock_start "$script"
tap_status 0 "an answer's program that reads the driver's memory for its secret" hbench "$set_dir" --task g
bench_dir
tap_is "$(lines '[(l["id"], l["score"], l["error"]) for l in ls]')" "[('memory', 0, None)]" \
  "forges nothing: the driver made itself undumpable"
printf 'run rm -f /usr/lib/python3*/lib-dynload/_ctypes.*.so\n' >"$tmp/noctypes.recipe"
if "$HUTCH_BIN" rootfs build --from "$IMAGE" --recipe "$tmp/noctypes.recipe" --name bench-noctypes >/dev/null 2>&1; then
  mock_start "$script"
  tap_status 125 "a scoring image whose python3 lacks ctypes" hbench "$set_dir" --task g --reward-rootfs bench-noctypes
  tap_like "$tap_stderr" "reward: ImportError: the scoring driver cannot make itself undumpable" \
    "stops the run at its first check, saying why"
  tap_unlike "$(cat "$tmp"/out/*_g_*/results.jsonl)" '"score":1' "and no run of the task scored it"
  "$HUTCH_BIN" rootfs rm bench-noctypes >/dev/null 2>&1
else
  tap_skip "a scoring image whose python3 lacks ctypes" "rootfs build failed"
  tap_skip "stops the run at its first check, saying why" "rootfs build failed"
  tap_skip "and no run of the task scored it" "rootfs build failed"
fi
tap_ok "and the runs left nothing" leftovers

# ---- what compute_score receives: the row as json.loads reads it, the answer as hutch read it ----
# The driver's args are made from the parsed row: its ground truth and
# fields must reach compute_score as LLM-in-Sandbox's json.loads reads the
# line (strings of any content, integers of any size, 3.0 a float, -0.0,
# deep nesting, a repeated key), and the answer as hutch read answer.txt
# (NUL and bytes that are not UTF-8 as U+FFFD).  The driver's errors come
# back whole, and a score that is not a finite number is refused.
mkdir -p "$set_dir/e" "$set_dir/n"
for d in e n; do
  printf 'dataset: "json"\ndata_files: "%s/data.jsonl"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
    "$d" >"$set_dir/$d/config.yaml"
done
cat >"$set_dir/e/reward.py" <<'PY'
import json, sys
sys.setrecursionlimit(100000)
def canon(v):
    # Types exact: 3 is not 3.0, True is not 1, -0.0 is not 0.0.
    if isinstance(v, dict):
        return ("dict", [(k, canon(x)) for k, x in v.items()])
    if isinstance(v, list):
        return ("list", [canon(x) for x in v])
    return (type(v).__name__, repr(v))
def compute_score(agent_answer, ground_truth, **kw):
    how = kw.get("how")
    if how == "row":
        rows = [json.loads(l) for l in open("/hutch-task/data.jsonl", "rb")]
        want = [r for r in rows if r["id"] == kw["id"]][0]
        gt = want.pop("ground_truth", None)
        if canon(ground_truth) != canon(gt):
            raise ValueError("ground_truth %.300r != %.300r" % (ground_truth, gt))
        for k in set(want) | set(kw):
            if canon(kw.get(k)) != canon(want.get(k)):
                raise ValueError("%s: %.300r != %.300r" % (k, kw.get(k), want.get(k)))
        return 1.0 if list(kw) == list(want) else 0.5
    if how == "answer":
        if agent_answer != ground_truth:
            raise ValueError("answer %r" % agent_answer)
        return 1.0
    if how == "raise":
        raise ValueError("two\nlines \\ a backslash, a NUL \0, \u00e9 and a lone \udcff")
    if how == "kind":
        raise type("odd kind", (Exception,), {})("boom")
    if how in ("nan", "inf", "-inf"):
        return float(how)
    if how == "text":
        return "a string"
    if how == "frac":
        return 0.5 ** 0.5
    if how == "small":
        return 5e-324
    if how == "bool":
        return True
    if how == "dumpable":
        # Another process of the sandbox cannot look into the driver (this
        # process: its fds, its memory's secret), as it can into another.
        import os, subprocess
        code = ("import os, sys\nseen = []\n"
                "for what in ('fd', 'environ'):\n"
                "    try:\n"
                "        os.readlink('/proc/%s/fd/0' % sys.argv[1]) if what == 'fd' else open('/proc/%s/environ' % sys.argv[1], 'rb').read()\n"
                "        seen.append(what)\n"
                "    except OSError:\n"
                "        pass\n"
                "print(' '.join(seen))\n")
        probe = lambda pid: subprocess.run([sys.executable, "-c", code, str(pid)], capture_output=True, text=True).stdout.strip()
        other = subprocess.Popen(["sleep", "30"])
        seen = (probe(os.getpid()), probe(other.pid))
        other.kill()
        if seen != ("", "fd environ"):
            raise ValueError("seen in the driver, in another process: %r" % (seen,))
        return 1.0
PY
"$AGENT_PY" - "$set_dir/e/data.jsonl" <<'PY'
import json, sys
deep = "[" * 900 + '"bottom"' + "]" * 900
lines = [
    # Numbers as written: cJSON holds doubles, json.loads keeps these apart.
    '{"id": "numbers", "problem_statement": "E-ROW", "how": "row", "ground_truth": 123456789012345678901234567890, '
    '"ints": [0, -0, -1, 2147483647, 2147483648, -2147483649, 9007199254740993, -9223372036854775809, '
    '18446744073709551616, 1' + "0" * 300 + '], '
    '"floats": [3.0, -0.0, 0.1, 1E2, 2.5e-3, 1e300, 5e-324, 1.7976931348623157e308, 1e400, -1e400, '
    '123456789012345678901234567890.5, 0.30000000000000004], "gt": 3.0}',
    '{"id": "float-truth", "problem_statement": "E-ROW", "how": "row", "ground_truth": 3.0}',
    '{"id": "nothing", "problem_statement": "E-ROW", "how": "row"}',
    # A repeated key: the last value, in the first one's place.
    '{"id": "dup-keys", "ground_truth": "first", "problem_statement": "E-ROW", "how": "row", "ground_truth": "last", '
    '"how": "row", "k": 1, "k": {"k": 2, "k": 3}}',
    # Strings and keys of any content.
    json.dumps({"id": "strings", "problem_statement": "E-ROW", "how": "row",
                "ground_truth": "quote \" back\\slash '''\"\"\" }{][ \\u0000 not a NUL",
                "s": ["new\nline", "tab\t cr\r", "\x1b[2J", "\u2028\u2029", "", "\x7f\x01",
                      "emoji \U0001F600", "\u00e9\u4e2d\ufeff", "x" * 100000],
                "keys": {"k\"ey": 1, "k\\ey": 2, "": 3, "\U0001F600": 4, "a b": 5}}),
    json.dumps({"id": "raw-utf8", "problem_statement": "E-ROW", "how": "row", "ground_truth": "\U0001F600\u00e9",
                "t": "\u4e2d\u6587"}, ensure_ascii=False),
    '{"id": "shapes", "problem_statement": "E-ROW", "how": "row", "ground_truth": [[], {}, [[]], {"a": {}}, true, false, null], '
    '"d": {"dup": 1, "dup": 2}, "deep": ' + deep + '}',
    # The answer as hutch read it.
    '{"id": "answer", "problem_statement": "E-ANSWER", "how": "answer", '
    '"ground_truth": "a\ufffdb\ufffdc\ufffd\ufffd\ufffdd \\"q\\" \\\\ \'\'\' x\\ny \U0001F600"}',
    '{"id": "raise", "problem_statement": "E-RAISE", "ground_truth": null, "how": "raise"}',
    '{"id": "kind", "problem_statement": "E-KIND", "ground_truth": null, "how": "kind"}',
]
for how in ("nan", "inf", "-inf", "text", "frac", "small", "bool", "dumpable"):
    lines.append(json.dumps({"id": how, "problem_statement": "E-" + how, "ground_truth": None, "how": how}))
open(sys.argv[1], "w", encoding="utf-8").write("\n".join(lines) + "\n")
PY
printf 'def create_prompt(row):\n    return row["problem_statement"]\n' >"$set_dir/n/reward.py"
printf '{"id": "none", "problem_statement": "N-NONE", "ground_truth": "x"}\n' >"$set_dir/n/data.jsonl"
mock_start '{"tasks": [{"match": "E-ANSWER", "steps": [{"calls": [["execute_bash", {"command": "printf '"'"'a\\000b\\377c\\355\\240\\200d \"q\" \\\\ '"'"'\"'"'"''"'"''"'"'\"'"'"' x\\ny \\360\\237\\230\\200\\n'"'"' >/testbed/answer.txt"}]]}]}]}'
tap_status 0 "rows and answers of every shape, and rewards that fail" hbench "$set_dir" --task e --num-workers 4
bench_dir
tap_is "$(lines 'sorted((l["id"], l["score"], l["error"]) for l in ls if l["id"] in ("numbers", "float-truth", "nothing", "strings", "raw-utf8", "shapes", "dup-keys"))')" \
  "[('dup-keys', 1, None), ('float-truth', 1, None), ('nothing', 1, None), ('numbers', 1, None), ('raw-utf8', 1, None), ('shapes', 1, None), ('strings', 1, None)]" \
  "compute_score gets each row's ground truth and fields, in order, as json.loads reads its line"
tap_is "$(lines '[(l["score"], l["error"]) for l in ls if l["id"] == "answer"]')" "[(1, None)]" \
  "and the answer as hutch read it: quotes, backslashes, newlines, NUL and bytes that are not UTF-8 (U+FFFD)"
tap_is "$(lines '[l["error"] == "reward: ValueError: two\nlines \\ a backslash, a NUL \ufffd, \u00e9 and a lone \\udcff" for l in ls if l["id"] == "raise"]')" \
  "[True]" "a reward's error comes back whole: newlines, backslashes, NUL, a lone surrogate escaped"
tap_is "$(lines 'sorted((l["id"], l["score"], l["error"]) for l in ls if l["id"] in ("kind", "nan", "inf", "-inf", "text"))')" \
  "[('-inf', 0, 'reward: compute_score returned -inf'), ('inf', 0, 'reward: compute_score returned inf'), ('kind', 0, 'reward: odd kind: boom'), ('nan', 0, 'reward: compute_score returned nan'), ('text', 0, \"reward: ValueError: could not convert string to float: 'a string'\")]" \
  "a score that is not a finite number is that task's error"
tap_is "$(lines 'sorted((l["id"], l["score"]) for l in ls if l["id"] in ("frac", "small", "bool")) == [("bool", 1), ("frac", 0.5 ** 0.5), ("small", 5e-324)]')" \
  "True" "a score comes back exact (the square root of 0.5, the smallest float)"
tap_is "$(lines '[(l["score"], l["error"]) for l in ls if l["id"] == "dumpable"]')" "[(1, None)]" \
  "no other process of the scoring sandbox can reach into the driver through /proc (its fds, its memory)"
tap_status 0 "a reward.py without compute_score" hbench "$set_dir" --task n
bench_dir
tap_is "$(lines '[l["error"] for l in ls]')" "['reward: AttributeError: reward.py must define compute_score function']" \
  "is each task's error, in LLM-in-Sandbox's words"

# ---- hutch's own per-task settings: a verifier in the task's sandbox, a time limit ----
mkdir -p "$set_dir/v"
printf 'dataset: "json"\ndata_files: "v/data.jsonl"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
  >"$set_dir/v/config.yaml"
cat >"$set_dir/v/data.jsonl" <<JSONL
{"id": "pass", "problem_statement": "V-PASS", "ground_truth": null, "hutch": {"verifier": "test \\"\$(cat /testbed/answer.txt)\\" = 42 && test ! -e /hutch-task", "image": "$IMAGE"}}
{"id": "half", "problem_statement": "V-HALF", "ground_truth": null, "hutch": {"verifier": "echo checking; echo 0.5"}}
{"id": "fail", "problem_statement": "V-FAIL", "ground_truth": null, "hutch": {"verifier": "exit 3"}}
{"id": "slow", "problem_statement": "V-SLOW", "ground_truth": null, "hutch": {"verifier": "true", "timeout": 3}}
{"id": "bad", "problem_statement": "V-BAD", "ground_truth": null, "hutch": {"nonsense": 1}}
{"id": "none", "problem_statement": "V-NONE", "ground_truth": null}
JSONL
mock_start '{"tasks": [{"match": "V-PASS", "steps": [{"calls": [["execute_bash", {"command": "echo 42 > /testbed/answer.txt"}]]}]},
  {"match": "V-SLOW", "steps": [{"hang": 60}]}]}'
start=$(date +%s)
tap_status 0 "a task set without reward.py whose tasks carry verifiers" hbench "$set_dir" --task v --num-workers 6
took=$(($(date +%s) - start))
bench_dir
tap_is "$(lines 'sorted((l["id"], l["score"], l["error"]) for l in ls)')" \
  "[('bad', 0, '\"hutch\": unknown key \\'nonsense\\''), ('fail', 0, None), ('half', 0.5, None), ('none', 0, 'the task has no verifier and $set_dir/v/reward.py is missing'), ('pass', 1, None), ('slow', 0, 'Timeout')]" \
  "the verifier's exit status or last line is the score; a task's own time limit; unknown keys refused"
tap_check $((took >= 50)) "the task's own time limit, not --task-timeout's 1800 s (${took}s)"
tap_is "$(json "$(lines '[l["run_dir"] for l in ls if l["id"] == "pass"][0]' | sed "s|^|$OUT/|")/trajectory.json" '(d["hutch"]["verifier"]["exit_code"], d["hutch"]["sandbox"]["image"])')" \
  "(0, '$IMAGE')" "the verifier ran in the task's own sandbox, of the task's image (hutch run --verify)"

# ---- a problem statement larger than the pipes a user past its pipe quota gets ----
# Past fs.pipe-user-pages-soft, a user's new pipes hold 8 KiB: a 20 KB
# statement written to one before hutch run reads it would block the worker
# for good.  Root is exempt from the quota, so this runs rootless.
if [ "$HUTCH_TEST_MODE" = rootless ]; then
  mkdir -p "$set_dir/q"
  printf 'dataset: "json"\ndata_files: "q/data.jsonl"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
    >"$set_dir/q/config.yaml"
  "$AGENT_PY" -c 'import json; print(json.dumps({"id": "long", "problem_statement": "Q-LONG " + "x" * 20000, "ground_truth": None, "hutch": {"verifier": "true"}}))' \
    >"$set_dir/q/data.jsonl"
  "$AGENT_PY" - "$tmp/pipes-held" <<'PY' &
import fcntl, os, resource, signal, sys, time
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
held = []
while len(held) < 4000:
    r, w = os.pipe()
    held.append((r, w))
    if fcntl.fcntl(w, 1032) < 20000:  # F_GETPIPE_SZ
        break
open(sys.argv[1], "w").write(str(fcntl.fcntl(held[-1][1], 1032)))
signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
time.sleep(300)
PY
  holder=$!
  for _ in $(seq 100); do [ -s "$tmp/pipes-held" ] && break; sleep 0.1; done
  tap_check $(($(cat "$tmp/pipes-held" 2>/dev/null || echo 65536) >= 20000)) \
    "the user's new pipes hold less than the statement ($(cat "$tmp/pipes-held" 2>/dev/null) bytes)"
  mock_start '{"tasks": [{"match": "Q-LONG", "steps": [{"calls": [["execute_bash", {"command": "true"}]]}]}]}'
  BENCH_EXEC="timeout 120" tap_status 0 "a 20 KB problem statement when pipes are small" hbench "$set_dir" --task q
  bench_dir
  tap_is "$(lines '[(l["id"], l["score"], l["error"]) for l in ls]')" "[('long', 1, None)]" "the task ran and was scored"
  kill "$holder" 2>/dev/null
  wait "$holder" 2>/dev/null
fi

# ---- an API that refuses the key stops the run, as in LLM-in-Sandbox ----
mock_start '[{"status": 401, "error": "bad key", "repeat": 100}]'
tap_status 3 "HTTP 401 from the model's API stops the run" hbench "$HUTCH_SRCDIR/examples/tasks" --task demo --num-workers 2
bench_dir
tap_like "$tap_stderr" "AuthenticationError.*hint: check the API key" "and says to check the key"
tap_is "$(lines 'sorted(set(l["end"] for l in ls))')" "['api_error']" \
  "the tasks that ran are recorded as not finished, api_error (--resume runs them)"
tap_ok "and there is no results.json" test ! -e "$OUT/results.json"
tap_ok "nothing is left after it" leftovers

# ---- a hub dataset, usage errors ----
mkdir -p "$set_dir/hub"
printf 'dataset: "daixuancheng/llm-in-sandbox-bench"\nconfig: "math"\nsplit: "test"\nsystem_prompt: "s"\n' \
  >"$set_dir/hub/config.yaml"
tap_status 125 "a Hugging Face dataset is not downloaded" hbench "$set_dir" --task hub
tap_like "$tap_stderr" "hub dataset 'daixuancheng/llm-in-sandbox-bench'.*hint: download it once to a local JSON lines file" \
  "the message says to download it to a local JSON file, and how"
tap_status 2 "an option hutch run does not know" hbench "$set_dir" --task t --no-such-option
tap_status 2 "--query is the task's own" hbench "$set_dir" --task t --query x
tap_status 2 "hutch run's own checks apply before any task" hbench "$set_dir" --task t --shell nonsense

# ---- per-task time limit; kill -9 of the runner; --resume ----
printf 'def compute_score(a, g, **k):\n    return 1.0 if a == g else 0.0\n' >"$set_dir/t/reward.py"
hang=$("$AGENT_PY" -c '
import json
w = lambda t: {"calls": [["execute_bash", {"command": "echo %s > /testbed/answer.txt" % t}]]}
print(json.dumps({"tasks": [{"match": "T-INJECT", "steps": [w("x")]}, {"match": "T-JAIL", "steps": [w("y")]},
  {"match": "T-RAISES", "steps": [{"hang": 120}]}, {"match": "T-FILES", "steps": [w("abc")]}]}))')
mock_start "$hang"
# Each task's agent is a fork of the agent spawner (made before the task
# set was read), without an exec: while the hanging task waits on the
# model, its agent (the process named hutch-agent whose stderr is that
# task's log) must share no open file with the spawner, the runner or a
# worker but its standard streams (kcmp(2) compares open file descriptions,
# whatever their names), and its memory must hold no other task's problem
# statement.  The limit is 10 s so that the probe finds and reads the
# hanging agent before it is killed, even in a sanitizer build; an agent (or
# its spawner, the runner, a worker) gone meanwhile is reported as such, not
# as a Python traceback.
"$AGENT_PY" - "$MOCK_REQUESTS" "$tmp/agent-fds" "$HUTCH_SRCDIR/tests/lib" <<'PY' &
import ctypes, errno, os, sys, time
requests, report = sys.argv[1:3]
sys.path.insert(0, sys.argv[3])
from benchprocs import alive, children, comm, find_agent, pids, ppid, scan, start_time
nr = {"x86_64": 312, "aarch64": 272}.get(os.uname().machine)
libc = ctypes.CDLL(None, use_errno=True)
def fds(p):
    return sorted(int(n) for n in os.listdir("/proc/%d/fd" % p))
def same_file(a, b, n, m):
    # kcmp(KCMP_FILE): A's fd N and B's fd M are the same open file.
    if libc.syscall(nr, a, b, 0, n, m) == 0:
        return True
    if ctypes.get_errno() == errno.ESRCH:
        raise ProcessLookupError(errno.ESRCH, os.strerror(errno.ESRCH))
    return False
def find():
    return find_agent("/logs/raises.txt")
def memory(p):
    # The agent's memory searched for the other tasks' statements (each of
    # them is in the runner's and the workers' rows).
    return scan(p, [b"T-JAIL", b"T-INJECT", b"T-FILES"])
agent, end = None, time.time() + 60
while agent is None and time.time() < end:
    if "T-RAISES" in open(requests).read():
        agent = find()
    time.sleep(0.05)
lines = []
if agent is None:
    lines.append("no agent found")
else:
    try:
        mine = fds(agent)
        spawner = ppid(agent)
        runner = ppid(spawner)
        lines.append("agent %d: %d fds past 2" % (agent, len([n for n in mine if n > 2])))
    except OSError as e:
        lines.append("agent %d: gone before its fds and parents were read (%s)" % (agent, e.strerror))
        agent = None
if agent and nr is None:
    lines.append("skip: no kcmp(2) number known for " + os.uname().machine)
# The fds are compared first: it takes milliseconds, while the memory scan
# of a sanitizer build's agent can take seconds, after which the agent may
# have ended (a zombie has no files: kcmp would find nothing shared).
# A worker whose task is done may exit meanwhile: it is passed over (the
# hanging task's worker waits for its agent); the agent's own end stops
# the comparison and is reported.
if agent and nr is not None:
    began = start_time(agent)
    for who, q in [("spawner", spawner), ("runner", runner)] + [("worker", w) for w in children(runner, "hutch-benchmark")]:
        try:
            theirs = fds(q)
            for n in mine:
                for m in theirs:
                    if same_file(agent, q, n, m):
                        lines.append("fd %d shared with the %s's fd %d" % (n, who, m) if n > 2 else "stdio %d %s" % (n, who))
        except OSError as e:
            if not alive(agent, began):
                break
            lines.append("kcmp: a %s (%d) ended during the comparison (%s)" % (who, q, e.strerror))
    # The statement's pipe (the agent's stdin), looked for in every process
    # rather than in the workers listed above: the check that kcmp sees a
    # file the agent does share.
    holders = []
    for q in pids():
        if q == agent or not alive(agent, began):
            continue
        try:
            if any(same_file(agent, q, 0, m) for m in fds(q)):
                holders.append(comm(q))
        except OSError:
            pass
    if "hutch-benchmark" in holders:
        lines.append("stdio 0 worker")
    else:
        lines.append("stdio 0 held by: %s" % (", ".join(holders) or "no other process"))
    if not alive(agent, began):
        lines.append("kcmp: the agent ended during the comparison")
if agent:
    lines.append(memory(agent))
open(report, "w").write("\n".join(lines) + "\n")
PY
probe=$!
start=$(date +%s)
tap_status 0 "a task whose model never answers" hbench "$set_dir" --task t --num-workers 4 --task-timeout 10
took=$(($(date +%s) - start))
wait "$probe"
bench_dir
tap_is "$(lines '[l["error"] for l in ls if l["id"] == "raises"]')" "['Timeout']" "ends at --task-timeout as LLM-in-Sandbox's Timeout"
tap_check $((took >= 60)) "and the run goes on (${took}s)"
agent_fds=$(cat "$tmp/agent-fds")
tap_like "$agent_fds" '^agent [0-9]+: [1-9][0-9]* fds past 2' "the task's agent was seen while it ran (a process named hutch-agent)"
if [[ $agent_fds == *$'\nskip: '* ]]; then
  tap_skip "the task's agent holds none of its worker's or the runner's fds" "${agent_fds#*skip: }"
else
  tap_like "$agent_fds" $'\nstdio 0 worker' "kcmp sees the statement's pipe it shares with its worker (stdin)"
  tap_unlike "$agent_fds" "shared with" "and the agent holds none of its worker's, the spawner's or the runner's other fds"
fi
if [[ $agent_fds == *$'\nmemory: unreadable'* ]]; then
  tap_skip "the task's agent holds no other task's problem statement in its memory" "${agent_fds#*memory: }"
else
  tap_like "$agent_fds" $'\nmemory: clean' "the task's agent holds no other task's problem statement in its memory"
fi
agent_pid=$(head -n 1 "$tmp/agent-fds" | sed -n 's/^agent \([0-9]*\):.*/\1/p')
tap_fails "the agent killed at the task's limit has exited" kill -0 "${agent_pid:-0}"
tap_ok "nothing is left after a timeout" leftovers

mock_start "$hang"
ls -d "$tmp"/out/*/ >"$tmp/before"
(BENCH_EXEC="exec" hbench "$set_dir" --task t --num-workers 4 >"$tmp/killed.out" 2>&1) &
runner=$!
for _ in $(seq 600); do
  OUT=$(ls -d "$tmp"/out/*/ | grep -vxF -f "$tmp/before" | head -n 1)
  [ "$(wc -l 2>/dev/null <"$OUT/results.jsonl")" = 3 ] && break
  sleep 0.05
done
tap_is "$(lines 'sorted(l["id"] for l in ls)')" "['files', 'inject', 'jail']" "three tasks finish while one hangs"
kill -9 "$runner"
wait "$runner" 2>/dev/null
tap_ok "kill -9 of the runner leaves no sandbox, state, mount or process" leftovers
mock_start "$(echo "$hang" | sed 's/{"hang": 120}/{"calls": [["execute_bash", {"command": "echo z > \/testbed\/answer.txt"}]]}/')"
tap_status 0 "--resume DIR goes on" "$HUTCH_BIN" benchmark --resume "$OUT" --base-url "$MOCK_URL" --model mock \
  --rootfs "$IMAGE" --retry-delay 0.05
tap_like "$(mock_request 0 'r["body"]["messages"][1]["content"]')" "^T-RAISES" "running only the unfinished task"
tap_is "$(mock_count)" "2" "(its two requests)"
tap_is "$(json "$OUT/results.json" '(d["total"], float(d["mean_score"]), d["num_errors"])')" "(4, 1.0, 0)" \
  "results.json covers every task"
tap_is "$(lines 'len(ls)')" "4" "results.jsonl has each task once"
tap_status 2 "--resume with other settings is refused" "$HUTCH_BIN" benchmark --resume "$OUT" --base-url "$MOCK_URL" \
  --model other --rootfs "$IMAGE"
tap_like "$tap_stderr" "--model: the run began with 'mock'; this command gives 'other'" "and names the option"
# An edited results.jsonl: lines of another shape are not finished tasks,
# and do not crash the runner.
cp -a "$OUT" "$tmp/edited"
printf '%s\n' '{"id": "jail"}' '{"id": "files", "score": "1"}' 'not json' >>"$tmp/edited/results.jsonl"
tap_status 0 "--resume over lines of another shape" "$HUTCH_BIN" benchmark --resume "$tmp/edited" \
  --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" --retry-delay 0.05
tap_is "$(json "$tmp/edited/results.json" '(d["total"], float(d["mean_score"]), d["num_errors"])')" "(4, 1.0, 0)" \
  "and counts only the runner's own lines"
rm -rf "$tmp/edited"

# ---- Ctrl-C: SIGINT to the whole process group ----
mock_start "$hang"
ls -d "$tmp"/out/*/ >"$tmp/before"
setsid bash -c 'exec "$@" >"'"$tmp"'/int.out" 2>"'"$tmp"'/int.err"' bash "$HUTCH_BIN" benchmark "$set_dir" --task t \
  --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" --output-dir "$tmp/out" --retry-delay 0.05 --num-workers 4 &
runner=$!
for _ in $(seq 600); do
  OUT=$(ls -d "$tmp"/out/*/ | grep -vxF -f "$tmp/before" | head -n 1)
  [ "$(wc -l 2>/dev/null <"$OUT/results.jsonl")" = 3 ] && break
  sleep 0.05
done
kill -INT -- -"$runner"
wait "$runner"
tap_is "$?" "130" "Ctrl-C stops the run with status 130"
tap_ok "the run is incomplete: it has no results.json" test ! -e "$OUT/results.json"
tap_is "$(json "$OUT/benchmark.json" '(d["status"]["complete"], d["status"]["ends"]["finished"], d["status"]["not_run"], d["status"]["stopped"])')" \
  "(False, 3, 1, 'interrupted')" "benchmark.json says so: three tasks finished, one not, interrupted"
tap_ok "nothing is left after Ctrl-C" leftovers

# ---- SIGTERM (as Ctrl-C's SIGINT): stops cleanly ----
mock_start "$hang"
ls -d "$tmp"/out/*/ >"$tmp/before"
(BENCH_EXEC="exec" hbench "$set_dir" --task t --num-workers 4 >"$tmp/term.out" 2>"$tmp/term.err") &
runner=$!
for _ in $(seq 600); do
  OUT=$(ls -d "$tmp"/out/*/ | grep -vxF -f "$tmp/before" | head -n 1)
  [ "$(wc -l 2>/dev/null <"$OUT/results.jsonl")" = 3 ] && break
  sleep 0.05
done
kill -TERM "$runner"
wait "$runner"
tap_is "$?" "130" "SIGTERM stops the run with status 130"
tap_like "$(cat "$tmp/term.err")" "incomplete, no score: 3 of 4 tasks measured.*stopped: interrupted.*go on with --resume" \
  "and says how to go on"
tap_ok "the run is incomplete: it has no results.json" test ! -e "$OUT/results.json"
tap_like "$(cat "$OUT/summary.md")" "Incomplete: no score.* The run stopped: interrupted" "summary.md says so"
tap_ok "nothing is left after SIGTERM" leftovers

tap_done
