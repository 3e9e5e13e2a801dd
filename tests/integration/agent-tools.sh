#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch run's tools inside the sandbox: execute_bash (errors, timeouts,
# output clean-up) and every str_replace_editor command with its errors,
# in the hutch profile (--tools hutch; agent-lis.sh has the default one).
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
AGENT_IMAGE=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"

# obs N: the observation of step N of the last run.
obs() { traj "t[\"steps\"][$1][\"observation\"]"; }

mock_start '[
 {"calls": [["execute_bash", {"command": "echo out; echo err >&2; exit 3"}]]},
 {"calls": [["execute_bash", {"command": "sleep 10"}]]},
 {"calls": [["execute_bash", {"command": "i=0; while [ $i -lt 200 ]; do i=$((i+1)); echo line$i; done"}]]},
 {"calls": [["execute_bash", {"command": "printf \"\\033[31mred\\033[0m\\r\\n\\377x\\n\""}]]},
 {"calls": [["execute_bash", {"command": "pwd; sleep 100 > /dev/null 2>&1 & echo bg"}]]},
 {"calls": [["execute_bash", {"command": "head -c 3000000 /dev/zero | tr \"\\0\" a"}]]},
 {"calls": [["execute_bash", "{not json"]]},
 {"calls": [["submit", {}]]}
]'
tap_status 0 "execute_bash cases" hrun --query q --tools hutch --tool-timeout 1 --max-token-limit 100000000
run_dir
tap_is "$(obs 0)" "$(printf 'Exit code: Error: Exit code 3\nExecution output of \\[execute_bash]:\n\\[STDOUT]\nout\n\n\\[STDERR]\nerr\n')" \
  "a failing command: exit code string, stdout and stderr"
tap_is "$(obs 1)" "$(printf 'Exit code: -1\nExecution output of \\[execute_bash]:\n\\[STDOUT]\nThe command took too long to execute (>1s)')" \
  "a command over the timeout"
tap_like "$(obs 2)" $'line40\n-{50}\n<Observation truncated in middle for saving context>\n-{50}\nline161\n' \
  "long output: first and last 40 lines"
tap_is "$(obs 3)" "$(printf 'Exit code: 0\nExecution output of \\[execute_bash]:\n\\[STDOUT]\nred\n\xef\xbf\xbdx\n')" \
  "ANSI colours and \\r stripped, invalid UTF-8 replaced"
tap_like "$(obs 4)" $'STDOUT]\n/testbed\nbg' "commands run in /testbed; a background process does not hold the call"
tap_like "$(obs 5)" "output capped" "a huge output is capped"
tap_like "$(obs 6)" "^ERROR: the arguments of execute_bash" "arguments that are not JSON are answered with an error"

script=$(/usr/bin/python3 - <<'PY'
import json, sys
big = "x" * 300000 + "\n"
E = "str_replace_editor"
steps = [
  [E, {"command": "create", "path": "/testbed/a.txt", "file_text": "alpha\nbeta 'quoted' $HOME `x`\ngamma\n"}],
  [E, {"command": "create", "path": "/testbed/a.txt", "file_text": "again"}],
  [E, {"command": "view", "path": "/testbed/a.txt"}],
  [E, {"command": "view", "path": "/testbed/a.txt", "view_range": [2, -1]}],
  [E, {"command": "view", "path": "/testbed/a.txt", "view_range": [9, 10]}],
  [E, {"command": "str_replace", "path": "/testbed/a.txt", "old_str": "beta", "new_str": "BETA"}],
  [E, {"command": "str_replace", "path": "/testbed/a.txt", "old_str": "nope", "new_str": "x"}],
  [E, {"command": "str_replace", "path": "/testbed/a.txt", "old_str": "a", "new_str": "x"}],
  [E, {"command": "insert", "path": "/testbed/a.txt", "insert_line": 1, "new_str": "inserted"}],
  [E, {"command": "insert", "path": "/testbed/a.txt", "insert_line": 99, "new_str": "x"}],
  [E, {"command": "undo_edit", "path": "/testbed/a.txt"}],
  ["execute_bash", {"command": "cat /testbed/a.txt"}],
  [E, {"command": "undo_edit", "path": "/testbed/nothing.txt"}],
  [E, {"command": "view", "path": "/testbed"}],
  [E, {"command": "view", "path": "relative.txt"}],
  [E, {"command": "view", "path": "/testbed/missing"}],
  ["execute_bash", {"command": "printf \"\\0\\1\\2\" > /testbed/bin.dat"}],
  [E, {"command": "view", "path": "/testbed/bin.dat"}],
  [E, {"command": "create", "path": "/testbed/output/big.txt", "file_text": big}],
  [E, {"command": "view", "path": "/testbed/output/big.txt"}],
  [E, {"command": "fly", "path": "/testbed"}],
  ["submit", {}],
]
print(json.dumps([{"calls": [s]} for s in steps]))
PY
)
mock_start "$script"
tap_status 0 "str_replace_editor cases" hrun --query q --tools hutch --max-token-limit 100000000
run_dir
p='Execution output of \[str_replace_editor]:'
tap_is "$(obs 0)" "$(printf '%s\nFile created successfully at: /testbed/a.txt' "$p")" "create"
tap_like "$(obs 1)" "ERROR: File already exists at: /testbed/a.txt" "create refuses to overwrite"
tap_is "$(obs 2)" "$(printf '%s\nHere'"'"'s the result of running `cat -n` on /testbed/a.txt:\n     1\talpha\n     2\tbeta '"'"'quoted'"'"' $HOME `x`\n     3\tgamma\n' "$p")" \
  "view numbers lines like cat -n; quotes and \$ survive"
tap_like "$(obs 3)" $'\n     2\tbeta.*\n     3\tgamma$' "view_range [2, -1]"
tap_like "$(obs 4)" "ERROR: Invalid .view_range." "a view_range past the end"
tap_like "$(obs 5)" "has been edited.*     2	BETA" "str_replace shows a snippet"
tap_like "$(obs 6)" "ERROR: No replacement was performed, old_str .nope. did not appear" "str_replace without a match"
tap_like "$(obs 7)" "Multiple occurrences \(4\)" "str_replace with several matches says how many"
tap_like "$(obs 8)" "     2	inserted" "insert after line 1"
tap_like "$(obs 9)" "ERROR: Invalid .insert_line." "insert past the end"
tap_like "$(obs 10)" "undone successfully" "undo_edit"
tap_is "$(obs 11)" "$(printf 'Exit code: 0\nExecution output of \\[execute_bash]:\n\\[STDOUT]\nalpha\nBETA '"'"'quoted'"'"' $HOME `x`\ngamma\n')" \
  "undo restored the version before the insert"
tap_like "$(obs 12)" "ERROR: No edit history found for /testbed/nothing.txt" "undo without history"
tap_like "$(obs 13)" "2 levels deep in /testbed.*/testbed/a.txt" "view of a directory"
tap_like "$(obs 14)" "not an absolute path" "a relative path is refused"
tap_like "$(obs 15)" "does not exist" "a missing file"
tap_like "$(obs 17)" "binary file" "a binary file is refused"
tap_like "$(obs 18)" "File created successfully" "a 300 kB file is created through a pipe"
tap_is "$(wc -c <"$RUN_DIR/files/big.txt")" "300001" "byte for byte"
tap_like "$(obs 19)" "<response clipped><NOTE>" "a long view is clipped"
tap_check $(($(obs 19 | wc -c) >= 11000)) "to about 10,000 characters"
tap_like "$(obs 20)" "ERROR: Unrecognized command fly" "an unknown editor command"

mock_stop
tap_done
