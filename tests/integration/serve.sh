#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch serve (src/serve/): SandboxFusion's /run_code over HTTP, driven by
# curl and by the project's own small client (tests/lib/serve-client.py):
# the answer's shape and statuses (Success, Failed, SandboxError; Finished,
# TimeLimitExceeded), exit codes, time and memory limits, stdin, files in
# and fetch_files out, compiled C++ with its compile step, languages the
# image lacks and names SandboxFusion lacks, the HTTP bounds (body size,
# chunked bodies, the queue's 503), tokens off loopback and what a browser
# may not do, /metrics moving, every request audited, and a sandbox that
# reaches neither a network nor the server.  Nothing is left behind, even
# by a killed server.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/mcp.sh" # no_sandboxes, fact

command -v curl >/dev/null || tap_skip_all "curl is not installed"
cpp=1
img=$(hutch_test_rootfs compilers) || {
  cpp=
  img=$(hutch_test_rootfs debian) || tap_skip_all "the Debian test rootfs is unavailable (tests/setup-host.sh)"
}
tmp=$(hutch_test_tmpdir)
chmod 755 "$tmp"
H=$HUTCH_BIN
srv=
trap '[ -n "$srv" ] && kill -9 "$srv" 2>/dev/null; rm -rf "$tmp"' EXIT
client() { /usr/bin/python3 "$HUTCH_SRCDIR/tests/lib/serve-client.py" "$@"; }
# jq-less: the value at a dotted path of the JSON of a "STATUS JSON" line.
field() {
  /usr/bin/python3 -c 'import json, sys
v = json.loads(sys.argv[1].split(" ", 1)[1])
for k in sys.argv[2].split("."):
    v = v[int(k)] if isinstance(v, list) else v.get(k) if isinstance(v, dict) else None
print(json.dumps(v))' "$1" "$2"
}

