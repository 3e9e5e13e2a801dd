#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The Python package (python/, --enable-python): its pytest suite
# (python/tests) but the compatibility packages' tests (python-compat.sh),
# against the busybox test image, each test re-told here as one TAP point.
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
pytest_args=("$HUTCH_SRCDIR/python/tests" --ignore-glob='*/test_compat_*')
pytest_min=30
# shellcheck source=../lib/python-suite.sh
. "$(dirname "$0")/../lib/python-suite.sh"
