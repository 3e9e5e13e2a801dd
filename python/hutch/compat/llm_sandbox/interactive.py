# SPDX-License-Identifier: Apache-2.0
"""InteractiveSandboxSession: Python whose variables, imports and
definitions survive from one run() to the next, as in a notebook.

llm-sandbox runs an IPython shell in its container; here it is hutch's
persistent interpreter (hutch.Interpreter) in the session's sandbox: a
run() past its timeout is interrupted (KeyboardInterrupt, the variables
stay), or the interpreter is killed when that does not stop it (a new one
starts at the next run, without the variables); restart() starts anew."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional

import hutch

from .const import SandboxBackend, StrEnum, SupportedLanguage
from .core.session_base import BaseSession
from .data import ConsoleOutput
from .exceptions import ContainerError, LanguageNotSupportedError, NotOpenSessionError, SandboxTimeoutError


class KernelType(StrEnum):
    IPYTHON = "ipython"


@dataclass
class InteractiveSettings:
    """timeout: each run()'s default bound in seconds (None: none);
    history_size and poll_interval are llm-sandbox's runner's and are
    checked, not used; max_memory goes to runtime_configs' mem_limit."""

    kernel_type: KernelType = KernelType.IPYTHON
    max_memory: Optional[str] = None
    history_size: int = 1000
    timeout: Optional[float] = 300.0
    poll_interval: float = 0.1

    def __post_init__(self) -> None:
        if self.history_size < 0:
            raise ValueError("history_size must be non-negative")
        if self.poll_interval <= 0:
            raise ValueError("poll_interval must be positive")


def _create_backend_session(
    backend: SandboxBackend, runtime_configs: Optional[Dict[str, Any]] = None, **kwargs: Any
) -> BaseSession:
    from ._backend import SandboxHutchSession

    return SandboxHutchSession(backend=backend, runtime_configs=runtime_configs, **kwargs)


