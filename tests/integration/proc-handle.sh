#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
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
tap_retell "$out"
tap_check $((TAP_RETOLD < 40)) "the helper ran all its points ($TAP_RETOLD)"
tap_check $rc "the helper exits 0"
tap_done
