#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch mcp: the Model Context Protocol over stdio and Streamable HTTP,
# driven by the official TypeScript client (tests/mcp, pinned in its
# package-lock.json; `npm ci` there installs it) and by raw JSON-RPC for bad
# input.  Sandboxes are sessions: they persist across calls, go with their
# session, and none outlives the server, not even a SIGKILLed one.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/mcp.sh"

mcp_setup client

client() { (cd "$clientdir" && timeout 120 node client.mjs "$@"); }
# No payload running (within 20 s, for a slow build).
payload_gone() { # MARKER
  for _ in $(seq 200); do
    pgrep -x -f "sleep $1" >/dev/null || return 0
    sleep 0.1
  done
  return 1
}

# ---- stdio, with the TypeScript client ----
client session stdio "$H" --image "$img" --audit-log "$tmp/audit" >"$tmp/stdio" 2>"$tmp/stdio.err"
tap_check $? "the TypeScript client runs a session over stdio"
tap_is "$(fact "$tmp/stdio" initialize server)" '"hutch"' "initialize names the server"
tap_is "$(fact "$tmp/stdio" initialize tools)" 'true' "and its tools capability"
tap_is "$(fact "$tmp/stdio" tools/list tools)" \
  '["execute_code", "get_language_details", "get_supported_languages", "sandbox_create", "sandbox_destroy", "sandbox_exec", "sandbox_fork", "sandbox_list", "sandbox_list_dir", "sandbox_pause", "sandbox_python", "sandbox_read_file", "sandbox_reset", "sandbox_resume", "sandbox_run_code", "sandbox_snapshot", "sandbox_snapshot_delete", "sandbox_write_file"]' \
  "tools/list lists the tools"
tap_is "$(fact "$tmp/stdio" exec stdout)" '"kept\n"' "a session across calls: the second call sees the first's file"
tap_is "$(fact "$tmp/stdio" exec exit_code)" '3' "with the command's exit code"
tap_is "$(fact "$tmp/stdio" exec isError)" 'true' "a command that does not exit 0 is a tool error, its output returned"
tap_is "$(fact "$tmp/stdio" "tool metadata" titled)" '18' "every tool has a title"
tap_is "$(fact "$tmp/stdio" "tool metadata" annotated)" '18' "and the four annotations"
tap_is "$(fact "$tmp/stdio" "tool metadata" output)" '18' "and an outputSchema (each result checked against it by the client)"
tap_is "$(fact "$tmp/stdio" "tool metadata" described)" '18' "and a description on every input parameter"
tap_like "$(fact "$tmp/stdio" "tool metadata" languages)" '^\["python", "bash", "sh", ' "run_code's languages are an enum"
tap_is "$(fact "$tmp/stdio" read content)" '"héllo\n"' "write_file then read_file round-trips text"
tap_is "$(fact "$tmp/stdio" binary content)" '"AP8BAg=="' "and bytes that are not UTF-8, as base64"
tap_is "$(fact "$tmp/stdio" list_dir paths)" '["/work", "/work/bin", "/work/dir", "/work/dir/hello.txt"]' "list_dir"
tap_is "$(fact "$tmp/stdio" run_code stdout)" '"42\n"' "run_code in sh"
tap_is "$(fact "$tmp/stdio" timeout timed_out)" 'true' "a command past its timeout is killed"
tap_like "$(fact "$tmp/stdio" cancel outcome)" "rejected" "a call the client cancels ends"
tap_is "$(fact "$tmp/stdio" "after cancel" stdout)" '"next\n"' "and the next call is answered"
tap_ok "right away (the cancelled command was killed)" python3 -c "import sys; sys.exit(not $(fact "$tmp/stdio" "after cancel" seconds) < 5)"
tap_is "$(fact "$tmp/stdio" "unknown sandbox" isError)" 'true' "an unknown sandbox id is a tool error"
tap_is "$(fact "$tmp/stdio" "read outside" text)" '"sandbox\n"' "a path with .. stays inside the sandbox"
tap_is "$(fact "$tmp/stdio" "unknown tool" code)" '-32602' "an unknown tool is JSON-RPC error -32602 (a protocol error)"
tap_is "$(fact "$tmp/stdio" "missing command" isError)" 'true' "a missing argument is a tool error (isError), not -32602"
tap_like "$(fact "$tmp/stdio" "missing command" text)" 'missing argument command' "naming the argument"
tap_is "$(fact "$tmp/stdio" "unknown language" isError)" 'true' "so is an unknown language"
tap_like "$(fact "$tmp/stdio" "unknown language" text)" 'wants one of: python, bash' "naming the languages"
tap_is "$(fact "$tmp/stdio" "list after destroy" ids)" '[]' "destroy removes the sandbox from the session"
tap_is "$(fact "$tmp/stdio" closed step)" '"closed"' "the client closes"
tap_ok "the end of the session removed the sandbox it left" no_sandboxes
tap_like "$(cat "$tmp/audit")" '"tool":"sandbox_exec","sandbox":"[0-9a-f]+","outcome":"ok"' "every call is audited"

