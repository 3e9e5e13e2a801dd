# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# TAP for the integration scripts.  Source it, make assertions, end with
# tap_done.  Everything goes to stdout, which the automake TAP driver reads
# (through tests/lib/run-integration); anything else a test prints must go
# to stderr or through tap_diag.
#
#   tap_ok DESC CMD...          ok when CMD exits 0
#   tap_fails DESC CMD...       ok when CMD exits non-zero
#   tap_status WANT DESC CMD... ok when CMD exits with status WANT
#       After each of these, $tap_stdout and $tap_stderr hold what CMD printed
#       and $tap_rc its exit status.  External commands are killed after
#       $HUTCH_TEST_CMD_TIMEOUT seconds (default 300).
#   tap_check STATUS DESC       ok when STATUS is 0 (e.g. tap_check $? "...")
#   tap_is GOT WANT DESC        ok when the strings are equal
#   tap_like GOT REGEX DESC     ok when GOT matches the bash regex
#   tap_unlike GOT REGEX DESC   ok when it does not
#   tap_skip DESC REASON        a skipped point
#   tap_diag MSG...             a "# " comment
#   tap_skip_all REASON         the whole script does not apply here; exits
#   tap_done                    prints the plan; exits 1 if anything failed
#
#   hutch_test_tmpdir           a fresh directory under $TMPDIR
#   hutch_test_rootfs KIND      imports the cached busybox, debian,
#                               matplotlib or compilers test rootfs into $HUTCH_STORE,
#                               prints its image
#                               name; returns 1 when it is not available.
#   hutch_wait_until SECS CMD...
#                               runs CMD every 0.05 s until it exits 0
#                               (returns 0 at once) or SECS seconds have
#                               passed (returns 1): a wait on a condition,
#                               bounded for a slow (sanitizer) build.
#   hutch_best_ms MS CMD...     prints the least of MS (the time of a first
#                               run of CMD, in ms) and the times of two more
#                               runs (their output discarded): the best of
#                               three, so that a loaded machine's scheduling
#                               (CI runs the tests under sanitizers too) does
#                               not pass for work CMD does.
#   hutch_all_up N              a sh script for the payloads of N sandboxes
#                               started together, each with one host
#                               directory bound at /up and its own name as
#                               $1: each marks itself there and waits (a
#                               minute at most) until all N have, so that
#                               they run at once however slow their start.
#
# Set by the harness: HUTCH_BIN, HUTCH_SRCDIR, HUTCH_BUILDDIR, HUTCH_POLICY,
# HUTCH_STORE, HUTCH_STATE_DIR, HUTCH_CACHE_DIR, and HUTCH_TEST_MODE (root
# or rootless).

_tap_lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=rootfs.sh
. "$_tap_lib/rootfs.sh"

: "${HUTCH_BUILDDIR:=$(cd "$_tap_lib/../.." && pwd)}"
: "${HUTCH_SRCDIR:=$(cd "$_tap_lib/../.." && pwd)}"
: "${HUTCH_BIN:=$HUTCH_BUILDDIR/hutch}"
if [ -z "${HUTCH_TEST_MODE:-}" ]; then
  if [ "$(id -u)" -eq 0 ]; then HUTCH_TEST_MODE=root; else HUTCH_TEST_MODE=rootless; fi
fi
export HUTCH_BIN HUTCH_SRCDIR HUTCH_BUILDDIR HUTCH_TEST_MODE

_tap_n=0
_tap_failed=0
tap_stdout=
tap_stderr=
tap_rc=0

