# SPDX-License-Identifier: Apache-2.0
"""The parts of a session that do not depend on where it runs: a time
bound around a call, file copies with their path checks, and command
execution with output decoding.  A backend supplies container_api (the
ContainerAPI protocol) and the abstract methods."""

from __future__ import annotations

import io
import tarfile
import threading
from abc import abstractmethod
from contextlib import suppress
from pathlib import Path, PurePosixPath
from typing import Any, Callable, List, Optional, Protocol, Tuple, runtime_checkable

from ..data import ConsoleOutput, StreamCallback
from ..exceptions import CommandEmptyError, NotOpenSessionError, SandboxTimeoutError, SecurityError

#: How long a timed-out call's thread is waited for before it is left behind.
CLEANUP_THREAD_TIMEOUT = 0.1


@runtime_checkable
class ContainerAPI(Protocol):
    """The operations a backend offers on its container object."""

    def create_container(self, config: Any) -> Any: ...

    def start_container(self, container: Any) -> None: ...

    def stop_container(self, container: Any) -> None: ...

    def execute_command(self, container: Any, command: str, **kwargs: Any) -> Tuple[int, Any]: ...

    def copy_to_container(self, container: Any, src: str, dest: str, **kwargs: Any) -> None: ...

    def copy_from_container(self, container: Any, src: str, **kwargs: Any) -> Tuple[bytes, dict]: ...


class TimeoutMixin:
    logger: Any

    def _execute_with_timeout(
        self,
        func: Callable[..., Any],
        *args: Any,
        timeout: Optional[float] = None,
        force_kill_on_timeout: bool = True,
        **kwargs: Any,
    ) -> Any:
        """func(*args, **kwargs), or SandboxTimeoutError after timeout seconds.

        The call runs in a thread of its own; a thread cannot be stopped, so
        on a timeout the backend's _handle_timeout() (in another thread) is
        what ends the work inside the sandbox."""
        if timeout is None:
            return func(*args, **kwargs)
        box: List[Any] = [None, None]
        done = threading.Event()

        def call() -> None:
            try:
                box[0] = func(*args, **kwargs)
            except BaseException as e:  # handed to the caller's thread
                box[1] = e
            finally:
                done.set()

        worker = threading.Thread(target=call, daemon=True)
        worker.start()
        try:
            if not done.wait(timeout):
                handler = getattr(self, "_handle_timeout", None)
                if force_kill_on_timeout and callable(handler):
                    threading.Thread(target=self._cleanup_after_timeout, args=(handler,), daemon=True).start()
                raise SandboxTimeoutError(f"Operation timed out after {timeout} seconds", timeout_duration=timeout)
            if box[1] is not None:
                raise box[1]
            return box[0]
        finally:
            with suppress(Exception):
                worker.join(timeout=0.0 if done.is_set() else CLEANUP_THREAD_TIMEOUT)

    def _cleanup_after_timeout(self, handler: Callable[[], None]) -> None:
        try:
            handler()
        except Exception:
            self.logger.warning("Failed to cleanup container after timeout")