# ---- a sandbox that floods its output: the call's timeout still holds ----
cat >"$tmp/flood.py" <<'EOF'
import json, subprocess, sys, time
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def rpc(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())
rpc(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "f", "version": "0"}})
sid = rpc(2, "tools/call", {"name": "sandbox_create", "arguments": {}})["result"]["structuredContent"]["id"]
t0 = time.monotonic()
r = rpc(3, "tools/call", {"name": "sandbox_exec", "arguments": {"id": sid, "timeout": 2,
        "command": "for i in 1 2 3 4 5 6; do yes floodfloodfloodflood & done; wait"}})["result"]
print(json.dumps({"seconds": round(time.monotonic() - t0, 1), "timed_out": r["structuredContent"]["timed_out"],
                  "truncated": r["structuredContent"]["truncated"]}))
p.stdin.close(); p.wait()
EOF
tap_ok "a command flooding its output" timeout 120 python3 "$tmp/flood.py" "$H" mcp --image "$img" --audit-log /dev/null
flood=$tap_stdout
tap_like "$flood" '"timed_out": true' "is killed at its timeout"
tap_like "$flood" '"truncated": true' "its output cut at --max-output"
tap_ok "on time" python3 -c "import json, sys; sys.exit(not json.loads(sys.argv[1])['seconds'] < 10)" "$flood"

# ---- raw JSON-RPC over stdio: bad input, negotiation ----
cat >"$tmp/raw.py" <<'EOF'
import json, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def send(line):
    p.stdin.write(line + "\n"); p.stdin.flush()
    return json.loads(p.stdout.readline())
def rpc(i, method, params=None):
    m = {"jsonrpc": "2.0", "id": i, "method": method}
    if params is not None: m["params"] = params
    return send(json.dumps(m))
