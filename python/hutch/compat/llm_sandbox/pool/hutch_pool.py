# SPDX-License-Identifier: Apache-2.0
"""The pool's backend: hutch sandboxes, each reset when handed back.

A sandbox goes back to the state it had when the pool made it: its image,
plus what the pool's own set-up added (libraries=...), saved once as a
snapshot.  No file, process or variable of one session reaches the next."""

from __future__ import annotations

from typing import Any, Optional

import hutch

from ..const import SupportedLanguage
from .base import ContainerPoolManager
from .config import PoolConfig


class HutchPoolManager(ContainerPoolManager):
    def __init__(
        self,
        config: PoolConfig,
        lang: Any = SupportedLanguage.PYTHON,
        image: Optional[str] = None,
        dockerfile: Optional[str] = None,
        client: Any = None,
        runtime_configs: Optional[dict] = None,
        backend: Any = "docker",
        **session_kwargs: Any,
    ) -> None:
        from .._backend import note_backend
        from .._runtime_configs import sandbox_options

        note_backend(backend, {"client": client})
        sandbox_options(runtime_configs)  # refused settings fail here
        self.backend = backend
        self.dockerfile = dockerfile
        self.runtime_configs = dict(runtime_configs or {})
        self._template: Optional[hutch.Snapshot] = None
        super().__init__(client=None, config=config, lang=lang, image=image, **session_kwargs)

    def _create_session_for_container(self) -> Any:
        from .._backend import SandboxHutchSession

        kwargs = dict(self.session_kwargs)
        image = self._template.image if self._template is not None else self.image
        if self._template is not None:
            kwargs.pop("libraries", None)  # already in the template
        return SandboxHutchSession(
            backend=self.backend,
            image=image,
            dockerfile=self.dockerfile,
            lang=str(self.lang),
            runtime_configs=self.runtime_configs,
            skip_environment_setup=self._template is not None,
            **kwargs,
        )

    def _create_container(self) -> Any:
        container = super()._create_container()
        if self._template is None and self.session_kwargs.get("libraries"):
            # What the set-up installed, kept for every later sandbox and reset.
            self._template = container.container.snapshot()
        return container

    def _reset_impl(self, container: Any) -> None:
        container.reset(to=self._template) if self._template is not None else container.reset()

    def _destroy_container_impl(self, container: Any) -> None:
        container.close()

    def _get_container_id(self, container: Any) -> str:
        return container.id

    def _health_check_impl(self, container: Any) -> bool:
        try:
            return container.exec("true", timeout=10).exit_code == 0
        except hutch.Error:
            return False

    def close(self) -> None:
        super().close()
        template, self._template = self._template, None
        if template is not None:
            try:
                hutch.remove_image(template.image)
            except hutch.Error:
                self.logger.warning("could not remove the pool's template image %s", template.image)
