# SPDX-License-Identifier: Apache-2.0
"""The pure-Python layer of hutch over the extension module hutch._hutch."""

from __future__ import annotations

import atexit
import io
import json
import os
import signal as _signal
import stat
import subprocess
import sys
import threading
import weakref
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _hutch, _paths
from ._errors import pythonize
from ._extras import PortSpec, Snapshot, _ExtrasMixin, devices_arg, image_arg, on_ttl_arg, ports_arg, ttl_arg
from ._fork import _ForkMixin
from ._interp import DEFAULT, _Default
from ._lifecycle import Labels, _Lifecycle, labels_arg, labels_dict
from ._reset import _ResetMixin

if TYPE_CHECKING:
    from ._interp import Interpreter

_paths.use_build_tree_init()

Command = Union[str, Sequence[str]]
#: The shell a command given as one string runs with (``sh -c CMD``).
SHELL = "/bin/sh"
#: stdout and stderr of exec() are kept up to this many bytes each.
MAX_OUTPUT = 64 << 20


@dataclass(frozen=True)
class Usage:
    """What a process used, from the sandbox's cgroup (zero when unknown,
    e.g. under the rlimits fallback)."""

    memory_peak: int = 0
    memory_max: int = 0
    cpu_usec: int = 0
    oom_kills: int = 0
    nr_throttled: int = 0
    throttled_usec: int = 0


@dataclass(frozen=True)
class Result:
    """How a command ended and what it printed.

    exit_code follows the shell: the status, 128+N for signal N, 124 after
    the timeout, 126/127 when the program could not be started (``failure``
    says why), 125 when its setup failed."""

    exit_code: int
    stdout: bytes
    stderr: bytes
    signal: int = 0
    timed_out: bool = False
    oom_killed: bool = False
    usage: Usage = field(default_factory=Usage)
    wall_seconds: float = 0.0
    failure: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False

    @property
    def ok(self) -> bool:
        """exit_code is 0."""
        return self.exit_code == 0

    @property
    def text(self) -> str:
        """stdout decoded as UTF-8 (invalid bytes replaced)."""
        return self.stdout.decode("utf-8", "replace")


def _usage(d: Mapping) -> Usage:
    return Usage(**{k: d.get(k, 0) for k in Usage.__dataclass_fields__})


def _result(out: bytes, err: bytes, ex: Mapping, out_trunc: bool = False, err_trunc: bool = False,
            streams: bool = True) -> Result:
    """streams: out and err are what it wrote, read to their end (exec,
    communicate); else they were its streams, read elsewhere."""
    if ex["failure"] and streams:
        # Nothing ran to say why (exit code 125, 126 or 127): hutch says it
        # on the stream a shell would ("hutch: execute /x: No such file or
        # directory"), as hutch exec does.
        err += b"hutch: " + ex["failure"].encode("utf-8", "replace") + b"\n"
    return Result(
        exit_code=ex["exit_code"],
        stdout=out,
        stderr=err,
        signal=ex["signal"],
        timed_out=ex["timed_out"],
        oom_killed=ex["oom_killed"],
        usage=_usage(ex["usage"]),
        wall_seconds=ex["wall_seconds"],
        failure=ex["failure"],
        stdout_truncated=out_trunc,
        stderr_truncated=err_trunc,
    )


def _argv(cmd: Command) -> List[str]:
    if isinstance(cmd, str):
        return [SHELL, "-c", cmd]
    argv = [os.fsdecode(a) for a in cmd]
    if not argv:
        raise ValueError("the command is empty")
    return argv


def _env(env: Optional[Union[Mapping[str, str], Iterable[str]]]) -> Optional[List[str]]:
    if env is None:
        return None
    if isinstance(env, Mapping):
        items = [f"{k}={v}" for k, v in env.items()]
    else:
        items = list(env)
    for kv in items:
        name = kv.split("=", 1)[0]
        if "=" not in kv or not name or not (name.replace("_", "a").isalnum() and not name[0].isdigit()):
            raise ValueError(f"not an environment assignment: {kv!r} (NAME=VALUE)")
    return items


