#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The Python package's compatibility packages, hutch.compat.llm_sandbox and
# hutch.compat.llm_in_sandbox: their pytest tests (python/tests/test_compat_*),
# apart from python.sh so that the two run side by side, each within the
# suite's time for one test script.
# shellcheck source=../lib/tap.sh
. "$(dirname "$0")/../lib/tap.sh"
# test_compat_llm_sandbox_languages.py needs its images: llm-sandbox-languages.sh
# builds one and runs it.
pytest_args=()
for f in "$HUTCH_SRCDIR"/python/tests/test_compat_*.py; do
  [ "${f##*/}" = test_compat_llm_sandbox_languages.py ] || pytest_args+=("$f")
done
pytest_min=20
# shellcheck source=../lib/python-suite.sh
. "$(dirname "$0")/../lib/python-suite.sh"