# A "#" in a description would start a TAP directive.  Sets _tap_d.
#
# Nothing here forks for a passing point: every $(...) is a fork, which
# on some machines costs milliseconds of CPU, and the suite makes tens of
# thousands of points.
_tap_desc() {
  local d=${1//\\/\\\\}
  _tap_d=${d//#/\\#}
}

tap_diag() {
  local line
  while IFS= read -r line; do
    printf '# %s\n' "$line"
  done <<<"$*"
}

# Indented diagnostics of a captured output, at most the last 40 lines.
_tap_diag_output() {
  local label=$1 text=$2 n
  [ -n "$text" ] || return 0
  n=$(printf '%s\n' "$text" | wc -l)
  if [ "$n" -gt 40 ]; then
    printf '#   %s (last 40 of %d lines):\n' "$label" "$n"
    text=$(printf '%s\n' "$text" | tail -n 40)
  else
    printf '#   %s:\n' "$label"
  fi
  printf '%s\n' "$text" | sed 's/^/#     /'
}

_tap_result() {
  local ok=$1 _tap_d
  _tap_desc "$2"
  _tap_n=$((_tap_n + 1))
  # Where a script spends its time, in its log for free ($SECONDS is no
  # fork): the points that took long, with what came before them.
  if ((SECONDS - _tap_t >= 5)); then
    printf '# %d s since the point before\n' "$((SECONDS - _tap_t))"
  fi
  _tap_t=$SECONDS
  if [ "$ok" -eq 0 ]; then
    printf 'ok %d - %s\n' "$_tap_n" "$_tap_d"
  else
    _tap_failed=$((_tap_failed + 1))
    printf 'not ok %d - %s\n' "$_tap_n" "$_tap_d"
  fi
  return "$ok"
}

# The captures' files: a directory of this script's (made once, removed by
# tap_done), a new pair of files for each capture (never one a process
# that outlived its command may still write to), emptied once read.
_tap_tmp=
_tap_seq=0
_tap_t=$SECONDS

# Sets the variable named $1 to FILE's text as $(cat FILE) gives it (NUL
# bytes dropped, trailing newlines taken off), without a fork.
_tap_slurp() {
  local -a parts
  local IFS= text
  mapfile -d '' -t parts <"$2"
  text=${parts[*]}
  while [[ $text == *$'\n' ]]; do text=${text%$'\n'}; done
  printf -v "$1" '%s' "$text"
}

# Runs "$@" capturing stdout, stderr and status into tap_stdout/stderr/rc.
_tap_capture() {
  local out err kind
  if [ -z "$_tap_tmp" ] || [ ! -d "$_tap_tmp" ]; then
    _tap_tmp=$(mktemp -d "${TMPDIR:-/tmp}/tap.XXXXXX") || return 1
  fi
  _tap_seq=$((_tap_seq + 1))
  out=$_tap_tmp/out.$BASHPID.$_tap_seq
  err=$_tap_tmp/err.$BASHPID.$_tap_seq
  type -t "$1" >"$out" 2>/dev/null
  read -r kind <"$out"
  case $kind in
  function | builtin)
    "$@" >"$out" 2>"$err"
    tap_rc=$?
    ;;
  *)
    timeout --kill-after=10 "${HUTCH_TEST_CMD_TIMEOUT:-300}" "$@" >"$out" 2>"$err"
    tap_rc=$?
    [ $tap_rc -ne 124 ] || echo "tap.sh: killed after ${HUTCH_TEST_CMD_TIMEOUT:-300} s" >>"$err"
    ;;
  esac
  _tap_slurp tap_stdout "$out"
  _tap_slurp tap_stderr "$err"
  : >"$out"
  : >"$err"
}

_tap_cmd_diag() {
  printf '#   command: %s\n' "$*"
  printf '#   exit status: %d\n' "$tap_rc"
  _tap_diag_output stdout "$tap_stdout"
  _tap_diag_output stderr "$tap_stderr"
}

tap_ok() {
  local desc=$1
  shift
  _tap_capture "$@"
  if _tap_result $((tap_rc != 0)) "$desc"; then return 0; fi
  _tap_cmd_diag "$@"
  return 1
}

tap_fails() {
  local desc=$1
  shift
  _tap_capture "$@"
  if _tap_result $((tap_rc == 0)) "$desc"; then return 0; fi
  printf '#   expected a non-zero exit status\n'
  _tap_cmd_diag "$@"
  return 1
}

tap_status() {
  local want=$1 desc=$2
  shift 2
  _tap_capture "$@"
  if _tap_result $((tap_rc != want)) "$desc"; then return 0; fi
  printf '#   expected exit status %d\n' "$want"
  _tap_cmd_diag "$@"
  return 1
}

tap_check() {
  local status=$1 desc=$2
  if _tap_result $((status != 0)) "$desc"; then return 0; fi
  printf '#   status was %s\n' "$status"
  return 1
}

# Re-tells the TAP points of a helper's output (text in $1) one by one;
# other lines become diagnostics.  Sets TAP_RETOLD to how many points.
tap_retell() {
  local line
  TAP_RETOLD=0
  while IFS= read -r line; do
    case $line in
    "ok "*) TAP_RETOLD=$((TAP_RETOLD + 1)); tap_check 0 "${line#ok [0-9]* - }" ;;
    "not ok "*) TAP_RETOLD=$((TAP_RETOLD + 1)); tap_check 1 "${line#not ok [0-9]* - }" ;;
    "1.."*) ;;
    *) tap_diag "$line" ;;
    esac
  done <<<"$1"
}

tap_is() {
  local got=$1 want=$2 desc=$3
  if [ "$got" == "$want" ]; then
    _tap_result 0 "$desc"
    return 0
  fi
  _tap_result 1 "$desc"
  _tap_diag_output got "$got"
  [ -n "$got" ] || printf '#   got: (empty)\n'
  _tap_diag_output want "$want"
  [ -n "$want" ] || printf '#   want: (empty)\n'
  return 1
}

