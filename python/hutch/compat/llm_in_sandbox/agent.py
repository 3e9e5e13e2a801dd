# SPDX-License-Identifier: Apache-2.0
"""LLM-in-Sandbox's Agent: run(runtime, problem_statement, ...) drives a
model through a DockerRuntime as LLM-in-Sandbox 0.2.0's does (the prompts
formatted, "Steps Remaining" appended to the last message, a reply
without a tool call answered with its continue message, the trajectory
with its steps and metadata); _execute_action(action, runtime) answers a
tool call with the text it gives (LLM-in-Sandbox-RL builds an Agent with
Agent.__new__ and calls only that); parse_response reads a tool call from a
chat completion as it does.

The model is reached over the OpenAI wire format with the standard library
(_llm.py) instead of litellm, and nothing is drawn on the console: what
LLM-in-Sandbox prints there goes to the logger.  Tokens are counted as
litellm's fallback counts them (four characters a token)."""

import copy
import json
import logging
import os
import re
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from . import _llm
from ._editor import run_editor
from .action import Action
from .docker_runtime import get_logger
from .observation import Observation
from .tools import execute_bash_tool, str_replace_editor_tool, submit_tool
from .trajectory import Trajectory, TrajectoryStep

# LLM-in-Sandbox's HTTP timeout for one completion (queue and generation).
COMPLETION_TIMEOUT = 1200
# The completion budget a context-length retry keeps at least.
MIN_COMPLETION_TOKENS = 8192


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
        # As LLM-in-Sandbox: a local vLLM unless told otherwise.
        self.llm_base_url = args.llm_base_url
        if self.llm_base_url is None and ("openai/" in self.llm_name or "hosted_vllm" in self.llm_name):
            self.llm_base_url = os.environ.get("LLM_BASE_URL", "http://localhost:8000/v1")
        self.trajectory_steps = []
        self.history = []

    def reset(self) -> None:
        self.trajectory_steps = []
        self.history = []

    def get_console_output(self) -> str:
        return ""

    def _count_tokens(self, messages: List[Dict[str, Any]]) -> int:
        return sum(len(str(m.get("content", ""))) for m in messages) // 4

    def model_query(self, messages: List[Dict[str, Any]], temperature: float = 1.0,
                    max_tokens_per_call: int = 65536, max_token_limit: int = 65536) -> Tuple[Any, float]:
        """(response, seconds): one completion, retried as LLM-in-Sandbox
        retries: up to max_retries failures; a context-length error lowers
        max_tokens to what the context leaves (never below 8192) and asks
        again without counting a failure; a rate limit waits a minute."""
        total = self._count_tokens(messages)
        if total > max_token_limit:
            raise ValueError(f"Total tokens: {total} > {max_token_limit}")
        params: Dict[str, Any] = {}
        if "o3" not in self.llm_name and "o4" not in self.llm_name:
            params["temperature"] = temperature
        start = time.time()
        failures = 0
        while True:
            try:
                response = _llm.completion(self.llm_name, copy.deepcopy(messages),
                                           [str_replace_editor_tool, execute_bash_tool, submit_tool],
                                           self.llm_base_url, COMPLETION_TIMEOUT, max_tokens_per_call,
                                           self.extra_body, **params)
                self._save_exchange(messages, response, params)
                return response, time.time() - start
            except _llm.CompletionError as e:
                self.logger.error(f"LLM query failed @ {failures}: {e}")
                lower = _lower_budget(str(e), max_tokens_per_call)
                if lower == -1:
                    raise
                if lower:
                    max_tokens_per_call = lower
                    continue
                failures += 1
                if e.status == 429 or "RateLimitError" in str(e):
                    time.sleep(60)
                if failures >= self.max_retries:
                    raise

    def _save_exchange(self, messages: List[Dict[str, Any]], response, params: Dict[str, Any]) -> None:
        """request_NNN.json and response_NNN.json in output_dir, as
        LLM-in-Sandbox's save_litellm_response writes them; a failure to
        write is a warning, never the run's end."""
        if not (self.args.save_litellm_response and self.args.output_dir):
            return
        self.llm_call_count = getattr(self, "llm_call_count", 0) + 1
        n = self.llm_call_count
        extra = {"extra_body": self.extra_body} if self.extra_body else {}
        request = {"call_id": n, "model": self.llm_name, "api_base": self.llm_base_url, "messages": messages,
                   "extra_params": extra, "kwargs": params}
        try:
            os.makedirs(self.args.output_dir, exist_ok=True)
            for name, data in ((f"request_{n:03d}.json", request),
                               (f"response_{n:03d}.json", {"call_id": n, "response": response.model_dump()})):
                with open(os.path.join(self.args.output_dir, name), "w", encoding="utf-8") as f:
                    json.dump(data, f, indent=2, ensure_ascii=False)
        except OSError as e:
            self.logger.warning(f"Failed to save litellm response: {e}")

    def run(self, runtime, problem_statement: str, max_steps: int = 30, max_token_limit: int = 65536,
            max_tokens_per_call: int = 65536, temperature: float = 1.0) -> Trajectory:
        """The model's steps on problem_statement in runtime, until it submits
        or max_steps are taken; a failed completion ends the run early, its
        steps so far kept."""
        self.reset()
        system_prompt = self.system_prompt_template.format(command_docs="", demo="")
        user_prompt = (self.instance_prompt_template.format(problem_statement=problem_statement)
                       if self.instance_prompt_template else problem_statement)
        self.history = [{"role": "system", "content": system_prompt}, {"role": "user", "content": user_prompt}]
        step = 0
        while step < max_steps:
            # A reply with neither content nor an answered call (a tool call
            # without an id) is last: LLM-in-Sandbox fails on it (KeyError);
            # its count goes after what it has.
            last = self.history[-1]
            last["content"] = (last.get("content") or "") + f"\nSteps Remaining: {max_steps - step}"
            try:
                response, seconds = self.model_query(list(self.history), temperature, max_tokens_per_call,
                                                     max_token_limit)
            except Exception as e:
                self.logger.error(f"LLM query failed: {e}")
                break
            message = response.choices[0].message
            reasoning = _reasoning(message)
            thought, action, call_id = self.parse_response(response)
            observation = self._execute_action(action, runtime)
            self.logger.info(f"step {step + 1}: {action.function_name or '(no tool call)'}")
            self.trajectory_steps.append(TrajectoryStep(thought=thought, reasoning_content=reasoning,
                                                        action=action.to_dict(), observation=observation,
                                                        metadata={"step": step + 1, "exec_time": seconds}))
            self.history.append(message.model_dump(exclude_none=True))
            if action.function_name and call_id:
                self.history.append({"role": "tool", "tool_call_id": call_id, "content": observation})
            elif not action.function_name:
                self.history.append({"role": "user", "content": observation})
            step += 1
            if action.function_name == "submit":
                break
        return Trajectory(problem_statement=problem_statement, steps=self.trajectory_steps,
                          metadata={"total_steps": step})

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


