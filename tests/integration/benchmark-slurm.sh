#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch benchmark on a real Slurm: a single-node cluster started here (its own
# munged, slurmctld and slurmd, all run as the test's user from a slurm.conf
# in a temporary directory, stopped at the end), contrib/slurm's sbatch script
# submitted as a 4-task job array of the demo set against the mock server,
# one array task's model API failing: the merge submitted after the array
# (afterany, as contrib/slurm/README.md says) fails and publishes nothing;
# that shard resumed, the shards merged with `hutch benchmark merge`, and
# the merged results compared with a single machine's run.  Skipped, saying
# why, where Slurm cannot start.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
. "$HUTCH_SRCDIR/tests/lib/slurm.sh"
slurm_have
IMAGE=$(hutch_test_rootfs debian) || tap_skip_all "debian test rootfs unavailable (tests/setup-host.sh)"
tmp=$(hutch_test_tmpdir)
chmod 0755 "$tmp"
export HUTCH_STATE_DIR=$tmp/state
mkdir -p "$HUTCH_STATE_DIR"
json() { "$AGENT_PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }

# ---- the cluster: munged, slurmctld and slurmd as this user ----
trap 'stop_cluster; mock_stop' EXIT
slurm_start "$tmp" # sets node, user
tap_is "$(sinfo -h -o '%P %D %t')" "hutch* 1 idle" "a single-node Slurm runs as $user"

# ---- one machine, then the same set as a 4-task job array ----
# The mock listens on one port throughout: the shards' configuration
# (their base URL) is the single machine's, whichever script it plays.
MOCK_PORT=$(free_port)
export MOCK_PORT
mock_start "$(cat "$HUTCH_SRCDIR/examples/tasks/demo/mock-replies.json")"
common=(--base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" --retry-delay 0.05 --max-tries 1)
tap_status 0 "the demo set on one machine" "$HUTCH_BIN" benchmark "$HUTCH_SRCDIR/examples/tasks" --task demo \
  --num-workers 4 --output-dir "$tmp/single" "${common[@]}"
SINGLE=$(printf '%s\n' "$tap_stdout" | tail -n 1)

# The array's run: the model's server fails every request of array task
# 3's tasks (the demo's 4th, 8th, ... 20th), so that task stops
# (--max-api-failures) with its tasks unfinished; the merge, submitted as
# README.md says (afterany), must publish nothing.
mock_start "$("$AGENT_PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
for i, t in enumerate(d["tasks"]):
    if i % 4 == 3:
        t["steps"] = [{"status": 500, "error": "the server is gone"}] * 10
print(json.dumps(d))' "$HUTCH_SRCDIR/examples/tasks/demo/mock-replies.json")"
PATH=$(dirname "$HUTCH_BIN"):$PATH
export PATH HUTCH_BENCHMARK_OUT=$tmp/shards
tap_status 0 "sbatch --array=0-3 contrib/slurm/benchmark.sbatch" \
  sbatch --parsable --array=0-3 --cpus-per-task=2 --chdir="$tmp" --output="$tmp/job-%A_%a.log" \
  "$HUTCH_SRCDIR/contrib/slurm/benchmark.sbatch" "$HUTCH_SRCDIR/examples/tasks" demo "${common[@]}"
job=${tap_stdout%%;*}
tap_status 0 "the merge submitted after it (afterany), as README.md says" \
  sbatch --parsable --dependency="afterany:$job" --chdir="$tmp" --output="$tmp/merge-%j.log" \
  --wrap "hutch benchmark merge $tmp/shards/*_shard*of4 --output-dir $tmp/results"
merge_job=${tap_stdout%%;*}
# states JOB: "COUNT STATE EXIT" lines of a job's tasks.
states() {
  scontrol -o show job "$1" 2>/dev/null | grep -o 'JobState=[A-Z]* .*ExitCode=[0-9:]*' |
    sed 's/JobState=\([A-Z]*\).*ExitCode=\([0-9:]*\)/\1 \2/' | sort | uniq -c | sed 's/^ *//'
}
for _ in $(seq 3000); do
  [ -z "$(squeue -h -j "$job,$merge_job" 2>/dev/null)" ] && break
  sleep 0.2
done
tap_is "$(squeue -h -j "$job,$merge_job" 2>/dev/null)" "" "the job array and the merge end"
tap_is "$(states "$job")" $'3 COMPLETED 0:0\n1 FAILED 3:0' \
  "three array tasks complete; the one whose model API failed fails with status 3" ||
  for f in "$tmp"/job-*.log; do tap_diag "$f: $(tail -n 5 "$f")"; done
tap_is "$(states "$merge_job")" "1 FAILED 4:0" "the merge job fails (status 4): a shard is incomplete"
tap_like "$(cat "$tmp"/merge-*.log)" "shard 3 of 4 .*is incomplete" "and its log names the shard"
tap_is "$(find "$tmp/results" -mindepth 1 2>/dev/null | wc -l)" "0" "no merged result is published"
shards=("$tmp"/shards/*_shard*of4)
# Directory names begin with each task's start time: sorted by shard.
tap_is "$(for d in "${shards[@]}"; do basename "$d" | sed 's/.*_\(shard[0-9]of4\)$/\1/'; done | sort | tr '\n' ' ')" \
  "shard0of4 shard1of4 shard2of4 shard3of4 " "each array task wrote its own shard"

# ---- the shard resumed, then merged ----
mock_start "$(cat "$HUTCH_SRCDIR/examples/tasks/demo/mock-replies.json")"
failed=$(ls -d "$tmp"/shards/*_shard3of4)
tap_status 0 "hutch benchmark --resume completes the failed shard" \
  "$HUTCH_BIN" benchmark --resume "$failed" --num-workers 2 "${common[@]}"
tap_is "$(for d in "${shards[@]}"; do json "$d/results.json" 'd["total"]'; done | tr '\n' ' ')" "5 5 5 5 " \
  "each shard ran every fourth task"
tap_status 0 "hutch benchmark merge combines the shards" "$HUTCH_BIN" benchmark merge "${shards[@]}" \
  --output-dir "$tmp/merged"
MERGED=$(printf '%s\n' "$tap_stdout" | tail -n 1)
tap_is "$(json "$MERGED/results.json" '(d["total"], float(d["mean_score"]), d["num_errors"], d["config"] == json.load(open(sys.argv[3]))["config"])' "$SINGLE/results.json")" \
  "(20, 0.95, 0, True)" "the merged results.json is the single machine's"
tap_is "$(json "$MERGED/trajectory.json" 'sorted((k, v["reward"], v["agent_answer"], v["ground_truth"], [s.get("observation") for s in v["trajectory"]]) for k, v in d.items()) == sorted((k, v["reward"], v["agent_answer"], v["ground_truth"], [s.get("observation") for s in v["trajectory"]]) for k, v in json.load(open(sys.argv[3])).items())' "$SINGLE/trajectory.json")" \
  "True" "and so is its trajectory.json, step by step"
tap_ok "the merge writes report.html" test -s "$MERGED/report.html"
left=$("$HUTCH_BIN" ps 2>/dev/null | awk 'NR > 1')
tap_is "$left" "" "no sandbox is left on the node"
stop_cluster
tap_is "$(pgrep -u "$user" -f "$s/" | tr '\n' ' ')" "" "the cluster's daemons are stopped"

tap_done
