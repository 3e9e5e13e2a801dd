# SPDX-License-Identifier: Apache-2.0
"""A language's image made on first use, as llm-sandbox pulls its image:
`hutch rootfs build` of the language's recipe (rootfs/llm-sandbox-LANG.recipe)
on its base, from the distribution's archive through hutch's proxy.

The image lands in the user's store, where every later session finds it.
Sessions opened at once (threads or processes of the same user) build it
once: each takes an flock on a file of the store's for that name, and the
ones that waited find it built."""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import shutil
import subprocess
import threading
import time
from collections import deque
from typing import Callable, List, Optional

from ..._paths import _conf, run_from_build_tree
from .exceptions import ImageNotFoundError

log = logging.getLogger("hutch.compat.llm_sandbox")

#: The lines of a failed build's output kept for its error.
_TAIL = 20
_threads_lock = threading.Lock()
_thread_locks: dict = {}


class ImageBuildError(ImageNotFoundError):
    """A language image that could not be built, with the build's last lines."""

    def __init__(self, image: str, why: str, hint: str) -> None:
        Exception.__init__(self, f"Image {image} not found, and building it failed: {why}\nhint: {hint}")
        self.image, self.hint = image, hint


def store_dir() -> str:
    """The store hutch uses for this process, as the runtime chooses it."""
    v = os.environ.get("HUTCH_STORE", "")
    if v.startswith("/"):
        return v
    if os.geteuid() == 0:
        return "/var/lib/hutch"
    v = os.environ.get("XDG_DATA_HOME", "")
    if v.startswith("/"):
        return os.path.join(v, "hutch")
    return os.path.join(os.path.expanduser("~"), ".local", "share", "hutch")


def hutch_command() -> str:
    """The hutch command of this package's build: $HUTCH_BIN, the build
    tree's, else the one on PATH."""
    v = os.environ.get("HUTCH_BIN", "")
    if v.startswith("/") and os.access(v, os.X_OK):
        return v
    if run_from_build_tree():
        p = os.path.join(_conf("BUILDDIR") or "", "hutch")
        if os.access(p, os.X_OK):
            return p
    p = shutil.which("hutch")
    if p:
        return p
    raise ImageBuildError("(any)", "no hutch command found", "put hutch on PATH, or name it with HUTCH_BIN")


def recipe_path(recipe: str) -> str:
    """recipe (a file name) where hutch keeps its recipes: $HUTCH_ROOTFS_DIR,
    the checkout this package was built from, the installed data directory."""
    dirs: List[str] = []
    env = os.environ.get("HUTCH_ROOTFS_DIR", "")
    if env:
        dirs.append(env)
    if run_from_build_tree():
        dirs.append(os.path.join(_conf("SRCDIR") or "", "rootfs"))
    for d in (_conf("DATADIR"), _conf("SRCDIR")):
        if d:
            dirs.append(os.path.join(d, "rootfs"))
    for d in dirs:
        p = os.path.join(d, recipe)
        if os.path.isfile(p):
            return p
    raise ImageBuildError(
        recipe.rsplit(".", 1)[0],
        f"its recipe {recipe} is in none of {', '.join(dirs) or '(no directory known)'}",
        "install hutch's data files (make install), or name the directory of its recipes with HUTCH_ROOTFS_DIR",
    )


def _thread_lock(name: str) -> threading.Lock:
    # flock is per open file: two threads of one process each open the file
    # and exclude each other too, but a thread lock first keeps them from
    # both waiting on the kernel for nothing.
    with _threads_lock:
        return _thread_locks.setdefault(name, threading.Lock())


def _open_lock(name: str) -> int:
    d = os.path.join(store_dir(), "locks")
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
        return os.open(os.path.join(d, f"build-{name}.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600)
    except OSError as e:
        raise ImageBuildError(name, f"cannot make its build lock in {d}: {e.strerror}",
                              "give hutch a writable store (HUTCH_STORE=DIR)") from e


def ensure_built(
    name: str, base: str, recipe: str, have: Callable[[str], bool], command: Optional[List[str]] = None
) -> None:
    """Builds image name from recipe on base unless it is in the store,
    once however many sessions ask at the same time."""
    with _thread_lock(name):
        fd = _open_lock(name)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as e:
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise
                log.warning("image %s: another session is building it; waiting for that build", name)
                fcntl.flock(fd, fcntl.LOCK_EX)
            if have(name):
                return
            _build(name, base, recipe_path(recipe), command)
        finally:
            os.close(fd)  # releases the flock


def _build(name: str, base: str, recipe: str, command: Optional[List[str]]) -> None:
    argv = (command or [hutch_command()]) + ["rootfs", "build", "--from", base, "--recipe", recipe, "--name", name]
    log.warning(
        "image %s: not in the store; building it once (%s on image %s, packages from the distribution's archive "
        "through hutch's proxy); later sessions reuse it",
        name, recipe, base,
    )
    started = time.monotonic()
    tail: deque = deque(maxlen=_TAIL)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    except OSError as e:
        raise ImageBuildError(name, f"{argv[0]}: {e.strerror}", "put hutch on PATH, or name it with HUTCH_BIN") from e
    assert proc.stdout is not None
    with proc:
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip()
            tail.append(line)
            # The build announces each step as "hutch: step N/M (FILE:LINE): ...".
            if line.startswith("hutch: step "):
                log.warning("image %s: %s", name, line[len("hutch: "):][:300])
        rc = proc.wait()
    if rc != 0:
        manual = " ".join(argv)
        raise ImageBuildError(name, f"hutch rootfs build exited {rc}; its last lines:\n" + "\n".join(tail),
                              f"see why above, then build it by hand: {manual}")
    log.warning("image %s: built in %.0f s", name, time.monotonic() - started)
