# SPDX-License-Identifier: Apache-2.0
"""Go: go run in a module made at session start; libraries with go get."""

from __future__ import annotations

import logging
import re
from typing import Any, List, Optional, Tuple

from ..const import SupportedLanguage
from ..data import PlotOutput
from .base import AbstractLanguageHandler, ContainerProtocol, LanguageConfig


class GoHandler(AbstractLanguageHandler):
    _display_name = "Go"

    def __init__(self, logger: Optional[logging.Logger] = None) -> None:
        super().__init__(logger)
        self.config = LanguageConfig(
            name=SupportedLanguage.GO,
            file_extension="go",
            execution_commands=["go run {file}"],
            package_manager="go get",
            plot_detection=None,
        )

    def run_with_artifacts(
        self,
        container: ContainerProtocol,
        code: str,
        libraries: Optional[list] = None,
        enable_plotting: bool = True,
        output_dir: str = "/tmp/sandbox_plots",
        timeout: int = 30,
        **kwargs: Any,
    ) -> Tuple[Any, List[PlotOutput]]:
        return self._run_without_plots(container, code, libraries, timeout, **kwargs)

    def get_import_patterns(self, module: str) -> str:
        m = re.escape(module)
        path = rf"\"(?:[^\"\n]*/)?{m}\""
        # import "m"; import alias "m"; import ( ... "x/m" ... )
        return rf"(?:\bimport\s+(?:[\w.]+\s+)?{path}|\bimport\s*\([^)]*?{path})"

    @staticmethod
    def get_multiline_comment_patterns() -> str:
        return r"/\*[\s\S]*?\*/"

    @staticmethod
    def get_inline_comment_patterns() -> str:
        return r"//.*$"
