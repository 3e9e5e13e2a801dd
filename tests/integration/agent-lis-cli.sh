#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch run as an LLM-in-Sandbox 0.2.0 user meets it: the positional query,
# LLM_* variables and LLM-in-Sandbox's settings files with its precedence,
# its defaults (temperature 1.0 but not for o3/o4, Bearer dummy), refused
# provider prefixes, "true"/"false" in --extra_body, the token count without
# usage, --save_litellm_response, a missing --input_dir, --docker_image, and
# `git init` in the working directory.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
AGENT_IMAGE=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
unset LLM_NAME LLM_BASE_URL LLM_API_KEY LLM_TEMPERATURE LLM_IN_SANDBOX_CONFIG OPENAI_API_KEY OPENAI_BASE_URL

# hutch run without the wrapper's --model/--base-url: the settings decide.
lrun() {
  "$HUTCH_BIN" run --rootfs "$AGENT_IMAGE" --output-dir "$AGENT_OUT" --retry-delay 0.05 --quiet "$@"
}

# ---- positional query ----
mock_start '[]'
tap_status 0 "a positional query, as LLM-in-Sandbox takes it" hrun "positional task text"
tap_is "$(mock_request 0 'r["body"]["messages"][1]["content"].count("positional task text")')" "1" \
  "the positional text is the task"
mock_start '[]'
tap_status 0 "a positional word and --query: the word is the next parameter, the model" \
  "$HUTCH_BIN" run one --query QTWO --base-url "$MOCK_URL" --rootfs "$AGENT_IMAGE" --output-dir "$AGENT_OUT" --quiet
tap_is "$(mock_request 0 'r["body"]["model"], r["body"]["messages"][1]["content"].count("QTWO")')" "('one', 1)" \
  "as Python Fire binds it: the query from --query, the model from the word"
mock_start '[]'
tap_status 0 "a second positional word is the model, as Python Fire binds it" \
  "$HUTCH_BIN" run one two --base-url "$MOCK_URL" --rootfs "$AGENT_IMAGE" --output-dir "$AGENT_OUT" --quiet
tap_is "$(mock_request 0 'r["body"]["model"]')" "two" "the request names that model"
tap_status 2 "a third one with --rootfs: the image twice" \
  "$HUTCH_BIN" run one two img --base-url "$MOCK_URL" --rootfs "$AGENT_IMAGE" --output-dir "$AGENT_OUT" --quiet
tap_like "$tap_stderr" "docker.image" "a usage error naming docker_image, the third positional parameter"

# ---- defaults: temperature 1.0, Bearer dummy ----
mock_start '[]'
tap_status 0 "a run with no key and no temperature" hrun --query q
tap_is "$(mock_request 0 'r["body"].get("temperature") == 1.0, r["authorization"]')" "(True, 'Bearer dummy')" \
  "temperature 1.0 is sent, and Bearer dummy without a key"
for m in o3-mini openai/o4-mini gpt-o3; do
  mock_start '[]'
  tap_status 0 "model $m" hrun --query q --model "$m" --temperature 0.2
  tap_is "$(mock_request 0 '"temperature" in r["body"]')" "False" "no temperature for $m (its name holds o3/o4)"
done

# ---- refused provider prefixes ----
for m in anthropic/claude-x azure/gpt-4o; do
  mock_start '[]'
  tap_status 2 "model $m is refused" hrun --query q --model "$m"
  tap_like "$tap_stderr" "OpenAI-compatible endpoint" "the message names an OpenAI-compatible endpoint"
  tap_is "$(mock_count)" "0" "no request was sent"
done

# ---- extra_body "true"/"false" ----
mock_start '[]'
tap_status 0 "--extra_body with string booleans" hrun --query q \
  --extra_body '{"chat_template_kwargs": {"enable_thinking": "false", "list": ["TRUE", "no", "False"]}, "x": "True"}'
tap_is "$(mock_request 0 'r["body"]["chat_template_kwargs"], r["body"]["x"]')" \
  "({'enable_thinking': False, 'list': [True, 'no', False]}, True)" \
  "\"true\"/\"false\" in any case become booleans at any depth; other strings stay"

