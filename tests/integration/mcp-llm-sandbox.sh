#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# llm-sandbox's MCP tools and resource on hutch mcp (src/mcp/mcp_llmsb*.c),
# called by the official TypeScript client (tests/mcp, scenario llmsb) as a
# client set up for llm-sandbox's server calls them, over stdio and HTTP,
# and compared with what llm-sandbox's own server offers
# (tests/golden/llm-sandbox-mcp.json, recorded from its code by
# tests/golden/llm-sandbox-mcp-record.py): the same tool names, parameters,
# types, defaults and required ones; get_supported_languages' text byte for
# byte; get_language_details' and the resource's keys; execute_code's text
# as JSON of exit_code, stderr, stdout, an image first for a figure.  And
# what hutch adds: a fresh sandbox per call, gone after it, without
# network; failures as tool errors; "not available here" for a language
# without an image.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/mcp.sh"

mcp_setup client
golden=$HUTCH_SRCDIR/tests/golden/llm-sandbox-mcp.json
# Python with matplotlib as the server's default image: execute_code's
# default language runs; without it only the busybox image, where no
# language of llm-sandbox's runs.
py=$(hutch_test_rootfs matplotlib 2>/dev/null) || py=

client() { (cd "$clientdir" && timeout 600 node client.mjs "$@"); }
export HUTCH_MCP_TOKEN=test-token-$RANDOM-$RANDOM-$RANDOM

# compare FILE: the tools, languages, details and resource against the
# golden record; prints one line per difference, nothing when they agree.
compare() {
  python3 - "$golden" "$1" <<'PY'
import json, sys
golden = json.load(open(sys.argv[1]))
facts = {}
for line in open(sys.argv[2]):
    if line.startswith("{"):
        o = json.loads(line)
        facts[o["step"]] = o
def kind(p):  # a property's type, an Optional's (anyOf with null) as its other type
    if "anyOf" in p:
        return [a for a in p["anyOf"] if a.get("type") != "null"][0]["type"], True
    return p["type"], False
ours = {t["name"]: t for t in facts["tools"]["tools"]}
for g in golden["tools"]:
    t = ours.get(g["name"])
    if t is None:
        print("missing tool", g["name"]); continue
    gs, s = g["inputSchema"], t["inputSchema"]
    if set(gs["properties"]) != set(s["properties"]):
        print(g["name"], "parameters", sorted(gs["properties"]), "!=", sorted(s["properties"]))
    if sorted(gs.get("required", [])) != sorted(s.get("required", [])):
        print(g["name"], "required", gs.get("required"), "!=", s.get("required"))
    for k, gp in gs["properties"].items():
        p = s["properties"].get(k, {})
        gt, nullable = kind(gp)
        if p.get("type") != gt:
            print(g["name"], k, "type", gt, "!=", p.get("type"))
        if gp.get("items") or (nullable and gp["anyOf"][0].get("items")):
            gi = gp.get("items") or gp["anyOf"][0]["items"]
            if p.get("items") != gi:
                print(g["name"], k, "items", gi, "!=", p.get("items"))
        if "default" in gp and p.get("default", "absent") != gp["default"]:
            print(g["name"], k, "default", gp["default"], "!=", p.get("default", "absent"))
        if gp.get("title") != p.get("title"):
            print(g["name"], k, "title", gp.get("title"), "!=", p.get("title"))
sup = facts["supported"]["content"]
if [c["text"] for c in sup] != [golden["get_supported_languages"]]:
    print("get_supported_languages text", sup)
gkeys = None
for lang, gtext in golden["get_language_details"].items():
    d = facts["details"]["details"].get(lang)
    g = json.loads(gtext)
    got = json.loads(d["content"][0]["text"])
    if "error" in g:
        if got != g or not d["isError"]:
            print("details", lang, got, "!=", g)
        continue
    gkeys = set(g)
    if not gkeys <= set(got):
        print("details", lang, "lacks", sorted(gkeys - set(got)))
    for k in gkeys:
        if type(got.get(k)) is not type(g[k]):
            print("details", lang, k, "type", type(got.get(k)).__name__, "!=", type(g[k]).__name__)
    if got.get("examples") and set(got["examples"][0]) != set(g["examples"][0]):
        print("details", lang, "example keys", sorted(got["examples"][0]))
res = facts["resource"]
guri, gtext = next(iter(golden["resources"].items()))
if [r["uri"] for r in res["listed"]] != [guri]:
    print("resources/list", res["listed"])
body = json.loads(res["contents"][0]["text"])
gbody = json.loads(gtext)
if list(body) != list(gbody):
    print("resource languages", list(body), "!=", list(gbody))
for lang in gbody:
    if not set(gbody[lang]) <= set(body.get(lang, {})):
        print("resource", lang, "lacks", sorted(set(gbody[lang]) - set(body.get(lang, {}))))
PY
}

