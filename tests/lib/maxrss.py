#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Runs a command and records the most memory it held.

Usage: maxrss.py OUTFILE CMD [ARG...]

Runs CMD (stdin, stdout and stderr passed through), writes into OUTFILE
the peak resident set size in KiB of CMD's process (ru_maxrss of wait4:
the process itself, which `hutch run` stays as it execs hutch-agent, or
a larger descendant it waited for), and exits with CMD's status (128+N
after signal N)."""
import os
import sys

out, argv = sys.argv[1], sys.argv[2:]
# In a sanitizer build, freed memory would stay resident in ASan's
# quarantine (256 MiB by default) and count as held.
os.environ["ASAN_OPTIONS"] = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"), "quarantine_size_mb=0"]))
pid = os.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(out, "w") as f:
    f.write("%d\n" % usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status))
