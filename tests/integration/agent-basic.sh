#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch run end to end against the scripted mock model: a full task, the
# conversation it sends, calls in one reply and in text, LLM-in-Sandbox's
# spellings and prompt files, settings files, copy-back, Ctrl-C and kill -9.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
AGENT_IMAGE=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"

# ---- a full task ----
mock_start '[
 {"content": "I will write a script.", "reasoning": "plan first",
  "calls": [["str_replace_editor", {"command": "create", "path": "/testbed/sum.sh", "file_text": "echo $((20 + 22))\n"}]]},
 {"calls": [["execute_bash", {"command": "sh /testbed/sum.sh > /testbed/output/answer.txt; cat /testbed/input/data.txt"}]]},
 {"calls": [["execute_bash", {"command": "mkdir -p /testbed/output/sub && echo deep > /testbed/output/sub/f"}]]},
 {"calls": [["submit", {}]]}
]'
input=$(hutch_test_tmpdir)
echo "input data" >"$input/data.txt"
tap_status 0 "a full task submits (exit 0)" env OPENAI_API_KEY=sk-test-secret \
  "$HUTCH_BIN" run --query "add 20 and 22" --base-url "$MOCK_URL" --model openai/test-model \
  --rootfs "$AGENT_IMAGE" --output-dir "$AGENT_OUT" --input-dir "$input" --quiet
run_dir
tap_like "$RUN_DIR" "/[0-9]{8}_[0-9]{6}(_[0-9]+)?$" "stdout names the run directory OUTPUT/YYYYMMDD_HHMMSS"
tap_is "$(cat "$RUN_DIR/files/answer.txt" 2>&1)" "42" "answer.txt is copied back into files/"
tap_is "$(cat "$RUN_DIR/files/sub/f" 2>&1)" "deep" "subdirectories are copied back"
tap_ok "run.log exists" test -s "$RUN_DIR/run.log"
tap_is "$(traj 'len(t["steps"]), t["metadata"]["total_steps"], t["problem_statement"]')" \
  "(4, 4, 'add 20 and 22')" "trajectory: reference shape, four steps"
tap_is "$(traj 't["steps"][0]["thought"], t["steps"][0]["reasoning_content"], t["steps"][0]["action"]["function"]')" \
  "('I will write a script.', 'plan first', 'str_replace_editor')" "thought and reasoning_content are kept"
tap_is "$(traj 't["steps"][1]["observation"]')" \
  "$(printf 'Exit code: 0\nExecution output of \\[execute_bash]:\n\\[STDOUT]\ninput data\n')" \
  "the input directory was copied in; the observation is the reference's"
tap_is "$(traj 't["hutch"]["end_reason"], t["hutch"]["usage"]["total_tokens"], t["steps"][1]["metadata"]["exit_code"]')" \
  "('submitted', 440, 0)" "our fields: end reason, summed usage, exit code"
tap_unlike "$(cat "$RUN_DIR"/* 2>/dev/null)" "sk-test-secret" "the API key is in no output file"
tap_is "$(mock_request 0 'r["authorization"], r["body"]["model"], r["path"]')" \
  "('Bearer sk-test-secret', 'test-model', '/v1/chat/completions')" \
  "request: bearer key, provider prefix dropped, /chat/completions"
tap_is "$(mock_request 0 '[x["function"]["name"] for x in r["body"]["tools"]]')" \
  "['str_replace_editor', 'execute_bash', 'submit']" "tools in the reference's order"
tap_is "$(mock_request 0 '[m["role"] for m in r["body"]["messages"]], r["body"]["max_tokens"]')" \
  "(['system', 'user'], 65536)" "system and user prompts, max_tokens"
tap_like "$(mock_request 0 'r["body"]["messages"][1]["content"]')" $'add 20 and 22.*/testbed/output/answer.txt.*\nSteps Remaining: 100$' \
  "the task is in the instance prompt, Steps Remaining appended"
tap_is "$(mock_request 1 'r["body"]["messages"][-1]["role"], r["body"]["messages"][-1]["tool_call_id"], r["body"]["messages"][-1]["content"].endswith("Steps Remaining: 99")')" \
  "('tool', 'call_0_0', True)" "each call is answered by a tool message"

# ---- several calls in one reply; text calls; no call ----
mock_start '[
 {"calls": [["execute_bash", {"command": "echo one"}], ["execute_bash", {"command": "echo two"}], ["fly", {}]]},
 {"content": "<tool_call>\n{\"name\": \"execute_bash\", \"arguments\": {\"command\": \"echo hermes\"}}\n</tool_call>"},
 {"content": "<function=execute_bash>\n<parameter=command>\necho qwen\n</parameter>\n</function>"},
 {"content": "I think I am done."},
 {"calls": [["submit", {}]]}
]'
tap_status 0 "calls in one reply, text calls, and a reply without any" hrun --query q --tools hutch
run_dir
tap_is "$(mock_request 1 '[(m["role"], m.get("tool_call_id")) for m in r["body"]["messages"][2:]]')" \
  "[('assistant', None), ('tool', 'call_0_0'), ('tool', 'call_0_1'), ('tool', 'call_0_2')]" \
  "every tool call of a reply is answered, in order"
