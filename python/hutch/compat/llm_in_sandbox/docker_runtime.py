# SPDX-License-Identifier: Apache-2.0
"""DockerRuntime on a hutch sandbox: LLM-in-Sandbox 0.2.0's constructor and
methods, and the same return values for the same commands.

Each command runs as there: a fresh `bash -c "timeout N bash -c CMD"` in the
working directory, with LLM-in-Sandbox's environment; run() gets stdout and
stderr as one stream, demux_run() apart; exit status 124 reads as the
timeout's text, any other non-zero one as "Error: Exit code N", an error of
the runtime as "Error: <repr>" with "-1".  What differs is said where it is
done: docker_kwargs are mapped to hutch's limits or refused, never ignored;
the network is hutch's (none unless hutch={"net": "proxy", ...} asks); pip
is not pointed at a mirror; each stream keeps at most 64 MiB."""

import datetime
import hashlib
import itertools
import logging
import os
import re
import resource
import shlex
import threading
from typing import Any, Dict, Optional, Tuple

import hutch

from . import CMD_TIMEOUT, DOCKER_PATH

_ENV = {
    "PATH": DOCKER_PATH,
    "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    "PIP_ROOT_USER_ACTION": "ignore",
    "PIP_NO_WARN_SCRIPT_LOCATION": "1",
}
_ANSI = re.compile(r"\x1b\[[0-9;]*m|\r")
# The sandbox's own limit on a command: LLM-in-Sandbox's `timeout` ends it
# first; this only ends what `timeout` does not (a child holding the output
# open, a `timeout` the image lacks).
_GRACE = 10.0
_GIT_CONFIG = "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n\tlogallrefupdates = true\n"
_names = itertools.count()
_image_lock = threading.Lock()
_images: Dict[str, str] = {}


def get_logger(name: str) -> logging.Logger:
    logger = logging.getLogger(name)
    if not logger.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s - %(name)s - %(levelname)s - %(message)s"))
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    return logger


_nofile_raised = False


def _raise_nofile() -> None:
    """The soft limit on open files up to the hard one, once: a runtime holds
    about 7 descriptors (its sandbox's state directory, audit log, pidfd,
    namespaces), so the usual soft limit of 1024 would stop a trainer near
    140 runtimes, a validation step of 512 needs some 3600."""
    global _nofile_raised
    with _image_lock:
        if _nofile_raised:
            return
        _nofile_raised = True
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY or soft < hard:
            try:
                resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            except (ValueError, OSError):
                pass


def store_name(ref: str) -> str:
    """The store name `hutch run --docker_image REF` gives an image: each
    character other than a letter, digit, ".", "_", "-" or ":" made "_"."""
    return re.sub(r"[^A-Za-z0-9._:-]", "_", ref)


def resolve_image(ref: str, store: Optional[str] = None) -> str:
    """The store's image for LLM-in-Sandbox's image name ref, pulled from
    docker://ref the first time, as `hutch run --docker_image` does."""
    name = store_name(ref)
    key = f"{store}\0{name}"
    with _image_lock:
        if key in _images:
            return _images[key]
        try:
            hutch.image(name, store)
        except hutch.NotFoundError:
            hutch.pull(f"docker://{ref}", name=name, store=store)
        _images[key] = name
        return name


def _cpus(v: Any) -> float:
    return float(v) / 1e9


# docker run keywords LLM-in-Sandbox passes through, as hutch.Sandbox arguments.
_KWARGS = {
    "mem_limit": ("memory", lambda v: v if isinstance(v, int) else str(v).upper()),
    "pids_limit": ("pids", int),
    "nano_cpus": ("cpus", _cpus),
    "hostname": ("hostname", str),
}


def _sandbox_args(docker_kwargs: Dict[str, Any]) -> Dict[str, Any]:
    args: Dict[str, Any] = {}
    for k, v in docker_kwargs.items():
        if k == "environment":
            continue
        if k == "hutch":  # hutch.Sandbox's own arguments (net, allow, no_cgroups, binds, store, ...)
            args.update(v)
        elif k in _KWARGS:
            arg, conv = _KWARGS[k]
            args[arg] = conv(v)
        elif k == "network_disabled" and v or k == "network_mode" and v == "none":
            pass  # a sandbox has no network unless asked
        else:
            raise TypeError(
                f"DockerRuntime: docker keyword {k}={v!r} has no hutch equivalent here "
                f"(mapped: environment, {', '.join(sorted(_KWARGS))}, network_disabled, network_mode='none'; "
                "hutch={...} passes hutch.Sandbox arguments)"
            )
    return args


