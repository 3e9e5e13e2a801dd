#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch serve's throughput and latency on this machine: requests back to
# back from C client threads (tests/lib/serve-client.py bench: one
# connection per request, as verl's client makes) for SECONDS at each
# concurrency, for python print(1) and, where the image has g++, a C++
# hello (compile and run); requests per second, latency p50/p99 and the
# server's CPU time per request (hutch serve and every sandbox it reaped,
# from /proc/PID/stat: what sizes a node, whatever else loads this one) as
# a Markdown table.  The server runs with --max-concurrency at the highest
# concurrency asked, so nothing is refused.
#
#   bench/serve/run.sh [--image NAME] [--seconds N] [--concurrency "1 8"]
#
# Not a test: it asserts nothing.
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
hutch=${HUTCH_BIN:-$src/hutch}
image=default
seconds=20
levels="1 8"
while [ $# -gt 0 ]; do
  case $1 in
  --image) image=$2 && shift ;;
  --seconds) seconds=$2 && shift ;;
  --concurrency) levels=$2 && shift ;;
  -h | --help)
    sed -n '3,13p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "bench/serve/run.sh: unknown argument $1" >&2
    exit 2
    ;;
  esac
  shift
done
tmp=$(mktemp -d)
srv=
trap '[ -n "$srv" ] && kill "$srv" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
max=1
for c in $levels; do [ "$c" -gt "$max" ] && max=$c; done
"$hutch" serve --listen 127.0.0.1:0 --image "$image" --json --max-concurrency "$max" \
  --audit-log /dev/null >"$tmp/start" 2>"$tmp/err" &
srv=$!
url=
for _ in $(seq 600); do
  url=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["url"])' "$tmp/start" 2>/dev/null) && break
  sleep 0.1
done
[ -n "$url" ] || {
  cat "$tmp/err" >&2
  exit 1
}
langs=$(python3 -c 'import json, sys; print(" ".join(json.load(open(sys.argv[1]))["languages"]))' "$tmp/start")
cpp_hello='#include <cstdio>
int main() { std::puts("hello"); }'
# cpu_ticks: the server's CPU time so far, its reaped children's included.
cpu_ticks() { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$srv/stat"; }
echo "| program | concurrency | requests | req/s | p50 ms | p99 ms | server CPU ms/request |"
echo "|---|---:|---:|---:|---:|---:|---:|"
for lang in python cpp; do
  case " $langs " in *" $lang "*) ;; *) continue ;; esac
  code='print(1)'
  name='python `print(1)`'
  [ "$lang" = cpp ] && code=$cpp_hello && name='C++ hello (g++ -std=c++17, run)'
  for c in $levels; do
    t0=$(cpu_ticks)
    r=$(python3 "$src/tests/lib/serve-client.py" bench "$url/run_code" "$c" "$seconds" "$code" "$lang")
    t1=$(cpu_ticks)
    python3 -c 'import json, os, sys
r = json.loads(sys.argv[2])
ms = (int(sys.argv[4]) - int(sys.argv[3])) * 1000 / os.sysconf("SC_CLK_TCK") / max(r["requests"], 1)
print("| %s | %d | %d | %.1f | %s | %s | %.0f |" % (sys.argv[1], r["concurrency"], r["requests"], r["rps"], r["p50_ms"], r["p99_ms"], ms))' \
      "$name" "$r" "$t0" "$t1"
  done
done
