#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The latency of returning a live sandbox to its image's state, with a
# small writable layer (FILES files of 1 KiB written before each round,
# outside the timing) and a few background processes:
#   - hutch reset ID: the whole command (process start, open, reset, print),
#     and the reset alone as the command measures it (--json seconds);
#   - hutch rm ID + hutch create: a new sandbox instead (a new id);
#   - podman restart -t 0, and podman rm -f + podman run -d, over the same
#     root filesystem imported into podman, where podman works here.
# Medians (and min/max) of ROUNDS rounds, in ms, as a Markdown table.
# Usage: bench/live/reset.sh [ROUNDS] [FILES]  (HUTCH: the hutch binary;
# the busybox test image is imported into a store of its own).
set -u
rounds=${1:-30}
files=${2:-100}
srcdir=$(cd "$(dirname "$0")/../.." && pwd)
hutch=${HUTCH:-$srcdir/hutch}
tar=${BUSYBOX_TAR:-$(find /var/tmp/hutch-test-cache -maxdepth 1 -name "busybox-*.tar" 2>/dev/null | head -1)}
[ -x "$hutch" ] || { echo "reset.sh: no hutch binary at $hutch (set HUTCH)" >&2; exit 1; }
[ -f "$tar" ] || { echo "reset.sh: no busybox rootfs tar (set BUSYBOX_TAR; tests/setup-host.sh makes one)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/hutch-bench-reset.XXXXXX")
export HUTCH_STORE=$work/store HUTCH_STATE_DIR=$work/state
cleanup() {
  "$hutch" rm --all >/dev/null 2>&1
  if command -v podman >/dev/null; then
    podman rm -f hutch-bench-reset >/dev/null 2>&1
    podman rmi -f hutch-bench-busybox >/dev/null 2>&1
  fi
  rm -rf "$work"
}
trap cleanup EXIT
"$hutch" rootfs import "$tar" --name bb >/dev/null || exit 1

now_ns() { date +%s%N; }
dirty() { # ID: a small layer and processes to clear
  "$hutch" exec --in "$1" -- sh -c "i=0; while [ \$i -lt $files ]; do head -c 1024 /dev/zero >/root/f\$i; i=\$((i + 1)); done;
    echo t >/tmp/t; echo s >/dev/shm/s; sleep 1000 >/dev/null 2>&1 & sleep 1001 >/dev/null 2>&1 &" >/dev/null
}
stats() { # LABEL VALUES...: one table row (median, min, max)
  local label=$1
  shift
  printf '%s\n' "$@" | sort -g | awk -v l="$label" '{v[NR] = $1} END {
    m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "| %s | %.2f | %.2f | %.2f | %d |\n", l, m, v[1], v[NR], NR}'
}

cli=() lib=() recreate=() pod_restart=() pod_rerun=()
id=$("$hutch" create --rootfs bb 2>/dev/null) || exit 1
for ((r = 0; r < rounds; r++)); do
  dirty "$id"
  t0=$(now_ns)
  out=$("$hutch" reset --json "$id") || exit 1
  t1=$(now_ns)
  cli+=("$(((t1 - t0) / 1000))e-3")
  lib+=("$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["seconds"] * 1000)' "$out")")
  dirty "$id"
  t0=$(now_ns)
  "$hutch" rm "$id" >/dev/null && id=$("$hutch" create --rootfs bb 2>/dev/null) || exit 1
  t1=$(now_ns)
  recreate+=("$(((t1 - t0) / 1000))e-3")
done

# runc here may not raise RLIMIT_NOFILE past the caller's hard limit,
# which podman's default asks for: the container gets limits it can set.
pod_opts=(--network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
podman_note=
command -v podman >/dev/null && podman rm -f hutch-bench-reset >/dev/null 2>&1
if command -v podman >/dev/null && podman import "$tar" hutch-bench-busybox >/dev/null 2>&1 &&
  podman run -d --name hutch-bench-reset "${pod_opts[@]}" hutch-bench-busybox sleep 100000 >/dev/null 2>&1; then
  for ((r = 0; r < rounds; r++)); do
    podman exec hutch-bench-reset sh -c 'echo t >/tmp/t' >/dev/null 2>&1
    t0=$(now_ns)
    podman restart -t 0 hutch-bench-reset >/dev/null 2>&1 || { podman_note="podman restart failed"; break; }
    t1=$(now_ns)
    pod_restart+=("$(((t1 - t0) / 1000))e-3")
    t0=$(now_ns)
    podman rm -f -t 0 hutch-bench-reset >/dev/null 2>&1 &&
      podman run -d --name hutch-bench-reset "${pod_opts[@]}" hutch-bench-busybox sleep 100000 >/dev/null 2>&1 ||
      { podman_note="podman rm + run failed"; break; }
    t1=$(now_ns)
    pod_rerun+=("$(((t1 - t0) / 1000))e-3")
  done
else
  podman_note="podman does not run a container here"
fi

printf '%s, %s rounds, %s files of 1 KiB and 2 processes per round, load average %s\n\n' \
  "$(uname -r)" "$rounds" "$files" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '| what | median ms | min ms | max ms | rounds |\n|---|---|---|---|---|\n'
stats "hutch reset (the reset, as --json times it)" "${lib[@]}"
stats "hutch reset (the whole command)" "${cli[@]}"
stats "hutch rm + hutch create" "${recreate[@]}"
[ ${#pod_restart[@]} -gt 0 ] && stats "podman restart -t 0" "${pod_restart[@]}"
[ ${#pod_rerun[@]} -gt 0 ] && stats "podman rm -f + podman run -d" "${pod_rerun[@]}"
[ -n "$podman_note" ] && printf '\n%s\n' "$podman_note"
exit 0