out = {}
out["early"] = rpc(1, "tools/list").get("error", {}).get("code")
out["parse"] = send("{not json").get("error", {}).get("code")
out["batch"] = send('[{"jsonrpc":"2.0","id":2,"method":"ping"}]').get("error", {}).get("code")
out["nojsonrpc"] = send('{"id":3,"method":"ping"}').get("error", {}).get("code")
out["future"] = rpc(4, "initialize", {"protocolVersion": "1999-01-01", "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"}})["result"]["protocolVersion"]
out["same"] = rpc(5, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                  "clientInfo": {"name": "raw", "version": "0"}})["result"]["protocolVersion"]
out["method"] = rpc(6, "no/such").get("error", {}).get("code")
out["params"] = send('{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[1]}').get("error", {}).get("code")
r = rpc(8, "tools/call", {"name": "sandbox_create", "arguments": {"memory": "512M"}})["result"]
out["memory_over"] = r["isError"]
r = rpc(9, "tools/call", {"name": "sandbox_create", "arguments": {"memory": "64M"}})["result"]
out["memory_ok"] = "above what this server allows" not in r["content"][0]["text"]
r = rpc(10, "tools/call", {"name": "sandbox_create", "arguments": {"net": "proxy"}})["result"]
out["net"] = r["isError"]
r = rpc(11, "tools/call", {"name": "sandbox_create", "arguments": {"image": "no-such-image"}})["result"]
out["image"] = r["isError"]
sid = rpc(12, "tools/call", {"name": "sandbox_create", "arguments": {}})["result"]["structuredContent"]["id"]
r = rpc(13, "tools/call", {"name": "sandbox_run_code", "arguments": {"id": sid, "language": "cobol", "code": "x"}})
out["cobol"] = r["result"]["isError"]
r = rpc(14, "tools/call", {"name": "sandbox_run_code", "arguments": {"id": sid, "language": "python", "code": "1"}})
out["nopython"] = r["result"]["structuredContent"]["stderr"]
out["nopython_error"] = r["result"]["isError"]
print(json.dumps(out, sort_keys=True))
p.stdin.close(); p.wait()
EOF
tap_ok "raw JSON-RPC over stdio" timeout 60 python3 "$tmp/raw.py" "$H" mcp --image "$img" --memory 256M --audit-log /dev/null
raw=$tap_stdout
tap_like "$raw" '"early": -32600' "a call before initialize is an invalid request"
tap_like "$raw" '"parse": -32700' "text that is not JSON is a parse error"
tap_like "$raw" '"batch": -32600' "a batch is refused (not in the current revision)"
tap_like "$raw" '"nojsonrpc": -32600' "a message without jsonrpc 2.0 is an invalid request"
tap_like "$raw" '"future": "2025-11-25"' "an unknown protocol revision gets the newest this server speaks"
tap_like "$raw" '"same": "2025-06-18"' "a revision it speaks is kept"
tap_like "$raw" '"method": -32601' "an unknown method is -32601"
tap_like "$raw" '"params": -32600' "params that are not an object are refused"
tap_like "$raw" '"memory_over": true' "a limit above the server's maximum is refused"
tap_like "$raw" '"memory_ok": true' "one within it is not refused by the server (the runtime applies it, or refuses it without a cgroup)"
tap_like "$raw" '"net": true' "a network the server does not give is refused"
tap_like "$raw" '"image": true' "an unknown image is a tool error"
tap_like "$raw" '"cobol": true' "run_code in an unknown language is a tool error"
tap_like "$raw" '"nopython": "hutch: python3 \(for python\) is not in this sandbox image' \
  "a language whose interpreter the image lacks is named as missing"
tap_like "$raw" '"nopython_error": true' "as a tool error"
tap_ok "and the sandboxes went with the client" no_sandboxes

# mcprpc.py, for the scripts below: a stdio server started with
# sys.argv[1:], initialized, and a JSON-RPC call to it.
cat >"$tmp/mcprpc.py" <<'EOF'
import json, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def rpc(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())
rpc(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}})
EOF
export PYTHONPATH=$tmp${PYTHONPATH:+:$PYTHONPATH}

# ---- the file tools follow no symlink, as hutch cp does ----
# The sandbox (the attacker) plants links: to a file only its root may read
# (/etc/shadow), and to its root, to reach through.  A read, write or
# listing by such a path is refused, and nothing behind the link changes.
cat >"$tmp/links.py" <<'EOF'
from mcprpc import json, p, rpc
sid = rpc(2, "tools/call", {"name": "sandbox_create", "arguments": {}})["result"]["structuredContent"]["id"]
n = [10]
def tool(name, **a):
    n[0] += 1
    r = rpc(n[0], "tools/call", {"name": name, "arguments": dict(id=sid, **a)})["result"]
    return {"isError": r["isError"], "text": r["content"][0]["text"]}
tool("sandbox_exec", command="echo 'root:$6$secret' > /etc/shadow && chmod 600 /etc/shadow && "
     "ln -s /etc/shadow /tmp/shadow && ln -s / /tmp/root && ln -s /etc/nothing-yet /tmp/dangling && "
     "mkdir -p /work && echo plain > /work/plain")