tap_like() {
  local got=$1 re=$2 desc=$3
  if [[ $got =~ $re ]]; then
    _tap_result 0 "$desc"
    return 0
  fi
  _tap_result 1 "$desc"
  printf '#   regex: %s\n' "$re"
  _tap_diag_output got "$got"
  [ -n "$got" ] || printf '#   got: (empty)\n'
  return 1
}

tap_unlike() {
  local got=$1 re=$2 desc=$3
  if ! [[ $got =~ $re ]]; then
    _tap_result 0 "$desc"
    return 0
  fi
  _tap_result 1 "$desc"
  printf '#   should not match: %s\n' "$re"
  _tap_diag_output got "$got"
  return 1
}

tap_skip() {
  local desc=$1 reason=${2:-}
  local _tap_d d
  _tap_n=$((_tap_n + 1))
  _tap_desc "$desc"
  d=$_tap_d
  _tap_desc "$reason"
  printf 'ok %d - %s # SKIP %s\n' "$_tap_n" "$d" "$_tap_d"
}

tap_skip_all() {
  if [ "$_tap_n" -gt 0 ]; then
    tap_skip "rest of ${0##*/}" "$1"
    tap_done
  fi
  printf '1..0 # SKIP %s\n' "$1"
  exit 0
}

# tap_pytest OUTPUT RC MIN: pytest's -rA summary (OUTPUT, its exit status
# RC) re-told as one TAP point a test; the whole output as a diagnostic when
# one failed; fewer than MIN tests is a failure (a suite that did not run).
tap_pytest() {
  local out=$1 rc=$2 min=$3 n=0 failed=0 line
  while IFS= read -r line; do
    case $line in
    "PASSED "*) n=$((n + 1)); tap_check 0 "${line#PASSED }" ;;
    "FAILED "* | "ERROR "*) n=$((n + 1)); failed=1; tap_check 1 "$line" ;;
    "SKIPPED "*) n=$((n + 1)); tap_skip "${line#SKIPPED }" "skipped by pytest" ;;
    esac
  done <<<"$out"
  [ "$failed" -eq 0 ] && [ "$rc" -eq 0 ] || tap_diag "$out"
  tap_check $((n < min)) "pytest ran the whole selection ($n tests, at least $min)"
  tap_check "$rc" "pytest exits 0"
}

tap_done() {
  if [ "$_tap_n" -eq 0 ]; then
    # A script that asserted nothing is broken, not green.
    _tap_result 1 "${0##*/} made no assertion"
  fi
  printf '1..%d\n' "$_tap_n"
  [ -z "$_tap_tmp" ] || rm -rf "$_tap_tmp"
  [ "$_tap_failed" -eq 0 ] || exit 1
  exit 0
}

# Copy the hutch under test to DEST (a file name).  When it is the musl
# front end, the hutch-full it hands its other verbs to goes beside DEST:
# the front end looks for it there.
hutch_copy_bin() {
  cp "$HUTCH_BIN" "$1" || return 1
  local full
  full=$(dirname "$HUTCH_BIN")/hutch-full
  if [ -x "$full" ] && ! cmp -s "$full" "$HUTCH_BIN"; then
    cp "$full" "$(dirname "$1")/hutch-full" || return 1
  fi
}

# The user without a subordinate id range (tests/setup-host.sh makes it):
# sets nosub to its name, or says why it cannot be used (a point named
# DESC, skipped) and returns 1: this run cannot switch to it (rootless),
# or it is missing or has a range.
hutch_nosub_user() { # DESC
  nosub=${HUTCH_TEST_NOSUB_USER:-hutchnosub}
  if [ "$(id -u)" -ne 0 ]; then
    tap_skip "[$nosub] $1" "runs in the root half (it switches users)"
  elif ! id -u "$nosub" >/dev/null 2>&1; then
    tap_skip "[$nosub] $1" "user $nosub does not exist: run tests/setup-host.sh"
  elif grep -q "^$nosub:" /etc/subuid 2>/dev/null; then
    tap_skip "[$nosub] $1" "$nosub has an /etc/subuid entry"
  else
    return 0
  fi
  return 1
}

# A directory DIR (world-readable: USER must reach it) where USER runs a
# copy of the hutch under test with its own state, store and policy, and
# the busybox tar TAR as DIR/busybox.tar; hutch_as_nosub runs a command
# there as USER, in a clean environment.
hutch_nosub_prepare() { # DIR USER TAR
  mkdir -p "$1/state" "$1/store" "$1/policy" &&
    hutch_copy_bin "$1/hutch" &&
    cp "$HUTCH_POLICY" "$1/policy/default.policy" &&
    cp "$(dirname "$HUTCH_POLICY")/seccomp.json" "$1/policy/" &&
    cp "$3" "$1/busybox.tar" &&
    chown "$2" "$1/state" "$1/store" &&
    chmod -R a+rX "$1"
}
hutch_as_nosub() { # DIR USER CMD...
  local n=$1 user=$2
  shift 2
  setpriv --reuid="$user" --regid="$user" --init-groups env -i PATH=/usr/bin:/bin HOME="$n" \
    HUTCH_STATE_DIR="$n/state" HUTCH_STORE="$n/store" HUTCH_POLICY="$n/policy/default.policy" "$@"
}

