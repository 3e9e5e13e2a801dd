#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# LLM-in-Sandbox 0.2.0's command lines, as its Python Fire --help prints
# them, on hutch run and hutch benchmark: the short flags (-t -a -p -e -i -d
# -o -q, -n), the --noX form of a yes/no flag, positional parameters (the
# model after the task), and its benchmark command's precedence (flag >
# LLM_* variable > settings file, OPENAI_API_KEY not read, the key
# sk-placeholder); what Fire refuses (an ambiguous short flag) is refused
# with Fire's reason.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
AGENT_IMAGE=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
# python3 in the image: hutch benchmark scores with it.
BENCH_IMAGE=$(hutch_test_rootfs debian) || tap_skip_all "debian test rootfs unavailable (tests/setup-host.sh)"
unset LLM_NAME LLM_BASE_URL LLM_API_KEY LLM_TEMPERATURE LLM_NUM_WORKERS LLM_IN_SANDBOX_CONFIG OPENAI_API_KEY \
  OPENAI_BASE_URL
tmp=$(hutch_test_tmpdir)

# ---- hutch run: Fire's short flags ----
cat >"$tmp/prompt.yaml" <<'YAML'
system_prompt: "SYSTEM-FROM-P"
instance_prompt: "{problem_statement}"
YAML
mkdir -p "$tmp/in" "$tmp/out"
echo data >"$tmp/in/f.txt"
mock_start '[{"calls": [["execute_bash", {"command": "cat /testbed/input/f.txt"}]]}]'
tap_status 0 "run -q -t -a -p -e -i -d -o, as llm-in-sandbox run --help lists them" \
  "$HUTCH_BIN" run -q task -t 0.5 -a key-short-0001 -p "$tmp/prompt.yaml" -e '{"x": True}' -i "$tmp/in" \
  -d "$AGENT_IMAGE" -o "$tmp/out" --model m --base-url "$MOCK_URL" --quiet --retry-delay 0.05
tap_is "$(mock_request 0 '(r["body"]["temperature"], r["authorization"], r["body"]["messages"][0]["content"], r["body"]["x"])')" \
  "(0.5, 'Bearer key-short-0001', 'SYSTEM-FROM-P', True)" "-t, -a, -p and -e are temperature, api_key, prompt_config, extra_body"
tap_like "$(mock_request 1 'r["body"]["messages"][-1]["content"]')" "data" "-i is input_dir"
tap_like "$(printf '%s\n' "$tap_stdout" | tail -n 1)" "^$tmp/out/" "-o is output_dir"
mock_start '[]'
tap_status 0 "-t=0.25 (a short flag with =)" hrun --query q -t=0.25
tap_is "$(mock_request 0 'r["body"]["temperature"]')" "0.25" "is the temperature"
for f in -l -m -s; do
  tap_status 2 "run $f x is refused, as Fire refuses it" hrun --query q $f x
  tap_like "$tap_stderr" "$f.* ambiguous" "with Fire's reason: the flag is ambiguous"
done

# ---- hutch run: --noX ----
mock_start '[]'
tap_status 0 "--save_litellm_response --nosave_litellm_response" hrun --query q --save_litellm_response \
  --nosave_litellm_response
run_dir
tap_is "$(ls "$RUN_DIR" | grep -c '^request_')" "0" "the last one wins: no request files"
tap_status 0 "--nosave-litellm-response, with dashes" hrun --query q --nosave-litellm-response
tap_status 2 "--noextra_body (not a yes/no option) is refused" hrun --query q --noextra_body
tap_like "$tap_stderr" "noextra_body" "naming it"