out = {
    "plain": tool("sandbox_read_file", path="/work/plain"),
    "read link": tool("sandbox_read_file", path="/tmp/shadow"),
    "read through": tool("sandbox_read_file", path="/tmp/root/etc/shadow"),
    "write link": tool("sandbox_write_file", path="/tmp/shadow", content="root::0:0\n"),
    "write through": tool("sandbox_write_file", path="/tmp/root/etc/planted", content="x"),
    "write dangling": tool("sandbox_write_file", path="/tmp/dangling", content="x"),
    "list through": tool("sandbox_list_dir", path="/tmp/root/etc"),
}
out["after"] = tool("sandbox_exec", command="cat /etc/shadow; ls /etc/planted /etc/nothing-yet 2>/dev/null | wc -l")
print(json.dumps(out, sort_keys=True))
p.stdin.close(); p.wait()
EOF
tap_ok "the file tools and a sandbox's symlinks" timeout 60 python3 "$tmp/links.py" "$H" mcp --image "$img" --audit-log /dev/null
links=$tap_stdout
lget() { python3 -c 'import json, sys; print(json.dumps(json.loads(sys.argv[1])[sys.argv[2]][sys.argv[3]]))' "$links" "$@"; }
tap_is "$(lget plain text)" '"plain\n"' "a file reached without a symlink is read"
tap_is "$(lget "read link" isError)" 'true' "read_file of a symlink to /etc/shadow is refused (never followed)"
tap_like "$(lget "read link" text)" 'symlink' "saying why"
tap_unlike "$(lget "read link" text)" 'secret' "and nothing of the file behind it comes back"
tap_is "$(lget "read through" isError)" 'true' "read_file through a symlink to the root is refused"
tap_unlike "$(lget "read through" text)" 'secret' "nothing of the file comes back"
tap_is "$(lget "write link" isError)" 'true' "write_file to a symlink is refused"
tap_is "$(lget "write through" isError)" 'true' "write_file through a symlink to the root is refused"
tap_is "$(lget "write dangling" isError)" 'true' "write_file to a dangling symlink is refused (it would create its target)"
tap_is "$(lget "list through" isError)" 'true' "list_dir through a symlink is refused"
tap_is "$(lget after text)" '"exit code: 0\n--- stdout ---\nroot:$6$secret\n0\n"' \
  "and the files behind the links are unchanged, none created"
tap_ok "and the sandbox went with the client" no_sandboxes

# ---- the persistent Python interpreter ----
cat >"$tmp/py.py" <<'EOF'
import json, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def rpc(i, method, params):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())
rpc(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "p", "version": "0"}})
sid = rpc(2, "tools/call", {"name": "sandbox_create", "arguments": {}})["result"]["structuredContent"]["id"]
def py(i, code, **kw):
    r = rpc(i, "tools/call", {"name": "sandbox_python", "arguments": dict(id=sid, code=code, **kw)})["result"]
    return {"isError": r["isError"], "text": r["content"][0]["text"], **r.get("structuredContent", {})}
out = {}
out["set"] = py(3, "x = 41\ndef f(v): return v * 2\nprint('set')")
out["kept"] = py(4, "f(x + 1)")
out["child"] = py(5, "import subprocess; subprocess.run(['echo', 'from a child'])")
out["raise"] = py(6, "1/0")
out["slow"] = py(7, "import time; time.sleep(30)", timeout=1)
out["after"] = py(8, "x")
r = rpc(9, "tools/call", {"name": "sandbox_run_code", "arguments": {"id": sid, "language": "c",
        "code": "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 6 * 7); return 0; }\n"}})["result"]
out["c"] = {"stdout": r["structuredContent"]["stdout"], "stderr": r["structuredContent"]["stderr"]}
print(json.dumps(out, sort_keys=True))
p.stdin.close(); p.wait()
EOF
if deb=$(hutch_test_rootfs debian 2>/dev/null); then
  tap_ok "sandbox_python in the debian image" timeout 120 python3 "$tmp/py.py" "$H" mcp --image "$deb" --audit-log /dev/null
  pyout=$tap_stdout
  pyget() { python3 -c 'import json, sys; print(json.dumps(json.loads(sys.argv[1])[sys.argv[2]].get(sys.argv[3])))' "$pyout" "$@"; }
  tap_is "$(pyget set stdout)" '"set\n"' "a first call prints"
  tap_is "$(pyget kept result)" '"84"' "the next call sees its variables and functions, and gets the last expression's value"
  tap_is "$(pyget child stdout)" '"from a child\n"' "a subprocess's output is caught too"
  tap_like "$(pyget raise error)" "ZeroDivisionError" "an exception comes back as such"
  tap_is "$(pyget raise isError)" 'true' "as a tool error"
  tap_like "$(pyget slow text)" "timed out" "a call past its timeout kills the interpreter"
  tap_like "$(pyget after error)" "NameError" "whose variables are then gone (a fresh one answers)"
  if [[ $(pyget c stderr) == *"is not in this sandbox image"* ]]; then
    tap_skip "run_code in C" "the debian test image has no C compiler"
  else
    tap_is "$(pyget c stdout)" '"42\n"' "run_code compiles and runs C"
  fi
