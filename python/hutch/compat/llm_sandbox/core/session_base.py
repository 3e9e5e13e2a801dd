# SPDX-License-Identifier: Apache-2.0
"""BaseSession: what every session does, whatever runs it: the security
policy's scan, library installation through the language handler, the
environment set-up, run() (code to a file in the workdir, then the
handler's commands), and the session's own time limit."""

from __future__ import annotations

import logging
import re
import threading
import time
import types
import uuid
from abc import ABC, abstractmethod
from pathlib import PurePosixPath
from typing import Any, List, Optional, Sequence, Tuple, Union

from hutch import _code
from ..const import SupportedLanguage
from ..data import ConsoleOutput, StreamCallback
from ..exceptions import (
    LanguageHandlerNotInitializedError,
    LibraryInstallationNotSupportedError,
    NotOpenSessionError,
    SandboxTimeoutError,
    SecurityError,
    SecurityViolationError,
)
from ..language_handlers.factory import LanguageHandlerFactory
from ..language_handlers.runtime_context import RuntimeContext
from ..security import SecurityIssueSeverity, SecurityPattern
from .config import SessionConfig
from .mixins import CommandExecutionMixin, ContainerAPI, FileOperationsMixin, TimeoutMixin

PYTHON_VENV_DIR_NAME = ".sandbox-venv"
PYTHON_PIP_CACHE_DIR_NAME = ".sandbox-pip-cache"
GO_CREATE_MODULE_COMMAND = "go mod init sandbox"
GO_TIDY_MODULE_COMMAND = "go mod tidy"

Command = Union[str, Tuple[str, Optional[str]]]


class UnsafeCodeError(SecurityViolationError, SecurityError):
    """run() refused code the session's security policy blocks; caught as
    either of llm-sandbox's two security errors."""


