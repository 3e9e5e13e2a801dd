#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A sandbox is never unreachable: hutch create SIGKILLed at any moment of
# its start leaves no init (and, with --net proxy, no proxy) that hutch ps
# does not list, and hutch rm removes what is really there.
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)

# A copy of hutch under a name of its own: every process it forks (init,
# the proxy) carries that name, so leftovers are found by name whatever
# other tests run beside this one.
name=hk9$$
name=${name:0:15}
hutch_copy_bin "$tmp/$name"
export HUTCH_STATE_DIR=$tmp/state
mkdir -m 0700 "$HUTCH_STATE_DIR"
# Zombies do not count: a container's PID 1 may never reap what it inherits.
leftovers() { ps -eo pid=,stat=,comm= | awk -v n="$name" '$3 == n && $2 !~ /^Z/ { printf "%s ", $1 }'; }
none_left() { [ -z "$(leftovers)" ]; }

# Kill create at increasing delays: before the clone, during the set-up,
# around the moment it records the sandbox, and after it handed it over.
kill9_round() { # EXTRA_ARGS...
  local delay pid
  # A start takes a few milliseconds: most of the delays fall inside it.
  for delay in 0 0 0.0005 0.001 0.0015 0.002 0.0025 0.003 0.0035 0.004 0.0045 0.005 0.006 0.007 0.008 0.010 0.015 0.030 0.100; do
    "$tmp/$name" create --rootfs "$img" "$@" >/dev/null 2>&1 &
    pid=$!
    sleep "$delay"
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
}

# A live process of ours is either a listed init or, with --net proxy, the
# proxy of a listed sandbox; none may be unlisted and unowned.  Sets listed,
# live, running (how many live ones are not listed), n_listed and n_live;
# returns 0 when that holds.
accounted() { # LABEL
  listed=$("$HUTCH_BIN" ps --json | python3 -c 'import json, sys
print(" ".join(str(s["pid"]) for s in json.load(sys.stdin) if s.get("status") == "running"))')
  live=$(leftovers)
  running=0
  for p in $live; do
    case " $listed " in *" $p "*) ;; *) running=$((running + 1)) ;; esac
  done
  n_listed=$(wc -w <<<"$listed")
  n_live=$(wc -w <<<"$live")
  if [ "$1" = proxy ]; then
    [ "$n_live" -eq $((2 * n_listed)) ]
  else
    [ "$running" -eq 0 ]
  fi
}

check_round() { # LABEL
  local listed live running n_listed n_live
  # A killed creator's init gets its parent-death signal at once, but may
  # take a while to end in a slow build: up to 20 s for it to go (a process
  # that stays unaccounted for fails below).
  hutch_wait_until 20 accounted "$1"
  if [ "$1" = proxy ]; then
    tap_is "$n_live" "$((2 * n_listed))" "$1: every live process is a listed sandbox's init or proxy"
  else
    tap_is "$running" 0 "$1: every live init is listed by hutch ps (live: $live; listed: $listed)"
  fi
  tap_ok "$1: hutch rm --all" "$HUTCH_BIN" rm --all
  hutch_wait_until 20 none_left
  tap_is "$(leftovers)" "" "$1: nothing of it runs after hutch rm --all"
  tap_is "$(hutch_state_entries "$HUTCH_STATE_DIR" | tr '\n' ' ')" "" \
    "$1: the state directory holds no sandbox"
}

kill9_round
check_round plain

if command -v python3 >/dev/null && "$HUTCH_BIN" exec --rootfs "$img" --net proxy -- true 2>/dev/null; then
  kill9_round --net proxy
  check_round proxy
else
  tap_skip "proxy: kill -9 of create with --net proxy" "--net proxy cannot start here"
fi

# A killed caller of a recorded sandbox changes nothing: it lives on.
id=$("$tmp/$name" create --rootfs "$img")
tap_ok "a sandbox created whole" test -n "$id"
tap_is "$("$HUTCH_BIN" exec --in "$id" -- echo alive)" "alive" "outlives its creator, as hutch create promises"
tap_ok "hutch rm of it" "$HUTCH_BIN" rm "$id"
hutch_wait_until 20 none_left
tap_is "$(leftovers)" "" "and nothing runs after"
tap_done
