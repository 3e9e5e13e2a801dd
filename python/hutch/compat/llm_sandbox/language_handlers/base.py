# SPDX-License-Identifier: Apache-2.0
"""What every language handler does: the commands that run a file and
install a library, the import patterns the security policy checks, comment
stripping, and plot capture (code prepended to the user's that saves each
figure under output_dir, read back afterwards)."""

from __future__ import annotations

import base64
import io
import logging
import re
import tarfile
from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import Enum
from pathlib import PurePosixPath
from typing import Any, List, Optional, Protocol, Tuple

from ..data import FileType, PlotOutput
from ..exceptions import CommandFailedError, PackageManagerError
from .runtime_context import RuntimeContext

_PLOT_TYPES = ("png", "svg", "pdf", "html")


class ContainerProtocol(Protocol):
    """What a handler needs of a session to run code and fetch plots."""

    def execute_command(self, command: str, workdir: Optional[str] = None) -> Any: ...

    def get_archive(self, path: str) -> tuple: ...

    def run(self, code: str, libraries: Optional[list] = None, timeout: int = 30, **kwargs: Any) -> Any: ...


class PlotLibrary(Enum):
    MATPLOTLIB = "matplotlib"
    PLOTLY = "plotly"
    SEABORN = "seaborn"
    CHARTJS = "chartjs"
    D3JS = "d3js"
    JFREECHART = "jfreechart"
    XCHART = "xchart"
    ROOT = "root"
    GONUM_PLOT = "gonum_plot"
    GRUFF = "gruff"


@dataclass
class PlotDetectionConfig:
    libraries: List[PlotLibrary]
    setup_code: str
    cleanup_code: str


@dataclass
class LanguageConfig:
    name: str
    file_extension: str
    execution_commands: List[str]
    package_manager: Optional[str]
    is_support_library_installation: bool = True
    plot_detection: Optional[PlotDetectionConfig] = None


class AbstractLanguageHandler(ABC):
    config: LanguageConfig

    def __init__(self, logger: Optional[logging.Logger] = None) -> None:
        self.logger: logging.Logger = logger or logging.getLogger(__name__)

    # ---- commands ----

    def get_execution_commands(self, code_file: str, runtime_context: Optional[RuntimeContext] = None) -> List[str]:
        if not self.config.execution_commands:
            raise CommandFailedError(self.config.name, 1, "No execution commands found")
        return [c.format(file=code_file) for c in self.config.execution_commands]

    def get_library_installation_command(self, library: str, runtime_context: Optional[RuntimeContext] = None) -> str:
        if not self.config.package_manager:
            raise PackageManagerError(self.config.name)
        return f"{self.config.package_manager} {library}"

    # ---- plots ----

    def inject_plot_detection_code(self, code: str) -> str:
        return code

    def _prepend_plot_setup(self, code: str) -> str:
        from ..exceptions import LanguageNotSupportPlotError

        if not self.config.plot_detection:
            raise LanguageNotSupportPlotError(self.config.name)
        return f"{self.config.plot_detection.setup_code or ''}\n\n{code}"

    def extract_plots(self, container: ContainerProtocol, output_dir: str) -> List[PlotOutput]:
        plots: List[PlotOutput] = []
        try:
            if container.execute_command(f"test -d {output_dir}").exit_code:
                return plots
            found = container.execute_command(
                f"find {output_dir} -name '*.png' -o -name '*.svg' -o -name '*.pdf' -o -name '*.html'"
            )
            if found.exit_code:
                return plots
            paths = [p.strip() for p in found.stdout.strip().split("\n") if p.strip()]
            for path in sorted(paths):
                try:
                    plot = self._extract_single_plot(container, path)
                except (OSError, tarfile.TarError, ValueError):
                    self.logger.exception("Error extracting plot %s", path)
                    continue
                if plot:
                    plots.append(plot)
        except (OSError, RuntimeError):
            self.logger.exception("Error extracting %s plots", self.config.name)
        return plots

    def _extract_single_plot(self, container: ContainerProtocol, file_path: str) -> Optional[PlotOutput]:
        try:
            data, stat = container.get_archive(file_path)
            if not stat:
                return None
            with tarfile.open(fileobj=io.BytesIO(data), mode="r") as tar:
                members = tar.getmembers()
                member = self._find_target_member(members, file_path) if members else None
                return self._extract_plot_content(tar, member, file_path) if member else None
        except (OSError, tarfile.TarError, ValueError):
            self.logger.exception("Error extracting single plot")
        return None

    def _find_target_member(self, members: List[tarfile.TarInfo], file_path: str) -> Optional[tarfile.TarInfo]:
        files = [m for m in members if m.isfile()]
        want = PurePosixPath(file_path).name
        for m in files:
            if PurePosixPath(m.name).name == want:
                return m
        return files[0] if files else None

    def _extract_plot_content(
        self, tar: tarfile.TarFile, target_member: tarfile.TarInfo, file_path: str
    ) -> Optional[PlotOutput]:
        f = tar.extractfile(target_member)
        if not f:
            return None
        ext = PurePosixPath(file_path).suffix.lower().lstrip(".")
        fmt = FileType(ext) if ext in _PLOT_TYPES else FileType.PNG
        return PlotOutput(format=fmt, content_base64=base64.b64encode(f.read()).decode("utf-8"))

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
        """Runs code; with plotting on and supported, returns the figures it drew too."""
        if enable_plotting and self.is_support_plot_detection:
            result = container.run(self.inject_plot_detection_code(code), libraries, timeout, **kwargs)
            return result, self.extract_plots(container, output_dir)
        return container.run(code, libraries, timeout, **kwargs), []

    def _run_without_plots(
        self, container: ContainerProtocol, code: str, libraries: Optional[list], timeout: int, **kwargs: Any
    ) -> Tuple[Any, List[PlotOutput]]:
        """For the languages whose figures hutch cannot capture: runs code, no plots."""
        self.logger.warning("%s does not support plot extraction yet", self._display_name)
        return container.run(code, libraries, timeout=timeout, **kwargs), []

    _display_name = "This language"

    # ---- the security policy's view of code ----

    @abstractmethod
    def get_import_patterns(self, module: str) -> str:
        """A regular expression matching an import of module."""

    @staticmethod
    @abstractmethod
    def get_multiline_comment_patterns() -> str:
        """A regular expression matching a block comment."""

    @staticmethod
    @abstractmethod
    def get_inline_comment_patterns() -> str:
        """A regular expression matching a comment to the end of a line."""

    def filter_comments(self, code: str) -> str:
        """code without its comments (lines left empty stay, as empty lines)."""
        block = self.get_multiline_comment_patterns()
        if block:
            code = re.sub(block, "", code)
        inline = self.get_inline_comment_patterns()
        lines = (re.sub(inline, "", line) for line in code.split("\n"))
        return "\n".join(line if line.strip() else "" for line in lines)

    # ---- properties ----

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def file_extension(self) -> str:
        return self.config.file_extension

    @property
    def supported_plot_libraries(self) -> List[PlotLibrary]:
        return self.config.plot_detection.libraries if self.config.plot_detection else []

    @property
    def is_support_library_installation(self) -> bool:
        return self.config.is_support_library_installation

    @property
    def is_support_plot_detection(self) -> bool:
        return self.config.plot_detection is not None
