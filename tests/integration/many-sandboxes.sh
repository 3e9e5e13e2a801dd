#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Many live sandboxes at once: 200 from `hutch create`, all alive together,
# each answering `exec --in`, then all removed with nothing left behind
# (no init, no state directory).  bench/many-sandboxes does the same for
# 10,000 and measures it.
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
n=${HUTCH_TEST_SANDBOXES:-200}

ids=()
failed=
for ((i = 0; i < n; i++)); do
  if ! id=$("$HUTCH_BIN" create --rootfs "$img" 2>"$HUTCH_STATE_DIR.err"); then
    failed="create #$i: $(tail -1 "$HUTCH_STATE_DIR.err")"
    break
  fi
  ids+=("$id")
done
tap_is "${#ids[@]}" "$n" "$n sandboxes created${failed:+ ($failed)}"

ps_json=$("$HUTCH_BIN" ps --json)
pids=$(printf '%s' "$ps_json" | python3 -c '
import json, sys
want = set(sys.argv[1:])
for s in json.load(sys.stdin):
    if s["id"] in want and s["status"] == "running":
        print(s["pid"])' "${ids[@]}")
tap_is "$(printf '%s\n' "$pids" | grep -c .)" "$n" "hutch ps lists all $n as running"
tap_is "$(printf '%s\n' "$pids" | sort -u | grep -c .)" "$n" "each with an init of its own"

bad=0 first=
for id in "${ids[@]}"; do
  # The command's pid in the sandbox's own pid namespace (init is 1).
  out=$("$HUTCH_BIN" exec --in "$id" -- sh -c 'echo $$' 2>&1)
  if ! [[ $out =~ ^[0-9]+$ ]] || [ "$out" -le 1 ]; then
    bad=$((bad + 1))
    [ -n "$first" ] || first="$id: $out"
  fi
done
tap_is "$bad" 0 "every one of them answers exec --in while all are alive${first:+ (first failure: $first)}"

# Each init's state and start time (fields 3 and 22 of its stat): on a busy
# machine its pid may be another process's by the time it is looked at
# again.
# Read in bash itself: a sed and an awk a sandbox were most of the test's
# processes.  Sets state and start, empty when the pid is gone.
stat_of() {
  local line f
  state= start=
  { IFS= read -r line <"/proc/$1/stat"; } 2>/dev/null || return 0
  read -ra f <<<"${line##*) }"
  state=${f[0]} start=${f[19]}
}
declare -A began
for pid in $pids; do
  stat_of "$pid"
  began[$pid]=$start
done
tap_ok "hutch rm of all $n at once" "$HUTCH_BIN" rm "${ids[@]}"
left=0
for pid in $pids; do
  # Gone, a zombie waiting for whichever process adopted it, or another
  # process that has its pid since.
  stat_of "$pid"
  if [ -n "$state" ] && [ "$state" != Z ] && [ "$start" = "${began[$pid]}" ]; then
    left=$((left + 1))
  fi
done
tap_is "$left" 0 "no init is left running"
tap_is "$(find "$HUTCH_STATE_DIR" -mindepth 1 -maxdepth 1 ! -name '.*' | wc -l)" 0 "no state directory is left"
tap_ok "hutch ps" "$HUTCH_BIN" ps --json
tap_is "$tap_stdout" "[]" "lists none"
rm -f "$HUTCH_STATE_DIR.err"
tap_done
