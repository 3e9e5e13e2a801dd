#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Real cgroup v2 limits, proven in a VM this script boots (tests/vm/): the
# development machines' own cgroups are a hybrid setup that must not be
# touched.  One boot runs tests/vm/cgroup-suite.sh as root inside the VM;
# the suite covers root, an unprivileged user with a delegated subtree, and
# that user without delegation.  Its TAP is this script's TAP.
#
# Skips (saying why) without qemu-system-x86_64 or a Debian kernel package
# (tests/setup-host.sh installs qemu-system-x86 and linux-image-amd64).
. "$(dirname "$0")/../lib/tap.sh"

if [ "$HUTCH_TEST_MODE" = rootless ] && [ -n "${HUTCH_TEST_USER:-}" ]; then
  # A root run of run-integration already booted the VM, whose suite runs
  # both as root and as an unprivileged user inside.
  tap_skip_all "the VM suite runs once per test run, in its root half (it covers an unprivileged user inside)"
fi
command -v qemu-system-x86_64 >/dev/null ||
  tap_skip_all "cgroup v2 VM suite: qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"
kernel=$(ls /boot/vmlinuz-* 2>/dev/null | sort -V | tail -n 1)
[ -n "$kernel" ] && [ -r "$kernel" ] ||
  tap_skip_all "cgroup v2 VM suite: no readable /boot/vmlinuz-* (apt-get install linux-image-amd64)"
[ -d "/lib/modules/${kernel##*/vmlinuz-}" ] ||
  tap_skip_all "cgroup v2 VM suite: no /lib/modules for $kernel"
[ -x /bin/busybox ] && LC_ALL=C ldd /bin/busybox 2>&1 | grep -q 'not a dynamic executable' ||
  tap_skip_all "cgroup v2 VM suite: no static /bin/busybox (apt-get install busybox-static)"
# The guest sees the host's root read-only, with /tmp and /run of its own:
# trees under those are shared with it one by one (run-vm, HUTCH_VM_SHARE).
HUTCH_VM_SHARE=
for p in "$(dirname "$(realpath "$HUTCH_BIN")")" "$(realpath "$HUTCH_SRCDIR")" "$(realpath "$HUTCH_BUILDDIR")"; do
  case $p in
  /tmp/* | /run/*)
    case ":$HUTCH_VM_SHARE:" in *":$p:"*) ;; *) HUTCH_VM_SHARE=${HUTCH_VM_SHARE:+$HUTCH_VM_SHARE:}$p ;; esac
    ;;
  esac
done
export HUTCH_VM_SHARE
tar=$(hutch_rootfs_ensure busybox) || tap_skip_all "busybox test rootfs unavailable"
user=${HUTCH_VM_USER:-${HUTCH_TEST_USER:-hutchtest}}
id -u "$user" >/dev/null 2>&1 || tap_skip_all "cgroup v2 VM suite: no user $user to run as inside (tests/setup-host.sh)"

# Under TCG the run takes one to several minutes, depending on what else the
# host runs beside it (make check -j2 does): run-vm tells a hang from that by
# the guest's output standing still, and the whole run is bounded a minute
# short of run-integration's own limit, so that its diagnosis is the one seen.
if [ -z "${HUTCH_VM_TIMEOUT:-}" ] && [ "${HUTCH_TEST_TIMEOUT:-0}" -gt 120 ]; then
  export HUTCH_VM_TIMEOUT=$((HUTCH_TEST_TIMEOUT - 60))
fi
diag=$(mktemp) || exit 1
trap 'rm -f "$diag"' EXIT
out=$("$HUTCH_SRCDIR/tests/vm/run-vm" "$HUTCH_SRCDIR/tests/vm/cgroup-suite.sh" \
  HUTCH_BIN="$HUTCH_BIN" HUTCH_POLICY="$HUTCH_POLICY" HUTCH_SRCDIR="$HUTCH_SRCDIR" \
  HUTCH_TEST_BUSYBOX="$tar" HUTCH_VM_USER="$user" HUTCH_VM_BENCH="${HUTCH_VM_BENCH:-0}" \
  HUTCH_TEST_DENY="$HUTCH_BUILDDIR/tests/helpers/deny-userns" 2>"$diag")
rc=$?
if printf '%s\n' "$out" | grep -qE '^1\.\.[0-9]+'; then
  cat "$diag" >&2 # run-vm's line: how long, which accelerator
  printf '%s\n' "$out"
  exit 0
fi
# No plan: the results so far and run-vm's diagnosis (console, guest stderr)
# go into the TAP stream as comments, where a CI summary shows them.
printf '%s\n' "$out" | sed 's/^/# /'
sed 's/^/# /' "$diag"
tap_check 1 "the VM suite ran to its end (run-vm status $rc: 3 no boot, 124 timeout or hang)"
tap_done
