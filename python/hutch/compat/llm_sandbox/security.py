# SPDX-License-Identifier: Apache-2.0
"""llm-sandbox's security policy: regular expressions and restricted
modules checked against code before it runs (session.is_safe(code); run()
refuses code the policy blocks with SecurityViolationError).

The scan is advisory.  It matches text, so a determined program gets past
it (an import spelled through importlib, code decoded at run time); what
contains code is the sandbox itself: its own namespaces, no capabilities,
seccomp, the limits, and no network but hutch's allowlist proxy (see
hutch-security(7)).  Use a policy to catch mistakes and to say no early,
not as the boundary."""

from __future__ import annotations

import re
from enum import IntEnum
from typing import Any, List, Optional

from ._model import Field, Model, model_list
from .exceptions import InvalidRegexPatternError


class SecurityIssueSeverity(IntEnum):
    SAFE = 0
    LOW = 1
    MEDIUM = 2
    HIGH = 3


def _regex(pattern: Any) -> str:
    try:
        re.compile(pattern)
    except (re.error, TypeError) as e:
        raise InvalidRegexPatternError(str(pattern)) from e
    return pattern


class SecurityPattern(Model):
    """A regular expression that marks code as having an issue of severity."""

    pattern: str = Field(convert=_regex)
    description: str = Field()
    severity: SecurityIssueSeverity = Field(convert=SecurityIssueSeverity)


class RestrictedModule(Model):
    """A module (package, header, gem...) that code may not import."""

    name: str = Field()
    description: str = Field()
    severity: SecurityIssueSeverity = Field(convert=SecurityIssueSeverity)


class SecurityPolicy(Model):
    """Patterns and restricted modules; code with an issue of
    severity_threshold or above is blocked (SAFE: nothing is)."""

    severity_threshold: SecurityIssueSeverity = Field(SecurityIssueSeverity.SAFE, convert=SecurityIssueSeverity)
    patterns: Optional[List[SecurityPattern]] = Field(None, convert=model_list(SecurityPattern))
    restricted_modules: Optional[List[RestrictedModule]] = Field(None, convert=model_list(RestrictedModule))

    def add_pattern(self, pattern: SecurityPattern) -> None:
        if self.patterns is None:
            self.patterns = []
        self.patterns.append(pattern)

    def add_restricted_module(self, module: RestrictedModule) -> None:
        if self.restricted_modules is None:
            self.restricted_modules = []
        self.restricted_modules.append(module)
