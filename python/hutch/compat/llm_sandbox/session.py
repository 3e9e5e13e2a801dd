# SPDX-License-Identifier: Apache-2.0
"""SandboxSession (create_session) and ArtifactSandboxSession.

Every backend llm-sandbox names (docker, podman, kubernetes, micromamba)
runs in a hutch sandbox; the session says so once in a log line."""

from __future__ import annotations

from types import TracebackType
from typing import Any, Optional

from .const import SandboxBackend, SupportedLanguage
from .data import ExecutionResult, StreamCallback
from .exceptions import LanguageNotSupportPlotError, UnsupportedBackendError
from .interactive import InteractiveSandboxSession
from .pool.base import ContainerPoolManager
from .pool.session import ArtifactPooledSandboxSession, PooledSandboxSession
from .security import SecurityPolicy

__all__ = [
    "ArtifactSandboxSession",
    "ContainerPoolManager",
    "InteractiveSandboxSession",
    "PooledSandboxSession",
    "SandboxSession",
    "create_session",
]

PLOTS_DIR = "/tmp/sandbox_plots"
CLEAR_PLOTS_COMMAND = f'sh -c "mkdir -p {PLOTS_DIR} && rm -rf {PLOTS_DIR}/* && echo 0 > {PLOTS_DIR}/.counter"'


def _check_dependency(backend: SandboxBackend) -> None:
    """llm-sandbox checks its backend's client package here; hutch needs none."""
    _backend(backend)


def _backend(backend: Any) -> SandboxBackend:
    try:
        return SandboxBackend(backend)
    except ValueError:
        raise UnsupportedBackendError(backend=backend) from None


def create_session(
    backend: SandboxBackend = SandboxBackend.DOCKER,
    pool: Optional[ContainerPoolManager] = None,
    *args: Any,
    **kwargs: Any,
) -> Any:
    """A session (not yet open: use it in a with block or call open()) in
    a hutch sandbox; with pool, one that borrows the pool's sandboxes."""
    if pool is not None:
        return PooledSandboxSession(pool_manager=pool, **kwargs)
    from ._backend import SandboxHutchSession

    return SandboxHutchSession(_backend(backend), *args, **kwargs)


SandboxSession = create_session


def run_with_plots(session: Any, enable_plotting: bool, code: str, libraries: Optional[list],
                   timeout: Optional[float], clear_plots: bool, **callbacks: Any) -> ExecutionResult:
    """An artifact session's run: code, and the figures it drew."""
    handler = session.language_handler
    if enable_plotting and not handler.is_support_plot_detection:
        raise LanguageNotSupportPlotError(handler.name)
    if clear_plots and enable_plotting:
        session.execute_command(CLEAR_PLOTS_COMMAND)
    if timeout is None:
        timeout = session.config.get_execution_timeout()
        timeout = 60 if timeout is None else timeout
    result, plots = handler.run_with_artifacts(
        container=session,
        code=code,
        libraries=libraries,
        enable_plotting=enable_plotting,
        output_dir=PLOTS_DIR,
        timeout=int(timeout),
        **callbacks,
    )
    return ExecutionResult(exit_code=result.exit_code, stdout=result.stdout, stderr=result.stderr, plots=plots)


class ArtifactSandboxSession:
    """A session whose run() also returns the plots the code drew."""

    def __init__(
        self,
        backend: SandboxBackend = SandboxBackend.DOCKER,
        image: Optional[str] = None,
        dockerfile: Optional[str] = None,
        lang: str = SupportedLanguage.PYTHON,
        *,
        pool: Optional[ContainerPoolManager] = None,
        keep_template: bool = False,
        commit_container: bool = False,
        verbose: bool = False,
        runtime_configs: Optional[dict] = None,
        workdir: Optional[str] = "/sandbox",
        enable_plotting: bool = True,
        security_policy: Optional[SecurityPolicy] = None,
        container_id: Optional[str] = None,
        **kwargs: Any,
    ) -> None:
        self.enable_plotting = enable_plotting
        self._session: Any = None
        self._pooled_impl: Optional[ArtifactPooledSandboxSession] = None
        if pool is not None:
            self._pooled_impl = ArtifactPooledSandboxSession(
                pool_manager=pool,
                verbose=verbose,
                workdir=workdir or "/sandbox",
                enable_plotting=enable_plotting,
                security_policy=security_policy,
                **kwargs,
            )
            return
        self._session = create_session(
            backend=backend,
            image=image,
            dockerfile=dockerfile,
            lang=lang,
            keep_template=keep_template,
            commit_container=commit_container,
            verbose=verbose,
            runtime_configs=runtime_configs,
            workdir=workdir,
            security_policy=security_policy,
            container_id=container_id,
            **kwargs,
        )

    def _inner(self) -> Any:
        return self._pooled_impl if self._pooled_impl is not None else self._session

    def __enter__(self) -> "ArtifactSandboxSession":
        self._inner().__enter__()
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Optional[TracebackType]) -> None:
        self._inner().__exit__(exc_type, exc_val, exc_tb)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in ("_session", "_pooled_impl"):
            raise AttributeError(name)
        return getattr(self._inner(), name)

    def run(
        self,
        code: str,
        libraries: Optional[list] = None,
        timeout: Optional[float] = None,
        clear_plots: bool = False,
        on_stdout: Optional[StreamCallback] = None,
        on_stderr: Optional[StreamCallback] = None,
    ) -> ExecutionResult:
        """Runs code; result.plots holds the figures it drew (clear_plots:
        forget those of earlier runs first)."""
        if self._pooled_impl is not None:
            return self._pooled_impl.run(
                code=code, libraries=libraries, timeout=timeout, clear_plots=clear_plots,
                on_stdout=on_stdout, on_stderr=on_stderr,
            )
        return run_with_plots(self._session, self.enable_plotting, code, libraries, timeout, clear_plots,
                              on_stdout=on_stdout, on_stderr=on_stderr)

    def _clear_plots_in_container(self) -> None:
        if not self.enable_plotting:
            return
        if self._pooled_impl is not None:
            self._pooled_impl._clear_plots_in_container()
            return
        self._session.execute_command(CLEAR_PLOTS_COMMAND)

    def clear_plots(self) -> None:
        """Forgets the plots of earlier runs (and restarts their numbering)."""
        if self.enable_plotting:
            self._clear_plots_in_container()
