# SPDX-License-Identifier: Apache-2.0
"""Sessions that borrow a pool's sandbox from open() to close()."""

from __future__ import annotations

import logging
from types import TracebackType
from typing import Any, Optional

from ..data import ConsoleOutput, ExecutionResult, StreamCallback
from ..security import SecurityPolicy
from .base import ContainerPoolManager, PooledContainer
from .exceptions import SessionNotOpenError


class DuplicateClientError(ValueError):
    def __init__(self) -> None:
        super().__init__(
            "Cannot specify 'client' parameter when using pooling mode. "
            "The client is managed by the pool manager. "
            "Please configure the client in the pool manager instead."
        )


class PooledSandboxSession:
    """A session on a sandbox acquired from pool_manager at open() and
    handed back (reset) at close()."""

    def __init__(
        self,
        pool_manager: ContainerPoolManager,
        verbose: bool = False,
        stream: bool = False,
        workdir: str = "/sandbox",
        security_policy: Optional[SecurityPolicy] = None,
        default_timeout: Optional[float] = None,
        execution_timeout: Optional[float] = None,
        session_timeout: Optional[float] = None,
        encoding_errors: str = "strict",
        **kwargs: Any,
    ) -> None:
        if "client" in kwargs:
            raise DuplicateClientError
        self._pool_manager = pool_manager
        self._pooled_container: Optional[PooledContainer] = None
        self._backend_session: Any = None
        self._verbose = verbose
        self._options = dict(
            verbose=verbose,
            stream=stream,
            workdir=workdir,
            security_policy=security_policy,
            default_timeout=default_timeout,
            execution_timeout=execution_timeout,
            session_timeout=session_timeout,
            encoding_errors=encoding_errors,
        )
        self._lang = kwargs.pop("lang", pool_manager.lang)
        self._image = kwargs.pop("image", pool_manager.image)
        kwargs.pop("backend", None)
        self._session_kwargs = kwargs
        self._logger = logging.getLogger(__name__)

    def open(self) -> None:
        self._pooled_container = self._pool_manager.acquire()
        try:
            self._backend_session = self._create_backend_session(self._pooled_container)
            self._backend_session.open()
        except BaseException:
            self._pool_manager.release(self._pooled_container)
            self._pooled_container, self._backend_session = None, None
            raise
        if self._verbose:
            self._logger.info("Acquired container %s from pool", self._pooled_container.container_id)

    def _create_backend_session(self, pooled: PooledContainer) -> Any:
        from .._backend import SandboxHutchSession

        session = SandboxHutchSession(
            backend=getattr(self._pool_manager, "backend", "docker"),
            image=self._image,
            lang=str(self._lang),
            container_id=pooled.container_id,
            skip_environment_setup=True,
            **self._options,
            **self._session_kwargs,
        )
        session.attach_sandbox(pooled.container)
        return session

    def close(self) -> None:
        if self._backend_session is not None:
            self._backend_session.close()
            self._backend_session = None
        if self._pooled_container is not None:
            if self._verbose:
                self._logger.info("Returning container %s to pool", self._pooled_container.container_id)
            pooled, self._pooled_container = self._pooled_container, None
            self._pool_manager.release(pooled)

    def _session(self) -> Any:
        if self._backend_session is None:
            raise SessionNotOpenError
        return self._backend_session

    def run(self, code: str, libraries: Optional[list] = None, timeout: Optional[float] = None,
            on_stdout: Optional[StreamCallback] = None, on_stderr: Optional[StreamCallback] = None) -> ConsoleOutput:
        return self._session().run(code, libraries=libraries, timeout=timeout, on_stdout=on_stdout, on_stderr=on_stderr)

    def execute_command(self, command: str, workdir: Optional[str] = None) -> ConsoleOutput:
        return self._session().execute_command(command, workdir=workdir)

    def copy_to_runtime(self, src: str, dest: str) -> None:
        self._session().copy_to_runtime(src, dest)

    def copy_from_runtime(self, src: str, dest: str) -> None:
        self._session().copy_from_runtime(src, dest)

    @property
    def backend_session(self) -> Any:
        return self._session()

    def __enter__(self) -> "PooledSandboxSession":
        self.open()
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Optional[TracebackType]) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_backend_session":
            raise AttributeError(name)
        return getattr(self._session(), name)


class ArtifactPooledSandboxSession:
    """A pooled session whose run() also returns the plots the code drew."""

    def __init__(self, pool_manager: ContainerPoolManager, *, verbose: bool = False, stream: bool = False,
                 workdir: str = "/sandbox", enable_plotting: bool = True,
                 security_policy: Optional[SecurityPolicy] = None, **kwargs: Any) -> None:
        self._session = PooledSandboxSession(pool_manager=pool_manager, verbose=verbose, stream=stream,
                                             workdir=workdir, security_policy=security_policy, **kwargs)
        self.enable_plotting = enable_plotting

    def __enter__(self) -> "ArtifactPooledSandboxSession":
        self._session.__enter__()
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Optional[TracebackType]) -> None:
        self._session.__exit__(exc_type, exc_val, exc_tb)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name == "_session":
            raise AttributeError(name)
        return getattr(self._session, name)

    def run(self, code: str, libraries: Optional[list] = None, timeout: Optional[float] = None,
            clear_plots: bool = False, on_stdout: Optional[StreamCallback] = None,
            on_stderr: Optional[StreamCallback] = None) -> ExecutionResult:
        from ..session import run_with_plots

        return run_with_plots(self._session.backend_session, self.enable_plotting, code, libraries, timeout,
                              clear_plots, on_stdout=on_stdout, on_stderr=on_stderr)

    def _clear_plots_in_container(self) -> None:
        from ..session import CLEAR_PLOTS_COMMAND

        if self.enable_plotting:
            self._session.execute_command(CLEAR_PLOTS_COMMAND)

    def clear_plots(self) -> None:
        self._clear_plots_in_container()
