#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch run --shell persistent (cd and export carry over, stderr apart, exit
# codes, a timeout interrupts only the command, `exit` is survived), and a
# whole task in a Debian image: a python3 script written, run, answered.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
BUSYBOX=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
DEBIAN=$(hutch_test_rootfs debian) || DEBIAN=

obs() { traj "t[\"steps\"][$1][\"observation\"]"; }
head_ok='Exit code: 0\nExecution output of \\[execute_bash]:\n\\[STDOUT]\n'

# persistent_cases IMAGE LABEL: the session's behaviour in one image.
persistent_cases() {
  AGENT_IMAGE=$1
  local l=$2
  mock_start '[
 {"calls": [["execute_bash", {"command": "mkdir -p /tmp/d && cd /tmp/d && export FOO=bar"}]]},
 {"calls": [["execute_bash", {"command": "pwd; echo \"foo=$FOO\""}]]},
 {"calls": [["execute_bash", {"command": "echo out; echo err >&2; false"}]]},
 {"calls": [["execute_bash", {"command": "(exit 7)"}]]},
 {"calls": [["execute_bash", {"command": "cd /; sleep 30; echo never"}]]},
 {"calls": [["execute_bash", {"command": "pwd; echo \"still $FOO\""}]]},
 {"calls": [["execute_bash", {"command": "printf nonl"}]]},
 {"calls": [["execute_bash", {"command": "echo bye; exit 3"}]]},
 {"calls": [["execute_bash", {"command": "pwd; echo \"foo=$FOO\"; cat"}]]},
 {"calls": [["submit", {}]]}
]'
  local t0=$SECONDS
  tap_status 0 "$l: a run with --shell persistent" hrun --query q --shell persistent --tool-timeout 1 \
    --max-token-limit 100000000
  run_dir
  tap_ok "$l: the timeout did not wait for the command ($((SECONDS - t0)) s)" test $((SECONDS - t0)) -lt 25
  tap_is "$(obs 0)" "$(printf 'Exit code: 0\nExecution output of \\[execute_bash]:\n\\[STDOUT]\n')" \
    "$l: cd && export: exit 0, no output, no marker"
  tap_is "$(obs 1)" "$(printf "${head_ok}/tmp/d\nfoo=bar\n")" "$l: cd and export carry over"
  tap_is "$(obs 2)" "$(printf 'Exit code: Error: Exit code 1\nExecution output of \\[execute_bash]:\n\\[STDOUT]\nout\n\n\\[STDERR]\nerr\n')" \
    "$l: stdout and stderr apart, the exit code of the command"
  tap_like "$(obs 3)" '^Exit code: Error: Exit code 7' "$l: exit code of a subshell"
  tap_is "$(obs 4)" "$(printf 'Exit code: -1\nExecution output of \\[execute_bash]:\n\\[STDOUT]\nThe command took too long to execute (>1s)')" \
    "$l: a command over the timeout: the reference's string"
  tap_is "$(obs 5)" "$(printf "${head_ok}/\nstill bar\n")" \
    "$l: after the timeout the same session goes on (its cd and export kept)"
  tap_is "$(obs 6)" "$(printf "${head_ok}nonl")" "$l: output without a final newline"
  tap_like "$(obs 7)" $'^Exit code: Error: Exit code 3\n.*\nbye\n\n\\[The shell session ended; a new one was started in /testbed' \
    "$l: exit ends the session; the observation says a new one started"
  tap_is "$(obs 8)" "$(printf "${head_ok}/testbed\nfoo=\n")" \
    "$l: the new session starts afresh in the working directory; stdin is empty"
  tap_unlike "$(traj 'json.dumps(t)')" '__hutch_' "$l: no marker anywhere in the trajectory"
  tap_is "$(traj 't["hutch"]["end_reason"]')" "submitted" "$l: submitted"
}

persistent_cases "$BUSYBOX" busybox

mock_start '[{"calls": [["submit", {}]]}]'
tap_status 2 "--shell with an unknown mode is a usage error" hrun --query q --shell nope

if [ -z "$DEBIAN" ]; then
  tap_skip "debian test rootfs unavailable" 23
else
  persistent_cases "$DEBIAN" debian
  AGENT_IMAGE=$DEBIAN
  script=$(/usr/bin/python3 - <<'PY'
import json
prog = "import sys\nprimes = [n for n in range(2, 60) if all(n % d for d in range(2, n))]\nprint(sum(primes))\nprint(sys.version_info[0], file=sys.stderr)\n"
steps = [
  ["str_replace_editor", {"command": "create", "path": "/testbed/primes.py", "file_text": prog}],
  ["execute_bash", {"command": "cd /testbed && python3 primes.py"}],
  ["execute_bash", {"command": "python3 /testbed/primes.py 2>/dev/null > /testbed/output/answer.txt && cat /testbed/output/answer.txt"}],
  ["submit", {}],
]
print(json.dumps([{"content": "step %d" % i, "calls": [s]} for i, s in enumerate(steps)]))
PY
)
  mock_start "$script"
  tap_status 0 "debian: a whole task in the default shell mode" hrun --query "sum the primes below 60" \
    --max-token-limit 100000000
  run_dir
  tap_is "$(cat "$RUN_DIR/files/answer.txt" 2>&1)" "440" "debian: answer.txt copied back"
  tap_ok "debian: the script is not copied back (it is outside the output dir)" test ! -e "$RUN_DIR/files/primes.py"
  tap_like "$(obs 0)" 'File created successfully|created' "debian: the editor created the script"
  tap_is "$(obs 1)" "$(printf "${head_ok}440\n\n\\[STDERR]\n3\n")" "debian: python3 ran it, stderr apart"
  tap_is "$(obs 2)" "$(printf "${head_ok}440\n")" "debian: answer written"
  tap_is "$(traj 't["hutch"]["end_reason"]')" "submitted" "debian: end reason"
  tap_is "$(traj 'len(t["steps"])')" "4" "debian: four steps in the trajectory"
  tap_is "$(traj 't["steps"][1]["action"]["function"]')" "execute_bash" "debian: the action recorded"
  tap_is "$(traj 't["steps"][0]["thought"]')" "step 0" "debian: the thought recorded"
fi
tap_done
