# SPDX-License-Identifier: Apache-2.0
"""One tool call: Action(function_name, parameters), as LLM-in-Sandbox has
it, plus Action.from_string for the text forms a trainer may hand over."""

import ast
import json
import re
from typing import Any, Dict, Optional

# R2E-Gym's text form, which LLM-in-Sandbox descends from:
# <function=NAME><parameter=KEY>VALUE</parameter>...</function>
_XML_FUNCTION = re.compile(r"<function\s*=\s*([^>\s]+)\s*>(.*?)(?:</function>|$)", re.S)
_XML_PARAMETER = re.compile(r"<parameter\s*=\s*([^>\s]+)\s*>(.*?)</parameter>", re.S)
_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.S)

# A string longer than this is not parsed as a dict literal (ast would
# build the whole tree of whatever the model wrote).
_LITERAL_MAX = 1 << 20


class Action:
    """function_name (e.g. "execute_bash") and parameters (a dict)."""

    def __init__(self, function_name: str, parameters: Dict[str, Any], function_id: Optional[str] = None):
        self.function_name = function_name
        self.parameters = parameters

    def to_dict(self) -> Dict[str, object]:
        return {"function": self.function_name, "parameters": self.parameters}

    def __str__(self) -> str:
        return str(self.to_dict())

    def __repr__(self) -> str:
        return f"Action({self.function_name!r}, {self.parameters!r})"

    @classmethod
    def from_string(cls, text: str) -> "Action":
        """The action a text describes: str(action) (a dict's repr) or its
        JSON, {"name": ..., "arguments": ...} (an OpenAI or Hermes tool
        call, arguments a dict or a JSON string, optionally inside
        <tool_call>...</tool_call>), or R2E-Gym's <function=NAME>
        <parameter=KEY>VALUE</parameter></function>.  Text that is none of
        these is Action("", {}), which the executor answers as
        LLM-in-Sandbox answers a reply without a tool call."""
        if isinstance(text, Action):
            return cls(text.function_name, text.parameters)
        if isinstance(text, dict):
            return _from_mapping(text) or cls("", {})
        if not isinstance(text, str):
            return cls("", {})
        m = _XML_FUNCTION.search(text)
        if m:
            params = {k: _strip_newline(v) for k, v in _XML_PARAMETER.findall(m.group(2))}
            return cls(m.group(1), params)
        m = _TOOL_CALL.search(text)
        body = m.group(1) if m else text.strip()
        return _from_mapping(_parse_mapping(body)) or cls("", {})


def _strip_newline(v: str) -> str:
    # The form puts each value on lines of its own.
    if v.startswith("\n"):
        v = v[1:]
    if v.endswith("\n"):
        v = v[:-1]
    return v


def _parse_mapping(body: str) -> Any:
    try:
        return json.loads(body)
    except ValueError:
        pass
    if len(body) > _LITERAL_MAX or not body.startswith("{"):
        return None
    try:
        return ast.literal_eval(body)  # builds values only, runs nothing
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None


def _from_mapping(d: Any) -> Optional[Action]:
    if not isinstance(d, dict):
        return None
    if "function" in d and isinstance(d["function"], dict):  # {"type": "function", "function": {...}}
        return _from_mapping(d["function"])
    name = d.get("function", d.get("name"))
    if not isinstance(name, str):
        return None
    params = d.get("parameters", d.get("arguments", {}))
    if isinstance(params, str):
        try:
            params = json.loads(params) if params.strip() else {}
        except ValueError:
            # As LLM-in-Sandbox's parse_response treats unparsable arguments.
            return Action("", {})
    return Action(name, params)
