#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A sandbox that loops refused CONNECTs through its proxy (--net proxy) for
# a few seconds, from the inside, as an attacker would: the proxy's log on
# the host stays within its bound ([network] log_max), refusals past the
# rate are answered and counted, not each logged, the proxy's CPU and
# memory stay small, and the counts reach the run's summary and the audit
# log.  Then the audit log's side: a proxy log past the audit log's bound
# is joined up to it and the rest counted (read as a stream, in bounded
# memory), an unreadable one is said to be so, never summarised as zero.
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs debian) || tap_skip_all "debian test rootfs unavailable (tests/setup-host.sh)"
py=/usr/bin/python3
[ -x "$py" ] || tap_skip_all "python3 is needed on the host"
"$HUTCH_BIN" exec --rootfs "$img" --net proxy -- true 2>/dev/null || tap_skip_all "--net proxy cannot start here"

tmp=$(hutch_test_tmpdir)
created=()
cleanup() {
  local id
  for id in "${created[@]}"; do "$HUTCH_BIN" rm "$id" >/dev/null 2>&1; done
  rm -rf "$tmp"
}
trap cleanup EXIT

# The attack, run inside: WORKERS processes each open a connection to the
# proxy, ask CONNECT evil.example:443 (refused: not in the allowlist), read
# the answer and close, for SECONDS; prints how many were answered 403
# (a connect the proxy makes wait is given up after a second, not counted).
# With "hold", each keeps its last 900 connections open instead of closing
# them, so that the proxy holds as many answered ones as it lets linger.
cat >"$tmp/flood.py" <<'PY'
import collections, os, socket, sys, time
secs, workers = float(sys.argv[1]), int(sys.argv[2])
hold = len(sys.argv) > 3 and sys.argv[3] == "hold"
host, port = os.environ["HTTP_PROXY"][len("http://"):].rsplit(":", 1)
end = time.monotonic() + secs
kids = []
for w in range(workers):
    r, wr = os.pipe()
    if os.fork() == 0:
        os.close(r)
        n = 0
        held = collections.deque()
        while time.monotonic() < end:
            try:
                s = socket.create_connection((host, int(port)), timeout=1)
                s.sendall(b"CONNECT evil.example:443 HTTP/1.1\r\nHost: evil.example:443\r\n\r\n")
                if s.recv(4096).startswith(b"HTTP/1.1 403 "):
                    n += 1
                held.append(s)
                while len(held) > (900 if hold else 0):
                    held.popleft().close()
            except OSError:
                pass
        os.write(wr, b"%d\n" % n)
        os._exit(0)
    os.close(wr)
    kids.append(r)
total = 0
for r in kids:
    total += int(os.read(r, 64) or b"0")
    os.wait()
print(total)
PY

