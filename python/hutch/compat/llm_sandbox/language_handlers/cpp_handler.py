# SPDX-License-Identifier: Apache-2.0
"""C++17 with g++: compiled into the working directory, then run."""

from __future__ import annotations

import logging
import re
from typing import Any, List, Optional, Tuple

from ..const import SupportedLanguage
from ..data import PlotOutput
from .base import AbstractLanguageHandler, ContainerProtocol, LanguageConfig
from .runtime_context import RuntimeContext


class CppHandler(AbstractLanguageHandler):
    _display_name = "C++"

    def __init__(self, logger: Optional[logging.Logger] = None) -> None:
        super().__init__(logger)
        self.config = LanguageConfig(
            name=SupportedLanguage.CPP,
            file_extension="cpp",
            execution_commands=["g++ -std=c++17 {file} -o /tmp/a.out && /tmp/a.out"],
            package_manager="apt-get install",
            plot_detection=None,
        )

    def get_execution_commands(self, code_file: str, runtime_context: Optional[RuntimeContext] = None) -> List[str]:
        binary = f"{runtime_context.workdir}/a.out" if runtime_context and runtime_context.workdir else "/tmp/a.out"
        return [f"g++ -std=c++17 -o {binary} {code_file}", binary]

    def get_library_installation_command(self, library: str, runtime_context: Optional[RuntimeContext] = None) -> str:
        if runtime_context and runtime_context.workdir:
            return f"apt-get install {library} -o Dir::Cache={runtime_context.workdir}/apt-cache"
        return f"apt-get install {library}"

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
        return rf"(?:^|\s)#\s*include\s*(?:<{m}>|\"{m}\")"

    @staticmethod
    def get_multiline_comment_patterns() -> str:
        return r"/\*[\s\S]*?\*/"

    @staticmethod
    def get_inline_comment_patterns() -> str:
        return r"//.*$"
