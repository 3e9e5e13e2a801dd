#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# libhutch.so keeps its ABI within a major version: the built library is
# compared (abidiff, build-aux/abi-check) with the ABI recorded at the last
# release in abi/, and the checker's rule is tried on small
# libraries that change in each way it must catch.
. "$(dirname "$0")/../lib/tap.sh"

if [ "${HUTCH_TEST_MODE:-root}" != root ]; then
  tap_skip_all "the rootless run has no build tree"
fi
if grep -q '^SAN_CFLAGS = -fsanitize' "$HUTCH_BUILDDIR/Makefile" 2>/dev/null; then
  tap_skip_all "built with sanitizers: the ABI recorded is that of the release build"
fi
command -v abidw >/dev/null && command -v abidiff >/dev/null ||
  tap_skip_all "abigail-tools is not installed (apt-get install abigail-tools)"
cc=${CC:-cc}
tmp=$(hutch_test_tmpdir)
check=$HUTCH_SRCDIR/build-aux/abi-check
version=$(sed -n 's/^#define HUTCH_VERSION_STRING "\(.*\)".*/\1/p' "$HUTCH_BUILDDIR/runtime/hutch_version.h")
# The version this build made (a build tree may still hold an older one).
lib="$HUTCH_BUILDDIR/lib/libhutch.so.$version"
tap_ok "the build made libhutch.so" test -n "$lib" -a -f "$lib"

# ---- the built library against the last release's ABI ----
base=$(ls "$HUTCH_SRCDIR"/abi/libhutch-*.abi 2>/dev/null | sort -V | tail -1)
tap_ok "abi holds a release's ABI" test -n "$base"
base_version=${base##*/libhutch-}
base_version=${base_version%.abi}
tap_ok "from this major version or the one before" test "${base_version%%.*}" -le "${version%%.*}"
out=$("$check" "$base" "$base_version" "$lib" "$version" 2>&1)
rc=$?
tap_is "$rc" 0 "libhutch.so $version keeps the ABI of $base_version (or the version says it changed)"
[ "$rc" -eq 0 ] || printf '%s\n' "$out" | head -40 | sed 's/^/#   /'

# ---- the rule, on small libraries ----
# v1: what a release recorded.  The others change it in one way each; each
# has its header, as hutch.h is libhutch's.
mk() { # NAME HEADER BODY [CFLAGS]: a shared library with debug information
  printf '%s\n' "$2" >"$tmp/$1.h"
  printf '#include "%s.h"\n%s\n' "$1" "$3" >"$tmp/$1.c"
  "$cc" -shared -fPIC ${4--g} -o "$tmp/$1.so" "$tmp/$1.c"
}
h='struct hutch_s { int x; }; int hutch_a(int); int hutch_b(struct hutch_s *);'
b='int hutch_a(int v) { return v; } int hutch_b(struct hutch_s *s) { return s->x; }'
mk v1 "$h" "$b"
mk removed 'struct hutch_s { int x; }; int hutch_b(struct hutch_s *);' \
  'int hutch_b(struct hutch_s *s) { return s->x; }'
mk added "$h int hutch_c(void);" "$b int hutch_c(void) { return 0; }"
mk layout 'struct hutch_s { long y; int x; }; int hutch_a(int); int hutch_b(struct hutch_s *);' "$b"
mk signature 'struct hutch_s { int x; }; int hutch_a(long, int); int hutch_b(struct hutch_s *);' \
  'int hutch_a(long v, int w) { return (int)v + w; } int hutch_b(struct hutch_s *s) { return s->x; }'
mk nodebug "$h" "$b" -g0
abidw --no-corpus-path --no-comp-dir-path --no-show-locs --drop-private-types --header-file "$tmp/v1.h" \
  --out-file "$tmp/v1.abi" "$tmp/v1.so"
tap_check $? "abidw records the first library's ABI"
try() { # LIBRARY VERSION: abi-check's status against v1 at 1.2.0
  "$check" "$tmp/v1.abi" 1.2.0 "$tmp/$1.so" "$2" >"$tmp/$1-$2.out" 2>&1
  echo $?
}
tap_is "$(try v1 1.2.0)" 0 "the same library passes"
tap_is "$(try removed 1.2.0)" 1 "a function removed within the major version fails"
tap_like "$(cat "$tmp/removed-1.2.0.out")" "incompatible.*major version" "saying that the major version must change"
tap_like "$(cat "$tmp/removed-1.2.0.out")" "hutch_a" "and naming the function"
tap_is "$(try removed 1.3.0)" 1 "a new minor version is not enough for it"
tap_is "$(try removed 2.0.0)" 0 "a new major version is"
tap_is "$(try layout 1.2.1)" 1 "a structure's layout changed within the major version fails"
tap_like "$(cat "$tmp/layout-1.2.1.out")" "hutch_s" "naming the structure"
tap_is "$(try signature 1.9.0)" 1 "a function's parameters changed within the major version fail"
tap_is "$(try added 1.2.0)" 1 "a function added without a new version fails"
tap_like "$(cat "$tmp/added-1.2.0.out")" "minor version" "saying that the minor version must change"
tap_is "$(try added 1.2.1)" 1 "a new patch version is not enough for it"
tap_is "$(try added 1.3.0)" 0 "a new minor version is"
tap_is "$(try nodebug 1.2.0)" 2 "a library without debug information cannot be compared"
tap_like "$(cat "$tmp/nodebug-1.2.0.out")" "no debug information" "and says so"
tap_done
