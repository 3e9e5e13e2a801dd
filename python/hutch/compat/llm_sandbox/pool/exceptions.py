# SPDX-License-Identifier: Apache-2.0
"""The pool's errors, with llm-sandbox's messages."""

from __future__ import annotations

from typing import Optional


class PoolExhaustedError(Exception):
    def __init__(self, pool_size: int, timeout: Optional[float] = None) -> None:
        if timeout is not None:
            message = f"All {pool_size} containers in pool are busy and timeout of {timeout}s exceeded"
        else:
            message = f"All {pool_size} containers in pool are busy"
        super().__init__(message)
        self.pool_size, self.timeout = pool_size, timeout


class PoolClosedError(Exception):
    def __init__(self) -> None:
        super().__init__("Container pool has been closed")


class PoolHealthCheckError(Exception):
    def __init__(self, container_id: str, reason: str) -> None:
        super().__init__(f"Health check failed for container {container_id}: {reason}")
        self.container_id, self.reason = container_id, reason


class SessionNotOpenError(RuntimeError):
    def __init__(self) -> None:
        super().__init__("Session not open - call open() first or use context manager")
