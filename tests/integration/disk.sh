#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# [limits] disk / --disk: every place a sandbox can write (its writable
# layer, /tmp, /dev/shm and /dev) is on one size-limited tmpfs of its own, for a
# one-shot sandbox and a long-lived one alike.  A fill gets ENOSPC inside,
# `df /` shows the limit rather than the host's file system, the budget is
# shared, and nothing of the fill lands in the state directory on the host.
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
state=$tmp/state
ids=()
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  for id in "${ids[@]}"; do "$HUTCH_BIN" rm --state-dir "$state" "$id" >/dev/null 2>&1; done
  rm -rf "$tmp"
}
trap cleanup EXIT
hx() { "$HUTCH_BIN" exec --state-dir "$state" --rootfs "$img" "$@"; }
# d PATH: the 1K-blocks of `df PATH` inside.
d='d() { df -k "$1" | awk "NR == 2 { print \$2 }"; }'
# f FILE N: dd of N MiB to FILE inside; prints ENOSPC when that stopped it,
# then dd's exit status.
f='f() { e=$(dd if=/dev/zero of="$1" bs=1M count="$2" 2>&1); s=$?; case $e in *"No space left"*) echo ENOSPC ;; esac; echo "status $s"; }'

# ---- one-shot: --disk 64M ----
for path in /big /tmp/big /dev/shm/big /dev/big; do
  tap_ok "exec: fill $path past --disk 64M" hx --disk 64M -- sh -c "$f; f $path 100"
  tap_is "$tap_stdout" $'ENOSPC\nstatus 1' "exec: $path: ENOSPC inside"
done
tap_ok "exec: df / inside" hx --disk 64M -- sh -c "$d; d /"
tap_is "$tap_stdout" 65536 "exec: df / shows the limit (64 MiB), not the host's file system"
tap_ok "exec: df /tmp, /dev/shm and /dev" hx --disk 64M -- sh -c "$d; d /tmp; d /dev/shm; d /dev"
tap_is "$tap_stdout" $'65536\n65536\n65536' "exec: /tmp, /dev/shm and /dev show the same 64 MiB"

# One budget, not three: 40 MiB in /tmp leave less than 40 for /dev/shm and /.
tap_ok "exec: /tmp, then /dev/shm, then /" hx --disk 64M -- sh -c "$f; f /tmp/a 40; f /dev/shm/b 40; f /c 40"
tap_is "$tap_stdout" $'status 0\nENOSPC\nstatus 1\nENOSPC\nstatus 1' "exec: /dev/shm and / share what /tmp left"

# The policy's [limits] disk when there is no --disk.
sed "s|^seccomp = .*|seccomp = $(dirname "$HUTCH_POLICY")/seccomp.json|; s|^disk = .*|disk = 32M|" \
  "$HUTCH_POLICY" >"$tmp/disk.policy"
tap_ok "exec: the policy's disk = 32M" hx --policy "$tmp/disk.policy" -- sh -c "$d; d /"
tap_is "$tap_stdout" 32768 "exec: df / shows the policy's 32 MiB"
tap_ok "policy show --effective" "$HUTCH_BIN" policy show --effective --policy "$tmp/disk.policy"
tap_like "$tap_stdout" "disk: 32 MiB" "policy show names the disk limit"
tap_ok "policy show --effective, the shipped policy" "$HUTCH_BIN" policy show --effective
tap_like "$tap_stdout" "disk: 4 GiB" "the shipped policy's disk limit is 4 GiB"
tap_status 2 "--disk wants a size" hx --disk lots -- true

# ---- long-lived: create, then exec --in ----
id=$("$HUTCH_BIN" create --state-dir "$state" --rootfs "$img" --disk 64M 2>/dev/null)
tap_check $? "create --disk 64M"
ids+=("$id")
for path in /big /tmp/big /dev/shm/big; do
  tap_ok "exec --in: fill $path" "$HUTCH_BIN" exec --state-dir "$state" --in "$id" -- sh -c "$f; f $path 100; rm $path"
  tap_is "$tap_stdout" $'ENOSPC\nstatus 1' "exec --in: $path: ENOSPC inside"
