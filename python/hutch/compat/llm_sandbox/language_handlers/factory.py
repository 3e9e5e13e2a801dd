# SPDX-License-Identifier: Apache-2.0
"""The language handler for a language name."""

from __future__ import annotations

import logging
from typing import Dict, List, Optional, Type

from ..const import SupportedLanguage
from ..exceptions import LanguageNotSupportedError
from .base import AbstractLanguageHandler
from .cpp_handler import CppHandler
from .go_handler import GoHandler
from .java_handler import JavaHandler
from .javascript_handler import JavaScriptHandler
from .python_handler import PythonHandler
from .r_handler import RHandler
from .ruby_handler import RubyHandler


class LanguageHandlerFactory:
    _handlers: Dict[str, Type[AbstractLanguageHandler]] = {
        SupportedLanguage.PYTHON.value: PythonHandler,
        SupportedLanguage.JAVASCRIPT.value: JavaScriptHandler,
        SupportedLanguage.JAVA.value: JavaHandler,
        SupportedLanguage.CPP.value: CppHandler,
        SupportedLanguage.GO.value: GoHandler,
        SupportedLanguage.RUBY.value: RubyHandler,
        SupportedLanguage.R.value: RHandler,
    }

    @classmethod
    def create_handler(cls, language: str, logger: Optional[logging.Logger] = None) -> AbstractLanguageHandler:
        handler = cls._handlers.get(str(language).lower())
        if handler is None:
            raise LanguageNotSupportedError(language)
        if not issubclass(handler, AbstractLanguageHandler):
            raise TypeError(f"Handler class {handler} is not a subclass of AbstractLanguageHandler")
        return handler(logger=logger)

    @classmethod
    def get_supported_languages(cls) -> List[str]:
        return list(cls._handlers)

    @classmethod
    def register_handler(cls, language: str, handler_class: Type[AbstractLanguageHandler]) -> None:
        cls._handlers[language.lower()] = handler_class
