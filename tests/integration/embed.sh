#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The C library as it is installed: libhutch.so with its soname and only
# hutch.h's functions exported, a libhutch.a whose only global symbols are
# those, hutch.pc, and examples/embed.c compiled with pkg-config against
# the installed tree (make install DESTDIR=...) and run, linked both ways.
. "$(dirname "$0")/../lib/tap.sh"

if [ "${HUTCH_TEST_MODE:-root}" != root ]; then
  tap_skip_all "the rootless run has no build tree to install from"
fi
if grep -q '^SAN_CFLAGS = -fsanitize' "$HUTCH_BUILDDIR/Makefile" 2>/dev/null; then
  tap_skip_all "built with sanitizers: a program linked with the sanitized libhutch.so needs the sanitizer runtime loaded first; what is installed is the release build"
fi
command -v pkg-config >/dev/null || tap_skip_all "no pkg-config here"
cc=${CC:-cc}
command -v "$cc" >/dev/null || tap_skip_all "no C compiler here"
img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
dest=$tmp/dest
# tap_check, and the log of what failed.
check_log() {
  tap_check "$1" "$2" || sed 's/^/#   /' "$3"
}

env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$HUTCH_BUILDDIR" install DESTDIR="$dest" >"$tmp/install.log" 2>&1
if ! check_log $? "make install DESTDIR=..." "$tmp/install.log"; then
  tap_done # nothing below can be checked
  exit
fi
pc=$(find "$dest" -name hutch.pc -path '*/pkgconfig/*' | head -1)
tap_ok "hutch.pc is installed in a pkgconfig directory" test -n "$pc"
libdir=$(dirname "$(dirname "$pc")")
incdir=$(find "$dest" -name hutch.h -type f | head -1)
incdir=$(dirname "$incdir")
major=$(sed -n 's/^#define HUTCH_VERSION_MAJOR \([0-9]*\).*/\1/p' "$incdir/hutch_version.h")
tap_ok "hutch.h and hutch_version.h are installed side by side" test -f "$incdir/hutch_version.h" -a -n "$major"
so=$(cd "$libdir" && ls libhutch.so.*.*.* 2>/dev/null | head -1)
tap_ok "libhutch.so.MAJOR.MINOR.PATCH is installed" test -n "$so" -a -f "$libdir/$so"
tap_is "$(readlink "$libdir/libhutch.so.$major")" "$so" "libhutch.so.$major links to it"
tap_is "$(readlink "$libdir/libhutch.so")" "libhutch.so.$major" "and libhutch.so, for the link editor, to that"
tap_ok "libhutch.a is installed beside it" test -f "$libdir/libhutch.a"
tap_ok "and its manual page, hutch(3)" test -n "$(find "$dest" -path '*/man3/hutch.3' -type f)"

