#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What a sandbox wrote never drives the user's terminal: the answer hutch run
# prints (and run.log), the progress lines, and the names in hutch's own
# messages have their control sequences escaped, except newline and tab.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
AGENT_IMAGE=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
esc=$'\033'

# The answer: OSC 52 (set the clipboard), clear the screen, a carriage
# return over a fake result, a C1 CSI, a right-to-left override; and a
# tab and a newline, which stay.
mock_start '[
 {"calls": [["execute_bash", {"command": "printf '"'"'\\033]52;c;cm0gLXJmIH4=\\007\\033[2J\\033[Hall tests passed\\rX\\302\\233\\342\\200\\256a\\tb\\nline2\\n'"'"' > /testbed/output/answer.txt; printf '"'"'\\033[31mred\\n'"'"'"}]]},
 {"calls": [["submit", {}]]}
]'
out=$(hutch_test_tmpdir)
tap_status 0 "a run whose answer is full of terminal controls" \
  "$HUTCH_BIN" run --query q --base-url "$MOCK_URL" --model m --rootfs "$AGENT_IMAGE" --output-dir "$out"
printed=$tap_stderr
run_dir
tap_unlike "$printed" "$esc" "no escape character reaches the terminal"
tap_unlike "$printed" $'\r' "no carriage return reaches the terminal"
tap_unlike "$printed" $'\xc2\x9b|\xe2\x80\xae' "no C1 control or bidirectional override"
tap_like "$printed" '\\x1b\]52;c;cm0gLXJmIH4=\\x07\\x1b\[2J\\x1b\[Hall tests passed\\x0dX\\u009b\\u202ea'$'\t''b' \
  "the answer is shown with its controls escaped, the tab kept"
tap_like "$printed" $'\nline2' "and its newline kept"
log=$(cat "$RUN_DIR/run.log")
tap_unlike "$log" "$esc" "run.log has no escape character either"
tap_like "$log" '\\x1b\]52' "run.log shows the escaped sequence"
tap_is "$(od -An -c "$RUN_DIR/files/answer.txt" | head -n 1 | awk '{print $1}')" '033' \
  "the file copied back keeps its bytes: only what is printed is escaped"
mock_stop

# An error message quoting a name from outside: hutch's error printer
# escapes it too.
tap_fails "an image name with controls in it is refused" "$HUTCH_BIN" exec --rootfs $'no\033[2Jsuch' -- true
tap_unlike "$tap_stderr" "$esc" "the error message carries no escape character"
tap_done