# serve_start ERRFILE [OPTIONS...]: a server on a free loopback port; url
# is its base URL (empty when it printed none within 60 s).
serve_start() {
  local errfile=$1
  shift
  "$H" serve --listen 127.0.0.1:0 --image "$img" --json "$@" >"$tmp/start.json" 2>"$errfile" &
  srv=$!
  url=
  for _ in $(seq 1200); do
    url=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["url"])' "$tmp/start.json" 2>/dev/null) && break
    kill -0 "$srv" 2>/dev/null || break
    sleep 0.05
  done
}
serve_stop() {
  kill -TERM "$srv"
  wait "$srv"
  tap_check $? "$1: SIGTERM ends the server cleanly"
  srv=
}
metric() { curl -s "$url/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }

serve_start "$tmp/err" --audit-log "$tmp/audit" --max-body 1M
tap_like "$url" '^http://127\.0\.0\.1:[0-9]+$' "hutch serve listens on a loopback port and says where" ||
  tap_diag <"$tmp/err"
langs=$(/usr/bin/python3 -c 'import json, sys; print(" ".join(json.load(open(sys.argv[1]))["languages"]))' "$tmp/start.json")
tap_like " $langs " ' python .* bash ' "--json lists the languages the image has ($langs)"
[ -n "$cpp" ] && tap_like " $langs " ' cpp ' "cpp among them in the image with g++"
tap_unlike " $langs " ' go | java | nodejs ' "and not those whose tools it lacks"
tap_is "$(curl -s "$url/v1/ping")" '"pong"' "GET /v1/ping answers \"pong\", as SandboxFusion"
tap_is "$(curl -s "$url/health")" '{"status":"ok"}' "GET /health answers"
ok_before=$(metric 'hutch_serve_requests_total{status="Success"}')

# ---- the answer ----
out=$(client run "$url/run_code" code='print(1)')
tap_like "$out" '^200 ' "print(1) is answered 200"
tap_is "$(field "$out" status)" '"Success"' "status Success"
tap_is "$(field "$out" run_result.status)" '"Finished"' "run_result.status Finished"
tap_is "$(field "$out" run_result.stdout)" '"1\n"' "its stdout"
tap_is "$(field "$out" run_result.return_code)" '0' "return_code 0"
tap_like "$(field "$out" run_result.execution_time)" '^[0-9.e-]+$' "execution_time in seconds"
tap_is "$(field "$out" compile_result)" 'null' "compile_result null for python"
tap_is "$(field "$out" files)" '{}' "files {}"
tap_is "$(/usr/bin/python3 -c 'import json, sys; print(list(json.loads(sys.argv[1].split(" ", 1)[1])))' "$out")" \
  "['status', 'message', 'compile_result', 'run_result', 'executor_pod_name', 'files']" \
  "the fields of SandboxFusion's RunCodeResponse, in its order"
out=$(curl -s "$url/run_code" -H 'Content-Type: application/json' -d '{"code": "echo $((6 * 7))", "language": "bash"}')
tap_like "$out" '"status":"Success".*"stdout":"42\\n"' "curl: bash runs"

out=$(client run "$url/run_code" code='print "perl ", 6 * 7, "\n";' language=perl)
tap_is "$(field "$out" run_result.stdout)" '"perl 42\n"' "perl runs"
out=$(client run "$url/run_code" code='import sys; print("to err", file=sys.stderr); sys.exit(3)')
tap_is "$(field "$out" status)" '"Failed"' "an exit code 3 is Failed"
tap_is "$(field "$out" run_result.return_code)" '3' "with return_code 3"
tap_is "$(field "$out" run_result.stderr)" '"to err\n"' "and its stderr"
out=$(client run "$url/run_code" code='import os, signal; os.kill(os.getpid(), signal.SIGSEGV)')
tap_is "$(field "$out" run_result.return_code)" '-11' "a signal is its negative number, as Python's subprocess says it"

out=$(client run "$url/run_code" code='import time; print("before", flush=True); time.sleep(60)' run_timeout=1)
tap_is "$(field "$out" status)" '"Failed"' "a program past run_timeout is Failed"
tap_is "$(field "$out" run_result.status)" '"TimeLimitExceeded"' "with TimeLimitExceeded"
tap_is "$(field "$out" run_result.return_code)" 'null' "and no return_code"
tap_is "$(field "$out" run_result.stdout)" '"before\n"' "what it printed before is kept"
tap_ok "killed at about its limit ($(field "$out" run_result.execution_time) s)" \
  /usr/bin/python3 -c "import sys; sys.exit(not 0.9 < $(field "$out" run_result.execution_time) < 10)"

big='b = bytearray(400 * 1024 * 1024); b[::4096] = b"x" * len(b[::4096]); print(len(b))'
out=$(client run "$url/run_code" code="$big" memory_limit_MB=64)
tap_is "$(field "$out" status)" '"Failed"' "400 MB under memory_limit_MB 64 fails"
tap_unlike "$(field "$out" run_result.return_code)" '^0$' "with a non-zero return_code ($(field "$out" run_result.return_code))"
# Touching 400 MB is slow under load on some hypervisors: time enough.
out=$(client run "$url/run_code" code="$big" memory_limit_MB=1024 run_timeout=120)
tap_is "$(field "$out" run_result.stdout)" '"419430400\n"' "and runs under memory_limit_MB 1024" ||
  tap_diag "$out"

out=$(client run "$url/run_code" code='print(input()[::-1])' stdin=abc)
tap_is "$(field "$out" run_result.stdout)" '"cba\n"' "stdin reaches the program"
out=$(client run "$url/run_code" code='import sys; print(repr(sys.stdin.read()))' stdin=None)
tap_is "$(field "$out" run_result.stdout)" "\"''\\n\"" "stdin null is an empty standard input"

code='import os
s = open("data/in.txt").read()
open("out.txt", "w").write(s.upper())
os.symlink("/etc/hostname", "link.txt")
print(os.getcwd())'
out=$(client run "$url/run_code" code="$code" file:data/in.txt=hello fetch=out.txt fetch=missing.txt \
  fetch=data fetch=/workspace/data/in.txt)
tap_is "$(field "$out" status)" '"Success"' "files in (data/in.txt) and fetch_files out"
tap_is "$(field "$out" run_result.stdout)" '"/workspace\n"' "in /workspace"
files=$(/usr/bin/python3 -c 'import base64, json, sys
f = json.loads(sys.argv[1].split(" ", 1)[1])["files"]
print(" ".join("%s=%s" % (k, base64.b64decode(v).decode()) for k, v in sorted(f.items())))' "$out")
tap_is "$files" "/workspace/data/in.txt=hello out.txt=HELLO" \
  "a file the program wrote comes back in base64, under the name asked; absent files and directories are left out"

if [ -n "$cpp" ]; then
  hello='#include <iostream>
int main() { std::string s; std::cin >> s; std::cout << "hi " << s << std::endl; return 0; }'
  out=$(client run "$url/run_code" code="$hello" language=cpp stdin=there)
  tap_is "$(field "$out" status)" '"Success"' "C++ compiles and runs"
  tap_is "$(field "$out" compile_result.status)" '"Finished"' "its compile_result Finished"
  tap_is "$(field "$out" compile_result.return_code)" '0' "with return_code 0"
  tap_is "$(field "$out" run_result.stdout)" '"hi there\n"' "and the program's output"
  out=$(client run "$url/run_code" code='a=b' language=cpp)
  tap_is "$(field "$out" status)" '"Failed"' "a compile error is Failed"
  tap_unlike "$(field "$out" compile_result.return_code)" '^0$' "with the compiler's exit code"
  tap_like "$(field "$out" compile_result.stderr)" 'error' "and its message"
  tap_is "$(field "$out" run_result)" 'null' "and nothing run"
  out=$(client run "$url/run_code" code='int main() { for (;;); }' language=cpp run_timeout=1)
  tap_is "$(field "$out" run_result.status)" '"TimeLimitExceeded"' "a C++ loop is killed at run_timeout"
else
  tap_skip "C++" "the compilers test rootfs is unavailable"
fi

# ---- verl's requests (tests/golden/serve-verl.json: as verl's
# call_sandbox_api sent them, with the answers) ----
if [ -n "$cpp" ]; then
  got=$(/usr/bin/python3 - "$HUTCH_SRCDIR/tests/golden/serve-verl.json" "$url/run_code" <<'PY'
import json, sys, urllib.request
for case in json.load(open(sys.argv[1])):
    rq = urllib.request.Request(sys.argv[2], json.dumps(case["request"]).encode(),
                                {"Content-Type": "application/json", "Accept": "application/json"})
    with urllib.request.urlopen(rq, timeout=60) as r:
        got = json.load(r)
    for k in ("compile_result", "run_result"):
        if got.get(k):
            got[k]["execution_time"] = "<seconds>"
    print("same" if got == case["response"] else "differs", case["name"], "" if got == case["response"] else json.dumps(got))
PY
  )
  n=$(/usr/bin/python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))))' "$HUTCH_SRCDIR/tests/golden/serve-verl.json")
  tap_is "$(grep -c '^same ' <<<"$got")" "$n" "verl's $n recorded requests get the recorded answers" || tap_diag <<<"$got"