def _size(v: Union[None, int, str]) -> int:
    if v is None:
        return 0
    if isinstance(v, int):
        if v < 0:
            raise ValueError("a size must be >= 0")
        return v
    return _hutch.parse_size(v)


def _bind(b: Union[str, Tuple]) -> Tuple[str, str, bool]:
    if isinstance(b, str):
        parts = b.split(":")
        if len(parts) == 2:
            return (parts[0], parts[1], False)
        if len(parts) == 3 and parts[2] in ("ro", "rw"):
            return (parts[0], parts[1], parts[2] == "ro")
        raise ValueError(f"bad bind {b!r}: SRC:DST, SRC:DST:ro or SRC:DST:rw")
    src, dst, *rest = b
    return (os.fspath(src), dst, bool(rest[0]) if rest else False)


def _data(data: Union[bytes, bytearray, memoryview, str]) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else bytes(data)


class _PipeReader(io.RawIOBase):
    """Our end of a process's stdout or stderr, read while it runs."""

    def __init__(self, proc: "_hutch.Proc", stream: int):
        super().__init__()
        self._proc = proc
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        data = self._proc.read(self._stream, len(b))
        n = len(data)
        b[:n] = data
        return n

    def fileno(self) -> int:
        return self._proc.fileno(self._stream)


class _ProcIds:
    """The pids of a process in a sandbox (self._proc: its _hutch.Proc)."""

    _proc: "_hutch.Proc"

    @property
    def pid(self) -> int:
        """Its pid on the host (-1 when unknown)."""
        return self._proc.pid

    @property
    def sandbox_pid(self) -> int:
        """Its pid inside the sandbox."""
        return self._proc.sandbox_pid