class FileOperationsMixin:
    container_api: ContainerAPI
    container: Any
    verbose: bool
    logger: Any

    @staticmethod
    def _validate_container_path(path: str) -> str:
        """path normalised; SecurityError when it climbs with "..".

        hutch resolves every path inside the sandbox's own root whatever it
        holds; the check is llm-sandbox's contract."""
        normalised = PurePosixPath(path)
        if ".." in normalised.parts:
            raise SecurityError(f"Path traversal detected in container path: {path}")
        return str(normalised)

    def copy_to_runtime(self, src: str, dest: str) -> None:
        if not self.container:
            raise NotOpenSessionError
        dest = self._validate_container_path(dest)
        source = Path(src)
        if not (source.exists() and (source.is_file() or source.is_dir())):
            raise FileNotFoundError(f"Source path {src} does not exist or is not accessible")
        if self.verbose:
            self.logger.info("Copying %s to %s", src, dest)
        parent = str(Path(dest).parent)
        if parent:
            self._ensure_directory_exists(parent)
        self.container_api.copy_to_container(self.container, src, dest)
        self._ensure_ownership([dest])

    def copy_from_runtime(self, src: str, dest: str) -> None:
        if not self.container:
            raise NotOpenSessionError
        if self.verbose:
            self.logger.info("Copying %s to %s", src, dest)
        data, stat = self.container_api.copy_from_container(self.container, src)
        if stat.get("size", 0) == 0:
            raise FileNotFoundError(f"File {src} not found in container")
        self._extract_archive_safely(data, dest)

    def _extract_archive_safely(self, bits: bytes, dest: str) -> None:
        """Unpacks a tar from the sandbox at dest, without absolute or
        climbing paths and without links (the sandbox wrote it)."""
        with tarfile.open(fileobj=io.BytesIO(bits), mode="r") as tar:
            members = self._filter_safe_members(tar.getmembers())
            if not members:
                raise FileNotFoundError("No safe content found in archive")
            Path(dest).parent.mkdir(parents=True, exist_ok=True)
            where = self._determine_extract_path(members, dest)
            for member in members:
                tar.extract(member, path=where)

    def _filter_safe_members(self, members: List[Any]) -> List[Any]:
        safe = []
        for member in members:
            why = "unsafe path" if self._is_unsafe_path(member.name) else "symlink" if self._is_symlink(member) else ""
            if why:
                if self.verbose:
                    self.logger.warning("Skipping %s: %s", why, member.name)
                continue
            safe.append(member)
        return safe

    def _is_unsafe_path(self, path: str) -> bool:
        return path.startswith("/") or ".." in path

    def _is_symlink(self, member: Any) -> bool:
        return bool(member.issym() or member.islnk())

    def _determine_extract_path(self, safe_members: List[Any], dest: str) -> str:
        # One file lands at dest itself; a tree lands under dest.
        if len(safe_members) == 1 and safe_members[0].isfile():
            safe_members[0].name = Path(dest).name
            return str(Path(dest).parent)
        return str(dest)

    @abstractmethod
    def _ensure_directory_exists(self, path: str) -> None: ...

    @abstractmethod
    def _ensure_ownership(self, paths: List[str]) -> None: ...


class CommandExecutionMixin:
    container_api: ContainerAPI
    container: Any
    verbose: bool
    logger: Any
    stream: bool

    def execute_command(
        self,
        command: str,
        workdir: Optional[str] = None,
        on_stdout: Optional[StreamCallback] = None,
        on_stderr: Optional[StreamCallback] = None,
    ) -> ConsoleOutput:
        if not command:
            raise CommandEmptyError
        if not self.container:
            raise NotOpenSessionError
        if self.verbose:
            self.logger.info("Executing command: %s", command)
        streaming = bool(getattr(self, "stream", False)) or on_stdout is not None or on_stderr is not None
        exit_code, output = self.container_api.execute_command(
            self.container, command, workdir=workdir, stream=streaming
        )
        stdout, stderr = self._process_output(output, streaming, on_stdout=on_stdout, on_stderr=on_stderr)
        if self.verbose:
            if stdout:
                self.logger.info("STDOUT: %s", stdout)
            if stderr:
                self.logger.error("STDERR: %s", stderr)
        return ConsoleOutput(exit_code=exit_code or 0, stdout=stdout, stderr=stderr)

    def _process_output(
        self,
        output: Any,
        is_stream: Optional[bool] = None,
        on_stdout: Optional[StreamCallback] = None,
        on_stderr: Optional[StreamCallback] = None,
    ) -> Tuple[str, str]:
        streaming = self.stream if is_stream is None else is_stream
        if streaming:
            return self._process_stream_output(output, on_stdout=on_stdout, on_stderr=on_stderr)
        return self._process_non_stream_output(output)

    @abstractmethod
    def _process_non_stream_output(self, output: Any) -> Tuple[str, str]: ...

    @abstractmethod
    def _process_stream_output(
        self,
        output: Any,
        on_stdout: Optional[StreamCallback] = None,
        on_stderr: Optional[StreamCallback] = None,
    ) -> Tuple[str, str]: ...
