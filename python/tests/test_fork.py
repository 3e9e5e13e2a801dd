# SPDX-License-Identifier: Apache-2.0
"""Sandbox.fork and hutch.aio.Sandbox.fork: children that start from the
parent's files and environment, each a handle that owns its sandbox; no
write of one reaches the parent or a sibling (its layer, /tmp, /dev/shm);
a count out of range and a closed handle are refused, leaving nothing; the
asyncio call leaves the event loop free."""

import asyncio
import errno
import os
import time

import pytest

import hutch
import hutch.aio

from test_aio import MAX_LATE, Ticker, idle_and_unlisted
from test_leaks import killed_program


def ids():
    return {s["id"] for s in hutch.sandboxes()}


def cat(sb, path):
    """What path holds, read by a process in the sandbox (None: absent)."""
    r = sb.exec(["cat", path])
    return r.stdout.decode() if r.exit_code == 0 else None


def test_children_start_from_the_parent(image):
    with hutch.Sandbox(image, env={"FORKED_ENV": "from-parent"}, labels={"role": "parent"}) as sb:
        sb.write_file("/root/seed", "parent's file")
        sb.exec("echo t > /tmp/parent-tmp; echo s > /dev/shm/parent-shm; rm /bin/true")
        kids = sb.fork(2, labels={"role": "child"})
        try:
            assert len(kids) == 2 and all(isinstance(k, hutch.Sandbox) for k in kids)
            kid_ids = {k.id for k in kids}
            assert len(kid_ids) == 2 and sb.id not in kid_ids and kid_ids <= ids()
            for k in kids:
                assert k._h.owned and not k.closed
                assert k.read_file("/root/seed") == b"parent's file"
                assert not k.exists("/bin/true"), "a file the parent removed is gone in the child too"
                assert k.exec("echo $FORKED_ENV").stdout == b"from-parent\n", "the environment is carried"
                # Its tmpfs is not its layer: not carried.
                assert cat(k, "/tmp/parent-tmp") is None and cat(k, "/dev/shm/parent-shm") is None
                st = k.status()
                assert st["forked_from"] == sb.id and st["state"] == "running"
                assert k.labels == {"role": "child"} and st["labels"] == {"role": "child"} and k.name is None
            assert sb.status()["forked_from"] is None and sb.labels == {"role": "parent"}
            assert sb.exec("echo parent runs").stdout == b"parent runs\n"
        finally:
            for k in kids:
                k.close()
        assert not kid_ids & ids(), "closing a child destroys it"
        assert sb.read_file("/root/seed") == b"parent's file"


def test_no_write_crosses(sb):
    sb.write_file("/root/shared", "p")
    a, b = sb.fork(2)
    with a, b:
        paths = ("/root/shared", "/root/new", "/tmp/new", "/dev/shm/new")
        r = a.exec("for p in " + " ".join(paths) + "; do echo a > $p || exit 1; done")
        assert r.exit_code == 0, r.stderr
        for path in paths:
            assert cat(a, path) == "a\n", path
            for other in (sb, b):
                assert cat(other, path) == ("p" if path == "/root/shared" else None), (path, other)
        # Nor from the parent to a child after the fork, nor between siblings the other way.
        sb.exec("echo late > /root/late; echo late > /tmp/late; echo late > /dev/shm/late")
        b.exec("echo b > /root/from-b; echo b > /dev/shm/from-b")
        for path in ("/root/late", "/tmp/late", "/dev/shm/late"):
            assert cat(a, path) is None and cat(b, path) is None, path
        for path in ("/root/from-b", "/dev/shm/from-b"):
            assert cat(a, path) is None and cat(sb, path) is None, path
        # Each has processes of its own: a child sees none of the parent's.
        sb.exec("sleep 600 >/dev/null 2>&1 &")
        assert b"sleep 600" not in a.exec("ps").stdout


def test_names_and_a_taken_name(image, sb):
    name = f"fork-{os.getpid()}-{time.monotonic_ns() % 1000000}"
    first, second = sb.fork(2, names=[name])
    with first, second:
        assert first.name == name and second.name is None
        assert hutch.sandboxes(name=name)[0]["id"] == first.id
        before = ids()
        with pytest.raises(hutch.ExistsError):
            sb.fork(2, names=["free-" + name, name])
        assert ids() == before, "a refused fork leaves no child"


@pytest.mark.parametrize("n", [0, -1, hutch.FORK_MAX + 1, 10**6])
def test_a_count_out_of_range_is_refused(sb, n):
    before = ids()
    with pytest.raises(hutch.InvalidArgument) as e:
        sb.fork(n)
    assert e.value.errno == errno.EINVAL
    assert f"{n} children" in e.value.message and f"1 to {hutch.FORK_MAX}" in e.value.hint, str(e.value)
    assert ids() == before


