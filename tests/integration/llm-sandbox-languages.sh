#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch.compat.llm_sandbox's language images built on first use, for real:
# a Ruby image from rootfs/llm-sandbox-ruby.recipe on the Debian test image
# (apt from the mirror of its sources, through hutch's proxy), code run in
# it and libraries= installed with gem through the proxy
# (python/tests/test_compat_llm_sandbox_languages.py).  The smallest of the
# languages' images; the JDK, Go and R are built by hand, not here.
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"

[ -n "${HUTCH_PYTHON:-}" ] || tap_skip_all "this build is not configured with --enable-python"
py=$HUTCH_PYTHON
lib=$HUTCH_BUILDDIR/python/build/lib
[ -d "$lib/hutch" ] || tap_skip_all "the Python package is not built (./configure --enable-python)"
"$py" -c 'import pytest' 2>/dev/null || tap_skip_all "$py has no pytest (apt-get install python3-pytest)"
deb=$(hutch_test_rootfs debian) || tap_skip_all "the Debian test rootfs is not built (tests/setup-host.sh)"
"$HUTCH_BIN" exec --rootfs "$deb" --net proxy -- /bin/true >/dev/null 2>&1 ||
  tap_skip_all "--net proxy sandboxes cannot start here"
host=$("$HUTCH_BIN" exec --rootfs "$deb" -- /bin/sh -c 'cat /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null' |
  sed -n 's,.*https\?://\([^/ ]*\).*,\1,p' | head -n 1)
curl -sI --max-time 10 "http://$host/" 2>/dev/null | grep -q HTTP ||
  tap_skip_all "the mirror ${host:-(none)} of the Debian image's apt sources is unreachable"

export PYTHONPATH=$lib HUTCH_TEST_DEBIAN_IMAGE=$deb HUTCH_TEST_LANGUAGE_BUILD=1 PYTHONDONTWRITEBYTECODE=1
out=$(cd "$HUTCH_SRCDIR/python/tests" && timeout "${HUTCH_TEST_CMD_TIMEOUT:-1500}" "$py" -m pytest -p no:cacheprovider \
  -q -rA -o console_output_style=classic test_compat_llm_sandbox_languages.py 2>&1)
tap_pytest "$out" $? 3
tap_done
