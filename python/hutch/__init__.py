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
"""

from ._hutch import (
    Error,
    ExistsError,
    InvalidArgument,
    NotFoundError,
    PermissionDenied,
    TimeoutError,
    TooLargeError,
    parse_size,
)
from ._sandbox import Process, Result, Sandbox, Usage, image, images, sandboxes

__all__ = [
    "Error",
    "ExistsError",
    "InvalidArgument",
    "NotFoundError",
    "PermissionDenied",
    "TimeoutError",
    "TooLargeError",
    "Process",
    "Result",
    "Sandbox",
    "Usage",
    "image",
    "images",
    "parse_size",
    "sandboxes",
]
__version__ = "0.1.0"
