# SPDX-License-Identifier: Apache-2.0
"""hutch.Pool: a sandbox handed back dirty (files, a process left running,
paused, closed) comes out clean or is replaced; never more than size
sandboxes, whatever the threads ask; close() removes them all."""

import threading
import time

import pytest

import hutch

# Every pid inside but init's and this shell's own.
OTHERS = 'for p in /proc/[0-9]*; do p=${p#/proc/}; [ "$p" = 1 ] || [ "$p" = $$ ] || echo "$p"; done'


def pool_ids(label):
    return {s["id"] for s in hutch.sandboxes(labels={"pool": label})}


def test_dirty_sandbox_comes_back_clean(image):
    with hutch.Pool(image, size=1, labels={"pool": "dirty"}) as pool:
        sb = pool.acquire()
        sid = sb.id
        sb.write_file("/root/secret", "from the last user")
        sb.exec("echo t >/tmp/t; echo s >/dev/shm/s; sleep 1000 >/dev/null 2>&1 &")
        assert sb.exec(["sh", "-c", OTHERS]).stdout.split()
        pool.release(sb)
        again = pool.acquire()
        assert again.id == sid, "size 1: the same sandbox, reset"
        for path in ("/root/secret", "/tmp/t", "/dev/shm/s"):
            assert not again.exists(path), f"{path} survived the release"
        assert again.exec(["sh", "-c", OTHERS]).stdout == b"", "a process of the last user survived"
        pool.release(again)


def test_context_manager_and_a_closed_sandbox_is_replaced(image):
    with hutch.Pool(image, size=1, labels={"pool": "ctx"}) as pool:
        with pool.sandbox() as sb:
            first = sb.id
            sb.close()  # the user destroyed it: it cannot be reset
        assert pool.stats()["idle"] == 0 and pool.stats()["pending"] == 0
        with pool.sandbox(timeout=60) as sb:
            assert sb.id != first and sb.exec("true").ok
        assert pool.stats()["idle"] == 1


def test_paused_sandbox_handed_back(image):
    with hutch.Pool(image, size=1) as pool:
        sb = pool.acquire()
        try:
            sb.pause()
        except hutch.Error as e:
            pool.release(sb)
            pytest.skip(f"this host cannot pause a sandbox made here: {e}")
        pool.release(sb)
        with pool.sandbox() as again:
            assert again.exec("true").ok, "a paused sandbox came out of the pool"


def test_size_bound_and_timeout(image):
    with hutch.Pool(image, size=2, labels={"pool": "bound"}) as pool:
        a, b = pool.acquire(), pool.acquire()
        t0 = time.monotonic()
        with pytest.raises(hutch.TimeoutError):
            pool.acquire(timeout=0.5)
        assert time.monotonic() - t0 >= 0.4
        assert len(pool_ids("bound")) == 2
        got = []
        waiter = threading.Thread(target=lambda: got.append(pool.acquire(timeout=60)))
        waiter.start()
        time.sleep(0.3)
        assert not got, "a third sandbox was handed out past size"
        pool.release(a)
        waiter.join(60)
        assert got and got[0] is a
        stranger = hutch.Sandbox.attach(b.id)
        with pytest.raises(ValueError):
            pool.release(stranger)  # another handle, not the one handed out
        stranger.close()
        pool.release(b)
        pool.release(got[0])
        assert len(pool_ids("bound")) == 2


def test_threads_never_share_a_sandbox(image):
    size, threads, rounds = 3, 6, 2
    holders = {}
    lock = threading.Lock()
    errors = []
    peak = [0]

    def work(n):
        try:
            for i in range(rounds):
                with pool.sandbox(timeout=120) as sb:
                    with lock:
                        assert sb.id not in holders, "two threads hold one sandbox"
                        holders[sb.id] = n
                        peak[0] = max(peak[0], len(holders))
                    assert not sb.exists("/root/mine"), "a file of another user"
                    sb.write_file("/root/mine", str(n))
                    assert sb.exec("cat /root/mine").stdout == str(n).encode()
                    with lock:
                        del holders[sb.id]
        except BaseException as e:
            errors.append(e)

    with hutch.Pool(image, size=size, labels={"pool": "threads"}) as pool:
        ts = [threading.Thread(target=work, args=(n,)) for n in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(300)
        assert not errors, errors
        assert 1 <= peak[0] <= size
        assert len(pool_ids("threads")) <= size


def test_close_removes_all(image):
    pool = hutch.Pool(image, size=3, warm=2, labels={"pool": "close"})
    assert pool.stats()["idle"] == 2
    held, second = pool.acquire(), pool.acquire()
    assert len(pool_ids("close")) == 2, "warm sandboxes are handed out first"
    third = pool.acquire()
    assert len(pool_ids("close")) == 3
    pool.release(third)
    pool.release(second)
    pool.close()
    assert pool_ids("close") == set(), "close() left sandboxes behind"
    with pytest.raises(hutch.Error):
        held.exec("true")
    pool.release(held)  # after close: nothing to do
    with pytest.raises(hutch.PoolClosed):
        pool.acquire()


def test_bad_arguments(image):
    for kw in ({"size": 0}, {"size": -1}, {"size": True}, {"size": 2, "warm": 3}, {"name": "x"}):
        with pytest.raises(ValueError):
            hutch.Pool(image, **kw)
    with pytest.raises(hutch.Error):
        hutch.Pool("no-such-image-for-pool", size=1, warm=1)
    pool = hutch.Pool("no-such-image-for-pool", size=1)
    with pytest.raises(hutch.Error):
        pool.acquire()
    assert pool.stats()["pending"] == 0, "a failed make kept its place"
    with pytest.raises(hutch.Error):
        pool.acquire(timeout=1)  # the place is free again: it tries, not times out
    pool.close()