else
  tap_skip "sandbox_python" "the debian test rootfs is not available"
fi
# The code in the interpreter writes well-formed answers on its pipes,
# ahead of its own and for later calls, and from a thread it leaves: none
# is taken for a call's; the interpreter is killed and a fresh one answers.
if [ -n "$deb" ]; then
  client forge stdio "$H" --image "$deb" --audit-log /dev/null >"$tmp/forge" 2>"$tmp/forge.err"
  tap_check $? "the TypeScript client runs code that forges the interpreter's answers"
  tap_unlike "$(cat "$tmp/forge")" "forged" "no forged answer is taken for a call's"
  tap_like "$(fact "$tmp/forge" ahead text)" "not this call's" "answers written ahead kill the interpreter, saying why"
  tap_is "$(fact "$tmp/forge" "next 3" result)" "\"'next'\"" "and the calls after it get their own answers"
  tap_like "$(fact "$tmp/forge" during text)" "not this call's" "so does an answer a thread writes during a later call"
  tap_is "$(fact "$tmp/forge" after result)" '"9"' "after which a fresh interpreter answers"
  tap_is "$(fact "$tmp/forge" input result)" "\"'eof'\"" "the code's input() reads no request"
  tap_ok "and the sandbox went with the client" no_sandboxes
else
  tap_skip "forged interpreter answers" "the debian test rootfs is not available"
fi
# The code answers for its own call (it can read the call's nonce in the
# driver's frame) with a line of millions of empty lists, or one long
# string, 4 KiB at a time into a pipe shrunk to 4 KiB: the server refuses
# the first before parsing it (parsed, it took 500 MB) and reads both in
# time linear in their length.
cat >"$tmp/pyshape.py" <<'EOF'
import os, time
from mcprpc import json, p, rpc
def peak_mib():
    for line in open("/proc/%d/status" % p.pid):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
sids = [rpc(2 + i, "tools/call", {"name": "sandbox_create", "arguments": {}})["result"]["structuredContent"]["id"]
        for i in range(2)]
ATTACK = """
import fcntl, os, stat, sys
f = sys._getframe()
while 'nonce' not in f.f_locals:
    f = f.f_back
line = f.f_locals['nonce'].encode() + b' ' + DATA + b'\\n'
mine = {os.fstat(0).st_ino, os.fstat(1).st_ino, os.fstat(2).st_ino}
for fd in range(3, 64):
    try:
        st = os.fstat(fd)
        if stat.S_ISFIFO(st.st_mode) and st.st_ino not in mine:
            fcntl.fcntl(fd, 1031, 4096)  # F_SETPIPE_SZ
            for i in range(0, len(line), 4096):
                os.write(fd, line[i : i + 4096])
    except OSError:
        pass
"""
def server_cpu():
    st = open("/proc/%d/stat" % p.pid).read()
    f = st[st.rindex(")") + 2 :].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
def attack(i, sid, data):
    t0, c0 = time.monotonic(), server_cpu()
    r = rpc(i, "tools/call", {"name": "sandbox_python", "arguments": {"id": sid, "timeout": 120,
                                                                      "code": ATTACK.replace("DATA", data)}})["result"]
    return {"isError": r["isError"], "text": r["content"][0]["text"], "seconds": round(time.monotonic() - t0, 1),
            "cpu": round(server_cpu() - c0, 2)}
out = {"lists": attack(4, sids[0], "b'{\"a\": [' + b'[],' * (6 << 20) + b'[]]}'"),
       "string": attack(5, sids[1], "b'\"' + b'x' * (20 << 20) + b'\"'")}
