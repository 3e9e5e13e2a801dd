# SPDX-License-Identifier: Apache-2.0
"""The one backend: a session whose "container" is a hutch.Sandbox.

Whatever backend or client the caller names, the session runs here, says
so once in a log line, and uses no client object it was given."""

from __future__ import annotations

import codecs
import errno
import io
import logging
import tarfile
import threading
import time
from pathlib import Path, PurePosixPath
from typing import Any, Dict, List, Optional, Tuple

import hutch

from .const import SandboxBackend, SupportedLanguage
from .core.config import SessionConfig
from .core.session_base import BaseSession
from .data import ConsoleOutput, StreamCallback
from .exceptions import CommandEmptyError, ContainerError, NotOpenSessionError, SandboxTimeoutError, ValidationError
from ._images import hutch_image, registries
from ._runtime_configs import pod_identity, sandbox_options

log = logging.getLogger("hutch.compat.llm_sandbox")
_told: set = set()
_told_lock = threading.Lock()

#: The sandboxes of sessions opened and not closed.  A container outlives
#: the Python object of the session that started it (a session dropped
#: without close(), or its name bound to another, as llm-sandbox's own
#: examples do before they connect to its container_id): so does its
#: sandbox, until close() or the end of the program (hutch removes what is
#: left then).
_unclosed: set = set()
_unclosed_lock = threading.Lock()

#: Keywords of llm-sandbox's container backends that mean nothing here.
_BACKEND_ONLY = {"client", "kube_namespace", "pod_manifest", "env_vars", "keep_template", "mounts"}


def tell_once(key: str, line: str) -> None:
    with _told_lock:
        if key in _told:
            return
        _told.add(key)
    log.warning("%s", line)


def note_backend(backend: Any, kwargs: Dict[str, Any]) -> None:
    name = str(getattr(backend, "value", backend) or "docker")
    tell_once(f"backend:{name}", f"llm-sandbox backend {name!r}: running in a hutch sandbox (rootless, no daemon), not {name}")
    if kwargs.get("client") is not None:
        tell_once("client", "llm-sandbox client= given: not used, hutch needs no container client")


class HutchContainerAPI:
    """llm-sandbox's ContainerAPI over a hutch.Sandbox."""

    def __init__(self, sandbox_options: Dict[str, Any], image: str) -> None:
        self.options, self.image = sandbox_options, image

    def create_container(self, config: Any = None) -> hutch.Sandbox:
        sb = self._create()
        with _unclosed_lock:
            _unclosed.add(sb)
        return sb

    def _create(self) -> hutch.Sandbox:
        try:
            return hutch.Sandbox(self.image, **self.options)
        except hutch.Error as e:
            limited = any(k in self.options for k in ("memory", "cpus", "pids"))
            if not limited or "cgroup" not in str(e):
                raise
            # Docker applies mem_limit and cpus wherever it runs; without a
            # cgroup of its own hutch can only bound each process (rlimits,
            # and init's memory watchdog): said, not silent.
            tell_once("rlimits", f"runtime_configs limits applied per process (rlimits), not as a cgroup: {e}")
            return hutch.Sandbox(self.image, no_cgroups=True, **self.options)

    def start_container(self, container: Any) -> None:
        pass  # a hutch sandbox runs from its creation

    def stop_container(self, container: Any) -> None:
        with _unclosed_lock:
            _unclosed.discard(container)
        container.close()

    def execute_command(self, container: Any, command: str, **kwargs: Any) -> Tuple[int, Any]:
        r = container.exec(command, cwd=kwargs.get("workdir"), timeout=kwargs.get("timeout"))
        return r.exit_code, (r.stdout, r.stderr)

    def copy_to_container(self, container: Any, src: str, dest: str, **kwargs: Any) -> None:
        container.upload(src, dest)

    def copy_from_container(self, container: Any, src: str, **kwargs: Any) -> Tuple[bytes, dict]:
        return tar_of(container, src)


def tar_of(sb: hutch.Sandbox, path: str) -> Tuple[bytes, dict]:
    """A file of the sandbox as a one-member tar, as Docker's get_archive gives it."""
    kind = sb.file_kind(path)
    if kind != "file":
        raise FileNotFoundError(f"{path}: not a file in the sandbox ({kind})")
    data = sb.read_file(path)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo(PurePosixPath(path).name)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue(), {"name": PurePosixPath(path).name, "size": len(data)}


