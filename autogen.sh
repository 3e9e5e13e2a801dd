#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Regenerate the build system from configure.ac and Makefile.am.
set -e
cd "$(dirname "$0")"
mkdir -p m4 build-aux
autoreconf -fi
# The TAP driver ships with automake but is not installed by --add-missing.
for d in /usr/share/automake-*; do
  if [ -f "$d/tap-driver.sh" ]; then cp -f "$d/tap-driver.sh" build-aux/tap-driver.sh; break; fi
done
[ -f build-aux/tap-driver.sh ] || { echo "autogen.sh: automake's tap-driver.sh not found" >&2; exit 1; }
