#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch rm raced against a reset, a fork and a snapshot of the same
# sandbox, round after round, rm started at a different moment of the
# other each time.  rm holds the sandbox's state lock as they do, so it
# removes what the other left and never half of it: after each round no
# init the reset started runs on, no sandbox is left but a fork's
# children, each complete (the parent's file in it) and running, and a
# snapshot that was made holds the sandbox's file; rm itself succeeds.
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
rounds=${HUTCH_RACE_ROUNDS:-8}

json_field() { # JSON FIELD
  python3 -c 'import json, sys
try:
    v = json.loads(sys.argv[1]).get(sys.argv[2])
except ValueError:
    v = None
print(" ".join(v) if isinstance(v, list) else "" if v is None else v)' "$1" "$2"
}
listed() { "$HUTCH_BIN" ps -q | sort | tr '\n' ' '; }
# A sandbox whose layer takes a moment to copy (4 MB in 64 files), with
# the file a copy must hold.
made() {
  local id
  id=$("$HUTCH_BIN" create --rootfs "$img") || return 1
  "$HUTCH_BIN" exec --in "$id" -- sh -c 'mkdir /root/d && for i in $(seq 64); do head -c 65536 /dev/zero >/root/d/$i; done;
    echo whole >/root/f' || return 1
  echo "$id"
}
# holds_all ARGS...: a sandbox of `hutch exec ARGS` (--in ID, --rootfs
# IMAGE) has what made() wrote, all of it.
holds_all() {
  [ "$("$HUTCH_BIN" exec "$@" -- sh -c 'cat /root/f; ls /root/d | wc -l' 2>/dev/null | tr '\n' ' ')" = "whole 64 " ]
}
# The moment rm starts after the other: 0 to 40 ms, round after round.
jitter() { sleep "0.0$(($1 * 5 % 41 / 10))$(($1 * 5 % 10))"; }
# race ROUND CMD...: CMD in the background (its output in $tmp/other.out
# and .err), and `hutch rm $id` after the round's jitter; rc is CMD's
# status.  A failed rm is noted in bad.
race() {
  local i=$1 p
  shift
  "$@" >"$tmp/other.out" 2>"$tmp/other.err" &
  p=$!
  jitter "$i"
  "$HUTCH_BIN" rm "$id" 2>"$tmp/rm.err" || bad+=" [$i: rm failed: $(head -c 300 "$tmp/rm.err")]"
  wait "$p"
  rc=$?
}

# ---- rm against reset ----
bad=
for i in $(seq "$rounds"); do
  id=$(made) || { bad+=" [$i: no sandbox made]"; continue; }
  race "$i" "$HUTCH_BIN" reset --json "$id"
  pid=$(json_field "$(cat "$tmp/other.out")" pid)
  if [ "$rc" -eq 0 ] && [ -n "$pid" ] && [ "$(cat /proc/"$pid"/comm 2>/dev/null)" = hutch-init ] &&
    [ "$(sed 's/.*) //' /proc/"$pid"/stat 2>/dev/null | cut -d' ' -f1)" != Z ]; then
    bad+=" [$i: the reset's init $pid runs on]"
  fi
  [ "$rc" -eq 0 ] || grep -q "no sandbox with id\|not running" "$tmp/other.err" ||
    bad+=" [$i: the reset failed otherwise: $(head -c 300 "$tmp/other.err")]"
  [ -z "$(listed)" ] || bad+=" [$i: left listed: $(listed)]"
  [ "$rc" -eq 0 ] && resets=$((${resets:-0} + 1))
  "$HUTCH_BIN" rm -f "$id" $(listed) >/dev/null 2>&1
done
tap_is "$bad" "" "rm against reset, $rounds rounds: rm succeeds, and no init of the reset outlives it"
tap_diag "resets that finished before rm: ${resets:-0} of $rounds"

# ---- rm against fork ----
bad=
for i in $(seq "$rounds"); do
  id=$(made) || { bad+=" [$i: no sandbox made]"; continue; }
  race "$i" "$HUTCH_BIN" fork --json -n 2 "$id"
  kids=$(json_field "$(cat "$tmp/other.out")" children)
  want=$(printf '%s\n' $kids | sed '/^$/d' | sort | tr '\n' ' ')
  [ "$(listed)" = "$want" ] || bad+=" [$i: listed '$(listed)', the fork's children '$want' (fork: $rc)]"
  for k in $kids; do
    holds_all --in "$k" || bad+=" [$i: child $k is not whole]"
  done
  [ "$rc" -eq 0 ] || [ -z "$kids" ] || bad+=" [$i: a failed fork named children]"
  [ "$rc" -eq 0 ] && forks=$((${forks:-0} + 1))
  "$HUTCH_BIN" rm -f "$id" $(listed) >/dev/null 2>&1
done
tap_is "$bad" "" "rm against fork, $rounds rounds: the parent goes, a fork's children are whole, nothing else is left"
tap_diag "forks that made their children: ${forks:-0} of $rounds"

# ---- rm against snapshot ----
bad=
for i in $(seq "$rounds"); do
  id=$(made) || { bad+=" [$i: no sandbox made]"; continue; }
  race "$i" "$HUTCH_BIN" snapshot --json "$id"
  digest=$(json_field "$(cat "$tmp/other.out")" digest)
  if [ "$rc" -eq 0 ]; then
    snaps=$((${snaps:-0} + 1))
    holds_all --rootfs "$digest" || bad+=" [$i: snapshot $digest is not whole]"
    "$HUTCH_BIN" rootfs rm "$digest" >/dev/null 2>&1
  fi
  [ -z "$(listed)" ] || bad+=" [$i: left listed: $(listed)]"
  "$HUTCH_BIN" rm -f "$id" $(listed) >/dev/null 2>&1
done
tap_is "$bad" "" "rm against snapshot, $rounds rounds: a snapshot made is whole, nothing is left"
tap_diag "snapshots made before rm: ${snaps:-0} of $rounds"
tap_done
