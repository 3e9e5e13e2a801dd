#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch benchmark reads back files of run directories that may have been
# tampered with (a shard from another machine, an edited results.jsonl):
# merge checks every field of a shard's files and refuses a malformed one
# by name, never crashing; --resume keeps a line's run_dir under runs/ (no
# host file reaches report.html); summary.md shows what a task or model
# wrote as text, never as Markdown or HTML.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
tmp=$(hutch_test_tmpdir)
export HUTCH_STATE_DIR=$tmp/state
mkdir -p "$HUTCH_STATE_DIR" "$tmp/host/files"
json() { "$AGENT_PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
bench_dir() { OUT=$(printf '%s\n' "$tap_stdout" | tail -n 1); }

# A host directory that looks like a hutch run's: a trajectory and an image.
"$AGENT_PY" - "$tmp/host" <<'PY'
import base64, json, sys
d = sys.argv[1]
json.dump({"steps": [{"observation": "HOST-SECRET-OBSERVATION", "action": {"function": "x"}}]},
          open(d + "/trajectory.json", "w"))
open(d + "/files/leak.png", "wb").write(base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAGklEQVR4nGP8z8DwnwEPYMIn+f8/A8MoGKEhAP0gAh9uDlMlAAAAAElFTkSuQmCC"))
PY

# shard DIR SPEC: a shard's run directory as hutch benchmark writes it,
# changed by SPEC (python over meta, lines, results, status: its
# benchmark.json's status, None for none, its "tasks" the lines' count
# unless set; raw_meta, raw_lines: text instead).
shard() {
  mkdir -p "$1/logs" "$1/runs"
  "$AGENT_PY" - "$1" "$2" <<'PY'
import json, sys
d, spec = sys.argv[1], sys.argv[2]
meta = {"taskdir": "/nonexistent/tasks", "task": "t", "config": {"mode": "llm-in-sandbox", "docker_image": None,
        "llm_name": "openai/m", "llm_base_url": "http://127.0.0.1:1/v1", "max_steps": 100, "temperature": 1.0,
        "max_token_limit": 65536, "max_tokens_per_call": 65536, "max_response_len": -1, "extra_body": None,
        "save_litellm_response": False}, "shard": [0, 2], "start_id": -1, "end_id": -1}
line = lambda i, **kw: dict({"id": i, "score": 1, "error": None, "agent_answer": "x", "ground_truth": "x",
                             "problem_statement": "p", "elapsed_seconds": 1.5, "exit_code": 0}, **kw)
lines = [line("a0"), line("a1")]
results = {"elapsed_time_seconds": 2.0}
raw_meta = raw_lines = None
status = {"complete": True, "stopped": None}
exec(spec)
if status is not None and isinstance(meta, dict):
    meta["status"] = dict({"tasks": len(lines)}, **status)
open(d + "/benchmark.json", "w").write(raw_meta if raw_meta is not None else json.dumps(meta))
open(d + "/results.jsonl", "w").write(raw_lines if raw_lines is not None
                                      else "".join(json.dumps(l) + "\n" for l in lines))
open(d + "/results.json", "w").write(json.dumps(results))
PY
}
merge() { "$HUTCH_BIN" benchmark merge "$@" --output-dir "$tmp/merged"; }

# ---- merge: every field of a shard's files checked ----
# refused DESC REGEX SPEC: shards 0 and 1 of 2 as SPEC makes them (shard 1
# with lines of its own): the merge is refused (exit 2, not a crash), naming
# the file and field.
n=0
refused() {
  n=$((n + 1))
  rm -rf "$tmp/s$n"
  shard "$tmp/s$n/x" "$3"
  shard "$tmp/s$n/y" "$3"'
meta["shard"] = [1, 2]
lines, raw_lines = [line("b0")], None'
  tap_status 2 "merge refuses a shard whose $1" merge "$tmp/s$n/x" "$tmp/s$n/y"
  tap_like "$tap_stderr" "$2" "naming the file and field"
}
refused 'benchmark.json has no "task"' 's[0-9]+/x/benchmark\.json: "task"' 'del meta["task"]'
refused '"task" is a number' 's[0-9]+/x/benchmark\.json: "task"' 'meta["task"] = 5'
refused '"task" is a path' 's[0-9]+/x/benchmark\.json: "task"' 'meta["task"] = "../../escape"'
refused 'benchmark.json has no "config"' 's[0-9]+/x/benchmark\.json: "config"' 'del meta["config"]'
refused '"config" has no "mode"' 's[0-9]+/x/benchmark\.json: "config\.mode"' 'del meta["config"]["mode"]'
refused '"config.llm_name" is a list' 's[0-9]+/x/benchmark\.json: "config\.llm_name"' 'meta["config"]["llm_name"] = [1]'
refused 'shard count is 1e12' 's[0-9]+/x/benchmark\.json: "shard"' 'meta["shard"] = [0, 10 ** 12]'
refused 'shard count is -1' 's[0-9]+/x/benchmark\.json: "shard"' 'meta["shard"] = [0, -1]'
refused '"shard" is an object' 's[0-9]+/x/benchmark\.json: "shard"' 'meta["shard"] = {"k": 0, "n": 2}'
refused '"shard" holds 0.5' 's[0-9]+/x/benchmark\.json: "shard"' 'meta["shard"] = [0.5, 2]'
refused '"shard" holds strings' 's[0-9]+/x/benchmark\.json: "shard"' 'meta["shard"] = ["0", "2"]'
refused 'benchmark.json is a list' 's[0-9]+/x/benchmark\.json' 'raw_meta = "[1, 2]"'
refused 'line has a numeric id' 's[0-9]+/x/results\.jsonl line 2: "id"' 'lines[1]["id"] = 5'
refused 'line has a text score' 's[0-9]+/x/results\.jsonl line 1: "score"' 'lines[0]["score"] = "1"'
refused 'line has an infinite score' 's[0-9]+/x/results\.jsonl line 2: "score"' 'raw_lines = json.dumps(lines[1]) + "\n" + json.dumps(lines[0]).replace("\"score\": 1", "\"score\": 1e999") + "\n"'
refused 'line has a score of 1e300' 's[0-9]+/x/results\.jsonl line 1: "score"' 'lines[0]["score"] = 1e300'
refused 'line has a negative time' 's[0-9]+/x/results\.jsonl line 2: "elapsed_seconds"' 'lines[1]["elapsed_seconds"] = -1'
refused 'line is not JSON' 's[0-9]+/x/results\.jsonl line 2' 'raw_lines = json.dumps(lines[0]) + "\nnot json\n"'
refused 'line has an absolute run_dir' 's[0-9]+/x/results\.jsonl line 1: "run_dir"' 'lines[0]["run_dir"] = "'"$tmp"'/host"'
refused 'line has a run_dir with ..' 's[0-9]+/x/results\.jsonl line 1: "run_dir"' 'lines[0]["run_dir"] = "runs/../../../host"'
refused 'run_dir is a symlink out of it' 's[0-9]+/x/results\.jsonl line 1: "run_dir"' \
  'import os; os.symlink("'"$tmp"'/host", d + "/runs/a0"); lines[0]["run_dir"] = "runs/a0"'
refused 'results.json has a text time' 's[0-9]+/x/results\.json: "elapsed_time_seconds"' 'results["elapsed_time_seconds"] = "x"'
refused 'task appears twice' 'a0' 'lines.append(line("a0"))'
refused '"status" is a list' 's[0-9]+/x/benchmark\.json: "status"' 'status = None; meta["status"] = [1]'
refused 'status has no task count' 's[0-9]+/x/benchmark\.json: "status"' 'status["tasks"] = "2"'
refused 'line has an end of no known name' 's[0-9]+/x/results\.jsonl line 1: "end"' 'lines[0]["end"] = "done"'
refused 'line is finished with an error' 's[0-9]+/x/results\.jsonl line 2: "end"' \
  'lines[1].update(end="finished", error="x", score=0)'
shard "$tmp/sl/x" 'pass'
shard "$tmp/sl/y" 'meta["shard"] = [1, 2]; lines = [line("b0")]'
ln -sf "$tmp/host/trajectory.json" "$tmp/sl/x/results.jsonl"
tap_status 2 "merge refuses a shard whose results.jsonl is a symlink" merge "$tmp/sl/x" "$tmp/sl/y"
tap_like "$tap_stderr" "sl/x/results\.jsonl: " "naming the file"
shard "$tmp/ok/x" 'pass'
shard "$tmp/ok/y" 'meta["shard"] = [1, 2]; lines = [line("b0")]'
tap_status 0 "two good shards merge" merge "$tmp/ok/x" "$tmp/ok/y"
bench_dir
tap_is "$(json "$OUT/results.json" '(d["total"], d["mean_score"], d["num_errors"], d["elapsed_time_seconds"])')" \
  "(3, 1.0, 0, 2.0)" "into the run one machine would have made (its mean and time floats, as LLM-in-Sandbox writes them)"
tap_status 2 "a merged run is not taken as a shard" merge "$OUT"
tap_like "$tap_stderr" "merge of shards" "and the message says to give its shards"
shard "$tmp/wide/x" 'meta["shard"] = [0, 1 << 20]'
tap_status 4 "a shard of 1048576 (the most there may be) alone is not the whole run" merge "$tmp/wide/x"
tap_check $(($(printf '%s\n' "$tap_stderr" | wc -l) > 20)) "and the missing ones are told in a few lines, not one each"
tap_status 0 "it merges alone with --allow-partial" merge "$tmp/wide/x" --allow-partial
bench_dir
tap_is "$(json "$OUT/benchmark.json" '(d["status"]["missing_shard_count"], len(d["status"]["missing_shards"]), d["status"]["missing_shards"][:3])')" \
  "(1048575, 1000, [1, 2, 3])" "benchmark.json counts the missing shards, naming the first thousand"
tap_like "$(head -n 3 "$OUT/summary.md")" "Partial: shards 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ... of 1048576 \(1048575 in all\) missing" \
  "and summary.md the first ten"
# Shards of an older hutch (no status) and of a run that did not complete.
shard "$tmp/st/x" 'status = None'
shard "$tmp/st/y" 'meta["shard"] = [1, 2]; lines = [line("b0", score=0, error="the model\x27s API failed", end="api_error")]; status = {"complete": False, "stopped": "2 tasks in a row ended \x1b[2J", "tasks": 3}'
tap_status 4 "merge refuses a shard without a status and an incomplete one" merge "$tmp/st/x" "$tmp/st/y"
tap_like "$tap_stderr" "shard 0 of 2 .*st/x.* is incomplete: its benchmark.json has no status" "naming the first and why"
tap_like "$tap_stderr" "shard 1 of 2 .*st/y.* is incomplete: its run did not complete \(2 tasks in a row ended \\\\x1b\[2J\)" \
  "and the second and why, escaped"
tap_status 0 "--allow-partial merges what they measured" merge "$tmp/st/x" "$tmp/st/y" --allow-partial
bench_dir
tap_is "$(json "$OUT/results.json" '(d["total"], d["incomplete_shards"], d["missing_shards"])')" "(2, [0, 1], [])" \
  "two tasks (b0 did not finish), the incomplete shards named"
shard "$tmp/wider/x" 'meta["shard"] = [0, (1 << 20) + 1]'
tap_status 2 "a shard of one more is refused" merge "$tmp/wider/x"

# ---- summary.md: what a task or model wrote is text ----
shard "$tmp/md/x" '
meta["task"] = "t*em*_u_"
meta["config"]["llm_name"] = "openai/m ![i](http://h/llm.png) <b>x</b>"
gt = "![x](http://h/?gt=SECRET) [a](javascript:alert(1)) | `code` <img src=x> &amp; # h *em* _u_ ~~s~~ www.evil.com http://evil.com a@b.co"
lines = [line("a|b` ![x](http://h/?gt=ID)", score=0, error="ValueError: %r" % gt),
         line("# heading", score=0, error="x\n# h2\n| c | d |\n![y](http://h/y.png)"),
         line("``", score=0, error="`` a `` b ``` c")]'
shard "$tmp/md/y" 'meta = json.load(open(sys.argv[1] + "/../x/benchmark.json")); meta["shard"] = [1, 2]; lines = [line("plain")]'
tap_status 0 "shards whose ids, errors, task and model name hold Markdown and HTML" merge "$tmp/md/x" "$tmp/md/y"
bench_dir
if command -v cmark-gfm >/dev/null; then
  cmark-gfm -e table -e autolink -e strikethrough -e tagfilter "$OUT/summary.md" >"$tmp/summary.html"
  tap_is "$("$AGENT_PY" - "$tmp/summary.html" <<'PY'
import html.parser, sys
class P(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.rows, self.text = [], [], ""
    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        if tag == "tr":
            self.rows.append(0)
        if tag in ("td", "th"):
            self.rows[-1] += 1
    def handle_data(self, d):
        self.text += d
p = P()
p.feed(open(sys.argv[1]).read())
live = sorted(set(t for t in p.tags if t in ("a", "img", "em", "strong", "del", "b", "h2", "h3", "script")))
print(live, p.tags.count("h1"), p.rows, "gt=SECRET" in p.text, "![x](http://h/?gt=ID)" in p.text)
PY
)" "[] 1 [4, 4, 5, 5, 5, 5, 5] True True" \
    "rendered as GitHub renders it (cmark-gfm): no link, image, emphasis, heading or tag of theirs, no table broken, their text shown"
else
  tap_skip "summary.md renders with no link, image, emphasis, heading or table broken" \
    "cmark-gfm is not installed (tests/setup-host.sh)"
fi
tap_is "$("$AGENT_PY" -c 'import re, sys
ls = open(sys.argv[1]).read().splitlines()
print([len(re.findall(r"(?<!\\)\|", l)) for l in ls if l.startswith("|")], [l for l in ls[1:] if l.startswith("#")])' "$OUT/summary.md")" \
  "[5, 5, 5, 6, 6, 6, 6, 6, 6] []" "summary.md's rows have four and five cells each, and one heading (its first line)"

# ---- --resume: a results line's run_dir stays under runs/ ----
IMAGE=$(hutch_test_rootfs debian) || { tap_skip "--resume checks" "debian test rootfs unavailable"; tap_done; }
mkdir -p "$tmp/set/r"
printf 'dataset: "json"\ndata_files: "r/data.jsonl"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
  >"$tmp/set/r/config.yaml"
printf 'def compute_score(a, g, **k):\n    return 1.0 if a == g else 0.0\n' >"$tmp/set/r/reward.py"
printf '%s\n' '{"id": "ra", "problem_statement": "R-A", "ground_truth": "1"}' \
  '{"id": "rb", "problem_statement": "R-B", "ground_truth": "2"}' >"$tmp/set/r/data.jsonl"
rscript='{"tasks": [{"match": "R-A", "steps": [{"calls": [["execute_bash", {"command": "echo 1 > /testbed/answer.txt"}]]}]},
  {"match": "R-B", "steps": [{"calls": [["execute_bash", {"command": "echo 2 > /testbed/answer.txt"}]]}]}]}'
