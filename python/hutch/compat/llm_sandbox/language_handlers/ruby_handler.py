# SPDX-License-Identifier: Apache-2.0
"""Ruby: libraries with gem; no plot capture."""

from __future__ import annotations

import logging
import re
from typing import Any, List, Optional, Tuple

from ..const import SupportedLanguage
from ..data import PlotOutput
from .base import AbstractLanguageHandler, ContainerProtocol, LanguageConfig


class RubyHandler(AbstractLanguageHandler):
    _display_name = "Ruby"

    def __init__(self, logger: Optional[logging.Logger] = None) -> None:
        super().__init__(logger)
        self.config = LanguageConfig(
            name=SupportedLanguage.RUBY,
            file_extension="rb",
            execution_commands=["ruby {file}"],
            package_manager="gem install",
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
        # require 'm'; require_relative "m"; require('m/sub'), at a statement's start
        return rf"(?m)(?:^|;)\s*(?:require|require_relative)\s*\(?\s*['\"]{m}(?:/[^'\"]*)?['\"]"

    @staticmethod
    def get_multiline_comment_patterns() -> str:
        return r"=begin[\s\S]*?=end"

    @staticmethod
    def get_inline_comment_patterns() -> str:
        return r"#.*$"
