#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch mcp driven by the MCP Inspector's CLI (@modelcontextprotocol/inspector,
# pinned in tests/mcp/package-lock.json; `npm ci` there installs it), a
# second official client: one method per run, over stdio and Streamable
# HTTP.  Its tools/list --strict reports tool schemas that would not port
# to model providers; its tools/call checks each structuredContent against
# the tool's outputSchema.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/mcp.sh"

mcp_setup
command -v node >/dev/null || tap_skip_all "node is not installed (apt-get install nodejs npm)"
inspector=$HUTCH_SRCDIR/tests/mcp/node_modules/.bin/mcp-inspector
[ -x "$inspector" ] || tap_skip_all "the MCP Inspector is not installed: run npm ci in tests/mcp"
# The Inspector keeps a catalog of servers: in this test's directory.
export MCP_CATALOG_PATH=$tmp/catalog.json HOME=$tmp

# inspect ARGS...: the Inspector's CLI; its output in $tap_stdout, its exit
# status returned.
inspect() { (cd "$tmp" && timeout 120 "$inspector" --cli "$@"); }
# The Inspector starts the server with an environment of its own: the
# test's store, state directory and policy are passed along.
passed=()
while IFS= read -r v; do passed+=(-e "$v"); done < <(env | grep '^HUTCH_')
stdio() { inspect "${passed[@]}" "$H" mcp --image "$img" --audit-log /dev/null "$@"; }
# jq-like: the Python expression $2 of the JSON in $1 (as `o`).
get() { python3 -c 'import json, sys
text = sys.argv[1]
o = json.loads(text[text.index("{"):text.rindex("}") + 1])
print(json.dumps(eval(sys.argv[2])))' "$1" "$2"; }

# ---- stdio ----
tap_ok "tools/list --strict over stdio" stdio --method tools/list --strict
tools=$tap_stdout
tap_unlike "$tap_stderr" 'Warning|Error|error' "reports no tool schema that would not port"
tap_is "$(get "$tools" 'len(o["tools"])')" '18' "eighteen tools (llm-sandbox's three among them)"
tap_is "$(get "$tools" 'sum(isinstance(t.get("title"), str) for t in o["tools"])')" '18' "each with a title"
tap_is "$(get "$tools" 'sum(all(isinstance(t.get("annotations", {}).get(h), bool) for h in ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")) for t in o["tools"])')" \
  '18' "its four annotations"
tap_is "$(get "$tools" 'sum(t.get("outputSchema", {}).get("type") == "object" for t in o["tools"])')" '18' \
  "and an outputSchema"
tap_is "$(get "$tools" '[t["name"] for t in o["tools"] if t["annotations"]["readOnlyHint"]]')" \
  '["sandbox_read_file", "sandbox_list_dir", "sandbox_list", "get_supported_languages", "get_language_details"]' "the read-only tools are those that only read"

tap_ok "tools/call sandbox_list" stdio --method tools/call --tool-name sandbox_list
tap_is "$(get "$tap_stdout" 'o["structuredContent"]')" '{"sandboxes": []}' \
  "returns structuredContent, which the Inspector checked against the outputSchema"
tap_ok "tools/call sandbox_create" stdio --method tools/call --tool-name sandbox_create
tap_like "$(get "$tap_stdout" 'o["structuredContent"]["id"]')" '^"[0-9a-f]+"$' "returns the new sandbox's id"
tap_ok "which went with the server" no_sandboxes

tap_fails "tools/call sandbox_exec without a command" stdio --method tools/call --tool-name sandbox_exec \
  --tool-arg id=nosuch
tap_is "$(get "$tap_stdout" 'o["isError"]')" 'true' "is a tool error (isError), not a JSON-RPC error"
tap_like "$(get "$tap_stdout" 'o["content"][0]["text"]')" 'missing argument command' "naming the argument"
tap_like "$tap_stdout$tap_stderr" 'tool_is_error' "as the Inspector tells it"

tap_ok "prompts/list" stdio --method prompts/list
tap_is "$(get "$tap_stdout" 'sorted(p["name"] for p in o["prompts"])')" '["sandbox_survey", "sandbox_task"]' \
  "names the prompts"
tap_ok "prompts/get" stdio --method prompts/get --prompt-name sandbox_task --prompt-args "task=count to ten"
tap_like "$(get "$tap_stdout" 'o["messages"][0]["content"]["text"]')" 'Task:\\ncount to ten' "fills in the task"
tap_ok "resources/templates/list" stdio --method resources/templates/list
tap_is "$(get "$tap_stdout" 'o["resourceTemplates"][0]["uriTemplate"]')" '"sandbox://{id}{+path}"' "a sandbox's file"
tap_ok "resources/list" stdio --method resources/list
tap_is "$(get "$tap_stdout" '[r["uri"] for r in o["resources"]]')" '["sandbox://languages"]' "names only llm-sandbox's languages resource without a sandbox"

# ---- Streamable HTTP ----
export HUTCH_MCP_TOKEN=test-token-$RANDOM-$RANDOM-$RANDOM
mcp_listen "$tmp/http.err" --image "$img" --audit-log /dev/null
tap_like "$url" '^http://127\.0\.0\.1:[0-9]+/mcp$' "the HTTP server listens"
http() { inspect "$url" --transport http --header "Authorization: Bearer $HUTCH_MCP_TOKEN" "$@"; }
tap_ok "tools/list --strict over HTTP" http --method tools/list --strict
tap_is "$(get "$tap_stdout" 'len(o["tools"])')" '18' "eighteen tools (llm-sandbox's three among them)"
tap_ok "tools/call sandbox_create over HTTP" http --method tools/call --tool-name sandbox_create
tap_like "$(get "$tap_stdout" 'o["structuredContent"]["id"]')" '^"[0-9a-f]+"$' "returns the new sandbox's id"
tap_fails "resources/read of a sandbox of another session" http --method resources/read --uri sandbox://0123/etc/passwd
tap_like "$tap_stdout$tap_stderr" '32002|not found' "is not found"
tap_fails "without the token" inspect "$url" --transport http --method tools/list
tap_like "$tap_stdout$tap_stderr" '401|Unauthorized|auth_required' "the Inspector is refused (401: it asks for authorization)"

mcp_stop
tap_done
