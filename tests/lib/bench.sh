# SPDX-License-Identifier: Apache-2.0
# Helpers of the hutch benchmark tests.  They read $OUT (a run directory),
# $tmp (the test's scratch directory, its runs under $tmp/out) and
# $HUTCH_STATE_DIR.

# lines EXPR: EXPR evaluated over results.jsonl's lines, as `ls`.
lines() { "$AGENT_PY" -c '
import json, sys
ls = [json.loads(l) for l in open(sys.argv[1])]
print(eval(sys.argv[2]))' "$OUT/results.jsonl" "$1"; }

# leftovers: nothing of the test's runs is left (sandbox, state entry, mount,
# process), waited for up to 10 s; else what is left, and status 1.
leftovers() {
  local left
  for _ in $(seq 100); do
    left=
    [ -n "$("$HUTCH_BIN" ps 2>/dev/null | awk 'NR > 1')" ] && left+="an entry of hutch ps "
    [ -n "$(hutch_state_entries "$HUTCH_STATE_DIR" 2>/dev/null)" ] &&
      left+="state: $(hutch_state_entries "$HUTCH_STATE_DIR" | tr '\n' ' ') "
    grep -qF "$HUTCH_STATE_DIR" /proc/self/mountinfo && left+="a mount under the state directory "
    pgrep -f "$tmp/out" >/dev/null && left+="a process of this test's runs "
    [ -z "$left" ] && return 0
    sleep 0.1
  done
  echo "$left"
  return 1
}

# A TCP port of loopback that nothing listens on (until a test starts the
# mock there).
free_port() {
  "$AGENT_PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
