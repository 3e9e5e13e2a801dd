# SPDX-License-Identifier: Apache-2.0
"""hutch.Pool: sandboxes of one configuration, made once and handed out
again and again, each reset (Sandbox.reset) between two users."""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any, Iterator, List, Optional, Set

from . import _hutch


class PoolClosed(_hutch.Error):
    """The pool was closed: it hands out nothing more."""


class Pool:
    """At most ``size`` sandboxes made as ``hutch.Sandbox(image, **kwargs)``
    makes them, handed out one user at a time:

        with hutch.Pool("default", size=4, memory="1G") as pool:
            with pool.sandbox() as sb:
                sb.exec("...")

    acquire() hands out an idle sandbox, or makes one while fewer than size
    exist, or waits (up to timeout seconds, then hutch.TimeoutError) for one
    to be released.  release() takes it back and resets it (its processes
    end, its files are its image's again) before anyone else gets it; one
    whose reset fails is destroyed and its place made anew.  warm sandboxes
    are made at once.  close() destroys every sandbox of the pool, those
    handed out included.  A Pool may be used from several threads; a
    sandbox handed out is its user's until released (the pool cannot stop
    a user who keeps its handle after release from using it)."""

    def __init__(self, image: Any = "default", size: int = 4, *, warm: int = 0, **kwargs: Any):
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"size: an int >= 1, not {size!r}")
        if isinstance(warm, bool) or not isinstance(warm, int) or not 0 <= warm <= size:
            raise ValueError(f"warm: an int from 0 to size ({size}), not {warm!r}")
        if "name" in kwargs:
            raise ValueError("name: a pool's sandboxes cannot share one name")
        from ._sandbox import Sandbox

        self._make_one = lambda: Sandbox(image, **kwargs)
        self.size = size
        self._cond = threading.Condition()
        self._idle: List[Any] = []  # reset, ready to hand out
        self._out: Set[Any] = set()  # handed out
        self._making = 0  # being made or reset: places taken
        self._closed = False
        try:
            for _ in range(warm):
                with self._cond:
                    self._making += 1
                self._put_back(self._make())
        except BaseException:
            self.close()
            raise

    def _make(self) -> Any:
        """A new sandbox for a place taken (self._making): given it back when this fails."""
        try:
            return self._make_one()
        except BaseException:
            with self._cond:
                self._making -= 1
                self._cond.notify()
            raise

    def _put_back(self, sb: Any) -> None:
        """A ready sandbox of a place taken: idle, or destroyed when the pool closed meanwhile."""
        with self._cond:
            self._making -= 1
            if not self._closed:
                self._idle.append(sb)
                self._cond.notify()
                return
        sb.close()

    @property
    def closed(self) -> bool:
        return self._closed

    def stats(self) -> dict:
        """idle, in_use, pending (being made or reset) and size."""
        with self._cond:
            return {"idle": len(self._idle), "in_use": len(self._out), "pending": self._making, "size": self.size}

    def acquire(self, timeout: Optional[float] = None) -> Any:
        """A sandbox for the caller alone until release(); hutch.TimeoutError
        when none is free within timeout seconds (None: waits as long as
        it takes)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                if self._closed:
                    raise PoolClosed("pool: it is closed")
                if self._idle:
                    sb = self._idle.pop()
                    self._out.add(sb)
                    return sb
                if len(self._out) + self._making < self.size:
                    self._making += 1
                    break
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise _hutch.TimeoutError(f"pool: all {self.size} sandboxes are in use after {timeout} s")
                self._cond.wait(left)
        sb = self._make()
        with self._cond:
            self._making -= 1
            if not self._closed:
                self._out.add(sb)
                return sb
            self._cond.notify()
        sb.close()
        raise PoolClosed("pool: it was closed while a sandbox was made")

    def release(self, sb: Any) -> None:
        """Takes back a sandbox acquire() handed out, and resets it before
        it is handed out again (here, in the caller's thread: the caller
        waits for the reset, not the next user).  One that cannot be reset
        (closed, removed, its policy changed) is destroyed: its place is
        free for a new one."""
        with self._cond:
            if self._closed and sb not in self._out:
                return  # close() destroyed it
            if sb not in self._out:
                raise ValueError(f"pool: {sb!r} is not a sandbox this pool handed out")
            self._out.discard(sb)
            self._making += 1
        try:
            sb.reset()
        except Exception:
            with self._cond:
                self._making -= 1
                self._cond.notify()
            with contextlib.suppress(_hutch.Error):
                sb.destroy()
            return
        self._put_back(sb)

    @contextlib.contextmanager
    def sandbox(self, timeout: Optional[float] = None) -> Iterator[Any]:
        """acquire() as a context: released when the block ends."""
        sb = self.acquire(timeout)
        try:
            yield sb
        finally:
            self.release(sb)

    def close(self) -> None:
        """Destroys every sandbox of the pool, those handed out too (their
        users' calls fail from then on); acquire() raises from then on."""
        with self._cond:
            self._closed = True
            doomed = self._idle + list(self._out)
            self._idle, self._out = [], set()
            self._cond.notify_all()
        first: Optional[BaseException] = None
        for sb in doomed:
            try:
                sb.destroy()
            except _hutch.Error as e:
                first = first or e
        if first is not None:
            raise first

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        st = self.stats()
        return f"<hutch.Pool size={self.size} idle={st['idle']} in_use={st['in_use']}{' closed' if self._closed else ''}>"
