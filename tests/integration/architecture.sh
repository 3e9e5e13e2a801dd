#!/bin/bash
# The layering rule: src/ (the hutch command and the agent) uses the runtime
# only through its public header, runtime/hutch.h.  The one exception is the
# tree's generic C layer, util.h (cleanup attributes, x-allocators, logging)
# with the error constructors of error.h, which every part of the tree uses.
. "$HUTCH_SRCDIR/tests/lib/tap.sh"

allowed="hutch.h util.h error.h"

# Prints "file: header" for each quoted include of a runtime header that is
# neither allowed nor a header of the including file's own directory.
internal_includes() {
  local srcroot=$1 runtime=$2 f h
  while IFS= read -r f; do
    while IFS= read -r h; do
      [ -e "$(dirname "$f")/$h" ] && continue
      [ -e "$runtime/$h" ] || continue
      case " $allowed " in *" $h "*) continue ;; esac
      printf '%s: %s\n' "${f#"$srcroot"/}" "$h"
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
  done < <(find "$srcroot" -name '*.[ch]' | sort)
}

# The check itself finds an internal include, and passes src's own headers.
tmp=$(hutch_test_tmpdir)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src/sub" "$tmp/runtime"
touch "$tmp/runtime/hutch.h" "$tmp/runtime/store.h" "$tmp/runtime/options.h"
printf '#include "hutch.h"\n#include "options.h"\n' >"$tmp/src/options.h"
printf '#include "options.h"\n#  include "store.h"\n' >"$tmp/src/sub/x.c"
got=$(internal_includes "$tmp/src" "$tmp/runtime")
tap_is "$got" "sub/x.c: options.h
sub/x.c: store.h" "the check flags includes of internal runtime headers"
got=$(internal_includes "$tmp/src" "$tmp/runtime" | grep -c '^options.h' || true)
tap_is "$got" 0 "a header of src's own directory is not flagged"

# The unprivileged run gets a copy of the test files only (tests/lib/run-integration):
# reading the sources needs no privilege, the run as root covers them.
if [ "$(id -u)" -ne 0 ] && [ ! -d "$HUTCH_SRCDIR/src" ]; then
  tap_skip "src/ includes no internal runtime header" "the sources are not staged for the unprivileged run"
else
  tap_ok "src/ and runtime/ are there" test -d "$HUTCH_SRCDIR/src" -a -f "$HUTCH_SRCDIR/runtime/hutch.h"
  got=$(internal_includes "$HUTCH_SRCDIR/src" "$HUTCH_SRCDIR/runtime")
  tap_is "$got" "" "src/ includes no runtime header but hutch.h (and util.h, error.h)"
fi

tap_done