# result FILE STEP EXPR: a Python expression over r, the step's line
# (r["content"], r["isError"], r["structured"]; j: its text's JSON).
result() {
  python3 -c 'import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        r = json.loads(line)
        if r.get("step") == sys.argv[2]:
            t = [c for c in r["content"] if c["type"] == "text"]
            j = json.loads(t[-1]["text"]) if t else None
            print(eval(sys.argv[3]))' "$@"
}

# llmsb_facts FILE MODE
llmsb_facts() {
  local out=$1 mode=$2 diffs
  diffs=$(compare "$out" 2>&1)
  tap_is "$diffs" "" "$mode: tools, parameters, defaults, languages, details and resource as llm-sandbox's server's"
  tap_is "$(fact "$out" tools tools | python3 -c 'import json, sys
print(sorted((t["name"], bool(t.get("title")), bool(t.get("outputSchema")), sorted(t.get("annotations", {}))) for t in json.load(sys.stdin)))')" \
    "[('execute_code', True, True, ['destructiveHint', 'idempotentHint', 'openWorldHint', 'readOnlyHint', 'title']), ('get_language_details', True, True, ['destructiveHint', 'idempotentHint', 'openWorldHint', 'readOnlyHint', 'title']), ('get_supported_languages', True, True, ['destructiveHint', 'idempotentHint', 'openWorldHint', 'readOnlyHint', 'title'])]" \
    "$mode: each with a title, an outputSchema and the annotations, as hutch's own tools"
  tap_is "$(fact "$out" details details | python3 -c 'import json, sys; d = json.load(sys.stdin)["java"]["structured"]
print((d["hutch_available"], "not available here" in d["hutch_note"]))')" \
    "(False, True)" "$mode: a language without an image: not available here, says its details"
  tap_is "$(result "$out" java 'r["isError"], j["exit_code"], "java is not available here" in j["stderr"], "llm-sandbox-java.recipe" in j["stderr"]')" \
    "(True, 1, True, True)" "$mode: execute_code in it: a tool error saying so, and how to build its image"
  tap_is "$(result "$out" cobol 'r["isError"], sorted(j), "cobol is not supported" in j["stderr"]')" \
    "(True, ['exit_code', 'stderr', 'stdout'], True)" "$mode: a language llm-sandbox lacks: a tool error, its text the same JSON shape"
  tap_is "$(result "$out" "option library" 'r["isError"], "not a package name" in j["stderr"]')" \
    "(True, True)" "$mode: a library that would pass for an option is refused"
  tap_is "$(fact "$out" left sandboxes)" "[]" "$mode: no execute_code leaves a sandbox in the session"
  tap_is "$(fact "$out" "own tools" isError)" "false" "$mode: hutch's own tools stay (sandbox_create)"
  if [ -z "$py" ]; then
    tap_skip "$mode: execute_code runs Python" "the matplotlib test image is not built (tests/setup-host.sh)"
    return
  fi
  tap_is "$(result "$out" hello 'r["isError"], [c["type"] for c in r["content"]], j')" \
    "(False, ['text'], {'exit_code': 0, 'stderr': '', 'stdout': 'hello 42\\n'})" "$mode: execute_code runs Python: its text is llm-sandbox's JSON"
  tap_is "$(result "$out" hello 'r["content"][0]["text"].split(chr(10))[1]')" '  "exit_code": 0,' "$mode: indented as llm-sandbox prints it"
  tap_is "$(result "$out" "hello all args" 'r["isError"], j["stdout"]')" "(False, 'hi\\n')" "$mode: every parameter as llm-sandbox's clients send them (libraries null)"
  tap_is "$(result "$out" plot '[(c["type"], c["mimeType"]) for c in r["content"]], j["stdout"], r["structured"]["plots"]')" \
    "([('image', 'image/png'), ('text', None)], 'plotted\\n', 2)" "$mode: a figure comes first as a PNG image (the last of 2)"
  tap_is "$(result "$out" raise 'r["isError"], j["exit_code"], j["stdout"], "ZeroDivisionError" in j["stderr"]')" \
    "(True, 1, 'before\\n', True)" "$mode: an exception: exit code 1, the traceback on stderr, a tool error"
  tap_is "$(result "$out" write 'j["stdout"]') $(result "$out" fresh 'j["stdout"]')" "wrote False" "$mode: each call has a fresh sandbox: a file of one is not in the next"
  tap_like "$(result "$out" net 'j["stdout"]')" "^no net" "$mode: without network"
  tap_is "$(result "$out" timeout 'r["isError"], j["exit_code"]')" "(True, 124)" "$mode: past its timeout the code is killed"
  tap_is "$(result "$out" libraries 'r["isError"], "needs the network" in j["stderr"], "--net proxy" in j["stderr"]')" \
    "(True, True, True)" "$mode: libraries on a server without --net proxy: refused, saying how to allow them"
  tap_is "$(result "$out" supported 'r["structured"]["available"]')" "['python']" "$mode: get_supported_languages marks what runs here"
}

