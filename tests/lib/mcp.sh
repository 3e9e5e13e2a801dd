# SPDX-License-Identifier: Apache-2.0
# What the hutch mcp tests (tests/integration/mcp*.sh) share; sourced after
# tap.sh.

# fact FILE STEP KEY: the JSON value of KEY in the line of STEP that a
# tests/mcp/client.mjs scenario printed.
fact() {
  python3 -c 'import json, sys
for line in open(sys.argv[1]):
    if line.startswith("{"):
        o = json.loads(line)
        if o.get("step") == sys.argv[2]:
            print(json.dumps(o.get(sys.argv[3]), ensure_ascii=False)); break' "$@"
}

# Nothing of ours left: no sandbox in hutch ps, no state directory entry
# (each within 20 s, for a slow build).
no_sandboxes() {
  for _ in $(seq 200); do
    [ -z "$("$HUTCH_BIN" ps 2>/dev/null | awk 'NR > 1')" ] && [ -z "$(ls "$HUTCH_STATE_DIR")" ] && return 0
    sleep 0.1
  done
  "$HUTCH_BIN" ps >&2
  return 1
}

# The sessions' snapshots in the store (mcp-TAG-N), and none of them left
# (within 10 s).
snapshots_kept() { "$HUTCH_BIN" rootfs ls | awk 'NR > 1 && $1 ~ /^mcp-/ { print $1 }'; }
no_snapshots() {
  for _ in $(seq 100); do
    [ -z "$(snapshots_kept)" ] && return 0
    sleep 0.1
  done
  "$HUTCH_BIN" rootfs ls >&2
  return 1
}

# mcp_listen ERRFILE [OPTIONS...]: hutch mcp --listen 127.0.0.1:0 OPTIONS
# in the background, its standard error in ERRFILE; sets srv to its pid and
# url to the address it says it listens on (empty when it says none within
# 20 s).
mcp_listen() {
  local errfile=$1
  shift
  "$HUTCH_BIN" mcp --listen 127.0.0.1:0 "$@" 2>"$errfile" &
  srv=$!
  url=
  for _ in $(seq 400); do
    url=$(grep -o 'http://127.0.0.1:[0-9]*/mcp' "$errfile" 2>/dev/null) && break
    sleep 0.05
  done
}

# mcp_setup: what every MCP test needs: img (the busybox test image), tmp
# (its directory, removed at the end with any server left), H, srv; with
# `client`, also node and the TypeScript client (clientdir), else the test
# is skipped, saying why.
mcp_setup() {
  img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
  if [ "${1:-}" = client ]; then
    command -v node >/dev/null || tap_skip_all "node is not installed (apt-get install nodejs npm)"
    clientdir=$HUTCH_SRCDIR/tests/mcp
    [ -d "$clientdir/node_modules/@modelcontextprotocol/sdk" ] ||
      tap_skip_all "the MCP TypeScript client is not installed: run npm ci in tests/mcp"
  fi
  tmp=$(hutch_test_tmpdir)
  H=$HUTCH_BIN
  srv=
  trap '[ -n "$srv" ] && kill -9 "$srv" 2>/dev/null; rm -rf "$tmp"' EXIT
  chmod 755 "$tmp"
}

# mcp_stop: SIGTERM to the server mcp_listen started, which must end
# cleanly and leave no sandbox.
mcp_stop() {
  kill -TERM "$srv"
  wait "$srv"
  tap_check $? "SIGTERM ends the server cleanly"
  srv=
  tap_ok "and every sandbox with it" no_sandboxes
}
