#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# An uninstalled hutch finds its own files: run from its build tree, with
# no HUTCH_* variable, hutch and hutch run take the policy, prompts and
# manifests of the source tree; a copy elsewhere (as an installed binary)
# never takes files that lie beside it.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
store=$HUTCH_STORE
state=$HUTCH_STATE_DIR
# Every HUTCH_* variable unset, as for someone who just ran make.
unset_hutch=()
for v in $(compgen -e | grep '^HUTCH_'); do unset_hutch+=(-u "$v"); done
bare() { (cd "$tmp" && env "${unset_hutch[@]}" "$@"); }

# ---- a copy outside the build tree ignores what is beside it ----
mkdir -p "$tmp/bin/policies" "$tmp/bin/prompts" "$tmp/bin/rootfs"
hutch_copy_bin "$tmp/bin/hutch"
printf '[sandbox]\nhostname = planted\n' >"$tmp/bin/policies/default.policy"
bare "$tmp/bin/hutch" policy show >"$tmp/copy.out" 2>&1
tap_unlike "$(cat "$tmp/copy.out")" "$tmp/bin" "a copy of hutch does not take a policy planted beside it"

if [ "${HUTCH_TEST_MODE:-root}" != root ]; then
  # The rootless run gets staged copies of the binaries, not the build tree.
  tap_skip "the build tree's hutch: the rootless run reaches no build tree"
  tap_done
  exit
fi

# ---- the build tree's hutch ----
tap_ok "hutch policy show, uninstalled, with no HUTCH_* variable" bare "$HUTCH_BIN" policy show
tap_like "$tap_stdout" "^policy: $(realpath "$HUTCH_SRCDIR")/policies/default.policy" \
  "names the source tree's default policy"
tap_ok "hutch exec, uninstalled, from another directory, with no HUTCH_* variable" \
  bare "$HUTCH_BIN" exec --store "$store" --state-dir "$state" --rootfs "$img" -- echo hello
tap_is "$tap_stdout" "hello" "runs the command"
tap_fails "hutch rootfs pull finds the source tree's manifests" \
  bare "$HUTCH_BIN" rootfs pull no-such-image --store "$store"
tap_like "$tap_stderr" "known images: " "(an unknown name lists the known ones)"

[ -x /usr/bin/python3 ] || {
  tap_skip "hutch run: python3 is needed for the mock model server"
  tap_done
  exit
}
mock_start '[{"calls": [["execute_bash", {"command": "echo from-the-model"}]]}, {"calls": [["submit", {}]]}]'
# The no-cgroup warning is said once a day per state directory: the exec
# above may have said it; this run says it again.
rm -f "$state/.warned-no-cgroup"
tap_ok "hutch run, uninstalled, from another directory, with no HUTCH_* variable" \
  bare "$HUTCH_BIN" run --base-url "$MOCK_URL" --model test-model --rootfs "$img" --store "$store" \
  --state-dir "$state" --output-dir "$tmp/out" --retry-delay 0.05 --quiet --query q
tap_is "$(mock_request 1 '"from-the-model" in str(r["body"])')" "True" "the model's command ran"
# The runtime's own warnings (a degraded mode here, if any) reach run.log
# too, through the log handler hutch-agent sets.
run_log=$(ls -d "$tmp"/out/2*/run.log | head -1)
warnings=$(printf '%s\n' "$tap_stderr" | sed -n 's/^hutch run: warning: //p')
if [ -n "$warnings" ]; then
  missing=$(printf '%s\n' "$warnings" | while IFS= read -r w; do grep -qF "warning: $w" "$run_log" || echo "$w"; done)
  tap_is "$missing" "" "the runtime's warnings on stderr are in run.log too"
else
  tap_skip "the runtime's warnings in run.log: this host gave none"
fi

mock_stop
tap_done
