# SPDX-License-Identifier: Apache-2.0
"""Pools of hutch sandboxes, with llm-sandbox's pool API."""

from .base import ContainerPoolManager, ContainerState, PooledContainer
from .config import ExhaustionStrategy, PoolConfig
from .exceptions import PoolClosedError, PoolExhaustedError, PoolHealthCheckError
from .factory import create_pool_manager
from .session import ArtifactPooledSandboxSession, PooledSandboxSession

__all__ = [
    "ArtifactPooledSandboxSession",
    "ContainerPoolManager",
    "ContainerState",
    "ExhaustionStrategy",
    "PoolClosedError",
    "PoolConfig",
    "PoolExhaustedError",
    "PoolHealthCheckError",
    "PooledContainer",
    "PooledSandboxSession",
    "create_pool_manager",
]
