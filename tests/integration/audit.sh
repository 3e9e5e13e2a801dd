#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Every sandbox leaves an audit log (hutch-audit(5)) that `hutch audit`
# verifies: a one-shot exec (--audit FILE, and the state directory's
# archive), create + exec --in + rm, and hutch run (in its run directory);
# an edited line, a removed middle line, a cut end and a partial last line
# each break the verification, at the line where it breaks.
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
export HUTCH_STATE_DIR=$tmp/state
mkdir -m 0700 "$HUTCH_STATE_DIR"
py=/usr/bin/python3

# field LOG N EXPR: python EXPR on record N (1-based, `r`) of LOG
field() {
  "$py" -c '
import json, sys
r = json.loads(open(sys.argv[1]).read().splitlines()[int(sys.argv[2]) - 1])
print(eval(sys.argv[3]))' "$@"
}
types() { "$py" -c '
import json, sys
print(" ".join(json.loads(l)["type"] for l in open(sys.argv[1])))' "$1"; }

# files LOG: each "file" record, one a line: direction op path bytes sha256 ok
files() { "$py" -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["type"] == "file":
        print(r["direction"], r["op"], r["path"], r.get("bytes"), r.get("sha256"), r.get("ok"))' "$1"; }
# copies LOG: each "copy" record: direction kind from to files listed ok
copies() { "$py" -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["type"] == "copy":
        print(r["direction"], r["kind"], r["from"], r["to"], r["files"], r["listed"], r["ok"])' "$1"; }
sha() { printf 'sha256:%s' "$(sha256sum "$1" | cut -d' ' -f1)"; }
nl=$'\n'
# tap_line TEXT REGEX DESC: one line of TEXT is all of REGEX
tap_line() { tap_like "$1" "(^|$nl)$2(\$|$nl)" "$3"; }

# ---- a one-shot exec with --audit FILE ----
log=$tmp/one.jsonl
tap_status 3 "exec --audit FILE runs the command" \
  "$HUTCH_BIN" exec --rootfs "$img" --audit "$log" -- sh -c 'echo out; printf "\033]0;x\007" >&2; exit 3'
tap_is "$(types "$log")" "start command end" "the log holds start, command and end records"
tap_is "$(field "$log" 1 'r["kind"], r["uid"] == __import__("os").getuid(), r["image"], r["network"], r["image_digest"][:7], r["policy_digest"][:7], r["seccomp_digest"][:7]')" \
  "('one-shot', True, '$img', 'none', 'sha256:', 'sha256:', 'sha256:')" \
  "start: kind, caller uid, image, network mode, image, policy and seccomp digests"
tap_is "$(field "$log" 1 'r["policy_digest"] == "sha256:" + __import__("hashlib").sha256(open(r["policy"], "rb").read()).hexdigest()')" \
  "True" "start: policy_digest is the sha256 of the policy file"
tap_like "$(field "$log" 1 'r["limits"], r["degraded"]')" "^\('(cgroup|rlimits)', \[" "start: the limits' mode and the degraded modes"
tap_is "$(field "$log" 2 'r["argv"][:2], r["cwd"], r["exit_code"], r["result"], r["cpu_seconds"] is not None, r["memory_peak"] > 0')" \
  "(['sh', '-c'], '/', 3, 'exited', True, True)" "command: argv, cwd, exit status, CPU and memory used"
tap_like "$(field "$log" 2 'r["usage_from"]')" "^(cgroup|wait4)$" "command: where its CPU and memory figures come from"
tap_is "$(field "$log" 3 'r["reason"], r["seq"]')" "('the command ended', 3)" "end: its reason"
tap_is "$(field "$log" 1 'r["read_only_root"]')" "False" "start: the root was writable"
rolog=$tmp/ro.jsonl
tap_ok "exec --read-only --audit FILE" "$HUTCH_BIN" exec --rootfs "$img" --read-only --audit "$rolog" -- true
tap_is "$(field "$rolog" 1 'r["read_only_root"]')" "True" "start: records the read-only root"
tap_ok "hutch audit FILE verifies it" "$HUTCH_BIN" audit "$log"
tap_like "$tap_stdout" "verified, 3 records, ended" "and says so"
tap_unlike "$tap_stdout" $'\033' "the sandbox's escape sequence is never printed raw"
# A sandbox killed whole on its timeout, without a cgroup: its processes
# die with the pid namespace, reaped by no one who counts them, so their
# use is unknown; it is recorded as unknown, not as init's alone.
tlog=$tmp/timeout.jsonl
tap_status 124 "a one-shot killed on its timeout" \
  "$HUTCH_BIN" exec --rootfs "$img" --no-cgroups --timeout 1 --audit "$tlog" -- sh -c 'sleep 30'
tap_is "$(field "$tlog" 2 'r["result"], r["cpu_seconds"], r["memory_peak"], r["usage_from"]')" "('timeout', None, None, None)" \
  "its command record has its CPU and memory as unknown"
id=$(field "$log" 1 'r["sandbox"]')
tap_ok "the one-shot's log is also kept in the state directory's archive" \
  cmp "$log" "$HUTCH_STATE_DIR/.audit/$id.jsonl"
tap_ok "hutch audit ID finds the archived log after the sandbox is gone" "$HUTCH_BIN" audit --quiet "$id"
# No flush on a one-shot's path (hutch-audit(5), Durability): each cost a
# journal commit between the command's end and hutch exec's.  (A cold
# seccomp cache's first entry is written whole, with a flush: not here.)
if command -v strace >/dev/null && strace -f -o /dev/null true 2>/dev/null; then
  strace -y -f -e trace=fsync,fdatasync,syncfs,sync -o "$tmp/sync.trace" "$HUTCH_BIN" exec --rootfs "$img" -- true 2>/dev/null
  tap_is "$(grep -E '(fsync|fdatasync|syncfs|sync)\(' "$tmp/sync.trace" | grep -vc '/seccomp/')" "0" \
    "a one-shot exec flushes nothing to disk"
  tap_ok "and its log, written without, verifies" "$HUTCH_BIN" audit --quiet \
    "$(ls -t "$HUTCH_STATE_DIR"/.audit/*.jsonl | head -1)"
  # Nor does its copy (--audit): replaced by a rename, unflushed.
  strace -y -f -e trace=fsync,fdatasync,syncfs,sync -o "$tmp/sync2.trace" "$HUTCH_BIN" exec --rootfs "$img" \
    --audit="$tmp/copy.jsonl" -- true 2>/dev/null
  tap_is "$(grep -E '(fsync|fdatasync|syncfs|sync)\(' "$tmp/sync2.trace" | grep -vc '/seccomp/')" "0" \
    "a one-shot exec with --audit flushes nothing to disk either"
  tap_ok "and the copy verifies" "$HUTCH_BIN" audit --quiet "$tmp/copy.jsonl"
else
  tap_skip "a one-shot exec flushes nothing to disk" "no strace here"
  tap_skip "and its log, written without, verifies" "no strace here"
  tap_skip "a one-shot exec with --audit flushes nothing to disk either" "no strace here"
  tap_skip "and the copy verifies" "no strace here"
fi
tap_ok "exec --json" "$HUTCH_BIN" exec --rootfs "$img" --json -- true
tap_ok "exec --json names the archived audit log" \
  test -s "$(printf '%s' "$tap_stdout" | "$py" -c 'import json, sys; print(json.load(sys.stdin)["audit_log"])')"
tap_ok "hutch audit --json" "$HUTCH_BIN" audit --json "$log"
tap_is "$(printf '%s' "$tap_stdout" | "$py" -c 'import json, sys; j = json.load(sys.stdin); print(j["ok"], j["lines"], j["records"][1]["type"])')" \
  "True 3 command" "--json: the verdict and the records"

# ---- --net proxy: the allowlist, and the proxy's decisions joined ----
nlog=$tmp/net.jsonl
tap_fails "exec --net proxy to a host not allowed" \
  "$HUTCH_BIN" exec --rootfs "$img" --net proxy --allow pkgs.test:8080 --audit "$nlog" -- wget -q -O- http://evil.example/
tap_ok "its log verifies" "$HUTCH_BIN" audit --quiet "$nlog"
tap_is "$(types "$nlog")" "start command net net_summary end" "start, command, the proxy's decision, its summary, end"
tap_is "$(field "$nlog" 1 'r["network"], r["allow"][-1]')" "('proxy', 'pkgs.test:8080')" \
  "start: network mode and the allowlist in force (the policy's, then --allow)"
tap_is "$(field "$nlog" 3 '(lambda p: (p["host"], p["port"], p["decision"]))(__import__("json").loads(r["proxy"]))')" \
  "('evil.example', 80, 'refuse')" "net: the proxy's line, host, port and decision"

# ---- the log is out of the sandbox's reach ----
tap_ok "exec: no audit log is visible inside the sandbox" \
  "$HUTCH_BIN" exec --rootfs "$img" -- sh -c '! find / -xdev -name "audit.jsonl*" 2>/dev/null | grep -q .'

# ---- create, exec --in, rm ----
tap_ok "create" "$HUTCH_BIN" create --rootfs "$img"
sid=$tap_stdout
tap_status 7 "exec --in" "$HUTCH_BIN" exec --in "$sid" --workdir /tmp -- sh -c 'echo hi > f; exit 7'
tap_status 137 "exec --in, killed by a signal" "$HUTCH_BIN" exec --in "$sid" -- sh -c 'kill -9 $$'
tap_ok "hutch audit ID verifies the live sandbox's log" "$HUTCH_BIN" audit "$sid"
tap_like "$tap_stdout" "verified, 3 records, open" "open while the sandbox runs"
tap_ok "hutch rm" "$HUTCH_BIN" rm "$sid"
live=$HUTCH_STATE_DIR/.audit/$sid.jsonl
tap_is "$(types "$live")" "start command command end" "start, both commands, end"
tap_is "$(field "$live" 2 'r["argv"][2], r["cwd"], r["exit_code"]'), $(field "$live" 3 'r["result"], r["signal_name"], r["exit_code"]'), $(field "$live" 4 'r["reason"]')" \
  "('echo hi > f; exit 7', '/tmp', 7), ('signal', 'KILL', 137), removed" "the commands' ends, and rm as the end reason"
tap_is "$(field "$live" 2 'r["cpu_seconds"] is not None and r["memory_peak"] > 0 and r["usage_from"] in ("cgroup", "wait4")')" "True" \
  "exec --in: CPU and memory used, from the cgroup or from init's wait4"
tap_ok "hutch audit ID verifies it after rm" "$HUTCH_BIN" audit --quiet "$sid"

# ---- a command its log cannot record is not run ----
# The log made unopenable (a directory in its place; out of descriptors
# does the same): exec --in fails, saying why, and the command never ran.
tap_ok "create (unrecordable)" "$HUTCH_BIN" create --rootfs "$img"
uid_=$tap_stdout
ulog=$HUTCH_STATE_DIR/$uid_/audit.jsonl
if [ -f "$ulog" ] && mv "$ulog" "$ulog.kept" && mkdir "$ulog"; then
  out=$("$HUTCH_BIN" exec --in "$uid_" -- touch /tmp/unaudited 2>&1)
  tap_is "$?" 125 "exec --in refuses a command whose record cannot be written"
  tap_like "$out" "would not be audited.*audit log: open audit.jsonl" "saying so, with the log's error"
  rmdir "$ulog" && mv "$ulog.kept" "$ulog"
  tap_status 1 "the command did not run" "$HUTCH_BIN" exec --in "$uid_" -- test -e /tmp/unaudited
  tap_ok "and the log still verifies" "$HUTCH_BIN" audit --quiet "$uid_"
else
  tap_check 1 "the live log is at $ulog"
fi
tap_ok "rm (unrecordable)" "$HUTCH_BIN" rm "$uid_"

# ---- the files hutch writes into and reads out of a sandbox ----
# hutch cp both ways (one file, a directory), the Python package's
# write_file and read_file, each with its path, size and the sha256 of the
# bytes (sha256sum's); a name the sandbox chose (a quote, a newline) is
# escaped and the log still verifies.
tap_ok "create (files)" "$HUTCH_BIN" create --rootfs "$img"
fid=$tap_stdout
fd=$tmp/files
mkdir -p "$fd/tree/sub"
printf 'hello from the host\n' >"$fd/a.txt"
head -c 200000 /dev/urandom >"$fd/tree/sub/big.bin"
printf x >"$fd/tree/top.txt"
tap_ok "hutch cp FILE ID:PATH" "$HUTCH_BIN" cp "$fd/a.txt" "$fid:/tmp/a.txt"
tap_ok "hutch cp DIR ID:PATH" "$HUTCH_BIN" cp "$fd/tree" "$fid:/tmp/tree"
tap_ok "hutch cp with a relative host path" sh -c 'cd "$1" && "$2" cp a.txt "$3:/tmp/rel.txt"' sh "$fd" "$HUTCH_BIN" "$fid"
tap_ok "exec --in writes a file and a hostile name" "$HUTCH_BIN" exec --in "$fid" -- \
  sh -c 'printf "made inside" >/tmp/made.txt; printf q >"/tmp/tree/we\"ird
name"'
tap_ok "hutch cp ID:PATH FILE" "$HUTCH_BIN" cp "$fid:/tmp/made.txt" "$fd/made.txt"
tap_ok "hutch cp ID:PATH DIR" "$HUTCH_BIN" cp "$fid:/tmp/tree" "$fd/back"
pylib=$HUTCH_BUILDDIR/python/build/lib
if [ -n "${HUTCH_PYTHON:-}" ] && [ -d "$pylib/hutch" ]; then
  tap_ok "Python: write_file, read_file, and a write_file that fails" env PYTHONPATH="$pylib" "$HUTCH_PYTHON" -c '
import sys, hutch
sb = hutch.Sandbox.attach(sys.argv[1])
sb.write_file("/tmp/py.txt", b"written by python\n")
assert sb.read_file("/tmp/a.txt") == b"hello from the host\n"
try:
    sb.write_file("/tmp/a.txt/under-a-file", b"z")
except hutch.Error:
    pass
else:
    raise SystemExit("a write under a file went through")' "$fid"
fi
tap_ok "rm (files)" "$HUTCH_BIN" rm "$fid"
flog=$HUTCH_STATE_DIR/.audit/$fid.jsonl
tap_ok "the log with the file records verifies" "$HUTCH_BIN" audit --quiet "$flog"
got=$(files "$flog")
cps=$(copies "$flog")
tap_line "$got" "in copy /tmp/a.txt 20 $(sha "$fd/a.txt") None" "cp FILE ID:PATH: the path inside, size and sha256"
tap_line "$cps" "in file $fd/a.txt /tmp/a.txt 1 1 True" "and its copy record: one file, from the host path"
tap_line "$cps" "in file $fd/a.txt /tmp/rel.txt 1 1 True" "a relative host path is recorded absolute"
tap_line "$got" "in copy sub/big.bin 200000 $(sha "$fd/tree/sub/big.bin") None" \
  "cp DIR ID:PATH: each file, hashed as it was copied"
tap_line "$got" "in copy top.txt 1 $(sha "$fd/tree/top.txt") None" "cp DIR ID:PATH: the other file"
tap_line "$cps" "in tree $fd/tree /tmp/tree 2 2 True" "and the tree's copy record"
tap_line "$got" "out copy /tmp/made.txt 11 $(sha "$fd/made.txt") None" "cp ID:PATH FILE: the file read out, with its sha256"
tap_line "$cps" "out file /tmp/made.txt $fd/made.txt 1 1 True" "and its copy record"
tap_line "$got" "out copy sub/big.bin 200000 $(sha "$fd/back/sub/big.bin") None" "cp ID:PATH DIR: each file read out"
tap_line "$cps" "out tree /tmp/tree $fd/back 3 3 True" "and the tree's copy record"
tap_is "$("$py" -c '
import json, sys
print([r["path"] for r in map(json.loads, open(sys.argv[1])) if r["type"] == "file" and "ird" in r["path"]])' "$flog")" \
  "['we\"ird\\nname']" "a name with a quote and a newline is recorded as it is"
tap_ok "escaped in the log, on one line" grep -qF 'we\"ird\u000aname' "$flog"
if [ -n "${HUTCH_PYTHON:-}" ] && [ -d "$pylib/hutch" ]; then
  want_py=sha256:$(printf 'written by python\n' | sha256sum | cut -d' ' -f1)
  tap_line "$got" "in write /tmp/py.txt 18 $want_py True" "Python write_file: path, size, sha256"
  tap_line "$got" "out read /tmp/a.txt 20 $(sha "$fd/a.txt") True" "Python read_file: what left the sandbox"
  tap_line "$got" "in write /tmp/a.txt/under-a-file 1 sha256:[0-9a-f]{64} False" "a write that failed is recorded, not ok"
else
  tap_skip "Python write_file and read_file records" "this build is not configured with --enable-python"
fi

# ---- the MCP server's file tools ----
# A client on the server's stdin and stdout: one request line, its answer.
coproc MCP { exec timeout 120 "$HUTCH_BIN" mcp --image "$img" --audit-log /dev/null 2>"$tmp/mcp.err"; }
mcp_pid=$MCP_PID
ask() {
  printf '{"jsonrpc": "2.0", "id": %s, "method": "%s", "params": %s}\n' "$@" >&"${MCP[1]}"
  answer=
  IFS= read -r -t 60 answer <&"${MCP[0]}"
}
tool() { ask 9 tools/call "{\"name\": \"$1\", \"arguments\": $2}"; }
ask 1 initialize '{"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "a", "version": "0"}}'
tool sandbox_create '{}'
msid=$("$py" -c 'import json, sys; print(json.loads(sys.argv[1])["result"]["structuredContent"]["id"])' "$answer")
tool sandbox_write_file "{\"id\": \"$msid\", \"path\": \"/tmp/mcp.txt\", \"content\": \"from mcp\\n\"}"
tap_like "$answer" '"isError": ?false' "hutch mcp: sandbox_write_file"
tool sandbox_read_file "{\"id\": \"$msid\", \"path\": \"/tmp/mcp.txt\"}"
tap_like "$answer" '"content": ?"from mcp\\n"' "hutch mcp: sandbox_read_file reads it back"
eval "exec ${MCP[1]}>&-"
wait "$mcp_pid"
mlog=$HUTCH_STATE_DIR/.audit/$msid.jsonl
tap_ok "its sandbox's log verifies" "$HUTCH_BIN" audit --quiet "$mlog"
want_mcp=sha256:$(printf 'from mcp\n' | sha256sum | cut -d' ' -f1)
tap_line "$(files "$mlog")" "in write /tmp/mcp.txt 9 $want_mcp True" "sandbox_write_file: path, size, sha256"
tap_line "$(files "$mlog")" "out read /tmp/mcp.txt 9 $want_mcp True" "sandbox_read_file: the same file read out"

# ---- what breaks the verification ----
broken() { # DESC EXPECTED-LINE-REGEX: the copy in $t must fail
  tap_status 1 "$1: hutch audit exits 1" "$HUTCH_BIN" audit --quiet "$t"
  tap_like "$tap_stdout" "$2" "$1: the verdict says where"
}
fresh() { # a verified copy of the live sandbox's log, with its head
  t=$tmp/t.jsonl
  rm -f "$t" "$t.head" # a FIFO or link left by a test below is not written through
  cp "$live" "$t"
  cp "$live.head" "$t.head"
}
fresh
tap_ok "an untouched copy with its head verifies" "$HUTCH_BIN" audit --quiet "$t"
fresh
sed -i '2s/"exit_code":7/"exit_code":0/' "$t"
broken "an edited line" "BROKEN: line 3: the previous line's hash does not match \(line 2 changed\)"
fresh
sed -i '2d' "$t"
broken "a middle line removed" "BROKEN: line 2: not record 2"
fresh
sed -i '$d' "$t"
broken "the last line cut off (head kept)" "BROKEN: the log has 3 lines .* its head records 4"
fresh
sed -i '$d' "$t"
rm "$t.head"
broken "the last line cut off, head removed" "BROKEN: no end record, and no head file"
fresh
truncate -s -5 "$t"
broken "a partial last line" "BROKEN: line 4 is incomplete"
fresh
sed -i '3d;4d' "$t"
sed -i '2s/.*/&/' "$t"
broken "the end record and the line before removed" "BROKEN"
fresh
printf '{"seq":5,"prev":"x","type":"command"}\n' >>"$t"
broken "a line added after the end" "BROKEN: line 5"
fresh
"$py" -c '
import sys
p = sys.argv[1]
lines = open(p).read().splitlines(True)
lines[1], lines[2] = lines[2], lines[1]
open(p, "w").write("".join(lines))' "$t"
broken "two lines swapped" "BROKEN: line 2"

# ---- inputs that are not regular files are refused, never waited on ----
# (a log and its head may lie where a sandbox could plant a FIFO or a link)
refused() { # DESC STDERR-REGEX: hutch audit on $t fails at once
  tap_fails "$1: refused" timeout 20 "$HUTCH_BIN" audit --quiet "$t"
  tap_check $((tap_rc == 124)) "$1: without hanging (exit $tap_rc)"
  tap_like "$tap_stderr" "$2" "$1: saying why"
}
fresh
rm "$t.head"
mkfifo "$t.head"
refused "a FIFO as the head" "t\.jsonl\.head is not a regular file \(a FIFO\)"
fresh
mv "$t.head" "$t.real-head"
ln -s "$t.real-head" "$t.head"
refused "a symbolic link as the head" "t\.jsonl\.head is a symbolic link"
rm -f "$t.head" "$t.real-head"
mkdir -p "$tmp/d"
mkfifo "$tmp/d/audit.jsonl"
tap_fails "a FIFO as a directory's audit.jsonl: refused" timeout 20 "$HUTCH_BIN" audit --quiet "$tmp/d"
tap_check $((tap_rc == 124)) "a FIFO as a directory's audit.jsonl: without hanging (exit $tap_rc)"
tap_like "$tap_stderr" "audit\.jsonl is not a regular file \(a FIFO\)" "a FIFO as a directory's audit.jsonl: saying why"
rm -r "$tmp/d"
fresh
ln -s "$t" "$tmp/link.jsonl"
t=$tmp/link.jsonl
refused "a symbolic link as the log" "link\.jsonl is a symbolic link"
rm "$tmp/link.jsonl"
if command -v flock >/dev/null; then
  fresh
  flock -x "$t" sleep 60 &
  holder=$!
  sleep 0.3
  refused "a log whose lock is held and never let go" "stayed locked"
  kill "$holder"
  wait "$holder" 2>/dev/null
fi

# ---- the bound: [limits] audit_log ----
pol=$tmp/capped.policy
sed "s|^seccomp = .*|seccomp = $(dirname "$HUTCH_POLICY")/seccomp.json|; s|^\[limits\]|[limits]\naudit_log = 64K|" "$HUTCH_POLICY" >"$pol"
tap_ok "policy show" "$HUTCH_BIN" policy show --policy "$pol"
tap_like "$tap_stdout" "audit_log: 64 KiB" "policy show names the audit log's bound"
tap_ok "create under a policy with [limits] audit_log = 64K" "$HUTCH_BIN" create --rootfs "$img" --policy "$pol"
cid=$tap_stdout
big=$(head -c 3000 /dev/zero | tr '\0' a)
for i in 1 2 3 4 5 6 7 8; do
  "$HUTCH_BIN" exec --in "$cid" -- true "$big" "$big" "$big" "$big" "$big" "$big" "$big" >/dev/null 2>&1
done
tap_ok "rm" "$HUTCH_BIN" rm "$cid"
capped=$HUTCH_STATE_DIR/.audit/$cid.jsonl
tap_like "$(types "$capped")" "^start( command)+ capped end$" "past the cap: one \"capped\" record, then the end only"
tap_ok "the capped log verifies" "$HUTCH_BIN" audit "$capped"
tap_like "$tap_stdout" "capped: records were dropped" "and says it was capped"
size=$(stat -c %s "$capped")
tap_check $((size > 70000)) "the log stays near its cap ($size bytes)"

# ---- hutch run: the log in the run directory, with the files copied ----
if [ -x /usr/bin/python3 ]; then
  . "$HUTCH_SRCDIR/tests/lib/agent.sh"
  AGENT_IMAGE=$img
  mock_start '[
   {"calls": [["str_replace_editor", {"command": "create", "path": "/testbed/solve.py", "file_text": "print(42)\n"}]]},
   {"calls": [["str_replace_editor", {"command": "str_replace", "path": "/testbed/solve.py", "old_str": "42", "new_str": "43"}]]},
   {"calls": [["execute_bash", {"command": "printf 42 > /testbed/output/answer.txt; mkdir /testbed/output/sub; cp /testbed/solve.py /testbed/output/sub/; cat /testbed/input/in.txt"}]]},
   {"calls": [["submit", {}]]}
  ]'
  input=$(hutch_test_tmpdir)
  printf 'input data' >"$input/in.txt"
  tap_status 0 "hutch run" hrun --query q --input-dir "$input"
  run_dir
  tap_ok "hutch audit RUN_DIR verifies the run's log" "$HUTCH_BIN" audit --quiet "$RUN_DIR"
  want_in=$(printf 'input data' | sha256sum | cut -d' ' -f1)
  want_out=$(printf 42 | sha256sum | cut -d' ' -f1)
  got=$("$py" -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["type"] == "file":
        print(r["direction"], r["path"], r["bytes"], r["sha256"])' "$RUN_DIR/audit.jsonl")
  tap_like "$got" "in in.txt 10 sha256:$want_in" "the file copied in, with its sha256"
  tap_like "$got" "out answer.txt 2 sha256:$want_out" "the file copied back, with its sha256"
  tap_like "$(types "$RUN_DIR/audit.jsonl")" "^start .*command.* end$" "the run's commands and its end"
  # The agent's editor writes through the runtime: each write and read is
  # there, with the sha256 of the bytes.
  got=$(files "$RUN_DIR/audit.jsonl")
  first=$(printf '%s\n' "$got" | awk '$1 == "in" && $2 == "write" && $3 == "/testbed/solve.py" { print $4, $5, $6; exit }')
  tap_like "$first" "^[0-9]+ sha256:[0-9a-f]{64} True$" "the editor's create of /testbed/solve.py: its size and sha256"
  tap_line "$got" "out read /testbed/solve.py ${first% True} True" "its str_replace reads out the bytes the create wrote"
  tap_line "$got" "in write /testbed/solve.py $(stat -c %s "$RUN_DIR/files/sub/solve.py") $(sha "$RUN_DIR/files/sub/solve.py") True" \
    "and writes the edit back: the bytes the run's output holds"
  # The copy back at the end is whole (kind "tree"): its files are the run's
  # output files, each with the sha256 of what files/ holds.
  final=$("$py" -c '
import json, sys
pending, final = [], None
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["type"] == "file" and r["op"] == "copy":
        pending.append("%s  %s" % (r["sha256"][7:], r["path"]))
    elif r["type"] == "copy":
        if r["direction"] == "out" and r["kind"] == "tree":
            final = pending
        pending = []
print("\n".join(sorted(final or [])))' "$RUN_DIR/audit.jsonl")
  tap_is "$final" "$(cd "$RUN_DIR/files" && find . -type f | sed 's|^\./||' | xargs sha256sum | LC_ALL=C sort)" \
    "the last copy back lists every output file with the sha256 of what files/ holds"
  tap_like "$final" "sub/solve.py" "a file in a subdirectory among them"
  mock_stop
fi

# ---- a Dockerfile build: what COPY and ADD wrote into the image ----
# In a store of its own (its layers go with $tmp): the build's audit log is
# beside its build log, and holds each file COPY and ADD wrote, hashed as
# it was copied, an archive ADD unpacked, a URL it downloaded, and each step.
bstore=$tmp/store
if bimg=$(HUTCH_STORE=$bstore hutch_test_rootfs busybox); then
  ctx=$tmp/ctx
  mkdir -p "$ctx/dir/sub" "$tmp/srv"
  printf alpha >"$ctx/a.txt"
  printf 'beta\n' >"$ctx/dir/sub/b.txt"
  (cd "$ctx" && tar czf arch.tgz a.txt)
  printf 'remote file\n' >"$tmp/srv/remote.txt"
  "$py" "$HUTCH_SRCDIR/tests/lib/http-server.py" "$tmp/srv" "$tmp/port" "$tmp/requests.log" 2>"$tmp/server.log" &
  srv_pid=$!
  hutch_wait_until 10 test -s "$tmp/port"
  port=$(cat "$tmp/port")
  printf '[network]\nallow = files.test:%s\nresolve = files.test=127.0.0.1\n' "$port" >"$tmp/net.policy"
  cat >"$ctx/Dockerfile" <<DOCKERFILE
FROM $bimg
COPY a.txt /opt/a.txt
COPY dir /opt/dir/
ADD arch.tgz /opt/unpacked/
ADD http://files.test:$port/files/remote.txt /opt/dl/
RUN echo built > /opt/made
FROM $bimg
COPY --from=0 /opt/made /made
DOCKERFILE
  build=(env HUTCH_STORE="$bstore" "$HUTCH_BIN" rootfs build -f "$ctx/Dockerfile" --name audited --log "$tmp/build.log"
    --net proxy --net-policy "$tmp/net.policy" "$ctx")
  tap_ok "rootfs build -f with COPY, ADD and RUN" "${build[@]}"
  blog=$tmp/build.audit.jsonl
  tap_ok "the build's audit log, beside its build log, verifies" "$HUTCH_BIN" audit --quiet "$blog"
  tap_is "$(types "$blog")" "start step file copy step file copy step file step file copy step step step file copy step end" \
    "start, each step, the files COPY and ADD wrote, end"
  tap_is "$(field "$blog" 1 'r["kind"], r["image"], r["dockerfile_digest"][7:] == __import__("hashlib").sha256(open(r["dockerfile"], "rb").read()).hexdigest()')" \
    "('build', 'audited', True)" "start: a build, its image's name, the Dockerfile's sha256"
  got=$(files "$blog")
  cps=$(copies "$blog")
  tap_line "$got" "in copy /opt/a.txt 5 $(sha "$ctx/a.txt") None" "COPY FILE: its path in the image, size, sha256"
  tap_line "$got" "in copy /opt/dir/sub/b.txt 5 $(sha "$ctx/dir/sub/b.txt") None" "COPY DIR: each file"
  tap_line "$cps" "in build context /opt/dir 1 1 True" "and the copy's record: from the context"
  tap_line "$got" "in unpack arch.tgz $(stat -c %s "$ctx/arch.tgz") $(sha "$ctx/arch.tgz") None" \
    "ADD of an archive: the archive unpacked, its sha256"
  tap_line "$got" "in copy /opt/dl/remote.txt 12 $(sha "$tmp/srv/remote.txt") None" "ADD of a URL: the file downloaded"
  tap_line "$cps" "in build http://files.test:$port/files/remote.txt /opt/dl 1 1 True" "from its URL"
  tap_line "$got" "in copy /made 6 sha256:$(printf 'built\n' | sha256sum | cut -d' ' -f1) None" \
    "COPY --from: the file a RUN step wrote, as it was copied"
  tap_line "$cps" "in build stage 0 /made 1 1 True" "from the stage"
  tap_is "$(field "$blog" 14 'r["instruction"], r["result"], r["layer"][:7]')" "('RUN echo built > /opt/made', 'made', 'sha256:')" \
    "step: the instruction, its outcome and its layer"
  tap_ok "the same build again, from the cache" "${build[@]}"
  tap_ok "its log verifies" "$HUTCH_BIN" audit --quiet "$blog"
  tap_is "$(types "$blog")" "start step step step step step step step step end" \
    "a build from the cache wrote no file: its log has steps only, replaced"
  tap_is "$("$py" -c '
import json, sys
print(sorted({r["result"] for r in map(json.loads, open(sys.argv[1])) if r["type"] == "step"}))' "$blog")" \
    "['cached', 'done']" "each layer step says cached"
  kill "$srv_pid" 2>/dev/null
  wait "$srv_pid" 2>/dev/null
  # The store's trees may hold subordinate ids: hutch removes them.
  for _ in 1 2 3 4 5 6 7 8; do
    for d in $(HUTCH_STORE=$bstore "$HUTCH_BIN" rootfs ls --json 2>/dev/null |
      "$py" -c 'import json, sys; print("\n".join(sorted({i["digest"] for i in json.load(sys.stdin)})))'); do
      HUTCH_STORE=$bstore "$HUTCH_BIN" rootfs rm "$d" >/dev/null 2>&1
    done
  done
else
  tap_skip "the build's audit log" "the busybox test rootfs could not be imported into a store of the test's"
fi

# ---- the archive keeps at most 1000 logs: past that, the newest 900 ----
arch=$tmp/state2
mkdir -p -m 0700 "$arch/.audit"
# aged_logs PREFIX N DAY: N archived logs and heads, PREFIX1..PREFIXN, the
# i-th dated DAY 00:00 local time + i minutes (one process, not a touch a
# log).
aged_logs() {
  python3 - "$arch/.audit" "$@" <<'EOF'
import datetime, os, sys
d, prefix, n, day = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
base = datetime.datetime.fromisoformat(day).timestamp()
for i in range(1, n + 1):
    for suffix in (".jsonl", ".jsonl.head"):
        p = os.path.join(d, f"{prefix}{i}{suffix}")
        open(p, "a").close()
        os.utime(p, (base + 60 * i, base + 60 * i))
EOF
}
aged_logs old 1005 2020-01-01
tap_ok "a one-shot exec beside 1005 archived logs" env HUTCH_STATE_DIR="$arch" "$HUTCH_BIN" exec --rootfs "$img" -- true
tap_is "$(ls "$arch/.audit" | grep -c 'jsonl$') $(ls "$arch/.audit" | grep -c 'jsonl.head$')" "900 900" \
  "past 1000 logs the archive is cut to the newest 900, heads and all"
tap_ok "the oldest went, the newest stayed" sh -c "[ ! -e '$arch/.audit/old106.jsonl' ] && [ -e '$arch/.audit/old107.jsonl' ] && ls '$arch/.audit' | grep -qv '^old'"
# An end reads the archive only when its tally (a byte per log moved in)
# passes 1000: 101 more ends, tallied as hutch does, are cut again.
aged_logs more 101 2021-01-01
for i in $(seq 101); do
  printf + >>"$arch/.audit/.tally"
done
tap_ok "another one-shot exec, 1001 logs tallied" env HUTCH_STATE_DIR="$arch" "$HUTCH_BIN" exec --rootfs "$img" -- true
tap_is "$(ls "$arch/.audit" | grep -c 'jsonl$') $(ls "$arch/.audit" | grep -c 'jsonl.head$')" "900 900" \
  "the tally brings the archive back to the newest 900"
tap_ok "the oldest went first" sh -c "[ ! -e '$arch/.audit/old208.jsonl' ] && [ -e '$arch/.audit/old209.jsonl' ] && [ -e '$arch/.audit/more1.jsonl' ]"

rm -rf "$tmp"
tap_done
