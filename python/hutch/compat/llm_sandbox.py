# SPDX-License-Identifier: Apache-2.0
"""A drop-in for llm-sandbox users: change

    from llm_sandbox import SandboxSession
to
    from hutch.compat.llm_sandbox import SandboxSession

and sessions run in hutch sandboxes instead of containers.  The session's
methods and the result fields are those of llm-sandbox's own (run,
execute_command, execute_commands, copy_to_runtime, copy_from_runtime,
install; ConsoleOutput and ExecutionResult with stdout, stderr, exit_code
and plots); written from its public documentation, not its code.  `image`
names a hutch image (``hutch rootfs ls``), "default" when omitted; the
container-only options (backend, dockerfile, keep_template, client, ...)
are accepted and ignored.  Limits and network go to hutch.Sandbox: memory,
cpus, pids, net, allow, env, binds.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, List, Optional, Sequence

import hutch
from hutch import LibraryError

__all__ = [
    "ConsoleOutput",
    "ExecutionResult",
    "FileType",
    "NotOpenSessionError",
    "PlotOutput",
    "SandboxSession",
    "SupportedLanguage",
]


class SupportedLanguage:
    PYTHON = "python"
    JAVA = "java"
    JAVASCRIPT = "javascript"
    CPP = "cpp"
    GO = "go"
    R = "r"
    RUBY = "ruby"


class FileType(Enum):
    PNG = "png"
    JPEG = "jpeg"
    PDF = "pdf"
    SVG = "svg"
    CSV = "csv"
    JSON = "json"
    TXT = "txt"
    HTML = "html"


@dataclass(frozen=True)
class PlotOutput:
    format: FileType
    content_base64: str
    width: Optional[int] = None
    height: Optional[int] = None
    dpi: Optional[int] = None


@dataclass(frozen=True)
class ConsoleOutput:
    exit_code: int = 0
    stderr: str = ""
    stdout: str = ""

    def success(self) -> bool:
        return not self.exit_code

    def to_json(self, include_plots: bool = False) -> str:
        d = dict(self.__dict__)
        plots = d.pop("plots", None)
        if include_plots and plots is not None:
            d["plots"] = [{"format": p.format.value, "content_base64": p.content_base64} for p in plots]
        return json.dumps(d, indent=2)


@dataclass(frozen=True)
class ExecutionResult(ConsoleOutput):
    plots: List[PlotOutput] = field(default_factory=list)


class NotOpenSessionError(hutch.Error):
    """The session is not open: call open() or use it in a with block."""


def _text(b: bytes) -> str:
    return b.decode("utf-8", "replace")


def _console(r: hutch.Result) -> ConsoleOutput:
    return ConsoleOutput(exit_code=r.exit_code, stderr=_text(r.stderr), stdout=_text(r.stdout))


def _failed_install(e: LibraryError) -> ExecutionResult:
    """llm-sandbox reports a failed installation as the result of the run."""
    r = e.result
    return ExecutionResult(exit_code=r.exit_code or 1, stderr=f"{e}\n{_text(r.stderr)}", stdout=_text(r.stdout))


class SandboxSession:
    """A session: a hutch sandbox from open() to close()."""

    def __init__(
        self,
        backend: Any = None,
        *,
        lang: str = SupportedLanguage.PYTHON,
        image: Optional[str] = None,
        verbose: bool = False,
        workdir: str = "/sandbox",
        execution_timeout: Optional[float] = None,
        default_timeout: Optional[float] = None,
        enable_plotting: bool = False,
        memory: Any = None,
        cpus: Optional[float] = None,
        pids: Optional[int] = None,
        net: str = "none",
        allow: Sequence[str] = (),
        env: Any = None,
        binds: Sequence[Any] = (),
        resolve: Sequence[str] = (),
        **ignored: Any,
    ):
        self.lang = lang
        self.image = image or "default"
        self.verbose = verbose
        self.workdir = workdir
        self.timeout = execution_timeout or default_timeout
        self.enable_plotting = enable_plotting
        self._opts = dict(
            memory=memory, cpus=cpus, pids=pids, net=net, allow=allow, env=env, binds=binds, resolve=resolve
        )
        self._sb: Optional[hutch.Sandbox] = None

    # ---- lifetime ----

    @property
    def is_open(self) -> bool:
        return self._sb is not None

    def open(self) -> None:
        if self._sb is None:
            self._sb = hutch.Sandbox(self.image, workdir=self.workdir, **self._opts)
            self._sb.mkdir(self.workdir)

    def close(self) -> None:
        if self._sb is not None:
            sb, self._sb = self._sb, None
            sb.close()

    def __enter__(self) -> "SandboxSession":
        self.open()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _open_sb(self) -> hutch.Sandbox:
        if self._sb is None:
            raise NotOpenSessionError("the session is not open: call open() or use `with SandboxSession(...)`")
        return self._sb

    # ---- the llm-sandbox methods ----

    def run(self, code: str, libraries: Optional[List[str]] = None, timeout: Optional[float] = None) -> ExecutionResult:
        """Runs code in the session's language, installing libraries first."""
        sb = self._open_sb()
        timeout = timeout or self.timeout
        plots: List[PlotOutput] = []
        if self.enable_plotting and self.lang == SupportedLanguage.PYTHON:
            if libraries:
                try:
                    sb.run_code("pass", "python", libraries=libraries, timeout=timeout)
                except LibraryError as e:
                    return _failed_install(e)
            with sb.interpreter() as it:
                x = it.run(code, timeout=timeout)
            plots = [PlotOutput(FileType.PNG, base64.b64encode(f).decode()) for f in x.figures]
            err = x.stderr + (x.error["traceback"] if x.error else "")
            return ExecutionResult(exit_code=1 if x.error else 0, stderr=err, stdout=x.stdout, plots=plots)
        try:
            r = sb.run_code(code, self.lang, libraries=libraries, timeout=timeout)
        except LibraryError as e:
            return _failed_install(e)
        return ExecutionResult(exit_code=r.exit_code, stderr=_text(r.stderr), stdout=_text(r.stdout))

    def execute_command(self, command: str, workdir: Optional[str] = None) -> ConsoleOutput:
        """Runs a shell command (sh -c) in workdir, else the session's."""
        return _console(self._open_sb().exec(command, cwd=workdir or self.workdir, timeout=self.timeout))

    def execute_commands(self, commands: List[Any], workdir: Optional[str] = None) -> ConsoleOutput:
        """Runs commands in turn (a command may be (command, workdir)); stops at the first that fails."""
        out = ConsoleOutput()
        for c in commands:
            cmd, wd = (c, workdir) if isinstance(c, str) else (c[0], c[1] if len(c) > 1 else workdir)
            out = self.execute_command(cmd, wd)
            if out.exit_code:
                break
        return out

    def install(self, libraries: Optional[List[str]] = None) -> ConsoleOutput:
        """Installs libraries with the language's package manager."""
        if not libraries:
            return ConsoleOutput()
        from hutch._code import find_program, install, resolve

        sb = self._open_sb()
        lang = resolve(self.lang)
        try:
            return _console(install(sb, lang, find_program(sb, lang), libraries, self.workdir, self.timeout, None))
        except LibraryError as e:
            return _failed_install(e)

    def copy_to_runtime(self, src: str, dest: str) -> None:
        """A host file to path dest in the sandbox, or a host directory's contents into dest."""
        self._open_sb().upload(os.fspath(src), dest)

    def copy_from_runtime(self, src: str, dest: str) -> None:
        """A sandbox file to host path dest, or a sandbox directory's contents into dest."""
        self._open_sb().download(src, os.fspath(dest))