class Process(_ProcIds):
    """A process running in a sandbox (Sandbox.spawn).

    stdout and stderr are binary streams readable while it runs (None for a
    stream given to a callback); write() feeds its stdin and close_stdin()
    ends it.  Closing the Process kills it if it still runs."""

    def __init__(self, proc: "_hutch.Proc", on_stdout=None, on_stderr=None):
        self._proc = proc
        self.returncode: Optional[int] = None
        self._exit: Optional[Mapping] = None
        self.stdout: Optional[io.BufferedReader] = None if on_stdout else io.BufferedReader(_PipeReader(proc, 1))
        self.stderr: Optional[io.BufferedReader] = None if on_stderr else io.BufferedReader(_PipeReader(proc, 2))
        self._pumps = [
            threading.Thread(target=self._pump, args=(s, cb), daemon=True, name=f"hutch-pump-{s}")
            for s, cb in ((1, on_stdout), (2, on_stderr))
            if cb is not None
        ]
        for t in self._pumps:
            t.start()

    def _pump(self, stream: int, cb: Callable[[bytes], None]) -> None:
        try:
            while True:
                chunk = self._proc.read(stream)
                if not chunk:
                    return
                cb(chunk)
        except _hutch.Error:
            return  # the handle was closed

    def write(self, data: Union[bytes, str], timeout: Optional[float] = None) -> int:
        """Writes all of data to its stdin (raises hutch.TimeoutError when it
        does not read it within timeout seconds)."""
        return self._proc.write(_data(data), timeout)

    def close_stdin(self) -> None:
        """Closes its stdin: it reads end of file."""
        self._proc.close_fd(0)

    def poll(self) -> Optional[int]:
        """Its exit code once it has ended, else None."""
        return self.wait(0) if self._ended(0) else None

    def _ended(self, timeout: Optional[float]) -> bool:
        if self._exit is None:
            ex = self._proc.wait(timeout)
            if ex is None:
                return False
            self._exit = ex
            self.returncode = ex["exit_code"]
        return True

    def wait(self, timeout: Optional[float] = None) -> int:
        """Waits for it to end (up to timeout seconds) and returns its exit
        code; raises hutch.TimeoutError, leaving it running, when it does not
        end in time.  Output passed to callbacks has been delivered when this
        returns."""
        if not self._ended(timeout):
            raise _hutch.TimeoutError(f"process {self.sandbox_pid} still runs after {timeout} s")
        for t in self._pumps:
            t.join(None if timeout is None else max(timeout, 1.0))
        return self.returncode  # type: ignore[return-value]

    @property
    def exit(self) -> Optional[Result]:
        """How it ended (stdout and stderr empty: they were its streams), or None while it runs."""
        return None if self._exit is None else _result(b"", b"", self._exit, streams=False)

    def communicate(self, input: Union[None, bytes, str] = None, timeout: Optional[float] = None) -> Result:
        """Feeds input to its stdin, reads its stdout and stderr to the end
        and waits for it; kills it when timeout seconds have passed."""
        out, err, ex, t1, t2 = self._proc.communicate(None if input is None else _data(input), timeout, MAX_OUTPUT)
        self._exit = ex
        self.returncode = ex["exit_code"]
        return _result(out, err, ex, t1, t2)

    def signal(self, sig: int) -> None:
        """Sends sig to its process group."""
        self._proc.signal(int(sig))

    def terminate(self) -> None:
        self.signal(_signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL to its process group."""
        self._proc.kill()

    def close(self) -> None:
        """Frees the handle, killing the process if it still runs."""
        self._proc.close()
        for t in self._pumps:
            t.join(1.0)

    def __enter__(self) -> "Process":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# Sandboxes made here that are still open: destroyed when the interpreter
# exits, as when they are garbage-collected, so that a program that forgets
# close() leaves none running behind it.
_live: "weakref.WeakSet[Sandbox]" = weakref.WeakSet()


class _Reaper:
    """The reaper process (hutch._reaper) of this program's sandboxes, which
    removes those still open when the program is killed.  Started at the
    first sandbox; a sandbox is not made without it (fail closed)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: Optional[subprocess.Popen] = None
        self._pid = 0

    def _start(self) -> None:
        if not sys.executable:
            raise _hutch.Error(
                "sandbox: no Python executable (sys.executable is empty) to run the reaper that "
                "removes this program's sandboxes if it is killed"
            )
        env = dict(os.environ)
        pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env["PYTHONPATH"] = pkg_parent + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "hutch._reaper"],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                cwd="/",
                env=env,
                close_fds=True,
                start_new_session=True,
            )
        except OSError as e:
            err = _hutch.Error(f"sandbox: starting the reaper ({sys.executable} -m hutch._reaper): {e}")
            err.errno, err.message, err.hint = e.errno, str(err), "the reaper removes the sandboxes of a killed program"
            raise err from None
        self._pid = os.getpid()
        # The sandboxes open now (a reaper that died is replaced).
        for sb in list(_live):
            if not sb.closed:
                self._send("+", sb._state_dir, sb.id)

    def _send(self, op: str, state_dir: Optional[str], sid: str) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        self._proc.stdin.write(json.dumps([op, state_dir, sid]).encode() + b"\n")
        self._proc.stdin.flush()

    def ready(self) -> None:
        """Starts the reaper unless it runs (before a sandbox is made)."""
        with self._lock:
            if self._proc is None or self._pid != os.getpid() or self._proc.poll() is not None:
                self._start()

    def tell(self, op: str, state_dir: Optional[str], sid: str) -> None:
        with self._lock:
            if self._proc is None or self._pid != os.getpid():
                return
            try:
                self._send(op, state_dir, sid)
            except (OSError, ValueError):
                if op == "+":
                    self._start()  # it died: a new one, told of every open sandbox

    def forget(self) -> None:
        """In a forked child: the pipe is the parent's (its end is the parent's end)."""
        proc, self._proc = self._proc, None
        if proc is not None and proc.stdin is not None:
            try:
                os.close(proc.stdin.fileno())
            except OSError:
                pass


