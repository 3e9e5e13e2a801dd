#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# report.html, the page a researcher reads: hutch benchmark's (a run of a
# task set) and hutch report's (a run directory, of hutch run or of hutch
# benchmark), each checked in headless Chromium, with its script and
# without it, and screenshot at two widths.  Pass and fail at a glance by
# score and error kind, sorted and filtered; each step's call as what it is
# (a command, a diff, a file), its exit, wall time, model latency and
# tokens; the run's totals; everything a model or task wrote inert; the
# page's HTML, CSS and JS from files of the source tree; hutch report never
# destroys a page it cannot rebuild, and shows a run's real time.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
command -v chromium >/dev/null || command -v chromium-browser >/dev/null ||
  tap_skip_all "chromium is not installed (tests/setup-host.sh)"
IMAGE=$(hutch_test_rootfs debian) || tap_skip_all "debian test rootfs unavailable (tests/setup-host.sh)"
AGENT_IMAGE=$IMAGE
tmp=$(hutch_test_tmpdir)
mkdir -p "$tmp/state"
export HUTCH_STATE_DIR=$tmp/state
shots=${HUTCH_TEST_SHOTS:-$HUTCH_BUILDDIR/tests/integration/report-screenshots/$HUTCH_TEST_MODE}
mkdir -p "$shots" 2>/dev/null && [ -w "$shots" ] || shots=$tmp/screenshots
mkdir -p "$shots"

