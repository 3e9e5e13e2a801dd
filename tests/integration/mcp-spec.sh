#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch mcp as the 2025-11-25 revision has it, driven by the official
# TypeScript client (tests/mcp): a sandbox's files as resources (listed,
# read, subscribed to, with notifications/resources/updated over stdio and
# over the HTTP event stream), the prompts, and over HTTP sessions served
# side by side: one session's long command does not hold another's calls,
# and a session's own waiting requests are bounded.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/mcp.sh"

mcp_setup client

client() { (cd "$clientdir" && timeout 180 node client.mjs "$@"); }
below() { python3 -c "import sys; sys.exit(not float(sys.argv[1]) < float(sys.argv[2]))" "$@"; }

# resources FILE WHERE: the checks of one run of the resources scenario.
resources_checks() {
  local f=$1 where=$2
  tap_is "$(fact "$f" capabilities resources)" '{"subscribe": true, "listChanged": false}' \
    "$where: initialize offers resources, with subscriptions"
  tap_is "$(fact "$f" list found)" 'true' "$where: resources/list names a file the sandbox made"
  tap_is "$(fact "$f" list mime)" '"text/plain"' "$where: with its media type"
  tap_is "$(fact "$f" list link)" 'false' "$where: but not a symlink it planted"
  tap_is "$(fact "$f" read text)" '"one\n"' "$where: resources/read returns the file's text"
  tap_is "$(fact "$f" "read binary" blob)" '"/wA="' "$where: and bytes that are not UTF-8 as a base64 blob"
  tap_is "$(fact "$f" "read link" code)" '-32002' "$where: a symlink (to /etc/passwd) is not read: -32002"
  tap_is "$(fact "$f" "read missing" code)" '-32002' "$where: nor a file that is not there"
  tap_is "$(fact "$f" "read other" code)" '-32002' "$where: nor one of a sandbox of no session of this client"
  tap_is "$(fact "$f" templates uriTemplate)" '"sandbox://{id}{+path}"' "$where: the resource template"
  tap_is "$(fact "$f" changed told)" 'true' "$where: a subscribed file that changes is told"
  tap_like "$(fact "$f" changed uri)" '^"sandbox://[0-9a-f]+/work/r/a\.txt"$' "$where: by its URI"
  tap_ok "$where: within 6 s (a look every 2 s)" below "$(fact "$f" changed seconds)" 6
  tap_is "$(fact "$f" "during a call" told)" 'true' "$where: a file made while a call of the session runs is told"
  tap_like "$(fact "$f" "during a call" uri)" '/work/r/later\.txt"$' "$where: a subscription made before the file was"
  tap_is "$(fact "$f" "during a call" before_end)" 'true' "$where: before the call ends"
  tap_is "$(fact "$f" unsubscribed updates)" '1' "$where: after unsubscribing, no more of that file"
  tap_is "$(fact "$f" destroyed told)" 'true' "$where: the end of the sandbox is told to a subscription left"
  tap_is "$(fact "$f" prompts names)" '["sandbox_survey", "sandbox_task"]' "$where: prompts/list"
  tap_like "$(fact "$f" prompt text)" 'sandbox_create.*Task:\\nprint the date' "$where: prompts/get fills in the task"
  tap_is "$(fact "$f" closed step)" '"closed"' "$where: every step ran (each result checked by the client)"
}

# ---- stdio ----
client resources stdio "$H" --image "$img" --audit-log /dev/null >"$tmp/stdio" 2>"$tmp/stdio.err"
tap_check $? "the resources scenario over stdio" || cat "$tmp/stdio" "$tmp/stdio.err" >&2
resources_checks "$tmp/stdio" stdio
tap_ok "stdio: its sandboxes went with the client" no_sandboxes

# ---- HTTP ----
export HUTCH_MCP_TOKEN=test-token-$RANDOM-$RANDOM-$RANDOM
mcp_listen "$tmp/http.err" --image "$img" --audit-log /dev/null
tap_like "$url" '^http://127\.0\.0\.1:[0-9]+/mcp$' "the HTTP server listens"
client resources http "$url" "$HUTCH_MCP_TOKEN" >"$tmp/http" 2>"$tmp/http.client.err"
tap_check $? "the resources scenario over HTTP (notifications on the GET event stream)" ||
  cat "$tmp/http" "$tmp/http.client.err" >&2
resources_checks "$tmp/http" http
tap_ok "http: the session's end removed its sandboxes" no_sandboxes

# Two sessions: A runs sleep 8; B's calls answer meanwhile.  The bound is
# well under A's 8 s, so that a busy machine does not fail it, yet a
# server serving one request at a time (B waiting ~7 s) does.
client concurrent http "$url" "$HUTCH_MCP_TOKEN" >"$tmp/conc" 2>"$tmp/conc.err"
tap_check $? "two HTTP sessions side by side" || cat "$tmp/conc" "$tmp/conc.err" >&2
tap_like "$(fact "$tmp/conc" "other session" stdout)" '^"b\\n"$' "session B's command runs while A's sleeps"
tap_ok "B's list and command answer within 4 s, while A's sleep 8 runs" \
  below "$(fact "$tmp/conc" "other session" seconds)" 4
tap_is "$(python3 -c 'import json,sys; o=[json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
o=[x for x in o if x["step"] == "other session"][0]; print(o["ids"] == [o["idb"]])' "$tmp/conc")" 'True' \
  "B lists its own sandbox only"
tap_is "$(fact "$tmp/conc" "same session" answered)" '8' "A's own requests wait behind its running one: 8 held"
tap_is "$(fact "$tmp/conc" "same session" refused)" '1' "the 9th is refused"
tap_is "$(fact "$tmp/conc" "same session" status)" '[429]' "with 429 (not left to hang)"
tap_like "$(fact "$tmp/conc" "same session" why)" 'too many requests waiting in this session' "saying why"
tap_is "$(fact "$tmp/conc" long stdout)" '"slept\n"' "A's long command finishes"
tap_ok "after its 8 s" python3 -c "import sys; sys.exit(not 7.5 < float(sys.argv[1]) < 60)" "$(fact "$tmp/conc" long seconds)"
tap_is "$(fact "$tmp/conc" closed step)" '"closed"' "both sessions end"
tap_ok "and their sandboxes with them" no_sandboxes

kill -TERM "$srv"
wait "$srv"
tap_check $? "SIGTERM ends the server cleanly"
srv=
tap_ok "leaving no sandbox" no_sandboxes
tap_done
