# SPDX-License-Identifier: Apache-2.0
"""hutch for asyncio: the same sandboxes, with calls that never block the
event loop.

    import asyncio, hutch.aio

    async def main():
        async with await hutch.aio.Sandbox.create("default", name="job-1") as sb:
            r = await sb.exec("echo hello", timeout=30)
            await sb.write_file("/tmp/x", "data")
            await sb.pause()
            await sb.resume()
            snap = await sb.snapshot()
            for child in await sb.fork(2):
                async with child:
                    await child.exec("...")
            await sb.reset()

        async with hutch.aio.Pool("default", size=4) as pool:
            async with pool.sandbox() as sb:
                await sb.exec("...")

    asyncio.run(main())

A process's output, input and end are watched by the event loop itself
(loop.add_reader on its non-blocking pipes and on an fd that becomes
readable when it ends), so any number of them run side by side with no
thread each.  Every other call (create, spawn, files, pause, resume, reset,
snapshot, fork, close)
runs in a small executor of this module's own, WORKERS threads, in the
runtime library, which releases the GIL meanwhile.  A call that is
cancelled leaves nothing behind: a sandbox or process it made meanwhile is
closed."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, AsyncIterator, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import _hutch, _sandbox
from ._extras import Snapshot
from ._lifecycle import hybridmethod
from ._sandbox import MAX_OUTPUT, Command, Result, _argv, _data, _env, _ProcIds, _result

__all__ = ["Sandbox", "Pool", "Process", "WORKERS"]

#: Threads of the executor that runs the calls that block (create, spawn,
#: files, pause, resume, close).  Commands' waits take none.
WORKERS = 4
#: After a process has ended, its pipes are read until EOF, or until they stay
#: silent this long (something it left running holds them open).
DRAIN_GRACE = 0.2

_executor: Optional[ThreadPoolExecutor] = None
_executor_pid = 0
_executor_lock = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _executor, _executor_pid
    with _executor_lock:
        if _executor is None or _executor_pid != os.getpid():
            _executor = ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="hutch-aio")
            _executor_pid = os.getpid()
        return _executor


async def _call(fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """fn(*args, **kw) in the executor."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(_pool(), functools.partial(fn, *args, **kw))


async def _making(fn: Callable[[], Any], undo: Callable[[Any], None]) -> Any:
    """fn() in the executor, for something it makes (a sandbox, a process):
    when the caller is cancelled while fn runs, what fn makes is undone
    (undo(it), in the executor) once it is made."""
    fut = asyncio.get_running_loop().run_in_executor(_pool(), fn)
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:

        def undo_logged(made: Any) -> None:
            # Nobody awaits the undo: its failure would be lost with its
            # future, and what it left behind with it.
            try:
                undo(made)
            except Exception as e:  # noqa: BLE001 - reported, not raised
                logging.getLogger("hutch").warning("a cancelled call could not undo what it made: %s", e)

        def done(f: "asyncio.Future[Any]") -> None:
            if not f.cancelled() and f.exception() is None:
                _pool().submit(undo_logged, f.result())

        fut.add_done_callback(done)
        raise


