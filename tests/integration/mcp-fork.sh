#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch mcp's sandbox_fork (src/mcp/mcp_fork.c), sandbox_create from a
# session's snapshot and sandbox_snapshot_delete (src/mcp/mcp_snapshot.c),
# driven by the official TypeScript client (tests/mcp), which checks every
# result against the tool's outputSchema, over stdio and HTTP: the children
# start from the parent's files and nothing else (not its /tmp, /dev/shm or
# processes), no write crosses between them and the parent, they count
# against --max-sandboxes, a paused parent is forked and stays paused, and
# they go with the session, or with a SIGKILLed server's reaper; a snapshot
# is deleted only when no sandbox of the session runs on it and no later
# snapshot lies over it.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/mcp.sh"

mcp_setup client

client() { (cd "$clientdir" && timeout 300 node client.mjs "$@"); }
export HUTCH_MCP_TOKEN=test-token-$RANDOM-$RANDOM-$RANDOM
# fork_facts FILE MODE: what the forks scenario printed.
fork_facts() {
  local out=$1 mode=$2 s1 s2
  tap_is "$(fact "$out" fork isError)" 'false' "$mode: sandbox_fork forks a sandbox" || tap_diag "$(fact "$out" fork text)"
  tap_like "$(fact "$out" fork children)" '^\["[0-9a-f]{12}", "[0-9a-f]{12}"\]$' "$mode: into 2 children, named by their ids"
  tap_is "$(fact "$out" fork sandboxes_left)" '1' "$mode: saying how many more the session may have"
  tap_is "$(fact "$out" "children see" a)$(fact "$out" "children see" b)" '"parent\n""parent\n"' "$mode: each child has the parent's files"
  tap_is "$(fact "$out" "children see" tmp)$(fact "$out" "children see" shm)" 'nullnull' "$mode: not its /tmp or /dev/shm"
  tap_is "$(fact "$out" "a wrote" a)" '"a\n"' "$mode: a child writes its own files"
  tap_is "$(fact "$out" "a wrote" parent)" '["parent\n", null, null]' "$mode: no write of it reaches the parent (layer, /tmp, /dev/shm)"
  tap_is "$(fact "$out" "a wrote" b)" '["parent\n", null, null]' "$mode: nor its sibling"
  tap_like "$(fact "$out" "processes" parent)" 'sleep 600' "$mode: the parent's processes run on across the fork"
  tap_unlike "$(fact "$out" "processes" child)" 'sleep 600' "$mode: and are not the children's"
  tap_is "$(fact "$out" list sandboxes | python3 -c 'import json, sys; l = json.load(sys.stdin); print(len(l), len({s["image"] for s in l}))')" \
    '3 1' "$mode: the children belong to the session, on the parent's image"
  tap_is "$(fact "$out" "fork past the bound" isError)" 'true' "$mode: a fork past --max-sandboxes is refused"
  tap_like "$(fact "$out" "fork past the bound" text)" 'has 3 sandboxes and may have 4 .*--max-sandboxes' "$mode: naming the bound"
  tap_is "$(fact "$out" "fork paused" isError)" 'false' "$mode: a paused sandbox is forked"
  tap_is "$(fact "$out" "fork paused" child_runs)" '"parent\n"' "$mode: its child runs"
  tap_like "$(fact "$out" "fork paused" parent_refused)" 'it is paused' "$mode: and it stays paused"
  tap_is "$(fact "$out" "reset child" f)" 'null' "$mode: a child's reset returns it to its image, not to the fork"
  s1=$(fact "$out" "create from snapshot" snapshot | tr -d '"')
  tap_like "$s1" '^mcp-[0-9a-f]{8}-1$' "$mode: a snapshot of the session"
  tap_is "$(fact "$out" "create from snapshot" isError)" 'false' "$mode: sandbox_create starts a sandbox from it"
  tap_is "$(fact "$out" "create from snapshot" image)" "\"$s1\"" "$mode: which runs it"
  tap_is "$(fact "$out" "create from snapshot" f)" '"parent\n"' "$mode: with its files"
  tap_is "$(fact "$out" "delete in use" isError)" 'true' "$mode: a snapshot a sandbox runs on is not deleted"
  tap_like "$(fact "$out" "delete in use" text)" 'runs on it' "$mode: saying why"
  tap_is "$(fact "$out" "fork of it" image)" "\"$s1\"" "$mode: a fork of that sandbox runs the snapshot too"
  tap_is "$(fact "$out" "fork of it" f)" '"parent\n"' "$mode: with its files"
  s2=$(fact "$out" "delete under another" s2 | tr -d '"')
  tap_is "$(fact "$out" "delete under another" isError)" 'true' "$mode: a snapshot another lies over is not deleted"
  tap_like "$(fact "$out" "delete under another" text)" "delete $s2 first" "$mode: naming the one to delete first"
  tap_is "$(fact "$out" "delete top" isError)" 'false' "$mode: the later snapshot is deleted"
  tap_is "$(fact "$out" "delete top" snapshots_left)" '1' "$mode: making room"
  tap_is "$(fact "$out" "delete base" isError)" 'false' "$mode: then the one under it"
  tap_is "$(fact "$out" "delete base" snapshots_left)" '2' "$mode: making room again"
  tap_is "$(fact "$out" "delete again" isError)" 'true' "$mode: a snapshot deleted is no longer the session's"
  tap_like "$(fact "$out" "snapshot after" image)" '-3"$' "$mode: a new snapshot takes a new number"
  tap_is "$(fact "$out" held ids)" "$(python3 -c 'import json, sys; print(json.dumps(sorted(sys.argv[1:])))' \
    "$(fact "$out" held parent | tr -d '"')" "$(fact "$out" held a | tr -d '"')")" "$mode: the session holds what it did not destroy"
}

