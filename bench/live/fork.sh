#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch fork against a plain hutch create of the same image, on this
# machine: a running sandbox of the busybox test rootfs has written a small
# layer (by default 1 MB in one file and 100 small files in /root) and is
# forked with -n 1 and -n 4; each round also times a plain `hutch create`
# of the image, the three taking turns so that drift in the machine's speed
# spreads over them.  The table gives the medians of RUNS rounds: the wall
# clock of the command, per child, that per child against create, and how
# long the parent was paused (its --json).  The children are removed after
# each round, untimed.
#
#   bench/live/fork.sh [--runs N] [--mb N] [--files N] [--hutch BIN]
#
# Not a test: it asserts nothing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
runs=11
mb=1
files=100
hutch=${HUTCH_BIN:-$src/hutch}
while [ $# -gt 0 ]; do
  case $1 in
  --runs) runs=$2 && shift ;;
  --mb) mb=$2 && shift ;;
  --files) files=$2 && shift ;;
  --hutch) hutch=$2 && shift ;;
  -h | --help)
    sed -n '3,14p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *) echo "fork.sh: unknown argument $1" >&2 && exit 2 ;;
  esac
  shift
done
. "$src/tests/lib/rootfs.sh"
tar=$(hutch_rootfs_ensure busybox) || exit 1

work=$(mktemp -d "${BENCH_DIR:-/var/tmp}/hutch-bench-fork.XXXXXX")
export HUTCH_STORE=$work/store HUTCH_STATE_DIR=$work/state
cleanup() {
  "$hutch" rm -f --all >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT
log() { printf 'bench: %s\n' "$*" >&2; }
median() { sort -g | awk '{v[NR] = $1} END {if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
field() { python3 -c 'import json, sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"; }
# timed VAR CMD...: CMD's output in $out, its wall clock (ms) appended to
# the array VAR; bash's own clock, so no process of the harness's is timed.
timed() {
  local -n acc=$1
  shift
  local t0 t1
  t0=$EPOCHREALTIME
  "$@" >"$work/out" || { log "$* failed" && exit 1; }
  t1=$EPOCHREALTIME
  out=$(<"$work/out")
  acc+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {print (b - a) * 1000}')")
}

"$hutch" rootfs import "$tar" --name bench-bb >/dev/null 2>&1 || { log "import of $tar failed" && exit 1; }
parent=$("$hutch" create --rootfs bench-bb --name bench-parent 2>/dev/null) || { log "create failed" && exit 1; }
"$hutch" exec --in "$parent" -- sh -c "head -c $((mb * 1048576)) /dev/urandom >/root/f && mkdir /root/small &&
  i=0; while [ \$i -lt $files ]; do echo \$i >/root/small/\$i; i=\$((i + 1)); done" || exit 1
# A first one of each, untimed: the caches warm.
"$hutch" rm -f "$("$hutch" create --rootfs bench-bb 2>/dev/null)" >/dev/null
"$hutch" rm -f "$("$hutch" fork "$parent")" >/dev/null

create=() f1=() f4=() p1=() p4=()
for ((r = 0; r < runs; r++)); do
  timed create "$hutch" create --rootfs bench-bb
  made=("$out")
  timed f1 "$hutch" fork --json "$parent"
  p1+=("$(field "$out" paused_ms)")
  made+=($(python3 -c 'import json, sys; print(" ".join(json.loads(sys.argv[1])["children"]))' "$out"))
  timed f4 "$hutch" fork --json -n 4 "$parent"
  p4+=("$(field "$out" paused_ms)")
  made+=($(python3 -c 'import json, sys; print(" ".join(json.loads(sys.argv[1])["children"]))' "$out"))
  "$hutch" rm -f "${made[@]}" >/dev/null 2>&1
done

c=$(printf '%s\n' "${create[@]}" | median)
m1=$(printf '%s\n' "${f1[@]}" | median)
m4=$(printf '%s\n' "${f4[@]}" | median)
printf '| %s MB + %s files, %s rounds | median ms | per child (ms) | per child / create | parent paused (median ms) |\n' \
  "$mb" "$files" "$runs"
printf '|---|---:|---:|---:|---:|\n'
printf '| hutch create | %.1f | %.1f | 1.00 | - |\n' "$c" "$c"
awk -v m="$m1" -v c="$c" -v p="$(printf '%s\n' "${p1[@]}" | median)" \
  'BEGIN {printf "| hutch fork -n 1 | %.1f | %.1f | %.2f | %.1f |\n", m, m, m / c, p}'
awk -v m="$m4" -v c="$c" -v p="$(printf '%s\n' "${p4[@]}" | median)" \
  'BEGIN {printf "| hutch fork -n 4 | %.1f | %.1f | %.2f | %.1f |\n", m, m / 4, m / 4 / c, p}'