tap_like "$(mock_request 1 'r["body"]["messages"][4]["content"]')" "STDOUT.*two" "the second call ran"
tap_like "$(mock_request 1 'r["body"]["messages"][5]["content"]')" "^Unknown action: fly" "unknown tool observation"
tap_like "$(mock_request 2 'r["body"]["messages"][-1]["content"]')" "STDOUT.nhermes|hermes" "a Hermes text call is executed"
tap_like "$(mock_request 3 'r["body"]["messages"][-1]["content"]')" "qwen" "a Qwen3-Coder text call is executed"
tap_like "$(mock_request 4 'r["body"]["messages"][-1]["role"] + ": " + r["body"]["messages"][-1]["content"]')" \
  $'^user: \nYou forgot to use a function call' "a reply without a call gets the reminder"
tap_is "$(traj 't["steps"][5]["action"], t["metadata"]["total_steps"]')" \
  "({'function': '', 'parameters': {}}, 7)" "and counts as a step with an empty action (as each call does: 3 + 1 + 1 + 1 + 1)"

# ---- max steps ----
# The sandbox's resource limits: recorded, and an explicit one is never
# dropped (this host's cgroups cannot apply it unless it has cgroup v2
# delegation: then the run must have applied it).
mock_start '[{"calls": [["submit", {}]]}]'
tap_status 0 "a run records its resource limits" hrun --query q
tap_like "$(traj 't["hutch"]["sandbox"]["resource_limits"]["mode"]')" "^(cgroup|rlimits)$" \
  "the trajectory says how the limits were applied"
# The no-cgroup warning stderr says once a day is in every trajectory.
if [ "$(traj 't["hutch"]["sandbox"]["resource_limits"]["mode"]')" = rlimits ]; then
  tap_like "$(traj 't["hutch"]["sandbox"]["resource_limits"]["warning"]')" "^limits: no cgroup here: rlimits per process" \
    "the rlimits fallback's warning is in the trajectory"
else
  tap_is "$(traj '"warning" in t["hutch"]["sandbox"]["resource_limits"]')" "False" "a cgroup run carries no warning"
fi
mock_start '[{"calls": [["submit", {}]]}]'
hrun --query q --memory 64M >/dev/null 2>"$AGENT_OUT/mem.err"
rc=$?
if [ $rc -eq 0 ]; then
  tap_is "$(traj 't["hutch"]["sandbox"]["resource_limits"]["mode"]')" "cgroup" "--memory ran with a cgroup"
else
  tap_is "$rc" "125" "--memory that cannot be applied stops the run (125)"
  tap_like "$(cat "$AGENT_OUT/mem.err")" "memory" "naming the limit"
fi

mock_start '[{"repeat": 5, "calls": [["execute_bash", {"command": "true"}]]}]'
tap_status 1 "running out of steps exits 1" hrun --query q --max-steps 3
run_dir
tap_is "$(traj 't["hutch"]["end_reason"], len(t["steps"])')" "('max_steps', 3)" "end reason max_steps"
tap_is "$(mock_count)" "3" "exactly max-steps model calls"

# ---- LLM-in-Sandbox spellings, a reference prompt config, extra body ----
pdir=$(hutch_test_tmpdir)
cat >"$pdir/general.yaml" <<'YAML'
system_prompt: |
  You work in {working_dir}; inputs in {input_dir}.
  Put \boxed{{}} around answers.
instance_prompt: |
  <problem>{problem_statement}</problem>
  Write {output_dir}/answer.txt.
working_dir: "/testbed"
input_dir: "/testbed/documents"
output_dir: "/testbed"
YAML
mock_start '[{"calls": [["execute_bash", {"command": "echo ref > /testbed/answer.txt; ls -d /testbed/input"}]]}]'
tap_status 0 "LLM-in-Sandbox flag spellings" "$HUTCH_BIN" run --query "ref task" --llm_name m --llm_base_url "$MOCK_URL" \
  --api_key k2 --max_steps 5 --max_tokens_per_call 777 --max_token_limit 100000 --output_dir "$AGENT_OUT" \
  --prompt_config "$pdir/general.yaml" --extra_body "{'chat_template_kwargs': {'thinking': True}}" \
  --rootfs "$AGENT_IMAGE" --quiet
run_dir
tap_is "$(mock_request 0 'r["body"]["max_tokens"], r["body"]["chat_template_kwargs"], r["authorization"], r["body"]["model"]')" \
  "(777, {'thinking': True}, 'Bearer k2', 'm')" "values reach the request; a Python-literal extra body is merged"
tap_is "$(mock_request 0 'r["body"]["messages"][0]["content"]')" \
  "$(printf 'You work in /testbed; inputs in /testbed/documents.\nPut \\boxed{} around answers.\n')" \
  "reference prompt YAML: directories substituted, {{}} is a literal brace"
