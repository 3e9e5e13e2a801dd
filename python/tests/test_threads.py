# SPDX-License-Identifier: Apache-2.0
"""Threads: one sandbox shared, many sandboxes at once, the GIL released."""

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import hutch


def test_shared_sandbox_from_threads(sb):
    def work(i):
        out = []
        for j in range(10):
            r = sb.exec(["echo", f"{i}-{j}"])
            out.append(r.stdout)
        return out

    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(work, range(8)))
    for i, out in enumerate(results):
        assert out == [f"{i}-{j}\n".encode() for j in range(10)]


def test_gil_released_while_waiting(sb):
    # While one thread waits for a sleeping process, others keep running.
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(1)
            time.sleep(0.01)

    t = threading.Thread(target=ticker)
    t.start()
    sb.exec("sleep 1")
    stop.set()
    t.join()
    assert len(ticks) > 30


def test_sandboxes_in_parallel(image):
    def one(i):
        with hutch.Sandbox(image) as s:
            return s.exec(f"echo {i}").stdout

    with ThreadPoolExecutor(4) as pool:
        assert list(pool.map(one, range(8))) == [f"{i}\n".encode() for i in range(8)]


def test_close_while_another_thread_spawns(image):
    s = hutch.Sandbox(image)
    errors = []

    def loop():
        for _ in range(50):
            try:
                s.exec("true")
            except hutch.Error as e:
                errors.append(e)
                return

    t = threading.Thread(target=loop)
    t.start()
    time.sleep(0.2)
    s.close()
    t.join(30)
    assert not t.is_alive()
    # An exec under way when the sandbox went may fail as its init died (a
    # hutch.Error, whatever its errno); one begun after the close is refused.
    assert all(isinstance(e, hutch.Error) for e in errors)
    try:
        s.exec("true")
        raise AssertionError("exec on a closed sandbox succeeded")
    except hutch.Error as e:
        assert e.errno == 9  # EBADF
