# SPDX-License-Identifier: Apache-2.0
"""llm-sandbox's constants: backends, languages and default image names.

The backend names are accepted so that code written for llm-sandbox runs
unchanged, but every session runs in a hutch sandbox (the session says so
in one log line).  DefaultImage keeps llm-sandbox's image names, which
user code compares and passes around; hutch maps each to an image of its
own store when a session opens (see _images.py)."""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal


class StrEnum(str, Enum):
    """A str-valued enum that matches its values case-insensitively."""

    def __new__(cls, value: str) -> "StrEnum":
        if not isinstance(value, str):
            raise TypeError(f"StrEnum values must be strings, got {type(value).__name__}")
        member = str.__new__(cls, value)
        member._value_ = value
        return member

    def __str__(self) -> str:
        return str(self.value)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}.{self.name}: '{self.value}'>"

    @classmethod
    def _missing_(cls, value: Any) -> "StrEnum":
        if isinstance(value, str):
            folded = value.lower()
            for member in cls:
                if member.value.lower() == folded:
                    return member
        raise ValueError(f"{value!r} is not a valid {cls.__name__}")


class SandboxBackend(StrEnum):
    """The container technologies llm-sandbox drives; on hutch, names only."""

    DOCKER = "docker"
    KUBERNETES = "kubernetes"
    PODMAN = "podman"
    MICROMAMBA = "micromamba"


class SupportedLanguage(StrEnum):
    PYTHON = "python"
    JAVA = "java"
    JAVASCRIPT = "javascript"
    CPP = "cpp"
    GO = "go"
    RUBY = "ruby"
    R = "r"


class DefaultImage:
    """llm-sandbox's per-language image names (hutch maps them: _images.py)."""

    PYTHON = "ghcr.io/vndee/sandbox-python-311-bullseye"
    JAVA = "ghcr.io/vndee/sandbox-java-11-bullseye"
    JAVASCRIPT = "ghcr.io/vndee/sandbox-node-22-bullseye"
    CPP = "ghcr.io/vndee/sandbox-cpp-11-bullseye"
    GO = "ghcr.io/vndee/sandbox-go-123-bullseye"
    RUBY = "ghcr.io/vndee/sandbox-ruby-302-bullseye"
    R = "ghcr.io/vndee/sandbox-r-451-bullseye"


#: How output bytes that are not UTF-8 are decoded (bytes.decode's errors=).
EncodingErrorsType = Literal["strict", "replace", "ignore", "surrogateescape", "backslashreplace", "xmlcharrefreplace"]
