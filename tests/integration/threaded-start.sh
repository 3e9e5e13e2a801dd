#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Sandboxes started from a program with other threads (the Python package,
# any embedder): a thread holding malloc's lock at the moment the sandbox's
# first process is made must not leave that process waiting for it forever.
# tests/helpers/threaded-start brings a malloc whose lock a thread holds
# most of the time, and starts sandboxes in a loop; a hang ends in its alarm.
# A sandbox tied to the thread that created it still dies with that thread.
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

helper=$HUTCH_BUILDDIR/tests/helpers/threaded-start
[ -x "$helper" ] || tap_skip_all "$helper is not built"
img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
# The helper brings its own malloc; AddressSanitizer's runtime replaces
# malloc before main: the two cannot share a process.
ldd "$helper" 2>/dev/null | grep -q libasan && tap_skip_all "the helper's own malloc cannot run under AddressSanitizer"

out=$(timeout 300 "$helper" "$img" 20 2>&1)
rc=$?
[ "$rc" = 77 ] && tap_skip_all "${out##*threaded-start: }"
tap_retell "$out"
tap_check $((TAP_RETOLD < 3)) "the helper ran all its points ($TAP_RETOLD)"
tap_check $rc "the helper exits 0"
tap_done
