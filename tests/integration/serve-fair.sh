#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch serve's fair share (src/serve/serve_fair.c): while one client
# floods the server (8 threads sending requests back to back, each retried
# at once when refused, so the queue stays full of its requests), another
# client's requests are let in and served in turn, not refused and not
# behind the flood: told apart by address (127.0.0.1 and 127.0.0.2), then
# with --token-file by token from one address.  The flood's own requests
# are refused past the queue, and the places it gave up are counted.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/mcp.sh" # no_sandboxes

img=$(hutch_test_rootfs debian) || tap_skip_all "the Debian test rootfs is unavailable (tests/setup-host.sh)"
tmp=$(hutch_test_tmpdir)
chmod 755 "$tmp"
srv=
flood=
trap 'touch "$tmp/stop"; [ -n "$srv" ] && kill -9 "$srv" 2>/dev/null; wait; rm -rf "$tmp"' EXIT
client() { /usr/bin/python3 "$HUTCH_SRCDIR/tests/lib/serve-client.py" "$@"; }
metric() { /usr/bin/python3 - "$url/metrics" "$1" "${token:-}" <<'PY'
import sys, urllib.request
h = {"Authorization": "Bearer " + sys.argv[3]} if sys.argv[3] else {}
for line in urllib.request.urlopen(urllib.request.Request(sys.argv[1], headers=h), timeout=10).read().decode().splitlines():
    if line.split(" ")[0] == sys.argv[2]:
        print(line.split(" ")[1])
PY
}
serve_start() {
  "$HUTCH_BIN" serve --listen 127.0.0.1:0 --image "$img" --json --max-concurrency 1 --max-queue 4 \
    --audit-log "$tmp/audit" "$@" >"$tmp/start.json" 2>"$tmp/err" &
  srv=$!
  url=
  for _ in $(seq 1200); do
    url=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["url"])' "$tmp/start.json" 2>/dev/null) && break
    kill -0 "$srv" 2>/dev/null || break
    sleep 0.05
  done
}
full() { [ "$(metric hutch_serve_queue_depth)" = 4 ]; }
# second LABEL KEY=VALUE...: three requests of a second client, one after
# another while the flood goes on; each must be answered Success (in a
# plain queue, full of the flood's, they would be refused).
second() {
  local label=$1 i out ok=0
  shift
  for i in 1 2 3; do
    local t0=$EPOCHREALTIME
    out=$(client run "$url/run_code" code="print($i)" "$@")
    case $out in '200 '*'"status": "Success"'*) ok=$((ok + 1)) ;; *) tap_diag "request $i: ${out:0:300}" ;; esac
    tap_diag "$label: request $i took $(/usr/bin/python3 -c "print(round($EPOCHREALTIME - $t0, 2))") s"
  done
  tap_is "$ok" 3 "$label: the second client's three requests are answered Success while the first floods"
}
# flood_end LABEL STATUS KEY VALUE: stops the flood; its requests past the
# queue were refused with STATUS; and, from the audit log, each of the
# second client's requests (its line's KEY is VALUE) overtook flood
# requests that were waiting before it came: at least 2 of the 3 left
# waiting once it took the place of the flood's newest.  A plain queue
# overtakes none.  Order, not time: it holds however loaded the machine.
flood_end() {
  touch "$tmp/stop"
  wait "$flood"
  local f=$tmp/flood.json
  tap_like "$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["http"].get(sys.argv[2], 0))' "$f" "$2")" \
    '^[1-9]' "$1: the flood itself is refused $2 past the queue ($(cat "$f"))"
  local overtook
  overtook=$(/usr/bin/python3 - "$tmp/audit" "$3" "$4" <<'PY'
import json, sys
ran = [json.loads(l) for l in open(sys.argv[1]) if '"path":"/run_code"' in l]
ran = [r for r in ran if r.get("http") == 200 and r.get("sandbox")]
def second(r):
    v = r.get(sys.argv[2])
    return v is not None and str(v).split(":")[0] == sys.argv[3]
for b in (r for r in ran if second(r)):
    came = b["time"] - b["seconds"]
    print(sum(1 for r in ran if not second(r) and r["time"] - r["seconds"] < came and r["time"] > b["time"]), end=" ")
PY
)
  tap_like "$overtook" '^([2-9] ){3}$' \
    "$1: each of the second client's requests went ahead of flood requests waiting before it (${overtook}overtaken)"
}

# ---- by address ----
serve_start
tap_like "$url" '^http://127\.0\.0\.1:' "a server with one worker and a queue of 4" || tap_diag <"$tmp/err"
client flood "$url/run_code" 8 'import time; time.sleep(1)' "$tmp/stop" >"$tmp/flood.json" &
flood=$!
tap_ok "the first client (127.0.0.1) fills the queue" hutch_wait_until 60 full
second "by address" source=127.0.0.2
tap_like "$(metric 'hutch_serve_refused_total{reason="fair_share"}')" '^[1-9]' \
  "the places the flood gave up are counted (hutch_serve_refused_total{reason=\"fair_share\"})"
tap_like "$(grep -c '"peer":"127.0.0.1:[0-9]*".*"outcome":"gave its place' "$tmp/audit")" '^[1-9]' \
  "and audited as the flooding client's"
flood_end "by address" 503 peer 127.0.0.2
tap_is "$(metric hutch_serve_queue_clients)" 0 "once all is served, no client is kept"
kill -TERM "$srv"
wait "$srv"
tap_check $? "the server ends cleanly"
srv=

# ---- by token, from one address ----
rm -f "$tmp/stop"
printf '%s\n%s\n' "first-$RANDOM-0123456789abcdef" "second-$RANDOM-0123456789abcdef" >"$tmp/tokens"
token=$(head -n 1 "$tmp/tokens")
serve_start --token-file "$tmp/tokens" --busy-status 504
client flood "$url/run_code" 8 'import time; time.sleep(1)' "$tmp/stop" token="$token" >"$tmp/flood.json" &
flood=$!
tap_ok "the first token's client fills the queue" hutch_wait_until 60 full
second "by token" token="$(tail -n 1 "$tmp/tokens")"
tap_like "$(grep -c '"client":1,.*"outcome":"gave its place' "$tmp/audit")" '^[1-9]' \
  "the places given up are the first token's"
flood_end "by token, --busy-status 504" 504 client 2
kill -TERM "$srv"
wait "$srv"
tap_check $? "the server ends cleanly"
srv=
tap_ok "and leaves no sandbox" no_sandboxes

tap_done