# page ARGS...: what `report_page.py ARGS` prints and writes, from one
# Chromium kept for the whole script (report_page.py serve, a coprocess):
# each start of the browser costs more CPU than the page it then loads.
coproc PAGES { "$AGENT_PY" "$HUTCH_SRCDIR/tests/lib/report_page.py" serve; }
page() {
  local out answer=
  out=$(mktemp "$tmp/page.XXXXXX") || return 1
  { printf '%d\n' $(($# + 1)) && printf '%s\0' "$out" "$@"; } >&"${PAGES[1]}" &&
    IFS= read -r answer <&"${PAGES[0]}"
  if [ "$answer" != ok ]; then
    echo "report_page.py serve: ${answer:-no answer} (page $*)" >&2
    rm -f "$out"
    return 1
  fi
  cat "$out"
  rm -f "$out"
}
# dom Q FILE [ARGS...]: python Q with `d` the parsed DOM in FILE (report_page.parse).
dom() {
  local q=$1
  shift
  PYTHONPATH=$HUTCH_SRCDIR/tests/lib "$AGENT_PY" -c '
import json, re, sys
import report_page as rp
d = rp.parse(open(sys.argv[1], encoding="utf-8").read())
args = sys.argv[2:]
def rows(d):
    t = d.by_id("tasks")
    return [r for r in t.find_all("tr") if "task" in r.classes()] if t else []
def cell(r, name):
    c = [x for x in r.find_all("td") if name in x.classes()]
    return c[0].text().strip() if c else None
def totals(d):
    t = d.by_id("totals")
    return {tr.find("th").text().strip(): tr.find("td").text().strip() for tr in t.find_all("tr") if tr.find("th") and tr.find("td")} if t else {}
'"$q" "$@" 2>&1
}
# png_width FILE: the width in an PNG's IHDR.
png_width() { "$AGENT_PY" -c 'import struct, sys; b = open(sys.argv[1], "rb").read(24); print(struct.unpack(">I", b[16:20])[0] if b[:8] == b"\x89PNG\r\n\x1a\n" else 0)' "$1"; }

# ---- a task set with every kind of result ----
set_dir=$tmp/tasks
mkdir -p "$set_dir/r"
cat >"$set_dir/r/config.yaml" <<'YAML'
dataset: "json"
data_files: "r/data.jsonl"
system_prompt: "sys {working_dir}"
instance_prompt: "{problem_statement}"
YAML
cat >"$set_dir/r/reward.py" <<'PY'
def compute_score(agent_answer, ground_truth, **kw):
    if kw.get("id") == "raises":
        raise ValueError("no score for this one")
    if kw.get("id") == "half":
        return 0.5
    return 1.0 if agent_answer == ground_truth else 0.0
PY
# What the model and the task write into the hostile task: markup that would
# mark the page's body if it ever ran.
hostile_answer='</script><script>document.body.setAttribute("data-pwned","answer")</script><img src=x onerror=document.body.setAttribute("data-pwned","img")>'
"$AGENT_PY" - "$set_dir/r" "$hostile_answer" <<'PY'
import json, sys
d, hostile = sys.argv[1], sys.argv[2]
rows = [
    {"id": "right", "problem_statement": "R-RIGHT: what is 5 + 7?", "ground_truth": "12"},
    {"id": "wrong", "problem_statement": "R-WRONG: what is 5 + 7?", "ground_truth": "12"},
    {"id": "half", "problem_statement": "R-HALF", "ground_truth": "x"},
    {"id": "raises", "problem_statement": "R-RAISES", "ground_truth": "x"},
    {"id": "edit", "problem_statement": "R-EDIT: fix prog.py", "ground_truth": "2"},
    {"id": 'zz"<i>hostile', "problem_statement": "R-HOSTILE <b onmouseover=alert(1)>", "ground_truth": hostile},
]
open(d + "/data.jsonl", "w").write("".join(json.dumps(r) + "\n" for r in rows))
bash = lambda c, **kw: dict({"calls": [["execute_bash", {"command": c}]]}, **kw)
submit = {"calls": [["submit", {}]]}
def usage(p, c, cost=None):
    u = {"prompt_tokens": p, "completion_tokens": c, "total_tokens": p + c}
    if cost is not None:
        u["cost"] = cost
    return u
script = {"tasks": [
    {"match": "R-RIGHT", "steps": [
        bash("echo 12 > /testbed/answer.txt", content="R-THOUGHT: I add them in the shell.",
             reasoning="R-REASONING: 5 + 7 is 12.", usage=usage(1000, 50, 0.25)),
        dict(submit, usage=usage(1100, 5, 0.5))]},
    {"match": "R-WRONG", "steps": [bash("echo 7 > /testbed/answer.txt"), submit]},
    {"match": "R-HALF", "steps": [bash("echo x > /testbed/answer.txt"), submit]},
    {"match": "R-RAISES", "steps": [bash("echo x > /testbed/answer.txt"), submit]},
    {"match": "R-EDIT", "steps": [
        {"calls": [["str_replace_editor", {"command": "create", "path": "/testbed/prog.py",
                                           "file_text": "def f():\n    return 1\n"}],
                   ["str_replace_editor", {"command": "str_replace", "path": "/testbed/prog.py",
                                           "old_str": "    return 1", "new_str": "    return 2"}]],
         "usage": usage(2000, 300)},
        bash("cd /testbed && python3 -c 'import prog; print(prog.f())' > answer.txt; cat answer.txt; exit 3"),
        submit]},
    {"match": "R-HOSTILE", "steps": [
        bash("printf '%s' '" + hostile.replace("'", "'\\''") + "' > /testbed/answer.txt; cat /testbed/answer.txt",
             content='<img src=x onerror=document.body.setAttribute("data-pwned","thought")>',
             reasoning='</script><script>document.body.setAttribute("data-pwned","reasoning")</script>'),
        submit]},
]}
open(d + "/mock.json", "w").write(json.dumps(script))
PY
mock_start "$(cat "$set_dir/r/mock.json")"
tap_status 0 "a task set with a right, a wrong, a partial, a failing and a hostile task runs" \
  "$HUTCH_BIN" benchmark --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" --output-dir "$tmp/out" \
  --retry-delay 0.05 "$set_dir" --task r --num-workers 3
OUT=$(printf '%s\n' "$tap_stdout" | tail -n 1)
. "$HUTCH_SRCDIR/tests/lib/bench.sh"
tap_is "$(lines 'sorted((l["id"], l["score"], bool(l["error"])) for l in ls)')" \
  "[('edit', 1, False), ('half', 0.5, False), ('raises', 0, True), ('right', 1, False), ('wrong', 0, False), ('zz\"<i>hostile', 1, False)]" \
  "the scores: 1, 0.5, an error, 1, 0 (answer 7, truth 12), 1"

# ---- each step's tokens and model latency, in the run's trajectory.json ----
traj_of() { "$AGENT_PY" -c '
import json, sys
ls = [json.loads(l) for l in open(sys.argv[1] + "/results.jsonl")]
l = [l for l in ls if l["id"] == sys.argv[2]][0]
t = json.load(open(sys.argv[1] + "/" + l["run_dir"] + "/trajectory.json"))
print(eval(sys.argv[3]))' "$OUT" "$@"; }
tap_is "$(traj_of right '[(s["metadata"].get("reply"), s["metadata"].get("prompt_tokens"), s["metadata"].get("completion_tokens"), s["metadata"].get("cost")) for s in t["steps"]]')" \
  "[(1, 1000, 50, 0.25), (2, 1100, 5, 0.5)]" \
  "trajectory.json: each step's reply, its prompt and completion tokens and the cost the endpoint reported"
tap_is "$(traj_of edit '[(s["metadata"].get("reply"), s["metadata"].get("prompt_tokens"), s["action"]["function"]) for s in t["steps"]]')" \
  "[(1, 2000, 'str_replace_editor'), (1, None, 'str_replace_editor'), (2, 100, 'execute_bash'), (3, 100, 'submit')]" \
  "a reply's second call shares its reply's number, and its tokens are counted once"
tap_is "$(traj_of right 'sorted(t["steps"][0]["metadata"])')" \
  "['completion_tokens', 'cost', 'elapsed', 'exec_time', 'exit_code', 'prompt_tokens', 'reply', 'step', 'tool_call_id', 'tool_time']" \
  "LLM-in-Sandbox's step and exec_time keep their names beside hutch's"
tap_is "$(traj_of right '(t["hutch"]["usage"]["prompt_tokens"], t["hutch"]["usage"]["completion_tokens"], t["hutch"]["usage"].get("cost"))')" \
  "(2100, 55, 0.75)" "and the run's usage adds up the cost"

# ---- the benchmark's page, with its script ----
bench_page=$OUT/report.html
page dom "$bench_page" >"$tmp/bench.dom"
tap_is "$(dom 'print(len(rows(d)), [r.attrs.get("data-id") for r in rows(d)])' "$tmp/bench.dom")" \
  "6 ['edit', 'half', 'raises', 'right', 'wrong', 'zz\"<i>hostile']" \
  "report.html: a row per task, in the order of their ids (not the order they finished in)"
tap_is "$(dom '
for r in rows(d):
    print(r.attrs["data-id"], [c for c in r.classes() if c in ("pass", "fail", "partial", "error")], cell(r, "result"))' "$tmp/bench.dom")" \
  "edit ['pass'] pass
half ['partial'] partial
raises ['error'] error: scoring_error
right ['pass'] pass
wrong ['fail'] fail
zz\"<i>hostile ['pass'] pass" \
  "pass, fail and partial by score, an error by its kind: the wrong answer (7 for 12) is no pass"
tap_is "$(dom 'r = [r for r in rows(d) if r.attrs["data-id"] == "wrong"][0]; print(cell(r, "score"), cell(r, "answer"), cell(r, "truth"), cell(r, "steps"), cell(r, "tokens"))' "$tmp/bench.dom")" \
  "0.0000 7 12 2 220" "its row: score, answer, ground truth, steps, tokens"
tap_like "$(dom 'r = [r for r in rows(d) if r.attrs["data-id"] == "wrong"][0]; print(cell(r, "time"))' "$tmp/bench.dom")" \
  '^[0-9]+\.[0-9] s$' "and its time"
tap_is "$(dom 't = totals(d); print([t.get(k) for k in ("tasks", "mean score", "passed", "partial", "failed", "errors", "tokens in", "tokens out", "cost")])' "$tmp/bench.dom")" \
  "['6', '0.5833', '3', '1', '1', '1', '5100', '455', '0.75']" \
  "the totals: tasks, mean score, passed, partial, failed, errors, tokens in and out, the cost the endpoint reported"
tap_like "$(dom 't = totals(d); print(t.get("time"), "|", t.get("model time"), "|", t.get("tool time"))' "$tmp/bench.dom")" \
  '^[0-9]+\.[0-9] s \| [0-9]+\.[0-9]+ s \| [0-9]+\.[0-9]+ s$' "the run's time, and its model time against its tool time"
tap_is "$(dom '
t = d.by_id("distribution")
print([(tr.find("th").text().strip(), tr.find("td").text().strip()) for tr in t.find_all("tr") if tr.find("th") and tr.find("td")] if t else None)' "$tmp/bench.dom")" \
  "[('0.0000', '1'), ('0.5000', '1'), ('1.0000', '3')]" "the score distribution (the error apart)"
tap_is "$(dom '
t = d.by_id("errors")
print([[c.text().strip() for c in tr.find_all("td")][:2] for tr in t.find_all("tr") if tr.find("td")] if t else None)' "$tmp/bench.dom")" \
  "[['scoring_error', '1']]" "the error kinds, counted"

# Sorting and filtering: the state in the fragment, as a link keeps it.
page dom "$bench_page" "sort=-tokens" >"$tmp/sorted.dom"
tap_is "$(dom 'print([r.attrs["data-id"] for r in rows(d)][:2])' "$tmp/sorted.dom")" "['edit', 'right']" \
  "report.html#sort=-tokens: the rows by tokens, most first"
page dom "$bench_page" "sort=score" >"$tmp/sorted.dom"
tap_is "$(dom 'ids = [r.attrs["data-id"] for r in rows(d)]; print(sorted(ids[:2]), ids[2])' "$tmp/sorted.dom")" \
  "['raises', 'wrong'] half" "report.html#sort=score: lowest scores first"
page dom "$bench_page" "result=fail" >"$tmp/filtered.dom"
tap_is "$(dom 'print([r.attrs["data-id"] for r in rows(d) if "hidden" not in r.attrs])' "$tmp/filtered.dom")" "['wrong']" \
  "report.html#result=fail: only the failed tasks"
page dom "$bench_page" "open=all" >"$tmp/open.dom"
tap_is "$(dom 'print(sorted(set("open" in s.find("details").attrs for s in d.find_all("section", "task-detail"))))' "$tmp/open.dom")" \
  "[True]" "report.html#open=all: every trajectory open"
page dom "$bench_page" "result=error" >"$tmp/filtered.dom"
tap_is "$(dom 'print([r.attrs["data-id"] for r in rows(d) if "hidden" not in r.attrs])' "$tmp/filtered.dom")" "['raises']" \
  "report.html#result=error: only the tasks that ended in an error"

# A task's steps: the call as what it is, with its facts.
tap_is "$(dom '
s = d.by_id("task-edit")
steps = s.find_all(cls="step") if s else []
c = steps[0].find(cls="call")
print(len(steps), c.classes(), repr(c.find("pre", "code").text()))' "$tmp/bench.dom")" \
  "4 ['call', 'create'] 'def f():\n    return 1\n'" \
  "a created file is shown as its code (not a JSON-escaped string)"
tap_is "$(dom '
s = d.by_id("task-edit")
diff = s.find_all(cls="step")[1].find("pre", "diff")
print([(sp.classes()[0], sp.text().rstrip("\n")) for sp in diff.find_all("span")])' "$tmp/bench.dom")" \
  "[('del', '-    return 1'), ('add', '+    return 2')]" "an edit is shown as a diff"
tap_is "$(dom '
st = d.by_id("task-edit").find_all(cls="step")[2]
print(st.find("pre", "cmd").text().startswith("cd /testbed && python3"), st.find(cls="exit").text(), "bad" in st.find(cls="exit").classes(), "[STDOUT]\n2\n" in st.find("pre", "obs").text())' "$tmp/bench.dom")" \
  "True exit 3 True True" "a command is shown as a command, with its exit status (non-zero marked) and what it printed"
tap_is "$(dom '
steps = d.by_id("task-edit").find_all(cls="step")
t = steps[0].find(cls="tokens")
print(t.attrs.get("data-in"), t.attrs.get("data-out"), steps[1].find(cls="tokens"), steps[1].find(cls="same-reply") is not None)' "$tmp/bench.dom")" \
  "2000 300 None True" "each step: the tokens of its model call, once per reply"
tap_like "$(dom '
st = d.by_id("task-edit").find_all(cls="step")[2]
print(st.find(cls="latency").text(), "|", st.find(cls="wall").text())' "$tmp/bench.dom")" \
  '^model [0-9]+\.[0-9]{3} s \| tool [0-9]+\.[0-9]{3} s$' "and the model's latency and the tool's wall time"
tap_is "$(dom '
st = d.by_id("task-right").find_all(cls="step")[0]
print(st.find(cls="reasoning").text().strip(), "|", st.find(cls="thought").text().strip())' "$tmp/bench.dom")" \
  "R-REASONING: 5 + 7 is 12. | R-THOUGHT: I add them in the shell." "and its reasoning and thought"

# ---- what the model and the task wrote runs nothing ----
tap_is "$(dom '
b = d.find("body")
print(b.attrs.get("data-pwned"), len(d.find_all("script")), [i.attrs.get("src", "")[:5] for i in d.find_all("img")])' "$tmp/bench.dom")" \
  "None 1 []" "no </script>, onerror= or <img> of an answer, thought or observation ran or became an element"
tap_is "$(dom '
r = [r for r in rows(d) if r.attrs["data-id"].startswith("zz")][0]
print(cell(r, "answer") == args[0][:80] or cell(r, "answer").startswith(args[0][:60]), r.find("i"))' "$tmp/bench.dom" "$hostile_answer")" \
  "True None" "the hostile answer and id are shown as text"
tap_is "$(dom '
s = [x for x in d.find_all("section") if "task-detail" in x.classes() and "hostile" in x.text()][0]
print(s.find(cls="answer").text().strip() == args[0], args[0] in s.find("pre", "obs").text())' "$tmp/bench.dom" "$hostile_answer")" \
  "True True" "in full in the task's view, as its answer and observation"
tap_is "$("$AGENT_PY" - "$bench_page" <<'PY'
import re, sys
t = open(sys.argv[1], encoding="utf-8").read()
csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', t)
csp = csp.group(1) if csp else ""
script_src = re.search(r"script-src ([^;]*)", csp)
nonce = re.search(r"<script nonce=\"([A-Za-z0-9+/=_-]{16,})\">", t)
print("default-src 'none'" in csp, bool(script_src) and "unsafe-inline" not in script_src.group(1),
      bool(nonce) and ("'nonce-%s'" % nonce.group(1)) in csp, t.count("<script"),
      bool(re.search(r"(src|href)=\"(?!data:|#)", t)))
PY
)" "True True True 1 False" \
  "the page's own script runs by its nonce, no inline script or handler else; nothing loaded from outside"

# ---- without JavaScript ----
page dom-nojs "$bench_page" >"$tmp/bench-nojs.dom"
tap_is "$(dom 'print(len(rows(d)), totals(d).get("mean score"), len(d.by_id("task-edit").find_all(cls="step")) if d.by_id("task-edit") else 0)' "$tmp/bench-nojs.dom")" \
  "6 0.5833 4" "without JavaScript: the rows, the totals and every task's steps are on the page"
for w in 1280 480; do
  page shot "$bench_page" $w "$shots/benchmark-$w.png"
  tap_is "$(png_width "$shots/benchmark-$w.png")" "$w" "a screenshot of the benchmark's page, $w pixels wide ($shots/benchmark-$w.png)"
  page shot "$bench_page" $w "$shots/benchmark-open-$w.png" open=all 3200
  tap_is "$(png_width "$shots/benchmark-open-$w.png")" "$w" "and with the trajectories open, report.html#open=all ($shots/benchmark-open-$w.png)"
done

# ---- the page's HTML, CSS and JS are files of the source tree ----
tap_ok "report/ holds the page's HTML, CSS and JS" \
  test -s "$HUTCH_SRCDIR/report/page.html" -a -s "$HUTCH_SRCDIR/report/report.css" -a -s "$HUTCH_SRCDIR/report/report.js"
tap_is "$(grep -lE '<(html|table|style|script)[ >]' "$HUTCH_SRCDIR"/src/bench/*.c)" "" "and no C file of hutch benchmark holds markup"
tap_is "$("$AGENT_PY" - "$bench_page" "$HUTCH_SRCDIR/report" <<'PY'
import sys
page = open(sys.argv[1], encoding="utf-8").read()
print(all(open(sys.argv[2] + "/" + f, encoding="utf-8").read().strip() in page for f in ("report.css", "report.js")))
PY
)" "True" "the page embeds report.css and report.js as they are"
if [ "$HUTCH_TEST_MODE" = root ]; then
  tap_ok "make install puts them under the data directory" \
    make -s -C "$HUTCH_BUILDDIR" install-dist_reportDATA DESTDIR="$tmp/inst"
  tap_is "$(cd "$tmp/inst" && find . -path '*/report/*' -type f | sed 's|.*/report/|report/|' | sort | tr '\n' ' ')" \
    "report/page.html report/report.css report/report.js report/task.html " "(report/ under pkgdatadir)"
else
  tap_skip "make install of report/" "the rootless run writes no build tree"
fi

# ---- hutch report on a benchmark's directory rebuilds its page ----
before=$(stat -c %s "$bench_page")
tap_status 0 "hutch report DIR of a benchmark run exits 0" "$HUTCH_BIN" report "$OUT"
tap_is "$tap_stdout" "$bench_page" "and names its report.html"
page dom "$bench_page" >"$tmp/rebuilt.dom"
tap_is "$(dom 'print(len(rows(d)), totals(d).get("mean score"), totals(d).get("tokens in"))' "$tmp/rebuilt.dom")" "6 0.5833 5100" \
  "it rebuilt the benchmark's page (rows, scores, tokens), not a page of no task"
tap_like "$(stat -c %s "$bench_page") $before" '^([0-9]+) ([0-9]+)$' "(its size)"
[ "$(stat -c %s "$bench_page")" -ge $((before * 9 / 10)) ]
tap_check $? "the rebuilt page is as large as the first ($(stat -c %s "$bench_page") and $before bytes)"
# A directory hutch report cannot read is refused, its page left as it was.
lis=$tmp/lis-dir
mkdir -p "$lis"
cp "$OUT/trajectory.json" "$lis/trajectory.json"
printf 'KEEP ME\n' >"$lis/report.html"
tap_status 2 "hutch report on LLM-in-Sandbox's output (a trajectory.json by task, no benchmark.json) refuses" \
  "$HUTCH_BIN" report "$lis"
tap_like "$tap_stderr" "benchmark.json" "and says what it looked for"
tap_is "$(cat "$lis/report.html")" "KEEP ME" "the report.html there is left as it was"
broken=$tmp/broken-bench
cp -r "$OUT" "$broken"
printf '{"task": 1}' >"$broken/benchmark.json"
cp "$broken/report.html" "$tmp/kept.html"
tap_status 2 "hutch report on a benchmark directory with a damaged benchmark.json refuses" "$HUTCH_BIN" report "$broken"
tap_ok "and leaves its report.html as it was" cmp -s "$broken/report.html" "$tmp/kept.html"

# ---- a run's time is its time, not the sum of its steps' times since it began ----
made=$tmp/made-run
mkdir -p "$made/files"
"$AGENT_PY" - "$made" <<'PY'
import json, sys
step = lambda n, e: {"thought": "", "reasoning_content": "", "action": {"function": "execute_bash", "parameters": {"command": "sleep 9"}},
                     "observation": "", "metadata": {"step": n, "exec_time": 0.5, "tool_time": 9.0, "exit_code": 0, "elapsed": e}}
json.dump({"problem_statement": "p", "steps": [step(1, 10.0), step(2, 20.0), step(3, 30.0)], "metadata": {"total_steps": 3},
           "hutch": {"model": "m", "end_reason": "submitted", "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
                     "timings": {"begin": 100.0, "saved": 131.5}}}, open(sys.argv[1] + "/trajectory.json", "w"))
PY
tap_status 0 "hutch report of a run whose steps ended 10, 20 and 30 s after its start, 31.5 s in all" "$HUTCH_BIN" report "$made"
page dom "$made/report.html" >"$tmp/made.dom"
tap_is "$(dom 't = totals(d); print(t.get("time"), "|", t.get("model time"), "|", t.get("tool time"))' "$tmp/made.dom")" \
  "31.5 s | 1.500 s | 27.000 s" "its time is 31.5 s (not 60 s), its model and tool times the sums of its steps'"

# ---- hutch report of a hutch run ----
mock_start "$(cat <<'JSON'
[{"content": "R-RUN-THOUGHT", "reasoning": "R-RUN-REASONING",
  "calls": [["str_replace_editor", {"command": "create", "path": "/testbed/a.py", "file_text": "print(6 * 7)\n"}],
            ["execute_bash", {"command": "python3 /testbed/a.py | tee /testbed/output/answer.txt"}]],
  "usage": {"prompt_tokens": 700, "completion_tokens": 70, "total_tokens": 770, "cost": 0.125}},
 {"calls": [["submit", {}]]}]
JSON
)"
t0=$(date +%s.%N)
hrun --query "R-RUN: print 6 * 7" >"$tmp/run.out" 2>&1
t1=$(date +%s.%N)
run=$(tail -n 1 "$tmp/run.out")
"$AGENT_PY" - "$run/files" <<'PY'
import base64, os, sys
d = sys.argv[1]
dot = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAGklEQVR4nGP8z8DwnwEPYMIn+f8/A8MoGKEhAP0gAh9uDlMlAAAAAElFTkSuQmCC")
open(os.path.join(d, "plot.png"), "wb").write(dot)
open(os.path.join(d, "huge.png"), "wb").write(dot + os.urandom(600 << 10))
open(os.path.join(d, "script.gif"), "w").write("<svg onload=alert(1)>")
os.symlink("/etc/passwd", os.path.join(d, "passwd.png"))
PY
tap_status 0 "hutch report RUN_DIR of a hutch run" "$HUTCH_BIN" report "$run"
tap_is "$tap_stdout" "$run/report.html" "writes RUN_DIR/report.html"
page dom "$run/report.html" >"$tmp/run.dom"
tap_like "$(dom 'print(d.by_id("title").text())' "$tmp/run.dom")" $'^hutch run: [0-9_]+ \u2014 test-model$' "its title: the run and the model"
tap_is "$(dom 't = totals(d); print([t.get(k) for k in ("end", "steps", "tokens in", "tokens out", "cost", "answer")])' "$tmp/run.dom")" \
  "['submitted', '3', '800', '80', '0.125', '42']" "its totals: how it ended, steps, tokens in and out, cost, answer"
shown=$(dom 'print(totals(d).get("time", "").split()[0])' "$tmp/run.dom")
tap_like "$shown" '^[0-9]+\.[0-9]$' "its time"
"$AGENT_PY" -c 'import sys; sys.exit(0 if float(sys.argv[1]) <= float(sys.argv[3]) - float(sys.argv[2]) + 0.05 else 1)' "$shown" "$t0" "$t1"
tap_check $? "no longer than hutch run took ($shown s shown)"
tap_is "$(dom '
steps = d.find_all(cls="step")
print(len(steps), steps[0].find(cls="call").classes(), repr(steps[0].find("pre", "code").text()), steps[1].find("pre", "cmd").text(), "[STDOUT]\n42\n" in steps[1].find("pre", "obs").text(), steps[0].find(cls="tokens").attrs.get("data-in"))' "$tmp/run.dom")" \
  "3 ['call', 'create'] 'print(6 * 7)\n' python3 /testbed/a.py | tee /testbed/output/answer.txt True 700" \
  "its steps: the file created, the command and its output, the tokens of the call"
tap_is "$(dom 'print([(i.attrs.get("alt"), i.attrs.get("src", "")[:30]) for i in d.find_all("img")])' "$tmp/run.dom")" \
  "[('plot.png', 'data:image/png;base64,iVBORw0K')]" "the image the agent wrote is shown, embedded as a data: URI"
tap_like "$(dom 'print(" ".join(x.text().strip() for x in d.find_all(cls="omitted")))' "$tmp/run.dom")" \
  '^huge\.png \(not shown: larger than 512 KiB\) script\.gif \(not shown: not a PNG, JPEG, GIF or WebP image\)$' \
  "a large one, or one whose bytes are not an image, is named and not shown; a symlink is not followed"
page dom-nojs "$run/report.html" >"$tmp/run-nojs.dom"
tap_is "$(dom 'print(len(d.find_all(cls="step")), totals(d).get("answer"))' "$tmp/run-nojs.dom")" "3 42" \
  "without JavaScript: its steps and totals are on the page"
for w in 1280 480; do
  page shot "$run/report.html" $w "$shots/run-$w.png"
  tap_is "$(png_width "$shots/run-$w.png")" "$w" "a screenshot of the run's page, $w pixels wide ($shots/run-$w.png)"
done
tap_status 2 "hutch report wants a run directory" "$HUTCH_BIN" report "$tmp/state"

mock_stop
# The browser goes when its requests end.
pages_pid=$PAGES_PID
eval "exec ${PAGES[1]}>&-"
wait "$pages_pid"
tap_done