# ---- hutch benchmark: Fire's short flags, positionals, precedence ----
set_dir=$tmp/sets
mkdir -p "$set_dir/t"
cat >"$set_dir/t/config.yaml" <<'YAML'
dataset: "json"
data_files: "t/data.json"
system_prompt: "sys"
instance_prompt: "{problem_statement}"
YAML
printf '[{"id": "a", "problem_statement": "T-ONE", "ground_truth": "1"}, {"id": "b", "problem_statement": "T-TWO", "ground_truth": "2"}]\n' >"$set_dir/t/data.json"
printf 'def compute_score(agent_answer, ground_truth, **kw):\n    return 1.0\n' >"$set_dir/t/reward.py"
hb() {
  "$HUTCH_BIN" benchmark "$@" --rootfs "$BENCH_IMAGE" --retry-delay 0.05
}
mock_start '[]'
tap_status 0 "benchmark -n 2 -o DIR -a KEY, as llm-in-sandbox benchmark --help lists them" \
  hb "$set_dir" --task t --model m --base-url "$MOCK_URL" -n 2 -o "$tmp/bo" -a key-short-0002
tap_like "$(printf '%s\n' "$tap_stdout" | tail -n 1)" "^$tmp/bo/" "-o is output_dir"
tap_is "$(mock_request 0 'r["authorization"]')" "Bearer key-short-0002" "-a is api_key"
tap_like "$tap_stderr" "2 workers" "-n is num_workers"
for f in -t -e -s -m -l; do
  tap_status 2 "benchmark $f x is refused, as Fire refuses it" hb "$set_dir" --task t --model m $f x
  tap_like "$tap_stderr" "$f.* ambiguous" "with Fire's reason"
done
mock_start '[]'
tap_status 0 "benchmark TASKDIR TASK MODEL: the model as the positional after the task" \
  hb "$set_dir" t posmodel --base-url "$MOCK_URL" -o "$tmp/bo"
tap_is "$(mock_request 0 'r["body"]["model"]')" "posmodel" "the request names it"
mock_start '[]'
tap_status 0 "benchmark TASKDIR --task TASK MODEL" hb "$set_dir" --task t posmodel2 --base-url "$MOCK_URL" -o "$tmp/bo"
tap_is "$(mock_request 0 'r["body"]["model"]')" "posmodel2" "the request names it"

# Its benchmark command's order: flag > LLM_* > settings file > default;
# OPENAI_API_KEY and OPENAI_BASE_URL are not read, the key defaults to
# sk-placeholder.
mock_start '[]'
cat >"$tmp/settings.yaml" <<YAML
llm_name: from-file
llm_base_url: http://127.0.0.1:9/v1
api_key: file-key-0003
YAML
tap_status 0 "benchmark: LLM_* variables over the settings file" env LLM_NAME=from-env LLM_BASE_URL="$MOCK_URL" \
  LLM_API_KEY=env-key-0004 LLM_TEMPERATURE=0.25 \
  "$HUTCH_BIN" benchmark "$set_dir" --task t --settings "$tmp/settings.yaml" --rootfs "$BENCH_IMAGE" -o "$tmp/bo"
tap_is "$(mock_request 0 'r["body"]["model"], r["authorization"], r["body"]["temperature"]')" \
  "('from-env', 'Bearer env-key-0004', 0.25)" "the variables win over the file, as in LLM-in-Sandbox's benchmark"
mock_start '[]'
tap_status 0 "benchmark: OPENAI_API_KEY is not read" env OPENAI_API_KEY=openai-key-0005 \
  "$HUTCH_BIN" benchmark "$set_dir" --task t --model m --base-url "$MOCK_URL" --rootfs "$BENCH_IMAGE" -o "$tmp/bo"
tap_is "$(mock_request 0 'r["authorization"]')" "Bearer sk-placeholder" "the key is LLM-in-Sandbox's placeholder"
tap_status 2 "benchmark: a bad LLM_TEMPERATURE is a usage error" env LLM_TEMPERATURE=warm \
  "$HUTCH_BIN" benchmark "$set_dir" --task t --model m --base-url "$MOCK_URL" --rootfs "$BENCH_IMAGE" -o "$tmp/bo"
tap_like "$tap_stderr" "LLM_TEMPERATURE" "naming the variable"

tap_done
