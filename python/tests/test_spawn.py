# SPDX-License-Identifier: Apache-2.0
"""Sandbox.spawn: a process to talk to while it runs."""

import signal
import threading
import time

import pytest

import hutch


def test_stdout_readable_while_running(sb):
    p = sb.spawn("echo first; read x; echo got $x")
    assert p.stdout.readline() == b"first\n"  # before it ends: it waits for input
    assert p.poll() is None
    p.write(b"hello\n")
    p.close_stdin()
    assert p.stdout.readline() == b"got hello\n"
    assert p.wait(10) == 0
    p.close()


def test_wait_timeout_leaves_it_running(sb):
    with sb.spawn("sleep 30") as p:
        with pytest.raises(hutch.TimeoutError):
            p.wait(0.2)
        assert p.poll() is None
        p.kill()
        assert p.wait(10) == 128 + signal.SIGKILL
        assert p.exit.signal == signal.SIGKILL


def test_kill_from_another_thread(sb):
    p = sb.spawn("sleep 60")
    threading.Timer(0.3, p.kill).start()
    t = time.monotonic()
    assert p.wait(30) == 137
    assert time.monotonic() - t < 10
    p.close()


def test_terminate(sb):
    with sb.spawn("sleep 60") as p:
        p.terminate()
        assert p.wait(10) == 128 + signal.SIGTERM


def test_callbacks(sb):
    out, err = [], []
    p = sb.spawn("for i in 1 2 3; do echo o$i; echo e$i >&2; done", on_stdout=out.append, on_stderr=err.append)
    assert p.stdout is None and p.stderr is None
    assert p.wait(10) == 0
    assert b"".join(out) == b"o1\no2\no3\n"
    assert b"".join(err) == b"e1\ne2\ne3\n"
    p.close()


def test_communicate(sb):
    with sb.spawn("tr a-z A-Z") as p:
        r = p.communicate("abc", timeout=10)
    assert r.stdout == b"ABC" and r.ok


def test_close_kills_and_ends_a_blocked_reader(sb):
    p = sb.spawn("sleep 60")
    got = []

    def reader():
        try:
            got.append(p.stdout.read())
        except (hutch.Error, ValueError) as e:
            got.append(e)

    t = threading.Thread(target=reader)
    t.start()
    time.sleep(0.3)
    p.close()  # the reader is woken, the process killed
    t.join(10)
    assert not t.is_alive()
    assert got and (got[0] == b"" or isinstance(got[0], Exception))
    r = sb.exec("pgrep -x sleep || echo none", timeout=10)
    assert b"none" in r.stdout


def test_closed_handle_raises(sb):
    p = sb.spawn("true")
    p.close()
    with pytest.raises(hutch.Error) as e:
        p.wait(1)
    assert e.value.errno == 9  # EBADF
