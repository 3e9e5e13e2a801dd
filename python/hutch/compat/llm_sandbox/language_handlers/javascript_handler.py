# SPDX-License-Identifier: Apache-2.0
"""JavaScript on Node.js: libraries with npm; no plot capture."""

from __future__ import annotations

import logging
import re
from typing import Any, List, Optional, Tuple

from ..const import SupportedLanguage
from ..data import PlotOutput
from .base import AbstractLanguageHandler, ContainerProtocol, LanguageConfig


class JavaScriptHandler(AbstractLanguageHandler):
    _display_name = "JavaScript"

    def __init__(self, logger: Optional[logging.Logger] = None) -> None:
        super().__init__(logger)
        self.config = LanguageConfig(
            name=SupportedLanguage.JAVASCRIPT,
            file_extension="js",
            execution_commands=["node {file}"],
            package_manager="npm install",
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
        spec = rf"['\"]{m}(?:/[^'\"]*)?['\"]"
        # import x from 'm'; import {a} from "m"; import 'm'; require('m'); import('m')
        return rf"(?:\bimport\s+(?:[^;'\"]*?\s+from\s*)?{spec}|\b(?:require|import)\s*\(\s*{spec}\s*\))"

    @staticmethod
    def get_multiline_comment_patterns() -> str:
        return r"/\*[\s\S]*?\*/"

    @staticmethod
    def get_inline_comment_patterns() -> str:
        return r"//.*$"