class SandboxHutchSession(BaseSession):
    """A session in a hutch sandbox made at open() and removed at close()."""

    def __init__(
        self,
        backend: Any = SandboxBackend.DOCKER,
        image: Optional[str] = None,
        dockerfile: Optional[str] = None,
        lang: str = SupportedLanguage.PYTHON,
        keep_template: bool = False,
        commit_container: bool = False,
        verbose: bool = False,
        stream: bool = False,
        runtime_configs: Optional[dict] = None,
        workdir: Optional[str] = "/sandbox",
        security_policy: Any = None,
        default_timeout: Optional[float] = None,
        execution_timeout: Optional[float] = None,
        session_timeout: Optional[float] = None,
        container_id: Optional[str] = None,
        skip_environment_setup: bool = False,
        encoding_errors: str = "strict",
        allow: Any = (),
        resolve: Any = (),
        **kwargs: Any,
    ) -> None:
        if dockerfile is not None:
            raise ValidationError(
                f"dockerfile={dockerfile!r}: hutch builds images from Dockerfiles with `hutch build` "
                "(hutch rootfs build for its own recipes); build it once and pass image=NAME"
            )
        config = SessionConfig(
            image=image,
            lang=SupportedLanguage(str(lang).upper()),
            verbose=verbose,
            workdir=workdir or "/sandbox",
            runtime_configs=dict(runtime_configs or {}),
            security_policy=security_policy,
            default_timeout=default_timeout,
            execution_timeout=execution_timeout,
            session_timeout=session_timeout,
            container_id=container_id,
            skip_environment_setup=skip_environment_setup,
            encoding_errors=encoding_errors,
        )
        libraries = kwargs.pop("libraries", None)
        note_backend(backend, kwargs)
        pod_user = pod_identity(kwargs.get("pod_manifest"))
        if kwargs.get("pod_manifest") is not None:
            tell_once(
                "pod_manifest",
                "llm-sandbox pod_manifest: its securityContext's runAsUser/runAsGroup are applied; the rest of "
                "the manifest (image, resources, volumes, readOnlyRootFilesystem) is not: use image=, "
                "runtime_configs mem_limit, cpu_count, volumes and read_only",
            )
        unknown = sorted(set(kwargs) - _BACKEND_ONLY)
        if unknown:
            raise ValidationError(f"SandboxSession: unknown argument(s) {', '.join(unknown)}")
        super().__init__(config, libraries=libraries)
        # Refused settings fail here, before anything is made.
        self._options, timeout = sandbox_options(config.runtime_configs)
        if pod_user and "user" not in self._options:
            self._options["user"] = pod_user
        # As a container on Docker's bridge reaches the language's registry
        # for libraries=, the proxy lets the session reach it (and no more).
        reach = list(allow) + (registries(config.lang) if self._options.get("net") == "proxy" else [])
        if reach:
            self._options["allow"] = reach
        if resolve:
            self._options["resolve"] = list(resolve)
        if timeout and not execution_timeout:
            config.execution_timeout = timeout
        self.stream = stream
        self.keep_template = keep_template
        self.commit_container = commit_container
        self.committed_image: Optional[str] = None
        self._deadline = threading.local()
        self._given: Optional[hutch.Sandbox] = None
        self._code_files: List[str] = []
        self.container_api = None  # type: ignore[assignment]

    # ---- lifetime ----

    def open(self) -> None:
        if self.is_open:
            return
        super().open()
        try:
            if self.using_existing_container:
                self._connect_to_existing_container(self.config.container_id or "")
            else:
                image = hutch_image(self.config.lang, self.config.image)
                self.container_api = HutchContainerAPI(self._sandbox_options(), image)
                try:
                    self.container = self.container_api.create_container()
                    # Commands start in the workdir (as in llm-sandbox's
                    # images); hutch makes it the sandbox's user's.
                    self.container.mkdir(self.config.workdir)
                except hutch.Error as e:
                    if e.errno == errno.EROFS:
                        raise ContainerError(
                            f"runtime_configs read_only=True: the workdir {self.config.workdir} would be on the "
                            "read-only root; give a workdir under /tmp, or bind a host directory there "
                            "(runtime_configs volumes)"
                        ) from e
                    raise ContainerError(f"hutch could not make the sandbox: {e}") from e
            self.environment_setup()
        except BaseException:
            self.close()
            raise

    def _sandbox_options(self) -> Dict[str, Any]:
        options = dict(self._options)
        env = {"PYTHONUNBUFFERED": "1", "PIP_BREAK_SYSTEM_PACKAGES": "1", "PIP_ROOT_USER_ACTION": "ignore"}
        if "user" in options:
            # Another user cannot write the image's site-packages: pip
            # installs for the user (its own fallback), in /tmp, which every
            # user may write (the home of a uid the image does not list is /).
            env["PYTHONUSERBASE"] = "/tmp/.sandbox-python-user"
        env.update(options.get("env", {}))
        options["env"] = env
        return options

    def attach_sandbox(self, sandbox: hutch.Sandbox) -> None:
        """Runs on sandbox (a pool's), which close() leaves to its owner."""
        self._given = sandbox

    def _connect_to_existing_container(self, container_id: str) -> None:
        if self._given is not None:
            self.container = self._given
            self.container_api = HutchContainerAPI({}, "")
            return
        # Kubernetes code passes its session's .container (the pod) as the id.
        container_id = str(getattr(container_id, "id", container_id))
        try:
            self.container = hutch.Sandbox.attach(container_id)
        except hutch.Error as e:
            raise ContainerError(f"Container {container_id} not found: {e}") from e
        self.container_api = HutchContainerAPI({}, "")
        self._log(f"Connected to existing sandbox {container_id}")

    def close(self) -> None:
        super().close()
        sb, self.container = self.container, None
        if sb is None:
            return
        try:
            if self.commit_container and not self.using_existing_container:
                snap = sb.snapshot()
                self.committed_image = snap.image
                self._log(f"Saved the session's sandbox as image {snap.image}")
        finally:
            if sb is not self._given:
                with _unclosed_lock:
                    _unclosed.discard(sb)
                sb.close()

    # ---- the environment: the image's own interpreters ----

    @property
    def python_executable_path(self) -> str:
        return "python3"

    @property
    def pip_executable_path(self) -> str:
        return "python3 -m pip"

    @property
    def pip_cache_dir_path(self) -> str:
        return "/tmp/.sandbox-pip-cache"

    def _setup_language(self) -> None:
        # Python runs on the image's python3 (pip may change it: the sandbox
        # is a throwaway layer over the image); Go needs its module.
        if self.language_handler.name == SupportedLanguage.GO:
            super()._setup_language()

    def _ensure_directory_exists(self, path: str) -> None:
        self.container.mkdir(path)

    def _ensure_ownership(self, paths: List[str]) -> None:
        pass  # what hutch writes in the sandbox is already its user's

    # ---- commands ----

    def _execute_with_timeout(self, func: Any, *args: Any, timeout: Optional[float] = None, **kwargs: Any) -> Any:
        # hutch itself kills a command at its deadline: no watcher thread.
        kwargs.pop("force_kill_on_timeout", None)
        if timeout is None:
            return func(*args, **kwargs)
        self._deadline.at, self._deadline.limit = time.monotonic() + timeout, timeout
        try:
            return func(*args, **kwargs)
        finally:
            self._deadline.at = None

    def _time_left(self) -> Optional[float]:
        at = getattr(self._deadline, "at", None)
        if at is None:
            return None
        left = at - time.monotonic()
        if left <= 0:
            self._timed_out()
        return left

    def _timed_out(self) -> None:
        limit = getattr(self._deadline, "limit", None)
        raise SandboxTimeoutError(f"Operation timed out after {limit} seconds", timeout_duration=limit)

    def _handle_timeout(self) -> None:
        pass  # the command was killed at its deadline

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
        self._log(f"Executing command: {command}")
        left = self._time_left()
        try:
            if self.stream or on_stdout or on_stderr:
                code, out, err, timed_out = self._streamed(command, workdir, left, on_stdout, on_stderr)
            else:
                r = self.container.exec(command, cwd=workdir or self.config.workdir, timeout=left)
                code, timed_out = r.exit_code, r.timed_out
                out, err = self._process_non_stream_output((r.stdout, r.stderr))
        except hutch.Error as e:
            raise ContainerError(f"hutch: {command!r}: {e}") from e
        if timed_out:
            self._timed_out()
        if out:
            self._log(f"STDOUT: {out}")
        if err:
            self._log(f"STDERR: {err}", "error")
        return ConsoleOutput(exit_code=code or 0, stdout=out, stderr=err)

    def _streamed(
        self,
        command: str,
        workdir: Optional[str],
        timeout: Optional[float],
        on_stdout: Optional[StreamCallback],
        on_stderr: Optional[StreamCallback],
    ) -> Tuple[int, str, str, bool]:
        parts: Dict[str, List[str]] = {"out": [], "err": []}

        def pump(key: str, cb: Optional[StreamCallback]) -> Any:
            decoder = codecs.getincrementaldecoder("utf-8")(errors=self.config.encoding_errors)

            def chunk(data: bytes) -> None:
                text = decoder.decode(data, final=not data)
                if text:
                    parts[key].append(text)
                    if cb:
                        cb(text)

            return chunk

        proc = self.container.spawn(
            command, cwd=workdir or self.config.workdir, stdin=False, on_stdout=pump("out", on_stdout), on_stderr=pump("err", on_stderr)
        )
        with proc:
            try:
                code = proc.wait(timeout=timeout)
                timed_out = False
            except hutch.TimeoutError:
                proc.kill()
                code, timed_out = 124, True
        return code, "".join(parts["out"]), "".join(parts["err"]), timed_out

    def _process_non_stream_output(self, output: Any) -> Tuple[str, str]:
        out, err = output
        errors = self.config.encoding_errors
        return (out or b"").decode("utf-8", errors), (err or b"").decode("utf-8", errors)

    def _process_stream_output(self, output: Any, on_stdout: Any = None, on_stderr: Any = None) -> Tuple[str, str]:
        stdout, stderr = [], []
        for out, err in output:
            for data, sink, cb in ((out, stdout, on_stdout), (err, stderr, on_stderr)):
                if data:
                    text = data.decode("utf-8", self.config.encoding_errors) if isinstance(data, bytes) else str(data)
                    sink.append(text)
                    if cb:
                        cb(text)
        return "".join(stdout), "".join(stderr)

    # ---- files: hutch reads and writes them itself, inside the sandbox's root ----

    def _put_code(self, code: str, path: str) -> None:
        self.container.write_file(path, code)
        self._code_files.append(path)

    def run(self, code: str, libraries: Optional[list] = None, timeout: Optional[float] = None, **kwargs: Any) -> Any:
        """As llm-sandbox's, but the code's file does not stay in the workdir."""
        try:
            return super().run(code, libraries, timeout, **kwargs)
        finally:
            paths, self._code_files = self._code_files, []
            for path in paths:
                try:
                    if self.container:
                        self.container.remove(path)
                except hutch.Error:
                    pass

    def copy_to_runtime(self, src: str, dest: str) -> None:
        if not self.container:
            raise NotOpenSessionError
        dest = self._validate_container_path(dest)
        source = Path(src)
        if not (source.is_file() or source.is_dir()):
            raise FileNotFoundError(f"Source path {src} does not exist or is not accessible")
        self._log(f"Copying {src} to {dest}")
        parent = str(PurePosixPath(dest).parent)
        if parent:
            self.container.mkdir(parent)
        self.container.upload(str(source), dest)

    def copy_from_runtime(self, src: str, dest: str) -> None:
        """A file to dest; a directory to dest/NAME, as llm-sandbox unpacks it."""
        if not self.container:
            raise NotOpenSessionError
        self._log(f"Copying {src} to {dest}")
        kind = self.container.file_kind(src)
        if kind == "none":
            raise FileNotFoundError(f"File {src} not found in container")
        target = Path(dest)
        if kind == "dir":
            target = target / PurePosixPath(src).name
        target.parent.mkdir(parents=True, exist_ok=True)
        self.container.download(src, str(target))

    def get_archive(self, path: str) -> Tuple[bytes, dict]:
        if not self.container:
            raise NotOpenSessionError
        return tar_of(self.container, path)

    @property
    def sandbox(self) -> hutch.Sandbox:
        """The hutch.Sandbox underneath (open sessions only)."""
        if not self.container:
            raise NotOpenSessionError
        return self.container
