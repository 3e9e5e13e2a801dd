# SPDX-License-Identifier: Apache-2.0
"""The paths of a session that a language handler builds commands with."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional


@dataclass
class RuntimeContext:
    workdir: str
    python_executable_path: Optional[str] = None
    pip_executable_path: Optional[str] = None
    pip_cache_dir: Optional[str] = None
