#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The layering rules of the tree, written down once in runtime/layers:
#  - runtime/ is in folders by concern; a file includes headers of its own
#    folder, the public header hutch.h, and of the folders its folder's line
#    names, nothing else;
#  - src/ (the hutch command and the agent) uses the runtime only through
#    hutch.h, plus the generic C layer util.h (cleanup attributes,
#    x-allocators, logging) with the error constructors of error.h;
#  - no circle between the runtime's modules (x.c with x.h, and x_internal.h
#    for a module in several files: a module uses y when one of its files
#    includes y.h), even inside a folder.
. "$HUTCH_SRCDIR/tests/lib/tap.sh"

# The walks over the tree's includes are tests/lib/include-graph's (one
# process; see there for what each prints).
layer_violations() { python3 "$HUTCH_SRCDIR/tests/lib/include-graph" violations "$1" "$2"; }
module_cycle() { python3 "$HUTCH_SRCDIR/tests/lib/include-graph" cycle "$1"; }

# Header names found twice (the bare includes need them unique).
duplicate_headers() {
  find "$1/runtime" -name '*.h' -printf '%f\n' | sort | uniq -d
}

tmp=$(hutch_test_tmpdir)
trap 'rm -rf "$tmp"' EXIT

# The check itself, on a made-up tree: it flags includes of internal runtime
# headers from src/, passes src's own headers.
mkdir -p "$tmp/fake/src/sub" "$tmp/fake/runtime/image" "$tmp/fake/runtime/common"
touch "$tmp/fake/runtime/hutch.h" "$tmp/fake/runtime/image/store.h" "$tmp/fake/runtime/image/options.h" \
  "$tmp/fake/runtime/common/util.h"
printf 'src common/util.h\n' >"$tmp/fake/layers"
printf '#include "hutch.h"\n#include "options.h"\n#include "util.h"\n' >"$tmp/fake/src/options.h"
printf '#include "options.h"\n#  include "store.h"\n' >"$tmp/fake/src/sub/x.c"
got=$(layer_violations "$tmp/fake" "$tmp/fake/layers")
tap_is "$got" "src/sub/x.c: options.h (image/)
src/sub/x.c: store.h (image/)" "the check flags includes of internal runtime headers"
got=$(layer_violations "$tmp/fake" "$tmp/fake/layers" | grep -c '^src/options.h' || true)
tap_is "$got" 0 "a header of src's own directory is not flagged"

# The unprivileged run gets a copy of the test files only (tests/lib/run-integration):
# reading the sources needs no privilege, the run as root covers them.
if [ "$(id -u)" -ne 0 ] && [ ! -d "$HUTCH_SRCDIR/src" ]; then
  tap_skip "the tree follows runtime/layers" "the sources are not staged for the unprivileged run"
  tap_done
  exit 0
fi
table=$HUTCH_SRCDIR/runtime/layers
tap_ok "src/, runtime/ and runtime/layers are there" \
  test -d "$HUTCH_SRCDIR/src" -a -f "$HUTCH_SRCDIR/runtime/hutch.h" -a -f "$table"

# The real tree, copied, with one wrong include at a time: each is caught.
cp -r "$HUTCH_SRCDIR/runtime" "$HUTCH_SRCDIR/src" "$tmp/"
find "$tmp/runtime" "$tmp/src" -type f ! -name '*.[ch]' -delete
cp "$table" "$tmp/runtime/layers"
printf '#include "state.h"\n' >>"$tmp/runtime/policy/policy.c"
printf '#include "sandbox.h"\n' >>"$tmp/runtime/common/util.h"
printf '#include "store.h"\n' >>"$tmp/src/cli/main.c"
got=$(layer_violations "$tmp" "$table")
tap_is "$got" "common/util.h: sandbox.h (sandbox/)
policy/policy.c: state.h (sandbox/)
src/cli/main.c: store.h (image/)" "a wrong include in the runtime or in src/ fails the check"
sed -i '$d' "$tmp/runtime/policy/policy.c" "$tmp/runtime/common/util.h" "$tmp/src/cli/main.c"
tap_is "$(layer_violations "$tmp" "$table")" "" "the copy passes again once they are taken out"
printf '#include "oci.h"\n' >>"$tmp/runtime/image/store.c"
got=$(module_cycle "$tmp")
tap_like "$got" "(^| )oci( |$)" "a circle of includes inside a folder is found ($got)"
tap_like "$got" "(^| )store( |$)" "with both its ends"
sed -i '$d' "$tmp/runtime/image/store.c"

# The tree itself.
got=$(layer_violations "$HUTCH_SRCDIR" "$table")
tap_is "$got" "" "every include of a runtime header goes where runtime/layers allows"
tap_is "$(module_cycle "$HUTCH_SRCDIR")" "" "no circle of includes between the runtime's modules"
tap_is "$(duplicate_headers "$HUTCH_SRCDIR")" "" "no two runtime headers share a name"
got=$(find "$HUTCH_SRCDIR/runtime" -mindepth 1 -maxdepth 1 -type d ! -name '.*' -printf '%f\n' | sort | tr '\n' ' ')
want=$(awk '!/^#/ && NF && $1 != "src" { print $1 }' "$table" | sort | tr '\n' ' ')
tap_is "$got" "$want" "each folder of runtime/ has its line in runtime/layers"
# runtime/README.md quotes the table as it is, between two fences.
readme=$(sed -n '/^```layers$/,/^```$/p' "$HUTCH_SRCDIR/runtime/README.md" | sed '1d;$d')
tap_is "$readme" "$(grep -v '^#' "$table")" "runtime/README.md quotes runtime/layers as it is"

tap_done
