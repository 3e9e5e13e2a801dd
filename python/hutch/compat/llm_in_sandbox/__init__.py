# SPDX-License-Identifier: Apache-2.0
"""LLM-in-Sandbox 0.2.0's Python runtime on hutch: change

    from llm_in_sandbox import DockerRuntime, Action
to
    from hutch.compat.llm_in_sandbox import DockerRuntime, Action

(and ``llm_in_sandbox.x`` to ``hutch.compat.llm_in_sandbox.x``: .docker_runtime,
.action, .agent, .observation, .tools, .trajectory, .benchmark.runner) and each
runtime is a rootless hutch sandbox instead of a Docker container.  Written
from LLM-in-Sandbox's source as a contract, not from its code: run and
demux_run return its strings (output, exit-code string, its timeout and error
texts), Agent._execute_action its tool observations, and
benchmark.runner.load_reward_function scores in a sandbox of its own.
LLM-in-Sandbox need not be installed; where it is, its own Agent drives this
DockerRuntime unchanged."""

# LLM-in-Sandbox 0.2.0's package says 0.1.0; so does this one, for code that checks.
__version__ = "0.1.0"

# Seconds a run() or demux_run() may take by default.
CMD_TIMEOUT = 120

# The PATH every command of a runtime gets, as in LLM-in-Sandbox's image.
DOCKER_PATH = "/root/.local/bin:/root/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

from .action import Action  # noqa: E402
from .agent import Agent, AgentArgs, get_logger  # noqa: E402
from .docker_runtime import DockerRuntime  # noqa: E402
from .trajectory import Trajectory, TrajectoryStep  # noqa: E402

__all__ = [
    "Agent",
    "AgentArgs",
    "DockerRuntime",
    "Trajectory",
    "TrajectoryStep",
    "Action",
    "get_logger",
    "__version__",
]
