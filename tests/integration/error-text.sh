#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Error messages as printed: an errno's text said once (not after a message
# that says it already), and none after an HTTP status, which the errno
# only stands for (a 401 is no "Protocol error" to a reader).
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)

# times TEXT REGEX: how many times REGEX (case ignored) is in TEXT.
times() { grep -oiE -- "$2" <<<"$1" | wc -l; }
# A phrase of some words said twice in a row ("x: y: No such file: no such file").
repeats() { grep -iE '([a-z][a-z ]{8,}[a-z]): \1' <<<"$1"; }

id=$(timeout 20 "$HUTCH_BIN" create --rootfs "$img" 2>/dev/null)
tap_check $? "hutch create"
tap_status 125 "hutch cp of a file the sandbox does not have" "$HUTCH_BIN" cp "$id:/no/such/file" "$tmp/x"
tap_is "$(times "$tap_stderr" 'no such file or directory')" "1" "says \"no such file or directory\" once"
tap_like "$tap_stderr" "/no/such/file" "naming the file"
tap_is "$(repeats "$tap_stderr")" "" "and repeats nothing"
tap_status 125 "hutch cp of a host file that does not exist" "$HUTCH_BIN" cp "$tmp/no-such" "$id:/x"
tap_is "$(times "$tap_stderr" 'no such file or directory')" "1" "says it once too"
tap_status 127 "hutch exec of a command the image does not have" "$HUTCH_BIN" exec --in "$id" -- no-such-command
tap_is "$(times "$tap_stderr" 'no such file or directory')" "1" "says it once"
tap_ok "hutch rm" "$HUTCH_BIN" rm "$id"

[ -x /usr/bin/python3 ] || {
  tap_skip "HTTP statuses" "python3 is needed for the mock model server"
  tap_done
}
mock_start '[{"status": 401, "error": "invalid api key"}]'
AGENT_IMAGE=$img
tap_status 3 "hutch run: the model's API answers 401" hrun --max-tries 1 --query q
tap_like "$tap_stderr" "answered HTTP 401: invalid api key" "says the HTTP status and the server's words"
tap_unlike "$tap_stderr" "Protocol error" "and no errno text after them"
tap_is "$(repeats "$tap_stderr")" "" "and repeats nothing"

# The pre-flight of hutch benchmark, refused by a server that wants a key.
mkdir -p "$tmp/tasks/t"
printf 'dataset: "json"\ndata_files: "t/data.json"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
  >"$tmp/tasks/t/config.yaml"
printf '%s\n' '{"id": "a", "problem_statement": "p", "ground_truth": "1"}' >"$tmp/tasks/t/data.json"
printf 'def compute_score(a, b):\n    return 1.0\n' >"$tmp/tasks/t/reward.py"
mock_stop
export MOCK_API_KEY=secret
mock_start '[]'
unset MOCK_API_KEY
tap_status 3 "hutch benchmark: the pre-flight answered 401" "$HUTCH_BIN" benchmark "$tmp/tasks" --task t \
  --base-url "$MOCK_URL" --model m --rootfs "$img" --output-dir "$tmp/out"
tap_like "$tap_stderr" "401" "says the HTTP status"
tap_unlike "$tap_stderr" "Protocol error|Permission denied" "with no errno text after it"
tap_done