class InteractiveSandboxSession(BaseSession):
    def __init__(
        self,
        *,
        backend: SandboxBackend = SandboxBackend.DOCKER,
        lang: Any = SupportedLanguage.PYTHON,
        kernel_type: Any = KernelType.IPYTHON,
        max_memory: Optional[str] = "1GB",
        history_size: int = 1000,
        timeout: Optional[float] = 300.0,
        runtime_configs: Optional[Dict[str, Any]] = None,
        settings: Optional[InteractiveSettings] = None,
        **kwargs: Any,
    ) -> None:
        if str(lang).lower() != SupportedLanguage.PYTHON:
            raise LanguageNotSupportedError(str(lang))
        if settings is not None:
            kernel_type, max_memory = settings.kernel_type, settings.max_memory or max_memory
            history_size, timeout = settings.history_size, settings.timeout
        kernel = KernelType(kernel_type)
        configs = dict(runtime_configs or {})
        if max_memory:
            configs.setdefault("mem_limit", max_memory)
        if timeout is not None:
            kwargs.setdefault("execution_timeout", timeout)
        kwargs.setdefault("lang", SupportedLanguage.PYTHON)
        self._backend_session = _create_backend_session(backend=backend, runtime_configs=configs, **kwargs)
        super().__init__(config=self._backend_session.config)
        self.settings = InteractiveSettings(
            kernel_type=kernel, max_memory=max_memory, history_size=history_size, timeout=timeout
        )
        self._interpreter: Optional[hutch.Interpreter] = None

    def open(self) -> None:
        self._backend_session.open()
        self.is_open = True
        self._session_start_time = getattr(self._backend_session, "_session_start_time", None)
        self.container = self._backend_session.container
        self.container_api = self._backend_session.container_api
        try:
            self._start_interpreter()
        except BaseException:
            self.close()
            raise

    def _start_interpreter(self) -> None:
        limit = self.settings.timeout
        try:
            self._interpreter = self.container.interpreter(timeout=limit)
            self._interpreter.run(f"import os; os.chdir({self.config.workdir!r})", timeout=30)
        except hutch.Error as e:
            raise ContainerError(f"the interactive interpreter did not start: {e}") from e

    def close(self) -> None:
        if self._interpreter is not None:
            interp, self._interpreter = self._interpreter, None
            try:
                interp.close()
            except hutch.Error:
                pass
        self._backend_session.close()
        self.is_open = False
        self.container = None

    def restart(self) -> None:
        """A new interpreter: every variable is gone."""
        if self._interpreter is None:
            raise NotOpenSessionError
        self._interpreter.restart()
        self._interpreter.run(f"import os; os.chdir({self.config.workdir!r})", timeout=30)

    def run(
        self,
        code: str,
        libraries: Optional[list] = None,
        timeout: Optional[float] = None,
        on_stdout: Optional[Callable[[str], None]] = None,
        on_stderr: Optional[Callable[[str], None]] = None,
    ) -> ConsoleOutput:
        """Runs code in the session's interpreter; on_stdout and on_stderr,
        when given, get the call's whole output once it has ended."""
        if not self.container or not self.is_open:
            raise NotOpenSessionError
        if self._interpreter is None:
            raise ContainerError("Interactive runtime is not ready")
        self._check_session_timeout()
        if self.config.security_policy:
            self._refuse_unsafe(code)
        limit = timeout or self.settings.timeout or self.config.get_execution_timeout()
        self.install(libraries)
        try:
            x = self._interpreter.run(code, timeout=limit)
        except hutch.TimeoutError as e:
            raise SandboxTimeoutError(f"Interactive execution timed out after {limit} seconds: {e}", limit) from e
        except hutch.Error as e:
            raise ContainerError(f"interactive interpreter: {e}") from e
        if x.timed_out:
            raise SandboxTimeoutError(f"Interactive execution timed out after {limit} seconds", timeout_duration=limit)
        stdout = x.stdout + (f"{x.value}\n" if x.value is not None else "")
        stderr = x.stderr + (x.error.get("traceback", "") if x.error else "")
        for text, cb in ((stdout, on_stdout), (stderr, on_stderr)):
            if text and cb:
                cb(text)
        return ConsoleOutput(exit_code=1 if x.error else 0, stdout=stdout, stderr=stderr)

    # ---- the rest goes to the sandbox's session ----

    def execute_command(self, command: str, workdir: Optional[str] = None, on_stdout: Any = None,
                        on_stderr: Any = None) -> ConsoleOutput:
        return self._backend_session.execute_command(command, workdir=workdir, on_stdout=on_stdout, on_stderr=on_stderr)

    def execute_commands(self, commands: Any, workdir: Optional[str] = None, on_stdout: Any = None,
                         on_stderr: Any = None) -> ConsoleOutput:
        return self._backend_session.execute_commands(commands, workdir=workdir, on_stdout=on_stdout,
                                                      on_stderr=on_stderr)

    def install(self, libraries: Optional[list] = None) -> None:
        self._backend_session.install(libraries)

    def copy_to_runtime(self, src: str, dest: str) -> None:
        self._backend_session.copy_to_runtime(src, dest)

    def copy_from_runtime(self, src: str, dest: str) -> None:
        self._backend_session.copy_from_runtime(src, dest)

    def _handle_timeout(self) -> None:
        self._backend_session._handle_timeout()

    def _connect_to_existing_container(self, container_id: str) -> None:
        self._backend_session._connect_to_existing_container(container_id)

    def _ensure_directory_exists(self, path: str) -> None:
        self._backend_session._ensure_directory_exists(path)

    def _ensure_ownership(self, paths: list) -> None:
        self._backend_session._ensure_ownership(paths)

    def _process_non_stream_output(self, output: Any) -> Any:
        return self._backend_session._process_non_stream_output(output)

    def _process_stream_output(self, output: Any, on_stdout: Any = None, on_stderr: Any = None) -> Any:
        return self._backend_session._process_stream_output(output, on_stdout=on_stdout, on_stderr=on_stderr)
