#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# One teardown (runtime/sandbox/teardown.c) ends every sandbox: a start
# that fails once its child exists leaves no process, no state directory
# and no /30; hutch rm removes a live and a dead sandbox whole, and a
# second hutch rm of the same id finds nothing to undo.
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)

# A copy of hutch under a name of its own: init and the proxy carry it,
# so leftovers are found by name whatever runs beside this test.
name=td$$
name=${name:0:15}
hutch_copy_bin "$tmp/$name"
export HUTCH_STATE_DIR=$tmp/state
mkdir -m 0700 "$HUTCH_STATE_DIR"
leftovers() { ps -eo pid=,stat=,comm= | awk -v n="$name" '$3 == n && $2 !~ /^Z/ { printf "%s ", $1 }'; }
sandboxes() { hutch_state_entries "$HUTCH_STATE_DIR" | tr '\n' ' '; }
no_subnet() { test ! -s "$HUTCH_STATE_DIR/net-subnets"; }

# ---- a start that fails half-way: after the clone, with a /30 held ----
# --overlay fuse without its daemon fails in the handshake, once the
# child, the cgroup, the state directory and the /30 exist.
for cmd in exec create; do
  args=(--rootfs "$img" --net proxy --overlay fuse)
  [ "$cmd" = exec ] && args+=(-- true)
  HUTCH_FUSE_OVERLAYFS=/nonexistent/fuse-overlayfs tap_fails "$cmd: a start that fails half-way" \
    "$tmp/$name" "$cmd" "${args[@]}"
  tap_like "$tap_stderr" "fuse-overlayfs" "$cmd: in its handshake, at the fuse daemon"
  sleep 0.2
  tap_is "$(leftovers)" "" "$cmd: it leaves no process"
  tap_is "$(sandboxes)" "" "$cmd: nor a sandbox directory"
  tap_ok "$cmd: nor a /30 in the subnet table" no_subnet
done

# ---- hutch rm of a live sandbox, twice ----
tap_ok "create a sandbox with a proxy" "$tmp/$name" create --rootfs "$img" --net proxy
id=$tap_stdout
tap_is "$(wc -w <<<"$(leftovers)")" 2 "its init and its proxy run"
tap_ok "hutch rm of it" "$HUTCH_BIN" rm "$id"
sleep 0.2
tap_is "$(leftovers)" "" "nothing of it runs after"
tap_is "$(sandboxes)" "" "its directory is gone"
tap_ok "its /30 is free" no_subnet
tap_fails "a second hutch rm finds nothing" "$HUTCH_BIN" rm "$id"
tap_is "$(sandboxes)" "" "and makes nothing"

# ---- hutch rm of a dead sandbox ----
tap_ok "create another" "$tmp/$name" create --rootfs "$img" --net proxy
id=$tap_stdout
pid=$("$HUTCH_BIN" ps --json | python3 -c 'import json, sys
print(next(s["pid"] for s in json.load(sys.stdin) if s["id"] == sys.argv[1]))' "$id")
kill -9 "$pid"
sleep 0.3
tap_ok "hutch rm of it once its init was killed" "$HUTCH_BIN" rm "$id"
sleep 0.2
tap_is "$(leftovers)" "" "its proxy is gone too"
tap_is "$(sandboxes)" "" "its directory is gone"
tap_ok "its /30 is free" no_subnet

tap_done
