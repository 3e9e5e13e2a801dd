#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch mcp's sandbox_pause and sandbox_resume (src/mcp/mcp_lifecycle.c),
# sandbox_snapshot and sandbox_reset (src/mcp/mcp_snapshot.c), driven by
# the official TypeScript client (tests/mcp), which checks every result
# against the tool's outputSchema: a paused sandbox runs nothing and
# refuses what would run in it or touch its files, resumes where it
# stopped, and is destroyed as any other, by the tool or by the session's
# end; each call is audited.  A reset leaves no process or file of before;
# a snapshot brings its files back; a session keeps no more snapshots than
# --max-snapshots, none of another's, and none past its end, nor past a
# killed server (the reaper).  (sandbox_fork and sandbox_snapshot_delete:
# mcp-fork.sh.)
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/mcp.sh"

mcp_setup client

client() { (cd "$clientdir" && timeout 120 node client.mjs "$@"); }

client lifecycle stdio "$H" --image "$img" --audit-log "$tmp/audit" >"$tmp/out" 2>"$tmp/err"
tap_check $? "the TypeScript client runs the pause and resume scenario" || tap_diag "$(cat "$tmp/out" "$tmp/err")"
id=$(fact "$tmp/out" create id | tr -d '"')
tap_like "$id" '^[0-9a-f]{12}$' "a sandbox is created"
tap_is "$(fact "$tmp/out" pause isError)" 'false' "sandbox_pause pauses it"
tap_is "$(fact "$tmp/out" pause paused)" 'true' "and says so"
tap_like "$(fact "$tmp/out" pause method)" '^"(cgroup|ptrace)"$' "naming the method"
refused=$(fact "$tmp/out" "while paused" refused)
for tool in sandbox_exec sandbox_python sandbox_read_file sandbox_write_file sandbox_list_dir sandbox_run_code; do
  tap_like "$refused" "\"$tool\": \"sandbox: it is paused[^\"]*sandbox_resume" "while paused, $tool is a tool error naming sandbox_resume"
done
tap_is "$(fact "$tmp/out" "pause again" isError)" 'true' "pausing it again is a tool error"
tap_like "$(fact "$tmp/out" "pause again" text)" 'paused already .*sandbox_resume' "saying it is paused already"
tap_is "$(fact "$tmp/out" resume isError)" 'false' "sandbox_resume resumes it"
tap_is "$(fact "$tmp/out" resume paused)" 'false' "and says so"
tap_ok "with the time it was paused (about 1 s)" python3 -c "import sys; sys.exit(not 0.9 <= $(fact "$tmp/out" resume paused_seconds) < 30)"
# Nothing ran between the pause's answer and the resume's call: the loop's
# log of the times it ran has none in that window (the counter read
# around the calls moves in their own time, which load stretches).
tap_is "$(fact "$tmp/out" resume ran_while_paused)" 0 \
  "its loop did not run while paused ($(fact "$tmp/out" resume paused_window_ms) ms; $(fact "$tmp/out" resume advanced_while_paused) rounds in the calls around it, $(fact "$tmp/out" resume advanced_while_running) in a running second)"
tap_ok "over a window of at least 0.9 s, after $(fact "$tmp/out" resume ran_before) rounds that ran before it" \
  python3 -c "import sys; sys.exit(not ($(fact "$tmp/out" resume paused_window_ms) >= 900 and $(fact "$tmp/out" resume ran_before) >= 3))"
tap_is "$(fact "$tmp/out" "after resume" advances)" 'true' "and advances once resumed"
tap_is "$(fact "$tmp/out" "resume again" isError)" 'true' "resuming one that is not paused is a tool error"
tap_like "$(fact "$tmp/out" "resume again" text)" 'is not paused' "saying so"
tap_is "$(fact "$tmp/out" "destroy paused" isError)" 'false' "a paused sandbox is destroyed"
tap_ok "at once" python3 -c "import sys; sys.exit(not $(fact "$tmp/out" "destroy paused" seconds) < 10)"
tap_is "$(fact "$tmp/out" "left paused" isError)" 'false' "a second sandbox is left paused"
tap_is "$(fact "$tmp/out" closed step)" '"closed"' "the client closes"
tap_ok "the end of the session removed the paused sandbox it left" no_sandboxes
tap_like "$(cat "$tmp/audit")" "\"tool\":\"sandbox_pause\",\"sandbox\":\"$id\",\"outcome\":\"ok\"" "sandbox_pause is audited"
tap_like "$(cat "$tmp/audit")" "\"tool\":\"sandbox_resume\",\"sandbox\":\"$id\",\"outcome\":\"ok\"" "so is sandbox_resume"
tap_like "$(cat "$tmp/audit")" "\"tool\":\"sandbox_exec\",\"sandbox\":\"$id\",\"outcome\":\"error\"" "and a call refused while paused, as an error"

