#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch snapshot against podman commit, on this machine: a running sandbox
# (a container) of the busybox test rootfs has written one file of
# random bytes (1 MB, 100 MB, 1 GB by default) in /root, and is kept as an
# image.  Each size is timed RUNS times for each tool, the image removed
# after each run; the table gives the medians (wall clock of the command),
# hutch's time paused (from its --json), and, as the floor any copy has
# here, `cp` of the same bytes from tmpfs into a directory beside the store.
#
#   bench/live/snapshot.sh [--runs N] [--sizes "1 100 1024"] [--hutch BIN] [--no-podman]
#
# Not a test: it asserts nothing and takes minutes.  Run as root for the
# podman column (rootful podman, storage in /var/lib/containers).
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
runs=5
sizes="1 100 1024"
hutch=${HUTCH_BIN:-$src/hutch}
podman=1
while [ $# -gt 0 ]; do
  case $1 in
  --runs) runs=$2 && shift ;;
  --sizes) sizes=$2 && shift ;;
  --hutch) hutch=$2 && shift ;;
  --no-podman) podman=0 ;;
  -h | --help)
    sed -n '3,14p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *) echo "snapshot.sh: unknown argument $1" >&2 && exit 2 ;;
  esac
  shift
done
. "$src/tests/lib/rootfs.sh"
tar=$(hutch_rootfs_ensure busybox) || exit 1

work=$(mktemp -d "${BENCH_DIR:-/var/tmp}/hutch-bench-snapshot.XXXXXX")
export HUTCH_STORE=$work/store HUTCH_STATE_DIR=$work/state
ids=()
cleanup() {
  local i
  for i in "${ids[@]}"; do "$hutch" rm -f "$i" >/dev/null 2>&1; done
  [ "$podman" = 1 ] && podman rm -f hutch-bench-snap >/dev/null 2>&1
  [ "$podman" = 1 ] && podman rmi -f localhost/hutch-bench-bb >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
log() { printf 'bench: %s\n' "$*" >&2; }
now_ms() { date +%s%N | awk '{printf "%.3f", $1 / 1e6}'; }
median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
field() { python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }

"$hutch" rootfs import "$tar" --name bench-bb >/dev/null 2>&1 || { log "import of $tar failed" && exit 1; }
if [ "$podman" = 1 ]; then
  # This host's hard limits are what podman's defaults ask for, which runc
  # then fails to set (EPERM): lower ones are asked instead.
  ul=(--ulimit nofile=1024:1024 --ulimit nproc=4096:4096)
  if ! podman import "$tar" localhost/hutch-bench-bb >/dev/null 2>&1 ||
    ! err=$(podman run --rm "${ul[@]}" localhost/hutch-bench-bb true 2>&1); then
    log "podman cannot run here: ${err:-import failed}"
    podman=0
  fi
fi

printf '| layer | hutch snapshot (median ms) | of it paused (ms) | hutch MB/s | podman commit (median ms) | podman / hutch | cp tmpfs → store fs (ms) |\n'
printf '|---|---|---|---|---|---|---|\n'
for mb in $sizes; do
  id=$("$hutch" create --rootfs bench-bb --disk $((mb * 2 + 256))M 2>/dev/null) || { log "create failed" && exit 1; }
  ids+=("$id")
  "$hutch" exec --in "$id" -- sh -c "head -c $((mb * 1048576)) /dev/urandom >/root/f" || exit 1
  h=() p=()
  for ((r = 0; r < runs; r++)); do
    t0=$(now_ms)
    out=$("$hutch" snapshot --json "$id") || { log "hutch snapshot failed" && exit 1; }
    t1=$(now_ms)
    h+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')")
    p+=("$(field "$out" paused_ms)")
    "$hutch" rootfs rm "$(field "$out" digest)" >/dev/null
  done
  "$hutch" rm "$id" >/dev/null
  hm=$(printf '%s\n' "${h[@]}" | median)
  pm=$(printf '%s\n' "${p[@]}" | median)
  log "$mb MB: hutch ${h[*]} ms (paused ${p[*]})"
  # The floor: the same bytes copied from tmpfs to the store's filesystem.
  c=()
  shm=$(mktemp -d /dev/shm/hutch-bench.XXXXXX)
  head -c $((mb * 1048576)) /dev/urandom >"$shm/f"
  for ((r = 0; r < runs; r++)); do
    t0=$(now_ms)
    cp "$shm/f" "$work/cp-f"
    t1=$(now_ms)
    c+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')")
    rm -f "$work/cp-f"
  done
  rm -rf "$shm"
  cm=$(printf '%s\n' "${c[@]}" | median)
  pdm="n/a" ratio="n/a"
  if [ "$podman" = 1 ]; then
    pd=()
    podman run -d "${ul[@]}" --name hutch-bench-snap localhost/hutch-bench-bb sleep 100000 >/dev/null &&
      podman exec hutch-bench-snap sh -c "head -c $((mb * 1048576)) /dev/urandom >/root/f"
    for ((r = 0; r < runs; r++)); do
      t0=$(now_ms)
      img=$(podman commit --pause=true hutch-bench-snap 2>/dev/null | tail -1)
      t1=$(now_ms)
      pd+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {print b - a}')")
      podman rmi -f "$img" >/dev/null 2>&1
    done
    podman rm -f -t 0 hutch-bench-snap >/dev/null 2>&1
    pdm=$(printf '%s\n' "${pd[@]}" | median)
    ratio=$(awk -v a="$pdm" -v b="$hm" 'BEGIN {printf "%.1f", a / b}')
    log "$mb MB: podman ${pd[*]} ms"
  fi
  mbs=$(awk -v m="$mb" -v t="$hm" 'BEGIN {printf "%.0f", m * 1048.576 / t}')
  printf '| %s MB | %.1f | %.1f | %s | %s | %s | %.1f |\n' "$mb" "$hm" "$pm" "$mbs" "$pdm" "$ratio" "$cm"
done
