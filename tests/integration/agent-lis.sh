#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch run --tools lis (the default) answers the model byte for byte as
# LLM-in-Sandbox 0.2.0 does.  The expected answers are tests/golden/lis/,
# written by LLM-in-Sandbox's own code (tests/golden/lis/README); each case's
# reply is played by the mock server and the tool messages it receives next
# are compared with them.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
AGENT_IMAGE=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
GOLDEN=$HUTCH_SRCDIR/tests/golden/lis
MAX_STEPS=1000

# The cases' replies, in order; the first carries reasoning to be echoed.
script=$("$AGENT_PY" - "$GOLDEN/cases.json" <<'PY'
import json, sys
cases = json.load(open(sys.argv[1]))
replies = [dict(c["reply"]) for c in cases]
replies[0]["reasoning"] = "Let me think."
print(json.dumps(replies))
PY
)
mock_start "$script"
tap_status 0 "every case through hutch run --tools lis (the default)" \
  hrun --query q --max-steps $MAX_STEPS --max-token-limit 100000000
run_dir

# What the server received after each reply: the messages following that
# reply's assistant message in the next request (the trajectory for the last
# reply, which no request follows), the Steps Remaining suffix checked and cut.
actual=$AGENT_OUT/actual
mkdir -p "$actual"
"$AGENT_PY" - "$GOLDEN/cases.json" "$MOCK_REQUESTS" "$RUN_DIR/trajectory.json" "$actual" $MAX_STEPS <<'PY' >"$AGENT_OUT/extract.log" 2>&1
import json, os, sys
cases = json.load(open(sys.argv[1]))
reqs = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
traj = json.load(open(sys.argv[3]))
out, max_steps = sys.argv[4], int(sys.argv[5])
steps = 0
for k, case in enumerate(cases):
    # Each call run is a step, and a reply without one.
    steps += max(1, len(case["reply"].get("calls") or []))
    if k + 1 < len(reqs):
        msgs = reqs[k + 1]["body"]["messages"]
        answers = msgs[len(reqs[k]["body"]["messages"]) + 1:]
        suffix = "\nSteps Remaining: %d" % (max_steps - steps)
        contents = [m["content"] for m in answers]
        if contents and contents[-1].endswith(suffix):
            contents[-1] = contents[-1][:-len(suffix)]
        else:
            print("case %s: no %r suffix" % (case["name"], suffix))
        roles = [m["role"] for m in answers]
    else:
        contents = [traj["steps"][-1]["observation"]]
        roles = ["tool"]
    for name, text, role in zip(case["golden"], contents, roles):
        with open(os.path.join(out, name), "w", encoding="utf-8", newline="") as f:
            f.write(text)
        with open(os.path.join(out, name + ".role"), "w") as f:
            f.write(role)
PY
tap_is "$(cat "$AGENT_OUT/extract.log")" "" "every answer ends in the Steps Remaining suffix"
for golden in "$GOLDEN"/obs/*.txt; do
  name=$(basename "$golden")
  if cmp -s "$golden" "$actual/$name"; then
    tap_check 0 "$name"
  else
    tap_check 1 "$name"
    tap_diag "want: $(cat -A "$golden" | head -c 2000)"
    tap_diag "got:  $(cat -A "$actual/$name" 2>&1 | head -c 2000)"
  fi
done
tap_is "$(cat "$actual"/*-no-call.txt.role) $(cat "$actual"/*-bad-json.txt.role)" "user tool" \
  "a reply without a call gets the reminder as a user message; a call with broken arguments as its answer"

# ---- the request itself ----
shape=$("$AGENT_PY" - "$MOCK_REQUESTS" <<'PY'
import json, sys
def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k != "description"}
    return [strip(v) for v in x] if isinstance(x, list) else x
r = json.loads(open(sys.argv[1]).readline())
print(json.dumps(strip(r["body"]["tools"]), indent=2, ensure_ascii=False))
PY
)
tap_is "$shape" "$(cat "$GOLDEN/tools-shape.json")" \
  "tools: the reference's names, parameters, required, enums, key order and tool order"
tap_unlike "$(mock_request 0 'json.dumps(r["body"]["tools"])')" "undo_edit" "no undo_edit in the lis schema"
tap_is "$(mock_request 1 'r["body"]["messages"][2].get("reasoning_content"), "content" in r["body"]["messages"][2]')" \
  "('Let me think.', False)" "the reply goes back with its reasoning_content, a null content left out"
tap_is "$(mock_request 1 'sorted(r["body"]["messages"][3])')" "['content', 'role', 'tool_call_id']" \
  "tool messages as the reference's: role, tool_call_id, content"
mock_stop

# ---- --tools-file, --no-reasoning-echo ----
mock_start '[{"calls": [["execute_bash", {"command": "true"}]], "reasoning": "hm"}, {"calls": [["submit", {}]]}]'
tap_status 0 "--tools-file and --no-reasoning-echo" \
  hrun --query q --tools-file "$GOLDEN/tools.json" --no-reasoning-echo
tap_is "$(mock_request 0 'json.dumps(r["body"]["tools"], indent=2, ensure_ascii=False)')" "$(cat "$GOLDEN/tools.json")" \
  "--tools-file: the file's tools are sent as they are"
tap_is "$(mock_request 1 '"reasoning_content" in r["body"]["messages"][2]')" "False" \
  "--no-reasoning-echo: the reasoning is not sent back"

# ---- the hutch profile, from the settings file ----
mock_start '[{"calls": [["str_replace_editor", {"command": "create", "path": "/testbed/x.txt", "file_text": "a"}]]},
 {"calls": [["submit", {}]]}]'
printf 'tools: hutch\n' >"$AGENT_OUT/settings.yaml"
tap_status 0 "tools: hutch in the settings file" hrun --query q --settings "$AGENT_OUT/settings.yaml"
tap_like "$(mock_request 0 'json.dumps(r["body"]["tools"])')" "undo_edit" "the hutch schema has undo_edit"
tap_like "$(mock_request 1 'r["body"]["messages"][-1]["content"]')" "File created successfully at: /testbed/x.txt" \
  "and hutch's editor answers"
tap_status 2 "--tools wants lis or hutch" hrun --query q --tools other
mock_stop
tap_done