else
  tap_skip "verl's recorded requests" "the compilers test rootfs is unavailable"
fi

# ---- what is refused ----
out=$(client run "$url/run_code" code='fmt.Println(1)' language=go)
tap_is "$(field "$out" status)" '"SandboxError"' "a language the image lacks is SandboxError"
tap_like "$(field "$out" message)" 'language go is not available.* has no go .*languages here: python' \
  "naming the language, its tool and the languages there are"
out=$(client run "$url/run_code" code='x' language=cobol)
tap_like "$out" '^422 ' "a language SandboxFusion does not name is 422"
tap_like "$(field "$out" detail.0.loc)" 'language' "its detail naming the field"
tap_is "$(field "$out" detail.0.input)" '"cobol"' "and the value"
out=$(client run "$url/run_code" language=python)
tap_is "$(field "$out" detail.0.loc)" '["body", "code"]' "a request without code is 422, naming code"
out=$(client run "$url/run_code" code=1 run_timeout=100000)
tap_like "$(field "$out" detail.0.msg)" 'max-timeout' "a time limit past --max-timeout is 422, naming the option"
status=$(head -c 2000000 /dev/zero | curl -s -o "$tmp/body" -w '%{http_code}' "$url/run_code" \
  -H 'Content-Type: application/json' --data-binary @-)
tap_is "$status" 413 "a body past --max-body is refused 413"
tap_like "$(cat "$tmp/body")" 'max-body' "saying why"
status=$(printf '{"code":"print(1)","language":"python"}' | curl -s -o "$tmp/body" -w '%{http_code}' \
  "$url/run_code" -H 'Content-Type: application/json' -H 'Transfer-Encoding: chunked' --data-binary @-)
tap_is "$status" 411 "a chunked body is refused 411"
tap_like "$(cat "$tmp/body")" 'Content-Length' "saying what to send instead"
status=$(curl -s -o /dev/null -w '%{http_code}' "$url/run_code" -H 'Host: evil.example' \
  -H 'Content-Type: application/json' -d '{"code":"print(1)","language":"python"}')
