#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The seccomp allowlist inside a real sandbox: tests/helpers/try-syscall makes
# each call and prints how it ended; refused calls must end with the errno
# of policies/seccomp.json, ordinary ones must work.  Also: a policy that
# cannot be compiled starts no sandbox, and the compiled program is cached.
. "$(dirname "$0")/../lib/tap.sh"

hutch_need_helper try-syscall
img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
if [ -z "${HUTCH_CACHE_DIR:-}" ]; then
  HUTCH_CACHE_DIR=$tmp/cache
  export HUTCH_CACHE_DIR
fi
hx() { "$HUTCH_BIN" exec --rootfs "$img" --bind "$helper:/usr/bin/try-syscall:ro" "$@"; }

# case -> the one word try-syscall must print inside the sandbox
declare -A want=(
  [mount]=EPERM [umount2]=EPERM [pivot_root]=EPERM [chroot]=EPERM
  [unshare]=EPERM [setns]=EPERM [clone-newuser]=EPERM [clone-newns]=EPERM
  [clone3]=ENOSYS
  [bpf]=EPERM [keyctl]=EPERM [add_key]=EPERM [request_key]=EPERM
  [io_uring_setup]=EPERM [userfaultfd]=EPERM [perf_event_open]=EPERM
  [io_setup]=ENOSYS [io_submit]=ENOSYS [io_getevents]=ENOSYS [io_pgetevents]=ENOSYS
  [io_cancel]=ENOSYS [io_destroy]=ENOSYS
  [ptrace]=EPERM [process_vm_readv]=EPERM [process_vm_writev]=EPERM
  [kexec_load]=EPERM [init_module]=EPERM [finit_module]=EPERM [delete_module]=EPERM
  [open_by_handle_at]=EPERM [name_to_handle_at]=EPERM
  [clock_settime]=EPERM [settimeofday]=EPERM [adjtimex]=EPERM
  [swapon]=EPERM [reboot]=EPERM [acct]=EPERM [quotactl]=EPERM
  [fsopen]=ENOSYS [open_tree]=ENOSYS [move_mount]=ENOSYS [mount_setattr]=ENOSYS
  [personality-query]=OK [personality-bad]=EPERM
  [socket-packet]=EPERM [socket-raw]=EPERM [socket-raw6]=EPERM
  [socket-netlink-audit]=EPERM [socket-vsock]=EPERM [socket-alg]=EPERM
  [socket-netlink-route]=OK [socket-inet-stream]=OK [socket-inet-dgram]=OK
  [socket-inet6-stream]=OK [socket-unix]=OK
  [socket-inet-tcp]=OK [socket-inet-udp]=OK [socket-inet6-dgram]=OK
  [socket-mptcp]=EPERM [socket-mptcp6]=EPERM [socket-udplite]=EPERM
  [socketpair-unix]=OK [socketpair-inet]=EPERM
  [setsockopt-tcp-ulp]=EPERM [tiocsti]=EPERM [tiocsti-high]=EPERM [tioclinux]=EPERM [ioctl-other]=EBADF
  [getpid]=OK [clone-plain]=OK [fork]=OK [thread]=OK [fcntl-setlease]=EPERM
  [setuid-root]=OK [setresuid-root]=OK [setresgid-root]=OK [setgroups-root]=EPERM
  [x32]=SIGSYS
)
# int 0x80 is refused by the filter (SIGSYS) or, on kernels without 32-bit
# emulation, by the CPU (SIGSEGV): either way the call never runs.
want_re_compat_i386='^SIG(SYS|SEGV)$'

