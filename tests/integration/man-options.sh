#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Every option a verb's --help lists is documented in that verb's man page,
# and every man page is clean under mandoc's linter.
. "$HUTCH_SRCDIR/tests/lib/tap.sh"

mandir=$HUTCH_SRCDIR/man

# verb (as words) -> man page
pages=(
  ":hutch.1"
  "exec:hutch-exec.1"
  "create:hutch-exec.1"
  "ps:hutch-exec.1"
  "rm:hutch-exec.1"
  "pause:hutch-exec.1"
  "resume:hutch-exec.1"
  "ttl:hutch-exec.1"
  "reset:hutch-exec.1"
  "snapshot:hutch-exec.1"
  "fork:hutch-exec.1"
  "rootfs:hutch-rootfs.1"
  "rootfs pull:hutch-rootfs.1"
  "rootfs build:hutch-rootfs.1"
  "rootfs build -f Dockerfile:hutch-rootfs.1"
  "build:hutch-rootfs.1"
  "rootfs import:hutch-rootfs.1"
  "rootfs ls:hutch-rootfs.1"
  "rootfs rm:hutch-rootfs.1"
  "rootfs push:hutch-rootfs.1"
  "policy:hutch-policy.5"
  "policy show:hutch-policy.5"
  "doctor:hutch-doctor.1"
  "audit:hutch-audit.1"
  "run:hutch-run.1"
  "cp:hutch-cp.1"
  "mcp:hutch-mcp.1"
  "serve:hutch-serve.1"
  "benchmark:hutch-benchmark.1"
  "report:hutch-benchmark.1"
)

if ! command -v mandoc >/dev/null; then
  tap_check 1 "mandoc is installed (apt-get install mandoc, or run tests/setup-host.sh)"
  tap_done
fi

# The page as a reader sees it (overstrikes removed), and its source with
# roff's \- escapes undone, so either spelling of an option is found.
page_text() {
  mandoc -T ascii -O width=400 "$1" 2>/dev/null | sed 's/.\x08//g'
  sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\f(..//g' -e 's/\\&//g' "$1"
}

for entry in "${pages[@]}"; do
  verb=${entry%%:*}
  page=${entry#*:}
  label="hutch${verb:+ $verb}"
  if [ ! -f "$mandir/$page" ]; then
    tap_check 1 "$label: man page $page exists"
    continue
  fi
  # shellcheck disable=SC2086 # the verb is one or two words
  if ! tap_ok "$label --help exits 0" "$HUTCH_BIN" $verb --help; then
    continue
  fi
  mapfile -t opts < <(printf '%s\n' "$tap_stdout" | grep -oE -- '--[A-Za-z][A-Za-z0-9-]*' | sort -u)
  if [ ${#opts[@]} -eq 0 ]; then
    tap_check 1 "$label --help lists at least one --option"
    continue
  fi
  text=$(page_text "$mandir/$page")
  for opt in "${opts[@]}"; do
    if printf '%s\n' "$text" | grep -qE -- "(^|[^A-Za-z0-9_-])$opt([^A-Za-z0-9_-]|\$)"; then
      tap_check 0 "$label $opt is documented in $page"
    else
      tap_check 1 "$label $opt is documented in $page"
    fi
  done
done

shopt -s nullglob
manpages=("$mandir"/*.[1-8])
tap_check $((${#manpages[@]} == 0)) "man pages found in $mandir"
for page in "${manpages[@]}"; do
  tap_ok "mandoc -T lint -W warning ${page##*/} is clean" mandoc -T lint -W warning "$page"
done

tap_done