out["peak"] = peak_mib()
out["after"] = rpc(6, "tools/call", {"name": "sandbox_python", "arguments": {"id": sids[0], "code": "6 * 7"}})["result"]["structuredContent"]
print(json.dumps(out, sort_keys=True))
p.stdin.close(); p.wait()
EOF
if [ -n "$deb" ]; then
  tap_ok "an interpreter whose answers are container-heavy or long" \
    timeout 300 python3 "$tmp/pyshape.py" "$H" mcp --image "$deb" --audit-log /dev/null
  shape=$tap_stdout
  sget() { python3 -c 'import json, sys; print(json.dumps(json.loads(sys.argv[1])[sys.argv[2]]))' "$shape" "$@"; }
  tap_like "$(sget lists)" '"isError": true.*not the driver.s in shape' "18 MB of empty lists are refused before they are parsed"
  tap_ok "the server's peak memory stays under 200 MB" python3 -c "import sys; sys.exit(not $(sget peak) < 200)"
  tap_like "$(sget string)" '"isError": true' "a 20 MB string for an answer is refused"
  # The server's own CPU time, not the wall time: 4 KiB at a time, each
  # read waits for the writer's turn on the CPUs, which load stretches.
  tap_ok "read in linear time: under 10 s of the server's CPU ($(sget string))" \
    python3 -c "import json, sys; sys.exit(not json.loads(sys.argv[1])['cpu'] < 10)" "$(sget string)"
  tap_like "$(sget after)" '"result": "42"' "and a fresh interpreter answers the next call"
else
  tap_skip "container-heavy interpreter answers" "the debian test rootfs is not available"
fi
cat >"$tmp/nopy.py" <<'EOF'
import json, subprocess, sys
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def rpc(i, m, a):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": m, "params": a}) + "\n"); p.stdin.flush()
    return json.loads(p.stdout.readline())
rpc(1, "initialize", {"protocolVersion": "2025-11-25"})
sid = rpc(2, "tools/call", {"name": "sandbox_create", "arguments": {}})["result"]["structuredContent"]["id"]
print(rpc(3, "tools/call", {"name": "sandbox_python", "arguments": {"id": sid, "code": "1"}})["result"]["content"][0]["text"])
p.stdin.close(); p.wait()
EOF
tap_ok "python in an image without it" timeout 60 python3 "$tmp/nopy.py" "$H" mcp --image "$img" --audit-log /dev/null
tap_like "$tap_stdout" "python3 is not in this sandbox image" "is refused, saying so"
tap_ok "and the sandboxes went with the client" no_sandboxes

# ---- a client that vanishes mid-call (stdio) ----
m1=$((200000 + RANDOM))
client vanish stdio "$m1" "$H" --image "$img" --audit-log /dev/null >"$tmp/vanish" 2>&1
tap_is "$(fact "$tmp/vanish" vanishing step)" '"vanishing"' "a stdio client leaves in the middle of a call"
tap_ok "the command it started is killed" payload_gone "$m1"
tap_ok "and its sandbox removed" no_sandboxes

# ---- a SIGKILLed server leaves nothing ----
m2=$((300000 + RANDOM))
cat >"$tmp/kill.py" <<'EOF'
import json, os, signal, subprocess, sys
p = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def rpc(i, method, params=None):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params or {}}) + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())
rpc(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "k", "version": "0"}})
ids = [rpc(2 + i, "tools/call", {"name": "sandbox_create", "arguments": {}})["result"]["structuredContent"]["id"]
       for i in range(2)]
rpc(9, "tools/call", {"name": "sandbox_exec", "arguments": {"id": ids[0], "command": "sleep %s >/dev/null 2>&1 &" % sys.argv[1]}})
print(" ".join(ids), flush=True)
os.kill(p.pid, signal.SIGKILL)
p.wait()
EOF
tap_ok "a server with two sandboxes and a background process is SIGKILLed" \
  timeout 60 python3 "$tmp/kill.py" "$m2" "$H" mcp --image "$img" --audit-log /dev/null
tap_like "$tap_stdout" '^[0-9a-f]+ [0-9a-f]+$' "after creating both"
tap_ok "its sandboxes' processes die with it" payload_gone "$m2"
tap_ok "and the reaper removes their state and mounts" no_sandboxes
# Without its reaper the server makes no sandbox: one it could not tell of
# would outlive a SIGKILL.
cat >"$tmp/noreaper.py" <<'EOF'
import json, os, signal, subprocess, sys, time
p = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
def rpc(i, method, params=None):
    p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params or {}}) + "\n")
    p.stdin.flush()
    return json.loads(p.stdout.readline())