class DockerRuntime:
    """A hutch sandbox standing in for LLM-in-Sandbox's container.

    docker_image is LLM-in-Sandbox's image name, mapped to hutch's store as
    `hutch run --docker_image` maps it (an image of the store by that name,
    else pulled from docker://NAME).  Thread-safe: one runtime may be used
    from several threads, and any number may be alive at once; close(), the
    object's end and the program's end (the hutch package's reaper, SIGKILL
    included) remove its sandbox."""

    def __init__(
        self,
        docker_image: str,
        repo_path: str = "/testbed",
        command: str = "sleep infinity",
        logger=None,
        **docker_kwargs,
    ):
        self.docker_image = docker_image
        self.repo_path = repo_path
        self.command = command  # a sandbox needs no keep-alive command
        self.docker_kwargs = docker_kwargs
        if logger is None:
            self.logger = get_logger("DockerRuntime")
        elif logger is False:
            self.logger = logging.getLogger("DockerRuntime.quiet")
            self.logger.setLevel(logging.WARNING)
        else:
            self.logger = logger
        self.client = None
        self.container = None
        self.container_name = self._get_container_name(docker_image)
        self.start_container(docker_image, command, self.container_name, **docker_kwargs)
        try:
            self.setup_env()
        except BaseException:
            self.close()  # no half-made runtime is left for the garbage collector
            raise
        self.logger.info("hutch sandbox initialized")
        self.logger.info(f"Docker image: {self.docker_image}")
        self.logger.info(f"Container ID: {self.container.id}")

    @staticmethod
    def _get_container_name(image_name: str) -> str:
        # LLM-in-Sandbox's form; the counter keeps two made in the same microsecond apart.
        unique = f"{datetime.datetime.now()}{os.getpid()}.{next(_names)}"
        digest = hashlib.sha256(unique.encode()).hexdigest()[:10]
        return f"{image_name.replace('/', '-').replace(':', '-')}-{digest}"

    def start_container(self, docker_image: str, command: str, container_name: str, **docker_kwargs) -> None:
        args = _sandbox_args(docker_kwargs)
        _raise_nofile()
        image = resolve_image(docker_image, args.get("store"))
        env = dict(_ENV, **docker_kwargs.get("environment", {}))
        env.update(args.pop("env", None) or {})
        labels = dict(args.pop("labels", None) or {}, **{"llm-in-sandbox": container_name})
        self.container = hutch.Sandbox(image, env=env, labels=labels, **args)
        self.logger.info(f"Started sandbox {self.container.id} for {container_name}")

    def setup_env(self) -> None:
        """The working, input and output directories and an empty git
        repository in the first, as LLM-in-Sandbox's setup makes them (its
        pip mirror is left out).  The repository is the one `git init`
        makes, less its sample hooks and description, written through the
        sandbox's root rather than by starting git: a process costs more
        than the rest of the sandbox's start.  Its branch is master, git
        2.39's default where init.defaultBranch is not set."""
        sb = self.container
        for d in (self.repo_path, f"{self.repo_path}/input", f"{self.repo_path}/output"):
            sb.mkdir(d)
        git = f"{self.repo_path}/.git"
        if sb.exists(git):
            return  # git init leaves a repository as it is
        for d in ("objects/info", "objects/pack", "refs/heads", "refs/tags", "info", "branches"):
            sb.mkdir(f"{git}/{d}")
        sb.write_file(f"{git}/HEAD", "ref: refs/heads/master\n")
        sb.write_file(f"{git}/config", _GIT_CONFIG)
        sb.write_file(f"{git}/info/exclude", "")

    def reset(self) -> None:
        """The sandbox as its image made it again (hutch.Sandbox.reset: every
        process ends, its files are the image's), with the directories remade:
        a new episode without a new sandbox."""
        self.container.reset()
        self.setup_env()

    def _exec(self, script: str, timeout, workdir: Optional[str]):
        try:
            limit = float(timeout) + _GRACE
        except (TypeError, ValueError):
            limit = CMD_TIMEOUT + _GRACE
        return self.container.exec(
            ["bash", "-c", script], timeout=limit, cwd=self.repo_path if workdir is None else workdir
        )

    @staticmethod
    def _text(data: bytes, cut: bool) -> str:
        text = data.decode("utf-8", errors="replace")
        return text + "\n[hutch: output cut at 64 MiB]" if cut else text

    def run(self, code: str, timeout: int = CMD_TIMEOUT, workdir: Optional[str] = None) -> Tuple[str, str]:
        """(output, exit code or error): stdout and stderr as one stream."""
        try:
            r = self._exec(f"exec 2>&1; timeout {timeout} bash -c {shlex.quote(code)}", timeout, workdir)
            output = self._text(r.stdout, r.stdout_truncated)
            if r.exit_code == 124 or r.timed_out:
                return f"The command took too long to execute (>{timeout}s)", "-1"
            output = _ANSI.sub("", output)
            if r.exit_code != 0:
                return output, f"Error: Exit code {r.exit_code}"
            return output, "0"
        except Exception as e:
            return f"Error: {repr(e)}", "-1"

    def demux_run(self, code: str, timeout: int = CMD_TIMEOUT, workdir: Optional[str] = None) -> Tuple[str, str, str]:
        """(stdout, stderr, exit code or error)."""
        try:
            r = self._exec(f"timeout {timeout} bash -c {shlex.quote(code)}", timeout, workdir)
            stdout = self._text(r.stdout, r.stdout_truncated)
            stderr = self._text(r.stderr, r.stderr_truncated)
            if r.exit_code == 124 or r.timed_out:
                return f"The command took too long to execute (>{timeout}s)", "", "-1"
            stdout, stderr = _ANSI.sub("", stdout), _ANSI.sub("", stderr)
            if r.exit_code != 0:
                return stdout, stderr, f"Error: Exit code {r.exit_code}"
            return stdout, stderr, "0"
        except Exception as e:
            msg = f"Error: {repr(e)}"
            return msg, msg, "-1"

    def _abs(self, path: str) -> str:
        return path if path.startswith("/") else os.path.join(self.repo_path, path)

    def copy_to_container(self, src_path: str, dest_path: str) -> None:
        """A host file (or directory) to dest_path.  Regular files and
        directories only: hutch copies no link."""
        try:
            dest = self._abs(dest_path)
            self.container.mkdir(os.path.dirname(dest) or "/")
            self.container.upload(src_path, dest)
            self.logger.info(f"Copied {src_path} to {dest_path}")
        except Exception as e:
            self.logger.error(f"Error copying file to container: {repr(e)}")
            raise

    def copy_dir_to_container(self, src_dir: str, dest_dir: str) -> None:
        """A host directory's contents into dest_dir, made first."""
        try:
            dest = self._abs(dest_dir)
            self.container.mkdir(dest)
            self.container.upload(src_dir, dest)
            self.logger.info(f"Copied directory {src_dir} to {dest_dir}")
        except Exception as e:
            self.logger.error(f"Error copying directory to container: {repr(e)}")
            raise

    def copy_from_container(self, container_path: str, local_path: str) -> None:
        """A sandbox directory's contents into host directory local_path
        (made first); a file to local_path/NAME (LLM-in-Sandbox copies no
        file that way).  As hutch.Sandbox.download: no link is followed."""
        try:
            os.makedirs(local_path, exist_ok=True)
            src = self._abs(container_path)
            if self.container.file_kind(src) == "dir":
                self.container.download(src, local_path)
            else:
                self.container.download(src, os.path.join(local_path, os.path.basename(src.rstrip("/"))))
            self.logger.info(f"Copied {container_path} from container to {local_path}")
        except Exception as e:
            self.logger.error(f"Error copying from container: {repr(e)}")
            raise

    def get_task_instruction(self, problem_statement: str) -> str:
        return problem_statement

    def close(self) -> None:
        """Removes the sandbox; a second call does nothing."""
        sb, self.container = self.container, None
        if sb is None:
            return
        try:
            sb.close()
            self.logger.info(f"Sandbox {self.container_name} removed")
        except Exception as e:
            self.logger.warning(f"Error removing sandbox: {e}")

    def __del__(self):
        sb = getattr(self, "container", None)
        if sb is not None:
            self.container = None
            try:
                sb.close()
            except Exception:
                pass