client forks stdio "$H" --image "$img" --max-sandboxes 4 --max-snapshots 2 --audit-log "$tmp/audit3" >"$tmp/fork" 2>"$tmp/fork.err"
tap_check $? "the TypeScript client runs the fork scenario over stdio" || tap_diag "$(cat "$tmp/fork" "$tmp/fork.err")"
fork_facts "$tmp/fork" stdio
tap_is "$(fact "$tmp/fork" closed step)" '"closed"' "stdio: the client closes"
tap_ok "stdio: the end of the session removed its sandboxes, the fork's child among them" no_sandboxes
tap_ok "stdio: and its snapshots" no_snapshots
tap_like "$(cat "$tmp/audit3")" '"tool":"sandbox_fork","sandbox":"[0-9a-f]+","outcome":"ok"' "sandbox_fork is audited"
tap_like "$(cat "$tmp/audit3")" '"tool":"sandbox_snapshot_delete","outcome":"ok"' "so is sandbox_snapshot_delete"

mcp_listen "$tmp/http2.err" --image "$img" --max-sandboxes 4 --max-snapshots 2 --audit-log /dev/null
client forks http "$url" "$HUTCH_MCP_TOKEN" >"$tmp/forkh" 2>"$tmp/forkh.err"
tap_check $? "the TypeScript client runs the fork scenario over HTTP" || tap_diag "$(cat "$tmp/forkh" "$tmp/forkh.err" "$tmp/http2.err")"
fork_facts "$tmp/forkh" http
tap_ok "http: ending the session removed its sandboxes, the fork's child among them" no_sandboxes
tap_ok "http: and its snapshots" no_snapshots
HUTCH_TEST_LEAVE=1 client forks http "$url" "$HUTCH_MCP_TOKEN" >"$tmp/forkk" 2>"$tmp/forkk.err"
tap_is "$(fact "$tmp/forkk" left step)" '"left"' "a client leaves a session open with a fork's child" || tap_diag "$(cat "$tmp/forkk" "$tmp/forkk.err")"
tap_is "$("$HUTCH_BIN" ps -q | wc -l)" '2' "which hutch ps lists beside its parent meanwhile"
kill -9 "$srv"
wait "$srv" 2>/dev/null
srv=
tap_ok "a SIGKILLed server's fork children are removed by the reaper" no_sandboxes
tap_ok "and so is its session's snapshot" no_snapshots

tap_done
