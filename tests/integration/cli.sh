#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The command line: help, usage errors and exit codes.
. "$(dirname "$0")/../lib/tap.sh"

tap_ok "hutch --help" "$HUTCH_BIN" --help
tap_like "$tap_stdout" "Usage: hutch COMMAND" "prints the usage"
tap_ok "hutch --version" "$HUTCH_BIN" --version
tap_like "$tap_stdout" "^hutch [0-9]+\.[0-9]+" "prints the version"
tap_status 2 "no command is a usage error" "$HUTCH_BIN"
tap_status 2 "an unknown command is a usage error" "$HUTCH_BIN" frobnicate
tap_like "$tap_stderr" "unknown command 'frobnicate'" "naming it"
tap_unlike "$tap_stderr" "did you mean" "with no suggestion when no verb is close"
tap_unlike "$tap_stderr" "Usage:" "and not the whole usage"
tap_status 2 "a mistyped verb is a usage error" "$HUTCH_BIN" exce --rootfs x -- true
tap_like "$tap_stderr" "unknown command 'exce': did you mean 'exec'\\?" "which names the closest verb"
tap_unlike "$tap_stderr" "Usage:" "instead of the whole usage"
tap_is "$(printf '%s\n' "$tap_stderr" | wc -l)" "2" "in two lines"
tap_status 2 "a mistyped rootfs command" "$HUTCH_BIN" rootfs improt x.tar
tap_like "$tap_stderr" "did you mean 'import'" "names the closest one"
for verb in exec create ps rm rootfs policy; do
  tap_ok "hutch $verb --help" "$HUTCH_BIN" $verb --help
  tap_like "$tap_stdout" "Usage: hutch $verb" "$verb --help prints its usage"
done
tap_status 2 "exec without a command" "$HUTCH_BIN" exec
tap_status 2 "exec with an unknown option" "$HUTCH_BIN" exec --frob -- true
tap_status 2 "a bad --timeout" "$HUTCH_BIN" exec --timeout soon -- true
tap_status 2 "a bad --env" "$HUTCH_BIN" exec --env 1BAD=x -- true
tap_status 2 "a relative --workdir" "$HUTCH_BIN" exec --workdir tmp -- true
tap_status 125 "a malformed policy stops before any sandbox" sh -c "printf '[sandbox]\nbogus = 1\n' > '${TMPDIR:-/tmp}/bad-$$.policy'; '$HUTCH_BIN' exec --policy '${TMPDIR:-/tmp}/bad-$$.policy' -- true"
tap_like "$tap_stderr" "bad-$$.policy:2" "naming the file and line"
rm -f "${TMPDIR:-/tmp}/bad-$$.policy"
tap_status 125 "an unusable state directory is a runtime failure" "$HUTCH_BIN" ps --state-dir /proc/no/such
tap_done
