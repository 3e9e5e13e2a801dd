# SPDX-License-Identifier: Apache-2.0
"""Fixtures for the hutch package's tests: the image they run on comes from
$HUTCH_TEST_IMAGE (tests/integration/python.sh imports the busybox test
image), else "hutch-test-busybox"."""

import contextlib
import functools
import http.server
import os
import subprocess
import threading
import time

import pytest

import hutch


@pytest.fixture(scope="session")
def image():
    return os.environ.get("HUTCH_TEST_IMAGE", "hutch-test-busybox")


@pytest.fixture
def sb(image):
    with hutch.Sandbox(image) as s:
        yield s


def open_fds():
    return set(os.listdir("/proc/self/fd"))


def children():
    """Pids whose parent is this process (zombies included)."""
    me = str(os.getpid())
    kids = set()
    for task in os.listdir(f"/proc/{me}/task"):
        try:
            with open(f"/proc/{me}/task/{task}/children") as f:
                kids.update(f.read().split())
        except OSError:
            pass
    return kids


@pytest.fixture
def made_by_cli(image):
    """The name of a sandbox made by `hutch create` (HUTCH_BIN), removed
    after the test.  Pausing needs it rootless: a sandbox this process makes
    runs hutch-init only when the library finds it (beside the program, or
    installed), and without that exec its init cannot be held by ptrace
    from an unprivileged pauser (test_live.py: test_pausing_a_sandbox_made_here)."""
    hutch_bin = os.environ.get("HUTCH_BIN")
    if not hutch_bin:
        pytest.skip("HUTCH_BIN is not set")
    name = f"cli-{os.getpid()}-{time.monotonic_ns() % 1000000}"
    subprocess.run([hutch_bin, "create", "--rootfs", image, "--name", name], check=True, capture_output=True)
    try:
        yield name
    finally:
        subprocess.run([hutch_bin, "rm", "-f", name], capture_output=True)


class _Recording(http.server.SimpleHTTPRequestHandler):
    def log_message(self, fmt, *args):
        self.server.requests.append(self.path)


@contextlib.contextmanager
def served(directory):
    """An HTTP server of directory on the host's loopback; its .requests
    lists the paths asked for."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Recording, directory=str(directory)))
    srv.requests = []
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
