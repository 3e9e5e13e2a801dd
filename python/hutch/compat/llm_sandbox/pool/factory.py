# SPDX-License-Identifier: Apache-2.0
"""create_pool_manager: a pool of hutch sandboxes, whatever backend is named."""

from __future__ import annotations

from typing import Any, Optional

from ..const import SandboxBackend, SupportedLanguage
from ..exceptions import UnsupportedBackendError
from .base import ContainerPoolManager
from .config import PoolConfig


def create_pool_manager(
    client: Any = None,
    backend: Any = SandboxBackend.DOCKER,
    config: Optional[PoolConfig] = None,
    lang: Any = SupportedLanguage.PYTHON,
    **kwargs: Any,
) -> ContainerPoolManager:
    from .hutch_pool import HutchPoolManager

    try:
        backend = SandboxBackend(backend)
    except ValueError:
        raise UnsupportedBackendError(backend) from None
    for k8s_only in ("namespace", "kube_namespace", "pod_manifest"):
        kwargs.pop(k8s_only, None)
    return HutchPoolManager(config=config or PoolConfig(), lang=lang, client=client, backend=backend, **kwargs)