image=${py:-$img}
client llmsb stdio "$H" --image "$image" --audit-log "$tmp/audit" >"$tmp/out" 2>"$tmp/out.err"
tap_check $? "the TypeScript client calls llm-sandbox's tools over stdio" || tap_diag "$(cat "$tmp/out" "$tmp/out.err")"
llmsb_facts "$tmp/out" stdio
tap_ok "stdio: nothing left once the session ends" no_sandboxes
tap_like "$(cat "$tmp/audit")" '"tool":"execute_code","sandbox":"[0-9a-f]+","outcome":"ok"' "execute_code is audited, with its sandbox"

# With --net proxy, libraries are installed: the call goes to the package
# manager through the proxy (here it ends there: no registry is reachable,
# or the image has no pip), and says how that went.
if [ -n "$py" ]; then
  cat >"$tmp/libs.py" <<'PY'
import json, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def rpc(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())
rpc(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})
r = rpc(2, "tools/call", {"name": "execute_code", "arguments": {"code": "print(1)", "libraries": ["hutch-test-no-such-package"], "timeout": 20}})
print(json.dumps(r["result"]["structuredContent"]))
p.stdin.close(); p.wait()
PY
  # A state directory of its own: a proxied sandbox leaves the subnets'
  # register (net-subnets) in it, which no_sandboxes would count.
  mkdir "$tmp/libstate"
  libs=$(HUTCH_STATE_DIR=$tmp/libstate timeout 120 python3 "$tmp/libs.py" "$H" mcp --image "$py" --net proxy \
    --audit-log /dev/null 2>"$tmp/libs.err")
  tap_like "$libs" '"exit_code": [1-9].*"stderr": "installing libraries failed \(exit code' \
    "--net proxy: libraries go to the package manager, and its failure is reported as such" || tap_diag "$(cat "$tmp/libs.err")"
  tap_is "$(ls "$tmp/libstate" | grep -v '^net-subnets$')" "" "--net proxy: and its sandbox is gone after the call"
fi

mcp_listen "$tmp/http.err" --image "$image" --audit-log /dev/null
client llmsb http "$url" "$HUTCH_MCP_TOKEN" >"$tmp/outh" 2>"$tmp/outh.err"
tap_check $? "the TypeScript client calls llm-sandbox's tools over HTTP" || tap_diag "$(cat "$tmp/outh" "$tmp/outh.err" "$tmp/http.err")"
llmsb_facts "$tmp/outh" http
mcp_stop
tap_ok "http: nothing left" no_sandboxes
tap_done
