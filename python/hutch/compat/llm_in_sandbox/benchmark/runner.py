# SPDX-License-Identifier: Apache-2.0
"""LLM-in-Sandbox's benchmark.runner, for trainers: load_reward_function
(its task folders' reward.py, scored in a sandbox of its own, as `hutch
benchmark` scores), load_task_config, load_prompt_function.  Running a
benchmark is `hutch benchmark` (hutch-benchmark(1)).

A task name is a task folder (a path holding reward.py), or the name of
one inside a folder of task folders: those of $HUTCH_LIS_TASKS (folders
separated by ":") first, then the installed LLM-in-Sandbox's
llm_in_sandbox/benchmark/ (found, not imported)."""

import importlib.util
import os
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, List, Optional

import hutch

from ..docker_runtime import resolve_image

# LLM-in-Sandbox's image, where rewards run unless told otherwise.
DEFAULT_IMAGE = "cdx123/llm-in-sandbox:v0.1"
# LLM-in-Sandbox-RL waits this long for a reward.
DEFAULT_TIMEOUT = 60.0
_DRIVER = (Path(__file__).parent / "_driver.py").read_text()
_RESULT_MAX = 1 << 16


@dataclass
class BenchmarkResult:
    problem_id: str
    score: float
    agent_answer: str
    ground_truth: str
    problem_statement: str = ""
    trajectory: List = field(default_factory=list)
    error: Optional[str] = None


class RewardError(RuntimeError):
    """compute_score raised, returned no finite number, or did not finish:
    the message says which (the task code's exception as its last line)."""


def _roots() -> List[Path]:
    roots = [Path(p) for p in os.environ.get("HUTCH_LIS_TASKS", "").split(":") if p]
    try:
        spec = importlib.util.find_spec("llm_in_sandbox")
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        roots += [Path(d) / "benchmark" for d in spec.submodule_search_locations]
    return roots


def task_dir(task_name: str, needs: str = "reward.py") -> Path:
    """The task folder task_name names (see the module's text)."""
    p = Path(task_name)
    if p.is_dir() and (p / needs).exists():
        return p.resolve()
    for root in _roots():
        if (root / task_name / needs).exists():
            return (root / task_name).resolve()
    where = ", ".join(str(r) for r in _roots()) or "no folder (set HUTCH_LIS_TASKS or install llm-in-sandbox)"
    raise FileNotFoundError(f"{needs} of task {task_name!r} not found in {where}")


class RewardFunction:
    """compute_score(agent_answer, ground_truth, **kwargs) -> float, run in a
    sandbox: the task folder read-only at /hutch-task, a read-only root, no
    network, a fresh python3 per call, the sandbox reset after each (so no
    answer sees what an earlier one left), at most timeout seconds.  The
    answer reaches compute_score as a string (marshal), never as code.
    Thread-safe (one call at a time).  Picklable: a process it is sent to
    makes its own sandbox."""

    def __init__(self, task: Path, image: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT,
                 memory=None, store: Optional[str] = None):
        self.task = Path(task)
        self.image = image or os.environ.get("HUTCH_LIS_REWARD_IMAGE") or DEFAULT_IMAGE
        self.timeout = timeout
        self.memory = memory
        self.store = store
        self._sb = None
        self._lock = threading.Lock()

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("_sb", "_lock")}

    def __setstate__(self, state):
        self.__dict__.update(state, _sb=None, _lock=threading.Lock())

    def _sandbox(self) -> "hutch.Sandbox":
        if self._sb is None:
            self._sb = hutch.Sandbox(
                resolve_image(self.image, self.store), read_only=True, memory=self.memory, store=self.store,
                binds=[(str(self.task), "/hutch-task", True)], workdir="/tmp", labels={"hutch-reward": self.task.name},
            )
        return self._sb

    def __call__(self, agent_answer: str, ground_truth: str, **kwargs) -> float:
        import marshal

        secret = secrets.token_hex(16)
        try:
            payload = marshal.dumps((secret, agent_answer, ground_truth, kwargs))
        except ValueError as e:
            raise RewardError(f"{self.task.name}: the arguments are not plain values: {e}") from None
        with self._lock:
            sb = self._sandbox()
            try:
                r = sb.exec(["python3", "-I", "-c", _DRIVER], stdin=payload, timeout=self.timeout,
                            max_output=_RESULT_MAX)
            finally:
                try:
                    sb.reset()
                except hutch.Error:
                    self.close()
        line = next((x for x in reversed(r.stdout.decode("utf-8", "replace").splitlines())
                     if x.startswith(secret + " ")), None)
        # A result written in time counts, though python3's own exit ran past it.
        if line is None and r.timed_out:
            raise RewardError(f"{self.task.name}: compute_score took more than {self.timeout}s")
        if line is None:
            err = r.stderr.decode("utf-8", "replace").strip().splitlines()
            raise RewardError(f"{self.task.name}: the scorer gave no result (exit {r.exit_code})"
                              + (f": {err[-1]}" if err else ""))
        kind, _, value = line[len(secret) + 1:].partition(" ")
        if kind != "ok":
            raise RewardError(f"{self.task.name}: {value}")
        return float(value)

    def close(self) -> None:
        sb, self._sb = self._sb, None
        if sb is not None:
            sb.close()


def load_reward_function(task_name: str, *, image: Optional[str] = None, timeout: float = DEFAULT_TIMEOUT,
                         memory=None, store: Optional[str] = None) -> Callable[..., float]:
    """The task's compute_score, run in a scoring sandbox of image (hutch's
    store name or LLM-in-Sandbox's image name; default
    $HUTCH_LIS_REWARD_IMAGE, else LLM-in-Sandbox's image)."""
    return RewardFunction(task_dir(task_name), image=image, timeout=timeout, memory=memory, store=store)


def load_task_config(task_name: str) -> dict:
    import yaml

    with open(task_dir(task_name, "config.yaml") / "config.yaml") as f:
        return yaml.safe_load(f)


def load_prompt_function(task_name: str) -> Callable:
    """vanilla_llm_prompt.py's create_prompt (task-set code, run here as
    LLM-in-Sandbox runs it), else the problem statement itself."""
    try:
        path = task_dir(task_name, "vanilla_llm_prompt.py") / "vanilla_llm_prompt.py"
    except FileNotFoundError:
        return lambda problem: problem["problem_statement"]
    spec = importlib.util.spec_from_file_location("vanilla_llm_prompt", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, "create_prompt", lambda problem: problem["problem_statement"])


def run_benchmark(*args, **kwargs):
    raise NotImplementedError("run a benchmark with `hutch benchmark TASK` (man hutch-benchmark)")
