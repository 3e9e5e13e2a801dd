# SPDX-License-Identifier: Apache-2.0
"""R: Rscript; libraries with install.packages from $R_REPO (CRAN by
default); base graphics and ggplot2 figures captured."""

from __future__ import annotations

import logging
import os
import re
from typing import Optional

from ..const import SupportedLanguage
from ..exceptions import PackageManagerError
from .artifact_detection import R_PLOT_DETECTION_CODE
from .base import AbstractLanguageHandler, LanguageConfig, PlotDetectionConfig, PlotLibrary
from .runtime_context import RuntimeContext


def _get_r_repo() -> str:
    """The CRAN mirror install.packages uses: $R_REPO, else CRAN's own."""
    return os.environ.get("R_REPO", "https://cran.rstudio.com/")


class RHandler(AbstractLanguageHandler):
    def __init__(self, logger: Optional[logging.Logger] = None) -> None:
        super().__init__(logger)
        self.config = LanguageConfig(
            name=SupportedLanguage.R,
            file_extension="R",
            execution_commands=["Rscript {file}"],
            package_manager="install.packages",
            plot_detection=PlotDetectionConfig(
                libraries=[PlotLibrary.ROOT, PlotLibrary.PLOTLY],
                setup_code=R_PLOT_DETECTION_CODE,
                cleanup_code="",
            ),
        )

    def inject_plot_detection_code(self, code: str) -> str:
        return self._prepend_plot_setup(code)

    def get_library_installation_command(self, library: str, runtime_context: Optional[RuntimeContext] = None) -> str:
        if not self.config.package_manager:
            raise PackageManagerError(self.config.name)
        return f"R -e \"install.packages('{library}', repos='{_get_r_repo()}')\""

    def get_import_patterns(self, module: str) -> str:
        m = re.escape(module)
        # library(m), require("m"), requireNamespace('m', quietly = TRUE), at a
        # line's start or after R punctuation (not inside a sentence of a string)
        return rf"(?m)(?:^|[(!;,{{])\s*(?:library|require|requireNamespace)\s*\(\s*['\"]?{m}['\"]?\s*[,)]"

    @staticmethod
    def get_multiline_comment_patterns() -> str:
        return r""

    @staticmethod
    def get_inline_comment_patterns() -> str:
        return r"#.*$"
