#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch mcp's sandbox_pause and sandbox_resume (src/mcp/mcp_lifecycle.c),
# driven by the official TypeScript client (tests/mcp), which checks every
# result against the tool's outputSchema: a paused sandbox runs nothing and
# refuses what would run in it or touch its files, resumes where it
# stopped, and is destroyed as any other, by the tool or by the session's
# end; each call is audited.
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
# Read around the pause, the counter moves only in the calls' own time:
# less than half of what it does in a running second (at least 10).
tap_ok "its counter stood still while paused (it moved $(fact "$tmp/out" resume advanced_while_paused) in 1 s paused, $(fact "$tmp/out" resume advanced_while_running) in 1 s running)" \
  python3 -c "import sys; p, r = $(fact "$tmp/out" resume advanced_while_paused), $(fact "$tmp/out" resume advanced_while_running); sys.exit(not (r >= 10 and 0 <= p < r / 2))"
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
tap_done
