# SPDX-License-Identifier: Apache-2.0
# The Python package's pytest suite (python/tests) against the busybox test
# image, each test re-told as one TAP point: sourced by python.sh and
# python-compat.sh, which set pytest_args (what to run), pytest_min (how
# many tests at least make the whole selection) and pytest_not (a file name
# prefix none of the tests run may have, if any) first.

# HUTCH_PYTHON comes from a build configured with --enable-python (make
# check sets it): another build (the sanitizer pass) has no package to test.
[ -n "${HUTCH_PYTHON:-}" ] || tap_skip_all "this build is not configured with --enable-python"
py=$HUTCH_PYTHON
lib=$HUTCH_BUILDDIR/python/build/lib
[ -d "$lib/hutch" ] || tap_skip_all "the Python package is not built (./configure --enable-python)"
tests=$HUTCH_SRCDIR/python/tests
if ! "$py" -c 'import pytest' 2>/dev/null; then
  tap_check 1 "$py has pytest (apt-get install python3-pytest)"
  tap_done
fi
img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"

# run_code and the interpreter need python3 and gcc: the Debian test image.
if deb=$(hutch_test_rootfs debian); then
  export HUTCH_TEST_DEBIAN_IMAGE=$deb
else
  tap_diag "the debian test rootfs is unavailable: its tests are skipped"
fi
# The figure round trips need the real matplotlib: a second Debian image.
if mpl=$(hutch_test_rootfs matplotlib); then
  export HUTCH_TEST_MATPLOTLIB_IMAGE=$mpl
else
  tap_diag "the matplotlib test rootfs is unavailable: the figure tests are skipped"
fi
export PYTHONPATH=$lib HUTCH_TEST_IMAGE=$img PYTHONDONTWRITEBYTECODE=1
out=$(cd "$tests" && timeout "${HUTCH_TEST_CMD_TIMEOUT:-840}" "$py" -m pytest -p no:cacheprovider -q -rA \
  -o console_output_style=classic "${pytest_args[@]}" 2>&1)
rc=$?
tap_pytest "$out" "$rc" "$pytest_min"
# What another script runs is not run here a second time.
if [ -n "${pytest_not:-}" ]; then
  tap_is "$(printf '%s\n' "$out" | grep -c "^[A-Z]* .*$pytest_not")" 0 "no test of $pytest_not* ran here"
fi
tap_done
