# SPDX-License-Identifier: Apache-2.0
"""hutch.aio's reset, snapshot, ttl, ports and Pool: the loop keeps ticking
through each (a ticker task beside a long exec, a reset, a snapshot, a pool
that waits for a sandbox), and the pool keeps its bound and hands out clean
sandboxes."""

import asyncio
import time
import urllib.request

import pytest

import hutch
import hutch.aio
from test_aio import MAX_LATE, Ticker, run
from test_reset import OTHERS


def test_reset_snapshot_ttl_url_keep_the_loop_ticking(image):
    async def main():
        async with await hutch.aio.Sandbox.create(image, ports=[8090], ttl=600) as sb:
            await sb.write_file("/root/f", "x")
            with Ticker() as t:
                snap = await sb.snapshot()
                await sb.reset()
                await sb.set_ttl(300)
                where = await sb.url(8090)
                left = await sb.ttl_left()
                r = await sb.exec("sleep 1; echo done")
            await t.task
            gone = not await sb.exists("/root/f")
            try:
                async with await hutch.aio.Sandbox.create(snap) as again:
                    kept = await again.read_file("/root/f")
            finally:
                hutch.remove_image(snap.digest)
            return t, where, left, r, gone, kept

    t, where, left, r, gone, kept = run(main())
    assert r.stdout == b"done\n"
    assert where.startswith("127.0.0.1:")
    assert 200 < left <= 300
    assert gone, "reset left the file"
    assert kept == b"x", "the snapshot lost the file"
    assert len(t.late) >= 50
    assert t.worst() < MAX_LATE, f"a tick was {t.worst() * 1000:.0f} ms late"


def test_aio_published_port(image):
    async def main():
        async with await hutch.aio.Sandbox.create(image, ports=["0:8091"]) as sb:
            await sb.write_file("/root/www/index.html", "aio")
            p = await sb.spawn(["httpd", "-f", "-p", "127.0.0.1:8091", "-h", "/root/www"])
            url = await sb.url(8091, scheme="http")
            try:
                for _ in range(50):
                    try:
                        return await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=5).read())
                    except OSError:
                        await asyncio.sleep(0.1)
            finally:
                await p.kill()
                await p.close()

    assert run(main()) == b"aio"


def test_aio_pool_bound_clean_and_ticking(image):
    async def main():
        async with hutch.aio.Pool(image, size=2, labels={"pool": "aio"}) as pool:
            a = await pool.acquire()
            await a.write_file("/root/dirty", "1")
            await a.spawn("sleep 1000 >/dev/null 2>&1")
            b = await pool.acquire()
            with pytest.raises(hutch.TimeoutError):
                await pool.acquire(timeout=0.3)
            n_made = len(hutch.sandboxes(labels={"pool": "aio"}))
            with Ticker() as t:
                waiter = asyncio.ensure_future(pool.acquire(timeout=60))
                await asyncio.sleep(0.3)
                early = waiter.done()
                await pool.release(a)  # resets it, in the executor
                c = await waiter
            await t.task
            dirty = await c.exists("/root/dirty")
            procs = (await c.exec(["sh", "-c", OTHERS])).stdout
            await pool.release(b)
            await pool.release(c)

            # Users side by side, never more than size sandboxes.
            async def user(n):
                async with pool.sandbox(timeout=120) as sb:
                    assert not await sb.exists("/root/n")
                    await sb.write_file("/root/n", str(n))
                    await asyncio.sleep(0.05)
                    return (await sb.read_file("/root/n")).decode()

            outs = await asyncio.gather(*(user(n) for n in range(6)))
            total = len(hutch.sandboxes(labels={"pool": "aio"}))
        left = len(hutch.sandboxes(labels={"pool": "aio"}))
        return c is a, early, dirty, procs, n_made, t, outs, total, left

    same, early, dirty, procs, n_made, t, outs, total, left = run(main())
    assert n_made == 2
    assert not early, "a third sandbox was handed out past size"
    assert same
    assert not dirty, "a file of the last user survived the release"
    assert procs == b"", f"processes of the last user survived: {procs!r}"
    assert outs == [str(n) for n in range(6)]
    assert total <= 2
    assert left == 0, "close() left sandboxes behind"
    assert t.worst() < MAX_LATE, f"a tick was {t.worst() * 1000:.0f} ms late"


def test_aio_pool_closed_and_cancelled(image):
    async def main():
        pool = hutch.aio.Pool(image, size=1, labels={"pool": "aio-cancel"})
        sb = await pool.acquire()
        waiter = asyncio.ensure_future(pool.acquire())
        await asyncio.sleep(0.1)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        await pool.release(sb)
        assert pool.stats() == {"idle": 1, "in_use": 0, "pending": 0, "size": 1}
        await pool.close()
        with pytest.raises(hutch.PoolClosed):
            await pool.acquire()
        return len(hutch.sandboxes(labels={"pool": "aio-cancel"}))

    assert run(main()) == 0
