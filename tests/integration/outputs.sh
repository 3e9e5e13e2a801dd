#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What a sandbox hands back is data from an attacker: hutch run's files/,
# hutch cp, the Python package's download() and hutch benchmark's
# runs/ID/*/files/ never put a file under a name a host program loads by
# itself (a repository's .git or HEAD, .envrc, .vscode, hutch.yaml...), and
# hutch run reads no settings file from inside a run directory
# (hutch-security(7), "What a sandbox hands back").  Each attack is the
# one seen: git status in the copy runs the sandbox's core.fsmonitor on the
# host; a later hutch run started there sends the API key to the endpoint
# the sandbox chose.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
command -v git >/dev/null || tap_skip_all "git is needed to show what a host's git does with the copy"
AGENT_IMAGE=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
# Apart from where the copies go: no copy out may reach the state directory.
export HUTCH_STATE_DIR=$tmp/s/state
mkdir -p "$HUTCH_STATE_DIR" "$tmp/home" "$tmp/o"
marks=$tmp/marks
mkdir -p "$marks"
chmod 1777 "$marks"

# The host's git as a user's would be, but with no configuration of the
# machine's or the user's own (which could set safe.bareRepository).
hgit() { env HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/home" GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0 git "$@"; }

# plant DIR: a shell command that writes, under DIR in the sandbox, a
# repository whose config runs a command on git status (A), a bare one (B)
# with a directory whose .git file names it, direnv's .envrc, an editor's
# folder settings, hutch run's settings naming another endpoint, an answer.
plant() {
  local o=$1
  printf '%s' "o=$o; mkdir -p \$o/.git/objects \$o/.git/refs \$o/bare/objects \$o/bare/refs \$o/sub \$o/.vscode && \
printf 'ref: refs/heads/main\\n' > \$o/.git/HEAD && \
printf '[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \"touch $marks/A\"\\n' > \$o/.git/config && \
printf 'ref: refs/heads/main\\n' > \$o/bare/HEAD && \
printf '[core]\\n\\tbare = false\\n\\tfsmonitor = \"touch $marks/B\"\\n' > \$o/bare/config && \
printf 'gitdir: ../bare\\n' > \$o/sub/.git && \
printf 'touch $marks/envrc\\n' > \$o/.envrc && \
printf '{\"tasks\": []}\\n' > \$o/.vscode/tasks.json && \
printf 'llm_base_url: $evil_url\\n' > \$o/hutch.yaml && \
printf '#!/bin/sh\\necho ran\\n' > \$o/run.sh && chmod 755 \$o/run.sh && \
echo 42 > \$o/answer.txt"
}

# check_tree DIR WHAT: the planted tree came back under names no host
# program loads, with every byte, and the host's git finds no repository
# in it and runs nothing.
check_tree() {
  local d=$1 what=$2
  rm -f "$marks"/*
  (cd "$d" && hgit status) >/dev/null 2>&1
  (cd "$d/sub" && hgit status) >/dev/null 2>&1
  tap_is "$(ls "$marks")" "" "$what: git status in the copy and below it runs none of the sandbox's commands"
  tap_fails "$what: the host's git finds no repository in the copy" hgit -C "$d" rev-parse --git-dir
  tap_fails "$what: nor in its bare-repository-shaped directory" hgit -C "$d/bare" rev-parse --git-dir
  tap_fails "$what: nor through a .git file naming one" hgit -C "$d/sub" rev-parse --git-dir
  [ -n "${3:-}" ] || tap_is "$(cd "$d" && find . | LC_ALL=C sort | tr '\n' ' ')" \
    ". ./.envrc.sandbox ./.git.sandbox ./.git.sandbox/HEAD.sandbox ./.git.sandbox/config ./.git.sandbox/objects ./.git.sandbox/refs ./.vscode.sandbox ./.vscode.sandbox/tasks.json ./answer.txt ./bare ./bare/HEAD.sandbox ./bare/config ./bare/objects ./bare/refs ./hutch.yaml.sandbox ./run.sh ./sub ./sub/.git.sandbox " \
    "$what: each loaded name is NAME.sandbox, every other name is kept"
  tap_like "$(cat "$d/.git.sandbox/config")" 'fsmonitor = "touch ' "$what: nothing is lost (the config is there, as data)"
  tap_is "$(stat -c %a "$d/run.sh")" "644" "$what: no file comes back executable"
}

# ---- hutch run: files/ ----
mock_start '[]'
evil_mock=$MOCK_REQUESTS
evil_url=$MOCK_URL
mock_pid_evil=$_mock_pid
_mock_pid= # keep it running beside the model's mock
mock_start "$(/usr/bin/python3 -c 'import json, sys; print(json.dumps([{"calls": [["execute_bash", {"command": sys.argv[1]}]]}]))' "$(plant /testbed/output)")"
tap_status 0 "a run whose model plants a repository, .envrc, .vscode and hutch.yaml in its output" \
  hrun --query "plant"
run_dir
check_tree "$RUN_DIR/files" "hutch run"
tap_ok "the run directory is marked as hutch's output" test -f "$RUN_DIR/.hutch-output"
tap_like "$(traj 't["hutch"].get("copy_back_renamed")')" "^7$" "the trajectory counts the renamed entries (.git, two HEADs, sub/.git, .envrc, .vscode, hutch.yaml)"

# A later hutch run started in files/ to continue the task: the endpoint
# and key come from the user's variables, never from a file there.
rm -f "$evil_mock" && : >"$evil_mock"
cp "$RUN_DIR/files/hutch.yaml.sandbox" "$RUN_DIR/files/hutch.yaml"
mock_start '[]'
tap_status 0 "a run started in files/ with the user's LLM_BASE_URL and key" \
  env -C "$RUN_DIR/files" LLM_BASE_URL="$MOCK_URL" OPENAI_API_KEY=sk-test-secret \
  "$HUTCH_BIN" run --model test-model --rootfs "$AGENT_IMAGE" --output-dir "$tmp/out2" --retry-delay 0.05 --quiet \
  --query again
tap_is "$(grep -c . "$evil_mock")" "0" "the endpoint a sandbox's hutch.yaml names gets no request (and no key)"
tap_like "$(mock_request 0 'r["authorization"]')" "sk-test-secret" "the user's endpoint gets it"
tap_like "$tap_stderr" "not reading \./hutch\.yaml: .* is a hutch output directory" "hutch run says why it skipped ./hutch.yaml"
kill "$mock_pid_evil" 2>/dev/null
mock_stop

# ---- hutch benchmark: runs/ID/*/files/ is the task's /testbed ----
if deb=$(hutch_test_rootfs debian); then
  mkdir -p "$tmp/tasks/plant"
  printf 'dataset: "json"\ndata_files: "plant/data.json"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
    >"$tmp/tasks/plant/config.yaml"
  printf '[{"id": "p1", "problem_statement": "plant", "ground_truth": "42", "input_files": {}}]\n' \
    >"$tmp/tasks/plant/data.json"
  printf 'def compute_score(agent_answer, ground_truth, **kw):\n    return float(agent_answer.strip() == ground_truth)\n' \
    >"$tmp/tasks/plant/reward.py"
  evil_url=http://127.0.0.1:9/v1
  mock_start "$(/usr/bin/python3 -c 'import json, sys; print(json.dumps([{"calls": [["execute_bash", {"command": sys.argv[1]}]]}]))' "$(plant /testbed)")"
  tap_status 0 "a benchmark task whose model plants the tree in /testbed" \
    "$HUTCH_BIN" benchmark "$tmp/tasks" --task plant --base-url "$MOCK_URL" --model mock --rootfs "$deb" \
    --output-dir "$tmp/bench" --retry-delay 0.05
  tap_is "$(find "$tmp/bench" -name .hutch-output | wc -l)" "2" "the benchmark's directory and the task's run directory are marked"
  files=$(find "$tmp/bench" -type d -name files | head -n 1)
  if [ -n "$files" ]; then
    check_tree "$files" "hutch benchmark" partial
    tap_ok "hutch benchmark: hutch's own repository of /testbed comes back as data too" \
      test -f "$files/.git.sandbox/HEAD.sandbox" -a ! -e "$files/.git" -a -f "$files/hutch.yaml.sandbox"
  else
    tap_check 1 "hutch benchmark wrote a files/ directory"
  fi
  mock_stop
else
  tap_skip "hutch benchmark's files/" "debian test rootfs unavailable"
fi

# ---- hutch cp ----
if "$HUTCH_BIN" create --rootfs "$AGENT_IMAGE" >"$tmp/id" 2>"$tmp/create.err"; then
  id=$(cat "$tmp/id")
  evil_url=http://127.0.0.1:9/v1
  tap_ok "a sandbox plants the same tree" "$HUTCH_BIN" exec --in "$id" -- sh -c "$(plant /w)"
  tap_ok "hutch cp copies the directory out" "$HUTCH_BIN" cp "$id:/w" "$tmp/o/cp"
  tap_like "$tap_stderr" "7 renamed to NAME\.sandbox" "hutch cp says how many it renamed"
  check_tree "$tmp/o/cp" "hutch cp"
  mkdir -p "$tmp/o/cpdir"
  tap_ok "hutch cp ID:/w/.git DIR/ (the name taken from the sandbox)" "$HUTCH_BIN" cp "$id:/w/.git" "$tmp/o/cpdir/"
  tap_is "$(ls -A "$tmp/o/cpdir")" ".git.sandbox" "lands as DIR/.git.sandbox, not as a repository in DIR"
  tap_ok "hutch cp ID:/w/.envrc DIR/" "$HUTCH_BIN" cp "$id:/w/.envrc" "$tmp/o/cpdir/"
  tap_ok "lands as DIR/.envrc.sandbox" test -f "$tmp/o/cpdir/.envrc.sandbox" -a ! -e "$tmp/o/cpdir/.envrc"
  tap_ok "a host name the user gives is the user's: DIR/own-name" "$HUTCH_BIN" cp "$id:/w/.envrc" "$tmp/o/cpdir/own-name"

  # ---- the Python package's download() ----
  if [ -n "${HUTCH_PYTHON:-}" ] && [ -d "$HUTCH_BUILDDIR/python/build/lib/hutch" ]; then
    tap_ok "Sandbox.download() of the directory" env PYTHONPATH="$HUTCH_BUILDDIR/python/build/lib" \
      "$HUTCH_PYTHON" -c 'import sys, hutch
print(hutch.Sandbox.attach(sys.argv[1]).download("/w", sys.argv[2]))' "$id" "$tmp/o/py"
    if [ "$tap_rc" -eq 0 ]; then
      check_tree "$tmp/o/py" "download()"
    fi
  else
    tap_skip "Sandbox.download() of the directory" "this build is not configured with --enable-python"
  fi
  "$HUTCH_BIN" rm "$id" >/dev/null 2>&1
else
  tap_check 1 "hutch create for the hutch cp checks: $(cat "$tmp/create.err")"
fi

tap_done