tap_is "$(cat "$RUN_DIR/files/answer.txt")" "ref" "output_dir /testbed copies the whole working directory back"
tap_ok "as LLM-in-Sandbox's container, the sandbox has WORKING_DIR/input and /output" \
  test -d "$RUN_DIR/files/input" -a -d "$RUN_DIR/files/output"
tap_ok "and no input_dir from the prompt config without input to copy into it" test ! -e "$RUN_DIR/files/documents"

# ---- settings file; --query - ----
sdir=$(hutch_test_tmpdir)
mock_start '[]'
cat >"$sdir/hutch.yaml" <<YAML
llm_name: from-settings
llm_base_url: $MOCK_URL
max_steps: 4
temperature: 0.25
YAML
tap_status 0 "./hutch.yaml supplies settings; --query - reads stdin" sh -c \
  "cd '$sdir' && echo 'task from stdin' | '$HUTCH_BIN' run --query - --rootfs '$AGENT_IMAGE' --output-dir '$AGENT_OUT' --quiet"
tap_is "$(mock_request 0 'r["body"]["model"], r["body"]["temperature"], r["body"]["messages"][1]["content"].count("task from stdin")')" \
  "('from-settings', 0.25, 1)" "model, temperature and query as configured"
tap_status 2 "a missing --query is a usage error" "$HUTCH_BIN" run --model m
tap_status 2 "an unknown option is a usage error" "$HUTCH_BIN" run --query q --model m --no-such-option
tap_status 2 "--shell with an unknown mode is refused" "$HUTCH_BIN" run --query q --model m --shell sometimes

# ---- copy-back safety ----
mock_start '[{"calls": [["execute_bash", {"command": "cd /testbed/output && ln -s /etc/passwd leak && ln -s / root && echo ok > real && mkfifo pipe"}]]}]'
tap_status 0 "a run whose output holds symlinks" hrun --query q
run_dir
tap_is "$(cd "$RUN_DIR/files" && find . | sort | tr '\n' ' ')" ". ./real " "symlinks and fifos are not copied back"
tap_like "$(traj 't["hutch"]["copy_back_skipped"]')" "^3$" "and the trajectory counts them"
mock_start '[{"calls": [["execute_bash", {"command": "head -c 3000 /dev/zero > /testbed/output/a; head -c 3000 /dev/zero > /testbed/output/b"}]]}]'
tap_status 0 "a run over the copy limit" hrun --query q --copy-limit 4000
run_dir
tap_is "$(traj 't["hutch"]["copy_back_limit_hit"]')" "True" "the limit is reported"
tap_is "$(du -cb "$RUN_DIR"/files/* | tail -1 | cut -f1)" "3000" "and not exceeded"

# ---- interruption ----
# (the waits are bounded at 30 s, for a slow build, and end when they hold)
requests_seen() { [ "$(mock_count)" -ge "$1" ]; }
nap=$((100000 + RANDOM))
mock_start '[{"calls": [["execute_bash", {"command": "echo first"}]]}, {"calls": [["execute_bash", {"command": "sleep '"$nap"'"}]]}]'
(AGENT_EXEC=exec hrun --query q >"$AGENT_OUT/int.out" 2>"$AGENT_OUT/int.err") &
pid=$!
tap_ok "the run asks the model a second time" hutch_wait_until 30 requests_seen 2
tap_ok "and runs the tool call it gets" hutch_wait_until 30 pgrep -x -f "sleep $nap"
kill -INT $pid
wait $pid
tap_is "$?" "130" "SIGINT during a tool call ends the run with 130"
RUN_DIR=$(tail -n 1 "$AGENT_OUT/int.out")
tap_is "$(traj 't["hutch"]["end_reason"], len(t["steps"]) >= 1')" "('interrupted', True)" \
  "the trajectory is saved with the reason"
tap_is "$(HUTCH_STATE_DIR=$HUTCH_STATE_DIR "$HUTCH_BIN" ps 2>/dev/null | grep -c running)" "0" "the sandbox is gone"

mock_start '[{"calls": [["execute_bash", {"command": "echo first"}]]}, {"calls": [["execute_bash", {"command": "echo second"}]]}, {"hang": 60}]'
(AGENT_EXEC=exec hrun --query q >"$AGENT_OUT/kill.out" 2>/dev/null) &
pid=$!
tap_ok "the run asks the model a third time" hutch_wait_until 30 requests_seen 3
sleep 0.3
kill -9 $pid
wait $pid 2>/dev/null
RUN_DIR=$(ls -dt "$AGENT_OUT"/2* | head -1)
tap_is "$(traj 'len(t["steps"]), t["steps"][1]["observation"].endswith("second\n")')" "(2, True)" \
  "after kill -9 the trajectory is valid JSON with the completed steps"
for id in $("$HUTCH_BIN" ps 2>/dev/null | awk 'NR>1 {print $1}'); do "$HUTCH_BIN" rm "$id" >/dev/null 2>&1; done

mock_stop
tap_done
