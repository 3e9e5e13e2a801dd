# SPDX-License-Identifier: Apache-2.0
"""A handler per language: how code is run, libraries installed, imports
recognised and plots captured."""

from .base import AbstractLanguageHandler, LanguageConfig, PlotDetectionConfig, PlotLibrary
from .cpp_handler import CppHandler
from .go_handler import GoHandler
from .java_handler import JavaHandler
from .javascript_handler import JavaScriptHandler
from .python_handler import PythonHandler
from .r_handler import RHandler
from .ruby_handler import RubyHandler

__all__ = [
    "AbstractLanguageHandler",
    "CppHandler",
    "GoHandler",
    "JavaHandler",
    "JavaScriptHandler",
    "LanguageConfig",
    "PlotDetectionConfig",
    "PlotLibrary",
    "PythonHandler",
    "RHandler",
    "RubyHandler",
]