rpc(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "r", "version": "0"}})
# The reaper: the server's only child before its first sandbox.
reapers = subprocess.run(["ps", "-o", "pid=", "--ppid", str(p.pid)], capture_output=True, text=True).stdout.split()
first = rpc(2, "tools/call", {"name": "sandbox_create", "arguments": {}})["result"]
for pid in reapers:
    os.kill(int(pid), signal.SIGKILL)
time.sleep(0.5)
second = rpc(3, "tools/call", {"name": "sandbox_create", "arguments": {}})["result"]
print(json.dumps({"reapers": len(reapers), "first": first["isError"], "second": second["isError"],
                  "text": second["content"][0]["text"]}))
p.stdin.close(); p.wait()
EOF
tap_ok "a server whose reaper is killed" timeout 60 python3 "$tmp/noreaper.py" "$H" mcp --image "$img" --audit-log /dev/null
tap_like "$tap_stdout" '"reapers": 1, "first": false, "second": true' "refuses the next sandbox_create"
tap_like "$tap_stdout" 'tell the reaper' "saying why"
tap_ok "and leaves no sandbox" no_sandboxes

# ---- Streamable HTTP ----
tap_status 2 "--listen without a token is refused" env -u HUTCH_MCP_TOKEN "$H" mcp --listen 127.0.0.1:0
export HUTCH_MCP_TOKEN=test-token-$RANDOM-$RANDOM-$RANDOM
tap_fails "--listen on an address that is not loopback is refused" timeout 10 "$H" mcp --listen 0.0.0.0:0
tap_like "$tap_stderr" "loopback" "saying so"
mcp_listen "$tmp/http.err" --image "$img" --audit-log /dev/null
tap_like "$url" '^http://127\.0\.0\.1:[0-9]+/mcp$' "the HTTP server says where it listens"
client session http "$url" "$HUTCH_MCP_TOKEN" >"$tmp/http" 2>"$tmp/http.client.err"
tap_check $? "the TypeScript client runs a session over Streamable HTTP"
tap_like "$(fact "$tmp/http" initialize protocol)" '"2025-11-25"' "negotiating the current revision"
tap_like "$(fact "$tmp/http" initialize session)" '"[0-9a-f]{32}"' "with a session id"
tap_is "$(fact "$tmp/http" exec stdout)" '"kept\n"' "a session across HTTP calls"
tap_is "$(fact "$tmp/http" "after cancel" stdout)" '"next\n"' "a cancelled HTTP call ends"
tap_ok "and the next is answered right away" python3 -c "import sys; sys.exit(not $(fact "$tmp/http" "after cancel" seconds) < 5)"
tap_is "$(fact "$tmp/http" "unknown tool" code)" '-32602' "errors as JSON-RPC errors"
tap_is "$(fact "$tmp/http" "missing command" isError)" 'true' "tool errors as results"
tap_is "$(fact "$tmp/http" closed step)" '"closed"' "the client ends its session (DELETE)"
tap_ok "which removed its sandboxes" no_sandboxes

