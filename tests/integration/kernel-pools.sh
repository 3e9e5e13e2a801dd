#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Kernel pools a sandbox shares with the host or with its user: a sandbox
# takes all it can of each (tests/helpers/kernel-pool, holding what it got
# until its stdin ends) while the host, as the same user, asks for one unit
# of the same pool.  The host's share must be left alone: native AIO is
# refused (fs.aio-max-nr is one pool for the whole host), and the per-user
# pools (inotify, pending signals, POSIX message queues) are bounded per
# sandbox by its own user namespace's limits (hutch-policy(5), "KERNEL
# POOLS"), and the ptys that all devpts instances share by each one's own
# maximum.
. "$(dirname "$0")/../lib/tap.sh"

hutch_need_helper kernel-pool
img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
hx() { "$HUTCH_BIN" exec --rootfs "$img" --no-cgroups --bind "$helper:/usr/bin/kernel-pool:ro" "$@"; }

# hold_start ARGS...: kernel-pool ARGS in a sandbox, in the background,
# until its "took" line; hold_end lets it go.  $took is "N WHY".
hold_start() {
  rm -f "$tmp/hold.in" "$tmp/hold.out"
  mkfifo "$tmp/hold.in"
  hx -- kernel-pool "$@" <"$tmp/hold.in" >"$tmp/hold.out" 2>"$tmp/hold.err" &
  hold_pid=$!
  exec 9>"$tmp/hold.in"
  hutch_wait_until 60 grep -q '^took ' "$tmp/hold.out"
  took=$(sed -n 's/^took //p' "$tmp/hold.out")
  [ -n "$took" ] || tap_diag "kernel-pool $*: $(cat "$tmp/hold.err")"
}
hold_end() {
  exec 9>&-
  wait "$hold_pid"
}
took_n() { printf '%s\n' "${took%% *}"; }

# ---- native AIO: one pool for the whole host ----
hold_start aio
tap_is "$took" "0 ENOSYS" "a sandbox's io_setup is refused (ENOSYS): it takes no AIO context"
tap_is "$("$helper" --once aio)" OK "the host's io_setup works while the sandbox tries to take the pool"
hold_end

# ---- inotify instances: per user, 128 by default ----
if [ "$("$helper" --once inotify)" != OK ]; then
  tap_skip "inotify instances" "this user has no inotify instance free on the host"
else
  hold_start inotify
  tap_like "$took" "^[0-9]+ EMFILE$" "a sandbox's inotify_init1 stops with EMFILE"
  tap_check "$([ "$(took_n)" -le 16 ] && echo 0 || echo 1)" "at 16 instances at most (took $(took_n))"
  tap_is "$("$helper" --once inotify)" OK "the user's host process can still inotify_init1"
  hold_end
fi
tap_ok "the sandbox reads its own limits" hx -- cat /proc/sys/user/max_inotify_instances \
  /proc/sys/user/max_inotify_watches /proc/sys/user/max_fanotify_groups /proc/sys/user/max_fanotify_marks
tap_is "$(printf '%s' "$tap_stdout" | tr '\n' ' ')" "16 8192 16 8192" \
  "/proc/sys/user: 16 inotify instances, 8192 watches, 16 fanotify groups, 8192 marks"
tap_fails "which it cannot raise" hx -- sh -c 'echo 1000 >/proc/sys/user/max_inotify_instances'

# ---- inotify watches: per user; one sandbox gets 8192 ----
hold_start inotify-watches --max 8300 --dir /tmp
tap_is "$took" "8192 ENOSPC" "a sandbox's inotify watches stop at 8192 (ENOSPC)"
hold_end

# ---- pending signals: a POSIX timer holds one (RLIMIT_SIGPENDING, per user) ----
if [ "$("$helper" --once timers)" != OK ]; then
  tap_skip "pending signals" "this user has no pending signal free on the host"
else
  hold_start timers --max 200000
  tap_like "$took" "^[0-9]+ EAGAIN$" "a sandbox's timer_create stops with EAGAIN"
  tap_check "$([ "$(took_n)" -le 1024 ] && echo 0 || echo 1)" "at 1024 timers at most (took $(took_n))"
  tap_is "$("$helper" --once timers)" OK "the user's host process can still timer_create"
  hold_end
fi
tap_ok "ulimit -i" hx -- sh -c 'ulimit -i; ulimit -q'
tap_is "$(printf '%s' "$tap_stdout" | tr '\n' ' ')" "1024 131072" \
  "RLIMIT_SIGPENDING 1024, RLIMIT_MSGQUEUE 128 KiB in the sandbox"

# ---- POSIX message queues: bytes per user (RLIMIT_MSGQUEUE, 800 KiB by default) ----
if [ "$("$helper" --once mqueue)" != OK ]; then
  tap_skip "POSIX message queues" "this user has no message queue space free on the host"
else
  hold_start mqueue
  tap_is "$took" "1 EMFILE" "a sandbox gets one message queue of the default size (82 KiB), then EMFILE"
  tap_is "$("$helper" --once mqueue)" OK "the user's host process can still mq_open"
  hold_end
fi

# ---- ptys: kernel.pty.max (4096) less the host's reserve (1024) is one
# pool for every devpts instance but the host's: each sandbox's own ----
hold_start ptys --procs 4
tap_is "$took" "64 ENOSPC" "a sandbox's devpts holds 64 ptys at most (ENOSPC)"
tap_is "$(hx -- kernel-pool --once ptys)" OK "another sandbox still gets a pty"
hold_end

rm -rf "$tmp"
tap_done