# ---- what the shared object exports: hutch.h's functions, nothing else ----
soname=$(readelf -dW "$libdir/$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
tap_is "$soname" "libhutch.so.$major" "its soname names the major version"
echo '#include "hutch.h"' >"$tmp/decl.c"
"$cc" -I"$incdir" -aux-info "$tmp/decl.aux" -c "$tmp/decl.c" -o /dev/null
tap_check $? "the compiler lists hutch.h's declarations"
grep '/hutch\.h:' "$tmp/decl.aux" | sed -E 's/^\/\*[^*]*\*\/ *//; s/^([^(]*[^A-Za-z0-9_(])?([A-Za-z_][A-Za-z0-9_]*) \(.*/\2/' |
  sort -u >"$tmp/declared"
nm -D --defined-only "$libdir/$so" | awk '$2 ~ /^[TDBRWV]$/ {print $3}' >"$tmp/exported.raw"
sed 's/@.*//' "$tmp/exported.raw" | grep -vx 'HUTCH_[0-9]*' | sort -u >"$tmp/exported"
tap_ok "hutch.h declares some functions" test "$(wc -l <"$tmp/declared")" -gt 50
tap_ok "and libhutch.so exports some" test "$(wc -l <"$tmp/exported")" -gt 50
tap_is "$(diff "$tmp/declared" "$tmp/exported")" "" "libhutch.so exports exactly the functions hutch.h declares"
tap_is "$(grep -v "@@HUTCH_$major\$" "$tmp/exported.raw" | grep -vx "HUTCH_$major")" "" \
  "each under the version node HUTCH_$major"
tap_unlike "$(ldd "$libdir/$so" 2>&1)" "not found" "its own dependencies are all found"

# ---- the static archive: the runtime's helpers are local ----
nm -g --defined-only "$libdir/libhutch.a" 2>/dev/null | awk 'NF == 3 {print $3}' | sort -u >"$tmp/static"
tap_ok "libhutch.a defines global symbols" test -s "$tmp/static"
tap_is "$(diff "$tmp/declared" "$tmp/static")" "" "libhutch.a's global symbols are hutch.h's functions alone"

# ---- examples/embed.c, compiled with pkg-config against the installed tree ----
# The sysroot: the .pc file names the configured prefix, under $dest here.
export PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_PATH=$libdir/pkgconfig
flags=$(pkg-config --cflags --libs hutch)
tap_check $? "pkg-config knows hutch"
tap_like "$flags" "-lhutch" "and links -lhutch"
tap_is "$(pkg-config --modversion hutch)" "$(sed -n 's/^#define HUTCH_VERSION_STRING "\(.*\)".*/\1/p' "$incdir/hutch_version.h")" \
  "its version is the header's"
policy=$(find "$dest" -path '*/policies/default.policy' | head -1)
tap_is "$(pkg-config --variable=pkgdatadir hutch)/policies/default.policy" "$policy" \
  "its pkgdatadir holds the installed policy"
# shellcheck disable=SC2086
"$cc" -Wall -Wextra -Werror -o "$tmp/embed" "$HUTCH_SRCDIR/examples/embed.c" $flags 2>"$tmp/cc.log"
check_log $? "examples/embed.c compiles and links with \$(pkg-config --cflags --libs hutch)" "$tmp/cc.log"
tap_like "$(readelf -dW "$tmp/embed" 2>&1)" "NEEDED.*\[libhutch\.so\.$major\]" "the program needs libhutch.so.$major"
run_embed() {
  LD_LIBRARY_PATH=$libdir HUTCH_POLICY=$policy "$@"
}
out=$(run_embed "$tmp/embed" "$img" 'echo hello from the sandbox; cat /proc/1/comm' 2>"$tmp/err")
check_log $? "it runs a command in a sandbox" "$tmp/err"
tap_like "$out" "^hello from the sandbox" "and prints what the command wrote"
tap_like "$out" "sandbox [0-9a-f]+: exit code 0 after" "and how it ended"
run_embed "$tmp/embed" "$img" 'exit 3' >/dev/null 2>&1
tap_is $? 3 "a command's exit code comes back through the library"
err=$(run_embed "$tmp/embed" no-such-image-here true 2>&1 >/dev/null)
tap_is $? 1 "an image that is not there fails"
tap_like "$err" "find the image.*no-such-image-here" "saying which step and which image"
tap_is "$(printf '%s\n' "$err" | grep -c 'no-such-image-here')" 1 "once"

# ---- linked statically: libhutch.a and the libraries hutch.pc names as private ----
priv=$(pkg-config --libs --static hutch | sed 's/-lhutch//')
tap_check $? "pkg-config --static lists the private libraries"
# shellcheck disable=SC2086
"$cc" -Wall -Wextra -Werror -o "$tmp/embed-static" "$HUTCH_SRCDIR/examples/embed.c" $(pkg-config --cflags hutch) \
  -Wl,-Bstatic -lhutch -Wl,-Bdynamic $priv 2>"$tmp/cc-static.log"
check_log $? "embed.c links with libhutch.a and \$(pkg-config --libs --static hutch)" "$tmp/cc-static.log"
tap_unlike "$(readelf -dW "$tmp/embed-static" 2>&1)" "libhutch" "that program needs no libhutch.so"
out=$(HUTCH_POLICY=$policy "$tmp/embed-static" "$img" 'echo static too' 2>"$tmp/err")
check_log $? "and runs a sandbox too" "$tmp/err"
tap_like "$out" "^static too" "with the command's output"

# ---- a C++ program can include the header ----
if command -v g++ >/dev/null; then
  printf '#include <hutch.h>\nint main() { return hutch_version() == nullptr; }\n' >"$tmp/cxx.cc"
  g++ -std=c++11 -Wall -Werror -o "$tmp/cxx" "$tmp/cxx.cc" $flags 2>"$tmp/cxx.log"
  check_log $? "a C++ program includes hutch.h and links libhutch.so" "$tmp/cxx.log"
else
  tap_skip "a C++ program includes hutch.h" "no g++ here"
fi
tap_done
