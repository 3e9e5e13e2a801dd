#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The Python package (python/, --enable-python): its pytest suite
# (python/tests) but the compatibility packages' tests (python-compat.sh),
# against the busybox test image, each test re-told here as one TAP point.
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# pytest makes a relative --ignore-glob absolute from its working
# directory, so the pattern names the files' own directory.
pytest_args=("$HUTCH_SRCDIR/python/tests" --ignore-glob="$HUTCH_SRCDIR/python/tests/test_compat_*")
pytest_not=test_compat_
pytest_min=30
# shellcheck source=../lib/python-suite.sh
. "$(dirname "$0")/../lib/python-suite.sh"
