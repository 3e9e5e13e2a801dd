# SPDX-License-Identifier: Apache-2.0
"""hutch: rootless sandboxes for LLM agents, from Python.

    import hutch

    with hutch.Sandbox(image="default", memory="1G", pids=256) as sb:
        r = sb.exec("echo hello; ls /", timeout=30)
        print(r.exit_code, r.stdout.decode())
        sb.write_file("/tmp/x.py", "print(6 * 7)")
        print(sb.exec(["python3", "/tmp/x.py"]).stdout)

Everything goes through the hutch runtime library (hutch.h) in the
extension module hutch._hutch: no hutch command runs.  Blocking calls
release the GIL, and a Sandbox or Process may be used from several threads
at once.  Failures raise hutch.Error (or a subclass), which carries the
runtime's errno, message and hint.

A sandbox may have a name and labels (``hutch.Sandbox(name="job-1",
labels={"team": "a"})``), which hutch.sandboxes() filters on, and may be
paused and resumed (``sb.pause()``, ``sb.resume()``, or
``hutch.Sandbox.resume("job-1")`` from anywhere), reset to its image's
state (``sb.reset()``), snapshotted into an image (``sb.snapshot()``,
which ``hutch.Sandbox(image=snap)`` takes) and forked into new sandboxes
that start from its files (``sb.fork(n)``).  ``ttl=`` gives it a time
limit, ``ports=[8000]`` publishes a port on the host (``sb.url(8000)``),
``devices=`` passes devices through.  hutch.Pool hands out sandboxes of one
configuration, reset between users.  hutch.aio is the same for asyncio
(``await hutch.aio.Sandbox.create(...)``, ``hutch.aio.Pool``).
"""

import logging as _logging

from . import _hutch
from ._hutch import (
    FORK_MAX,
    Error,
    ExistsError,
    InvalidArgument,
    NotFoundError,
    PausedError,
    PermissionDenied,
    TimeoutError,
    TooLargeError,
    parse_size,
)
from ._code import LibraryError
from ._errors import error_str as _error_str
from ._extras import Snapshot
from ._interp import Execution, Interpreter, InterpreterDied
from ._pool import Pool, PoolClosed
from ._sandbox import (
    Process,
    Result,
    Sandbox,
    Usage,
    image,
    images,
    import_image,
    pull,
    remove_image,
    sandboxes,
)

# str(e) says the hint too; e.message and e.hint are None unless set.
Error.__str__ = _error_str  # type: ignore[method-assign]
Error.message = None  # type: ignore[attr-defined]
Error.hint = None  # type: ignore[attr-defined]

__all__ = [
    "FORK_MAX",
    "Error",
    "ExistsError",
    "InvalidArgument",
    "NotFoundError",
    "PausedError",
    "PermissionDenied",
    "PoolClosed",
    "TimeoutError",
    "TooLargeError",
    "Execution",
    "Interpreter",
    "InterpreterDied",
    "LibraryError",
    "Pool",
    "Process",
    "Result",
    "Sandbox",
    "Snapshot",
    "Usage",
    "image",
    "images",
    "import_image",
    "pull",
    "remove_image",
    "parse_size",
    "sandboxes",
]
__version__ = "0.1.0"

#: The runtime library's warnings, notices and progress lines go to this
#: logger ("limits: no cgroup here: rlimits per process ...").
log = _logging.getLogger("hutch")
_LEVELS = {
    _hutch.LOG_DEBUG: _logging.DEBUG,
    _hutch.LOG_INFO: _logging.INFO,
    _hutch.LOG_NOTICE: _logging.INFO,
    _hutch.LOG_WARNING: _logging.WARNING,
}


def _log(level: int, line: str) -> None:
    log.log(_LEVELS.get(level, _logging.WARNING), "%s", line)


_hutch.set_log_handler(_log)


def __getattr__(name: str):
    # hutch.aio without an import of its own, and without asyncio's import
    # cost for a program that does not use it.
    if name == "aio":
        import importlib

        return importlib.import_module(".aio", __name__)
    raise AttributeError(f"module 'hutch' has no attribute {name!r}")