mock_start "$rscript"
tap_status 0 "a run of two tasks" "$HUTCH_BIN" benchmark "$tmp/set" --task r --base-url "$MOCK_URL" --model mock \
  --rootfs "$IMAGE" --output-dir "$tmp/out" --retry-delay 0.05
bench_dir
RUN=$OUT
# report DIR: what of the host's files report.html holds (its trajectory's
# observation, its image), and the tasks.
report() {
  PYTHONPATH=$HUTCH_SRCDIR/tests/lib "$AGENT_PY" - "$1/report.html" <<'PY'
import sys
import report_page
d = report_page.parse(open(sys.argv[1], encoding="utf-8").read())
leaked = [s.attrs["data-id"] for s in d.find_all("section", "task-detail")
          if "HOST-SECRET" in s.text() or "leak.png" in s.text()]
print(leaked, sorted(r.attrs["data-id"] for r in d.find_all("tr", "task")))
PY
}
# tampered NAME DESC EXPR: a copy of the run whose line ra has run_dir EXPR
# (python, d: the copy), resumed.
tampered() {
  rm -rf "$tmp/$1"
  cp -a "$RUN" "$tmp/$1"
  "$AGENT_PY" - "$tmp/$1" "$3" <<'PY'
import json, os, sys
d = sys.argv[1]
ls = [json.loads(l) for l in open(d + "/results.jsonl")]
for l in ls:
    if l["id"] == "ra":
        l["run_dir"] = eval(sys.argv[2])
open(d + "/results.jsonl", "w").write("".join(json.dumps(l) + "\n" for l in ls))
PY
  mock_start "$rscript"
  tap_status 0 "--resume over a results line whose run_dir $2" "$HUTCH_BIN" benchmark --resume "$tmp/$1" \
    --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" --retry-delay 0.05
  tap_is "$(report "$tmp/$1")" "[] ['ra', 'rb']" "puts no host file into report.html"
  tap_like "$tap_stderr" "results\.jsonl line [0-9]+: \"run_dir\"" "the line is refused, and the message says why"
  tap_is "$(mock_count)" "2" "and its task runs again (its two requests)"
}
tampered e1 "is a host directory" '"'"$tmp"'/host"'
tampered e2 "leads out with .." '"runs/../../host"'
tampered e3 "is a symlink to a host directory" '(os.symlink("'"$tmp"'/host", d + "/runs/ra/evil"), "runs/ra/evil")[1]'
# A run_dir of its own whose trajectory.json is a symlink to a host file.
rm -rf "$tmp/e4"
cp -a "$RUN" "$tmp/e4"
ra=$("$AGENT_PY" -c 'import json, sys
print([json.loads(l)["run_dir"] for l in open(sys.argv[1]) if json.loads(l)["id"] == "ra"][0])' "$tmp/e4/results.jsonl")
ln -sf "$tmp/host/trajectory.json" "$tmp/e4/$ra/trajectory.json"
mock_start "$rscript"
tap_status 0 "--resume over a run whose trajectory.json is a symlink to a host file" \
  "$HUTCH_BIN" benchmark --resume "$tmp/e4" --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" --retry-delay 0.05
tap_is "$(report "$tmp/e4")" "[] ['ra', 'rb']" "does not follow it into report.html"
# Lines of tasks this run does not have, and a task's line twice.
rm -rf "$tmp/e5"
cp -a "$RUN" "$tmp/e5"
"$AGENT_PY" - "$tmp/e5/results.jsonl" <<'PY'
import json, sys
ls = [json.loads(l) for l in open(sys.argv[1])]
ghost = dict(ls[0], id="ghost", score=1)
open(sys.argv[1], "a").write(json.dumps(ghost) + "\n" + json.dumps(ls[0]) + "\n")
PY
mock_start "$rscript"
tap_status 0 "--resume over a line of a task not in the run, and a line twice" "$HUTCH_BIN" benchmark --resume "$tmp/e5" \
  --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" --retry-delay 0.05
tap_is "$(json "$tmp/e5/results.json" '(d["total"], d["mean_score"])')" "(2, 1.0)" "counts each task of the run once"
tap_like "$tap_stderr" "\"id\".*ghost" "and says which line it refused"
tap_is "$(mock_count)" "0" "(nothing to run again)"
# A results.jsonl that is a symlink (to a host file): no record to go on
# from, nor to rewrite.
rm -rf "$tmp/e6"
cp -a "$RUN" "$tmp/e6"
cp "$tmp/host/trajectory.json" "$tmp/host-copy.json"
ln -sf "$tmp/host-copy.json" "$tmp/e6/results.jsonl"
tap_status 125 "--resume over a results.jsonl that is a symlink is refused" "$HUTCH_BIN" benchmark --resume "$tmp/e6" \
  --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" --retry-delay 0.05
tap_ok "and the file it leads to is untouched" cmp "$tmp/host/trajectory.json" "$tmp/host-copy.json"

tap_done
