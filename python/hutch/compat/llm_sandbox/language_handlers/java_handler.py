# SPDX-License-Identifier: Apache-2.0
"""Java, run from source (java File.java); no library installation, no plots."""

from __future__ import annotations

import logging
import re
from typing import Any, List, Optional, Tuple

from ..const import SupportedLanguage
from ..data import PlotOutput
from .base import AbstractLanguageHandler, ContainerProtocol, LanguageConfig


class JavaHandler(AbstractLanguageHandler):
    _display_name = "Java"

    def __init__(self, logger: Optional[logging.Logger] = None) -> None:
        super().__init__(logger)
        self.config = LanguageConfig(
            name=SupportedLanguage.JAVA,
            file_extension="java",
            execution_commands=["java {file}"],
            package_manager="mvn",
            plot_detection=None,
            is_support_library_installation=False,
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
        # import m.Class; import m.*; import static m.Class.member;
        return rf"(?:^|[\s;])import\s+(?:static\s+)?{m}(?:\.[\w*]+)*\s*;"

    @staticmethod
    def get_multiline_comment_patterns() -> str:
        return r"/\*[\s\S]*?\*/"

    @staticmethod
    def get_inline_comment_patterns() -> str:
        return r"//.*$"
