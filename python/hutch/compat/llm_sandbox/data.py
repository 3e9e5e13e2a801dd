# SPDX-License-Identifier: Apache-2.0
"""What a session returns: ConsoleOutput for commands, ExecutionResult
(with the plots captured) for code, as llm-sandbox's frozen dataclasses."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, List, Optional

#: Called with each decoded chunk of stdout or stderr as it arrives
#: (run(..., on_stdout=cb)), from a thread of the session's.
StreamCallback = Callable[[str], None]


class FileType(Enum):
    PNG = "png"
    JPEG = "jpeg"
    PDF = "pdf"
    SVG = "svg"
    CSV = "csv"
    JSON = "json"
    TXT = "txt"
    HTML = "html"


@dataclass(frozen=True)
class PlotOutput:
    """A figure the code drew: its bytes base64-encoded, in format."""

    format: FileType
    content_base64: str
    width: Optional[int] = None
    height: Optional[int] = None
    dpi: Optional[int] = None


@dataclass(frozen=True)
class ConsoleOutput:
    exit_code: int = 0
    stderr: str = ""
    stdout: str = ""

    def text(self) -> str:
        """stdout, under llm-sandbox's deprecated name."""
        warnings.warn(
            "The 'text' property is deprecated and will be removed in a future version. "
            "Use 'stdout' attribute directly instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.stdout

    def success(self) -> bool:
        return not self.exit_code

    def to_json(self, include_plots: bool = False) -> str:
        fields = dict(self.__dict__)
        plots = fields.pop("plots", None)
        if include_plots and plots is not None:
            fields["plots"] = [dict(p.__dict__, format=p.format.value) for p in plots]
        return json.dumps(fields, indent=2)


@dataclass(frozen=True)
class ExecutionResult(ConsoleOutput):
    plots: List[PlotOutput] = field(default_factory=list)
