# SPDX-License-Identifier: Apache-2.0
"""Python: run with the session's python, libraries with pip, figures of
matplotlib, seaborn and plotly captured."""

from __future__ import annotations

import logging
import re
from typing import List, Optional

from ..const import SupportedLanguage
from .artifact_detection import PYTHON_PLOT_DETECTION_CODE
from .base import AbstractLanguageHandler, LanguageConfig, PlotDetectionConfig, PlotLibrary
from .runtime_context import RuntimeContext


class PythonHandler(AbstractLanguageHandler):
    def __init__(self, logger: Optional[logging.Logger] = None) -> None:
        super().__init__(logger)
        self.config = LanguageConfig(
            name=SupportedLanguage.PYTHON,
            file_extension="py",
            execution_commands=["python {file}"],
            package_manager="pip install",
            plot_detection=PlotDetectionConfig(
                libraries=[PlotLibrary.MATPLOTLIB, PlotLibrary.PLOTLY, PlotLibrary.SEABORN],
                setup_code=PYTHON_PLOT_DETECTION_CODE,
                cleanup_code="",
            ),
        )

    def get_execution_commands(self, code_file: str, runtime_context: Optional[RuntimeContext] = None) -> List[str]:
        if runtime_context and runtime_context.python_executable_path:
            return [f"{runtime_context.python_executable_path} {code_file}"]
        return super().get_execution_commands(code_file)

    def get_library_installation_command(self, library: str, runtime_context: Optional[RuntimeContext] = None) -> str:
        ctx = runtime_context
        if ctx and ctx.pip_executable_path and ctx.pip_cache_dir:
            return f"{ctx.pip_executable_path} install {library} --cache-dir {ctx.pip_cache_dir}"
        return super().get_library_installation_command(library)

    def inject_plot_detection_code(self, code: str) -> str:
        return self._prepend_plot_setup(code)

    def get_import_patterns(self, module: str) -> str:
        m = re.escape(module)
        # "import a, m as x", "import m.sub", "from m import y", "from m.sub import y"
        return rf"(?:^|[\s;])(?:import\s+(?:[\w.]+(?:\s+as\s+\w+)?\s*,\s*)*{m}(?![\w])|from\s+{m}(?=[\s.]))"

    @staticmethod
    def get_multiline_comment_patterns() -> str:
        return r"('''|\"\"\")[\s\S]*?\1"

    @staticmethod
    def get_inline_comment_patterns() -> str:
        return r"#.*$"
