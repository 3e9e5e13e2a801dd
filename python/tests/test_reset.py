# SPDX-License-Identifier: Apache-2.0
"""Sandbox.reset: processes, files in the writable layer, /tmp and
/dev/shm gone, the id kept; another handle (attach) follows the new
incarnation instead of the old root; a refused reset changes nothing."""

import os
import subprocess
import sys

import pytest

import hutch

# Every pid inside but init's and this shell's own.
OTHERS = 'for p in /proc/[0-9]*; do p=${p#/proc/}; [ "$p" = 1 ] || [ "$p" = $$ ] || echo "$p"; done'


def test_reset_clears_processes_and_files(sb):
    r = sb.exec(["sh", "-c", "echo r >/root/r; echo t >/tmp/t; echo s >/dev/shm/s; sleep 1000 >/dev/null 2>&1 &"])
    assert r.exit_code == 0
    assert sb.exec(["sh", "-c", OTHERS]).stdout.split(), "a process runs before"
    sid = sb.id
    sb.reset()
    assert sb.id == sid
    assert sb.exec(["sh", "-c", OTHERS]).stdout == b""
    for path in ("/root/r", "/tmp/t", "/dev/shm/s"):
        assert not sb.exists(path), path
    assert sb.exists("/bin/busybox")


def test_reset_twice_and_files_after(sb):
    sb.reset()
    sb.write_file("/root/after", "a")
    sb.reset()
    assert not sb.exists("/root/after")
    sb.write_file("/root/after", "b")
    assert sb.read_file("/root/after") == b"b"


def test_other_handle_follows(sb):
    other = hutch.Sandbox.attach(sb.id)
    try:
        other.write_file("/root/old", "1")  # it holds the old root now
        sb.reset()
        assert not other.exists("/root/old"), "the attached handle still sees the old root"
        other.write_file("/root/new", "2")
        assert sb.read_file("/root/new") == b"2"
        assert other.exec(["sh", "-c", OTHERS]).stdout == b""
    finally:
        other.close()


def test_pause_after_a_reset_from_elsewhere(image):
    """The handle that paused learned of the reset under the state lock it
    held for the pause: taking that lock again there waited for ever."""
    code = """
import sys, hutch
a = hutch.Sandbox(image=sys.argv[1])
b = hutch.Sandbox.attach(a.id)
b.reset()
a.pause()
a.resume()
assert a.exec(["true"]).exit_code == 0
b.close()
a.close()
print("done")
"""
    r = subprocess.run([sys.executable, "-c", code, image], capture_output=True, timeout=120, env=dict(os.environ))
    assert r.returncode == 0 and r.stdout.strip() == b"done", r.stderr.decode(errors="replace")


def test_refused_reset_changes_nothing(sb):
    sb.write_file("/root/keep", "k")
    with pytest.raises(hutch.Error):
        sb.reset(to="no-such-image-for-reset")
    assert sb.read_file("/root/keep") == b"k"


def test_reset_closed_handle(image):
    s = hutch.Sandbox(image)
    s.close()
    with pytest.raises(hutch.Error):
        s.reset()


def _init_pid(sid):
    return next(s["pid"] for s in hutch.sandboxes() if s["id"] == sid)


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_owner_destroys_the_new_incarnation(image):
    """The creating handle, once another handle reset the sandbox, ends the
    new init when it closes, not only the old one it knew."""
    s = hutch.Sandbox(image)
    other = hutch.Sandbox.attach(s.id)
    old = _init_pid(s.id)
    other.reset()
    other.close()
    new = _init_pid(s.id)
    assert new != old and _alive(new)
    s.close()
    assert not _alive(new), "the new incarnation's init outlived its owner's close()"
    assert not _alive(old)