def _reasoning(message) -> str:
    """The reply's reasoning, under the names servers give it."""
    for key in ("reasoning_content", "reasoning", "thinking"):
        v = getattr(message, key, None)
        if isinstance(v, str) and v:
            return v
    return ""


def _lower_budget(error: str, max_tokens: int) -> int:
    """For a context-length error: the max_tokens to ask again with, or -1
    when none fits (the error stands); 0 for any other error."""
    low = error.lower()
    if "token" not in low or not any(w in low for w in ("exceed", "limit", "maximum")):
        return 0
    context = re.search(r"(?:maximum|context)[^\d]*(\d+)\s*tokens", error, re.IGNORECASE)
    used = re.search(r"(\d+)\s*tokens?\s*(?:from\s*(?:the\s*)?(?:input|messages?)|in\s*(?:the\s*)?"
                     r"(?:input|prompt|messages?))", error, re.IGNORECASE)
    if context and used:
        room = int(context.group(1)) - int(used.group(1)) - 100
        if room >= MIN_COMPLETION_TOKENS and min(room, max_tokens) < max_tokens:
            return min(room, max_tokens)
        return -1
    if max_tokens > MIN_COMPLETION_TOKENS:
        return max(max_tokens // 2, MIN_COMPLETION_TOKENS)
    return -1