class BaseSession(ABC, TimeoutMixin, FileOperationsMixin, CommandExecutionMixin):
    container_api: ContainerAPI

    def __init__(self, config: SessionConfig, **kwargs: Any) -> None:
        self.config = config
        self.verbose = config.verbose
        self.logger = logging.getLogger(__name__)
        # Libraries a pool asks for, installed at the end of environment_setup().
        self._initial_libraries: Optional[List[str]] = kwargs.pop("libraries", None)
        if self.verbose and not self.logger.handlers:
            handler = logging.StreamHandler()
            handler.setFormatter(
                logging.Formatter("%(asctime)s - %(name)s - %(levelname)s - %(message)s", datefmt="%Y-%m-%d %H:%M:%S")
            )
            self.logger.addHandler(handler)
            self.logger.setLevel(logging.DEBUG)
        self.language_handler = LanguageHandlerFactory.create_handler(config.lang, self.logger)
        self._session_start_time: Optional[float] = None
        self._session_timer: Optional[threading.Timer] = None
        self.container: Any = None
        self.is_open = False
        self.using_existing_container = config.is_using_existing_container()
        workdir = PurePosixPath(config.workdir)
        self._python_env_dir = (workdir / PYTHON_VENV_DIR_NAME).as_posix()
        self._python_pip_cache_dir = (workdir / PYTHON_PIP_CACHE_DIR_NAME).as_posix()

    def _log(self, message: str, level: str = "info") -> None:
        if self.verbose:
            getattr(self.logger, level)(message)

    # ---- the session's lifetime ----

    def _check_session_timeout(self) -> None:
        limit = self.config.session_timeout
        if limit and self._session_start_time and time.time() - self._session_start_time > limit:
            raise SandboxTimeoutError(f"Session exceeded maximum lifetime of {limit} seconds")

    def _start_session_timer(self) -> None:
        self._session_start_time = time.time()
        if self.config.session_timeout:
            self._session_timer = threading.Timer(self.config.session_timeout, self._session_expired)
            self._session_timer.daemon = True
            self._session_timer.start()

    def _session_expired(self) -> None:
        self._log(f"Session timed out after {self.config.session_timeout} seconds", "warning")
        try:
            self.close()
        except Exception as e:
            self._log(f"Error during timeout cleanup: {e}", "error")

    def _stop_session_timer(self) -> None:
        if self._session_timer:
            self._session_timer.cancel()
            self._session_timer = None

    # ---- the security policy (advisory: see security.py) ----

    def _add_restricted_module_patterns(self) -> None:
        """Adds, once, a pattern per restricted module: the language's import of it."""
        policy = self.config.security_policy
        if not policy or not policy.restricted_modules:
            return
        for module in policy.restricted_modules:
            pattern = SecurityPattern(
                pattern=self.language_handler.get_import_patterns(module.name),
                description=module.description,
                severity=module.severity,
            )
            if pattern not in (policy.patterns or []):
                policy.add_pattern(pattern)

    def _check_pattern_violations(self, filtered_code: str) -> Tuple[bool, List[SecurityPattern]]:
        """Every pattern the code matches, up to the first that blocks it."""
        policy = self.config.security_policy
        if not policy or not policy.patterns:
            return True, []
        found: List[SecurityPattern] = []
        for pattern in policy.patterns:
            if pattern.pattern and self._check_single_pattern(pattern, filtered_code):
                found.append(pattern)
                if self._should_fail_on_violation(pattern):
                    return False, found
        return True, found

    def _check_single_pattern(self, pattern_obj: SecurityPattern, filtered_code: str) -> bool:
        try:
            return re.search(pattern_obj.pattern, filtered_code) is not None
        except re.error as e:
            self._log(f"Invalid regex pattern '{pattern_obj.pattern}': {e}", "error")
            return False

    def _should_fail_on_violation(self, pattern_obj: SecurityPattern) -> bool:
        policy = self.config.security_policy
        if not policy or not policy.severity_threshold:
            return False
        return policy.severity_threshold > SecurityIssueSeverity.SAFE and pattern_obj.severity >= policy.severity_threshold

    def _check_security_policy(self, code: str) -> Tuple[bool, List[SecurityPattern]]:
        if not self.config.security_policy:
            return True, []
        if not self.language_handler:
            raise LanguageHandlerNotInitializedError(self.config.lang)
        self._add_restricted_module_patterns()
        if not self.config.security_policy.patterns:
            return True, []
        return self._check_pattern_violations(self.language_handler.filter_comments(code))

    def is_safe(self, code: str) -> Tuple[bool, List[SecurityPattern]]:
        """(safe, the patterns code matched) under the session's policy."""
        return self._check_security_policy(code)

    # ---- libraries and commands ----

    def _runtime_context(self, venv: bool) -> RuntimeContext:
        python = venv and self.language_handler.name == SupportedLanguage.PYTHON
        return RuntimeContext(
            workdir=self.config.workdir,
            python_executable_path=self.python_executable_path if python else None,
            pip_executable_path=self.pip_executable_path if python else None,
            pip_cache_dir=self.pip_cache_dir_path if python else None,
        )

    def install(self, libraries: Optional[List[str]] = None) -> None:
        """Installs libraries with the language's package manager."""
        if not libraries:
            return
        if self.config.skip_environment_setup:
            self._log("Library installation is not supported when skip_environment_setup is True", "error")
            self._log("Use a pre-configured image, or install libraries with the execute_command method", "info")
            raise LibraryInstallationNotSupportedError(self.config.lang)
        if not self.language_handler.is_support_library_installation:
            raise LibraryInstallationNotSupportedError(self.config.lang)
        policy = self.config.security_policy
        restricted = {m.name for m in (policy.restricted_modules or [])} if policy else set()
        for library in libraries:
            if library in restricted:
                raise SecurityViolationError(f"Library {library} is not allowed to be installed")
        ctx = self._runtime_context(venv=True)
        commands: List[Command] = [
            (self.language_handler.get_library_installation_command(lib, runtime_context=ctx), self.config.workdir)
            for lib in libraries
        ]
        # As llm-sandbox, a failed installation does not stop run(); unlike
        # it, the failure is said (always, not only when verbose), with the
        # hosts the sandbox's proxy refused, so a missing allowlist entry is
        # not mistaken for a missing package.
        log = self._proxy_log()
        start = _code._log_size(log)
        out = self.execute_commands(commands)
        if out.exit_code:
            refused = _code._refused(log, start)
            why = _code.refused_text(refused) if refused else (
                "the sandbox has no network" if not log else f"exit {out.exit_code}")
            self.logger.warning("installing %s failed: %s", ", ".join(libraries), why)

    def _proxy_log(self) -> Optional[str]:
        h = getattr(self.container, "_h", None)
        try:
            return h.proxy_log() if h is not None else None
        except Exception:  # a sandbox without a proxy
            return None

    def execute_commands(
        self,
        commands: Sequence[Any],
        workdir: Optional[str] = None,
        on_stdout: Optional[StreamCallback] = None,
        on_stderr: Optional[StreamCallback] = None,
    ) -> ConsoleOutput:
        """Runs commands in turn, each a string (in workdir) or a
        (command, workdir) pair; returns the output of the first that
        fails, else of the last."""
        output = ConsoleOutput(exit_code=0)
        for command in commands:
            if _is_pair(command):
                cmd, where = command
            else:
                cmd, where = command, workdir
            output = self.execute_command(cmd, workdir=where, on_stdout=on_stdout, on_stderr=on_stderr)
            if output.exit_code:
                break
        return output

    @property
    def python_executable_path(self) -> str:
        return f"{self._python_env_dir}/bin/python"

    @property
    def pip_executable_path(self) -> str:
        return f"{self._python_env_dir}/bin/pip"

    @property
    def pip_cache_dir_path(self) -> str:
        return self._python_pip_cache_dir

    def environment_setup(self) -> None:
        """Prepares the language's environment: for Python a virtualenv over
        the system's packages, for Go a module; then the pool's libraries."""
        if self.using_existing_container or self.config.skip_environment_setup:
            why = "existing container" if self.using_existing_container else "skip_environment_setup=True"
            self._log(f"Skipping environment setup ({why})", "info")
            if self._initial_libraries:
                self._log(
                    f"Warning: Libraries {self._initial_libraries} were requested but cannot be installed ({why}); "
                    "they must be in the image already.",
                    "warning",
                )
            return
        self.execute_commands([(f"mkdir -p {self.config.workdir}", None)])
        self._setup_language()
        if self._initial_libraries:
            self._log(f"Installing pre-configured libraries: {self._initial_libraries}", "info")
            self.install(self._initial_libraries)

    def _setup_language(self) -> None:
        if self.language_handler.name == SupportedLanguage.PYTHON:
            venv, cache = self._python_env_dir, self._python_pip_cache_dir
            self.execute_commands([(f"python -m venv --system-site-packages {venv}", None), (f"mkdir -p {cache}", None)])
            self._ensure_ownership([venv, cache])
            self.execute_commands([(f"{self.pip_executable_path} install --upgrade pip --cache-dir {cache}", None)])
        elif self.language_handler.name == SupportedLanguage.GO:
            self.execute_commands(
                [(GO_CREATE_MODULE_COMMAND, self.config.workdir), (GO_TIDY_MODULE_COMMAND, self.config.workdir)]
            )

    # ---- running code ----

    def _refuse_unsafe(self, code: str) -> None:
        safe, found = self.is_safe(code)
        if not safe:
            names = "; ".join(p.description for p in found)
            raise UnsafeCodeError(f"Code blocked by the session's security policy: {names}")

    def _code_path(self) -> str:
        return (PurePosixPath(self.config.workdir) / f"{uuid.uuid4().hex}.{self.language_handler.file_extension}").as_posix()

    def _put_code(self, code: str, path: str) -> None:
        """Writes code at path in the sandbox (a backend may do it directly)."""
        import tempfile
        from pathlib import Path

        with tempfile.NamedTemporaryFile("w", suffix=PurePosixPath(path).suffix, delete=False, encoding="utf-8") as f:
            f.write(code)
        try:
            self.copy_to_runtime(f.name, path)
        finally:
            Path(f.name).unlink(missing_ok=True)

    def run(
        self,
        code: str,
        libraries: Optional[list] = None,
        timeout: Optional[float] = None,
        on_stdout: Optional[StreamCallback] = None,
        on_stderr: Optional[StreamCallback] = None,
    ) -> ConsoleOutput:
        """Installs libraries, writes code to a file in the workdir and runs
        it with the language's commands; SandboxTimeoutError after timeout
        (else the execution timeout, else the default) seconds; refuses
        code the security policy blocks."""
        if not self.container or not self.is_open:
            raise NotOpenSessionError
        self._check_session_timeout()
        if self.config.security_policy:
            self._refuse_unsafe(code)
        limit = timeout or self.config.get_execution_timeout()
        # A pooled session's sandbox got its environment from the pool.
        venv = not self.config.skip_environment_setup or self.using_existing_container

        def go() -> ConsoleOutput:
            self.install(libraries)
            path = self._code_path()
            self._put_code(code, path)
            commands = self.language_handler.get_execution_commands(path, runtime_context=self._runtime_context(venv))
            return self.execute_commands(commands, workdir=self.config.workdir, on_stdout=on_stdout, on_stderr=on_stderr)

        try:
            return self._execute_with_timeout(go, timeout=limit)
        except SandboxTimeoutError:
            self._handle_timeout()
            raise

    # ---- what a backend provides ----

    @abstractmethod
    def _handle_timeout(self) -> None:
        """Stops what a timed-out run left running."""

    @abstractmethod
    def _connect_to_existing_container(self, container_id: str) -> None: ...

    @abstractmethod
    def open(self) -> None:
        self._start_session_timer()
        self.is_open = True

    @abstractmethod
    def close(self) -> None:
        self._stop_session_timer()
        self.is_open = False

    def __enter__(self) -> "BaseSession":
        self.open()
        return self

    def __exit__(
        self,
        exc_type: Optional[type],
        exc_val: Optional[BaseException],
        exc_tb: Optional[types.TracebackType],
    ) -> None:
        self.close()


def _is_pair(command: Any) -> bool:
    if isinstance(command, tuple):
        return True
    return (
        isinstance(command, list)
        and len(command) == 2
        and isinstance(command[0], str)
        and (command[1] is None or isinstance(command[1], str))
    )
