#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Nothing of hutch's own command line or environment is readable inside a
# sandbox.  init is a fork of hutch (or of hutch-agent), not an exec, so
# without care /proc/1/cmdline shows hutch's whole argv: an API key, --env
# values, bind and policy paths.  Every process the sandbox can see is read
# (cmdline, environ, and its own /proc/self), for exec, create + exec --in,
# and run.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)

# Markers that reach hutch only: in a path on its command line and in its
# environment, never passed into the sandbox.
arg_mark=argmark$$x$RANDOM
env_mark=envmark$$y$RANDOM
mkdir "$tmp/$arg_mark"
cp "$HUTCH_POLICY" "$(dirname "$HUTCH_POLICY")/seccomp.json" "$tmp/$arg_mark/"
policy=$tmp/$arg_mark/default.policy

# Everything a sandboxed process can read of every process it can see.
read_all='for p in /proc/[0-9]* /proc/self /proc/thread-self; do
  for f in cmdline environ comm; do cat "$p/$f" 2>/dev/null; echo; done
done | tr "\0" " "'

hx() { env "HUTCH_TEST_SECRET=$env_mark" "$HUTCH_BIN" "$@"; }

tap_ok "exec: read every visible process's cmdline and environ" \
  hx exec --rootfs "$img" --policy "$policy" -- sh -c "$read_all"
tap_like "$tap_stdout" "hutch-init" "exec: the reads reached init"
tap_unlike "$tap_stdout" "$arg_mark" "exec: hutch's command line is not readable"
tap_unlike "$tap_stdout" "$env_mark" "exec: hutch's environment is not readable"
tap_is "$(hx exec --rootfs "$img" --policy "$policy" -- cat /proc/1/cmdline | tr -d '\0')" "hutch-init" \
  "exec: /proc/1/cmdline is init's name alone"
tap_fails "exec: /proc/1/mem of init cannot be read" \
  hx exec --rootfs "$img" --policy "$policy" -- dd if=/proc/1/mem of=/dev/null bs=1 count=1 skip=4096

id=$(hx create --rootfs "$img" --policy "$policy" --hostname "h$arg_mark" 2>/dev/null)
tap_ok "create: a sandbox whose creator's argv holds the marker" test -n "$id"
tap_ok "exec --in: read every visible process" hx exec --in "$id" -- sh -c "$read_all"
tap_like "$tap_stdout" "hutch-init" "exec --in: the reads reached init"
tap_unlike "$tap_stdout" "$arg_mark" "exec --in: the creator's command line is not readable"
tap_unlike "$tap_stdout" "$env_mark" "exec --in: the creator's environment is not readable"
tap_is "$(hx exec --in "$id" -- hostname)" "h$arg_mark" "create: what the options said still applies"
"$HUTCH_BIN" rm "$id" >/dev/null 2>&1

if [ ! -x /usr/bin/python3 ]; then
  tap_skip "run: python3 is needed for the mock model server"
  tap_done
  exit 0
fi
AGENT_IMAGE=$img
key=sk-$arg_mark
cmd="$read_all"
mock_start "$(python3 -c 'import json, sys
print(json.dumps([{"calls": [["execute_bash", {"command": sys.argv[1]}]]}, {"calls": [["submit", {}]]}]))' "$cmd")"
tap_status 0 "run: the model reads every visible process" \
  env "LLM_API_KEY=$key" "HUTCH_TEST_SECRET=$env_mark" \
  "$HUTCH_BIN" run --query "look around" --api-key "$key" --base-url "$MOCK_URL" --model m \
  --rootfs "$AGENT_IMAGE" --output-dir "$AGENT_OUT" --quiet
run_dir
obs=$(traj 't["steps"][0]["observation"]')
tap_like "$obs" "hutch-init" "run: the reads reached init"
tap_unlike "$obs" "$arg_mark" "run: the API key and the agent's argv are not readable"
tap_unlike "$obs" "$env_mark" "run: the agent's environment is not readable"
mock_stop
tap_done