post() { curl -s -o /dev/null -w '%{http_code}' -X "${1:-POST}" "${@:2}" "$url"; }
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"0"}}}'
tap_is "$(post POST -d "$init")" 401 "no bearer token: 401"
tap_is "$(post POST -H 'Authorization: Bearer wrong' -d "$init")" 401 "a wrong token: 401"
auth=(-H "Authorization: Bearer $HUTCH_MCP_TOKEN" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
tap_is "$(post POST "${auth[@]}" -H 'Origin: http://evil.example' -d "$init")" 403 "a foreign Origin: 403"
# DNS rebinding: a page whose name resolves to 127.0.0.1 reaches the port
# with its own name in Host, and not always an Origin.
port=${url##*:}
port=${port%/mcp}
tap_is "$(post POST "${auth[@]}" -H "Host: evil.example:$port" -d "$init")" 403 "a foreign Host: 403"
tap_is "$(post POST "${auth[@]}" -H "Host: evil.example" -d "$init")" 403 "a foreign Host without a port: 403"
tap_is "$(post POST "${auth[@]}" -H "Host: 127.0.0.1:$((port == 65535 ? 1 : port + 1))" -d "$init")" 403 \
  "the loopback address with another port in Host: 403"
tap_is "$(post POST "${auth[@]}" -H "Host:" -d "$init")" 403 "no Host at all: 403"
tap_like "$(curl -s -X POST "${auth[@]}" -H "Host: evil.example:$port" -d "$init" "$url")" '"code":-32000' \
  "the 403 is a JSON-RPC error"
tap_is "$(post POST "${auth[@]}" -H "Host: 127.0.0.1:$port" -H 'Origin: http://evil.example:'"$port" -d "$init")" \
  403 "a good Host with a foreign Origin: 403"
tap_is "$(post PUT "${auth[@]}" -H "Host: localhost:$port")" 405 "Host localhost:PORT is this server (PUT: 405)"
tap_is "$(post PUT "${auth[@]}" -H "Host: LOCALHOST:$port" -H "Origin: http://localhost:$port")" 405 \
  "in any case, with its Origin"
tap_is "$(post POST "${auth[@]}" -d '{"jsonrpc":"2.0","id":2,"method":"tools/list"}')" 400 "no session id: 400"
tap_is "$(post POST "${auth[@]}" -H 'Mcp-Session-Id: 00' -d '{"jsonrpc":"2.0","id":2,"method":"tools/list"}')" 404 \
  "an unknown session: 404"
tap_is "$(post POST "${auth[@]}" -d '{nope')" 400 "a body that is not JSON: 400"
tap_is "$(post PUT "${auth[@]}")" 405 "a method the transport has not: 405"
tap_is "$(post GET "${auth[@]}")" 400 "GET (a session's event stream) without a session: 400"
tap_is "$(post GET "${auth[@]}" -H 'Mcp-Session-Id: 00')" 404 "of an unknown session: 404"

# Anyone on the machine may connect: a request without the token is turned
# away at its headers, before its body is waited for or held in memory.
cat >"$tmp/unauth.py" <<'EOF2'
import socket, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
s = socket.create_connection((u.hostname, u.port))
s.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\n"
          b"Content-Length: 30000000\r\n\r\n")
t0 = time.monotonic()
s.settimeout(30)
head = s.recv(64).split(b"\r\n")[0].decode()
print(head, round(time.monotonic() - t0, 1))
EOF2
unauth=$(timeout 40 python3 "$tmp/unauth.py" "$url")
tap_like "$unauth" "^HTTP/1.1 401 " "no token and a 30 MB body announced: 401"
tap_ok "at once, without waiting for the body" python3 -c "import sys; sys.exit(not float('${unauth##* }') < 3)"

# Slowloris: connections that send half a request and stall hold only
# their own slot, never the server (it read them one at a time, 10 s each).
cat >"$tmp/stall.py" <<'EOF2'
import socket, subprocess, sys, time, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
idle = []
for _ in range(4):
    s = socket.create_connection((u.hostname, u.port))
    s.sendall(b"POST /mcp HTTP/1.1\r\nHost: x\r\n")
    idle.append(s)
time.sleep(0.3)
t0 = time.monotonic()
code = subprocess.run(["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "60", "-X", "PUT",
                       "-H", "Authorization: Bearer " + sys.argv[2], sys.argv[1]],
                      capture_output=True, text=True).stdout
print(code, round(time.monotonic() - t0, 1))
EOF2
stall=$(timeout 90 python3 "$tmp/stall.py" "$url" "$HUTCH_MCP_TOKEN")
tap_like "$stall" "^405 " "a request behind four stalled connections is answered"
tap_ok "at once" python3 -c "import sys; sys.exit(not float('${stall##* }') < 3)"

m3=$((400000 + RANDOM))
client vanish http "$m3" "$url" "$HUTCH_MCP_TOKEN" >"$tmp/vanish-http" 2>&1
tap_is "$(fact "$tmp/vanish-http" vanishing step)" '"vanishing"' "an HTTP client leaves in the middle of a call"
tap_ok "the command it started is killed" payload_gone "$m3"
tap_ok "the server goes on" kill -0 "$srv"
tap_like "$("$H" ps | awk 'NR > 1')" "[0-9a-f]" "keeping the session's sandbox until the session ends"
mcp_stop

tap_done