def test_argument_types(sb):
    with pytest.raises(TypeError):
        sb.fork(True)
    with pytest.raises(TypeError):
        sb.fork("2")
    with pytest.raises(TypeError):
        sb.fork(1, names="one")
    with pytest.raises(ValueError):
        sb.fork(1, on_ttl="explode")


def test_fork_of_a_closed_sandbox_is_refused(image):
    s = hutch.Sandbox(image)
    s.close()
    before = ids()
    with pytest.raises(hutch.Error) as e:
        s.fork()
    assert e.value.errno == errno.EBADF and "closed" in e.value.message
    assert ids() == before


def test_fork_of_a_removed_sandbox_is_refused(image):
    s = hutch.Sandbox(image)
    other = hutch.Sandbox.attach(s.id)
    try:
        s.close()
        with pytest.raises(hutch.Error) as e:
            other.fork()
        assert e.value.errno in (errno.ESRCH, errno.ENOENT), str(e.value)
    finally:
        other.close()


def test_a_paused_parent_stays_paused(sb):
    sb.write_file("/root/f", "x")
    sb.pause()
    try:
        (kid,) = sb.fork()
        with kid:
            assert sb.paused, "the fork resumed a parent that was paused before it"
            assert kid.read_file("/root/f") == b"x" and not kid.paused
    finally:
        sb.resume()


def test_a_child_has_its_time_limit(sb):
    (kid,) = sb.fork(ttl=3600)
    with kid:
        left = kid.ttl_left
        assert left is not None and 3500 < left <= 3600
        assert sb.ttl_left is None


def test_a_killed_program_leaves_no_child(image, tmp_path):
    """The children are told to the reaper, as a sandbox made here is."""
    code = (
        "import hutch, sys, time\n"
        f"sb = hutch.Sandbox({image!r})\n"
        "kids = sb.fork(2)\n"
        "print(' '.join(k.id for k in kids), flush=True)\n"
        "time.sleep(600)\n"
    )
    left, stderr = killed_program(code, 2, tmp_path)
    assert not left, stderr


# ---- hutch.aio ----


def test_aio_fork_leaves_the_loop_free(image):
    async def main():
        async with await hutch.aio.Sandbox.create(image) as sb:
            await sb.write_file("/root/seed", "aio")
            other = await hutch.aio.Sandbox.create(image)
            try:
                # Another coroutine's command runs while the fork does.
                with Ticker() as t:
                    kids, ran = await asyncio.gather(sb.fork(2), other.exec("sleep 0.3; echo beside"))
                await t.task
                try:
                    seeds = [await k.read_file("/root/seed") for k in kids]
                    froms = [(await k.status())["forked_from"] for k in kids]
                    types = {type(k) for k in kids}
                    kid_ids = {k.id for k in kids}
                finally:
                    for k in kids:
                        await k.close()
                gone = not kid_ids & set(s["id"] for s in await hutch.aio.sandboxes())
            finally:
                await other.close()
            return sb.id, seeds, froms, types, ran, t, gone

    sid, seeds, froms, types, ran, t, gone = asyncio.run(main())
    assert seeds == [b"aio", b"aio"] and froms == [sid, sid]
    assert types == {hutch.aio.Sandbox}
    assert ran.stdout == b"beside\n"
    assert len(t.late) >= 10, "the ticker ran all along the fork"
    assert t.worst() < MAX_LATE, f"a tick was {t.worst() * 1000:.0f} ms late during the fork"
    assert gone, "closing an aio child destroys it"


def test_aio_fork_refusals(image):
    async def main():
        async with await hutch.aio.Sandbox.create(image) as sb:
            with pytest.raises(hutch.InvalidArgument):
                await sb.fork(0)
            with pytest.raises(hutch.InvalidArgument):
                await sb.fork(hutch.FORK_MAX + 1)
        with pytest.raises(hutch.Error) as e:
            await sb.fork()
        return e.value.errno

    assert asyncio.run(main()) == errno.EBADF


def test_aio_cancelled_fork_leaves_no_child(image):
    tag = f"fork-cancel-{os.getpid()}"

    async def main():
        async with await hutch.aio.Sandbox.create(image) as sb:
            task = asyncio.ensure_future(sb.fork(2, labels={"t": tag}))
            await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return await idle_and_unlisted({"t": tag})

    assert asyncio.run(main()) == []
