#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# --lis takes the prompt config and the tool schemas from an installed
# LLM-in-Sandbox (its package directory, found as Python finds it, or a path
# given), and hutch benchmark without TASKDIR takes its task folders: tried
# on a fake package laid out as LLM-in-Sandbox 0.2.0's (config/general.yaml,
# tools.py with its three schemas built by Python code, benchmark/NAME/),
# written here with text of its own.  Without one, --lis fails with the
# command that installs it.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
AGENT_IMAGE=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
# python3 in the image: hutch benchmark scores with it.
BENCH_IMAGE=$(hutch_test_rootfs debian) || tap_skip_all "debian test rootfs unavailable (tests/setup-host.sh)"
unset LLM_NAME LLM_BASE_URL LLM_API_KEY LLM_TEMPERATURE LLM_IN_SANDBOX_CONFIG OPENAI_API_KEY OPENAI_BASE_URL PYTHONPATH
export PATH=/usr/bin:/bin:$PATH
tmp=$(hutch_test_tmpdir)
site=$tmp/site
pkg=$site/llm_in_sandbox
mkdir -p "$pkg/config" "$pkg/benchmark/demo"
# Importing the package would import its dependencies: hutch must not.
printf 'raise ImportError("the package itself is not to be imported")\n' >"$pkg/__init__.py"
cat >"$pkg/config/general.yaml" <<'YAML'
system_prompt: |-
  FAKE-LIS system prompt: work in {working_dir}, read {input_dir}, write {output_dir}.
instance_prompt: |-
  FAKE-LIS task: {problem_statement}
working_dir: "/testbed"
input_dir: "/testbed/input"
output_dir: "/testbed/output"
YAML
cat >"$pkg/tools.py" <<'PY'
"""Fake tool schemas, built with code as LLM-in-Sandbox builds its own."""
COMMANDS = ["view", "create"]
_DOC = "fake editor"

str_replace_editor_tool = {
    "type": "function",
    "function": {
        "name": "str_replace_editor",
        "description": _DOC + " (" + ", ".join(f"`{c}`" for c in COMMANDS) + ")",
        "parameters": {"type": "object", "properties": {"command": {"type": "string", "enum": COMMANDS},
                                                         "path": {"type": "string"}},
                       "required": ["command", "path"]},
    },
}
execute_bash_tool = {"type": "function", "function": {"name": "execute_bash", "description": "fake bash",
                     "parameters": {"type": "object", "properties": {"command": {"type": "string"}},
                                    "required": ["command"]}}}
submit_tool = {"type": "function", "function": {"name": "submit", "description": "fake submit",
               "parameters": {"type": "object", "properties": {}, "required": []}}}
PY
want_tools=$(PYTHONPATH=$pkg /usr/bin/python3 -c '
import json, tools
print(json.dumps([tools.str_replace_editor_tool, tools.execute_bash_tool, tools.submit_tool], sort_keys=True))')
cat >"$pkg/benchmark/demo/config.yaml" <<'YAML'
dataset: "json"
data_files: "demo/data.json"
system_prompt: "FAKE-LIS demo set"
instance_prompt: "{problem_statement}"
YAML
printf '[{"id": "d1", "problem_statement": "FAKE-DEMO-ONE", "ground_truth": "x"}]\n' >"$pkg/benchmark/demo/data.json"
printf 'def compute_score(agent_answer, ground_truth, **kw):\n    return 0.0\n' >"$pkg/benchmark/demo/reward.py"

sent_tools() {
  mock_request 0 'json.dumps(r["body"]["tools"], sort_keys=True)'
}

# ---- hutch run --lis ----
mock_start '[]'
export PYTHONPATH=$site
tap_status 0 "run --lis with the package on Python's path" hrun --query QQ --lis
unset PYTHONPATH
tap_is "$(mock_request 0 'r["body"]["messages"][0]["content"]')" \
  "FAKE-LIS system prompt: work in /testbed, read /testbed/input, write /testbed/output." \
  "the system prompt is the package's config/general.yaml's"
tap_is "$(mock_request 0 'r["body"]["messages"][1]["content"].split(chr(10))[0]')" "FAKE-LIS task: QQ" \
  "and so is the task's message"
tap_is "$(sent_tools)" "$want_tools" "the tools sent are its tools.py's, in its order"
mock_start '[]'
tap_status 0 "run --lis=PATH (the package directory given)" hrun --query QQ --lis="$pkg"
tap_is "$(sent_tools)" "$want_tools" "the same tools"
mock_start '[]'
printf 'lis: %s\n' "$pkg" >"$tmp/settings.yaml"
tap_status 0 "run with 'lis: PATH' in the settings file" hrun --query QQ --settings "$tmp/settings.yaml"
tap_is "$(sent_tools)" "$want_tools" "the same tools"
mock_start '[]'
export PYTHONPATH=$site
tap_status 0 "run --lis --prompt_config FILE: the file given wins" \
  hrun --query QQ --lis --prompt_config "$HUTCH_SRCDIR/prompts/default.yaml"
unset PYTHONPATH
tap_unlike "$(mock_request 0 'r["body"]["messages"][0]["content"]')" "FAKE-LIS" "the system prompt is the file's"
tap_is "$(sent_tools)" "$want_tools" "the tools are still the package's"
mock_start '[]'
tap_status 2 "run --lis without the package" hrun --query QQ --lis
tap_like "$tap_stderr" "pip install llm-in-sandbox" "fails with the command that installs it"
tap_is "$(mock_count)" "0" "and sends nothing"
# A package in the current directory (a run's files/, which a sandbox
# wrote) is not Python's path for hutch: its tools.py never runs on the host.
cwd=$tmp/cwd
mkdir -p "$cwd"
cp -r "$pkg" "$cwd/"
printf 'import os\nopen(os.path.join(os.path.dirname(__file__), "RAN"), "w")\n' >>"$cwd/llm_in_sandbox/tools.py"
tap_status 2 "run --lis in a directory that holds a package llm_in_sandbox" \
  sh -c "cd '$cwd' && exec $(printf '%q ' "$HUTCH_BIN") run --query QQ --model m --lis"
tap_ok "it is not taken: its tools.py did not run" test ! -e "$cwd/llm_in_sandbox/RAN"
tap_status 2 "run --lis=PATH of a directory that is not the package" hrun --query QQ --lis="$tmp"
tap_like "$tap_stderr" "config/general.yaml" "says what is missing"

# ---- hutch benchmark without TASKDIR: the package's task folders ----
mock_start '[]'
tap_status 0 "benchmark --task demo without TASKDIR, the package installed" env PYTHONPATH="$site" \
  "$HUTCH_BIN" benchmark --task demo --model m --base-url "$MOCK_URL" --rootfs "$BENCH_IMAGE" -o "$tmp/bo" --lis
tap_is "$(mock_request 0 'r["body"]["messages"][1]["content"]')" "FAKE-DEMO-ONE
Steps Remaining: 100" "its task folder is the package's benchmark/demo"
tap_is "$(sent_tools)" "$want_tools" "with --lis, the tasks get the package's tools"
tap_status 2 "benchmark --task demo without TASKDIR or the package" \
  "$HUTCH_BIN" benchmark --task demo --model m --base-url "$MOCK_URL" --rootfs "$BENCH_IMAGE" -o "$tmp/bo"
tap_like "$tap_stderr" "TASKDIR.*pip install llm-in-sandbox" "says to give TASKDIR or install the package"

tap_done
