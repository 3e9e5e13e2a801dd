# SPDX-License-Identifier: Apache-2.0
"""PoolConfig: a pool's sizes, time limits and what it does when full."""

from __future__ import annotations

from enum import Enum
from typing import Optional

from .._model import Field, Model


class ExhaustionStrategy(str, Enum):
    """When every sandbox is busy: fail at once, wait for one, or make a
    temporary one outside the pool."""

    FAIL_FAST = "fail_fast"
    WAIT = "wait"
    TEMPORARY = "temporary"


class PoolConfig(Model):
    max_pool_size: int = Field(10, ge=1)
    min_pool_size: int = Field(0, ge=0)
    idle_timeout: Optional[float] = Field(300.0, gt=0)
    acquisition_timeout: Optional[float] = Field(30.0, gt=0)
    health_check_interval: float = Field(60.0, gt=0)
    max_container_lifetime: Optional[float] = Field(3600.0, gt=0)
    max_container_uses: Optional[int] = Field(None, ge=1)
    exhaustion_strategy: ExhaustionStrategy = Field(ExhaustionStrategy.WAIT, convert=ExhaustionStrategy)
    enable_prewarming: bool = Field(True)

    def _check(self) -> None:
        if self.min_pool_size > self.max_pool_size:
            raise ValueError(
                f"min_pool_size ({self.min_pool_size}) cannot be greater than max_pool_size ({self.max_pool_size})"
            )
