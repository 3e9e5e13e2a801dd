# SPDX-License-Identifier: Apache-2.0
"""Chat completions against an OpenAI-compatible endpoint, for Agent.run:
what LLM-in-Sandbox asks of litellm.completion, with the standard library.

A model is named as litellm names it: "openai/NAME" and "hosted_vllm/NAME"
are served by the endpoint at api_base (NAME sent as the model); another
provider prefix is refused, since only the OpenAI wire format is spoken.
The key is litellm's for those providers: $OPENAI_API_KEY, or
$HOSTED_VLLM_API_KEY for hosted_vllm/."""

import http.client
import json
import os
import urllib.error
import urllib.request
from typing import Any, Dict, List, Optional

# What a reply body may hold: a chat completion is small; this bounds what
# a broken or hostile endpoint can make the trainer's process hold.
MAX_REPLY_BYTES = 64 << 20


class CompletionError(Exception):
    """A failed request: the endpoint's status and error text in str(), so
    that the caller can read a context-length error from it as from litellm's."""

    def __init__(self, message: str, status: Optional[int] = None):
        super().__init__(message)
        self.status = status


class Reply:
    """A JSON object with attribute access (response.choices[0].message...),
    as litellm's ModelResponse is used; model_dump() gives it back as a dict."""

    def __init__(self, data: Dict[str, Any]):
        self._data = data

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return _wrap(self._data.get(name))

    def model_dump(self, exclude_none: bool = False) -> Dict[str, Any]:
        return _strip_none(self._data) if exclude_none else json.loads(json.dumps(self._data))


def _wrap(v: Any) -> Any:
    if isinstance(v, dict):
        return Reply(v)
    if isinstance(v, list):
        return [_wrap(x) for x in v]
    return v


def _strip_none(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _strip_none(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_strip_none(x) for x in v]
    return v


def endpoint_model(name: str) -> str:
    """The model name the endpoint is sent for litellm's name."""
    provider, sep, model = name.partition("/")
    if not sep:
        return name
    if provider in ("openai", "hosted_vllm"):
        return model
    raise ValueError(f"model {name!r}: only OpenAI-compatible endpoints are spoken here "
                     f"(name it openai/MODEL or hosted_vllm/MODEL, with llm_base_url)")


def api_key(name: str) -> Optional[str]:
    if name.startswith("hosted_vllm/"):
        return os.environ.get("HOSTED_VLLM_API_KEY") or os.environ.get("OPENAI_API_KEY")
    return os.environ.get("OPENAI_API_KEY")


def completion(model: str, messages: List[Dict[str, Any]], tools: List[Dict[str, Any]], api_base: Optional[str],
               timeout: float, max_tokens: int, extra_body: Optional[Dict[str, Any]] = None,
               **params: Any) -> Reply:
    """One chat completion; CompletionError when the endpoint fails or
    answers with something that is not a completion."""
    base = (api_base or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1").rstrip("/")
    body: Dict[str, Any] = {"model": endpoint_model(model), "messages": messages, "tools": tools,
                            "max_tokens": max_tokens}
    body.update(params)
    body.update(extra_body or {})
    req = urllib.request.Request(f"{base}/chat/completions", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    key = api_key(model)
    if key:
        # Not carried to wherever a redirect points.
        req.add_unredirected_header("Authorization", f"Bearer {key}")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read(MAX_REPLY_BYTES + 1)
    except urllib.error.HTTPError as e:
        text = e.read(65536).decode("utf-8", "replace")
        raise CompletionError(f"{model}: HTTP {e.code}: {_error_text(text)}", e.code) from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
        raise CompletionError(f"{model}: {base}: {getattr(e, 'reason', e)!s}") from None
    if len(raw) > MAX_REPLY_BYTES:
        raise CompletionError(f"{model}: the reply is over {MAX_REPLY_BYTES} bytes")
    try:
        data = json.loads(raw)
    except ValueError:
        raise CompletionError(f"{model}: the reply is not JSON: {raw[:200]!r}") from None
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict) \
            or not isinstance(choices[0].get("message"), dict):
        raise CompletionError(f"{model}: the reply holds no message: {raw[:200]!r}")
    return Reply(data)


def _error_text(text: str) -> str:
    """The endpoint's error message (OpenAI's {"error": {"message"}} or
    vLLM's {"message"}), else the body as it came."""
    try:
        data = json.loads(text)
    except ValueError:
        return text.strip()[:2000]
    err = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(err, dict) and isinstance(err.get("message"), str):
        return err["message"]
    return text.strip()[:2000]