# ---- precedence: LLM-in-Sandbox's run command's: flag > settings file > LLM_BASE_URL > default ----
# (its benchmark command's order, flag > LLM_* > file, is hutch benchmark's:
# lis-command-lines.sh)
sdir=$(hutch_test_tmpdir)
mock_start '[]'
cat >"$sdir/llm-in-sandbox.yaml" <<YAML
llm_name: from-file
llm_base_url: $MOCK_URL
api_key: file-key-0001
temperature: 0.5
YAML
# frun [VAR=VALUE...] [OPTION...]: hutch run q in $sdir, where the file is.
frun() {
  local envs=()
  while [[ $1 == *=* ]]; do
    envs+=("$1")
    shift
  done
  env "${envs[@]}" sh -c "cd '$sdir' && exec $(printf '%q ' "$HUTCH_BIN") run q --rootfs '$AGENT_IMAGE' \
    --output-dir '$AGENT_OUT' $*"
}
tap_status 0 "./llm-in-sandbox.yaml alone" frun --quiet
tap_is "$(mock_request 0 'r["body"]["model"], r["authorization"], r["body"]["temperature"]')" \
  "('from-file', 'Bearer file-key-0001', 0.5)" "the settings file's values"
tap_status 0 "LLM_* variables and the file" frun LLM_NAME=from-env LLM_API_KEY=env-key-0002 LLM_TEMPERATURE=0.25 \
  LLM_BASE_URL=http://127.0.0.1:9/v1 --max-tries 1
tap_is "$(mock_request 1 'r["body"]["model"], r["authorization"], r["body"]["temperature"]')" \
  "('from-file', 'Bearer file-key-0001', 0.5)" "the file wins over LLM_NAME, LLM_BASE_URL, as in LLM-in-Sandbox's run"
tap_like "$tap_stderr" "LLM_TEMPERATURE.*not read by hutch run" "LLM_TEMPERATURE, which its run command ignores, is said to be ignored"
tap_status 0 "flags over the file and the variables" frun LLM_NAME=from-env LLM_API_KEY=env-key-0002 \
  LLM_TEMPERATURE=0.25 --llm_name from-flag --api_key flag-key-0003 --temperature 0.75 --quiet
tap_is "$(mock_request 2 'r["body"]["model"], r["authorization"], r["body"]["temperature"]')" \
  "('from-flag', 'Bearer flag-key-0003', 0.75)" "the command line wins"
tap_status 0 "without a settings file: LLM_NAME and LLM_BASE_URL" env LLM_NAME=from-env LLM_BASE_URL="$MOCK_URL" \
  LLM_API_KEY=env-key-0002 OPENAI_API_KEY=openai-key-0004 LLM_TEMPERATURE=0.25 \
  "$HUTCH_BIN" run q --rootfs "$AGENT_IMAGE" --output-dir "$AGENT_OUT" --quiet
tap_is "$(mock_request 3 'r["body"]["model"], r["authorization"], r["body"]["temperature"] == 1.0')" \
  "('from-env', 'Bearer openai-key-0004', True)" \
  "the variables' model and URL, OPENAI_API_KEY (as LiteLLM reads it) and the default temperature"
tap_status 0 "a bad LLM_TEMPERATURE is not read by hutch run" env LLM_TEMPERATURE=warm LLM_BASE_URL="$MOCK_URL" \
  "$HUTCH_BIN" run q --model m --rootfs "$AGENT_IMAGE" --output-dir "$AGENT_OUT" --quiet
mock_start '[]'
tap_status 3 "OPENAI_BASE_URL is not read, as LLM-in-Sandbox does not" env OPENAI_BASE_URL="$MOCK_URL" \
  "$HUTCH_BIN" run q --model m --rootfs "$AGENT_IMAGE" --output-dir "$AGENT_OUT" --max-tries 1 \
  --llm-timeout 5
tap_is "$(mock_count)" "0" "no request reached the server it names"
tap_like "$tap_stderr" "OPENAI_BASE_URL.*not read" "which is said"

