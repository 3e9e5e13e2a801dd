#!/bin/bash
# The process handle of hutch.h (hutch_proc_spawn/wait/signal/kill/free),
# through tests/helpers/proc-handle, a program linking the runtime library:
# its TAP points are re-told here one by one.
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

helper=$HUTCH_BUILDDIR/tests/helpers/proc-handle
[ -x "$helper" ] || tap_skip_all "$helper is not built"
img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"

out=$(timeout 300 "$helper" "$img" 2>&1)
rc=$?
n=0
while IFS= read -r line; do
  case $line in
  "ok "*) n=$((n + 1)); tap_check 0 "${line#ok [0-9]* - }" ;;
  "not ok "*) n=$((n + 1)); tap_check 1 "${line#not ok [0-9]* - }" ;;
  "1.."*) ;;
  *) tap_diag "$line" ;;
  esac
done <<<"$out"
tap_check $((n < 40)) "the helper ran all its points ($n)"
tap_check $rc "the helper exits 0"
tap_done
