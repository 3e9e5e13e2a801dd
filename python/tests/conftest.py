# SPDX-License-Identifier: Apache-2.0
"""Fixtures for the hutch package's tests: the image they run on comes from
$HUTCH_TEST_IMAGE (tests/integration/python.sh imports the busybox test
image), else "hutch-test-busybox"."""

import os

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
