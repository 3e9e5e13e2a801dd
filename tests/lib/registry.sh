# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# Debian's docker-registry (the CNCF distribution registry) for the tests:
# each one on 127.0.0.1 with its own config file and storage under a test
# directory, never the system's service.  Source it after tap.sh.
#
#   registry_start DIR [AUTH_YAML] [TLS_CERT TLS_KEY]
#     start one in DIR (config.yml, data/, log); sets REGISTRY_ADDR to
#     127.0.0.1:PORT
#   token_server_start DIR KEY CERT SERVICE USERS
#     start tests/lib/token-server.py; sets TOKEN_REALM to its URL
#   registry_stop_all
#     stop every registry (and token server) these functions started
# Not in $(...): the servers would hold its pipe open, and their ids would
# stay in the subshell.

_registry_pids=()

# skopeo run rootless with no XDG_RUNTIME_DIR (the test runs have none)
# reads credentials from /run/containers/UID/auth.json, and on a machine
# where root has run podman /run/containers is root's, mode 0700: every
# skopeo command would fail with "permission denied".  The tests give their
# credentials on the command line (--creds, --dest-creds), so skopeo gets
# an auth file of the test's own, which need not exist.  (tap.sh runs a
# function without its time limit: the limit is here.)
skopeo() {
  REGISTRY_AUTH_FILE=${REGISTRY_AUTH_FILE:-${TMPDIR:-/tmp}/skopeo-auth.json} \
    timeout --kill-after=10 "${HUTCH_TEST_CMD_TIMEOUT:-300}" skopeo "$@"
}

registry_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

registry_start() {
  local dir=$1 auth=${2:-} cert=${3:-} key=${4:-} port scheme=http
  port=$(registry_free_port) || return 1
  mkdir -p "$dir/data"
  {
    echo "version: 0.1"
    echo "log: {level: error, accesslog: {disabled: true}}"
    echo "storage: {filesystem: {rootdirectory: \"$dir/data\"}, delete: {enabled: true}}"
    echo "http:"
    echo "  addr: 127.0.0.1:$port"
    echo "  secret: hutch-test-$port"
    if [ -n "$cert" ]; then
      echo "  tls: {certificate: \"$cert\", key: \"$key\"}"
      scheme=https
    fi
    [ -n "$auth" ] && printf 'auth:\n%s\n' "$auth"
  } >"$dir/config.yml"
  docker-registry serve "$dir/config.yml" >"$dir/log" 2>&1 </dev/null &
  _registry_pids+=($!)
  local i
  REGISTRY_ADDR=
  for i in $(seq 100); do
    # Any answer (200, or 401 behind auth) means it listens.
    if curl -sk -o /dev/null -w '%{http_code}' "$scheme://127.0.0.1:$port/v2/" 2>/dev/null | grep -q '^[24]'; then
      REGISTRY_ADDR=127.0.0.1:$port
      return 0
    fi
    sleep 0.1
  done
  echo "registry.sh: docker-registry did not start; its log:" >&2
  cat "$dir/log" >&2
  return 1
}

token_server_start() {
  local dir=$1
  mkdir -p "$dir"
  python3 "$HUTCH_SRCDIR/tests/lib/token-server.py" "$2" "$3" "$4" "$5" "$dir/port" "$dir/token.log" \
    >/dev/null 2>"$dir/token.err" &
  _registry_pids+=($!)
  local i
  TOKEN_REALM=
  for i in $(seq 100); do
    if [ -s "$dir/port" ]; then
      TOKEN_REALM="http://127.0.0.1:$(cat "$dir/port")/token"
      return 0
    fi
    sleep 0.1
  done
  cat "$dir/token.err" >&2
  return 1
}

registry_stop_all() {
  local p
  for p in "${_registry_pids[@]}"; do
    kill "$p" 2>/dev/null
  done
  for p in "${_registry_pids[@]}"; do
    wait "$p" 2>/dev/null
  done
  _registry_pids=()
}
