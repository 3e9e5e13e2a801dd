# SPDX-License-Identifier: Apache-2.0
"""The pool: sandboxes made ahead (min_pool_size), handed out one session
at a time, checked while idle, recycled after max_container_uses or
max_container_lifetime, with a strategy for when all are busy.  A backend
makes, checks, resets and destroys the sandboxes; on hutch a sandbox
handed back is reset to its starting state before anyone else gets it."""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import Enum
from types import TracebackType
from typing import Any, Dict, List, Optional

from ..const import DefaultImage
from .config import ExhaustionStrategy, PoolConfig
from .exceptions import PoolClosedError, PoolExhaustedError

PREWARMING_CHECK_INTERVAL = 10


def resolve_default_image(lang: Any, image: Optional[str], dockerfile: Optional[str] = None) -> Optional[str]:
    """image, else None with a dockerfile, else the language's DefaultImage."""
    if image:
        return image
    if dockerfile:
        return None
    return getattr(DefaultImage, str(lang).upper())


class ContainerState(str, Enum):
    INITIALIZING = "initializing"
    IDLE = "idle"
    BUSY = "busy"
    UNHEALTHY = "unhealthy"
    REMOVING = "removing"


@dataclass
class PooledContainer:
    container_id: str
    container: Any
    state: ContainerState = ContainerState.INITIALIZING
    created_at: float = field(default_factory=time.time)
    last_used_at: float = field(default_factory=time.time)
    use_count: int = 0

    def mark_busy(self) -> None:
        self.state, self.last_used_at = ContainerState.BUSY, time.time()
        self.use_count += 1

    def mark_idle(self) -> None:
        self.state, self.last_used_at = ContainerState.IDLE, time.time()

    def mark_unhealthy(self) -> None:
        self.state = ContainerState.UNHEALTHY

    def mark_removing(self) -> None:
        self.state = ContainerState.REMOVING

    def is_available(self) -> bool:
        return self.state == ContainerState.IDLE

    def is_expired(self, max_lifetime: Optional[float], max_uses: Optional[int]) -> bool:
        if max_lifetime is not None and time.time() - self.created_at > max_lifetime:
            return True
        return max_uses is not None and self.use_count >= max_uses

    def get_idle_time(self) -> float:
        return time.time() - self.last_used_at


