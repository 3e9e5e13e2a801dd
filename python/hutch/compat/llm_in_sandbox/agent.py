# SPDX-License-Identifier: Apache-2.0
"""LLM-in-Sandbox's Agent, as far as a trainer uses it: _execute_action(action,
runtime) answers a tool call with the text LLM-in-Sandbox 0.2.0 gives
(LLM-in-Sandbox-RL builds an Agent with Agent.__new__ and calls only that),
and parse_response reads a tool call from a chat completion as it does.
The model loop itself is `hutch run --lis` (or LLM-in-Sandbox's own Agent,
which drives this package's DockerRuntime unchanged)."""

import json
import logging
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from ._editor import run_editor
from .action import Action
from .docker_runtime import get_logger
from .observation import Observation


@dataclass
class AgentArgs:
    system_prompt: str
    instance_prompt: str
    llm_name: str
    llm_base_url: Optional[str] = None
    max_retries: int = 5
    save_litellm_response: bool = False
    output_dir: Optional[str] = None
    extra_body: Optional[Dict[str, Any]] = None
    quiet: bool = False


class Agent:
    def __init__(self, args: AgentArgs, logger=None):
        self.args = args
        self.llm_name = args.llm_name
        self.quiet = args.quiet
        self.logger = logger if logger is not None else get_logger("Agent")
        if self.quiet:
            self.logger.setLevel(logging.WARNING)
        self.system_prompt_template = args.system_prompt
        self.instance_prompt_template = args.instance_prompt
        self.max_retries = args.max_retries
        self.extra_body = args.extra_body
        self.trajectory_steps = []
        self.history = []

    def reset(self) -> None:
        self.trajectory_steps = []
        self.history = []

    def get_console_output(self) -> str:
        return ""

    def run(self, runtime, problem_statement: str, **kwargs):
        raise NotImplementedError(
            "hutch.compat.llm_in_sandbox has no model loop: run `hutch run --lis --query ...`, "
            "or LLM-in-Sandbox's own Agent with this package's DockerRuntime"
        )

    @staticmethod
    def parse_response(response) -> Tuple[str, Action, Optional[str]]:
        """(thought, action, tool_call_id) of a chat completion: its first
        tool call; Action("", {}) when it has none or its arguments are not JSON."""
        thought = response.choices[0].message.content or ""
        try:
            call = response.choices[0].message.tool_calls[0]
            action = Action(function_name=call.function.name, parameters=json.loads(call.function.arguments))
            return thought, action, call.id
        except Exception:
            return thought, Action(function_name="", parameters={}), None

    def _execute_action(self, action: Action, runtime) -> str:
        return execute_action(action, runtime)

    def _execute_str_replace_editor(self, action: Action, runtime) -> str:
        return run_editor(runtime, action.parameters)


def execute_action(action: Action, runtime) -> str:
    """The observation LLM-in-Sandbox 0.2.0 gives the model for action, run in runtime."""
    name = action.function_name
    params = action.parameters
    if not name or not isinstance(params, dict):
        return str(Observation("", 0, action))
    if name == "execute_bash":
        command = params.get("command", "")
        if not command:
            return "Error: No command provided."
        out, err, code = runtime.demux_run(command)
        return str(Observation(out + err, code, action, stdout=out, stderr=err))
    if name == "str_replace_editor":
        return str(Observation(run_editor(runtime, params), 0, action))
    if name == "submit":
        return str(Observation("", 0, action))
    return f"Unknown action: {name}"