done
tap_ok "exec --in: fill / and keep it" "$HUTCH_BIN" exec --state-dir "$state" --in "$id" -- sh -c "$f; f /big 100"
tap_ok "exec --in: df /" "$HUTCH_BIN" exec --state-dir "$state" --in "$id" -- sh -c "$d; d /"
tap_is "$tap_stdout" 65536 "exec --in: df / shows the limit"
kib=$(du -sk "$state/$id" | cut -f1)
tap_check "$([ "$kib" -lt 1024 ] && echo 0 || echo 1)" \
  "the state directory on the host holds none of the 64 MiB written ($kib KiB)"
tap_ok "rm" "$HUTCH_BIN" rm --state-dir "$state" "$id"
tap_is "$(ls "$state")" "" "nothing is left in the state directory"

# ---- --keep: a one-shot layer is bounded too, and copied out at the end ----
tap_ok "exec --keep --disk 64M: fill /" hx --keep --disk 64M --json -- sh -c "echo kept >/kept; $f; f /big 100"
id=$(printf '%s\n' "$tap_stdout" | sed -n 's/.*"id":"\([0-9a-f]*\)".*/\1/p')
ids+=("$id")
tap_like "$tap_stdout" "ENOSPC" "exec --keep: ENOSPC inside"
tap_is "$(cat "$state/$id/upper/kept" 2>&1)" "kept" "exec --keep: the upper layer is kept"
kib=$(du -sk "$state/$id/upper" | cut -f1)
tap_check "$([ "$kib" -le $((65536 + 1024)) ] && echo 0 || echo 1)" \
  "exec --keep: no more than the limit (and directories' blocks) was kept ($kib KiB)"
# A long-lived --keep cannot be: its layer stays on disk, announced.
id=$("$HUTCH_BIN" create --state-dir "$state" --rootfs "$img" --keep 2>"$tmp/keep.err")
tap_check $? "create --keep"
ids+=("$id")
tap_like "$(cat "$tmp/keep.err")" 'degraded mode "disk unbounded" \(create --keep\)' \
  "create --keep announces the degraded mode disk unbounded"
tap_ok "ps --json" "$HUTCH_BIN" ps --state-dir "$state" --json
tap_is "$(python3 -c 'import json, sys
print([s["degraded_modes"] for s in json.load(sys.stdin) if s["id"] == sys.argv[1]])' "$id" <<<"$tap_stdout")" \
  "[['disk unbounded']]" "and records it: ps --json lists it"
sed 's/^disk = .*/disk = max/' "$tmp/disk.policy" >"$tmp/nodisk.policy"
tap_ok "create --keep under disk = max: nothing is bounded, so nothing is degraded" \
  "$HUTCH_BIN" create --state-dir "$state" --rootfs "$img" --keep --policy "$tmp/nodisk.policy" --json
tap_unlike "$tap_stdout" "disk unbounded" "create --json lists no degraded mode"
ids+=("$(python3 -c 'import json, sys; print(json.load(sys.stdin)["id"])' <<<"$tap_stdout")")

# ---- an image build: the layer is made on the tmpfs, copied out at the end ----
printf 'run dd if=/dev/zero of=/big bs=1M count=100\n' >"$tmp/fill.recipe"
tap_fails "build: a step that writes past the policy's disk = 32M fails" \
  "$HUTCH_BIN" rootfs build --from "$img" --recipe "$tmp/fill.recipe" --name filled --policy "$tmp/disk.policy"
tap_like "$tap_stdout$tap_stderr" "No space left on device" "build: ENOSPC inside the step"
tap_ok "build: rootfs ls" "$HUTCH_BIN" rootfs ls
tap_unlike "$tap_stdout" "^filled " "build: and no image is made"
printf 'run echo kept >/etc/kept && rm /bin/vi && mkdir -p /opt/d && ln /etc/kept /opt/d/link\n' >"$tmp/ok.recipe"
tap_ok "build: a layer within the limit" \
  "$HUTCH_BIN" rootfs build --from "$img" --recipe "$tmp/ok.recipe" --name within --policy "$tmp/disk.policy"
tap_ok "build: its files, its deletions, its hard links" "$HUTCH_BIN" exec --rootfs within -- sh -c \
  'cat /etc/kept; test ! -e /bin/vi && echo vi gone; test /etc/kept -ef /opt/d/link && echo linked'
tap_is "$tap_stdout" $'kept\nvi gone\nlinked' "build: the copied layer is the layer"
tap_ok "build: rm the image" "$HUTCH_BIN" rootfs rm within

tap_done