class Process(_ProcIds):
    """A process running in a sandbox (Sandbox.spawn), watched by the event
    loop: its stdout and stderr are kept (up to max_output bytes each) or
    given chunk by chunk to on_stdout and on_stderr, called in the loop."""

    def __init__(
        self,
        proc: "_hutch.Proc",
        on_stdout: Optional[Callable[[bytes], None]] = None,
        on_stderr: Optional[Callable[[bytes], None]] = None,
        max_output: int = MAX_OUTPUT,
    ):
        self._proc = proc
        self._loop = asyncio.get_running_loop()
        self._cb = {1: on_stdout, 2: on_stderr}
        self._buf = {1: bytearray(), 2: bytearray()}
        self._cut = {1: False, 2: False}
        self._max = max_output
        self._readers: Dict[int, int] = {}  # stream -> fd watched
        self._exit: Optional[Mapping] = None
        self._error: Optional[BaseException] = None
        self._done = self._loop.create_future()  # ended, and its pipes drained
        self._grace: Optional[asyncio.TimerHandle] = None
        self._timed_out = False
        self._closed = False
        self.returncode: Optional[int] = None
        for s in (1, 2):
            fd = proc.fileno(s)
            if fd >= 0:
                self._readers[s] = fd
                self._loop.add_reader(fd, self._readable, s, fd)
        self._event_fd = proc.event_fileno()
        self._loop.add_reader(self._event_fd, self._ended)

    def _unwatch(self, s: int) -> None:
        fd = self._readers.pop(s, None)
        if fd is not None:
            self._loop.remove_reader(fd)

    def _readable(self, s: int, fd: int) -> None:
        try:
            data = os.read(fd, 65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            self._fail(e)
            return
        if not data:
            self._unwatch(s)
        elif self._cb[s] is not None:
            self._cb[s](data)  # type: ignore[misc]
        else:
            room = self._max - len(self._buf[s])
            if len(data) > room:
                data, self._cut[s] = data[: max(room, 0)], True
            self._buf[s] += data
        if self._exit is not None:
            self._drain()

    def _ended(self) -> None:
        try:
            ex = self._proc.wait(0)
        except _hutch.Error as e:
            self._fail(e)
            return
        if ex is None:
            return
        self._loop.remove_reader(self._event_fd)
        self._exit = ex
        self.returncode = ex["exit_code"]
        self._drain()

    def _drain(self) -> None:
        """Its output read to EOF, or silent DRAIN_GRACE seconds since its end."""
        if self._grace is not None:
            self._grace.cancel()
            self._grace = None
        if not self._readers:
            self._finish()
        else:
            self._grace = self._loop.call_later(DRAIN_GRACE, self._finish)

    def _finish(self) -> None:
        for s in list(self._readers):
            self._unwatch(s)
        if not self._done.done():
            self._done.set_result(None)

    def _fail(self, e: BaseException) -> None:
        self._error = e
        self._loop.remove_reader(self._event_fd)
        self._finish()

    async def write(self, data: Union[bytes, str]) -> int:
        """Writes all of data to its stdin, waiting (in the loop) while its pipe is full."""
        fd = self._proc.fileno(0)
        if fd < 0:
            raise BrokenPipeError("the process's stdin is closed")
        view = memoryview(_data(data))
        total = len(view)
        while view:
            try:
                view = view[os.write(fd, view) :]
                continue
            except (BlockingIOError, InterruptedError):
                pass
            ready = self._loop.create_future()
            self._loop.add_writer(fd, lambda: ready.done() or ready.set_result(None))
            try:
                await ready
            finally:
                self._loop.remove_writer(fd)
        return total

    def close_stdin(self) -> None:
        """Closes its stdin: it reads end of file."""
        self._proc.close_fd(0)

    async def _feed(self, data: bytes) -> None:
        try:
            await self.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # it stopped reading
        finally:
            self.close_stdin()

    async def wait(self, timeout: Optional[float] = None) -> int:
        """Waits for it to end and its output to be read; returns its exit
        code.  Past timeout seconds raises hutch.TimeoutError, leaving it running."""
        try:
            await asyncio.wait_for(asyncio.shield(self._done), timeout)
        except asyncio.TimeoutError:
            raise _hutch.TimeoutError(f"process {self.sandbox_pid} still runs after {timeout} s") from None
        if self._error is not None:
            raise self._error
        return self.returncode  # type: ignore[return-value]

    def poll(self) -> Optional[int]:
        """Its exit code once it has ended, else None."""
        return self.returncode

    @property
    def stdout(self) -> bytes:
        """What it wrote on stdout so far (without on_stdout)."""
        return bytes(self._buf[1])

    @property
    def stderr(self) -> bytes:
        return bytes(self._buf[2])

    def result(self) -> Result:
        """How it ended, with what it wrote (once wait() has returned)."""
        if self._exit is None:
            raise _hutch.Error("the process has not ended: await wait() first")
        ex = dict(self._exit)
        if self._timed_out:
            ex["timed_out"] = True
            ex["exit_code"] = 124
        return _result(bytes(self._buf[1]), bytes(self._buf[2]), ex, self._cut[1], self._cut[2])

    async def signal(self, sig: int) -> None:
        """Sends sig to its process group."""
        await _call(self._proc.signal, int(sig))

    async def kill(self) -> None:
        """SIGKILL to its process group."""
        await _call(self._proc.kill)

    def _kill_at_timeout(self) -> None:
        if self._exit is None:
            self._timed_out = True
            _pool().submit(self._proc.kill)

    async def close(self) -> None:
        """Frees the handle, killing the process if it still runs."""
        if self._closed:
            return
        self._closed = True
        self._finish()
        self._loop.remove_reader(self._event_fd)
        if self._grace is not None:
            self._grace.cancel()
        # Shielded: a cancelled caller still frees the handle.
        await asyncio.shield(self._loop.run_in_executor(_pool(), self._proc.close))

    async def __aenter__(self) -> "Process":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()


Env = Optional[Union[Mapping[str, str], Iterable[str]]]


class Sandbox:
    """A live sandbox for asyncio: ``await Sandbox.create(...)`` takes
    hutch.Sandbox's arguments (image, memory, cpus, pids, disk, net,
    allow, env, binds, workdir, name, labels, ...).  Use it with ``async
    with``: leaving the block closes it, which destroys a sandbox made here
    and lets go of an attached one."""

    def __init__(self, sandbox: "_sandbox.Sandbox"):
        self._sb = sandbox

    @classmethod
    async def create(cls, image: str = "default", **kwargs: Any) -> "Sandbox":
        """Creates a sandbox as hutch.Sandbox(image, **kwargs) does, in the executor."""
        sb = await _making(lambda: _sandbox.Sandbox(image, **kwargs), lambda s: s.close())
        return cls(sb)

    @classmethod
    async def attach(cls, id: str, *, state_dir: Optional[str] = None, store: Optional[str] = None) -> "Sandbox":
        """A handle on a running sandbox made elsewhere, by id or name."""

        def attach() -> "_sandbox.Sandbox":
            sb = _sandbox.Sandbox.attach(id, state_dir=state_dir, store=store)
            sb.name  # read here: the properties then read nothing
            return sb

        return cls(await _making(attach, lambda s: s.close()))

    @property
    def sync(self) -> "_sandbox.Sandbox":
        """The hutch.Sandbox under it, for calls this class has not (from a thread of your own)."""
        return self._sb

    @property
    def id(self) -> str:
        return self._sb.id

    @property
    def name(self) -> Optional[str]:
        return self._sb.name

    @property
    def labels(self) -> Dict[str, str]:
        return self._sb.labels

    @property
    def closed(self) -> bool:
        return self._sb.closed

    def __repr__(self) -> str:
        return f"<hutch.aio.Sandbox {self.id}{' closed' if self.closed else ''}>"

    async def close(self) -> None:
        """Destroys a sandbox made here; lets go of an attached one."""
        await asyncio.shield(_call(self._sb.close))

    async def destroy(self) -> None:
        """Kills everything in it and removes it, attached or not."""
        await asyncio.shield(_call(self._sb.destroy))

    async def __aenter__(self) -> "Sandbox":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()

    # ---- pause and resume ----

    async def pause(self) -> str:
        """Freezes every process of it (see hutch.Sandbox.pause); returns "cgroup" or "ptrace"."""
        return await _call(self._sb.pause)

    async def _resume(self) -> None:
        """Lets a paused sandbox go on.  On the class,
        ``await Sandbox.resume(id_or_name)`` attaches, resumes, and returns the handle."""
        await _call(self._sb.resume)

    async def _resume_by_name(cls, id: str, *, state_dir: Optional[str] = None, store: Optional[str] = None) -> Any:
        def resume() -> "_sandbox.Sandbox":
            sb = _sandbox.Sandbox.resume(id, state_dir=state_dir, store=store)
            sb.name
            return sb

        return cls(await _making(resume, lambda s: s.close()))

    resume = hybridmethod(_resume, _resume_by_name)

    async def is_paused(self) -> bool:
        """Whether it is paused (or being paused)."""
        return await _call(lambda: self._sb.paused)

    async def status(self) -> Dict[str, object]:
        """Its entry in hutch.sandboxes() (state "running", "paused" or "dead", ...)."""
        return await _call(self._sb.status)

    async def limits(self) -> Dict[str, object]:
        return await _call(self._sb.limits)

    # ---- reset, snapshots, time limit, ports (see hutch.Sandbox) ----

    async def reset(self, to: Union[None, str, Snapshot] = None) -> None:
        """Back to its image's state (or to's), as hutch.Sandbox.reset."""
        await _call(self._sb.reset, to)

    async def snapshot(self, name: Optional[str] = None) -> Snapshot:
        """Its writable layer as an image (hutch.Sandbox.snapshot)."""
        return await _call(self._sb.snapshot, name)

    async def fork(self, n: int = 1, **kwargs: Any) -> List["Sandbox"]:
        """n new sandboxes that start from its files (hutch.Sandbox.fork,
        which takes the same arguments), each a hutch.aio.Sandbox that owns
        its sandbox.  Made in the executor; a cancelled call closes the
        children once they are made."""

        def undo(children: List["_sandbox.Sandbox"]) -> None:
            # Every child is closed, even after one could not be.
            failed = []
            for c in children:
                try:
                    c.close()
                except Exception as e:  # noqa: BLE001 - raised below, once
                    failed.append(f"{c.id}: {e}")
            if failed:
                raise RuntimeError("; ".join(failed))

        children = await _making(lambda: self._sb.fork(n, **kwargs), undo)
        return [Sandbox(c) for c in children]

    async def set_ttl(self, seconds: Optional[float]) -> None:
        """Its time limit from now; None or 0 clears it."""
        await _call(self._sb.set_ttl, seconds)

    async def ttl_left(self) -> Optional[float]:
        return await _call(lambda: self._sb.ttl_left)

    async def ports(self) -> List[dict]:
        return await _call(self._sb.ports)

    async def url(self, port: int, scheme: Optional[str] = None) -> str:
        """Where the host reaches its published port (hutch.Sandbox.url)."""
        return await _call(self._sb.url, port, scheme)

    # ---- processes ----

    async def spawn(
        self,
        cmd: Command,
        *,
        cwd: Optional[str] = None,
        env: Env = None,
        stdin: bool = True,
        on_stdout: Optional[Callable[[bytes], None]] = None,
        on_stderr: Optional[Callable[[bytes], None]] = None,
        max_output: int = MAX_OUTPUT,
    ) -> Process:
        """Starts cmd (a string for ``sh -c``, or an argv list); returns a
        Process the event loop watches.  Raises hutch.PausedError while the
        sandbox is paused."""
        argv, envl = _argv(cmd), _env(env)
        proc = await _making(lambda: self._sb._h.spawn(argv, envl, cwd, stdin, True, True), lambda p: p.close())
        return Process(proc, on_stdout, on_stderr, max_output)

    async def exec(
        self,
        cmd: Command,
        *,
        timeout: Optional[float] = None,
        cwd: Optional[str] = None,
        env: Env = None,
        stdin: Union[None, bytes, str] = None,
        max_output: int = MAX_OUTPUT,
    ) -> Result:
        """Runs cmd to its end and returns its Result, as hutch.Sandbox.exec
        does: killed after timeout seconds (timed_out, exit code 124), stdin
        fed to it, output beyond max_output bytes per stream dropped.  A
        cancelled call kills the process."""
        p = await self.spawn(cmd, cwd=cwd, env=env, stdin=stdin is not None, max_output=max_output)
        timer = p._loop.call_later(timeout, p._kill_at_timeout) if timeout is not None else None
        feed = asyncio.ensure_future(p._feed(_data(stdin))) if stdin is not None else None
        try:
            await p.wait()
            return p.result()
        finally:
            if timer is not None:
                timer.cancel()
            if feed is not None and not feed.done():
                feed.cancel()
            await p.close()

    # ---- files (see hutch.Sandbox: hutch reads and writes them itself) ----

    async def read_file(self, path: str, *, max: int = MAX_OUTPUT) -> bytes:
        return await _call(self._sb.read_file, path, max=max)

    async def write_file(self, path: str, data: Union[bytes, str]) -> None:
        await _call(self._sb.write_file, path, data)

    async def exists(self, path: str) -> bool:
        return await _call(self._sb.exists, path)

    async def file_kind(self, path: str) -> str:
        return await _call(self._sb.file_kind, path)

    async def mkdir(self, path: str) -> None:
        await _call(self._sb.mkdir, path)

    async def remove(self, path: str) -> None:
        await _call(self._sb.remove, path)

    async def listdir(self, path: str, depth: int = 1) -> List[str]:
        return await _call(self._sb.listdir, path, depth)

    async def upload(self, host_path: Union[str, "os.PathLike[str]"], path: str) -> Dict[str, object]:
        return await _call(self._sb.upload, host_path, path)

    async def download(self, path: str, host_path: Union[str, "os.PathLike[str]"]) -> Dict[str, object]:
        return await _call(self._sb.download, path, host_path)


async def sandboxes(state_dir: Optional[str] = None, **filters: Any) -> List[Dict[str, object]]:
    """hutch.sandboxes(), in the executor."""
    return await _call(_sandbox.sandboxes, state_dir, **filters)


class Pool:
    """hutch.Pool for asyncio: at most size sandboxes made as
    ``Sandbox.create(image, **kwargs)`` makes them, each handed to one user
    at a time and reset before the next.  ``await acquire()`` waits in the
    event loop, not in a thread, for one to be free; making, resetting and
    destroying run in the executor.  Use ``async with pool.sandbox() as
    sb``; ``await close()`` (or leaving ``async with pool``) destroys them
    all.  A Pool belongs to the event loop it is first used in."""

    def __init__(self, image: Any = "default", size: int = 4, **kwargs: Any):
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"size: an int >= 1, not {size!r}")
        if "name" in kwargs:
            raise ValueError("name: a pool's sandboxes cannot share one name")
        self._image, self._kwargs, self.size = image, kwargs, size
        self._idle: List[Sandbox] = []
        self._out: set = set()
        self._making = 0
        self._closed = False
        self._cond: Optional[asyncio.Condition] = None

    def _condition(self) -> asyncio.Condition:
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    @property
    def closed(self) -> bool:
        return self._closed

    def stats(self) -> Dict[str, int]:
        return {"idle": len(self._idle), "in_use": len(self._out), "pending": self._making, "size": self.size}

    async def _given_back(self, place: bool = True) -> None:
        cond = self._condition()
        async with cond:
            if place:
                self._making -= 1
            cond.notify()

    async def acquire(self, timeout: Optional[float] = None) -> Sandbox:
        """A sandbox for the caller alone until release(); hutch.TimeoutError
        when none is free within timeout seconds."""
        cond = self._condition()

        def ready() -> bool:
            return self._closed or bool(self._idle) or len(self._out) + self._making < self.size

        async with cond:
            try:
                await asyncio.wait_for(cond.wait_for(ready), timeout)
            except asyncio.TimeoutError:
                raise _hutch.TimeoutError(f"pool: all {self.size} sandboxes are in use after {timeout} s") from None
            if self._closed:
                from ._pool import PoolClosed

                raise PoolClosed("pool: it is closed")
            if self._idle:
                sb = self._idle.pop()
                self._out.add(sb)
                return sb
            self._making += 1
        try:
            sb = await Sandbox.create(self._image, **self._kwargs)
        except BaseException:
            await asyncio.shield(self._given_back())
            raise
        async with cond:
            self._making -= 1
            if not self._closed:
                self._out.add(sb)
                return sb
            cond.notify()
        await sb.close()
        from ._pool import PoolClosed

        raise PoolClosed("pool: it was closed while a sandbox was made")

    async def release(self, sb: Sandbox) -> None:
        """Takes it back and resets it before it is handed out again; one
        that cannot be reset is destroyed, its place free for a new one."""
        cond = self._condition()
        async with cond:
            if self._closed and sb not in self._out:
                return
            if sb not in self._out:
                raise ValueError(f"pool: {sb!r} is not a sandbox this pool handed out")
            self._out.discard(sb)
            self._making += 1
        # Shielded: a cancelled caller does not leave a half-reset sandbox
        # in the idle list, nor a place counted that nothing fills.
        await asyncio.shield(self._reset_back(sb))

    async def _reset_back(self, sb: Sandbox) -> None:
        cond = self._condition()
        try:
            await sb.reset()
        except Exception:
            await self._given_back()
            try:
                await sb.destroy()
            except _hutch.Error:
                pass
            return
        async with cond:
            self._making -= 1
            if not self._closed:
                self._idle.append(sb)
                cond.notify()
                return
        await sb.close()

    @contextlib.asynccontextmanager
    async def sandbox(self, timeout: Optional[float] = None) -> AsyncIterator[Sandbox]:
        """acquire() as an async context: released when the block ends."""
        sb = await self.acquire(timeout)
        try:
            yield sb
        finally:
            await self.release(sb)

    async def close(self) -> None:
        """Destroys every sandbox of the pool, those handed out too."""
        cond = self._condition()
        async with cond:
            self._closed = True
            doomed = self._idle + list(self._out)
            self._idle, self._out = [], set()
            cond.notify_all()
        first: Optional[BaseException] = None
        for sb in doomed:
            try:
                await sb.destroy()
            except _hutch.Error as e:
                first = first or e
        if first is not None:
            raise first

    async def __aenter__(self) -> "Pool":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