# Sets helper to the path of the test helper tests/helpers/NAME; without
# it, a failing point (it must be built) ends the script.
hutch_need_helper() { # NAME
  helper=$HUTCH_BUILDDIR/tests/helpers/$1
  if [ ! -x "$helper" ]; then
    tap_check 1 "tests/helpers/$1 is built ($helper)"
    tap_done
  fi
}

# The entries of state directory DIR that are some sandbox's, one per line:
# all but the user's seccomp cache key, the /30 book and the lock files, the
# archive of ended sandboxes' audit logs, and the spare emptied sandbox
# directories hutch keeps (.free-N; one that is not an empty directory is
# listed).
hutch_state_entries() {
  local e
  for e in $(ls -A "$1"); do
    case $e in
    .seccomp-cache.key | .warned-no-cgroup | net-subnets* | *.lock) continue ;;
    .audit) continue ;;
    .free-[0-9]*) [ -d "$1/$e" ] && [ ! -L "$1/$e" ] && [ -z "$(ls -A "$1/$e")" ] && continue ;;
    esac
    printf '%s\n' "$e"
  done
}

hutch_wait_until() {
  local end=$((SECONDS + $1))
  shift
  until "$@"; do
    [ "$SECONDS" -lt "$end" ] || return 1
    sleep 0.05
  done
}

hutch_best_ms() {
  local ms=$1 start again _
  shift
  for _ in 1 2; do
    start=$(date +%s%N)
    "$@" >/dev/null 2>&1
    again=$((($(date +%s%N) - start) / 1000000))
    [ "$again" -lt "$ms" ] && ms=$again
  done
  printf '%s\n' "$ms"
}

hutch_all_up() {
  printf '%s' 'touch "/up/$1"; n=0; while [ "$(ls /up | wc -l)" -lt '"$1"' ] && [ $n -lt 1200 ]; do
    sleep 0.05; n=$((n + 1)); done'
}

hutch_test_tmpdir() {
  mktemp -d "${TMPDIR:-/tmp}/hutch-test.XXXXXX"
}

# Prints the JSON digest of image NAME in $HUTCH_STORE (empty when absent).
_hutch_test_image_digest() {
  "$HUTCH_BIN" rootfs ls --json 2>/dev/null | /usr/bin/python3 -c '
import json, sys
name = sys.argv[1]
text = sys.stdin.read()
try:
    docs = [json.loads(text)]
except ValueError:
    docs = [json.loads(l) for l in text.splitlines() if l.strip().startswith("{")]
def walk(o):
    if isinstance(o, dict):
        if o.get("name") == name and isinstance(o.get("digest"), str):
            print(o["digest"]); sys.exit(0)
        for v in o.values(): walk(v)
    elif isinstance(o, list):
        for v in o: walk(v)
for d in docs: walk(d)
' "$1" 2>/dev/null
}

hutch_test_rootfs() {
  local kind=$1 tar name="hutch-test-$1" lock fd rc=0 want have
  case $kind in
  busybox) tar=$(hutch_rootfs_ensure busybox) || return 1 ;;
  debian | matplotlib | compilers)
    tar=$(hutch_rootfs_tar "$kind") || return 1
    if [ ! -s "$tar" ]; then
      echo "hutch_test_rootfs: $tar is not built: run tests/setup-host.sh as root" >&2
      return 1
    fi
    ;;
  *)
    echo "hutch_test_rootfs: unknown kind '$kind' (busybox, debian, matplotlib or compilers)" >&2
    return 1
    ;;
  esac
  # Test scripts running side by side share a store: import one at a time.
  if [ -n "${HUTCH_STORE:-}" ]; then
    mkdir -p "$(dirname "$HUTCH_STORE")"
    lock="${HUTCH_STORE%/}.import-lock"
  else
    lock="${TMPDIR:-/tmp}/hutch-test-import-$(id -u).lock"
  fi
  exec {fd}>>"$lock" || return 1
  flock "$fd"
  want=$(hutch_rootfs_digest "$tar")
  have=$(_hutch_test_image_digest "$name")
  if [ "$have" != "$want" ]; then
    if ! "$HUTCH_BIN" rootfs import "$tar" --name "$name" >&2; then
      echo "hutch_test_rootfs: importing $tar into ${HUTCH_STORE:-the default store} failed" >&2
      rc=1
    fi
  fi
  exec {fd}>&-
  [ $rc -eq 0 ] || return 1
  printf '%s\n' "$name"
}
