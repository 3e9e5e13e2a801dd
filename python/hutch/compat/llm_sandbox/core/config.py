# SPDX-License-Identifier: Apache-2.0
"""SessionConfig: a session's settings, with llm-sandbox's defaults."""

from __future__ import annotations

from typing import Any, Dict, Optional

from .._model import Field, Model
from ..const import SupportedLanguage
from ..security import SecurityPolicy

_ENCODING_ERRORS = ("strict", "replace", "ignore", "surrogateescape", "backslashreplace", "xmlcharrefreplace")


def _encoding_errors(v: Any) -> str:
    if v not in _ENCODING_ERRORS:
        raise ValueError(f"encoding_errors must be one of {', '.join(_ENCODING_ERRORS)}, not {v!r}")
    return v


class SessionConfig(Model):
    lang: SupportedLanguage = Field(SupportedLanguage.PYTHON, convert=SupportedLanguage)
    image: Optional[str] = Field(None)
    dockerfile: Optional[str] = Field(None)
    container_id: Optional[str] = Field(None)
    verbose: bool = Field(False)
    workdir: str = Field("/sandbox")
    default_timeout: Optional[float] = Field(60.0)
    execution_timeout: Optional[float] = Field(None)
    session_timeout: Optional[float] = Field(None)
    security_policy: Optional[SecurityPolicy] = Field(None, convert=SecurityPolicy.model_validate)
    runtime_configs: Dict[str, Any] = Field(default_factory=dict)
    skip_environment_setup: bool = Field(False)
    encoding_errors: str = Field("strict", convert=_encoding_errors)

    def _check(self) -> None:
        if self.image is not None and self.dockerfile is not None:
            raise ValueError("Only one of 'image' or 'dockerfile' can be provided, not both")
        if self.container_id is not None and self.dockerfile is not None:
            raise ValueError("Cannot use 'dockerfile' with existing 'container_id'")

    def get_execution_timeout(self) -> Optional[float]:
        return self.execution_timeout or self.default_timeout

    def is_using_existing_container(self) -> bool:
        return self.container_id is not None
