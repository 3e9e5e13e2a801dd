# SPDX-License-Identifier: Apache-2.0
"""llm-sandbox's API on hutch: change

    from llm_sandbox import SandboxSession
to
    from hutch.compat.llm_sandbox import SandboxSession

(and ``llm_sandbox.x`` to ``hutch.compat.llm_sandbox.x`` for its
submodules) and sessions run in rootless hutch sandboxes instead of
Docker, Podman or Kubernetes containers: no daemon, no root.  Written from
llm-sandbox's public API, not its code.  What differs (the README's
llm-sandbox section lists it): every backend runs on hutch and says so
once in a log line; client objects are not used; runtime_configs keys are
honoured or refused with ValidationError, never ignored; Python runs on the
image's python3 (no virtualenv); the security policy's scan is advisory,
the sandbox is the boundary."""

from .const import DefaultImage, SandboxBackend, SupportedLanguage
from .core.config import SessionConfig
from .data import ConsoleOutput, ExecutionResult, FileType, PlotOutput, StreamCallback
from .exceptions import (
    ContainerError,
    NotOpenSessionError,
    ResourceError,
    SandboxError,
    SecurityError,
    ValidationError,
)
from .interactive import KernelType
from .security import SecurityIssueSeverity, SecurityPattern, SecurityPolicy
from .session import ArtifactSandboxSession, InteractiveSandboxSession, SandboxSession, create_session

__all__ = [
    "ArtifactSandboxSession",
    "ConsoleOutput",
    "ContainerError",
    "DefaultImage",
    "ExecutionResult",
    "FileType",
    "InteractiveSandboxSession",
    "KernelType",
    "NotOpenSessionError",
    "PlotOutput",
    "ResourceError",
    "SandboxBackend",
    "SandboxError",
    "SandboxSession",
    "SecurityError",
    "SecurityIssueSeverity",
    "SecurityPattern",
    "SecurityPolicy",
    "SessionConfig",
    "StreamCallback",
    "SupportedLanguage",
    "ValidationError",
    "create_session",
]
