# SPDX-License-Identifier: Apache-2.0
"""100 sandboxes opened and closed leave no fd and no process behind."""

import gc
import json
import os
import subprocess
import sys
import time

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
    with hutch.Sandbox(image):  # what the library sets up once (the reaper)
        pass
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


def _ids():
    return {s["id"] for s in hutch.sandboxes()}


def killed_program(code, n, tmp_path):
    """Runs code, a program that prints the ids of the n sandboxes it made
    on one line and sleeps; SIGKILLs it once it has, and waits up to 60 s
    for the reaper to remove them.  Returns the ids still listed then and
    what the program wrote on stderr (its reaper's too)."""
    err = open(tmp_path / "stderr", "w+")
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=err, text=True, env=os.environ)
    try:
        ids = set(p.stdout.readline().split())
        assert len(ids) == n and ids <= _ids()
    finally:
        p.kill()
        p.wait(30)
    deadline = time.monotonic() + 60
    while ids & _ids() and time.monotonic() < deadline:
        time.sleep(0.2)
    err.seek(0)
    return ids & _ids(), err.read()


def test_killed_program_leaves_no_sandbox(image, tmp_path):
    # SIGKILL: no atexit handler, no finalizer runs; the reaper removes them.
    code = (
        "import hutch, sys, time\n"
        f"sbs = [hutch.Sandbox({image!r}) for _ in range(3)]\n"
        "sbs[0].exec('sleep 600 >/dev/null 2>&1 &')\n"
        "p = sbs[1].spawn('sleep 600')\n"
        "print(' '.join(s.id for s in sbs), flush=True)\n"
        "time.sleep(600)\n"
    )
    left, stderr = killed_program(code, 3, tmp_path)
    assert not left, stderr
    assert "removing 3 sandbox(es)" in stderr


def test_reaper_has_no_cap(tmp_path):
    # It is told of more sandboxes than the old fixed table held (4096): it
    # keeps them all.  These ids name no sandbox: removing them finds none.
    n = 5000
    lines = [json.dumps(["+", str(tmp_path), f"{i:012x}"]) for i in range(n)]
    lines += [json.dumps(["-", str(tmp_path), f"{i:012x}"]) for i in range(0, n, 500)]
    r = subprocess.run(
        [sys.executable, "-m", "hutch._reaper"],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        env=os.environ,
    )
    assert f"removing {n - n // 500} sandbox(es)" in r.stderr, r.stderr