class ContainerPoolManager(ABC):
    """Thread-safe: acquire, release, close and get_stats may be called
    from any thread; a health-check thread and a prewarming thread run
    beside them under the same lock."""

    def __init__(self, client: Any, config: PoolConfig, lang: Any, image: Optional[str] = None, **session_kwargs: Any):
        self.client, self.config, self.lang, self.image = client, config, lang, image
        self.session_kwargs = session_kwargs
        self._pool: List[PooledContainer] = []
        self._lock = threading.RLock()
        self._condition = threading.Condition(self._lock)
        self._closed = False
        self._health_check_thread: Optional[threading.Thread] = None
        self._prewarming_thread: Optional[threading.Thread] = None
        self._shutdown_event = threading.Event()
        self.logger = logging.getLogger(f"{__name__}.{type(self).__name__}")
        self._initialize_pool()

    def _initialize_pool(self) -> None:
        self.logger.info(
            "Initializing pool with min_size=%d, max_size=%d", self.config.min_pool_size, self.config.max_pool_size
        )
        if self.config.health_check_interval > 0:
            self._health_check_thread = self._background(self._health_check_loop, "pool-health-check")
        if self.config.enable_prewarming and self.config.min_pool_size > 0:
            self._prewarming_thread = self._background(self._prewarming_loop, "pool-prewarming")

    @staticmethod
    def _background(target: Any, name: str) -> threading.Thread:
        t = threading.Thread(target=target, daemon=True, name=name)
        t.start()
        return t

    # ---- handing sandboxes out and back ----

    def acquire(self) -> PooledContainer:
        with self._condition:
            if self._closed:
                raise PoolClosedError
            container = self._get_idle_container()
            if container is None and len(self._pool) < self.config.max_pool_size:
                self.logger.info("Pool has no idle container (%d/%d): making one", len(self._pool),
                                 self.config.max_pool_size)
                container = self._create_container()
            if container is None:
                return self._handle_exhaustion()
            container.mark_busy()
            return container

    def release(self, container: PooledContainer) -> None:
        with self._condition:
            if self._closed:
                self._destroy_container(container)
                return
            if container.is_expired(self.config.max_container_lifetime, self.config.max_container_uses):
                self.logger.info("Container %s expired after %d uses, recycling", container.container_id,
                                 container.use_count)
                self._destroy_container(container)
                self._ensure_min_pool_size()
                return
            if not self._reset_container(container):
                self._destroy_container(container)
                self._ensure_min_pool_size()
                return
            container.mark_idle()
            self._condition.notify()

    def _reset_container(self, container: PooledContainer) -> bool:
        """Makes a returned sandbox fit for the next user; False: destroy it."""
        try:
            self._reset_impl(container.container)
        except Exception:
            self.logger.exception("Failed to reset container %s", container.container_id)
            return False
        return True

    def _reset_impl(self, container: Any) -> None:
        """What a backend does to a sandbox handed back (nothing by default)."""

    def close(self) -> None:
        with self._condition:
            if self._closed:
                return
            self.logger.info("Closing container pool")
            self._closed = True
            self._shutdown_event.set()
            self._condition.notify_all()
            for container in list(self._pool):
                self._destroy_container(container)
            self._pool.clear()
        for t in (self._health_check_thread, self._prewarming_thread):
            if t and t.is_alive() and t is not threading.current_thread():
                t.join(timeout=5)
        self.logger.info("Container pool closed")

    def get_stats(self) -> Dict[str, Any]:
        with self._lock:
            counts = {state.value: 0 for state in ContainerState}
            for c in self._pool:
                counts[c.state.value] += 1
            return {
                "total_size": len(self._pool),
                "max_size": self.config.max_pool_size,
                "min_size": self.config.min_pool_size,
                "state_counts": counts,
                "closed": self._closed,
            }

    # ---- internals (the lock held) ----

    def _get_idle_container(self) -> Optional[PooledContainer]:
        return next((c for c in self._pool if c.is_available()), None)

    def _handle_exhaustion(self) -> PooledContainer:
        strategy = self.config.exhaustion_strategy
        if strategy == ExhaustionStrategy.WAIT:
            return self._wait_for_container()
        if strategy == ExhaustionStrategy.TEMPORARY:
            return self._create_temporary_container()
        raise PoolExhaustedError(self.config.max_pool_size)

    def _wait_for_container(self) -> PooledContainer:
        timeout = self.config.acquisition_timeout
        deadline = time.time() + timeout if timeout else None
        while True:
            if self._closed:
                raise PoolClosedError
            left = None if deadline is None else deadline - time.time()
            if left is not None and left <= 0:
                raise PoolExhaustedError(self.config.max_pool_size, timeout)
            if not self._condition.wait(timeout=left):
                raise PoolExhaustedError(self.config.max_pool_size, timeout)
            if self._closed:
                raise PoolClosedError
            container = self._get_idle_container()
            if container:
                container.mark_busy()
                return container

    def _create_temporary_container(self) -> PooledContainer:
        """One more than max_pool_size (it stays in the pool, as llm-sandbox keeps it)."""
        self.logger.info("Creating temporary container outside pool")
        container = self._create_container()
        container.mark_busy()
        return container

    def _ensure_min_pool_size(self) -> None:
        while len(self._pool) < min(self.config.min_pool_size, self.config.max_pool_size):
            self._create_container().mark_idle()

    def _create_container(self) -> PooledContainer:
        """A new sandbox set up by a session of the backend's, then taken from it."""
        session = self._create_session_for_container()
        try:
            session.open()
            obj = session.container
            container = PooledContainer(
                container_id=self._get_container_id(obj), container=obj, state=ContainerState.IDLE
            )
            session.container = None  # the session's close must not remove it
        except Exception:
            self.logger.exception("Failed to create container")
            raise
        finally:
            try:
                session.close()
            except Exception:
                self.logger.exception("Error closing temporary session")
        self._pool.append(container)
        self.logger.info("Created and initialized container %s", container.container_id)
        self._condition.notify()
        return container

    def _destroy_container(self, container: PooledContainer) -> None:
        container.mark_removing()
        try:
            self._destroy_container_impl(container.container)
        except Exception:
            self.logger.exception("Failed to destroy container %s", container.container_id)
        finally:
            if container in self._pool:
                self._pool.remove(container)

    # ---- background threads ----

    def _health_check_loop(self) -> None:
        while not self._shutdown_event.is_set():
            try:
                self._perform_health_checks()
            except Exception:
                self.logger.exception("Error in health check loop")
            self._shutdown_event.wait(timeout=self.config.health_check_interval)

    def _perform_health_checks(self) -> None:
        with self._lock:
            if self._closed:
                return
            idle = [c for c in self._pool if c.state == ContainerState.IDLE]
        bad = []
        for c in idle:
            if self.config.idle_timeout and c.get_idle_time() > self.config.idle_timeout:
                self.logger.info("Container %s idle for %.1fs, recycling", c.container_id, c.get_idle_time())
                bad.append(c)
            elif not self._health_check_impl(c.container):
                self.logger.warning("Container %s failed health check", c.container_id)
                bad.append(c)
        if not bad:
            return
        with self._lock:
            if self._closed:
                return
            for c in bad:
                if c.state != ContainerState.IDLE:
                    continue  # handed out meanwhile
                c.mark_unhealthy()
                self._destroy_container(c)
            self._ensure_min_pool_size()

    def _prewarming_loop(self) -> None:
        while not self._shutdown_event.is_set():
            try:
                with self._lock:
                    if not self._closed:
                        self._ensure_min_pool_size()
            except Exception:
                self.logger.exception("Error in pre-warming loop")
            self._shutdown_event.wait(timeout=PREWARMING_CHECK_INTERVAL)

    # ---- what a backend provides ----

    @abstractmethod
    def _create_session_for_container(self) -> Any:
        """A session (not open) whose open() makes and sets up a sandbox."""

    @abstractmethod
    def _destroy_container_impl(self, container: Any) -> None: ...

    @abstractmethod
    def _get_container_id(self, container: Any) -> str: ...

    @abstractmethod
    def _health_check_impl(self, container: Any) -> bool: ...

    def __enter__(self) -> "ContainerPoolManager":
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Optional[TracebackType]) -> None:
        self.close()