_reaper = _Reaper()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reaper.forget)


@atexit.register
def _close_all() -> None:
    for sb in list(_live):
        try:
            sb.close()
        except _hutch.Error:
            pass


class Sandbox(_Lifecycle, _ResetMixin, _ExtrasMixin, _ForkMixin):
    """A live sandbox: processes run in it one after another or side by
    side, and its files persist, until close().

    ``Sandbox(...)`` creates one as ``hutch create`` does: image names an
    image in the store (``hutch rootfs ls``); memory, cpus, pids and disk
    are limits ("2G", 1.5, 512), applied with a cgroup or refused, unless
    no_cgroups asks for per-process rlimits instead; net is "none" (loopback only) or "proxy"
    (hutch's allowlist proxy, reaching the hosts in ``allow``); env is a
    mapping or "K=V" list added to every process; binds are "SRC:DST[:ro]"
    strings or (src, dst, readonly) tuples; workdir is where processes start;
    name (unique among the sandboxes of its state directory) and labels (a
    dict) are what ``hutch ps`` shows and ``hutch.sandboxes()`` filters on,
    and the name goes wherever an id does.  ttl (seconds) is its time
    limit: when it runs out, a host process of hutch's removes it (or, with
    on_ttl="pause", pauses it); paused time does not count.  ports publishes
    its loopback ports on the host (``ports=[8000]``: any free port of
    127.0.0.1, which ``sb.url(8000)`` says; "[ADDR:]HOSTPORT:PORT" as
    ``hutch create -p`` takes it); devices are CDI devices or "/dev/NODE"
    character devices the policy allows.  image may be a hutch.Snapshot.
    user ("1000:1000", "nobody", a uid, as Docker's --user) runs every
    process as that user of the sandbox, with no capability and no way back
    to root (not running as root, a user needs a subordinate id range in
    /etc/subuid); the files hutch writes in the sandbox are that user's.
    read_only mounts its root read-only: only /tmp, /dev/shm and read-write
    binds take writes.  Closing it destroys it, and so does the end of the program when it is
    still open.  ``Sandbox.attach(id)`` opens one made by
    ``hutch create``: closing that handle leaves the sandbox running."""

    def __init__(
        self,
        image: Union[str, Snapshot] = "default",
        *,
        memory: Union[None, int, str] = None,
        cpus: Optional[float] = None,
        pids: Optional[int] = None,
        disk: Union[None, int, str] = None,
        no_cgroups: bool = False,
        net: str = "none",
        allow: Sequence[str] = (),
        env: Optional[Union[Mapping[str, str], Iterable[str]]] = None,
        binds: Sequence[Union[str, Tuple]] = (),
        workdir: Optional[str] = None,
        hostname: Optional[str] = None,
        policy: Optional[str] = None,
        store: Optional[str] = None,
        state_dir: Optional[str] = None,
        net_policy: Optional[str] = None,
        resolve: Sequence[str] = (),
        name: Optional[str] = None,
        labels: Labels = None,
        ttl: Optional[float] = None,
        on_ttl: str = "remove",
        ports: Optional[Iterable[PortSpec]] = None,
        devices: Optional[Sequence[str]] = None,
        user: Union[None, int, str] = None,
        read_only: bool = False,
        _handle: Optional["_hutch.Sandbox"] = None,
    ):
        self._store = store
        self._state_dir = state_dir
        if _handle is not None:
            self._h = _handle
            return
        if net not in ("none", "proxy"):
            raise ValueError(f"net must be 'none' or 'proxy', not {net!r}")
        if allow and net != "proxy":
            raise ValueError("allow needs net='proxy'")
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name: a str, not {type(name).__name__}")
        label_list = labels_arg(labels)
        image = image_arg(image)
        extras = dict(ttl=ttl_arg(ttl), on_ttl=on_ttl_arg(on_ttl), ports=ports_arg(ports), devices=devices_arg(devices))
        if policy is None:
            policy = _paths.default_policy()
        _reaper.ready()
        self._h = _hutch.Sandbox(
            image=image,
            policy=policy,
            store=store,
            state_dir=state_dir,
            hostname=hostname,
            workdir=workdir,
            memory=_size(memory),
            cpus=float(cpus or 0),
            pids=int(pids or 0),
            net=_hutch.NET_PROXY if net == "proxy" else _hutch.NET_NONE,
            allow=list(allow),
            env=_env(env),
            binds=[_bind(b) for b in binds],
            net_policy=net_policy,
            resolve=list(resolve),
            disk=_size(disk),
            no_cgroups=no_cgroups,
            name=name,
            labels=label_list,
            user=None if user is None else str(user),
            read_only=bool(read_only),
            **extras,
        )
        self._own(name, label_list)

    def _own(self, name: Optional[str], label_list: Optional[List[str]]) -> None:
        """A sandbox this handle made: destroyed at the program's end, and
        by the reaper when the program is killed."""
        self._name, self._labels = name, labels_dict(label_list)
        _live.add(self)
        _reaper.tell("+", self._state_dir, self._h.id)
        # "-" once it is destroyed: closed, garbage-collected or at exit.
        self._unreap = weakref.finalize(self, _reaper.tell, "-", self._state_dir, self._h.id)

    def _adopt(self, handle: "_hutch.Sandbox", name: Optional[str], label_list: Optional[List[str]]) -> "Sandbox":
        """A Sandbox over a handle that owns a sandbox made from this one (fork)."""
        sb = Sandbox(_handle=handle, store=self._store, state_dir=self._state_dir)
        sb._own(name, label_list)
        return sb

    @classmethod
    def attach(cls, id: str, *, state_dir: Optional[str] = None, store: Optional[str] = None) -> "Sandbox":
        """A handle on a running sandbox made elsewhere (``hutch create``), by its id or its name."""
        return cls(_handle=_hutch.Sandbox.attach(id, state_dir), store=store, state_dir=state_dir)

    @property
    def id(self) -> str:
        return self._h.id

    @property
    def closed(self) -> bool:
        return self._h.closed

    def limits(self) -> Dict[str, object]:
        """How its limits were applied: mode ("cgroup", "rlimits", "none"), degraded, reason,
        cgroup, warning (the no-cgroup fallback's line, which stderr gets once a day), disk_unbounded."""
        limits = self._h.limits()
        limits["reason"] = pythonize(limits["reason"])
        return limits

    def close(self) -> None:
        """Destroys a sandbox made by this handle; lets go of an attached one."""
        self._h.close()
        if hasattr(self, "_unreap"):
            self._unreap()

    def destroy(self) -> None:
        """Kills everything in it and removes it, attached or not."""
        self._h.destroy()
        if hasattr(self, "_unreap"):
            self._unreap()

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        name = f" {self._name}" if isinstance(self._name, str) else ""
        return f"<hutch.Sandbox {self.id}{name}{' closed' if self.closed else ''}>"

    # ---- processes ----

    def exec(
        self,
        cmd: Command,
        *,
        timeout: Optional[float] = None,
        cwd: Optional[str] = None,
        env: Optional[Union[Mapping[str, str], Iterable[str]]] = None,
        stdin: Union[None, bytes, str] = None,
        max_output: int = MAX_OUTPUT,
    ) -> Result:
        """Runs cmd (a string for ``sh -c``, or an argv list) to its end and
        returns its Result.  After timeout seconds it is killed (timed_out,
        exit code 124).  stdin is fed to it; without, it reads end of file.
        Output beyond max_output bytes per stream is dropped (the Result
        says so)."""
        proc = self._h.spawn(_argv(cmd), _env(env), cwd, stdin is not None, True, True)
        try:
            out, err, ex, t1, t2 = proc.communicate(None if stdin is None else _data(stdin), timeout, max_output)
        finally:
            proc.close()
        return _result(out, err, ex, t1, t2)

    def spawn(
        self,
        cmd: Command,
        *,
        cwd: Optional[str] = None,
        env: Optional[Union[Mapping[str, str], Iterable[str]]] = None,
        stdin: bool = True,
        on_stdout: Optional[Callable[[bytes], None]] = None,
        on_stderr: Optional[Callable[[bytes], None]] = None,
    ) -> Process:
        """Starts cmd and returns at once: a Process whose stdout and stderr
        can be read while it runs, or go chunk by chunk to on_stdout and
        on_stderr (called from a thread of their own)."""
        proc = self._h.spawn(_argv(cmd), _env(env), cwd, stdin, True, True)
        return Process(proc, on_stdout, on_stderr)

    def run_code(
        self,
        code: str,
        lang: str = "python",
        *,
        libraries: Optional[Sequence[str]] = None,
        timeout: Optional[float] = None,
        env: Optional[Union[Mapping[str, str], Iterable[str]]] = None,
    ) -> Result:
        """Runs a snippet of code: python, bash, sh, node, c, cpp, go, java,
        ruby or r, with the image's own interpreter or compiler (found on its
        PATH, else hutch.NotFoundError saying which is missing).  libraries
        are installed first with the language's package manager (pip, npm,
        gem, install.packages, go get), which needs net="proxy" and the
        package index in the allowlist (pip is told the sandbox's python is
        its own to change: PIP_BREAK_SYSTEM_PACKAGES=1).  When that fails,
        hutch.LibraryError says why (with the hosts the proxy refused, and
        the installer's Result); else returns the Result of the run."""
        from ._code import run_code

        return run_code(self, code, lang, libraries, timeout, _env(env))

    def interpreter(self, *, python: str = "python3", timeout: Union[None, float, _Default] = DEFAULT) -> "Interpreter":
        """A persistent Python interpreter in the sandbox whose variables
        survive between calls (see hutch.Interpreter); timeout is each
        call's, hutch.Interpreter.DEFAULT_TIMEOUT unless named (None: no
        bound)."""
        from ._interp import Interpreter

        return Interpreter(self, python=python, timeout=timeout)

    # ---- files: hutch reads and writes them itself, through the sandbox's
    # root; no program of the sandbox runs and no path leaves its root ----

    def read_file(self, path: str, *, max: int = MAX_OUTPUT) -> bytes:
        """A regular file's bytes (hutch.TooLargeError beyond max)."""
        return self._h.read_file(path, max)

    def write_file(self, path: str, data: Union[bytes, str]) -> None:
        """Replaces a regular file's contents, or creates it and the
        directories above it."""
        kind = self._h.file_kind(path)
        if kind not in ("none", "file"):
            raise _hutch.ExistsError(f"{path}: not a regular file ({kind})")
        self._h.write_file(path, _data(data), kind == "none")

    def exists(self, path: str) -> bool:
        return self._h.file_kind(path) != "none"

    def file_kind(self, path: str) -> str:
        """"none", "file", "dir" or "other" (symlinks inside its root followed)."""
        return self._h.file_kind(path)

    def mkdir(self, path: str) -> None:
        """Makes path and the directories above it."""
        self._h.mkdirs(path)

    def remove(self, path: str) -> None:
        self._h.remove_file(path)

    def listdir(self, path: str, depth: int = 1) -> List[str]:
        """The paths under path, depth levels deep (path itself excluded), sorted."""
        return sorted(p for p in self._h.list_dir(path, depth) if p.rstrip("/") != path.rstrip("/"))

    def upload(self, host_path: Union[str, os.PathLike], path: str) -> Dict[str, object]:
        """Copies a host file, or a host directory's contents, to path in the
        sandbox.  Regular files and directories only; no link is followed."""
        host_path = os.fspath(host_path)
        _hutch.check_host_path(host_path, False, self._store, self._state_dir)
        st = os.lstat(host_path)
        if stat.S_ISDIR(st.st_mode):
            return self._h.copy_in(host_path, path)
        if not stat.S_ISREG(st.st_mode):
            raise _hutch.InvalidArgument(f"{host_path}: not a regular file or directory")
        fd = os.open(host_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as f:
            data = f.read()
        self.write_file(path, data)
        return {"files": 1, "dirs": 0, "bytes": len(data), "skipped": 0, "stopped": None}

    def download(self, path: str, host_path: Union[str, os.PathLike]) -> Dict[str, object]:
        """Copies a sandbox file to host_path, or a sandbox directory's
        contents into host directory host_path.  Nothing is written outside
        host_path and no link is followed: the sandbox's links are skipped,
        and an existing link at host_path is refused.  Inside a directory,
        names host programs load by themselves (.git, HEAD, .envrc,
        .vscode, hutch.yaml, ...: hutch-security(7)) come back as
        NAME.sandbox, and no file comes back executable."""
        host_path = os.fspath(host_path)
        kind = self._h.file_kind(path)
        if kind == "dir":
            _hutch.check_host_path(os.path.dirname(os.path.abspath(host_path)), True, self._store, self._state_dir)
            return self._h.copy_out(path, host_path)
        if kind != "file":
            if kind == "none":
                raise _hutch.NotFoundError(f"{path}: no such file in the sandbox")
            raise _hutch.InvalidArgument(f"{path}: not a regular file or directory")
        _hutch.check_host_path(os.path.dirname(os.path.abspath(host_path)), True, self._store, self._state_dir)
        data = self._h.read_file(path, MAX_OUTPUT)
        fd = os.open(host_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return {"files": 1, "dirs": 0, "bytes": len(data), "skipped": 0, "stopped": None}


def images(store: Optional[str] = None) -> List[Dict[str, object]]:
    """The images in the store (``hutch rootfs ls``): name, digest, rootfs, size, created, ..."""
    return _hutch.images(store)


def image(name: str, store: Optional[str] = None) -> Dict[str, object]:
    """One image by name or digest (hutch.NotFoundError when absent)."""
    return _hutch.image(name, store)


def sandboxes(
    state_dir: Optional[str] = None,
    *,
    name: Optional[str] = None,
    labels: Labels = None,
    status: Optional[str] = None,
    filters: Sequence[str] = (),
) -> List[Dict[str, object]]:
    """The sandboxes of this user (``hutch ps``): id, name (None: none), labels (a dict), state
    ("running", "paused", "dead"), pause_method (when paused, else None), pid, running, created,
    image, net_proxy.  Only those that match everything asked for: a name, labels (a dict: each
    key with that value; a value of None: the key with any value), a status ("running", "paused"
    or "dead"), and filters as ``hutch ps --filter`` takes them ("label=team=a")."""
    wanted = list(filters)
    if name is not None:
        wanted.append(f"name={name}")
    if isinstance(labels, Mapping):
        wanted += [f"label={k}" if v is None else f"label={k}={v}" for k, v in labels.items()]
    elif labels is not None:
        wanted += [f"label={kv}" for kv in labels_arg(labels) or ()]
    if status is not None:
        wanted.append(f"status={status}")
    return _hutch.sandboxes(state_dir, wanted or None)


def import_image(path: Union[str, os.PathLike], name: Optional[str] = None, store: Optional[str] = None) -> Dict[str, object]:
    """Imports a rootfs tarball, a ``docker save`` archive or an OCI layout
    into the store (``hutch rootfs import``), named name."""
    return _hutch.import_image(os.fspath(path), name, store)


def pull(ref: str, name: Optional[str] = None, arch: Optional[str] = None, store: Optional[str] = None) -> Dict[str, object]:
    """Downloads, verifies and imports an image (``hutch rootfs pull``): a
    manifest's name such as "ubuntu:24.04", or docker://NAME[:TAG|@DIGEST]."""
    return _hutch.pull(ref, name, arch, store)


def remove_image(name: str, store: Optional[str] = None) -> None:
    """Removes an image from the store (``hutch rootfs rm``)."""
    _hutch.remove_image(name, store)