# ---- settings paths: hutch's first, then LLM-in-Sandbox's ----
# One settings file at a time in a fresh directory and HOME; the model
# name says which file was read.
place_test() {
  local where=$1 expect=$2 d home
  d=$(hutch_test_tmpdir)
  home=$(hutch_test_tmpdir)
  shift 2
  mock_start '[]'
  for f in "$@"; do
    local path=${f%%=*} model=${f#*=}
    path=${path/#\~/$home}
    path=${path/#./$d}
    mkdir -p "$(dirname "$path")"
    printf 'llm_name: %s\nllm_base_url: %s\n' "$model" "$MOCK_URL" >"$path"
  done
  tap_status 0 "settings: $where" env HOME="$home" ${LISCFG:+LLM_IN_SANDBOX_CONFIG="${LISCFG/#\~/$home}"} \
    sh -c "cd '$d' && exec $(printf '%q ' "$HUTCH_BIN") run q --rootfs '$AGENT_IMAGE' --output-dir '$AGENT_OUT' --quiet"
  tap_is "$(mock_request 0 'r["body"]["model"]')" "$expect" "$where: the model is $expect"
}
place_test "./llm-in-sandbox.yaml" a "./llm-in-sandbox.yaml=a"
place_test "./llm_in_sandbox.yaml" b "./llm_in_sandbox.yaml=b"
place_test "~/.llm-in-sandbox/config.yaml" c "~/.llm-in-sandbox/config.yaml=c"
place_test "~/.llm-in-sandbox.yaml" d "~/.llm-in-sandbox.yaml=d"
place_test "the first of LLM-in-Sandbox's order" a "./llm-in-sandbox.yaml=a" "./llm_in_sandbox.yaml=b" \
  "~/.llm-in-sandbox/config.yaml=c" "~/.llm-in-sandbox.yaml=d"
place_test "hutch's own before LLM-in-Sandbox's" h "./llm-in-sandbox.yaml=a" "~/.config/hutch/config.yaml=h"
place_test "./hutch.yaml first" i "./hutch.yaml=i" "~/.config/hutch/config.yaml=h" "./llm-in-sandbox.yaml=a"
LISCFG="~/elsewhere.yaml" place_test "LLM_IN_SANDBOX_CONFIG before the usual places" e "./hutch.yaml=i" \
  "~/elsewhere.yaml=e"
LISCFG="~/missing.yaml" place_test "LLM_IN_SANDBOX_CONFIG naming no file: the usual places" i "./hutch.yaml=i"
tap_like "$tap_stderr" "LLM_IN_SANDBOX_CONFIG=.*is not a file" "which is warned about"

# ---- token budget counted as LLM-in-Sandbox does when the server reports no usage ----
mock_start '[{"no_usage": true, "calls": [["execute_bash", {"command": "echo hello"}]]}]'
tap_status 0 "a run whose server reports no usage" hrun --query q --max-token-limit 1000000
# LLM-in-Sandbox: sum(len(str(m.get("content", "")))) // 4 over the messages sent.
count=$(mock_request 1 'sum(len(str(m.get("content", ""))) for m in r["body"]["messages"]) // 4')
mock_start '[{"no_usage": true, "calls": [["execute_bash", {"command": "echo hello"}]]}]'
tap_status 0 "a budget of exactly that count ($count)" hrun --query q --max-token-limit "$count"
tap_is "$(mock_count)" "2" "is not exceeded: the second request is sent"
mock_start '[{"no_usage": true, "calls": [["execute_bash", {"command": "echo hello"}]]}]'
tap_status 1 "one token less" hrun --query q --max-token-limit $((count - 1))
tap_is "$(mock_count)" "1" "ends the run before the second request"

# ---- --save_litellm_response ----
mock_start '[{"calls": [["execute_bash", {"command": "echo sk-live-secret-7777"}]]}, {"calls": [["submit", {}]]}]'
tap_status 0 "--save_litellm_response" hrun --query "the key sk-live-secret-7777 must not leak" \
  --api_key sk-live-secret-7777 --save_litellm_response --extra_body '{"top_k": 20}'
run_dir
tap_is "$(cd "$RUN_DIR" && ls request_* response_* | tr '\n' ' ')" \
  "request_001.json request_002.json response_001.json response_002.json " \
  "request_NNN.json and response_NNN.json, one pair per call"
tap_is "$(cat "$RUN_DIR"/request_* "$RUN_DIR"/response_* | grep -c sk-live-secret-7777)" "0" \
  "the API key is in none of them"
tap_is "$(grep -o '\[REDACTED\]' "$RUN_DIR/request_002.json" | wc -l)" "3" \
  "where it stood, [REDACTED] (query, the call's arguments, the tool's output)"
tap_is "$(python3 -c '
import json, sys
q = json.load(open(sys.argv[1] + "/request_002.json"))
a = json.load(open(sys.argv[1] + "/response_001.json"))
print(q["call_id"], q["model"], [m["role"] for m in q["messages"]], q["extra_params"], q["kwargs"], a["call_id"],
      a["response"]["choices"][0]["message"]["tool_calls"][0]["function"]["name"])' "$RUN_DIR")" \
  "2 test-model ['system', 'user', 'assistant', 'tool'] {'extra_body': {'top_k': 20}} {'temperature': 1} 1 execute_bash" \
  "LLM-in-Sandbox's keys: call_id, model, messages, extra_params, kwargs; the reply under response"
tap_is "$(ls "$RUN_DIR" | grep -c '\.tmp')" "0" "no temporary file is left"
mock_start '[]'
tap_status 0 "without the flag" hrun --query q
run_dir
tap_is "$(ls "$RUN_DIR" | grep -c '^re')" "0" "no request or response files"

# ---- a missing --input_dir is skipped with a warning ----
mock_start '[]'
tap_status 0 "a missing --input_dir does not stop the run" hrun --query q --input_dir /nonexistent/input
tap_like "$tap_stderr" "warning: --input-dir /nonexistent/input is not a directory" "it is named in a warning"

# ---- --docker_image ----
mock_start '[{"calls": [["execute_bash", {"command": "cat /etc/hutch-test-marker 2>/dev/null || busybox | head -1"}]]}]'
tap_status 0 "--docker_image with an image the store has" "$HUTCH_BIN" run q --model m --base-url "$MOCK_URL" \
  --docker_image "$AGENT_IMAGE" --output-dir "$AGENT_OUT" --quiet
run_dir
tap_like "$(traj 't["steps"][0]["observation"]')" "BusyBox" "the run ran on that image"
tap_is "$(traj 't["hutch"]["sandbox"]["image"]')" "$AGENT_IMAGE" "and records it"
tap_status 2 "--docker_image with --rootfs is a usage error" hrun q --docker_image "$AGENT_IMAGE"

# Not in the store: pulled from docker://REF (a registry on 127.0.0.1 serving
# the busybox tree as a one-layer OCI image).
reg=$(hutch_test_tmpdir)
if python3 - "$(hutch_rootfs_ensure busybox)" "$reg/blobs" >"$reg/manifest" <<'PY'
import gzip, hashlib, json, os, sys
tar, blobs = sys.argv[1:3]
os.makedirs(blobs)
def put(data):
    h = hashlib.sha256(data).hexdigest()
    open(os.path.join(blobs, h), "wb").write(data)
    return {"digest": "sha256:" + h, "size": len(data)}
raw = open(tar, "rb").read()
layer = put(gzip.compress(raw, 1))
config = put(json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                         "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(raw).hexdigest()]}}).encode())
manifest = put(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": dict(config, mediaType="application/vnd.oci.image.config.v1+json"),
                           "layers": [dict(layer, mediaType="application/vnd.oci.image.layer.v1.tar+gzip")]}).encode())
print(manifest["digest"])
PY
then
  printf '{"blobs": "%s", "repos": {"lis/img": {"tags": {"v1": "%s"}}}}\n' "$reg/blobs" "$(cat "$reg/manifest")" \
    >"$reg/registry.json"
  python3 "$HUTCH_SRCDIR/tests/lib/mock-registry.py" "$reg/registry.json" "$reg/port" "$reg/registry.log" \
    2>"$reg/registry.err" &
  regpid=$!
  for _ in $(seq 100); do [ -s "$reg/port" ] && break; sleep 0.1; done
  ref=127.0.0.1:$(cat "$reg/port")/lis/img:v1
  mock_start '[{"calls": [["execute_bash", {"command": "busybox | head -1"}]]}]'
  tap_status 0 "--docker_image REF that the store lacks" "$HUTCH_BIN" run q --model m --base-url "$MOCK_URL" \
    --docker_image "$ref" --output-dir "$AGENT_OUT"
  run_dir
  tap_like "$tap_stderr" "pulling docker://$ref" "is pulled from docker://REF, which is said"
  tap_like "$(traj 't["steps"][0]["observation"]')" "BusyBox" "and the run ran on it"
  tap_is "$(traj 't["hutch"]["sandbox"]["image"]')" "${ref//\//_}" "under the name REF with '/' as '_'"
  : >"$reg/registry.log"
  mock_start '[]'
  tap_status 0 "the same REF again" "$HUTCH_BIN" run q --model m --base-url "$MOCK_URL" --docker_image "$ref" \
    --output-dir "$AGENT_OUT" --quiet
  tap_is "$(grep -c . "$reg/registry.log")" "0" "takes the store's image: the registry is not asked"
  "$HUTCH_BIN" rootfs rm "${ref//\//_}" >/dev/null 2>&1
  kill "$regpid" 2>/dev/null
  wait "$regpid" 2>/dev/null
else
  tap_skip "--docker_image pulled from a registry" "python3 could not build the test image"
fi

# ---- git init in the working directory (an image with git) ----
if DEB_IMAGE=$(hutch_test_rootfs debian); then
  mock_start '[{"calls": [["execute_bash", {"command": "git rev-parse --is-inside-work-tree; git rev-parse --show-toplevel; git symbolic-ref HEAD; git config core.bare"}]]}]'
  tap_status 0 "a run on an image with git" "$HUTCH_BIN" run q --model m --base-url "$MOCK_URL" --rootfs "$DEB_IMAGE" \
    --output-dir "$AGENT_OUT" --quiet
  run_dir
  tap_like "$(traj 't["steps"][0]["observation"]')" $'STDOUT]\ntrue\n/testbed' \
    "the working directory is a git repository when the model starts"
  # git init ran to its end (in the background) before the first tool.
  tap_like "$(traj 't["steps"][0]["observation"]')" $'/testbed\nrefs/heads/[a-z]+\nfalse' \
    "(a whole repository: HEAD on an unborn branch, not bare)"
else
  tap_skip "git init on an image with git" "the debian test rootfs is unavailable"
fi
mock_start '[{"calls": [["execute_bash", {"command": "ls -a /testbed"}]]}]'
tap_status 0 "an image without git runs all the same" hrun --query q
run_dir
tap_unlike "$(traj 't["steps"][0]["observation"]')" "\.git" "(and has no repository)"

# ---- prompt configs render as LLM-in-Sandbox renders them ----
# tests/golden/lis-prompts: configs shaped like general.yaml and the
# benchmark configs, with the messages LLM-in-Sandbox's own code makes of
# them (generate.py, README.md there).
for case in "$HUTCH_SRCDIR"/tests/golden/lis-prompts/cases/*/; do
  name=$(basename "$case")
  mock_start '[]'
  tap_status 0 "prompt config $name" hrun --query - --prompt_config "$case/prompt.yaml" --max_steps 7 <"$case/query.txt"
  tap_is "$(mock_request 0 'r["body"]["messages"][0]["content"] == open(sys.argv[-1] + "system.txt", encoding="utf-8", newline="").read()' "$case")" \
    "True" "$name: the system message is LLM-in-Sandbox's, byte for byte"
  tap_is "$(mock_request 0 'r["body"]["messages"][1]["content"] == open(sys.argv[-1] + "user.txt", encoding="utf-8", newline="").read() + "\nSteps Remaining: 7"' "$case")" \
    "True" "$name: the user message is LLM-in-Sandbox's (then Steps Remaining)"
done

mock_stop
tap_done