mapfile -t cases < <("$helper" --list)
tap_check $((${#cases[@]} < 40)) "try-syscall --list names its cases (${#cases[@]})"
unchecked=()
for c in "${cases[@]}"; do
  [ -n "${want[$c]:-}" ] || [ "$c" = compat-i386 ] || unchecked+=("$c")
done
tap_is "${unchecked[*]}" "" "every try-syscall case has an expected result here"

cache_files() { find "$HUTCH_CACHE_DIR" -name '*.bpf' 2>/dev/null | wc -l; }
tap_is "$(cache_files)" 0 "the seccomp cache starts empty"

# One sandbox runs every case: a sandbox start per case would only be slower.
# shellcheck disable=SC2016 # the inner script expands its own arguments
tap_ok "try-syscall runs every case in one sandbox" \
  hx -- sh -c 'for c in "$@"; do printf "%s=%s\n" "$c" "$(try-syscall "$c")"; done' sh "${cases[@]}"
results=$tap_stdout
for c in "${cases[@]}"; do
  got=$(printf '%s\n' "$results" | sed -n "s/^$c=//p")
  if [ "$c" = compat-i386 ]; then
    tap_like "$got" "$want_re_compat_i386" "$c: killed, never run"
  else
    tap_is "$got" "${want[$c]:-?}" "$c: ${want[$c]:-?}"
  fi
done

tap_is "$(cache_files)" 1 "the first sandbox cached the compiled program"
tap_ok "a second sandbox starts from the cache" hx -- try-syscall clone3
tap_is "$tap_stdout" ENOSYS "and gets the same filter"
tap_is "$(cache_files)" 1 "no second program was written"

# The cache is in the user's home, where a sandbox with a read-write bind of
# it could write (issue 13, finding 1): a cache entry that hutch did not make
# for this policy under the user's key must never be loaded.  What a sandbox
# with such a bind could write is written here directly, as the same user.
cache_file=$("$HUTCH_BIN" policy show --effective --json | jq -r .seccomp.cache_file)
tap_like "$cache_file" "^$HUTCH_CACHE_DIR/seccomp/[0-9a-f]{64}\.bpf\$" "policy show names the cache file"
tap_ok "the cache file exists" test -f "$cache_file"
refused_cases=(unshare clone-newuser mount keyctl io_uring_setup)
check_refused() { # what: the cache file has been overwritten
  tap_ok "$1: a sandbox still starts" hx -- sh -c 'for c in "$@"; do printf "%s=%s\n" "$c" "$(try-syscall "$c")"; done' \
    sh "${refused_cases[@]}"
  local out=$tap_stdout c
  for c in "${refused_cases[@]}"; do
    tap_is "$(printf '%s\n' "$out" | sed -n "s/^$c=//p")" EPERM "$1: $c is still refused"
  done
  tap_ok "$1: the entry was replaced" sh -c 'test "$(stat -c %s "$1")" -gt 40' sh "$cache_file"
}
# BPF_RET|BPF_K SECCOMP_RET_ALLOW: the whole program of the attack.
printf '\006\000\000\000\000\000\377\177' >"$cache_file"
check_refused "a one-instruction RET_ALLOW program in the cache"
{ head -c 32 /dev/zero; printf '\006\000\000\000\000\000\377\177'; } >"$cache_file"
check_refused "RET_ALLOW behind 32 bytes where a MAC would be"
# A genuine entry, made by hutch under this user's key, but for a policy that
# allows everything: it must not pass for the default policy's.
printf '[sandbox]\nseccomp = allow.json\n' >"$tmp/allow.policy"
printf '{"defaultAction": "SCMP_ACT_ALLOW"}\n' >"$tmp/allow.json"
tap_ok "a sandbox under an allow-everything policy" \
  "$HUTCH_BIN" exec --rootfs "$img" --policy "$tmp/allow.policy" --bind "$helper:/usr/bin/try-syscall:ro" \
  -- try-syscall keyctl
tap_unlike "$tap_stdout" "^EPERM$" "which lets keyctl reach the kernel"
allow_file=$("$HUTCH_BIN" policy show --effective --json --policy "$tmp/allow.policy" | jq -r .seccomp.cache_file)
tap_ok "that policy's program was cached" test -f "$allow_file"
cp "$allow_file" "$cache_file"
check_refused "another policy's authenticated entry copied over this policy's"

# Exit status 125 before anything runs: the bind below would show a file
# written by the payload.
mkdir -p "$tmp/out"
printf '[sandbox]\nseccomp = bad.json\n' >"$tmp/bad.policy"
printf '{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["read", "no_such_call"], "action": "SCMP_ACT_ALLOW"}]}\n' \
  >"$tmp/bad.json"
tap_status 125 "a profile naming an unknown syscall starts no sandbox" \
  "$HUTCH_BIN" exec --rootfs "$img" --policy "$tmp/bad.policy" --bind "$tmp/out:/out" -- touch /out/ran
tap_like "$tap_stderr" "bad\.json: syscalls\[0\]\.names\[1\]: unknown syscall name \"no_such_call\"" \
  "and names the file, the rule and the name"
tap_is "$(ls "$tmp/out")" "" "the command did not run"
tap_status 125 "hutch policy show refuses it too" "$HUTCH_BIN" policy show --policy "$tmp/bad.policy"
tap_like "$tap_stderr" "unknown syscall name \"no_such_call\"" "with the same reason"

printf '{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ALLOW", "errnoRet": 1}]}\n' \
  >"$tmp/bad.json"
tap_status 125 "an errnoRet on SCMP_ACT_ALLOW starts no sandbox" \
  "$HUTCH_BIN" exec --rootfs "$img" --policy "$tmp/bad.policy" --bind "$tmp/out:/out" -- touch /out/ran
tap_like "$tap_stderr" "syscalls\[0\]\.errnoRet: SCMP_ACT_ALLOW returns no errno" "and says why"
tap_is "$(ls "$tmp/out")" "" "the command did not run"

tap_ok "hutch policy show --effective" "$HUTCH_BIN" policy show --effective
tap_like "$tap_stdout" "clone\([0-9]+\): allowed only when flags & 0x7e020000 == 0" "shows the clone filter with its number"
tap_like "$tap_stdout" "policy: $HUTCH_POLICY" "of the policy in \$HUTCH_POLICY"

# The filter is loaded once, by init, and every command of a live sandbox
# inherits it (runtime/contain/init_seccomp.c): one filter in a command, not
# two, the same refusals, and init itself filtered.
filters() { sed -n 's/^Seccomp_filters:[[:space:]]*//p' "$@"; }
id=$("$HUTCH_BIN" create --rootfs "$img" --bind "$helper:/usr/bin/try-syscall:ro")
tap_check $? "a live sandbox"
# shellcheck disable=SC2016 # the inner script expands its own variables
tap_ok "exec --in: a command reads its own and init's seccomp state" "$HUTCH_BIN" exec --in "$id" -- sh -c \
  'grep -E "^Seccomp(_filters)?:" /proc/self/status /proc/1/status; for c in unshare mount clone-newns; do echo "$c=$(try-syscall $c)"; done'
out=$tap_stdout
tap_like "$out" "/proc/self/status:Seccomp:[[:space:]]+2" "the command is filtered"
tap_like "$out" "/proc/self/status:Seccomp_filters:[[:space:]]+1(\$|[^0-9])" "by exactly one filter"
tap_like "$out" "/proc/1/status:Seccomp:[[:space:]]+2" "init is filtered too"
tap_like "$out" "/proc/1/status:Seccomp_filters:[[:space:]]+1(\$|[^0-9])" "by the same one filter"
for c in unshare mount clone-newns; do
  tap_is "$(printf '%s\n' "$out" | sed -n "s/^$c=//p")" EPERM "a command of a live sandbox: $c is refused"
done
tap_ok "a second command of it" "$HUTCH_BIN" exec --in "$id" -- sh -c 'grep ^Seccomp_filters: /proc/self/status; try-syscall unshare'
tap_like "$tap_stdout" "^Seccomp_filters:[[:space:]]+1"$'\n'"EPERM\$" "has one filter too, and unshare is refused"
"$HUTCH_BIN" rm "$id" >/dev/null

# A profile that refuses something init itself needs (here
# sched_getaffinity, which its memory watchdog calls) must not break init:
# the commands load the filter themselves, as before, and HUTCH_DEBUG says so.
jq '.syscalls += [{"names": ["sched_getaffinity"], "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]' \
  "$HUTCH_SRCDIR/policies/seccomp.json" >"$tmp/noaff.json"
printf '[sandbox]\nseccomp = noaff.json\n' >"$tmp/noaff.policy"
tap_ok "a profile refusing one of init's calls still runs commands" env HUTCH_DEBUG=1 \
  "$HUTCH_BIN" exec --rootfs "$img" --policy "$tmp/noaff.policy" --bind "$helper:/usr/bin/try-syscall:ro" -- \
  sh -c 'grep -E "^Seccomp(_filters)?:" /proc/self/status /proc/1/status; try-syscall unshare'
tap_like "$tap_stderr" "seccomp: loaded by each command: the profile does not allow init's sched_getaffinity" \
  "HUTCH_DEBUG names the call that kept the filter out of init"
tap_like "$tap_stdout" "/proc/self/status:Seccomp_filters:[[:space:]]+1(\$|[^0-9])" "the command has its own filter"
tap_like "$tap_stdout" "/proc/1/status:Seccomp:[[:space:]]+0" "init has none"
tap_like "$tap_stdout" "EPERM\$" "and unshare is refused"
tap_ok "the default profile: HUTCH_DEBUG shows no fallback" env HUTCH_DEBUG=1 "$HUTCH_BIN" exec --rootfs "$img" -- true
tap_unlike "$tap_stderr" "loaded by each command" "init took the filter"

rm -rf "$tmp"
tap_done