holds() { # EXPR DESC: ok when the arithmetic EXPR is true
  tap_check $((!($1))) "$2"
}
state() { # ID EXPR: python EXPR on the sandbox's state.json (`s`)
  "$py" -c 'import json, sys; s = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
    "$HUTCH_STATE_DIR/$1/state.json" "$2"
}
cpu_ticks() { # PID: user + system clock ticks
  awk '{print $14 + $15}' "/proc/$1/stat"
}
# proxy_lines LOG: the proxy's log's lines by decision, and the sums of
# the "unlogged" records' counts.
proxy_tally() {
  "$py" - "$1" <<'PY'
import json, sys
dec, unl = {}, {}
for l in open(sys.argv[1]):
    o = json.loads(l)
    d = o["decision"]
    dec[d] = dec.get(d, 0) + 1
    if d == "unlogged":
        for k in ("requests", "allowed", "refused", "errors"):
            unl[k] = unl.get(k, 0) + o[k]
print("refuse=%d unlogged=%d unlogged_refused=%d" % (dec.get("refuse", 0), dec.get("unlogged", 0), unl.get("refused", 0)))
PY
}
types() { "$py" -c '
import json, sys
print(" ".join(json.loads(l)["type"] for l in open(sys.argv[1])))' "$1"; }
# net_summary LOG EXPR: python EXPR on the audit log's net_summary record (`r`)
net_summary() {
  "$py" -c '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["type"] == "net_summary"][-1]
print(*eval(sys.argv[2]))' "$@"
}

# ---- the flood, under the shipped policy ----
tap_ok "create --net proxy" "$HUTCH_BIN" create --rootfs "$img" --net proxy
sid=$tap_stdout
created+=("$sid")
tap_ok "the attack's script copied in" "$HUTCH_BIN" exec --in "$sid" -- sh -c 'cat > /tmp/flood.py' <"$tmp/flood.py"
ppid=$(state "$sid" 's["network"]["proxy_pid"]')
plog=$(state "$sid" 's["network"]["audit_log"]')
cpu0=$(cpu_ticks "$ppid")
t0=$(date +%s%N)
tap_ok "a sandbox loops refused CONNECTs for 3 s" "$HUTCH_BIN" exec --in "$sid" -- python3 /tmp/flood.py 3 2
sent=$tap_stdout
wall=$((($(date +%s%N) - t0) / 10000000)) # centiseconds
cpu=$(($(cpu_ticks "$ppid") - cpu0))
size=$(stat -c %s "$plog" 2>/dev/null || echo 999999999)
tap_diag "the flood: $sent refusals answered in $wall cs; the proxy used $cpu ticks of CPU; proxy.log $size bytes"
holds "sent > 0" "the refusals were answered ($sent)"
holds "size <= 4 * 1024 * 1024" "proxy.log stays within the default bound, 4 MiB ($size bytes)"
tally=$(proxy_tally "$plog")
tap_diag "proxy.log: $tally"
[[ $tally =~ refuse=([0-9]+) ]]
logged=${BASH_REMATCH[1]:-0}
holds "logged <= 200" "refusals past the rate are not each logged ($logged lines for $sent)"
# The proxy's CPU: the ticks of the flood's wall time it took (USER_HZ 100).
holds "cpu * 100 < wall * 15" "the proxy used less than 15% of a core meanwhile ($cpu ticks in $wall cs)"
# Meanwhile, the proxy's descriptors: at most its max_connections (256)
# unanswered, 64 answered ones lingering, and its own.
"$HUTCH_BIN" exec --in "$sid" -- python3 /tmp/flood.py 2 4 hold >"$tmp/held" 2>&1 &
holder=$!
most=0
for _ in $(seq 20); do
  n=$(ls "/proc/$ppid/fd" 2>/dev/null | wc -l)
  [ "$n" -gt "$most" ] && most=$n
  sleep 0.1
done
wait "$holder"
tap_check $? "4 processes hold their last 900 refused connections each, for 2 s"
rss=$(awk '/^VmHWM/ {print $2}' "/proc/$ppid/status")
tap_diag "held: $(cat "$tmp/held") answered; the proxy's peak memory ${rss} KiB, at most $most descriptors"
holds "most < 400" "the proxy holds few of them open ($most descriptors at most)"
# AddressSanitizer keeps what is freed in its quarantine: no measure there.
if ldd "$HUTCH_BIN" 2>/dev/null | grep -q libasan; then
  tap_skip "the proxy's peak memory stays small" "a sanitizer build"
else
  holds "rss < 24 * 1024" "the proxy's peak memory stays small (${rss} KiB)"
fi
tap_ok "hutch rm" "$HUTCH_BIN" rm "$sid"
alog=$HUTCH_STATE_DIR/.audit/$sid.jsonl
tap_like "$(types "$alog")" "^start( command)+( net)+ net_summary end$" "the audit log: the proxy's lines, then their summary"
tap_is "$(net_summary "$alog" 'r["refused"] >= '"$sent"', r["unlogged"] > 0, r["not_joined"]')" \
  "True True 0" "its net_summary counts every refusal answered, and how many were not logged"
tap_ok "hutch audit verifies it" "$HUTCH_BIN" audit "$alog"
tap_like "$tap_stdout" "network: [0-9]+ requests, [0-9]+ not logged by the proxy" "and says how many requests the proxy did not log"

# ---- a one-shot exec's summary line counts them too ----
tap_ok "exec --net proxy --json, the same flood for 2 s" "$HUTCH_BIN" exec --rootfs "$img" --net proxy --json \
  -- sh -c 'cat > /tmp/f.py && python3 /tmp/f.py 2 2' <"$tmp/flood.py"
n1=$(head -n1 <<<"$tap_stdout")
got=$("$py" -c 'import json, sys; j = json.loads(sys.stdin.read().splitlines()[1])["network"]; print(j["refused"] >= '"$n1"', j.get("unlogged", 0) > 0)' <<<"$tap_stdout")
tap_is "$got" "True True" "the --json summary counts every refusal ($n1 answered), logged or not"
tap_like "$tap_stderr" "network: [0-9]+ requests, 0 allowed, [0-9]+ refused .*not logged" "the summary line says some were not logged"

# ---- the bound: [network] log_max ----
pol=$tmp/small.policy
sed "s|^seccomp = .*|seccomp = $(dirname "$HUTCH_POLICY")/seccomp.json|; /^log_max = /d; s|^\[network\]|[network]\nlog_max = 16K|" \
  "$HUTCH_POLICY" >"$pol"
tap_ok "policy show" "$HUTCH_BIN" policy show --policy "$pol"
tap_like "$tap_stdout" "log_max: 16 KiB" "policy show names the proxy log's bound"
tap_ok "policy show, the shipped policy" "$HUTCH_BIN" policy show
tap_like "$tap_stdout" "log_max: 4 MiB" "the shipped bound is 4 MiB"
tap_ok "create --net proxy under [network] log_max = 16K" "$HUTCH_BIN" create --rootfs "$img" --net proxy --policy "$pol"
bid=$tap_stdout
created+=("$bid")
blog=$(state "$bid" 's["network"]["audit_log"]')
tap_ok "the same flood for 2 s" "$HUTCH_BIN" exec --in "$bid" -- sh -c 'cat > /tmp/f.py && python3 /tmp/f.py 2 2' <"$tmp/flood.py"
bsize=$(stat -c %s "$blog" 2>/dev/null || echo 999999999)
holds "bsize <= 16384" "proxy.log stays within log_max ($bsize bytes)"
tap_like "$(tail -n1 "$blog")" '"decision":"unlogged".*"reason":"the log reached log_max' \
  "its last line says the bound was reached"
tap_ok "hutch rm" "$HUTCH_BIN" rm "$bid"
balog=$HUTCH_STATE_DIR/.audit/$bid.jsonl
last_net=$("$py" -c '
import json, sys
print([json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["type"] == "net"][-1]["proxy"])' "$balog")
tap_like "$last_net" '"decision":"unlogged","requests":[1-9][0-9]*,.*"reason":"the log reached log_max' \
  "when the proxy ends, a last line counts the requests it did not log"

# ---- the audit log's side: a proxy log past the audit log's bound ----
apol=$tmp/audit.policy
sed "s|^seccomp = .*|seccomp = $(dirname "$HUTCH_POLICY")/seccomp.json|; s|^\[limits\]|[limits]\naudit_log = 64K|" \
  "$HUTCH_POLICY" >"$apol"
tap_ok "create --net proxy under [limits] audit_log = 64K" "$HUTCH_BIN" create --rootfs "$img" --net proxy --policy "$apol"
aid=$tap_stdout
created+=("$aid")
alog2=$(state "$aid" 's["network"]["audit_log"]')
# 64 MiB of lines in the proxy's log (as from a proxy with a large log_max):
# far past the audit log's 64 KiB; read whole, it would take that memory.
line='{"time":"2026-01-01T00:00:00.000Z","sandbox":"x","method":"CONNECT","host":"evil.example","port":443,"address":null,"decision":"refuse","rule":"host not listed","override":false,"bytes_up":0,"bytes_down":0,"duration_ms":0.1,"error":null}'
yes "$line" | head -c $((64 << 20)) | head -n -1 >>"$alog2"
nlines=$(wc -l <"$alog2")
tap_ok "hutch rm, in bounded memory" /usr/bin/time -f %M -o "$tmp/rss" "$HUTCH_BIN" rm "$aid"
rss=$(tail -n1 "$tmp/rss")
holds "rss < 32 * 1024" "hutch rm read the 64 MiB proxy log as a stream (peak ${rss} KiB)"
alog3=$HUTCH_STATE_DIR/.audit/$aid.jsonl
tap_like "$(types "$alog3")" "^start( net)+ net_dropped net_summary end$" \
  "the first lines up to the bound, then one net_dropped record, the summary and the end"
tap_is "$("$py" -c '
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
d = [r for r in recs if r["type"] == "net_dropped"][0]
n = sum(1 for r in recs if r["type"] == "net")
print(d["lines"] + n == int(sys.argv[2]), d["reason"])' "$alog3" "$nlines")" \
  "True the audit log's bound (audit_log)" "net_dropped counts the lines not joined, and says why"
tap_is "$(net_summary "$alog3" 'r["requests"] == '"$nlines"', r["refused"] == '"$nlines"', r["not_joined"] > 0')" "True True True" \
  "the summary counts every line of the proxy's log, not zero"
tap_ok "hutch audit verifies it" "$HUTCH_BIN" audit "$alog3"
tap_like "$tap_stdout" "network: $nlines requests.*[0-9]+ proxy lines not joined \(the audit log's bound\)" \
  "and says what was not joined"

# ---- an unreadable proxy log: said, never summarised as zero ----
tap_ok "create --net proxy" "$HUTCH_BIN" create --rootfs "$img" --net proxy
uid_=$tap_stdout
created+=("$uid_")
ulog=$(state "$uid_" 's["network"]["audit_log"]')
rm -f "$ulog"
mkfifo "$ulog"
tap_ok "hutch rm with a FIFO for the proxy's log (without hanging)" timeout 30 "$HUTCH_BIN" rm "$uid_"
ualog=$HUTCH_STATE_DIR/.audit/$uid_.jsonl
tap_like "$(types "$ualog")" "^start net_unread end$" "an explicit net_unread record"
tap_like "$("$py" -c '
import json, sys
print([json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["type"] == "net_unread"][0]["error"])' "$ualog")" \
  "not a regular file" "which says why"
tap_ok "hutch audit" "$HUTCH_BIN" audit "$ualog"
tap_like "$tap_stdout" "network: the proxy's log was not read" "hutch audit says the network records are missing"

tap_done
