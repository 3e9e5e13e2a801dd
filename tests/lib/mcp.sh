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
