# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Helpers for the hutch run tests: a scripted OpenAI-compatible mock server
# (mock-openai.py) and a run wrapper.  Source after tap.sh.
#
#   mock_start SCRIPT_JSON   start a server playing SCRIPT_JSON (text);
#                            sets MOCK_URL and MOCK_REQUESTS
#   mock_stop                stop it
#   mock_request N EXPR [ARG...]  evaluate python EXPR on request N (0-based,
#                            bound to `r`: {"path", "authorization", "body"};
#                            ARGs follow in sys.argv[4:])
#   hrun ARGS...             hutch run against the mock, with the test image
#                            and the repository's default prompt, output
#                            under $AGENT_OUT, --quiet (HRUN_LOUD=1: not);
#                            the run directory is in $RUN_DIR
#                            (AGENT_EXEC=exec: replace the calling subshell,
#                            so that $! of `(AGENT_EXEC=exec hrun ...) &` is hutch)
#   hrun_rss FILE ARGS...    hrun, with the peak memory of hutch run (KiB,
#                            tests/lib/maxrss.py) written to FILE
#   traj EXPR                evaluate python EXPR on $RUN_DIR/trajectory.json (`t`)

AGENT_PY=/usr/bin/python3
: "${AGENT_OUT:=$(hutch_test_tmpdir)}"
export HUTCH_PROMPT_CONFIG=$HUTCH_SRCDIR/prompts/default.yaml
_mock_pid=

mock_start() {
  mock_stop
  local dir
  dir=$(mktemp -d "${TMPDIR:-/tmp}/mock.XXXXXX")
  printf '%s\n' "$1" >"$dir/script.json"
  MOCK_REQUESTS=$dir/requests.jsonl
  : >"$MOCK_REQUESTS"
  "$AGENT_PY" "$HUTCH_SRCDIR/tests/lib/mock-openai.py" "$dir/script.json" "$dir/port" "$MOCK_REQUESTS" \
    2>"$dir/stderr" &
  _mock_pid=$!
  # Python's start takes seconds on a loaded machine: up to 60 s, then say so.
  local i
  for i in $(seq 1200); do
    [ -s "$dir/port" ] && break
    kill -0 "$_mock_pid" 2>/dev/null || break
    sleep 0.05
  done
  [ -s "$dir/port" ] || echo "mock_start: the mock model did not start: $(cat "$dir/stderr")" >&2
  MOCK_URL=http://127.0.0.1:$(cat "$dir/port" 2>/dev/null)/v1
}

mock_stop() {
  if [ -n "$_mock_pid" ]; then
    kill "$_mock_pid" 2>/dev/null
    wait "$_mock_pid" 2>/dev/null || true
    _mock_pid=
  fi
}
trap mock_stop EXIT

mock_request() {
  "$AGENT_PY" -c '
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
r = reqs[int(sys.argv[2])] if int(sys.argv[2]) < len(reqs) else None
print(eval(sys.argv[3]))' "$MOCK_REQUESTS" "$1" "$2" "${@:3}"
}

mock_count() {
  grep -c . "$MOCK_REQUESTS"
}

_hrun_opts() {
  HRUN_OPTS=(--base-url "$MOCK_URL" --model test-model --rootfs "$AGENT_IMAGE" --output-dir "$AGENT_OUT"
    --retry-delay 0.05)
  [ -n "${HRUN_LOUD:-}" ] || HRUN_OPTS+=(--quiet)
}

hrun() {
  _hrun_opts
  ${AGENT_EXEC:-} "$HUTCH_BIN" run "${HRUN_OPTS[@]}" "$@"
}

hrun_rss() {
  local out=$1
  shift
  _hrun_opts
  "$AGENT_PY" "$HUTCH_SRCDIR/tests/lib/maxrss.py" "$out" "$HUTCH_BIN" run "${HRUN_OPTS[@]}" "$@"
}

# After tap_ok/tap_status of hrun: the run directory it printed.
run_dir() {
  RUN_DIR=$(printf '%s\n' "$tap_stdout" | tail -n 1)
}

traj() {
  "$AGENT_PY" -c '
import json, sys
t = json.load(open(sys.argv[1]))
print(eval(sys.argv[2]))' "$RUN_DIR/trajectory.json" "$1"
}