tap_is "$status" 403 "a Host that is not loopback is refused (DNS rebinding)"
status=$(curl -s -o /dev/null -w '%{http_code}' "$url/run_code" -H 'Origin: http://evil.example' \
  -H 'Content-Type: application/json' -d '{"code":"print(1)","language":"python"}')
tap_is "$status" 403 "a request from a web page (Origin) is refused"
status=$(curl -s -o /dev/null -w '%{http_code}' "$url/run_code" -H 'Content-Type: text/plain' \
  -d '{"code":"print(1)","language":"python"}')
tap_is "$status" 415 "a body that is not application/json (a form's POST) is refused"
tap_is "$(curl -s -o /dev/null -w '%{http_code}' "$url/nothing")" 404 "an unknown path is 404"
tap_is "$(curl -s -o /dev/null -w '%{http_code}' "$url/run_code")" 405 "GET /run_code is 405"
tap_is "$(curl -s -o /dev/null -w '%{http_code}' -d '' "$url/metrics")" 405 "POST /metrics is 405"
status=$(printf 'POST /run_code HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\r\n' |
  /usr/bin/python3 -c 'import socket, sys
u = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((u[0][7:], int(u[1])), timeout=10)
s.sendall(sys.stdin.buffer.read())
print(s.recv(100).split()[1].decode())' "$url")
tap_is "$status" 411 "a POST without Content-Length is 411"
status=$(printf 'GET /v1/ping HTTP/1.1\r\nHost: 127.0.0.1\r\n folded: x\r\n\r\n' |
  /usr/bin/python3 -c 'import socket, sys
u = sys.argv[1].rsplit(":", 1)
s = socket.create_connection((u[0][7:], int(u[1])), timeout=10)
s.sendall(sys.stdin.buffer.read())
print(s.recv(100).split()[1].decode())' "$url")
tap_is "$status" 400 "a folded header line is 400"

# ---- the sandbox ----
code='import socket, sys
print(sorted(n for _, n in socket.if_nameindex()))
try:
    socket.create_connection(("127.0.0.1", int(input())), timeout=3)
    print("reached")
except OSError as e:
    print("refused", type(e).__name__)'
out=$(client run "$url/run_code" code="$code" stdin="${url##*:}")
tap_is "$(field "$out" run_result.stdout)" "\"['lo']\\nrefused ConnectionRefusedError\\n\"" \
  "a sandbox has a loopback of its own only: no network, and the server's port is not there"
sid=$(tail -n 1 "$tmp/audit" | /usr/bin/python3 -c 'import json, sys; print(json.loads(sys.stdin.read())["sandbox"])')
tap_like "$sid" '^[0-9a-f]{12}$' "each request is audited with its sandbox"
tap_ok "whose own audit log hutch audit prints and verifies" "$H" audit "$sid"
tap_like "$(grep -c '"path":"/run_code"' "$tmp/audit")" '^[1-9][0-9]+$' "every /run_code request has its line"
tap_like "$(cat "$tmp/audit")" '"http":413,.*"outcome":"a body of 2000000 bytes' "refused ones too, with why"
tap_like "$(cat "$tmp/audit")" '"http":422,"outcome":"invalid request"' "and invalid ones"

# ---- metrics and the queue ----
ok_after=$(metric 'hutch_serve_requests_total{status="Success"}')
tap_ok "hutch_serve_requests_total{status=\"Success\"} moved ($ok_before to $ok_after)" test "$ok_after" -gt "$ok_before"
tap_like "$(metric 'hutch_serve_requests_total{status="Failed"}')" '^[1-9]' "so did Failed"
tap_like "$(metric 'hutch_serve_request_duration_seconds_count')" '^[1-9]' "the latency histogram counts them"
tap_like "$(metric 'hutch_serve_refused_total{reason="too_large"}')" '^[1-9]' "the refusals are counted by reason"
tap_is "$(metric hutch_serve_sandboxes_live)" "$(metric hutch_serve_sandboxes_ready)" \
  "between requests the only sandboxes alive are those made ahead (--warm)"
tap_like "$(metric hutch_serve_sandboxes_ready)" '^[1-4]$' "of which there are some, at most --warm's 4"
tap_like "$(curl -s "$url/metrics")" '# TYPE hutch_serve_request_duration_seconds histogram' "in Prometheus' text format"
# A client that hangs up: its program is killed, its sandbox goes.
curl -s -m 1 "$url/run_code" -H 'Content-Type: application/json' \
  -d '{"code":"import time; time.sleep(60)","language":"python","run_timeout":60}' >/dev/null
gone() {
  [ "$(metric hutch_serve_sandboxes_live)" = "$(metric hutch_serve_sandboxes_ready)" ] &&
    [ "$(metric hutch_serve_requests_running)" = 0 ]
}
tap_ok "a client that hangs up has its program killed and its sandbox removed" hutch_wait_until 20 gone
serve_stop "the first server"
tap_ok "and leaves no sandbox" no_sandboxes

serve_start "$tmp/err2" --max-concurrency 1 --max-queue 1 --warm 0
out=$(client burst "$url/run_code" 6 'import time; time.sleep(2)' 10)
tap_like "$(echo "$out" | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["http"].get("503", 0))')" \
  '^[1-4]$' "past --max-concurrency 1 and --max-queue 1, requests are answered 503 ($out)"
tap_like "$(echo "$out" | /usr/bin/python3 -c 'import json, sys; print(json.load(sys.stdin)["http"].get("200", 0))')" \
  '^[2-5]$' "the running one and the waiting one are answered"
tap_like "$(metric 'hutch_serve_refused_total{reason="queue_full"}')" '^[1-9]' "hutch_serve_refused_total{reason=\"queue_full\"} counts them"
tap_is "$(metric hutch_serve_sandboxes_live)" 0 "with --warm 0 no sandbox is alive between requests"
# SIGTERM: a request running finishes and is answered, then the server ends.
client run "$url/run_code" code='import time; time.sleep(2); print("done")' >"$tmp/last" 2>&1 &
cl=$!
running() { [ "$(metric hutch_serve_requests_running)" = 1 ]; }
hutch_wait_until 20 running
serve_stop "the queue's server, a request running"
wait "$cl"
tap_is "$(field "$(cat "$tmp/last")" run_result.stdout)" '"done\n"' "the request that ran is answered"

# ---- tokens ----
"$H" serve --listen 0.0.0.0:0 --image "$img" 2>"$tmp/err3"
tap_is $? 125 "listening off loopback without --token-file is refused"
tap_like "$(cat "$tmp/err3")" 'needs --token-file' "saying what it needs"
printf '# a comment\n%s\n' "tok-$RANDOM-0123456789abcdef" >"$tmp/token"
tok=$(tail -n 1 "$tmp/token")
serve_start "$tmp/err4" --token-file "$tmp/token"
tap_is "$(curl -s -o /dev/null -w '%{http_code}' "$url/run_code" -H 'Content-Type: application/json' \
  -d '{"code":"print(1)","language":"python"}')" 401 "with --token-file, a request without the token is 401"
tap_is "$(curl -s -o /dev/null -w '%{http_code}' "$url/metrics")" 401 "/metrics too"
tap_is "$(curl -s "$url/v1/ping")" '"pong"' "the health check needs none"
out=$(client run "$url/run_code" code='print(2)' token=wrong-token-0123456789)
tap_like "$out" '^401 ' "a wrong token is 401"
out=$(client run "$url/run_code" code='print(2)' token="$tok")
tap_is "$(field "$out" run_result.stdout)" '"2\n"' "the token as Bearer is taken"
out=$(client run "$url/run_code" code='print(3)' basic="$tok")
tap_is "$(field "$out" run_result.stdout)" '"3\n"' "and as a Basic password (~/.netrc for Python's requests)"
# A killed server leaves nothing: the reaper removes its sandbox.
client run "$url/run_code" code='import time; time.sleep(60)' run_timeout=60 token="$tok" >/dev/null 2>&1 &
cl=$!
running() { [ "$(curl -s -H "Authorization: Bearer $tok" "$url/metrics" | awk '$1 == "hutch_serve_requests_running" { print $2 }')" = 1 ]; }
tap_ok "a request runs" hutch_wait_until 20 running
kill -9 "$srv"
wait "$srv" 2>/dev/null
srv=
wait "$cl" 2>/dev/null
tap_ok "a SIGKILLed server leaves no sandbox (the reaper)" no_sandboxes

tap_done