# ---- sandbox_snapshot and sandbox_reset ----
# snapshot_facts FILE MODE: what the snapshots scenario printed.
snapshot_facts() {
  local out=$1 mode=$2 image
  image=$(fact "$out" snapshot image | tr -d '"')
  tap_is "$(fact "$out" snapshot isError)" 'false' "$mode: sandbox_snapshot makes a snapshot"
  tap_like "$image" '^mcp-[0-9a-f]{8}-1$' "$mode: named mcp-TAG-1"
  tap_like "$(fact "$out" snapshot digest)" '^"sha256:[0-9a-f]{64}"$' "$mode: with its digest"
  tap_is "$(fact "$out" snapshot snapshots_left)" '1' "$mode: and how many more it may keep"
  tap_like "$(fact "$out" reset processes_before)" '[0-9]' "$mode: a process runs before the reset"
  tap_is "$(fact "$out" reset isError)" 'false' "$mode: sandbox_reset resets it"
  tap_is "$(fact "$out" reset processes_after)" '""' "$mode: no process of before is left"
  tap_is "$(fact "$out" reset file_gone)" 'true' "$mode: nor a file of its layer"
  tap_is "$(fact "$out" reset tmp_gone)" 'true' "$mode: nor of /tmp"
  tap_is "$(fact "$out" "reset to snapshot" isError)" 'false' "$mode: a reset to the snapshot"
  tap_is "$(fact "$out" "reset to snapshot" content)" '"one"' "$mode: brings the snapshot's file back"
  tap_is "$(fact "$out" "reset to snapshot" image)" "\"$image\"" "$mode: and says it runs the snapshot"
  tap_is "$(fact "$out" "reset to another image" isError)" 'true' "$mode: a reset to an image of the store is refused"
  tap_like "$(fact "$out" "reset to another image" text)" "not one of this session's" "$mode: saying why"
  tap_is "$(fact "$out" "reset to no snapshot" isError)" 'true' "$mode: so is a reset to a snapshot that is not there"
  tap_like "$(fact "$out" "list after" sandboxes)" "\"image\": \"$image\"" "$mode: sandbox_list names the image it runs"
  tap_is "$(fact "$out" "snapshot paused" isError)" 'false' "$mode: a paused sandbox is snapshotted"
  tap_is "$(fact "$out" "snapshot paused" snapshots_left)" '0' "$mode: up to --max-snapshots"
  tap_is "$(fact "$out" "snapshot past the bound" isError)" 'true' "$mode: one more is refused"
  tap_like "$(fact "$out" "snapshot past the bound" text)" 'max-snapshots' "$mode: naming --max-snapshots"
  tap_is "$(fact "$out" "reset paused" isError)" 'false' "$mode: a paused sandbox is reset"
  tap_is "$(fact "$out" "reset paused" runs)" 'true' "$mode: and runs again"
}

client snapshots stdio "$H" --image "$img" --max-snapshots 2 --audit-log "$tmp/audit2" >"$tmp/snap" 2>"$tmp/snap.err"
tap_check $? "the TypeScript client runs the snapshot and reset scenario over stdio" || tap_diag "$(cat "$tmp/snap" "$tmp/snap.err")"
snapshot_facts "$tmp/snap" stdio
tap_is "$(fact "$tmp/snap" closed step)" '"closed"' "stdio: the client closes"
tap_ok "stdio: the end of the session removed its sandbox" no_sandboxes
tap_ok "stdio: and its snapshots" no_snapshots
tap_like "$(cat "$tmp/audit2")" '"tool":"sandbox_snapshot","sandbox":"[0-9a-f]+","outcome":"ok"' "sandbox_snapshot is audited"
tap_like "$(cat "$tmp/audit2")" '"tool":"sandbox_reset","sandbox":"[0-9a-f]+","outcome":"ok"' "so is sandbox_reset"

export HUTCH_MCP_TOKEN=test-token-$RANDOM-$RANDOM-$RANDOM
mcp_listen "$tmp/http.err" --image "$img" --max-snapshots 2 --audit-log /dev/null
client snapshots http "$url" "$HUTCH_MCP_TOKEN" >"$tmp/snaph" 2>"$tmp/snaph.err"
tap_check $? "the TypeScript client runs the snapshot and reset scenario over HTTP" || tap_diag "$(cat "$tmp/snaph" "$tmp/snaph.err" "$tmp/http.err")"
snapshot_facts "$tmp/snaph" http
tap_ok "http: ending the session removed its sandbox" no_sandboxes
tap_ok "http: and its snapshots" no_snapshots
# A session left open, then the server killed: the reaper removes its
# sandbox and its snapshots.
HUTCH_TEST_LEAVE=1 client snapshots http "$url" "$HUTCH_MCP_TOKEN" >"$tmp/snapk" 2>"$tmp/snapk.err"
tap_is "$(fact "$tmp/snapk" left step)" '"left"' "a client leaves a session open with its snapshots" || tap_diag "$(cat "$tmp/snapk" "$tmp/snapk.err")"
tap_is "$(snapshots_kept | wc -l)" '2' "which the store holds meanwhile"
kill -9 "$srv"
wait "$srv" 2>/dev/null
srv=
tap_ok "a SIGKILLed server's sandbox is removed by the reaper" no_sandboxes
tap_ok "and so are its session's snapshots" no_snapshots

tap_fails "--max-snapshots past 64 is refused" "$H" mcp --max-snapshots 65
tap_fails "--max-snapshots 0 is refused" "$H" mcp --max-snapshots 0
tap_done
