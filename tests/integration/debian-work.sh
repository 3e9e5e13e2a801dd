#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Ordinary work in a Debian rootfs must succeed under the full sandbox.
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs debian) || tap_skip_all "debian test rootfs not built (run tests/setup-host.sh as root)"
hx() { "$HUTCH_BIN" exec --rootfs "$img" "$@"; }

tap_ok "a Python script" hx -- python3 -c 'import json, hashlib; print(json.dumps({"h": hashlib.sha256(b"x").hexdigest()[:8]}))'
tap_is "$tap_stdout" '{"h": "2d711642"}' "computes the right answer"
tap_ok "pip --version" hx -- python3 -m pip --version
tap_like "$tap_stdout" "^pip [0-9]" "pip runs"
tap_ok "git init and commit" hx --workdir /tmp -- sh -c '
  set -e
  git init -q repo && cd repo
  git config user.email t@example.invalid && git config user.name T
  echo hello > a.txt && git add a.txt && git commit -qm first
  git log --oneline | wc -l'
tap_is "$tap_stdout" "1" "one commit"
tap_ok "a shell pipeline" hx -- sh -c 'seq 1 100 | grep 7 | sort -rn | head -1'
tap_is "$tap_stdout" "97" "gives the right line"
cat >"${TMPDIR:-/tmp}/hutch-t-$$.c" <<'C'
#include <stdio.h>
int main(void) { printf("%d\n", 6 * 7); return 0; }
C
tap_ok "a C compile" hx --bind "${TMPDIR:-/tmp}/hutch-t-$$.c:/src/t.c:ro" --workdir /tmp -- sh -c 'gcc -O2 -o t /src/t.c && ./t'
rm -f "${TMPDIR:-/tmp}/hutch-t-$$.c"
tap_is "$tap_stdout" "42" "the compiled program runs"
tap_ok "python multiprocessing" hx -- python3 -c 'from multiprocessing import Pool
with Pool(2) as p: print(sum(p.map(abs, [-1, -2, 3])))'
tap_is "$tap_stdout" "6" "worker processes work"
tap_ok "apt's database is readable" hx -- dpkg -s python3
tap_like "$tap_stdout" "Status: install ok installed" "dpkg sees python3"

id=$("$HUTCH_BIN" create --rootfs "$img")
tap_ok "pip install of a local wheel-less package in a long-lived sandbox" "$HUTCH_BIN" exec --in "$id" --workdir /tmp -- sh -c '
  mkdir -p pkg/hello_hutch && cd pkg
  printf "def hi():\n    return 42\n" > hello_hutch/__init__.py
  printf "from setuptools import setup\nsetup(name=\"hello-hutch\", version=\"1.0\", packages=[\"hello_hutch\"])\n" > setup.py
  python3 -m pip install --no-index --no-build-isolation --break-system-packages -q . 2>&1 | tail -3
  cd / && python3 -c "import hello_hutch; print(hello_hutch.hi())"'
tap_like "$tap_stdout" "42" "the installed package imports"
"$HUTCH_BIN" rm "$id"
tap_done
