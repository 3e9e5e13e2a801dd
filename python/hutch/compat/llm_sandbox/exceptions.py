# SPDX-License-Identifier: Apache-2.0
"""llm-sandbox's exception classes, with its hierarchy and messages (code
catches them by class and tests match their text).  Every one is a
SandboxError; hutch's own errors (hutch.Error) that reach a session are
re-raised as the closest of these, with hutch's message and hint kept."""

from __future__ import annotations

from typing import Optional


class SandboxError(Exception):
    """The base class of every error a session raises."""

    def __init__(self, message: str) -> None:
        super().__init__(message)


class ContainerError(SandboxError):
    """The sandbox could not be made, reached or used."""


class SecurityError(SandboxError):
    """The security policy or a path check refused something."""


class ResourceError(SandboxError):
    """A resource limit was reached."""


class ValidationError(SandboxError):
    """An argument or a runtime_configs entry was refused."""


class ExtraArgumentsError(SandboxError):
    pass


class LanguageNotSupportedError(SandboxError):
    def __init__(self, lang: str) -> None:
        super().__init__(f"Language {lang} is not supported")


class ImageNotFoundError(SandboxError):
    def __init__(self, image: str) -> None:
        super().__init__(f"Image {image} not found")


class NotOpenSessionError(SandboxError):
    def __init__(self) -> None:
        super().__init__("Session is not open. Please call open() method before running code.")


class LibraryInstallationNotSupportedError(SandboxError):
    def __init__(self, lang: str) -> None:
        super().__init__(f"Library installation is not supported for {lang}")


class CommandEmptyError(SandboxError):
    def __init__(self) -> None:
        super().__init__("Command cannot be empty")


class CommandFailedError(SandboxError):
    def __init__(self, command: str, exit_code: int, output: str) -> None:
        super().__init__(f"Command {command} failed with exit code {exit_code}:\n{output}")


class PackageManagerError(SandboxError):
    def __init__(self, package_manager: str) -> None:
        super().__init__(f"Package manager {package_manager} not found")


class ImagePullError(SandboxError):
    def __init__(self, image: str, error: str) -> None:
        super().__init__(f"Failed to pull image {image}: {error}")


class UnsupportedBackendError(SandboxError):
    def __init__(self, backend: str) -> None:
        super().__init__(f"Unsupported backend: {backend}")


class MissingDependencyError(SandboxError):
    pass


class LanguageNotSupportPlotError(SandboxError):
    def __init__(self, lang: str) -> None:
        super().__init__(f"Language {lang} does not support plot detection")


class InvalidRegexPatternError(SandboxError):
    def __init__(self, pattern: str) -> None:
        super().__init__(f"Invalid regex pattern: {pattern}")


class LanguageHandlerNotInitializedError(SandboxError):
    def __init__(self, language: str) -> None:
        super().__init__(f"Language handler for {language} is not initialized.")


class SecurityViolationError(SandboxError):
    """Code or a library the session's security policy forbids."""


class SandboxTimeoutError(SandboxError):
    """An execution or the session outlived its time limit."""

    def __init__(self, message: str, timeout_duration: Optional[float] = None) -> None:
        super().__init__(message)
        self.timeout_duration = timeout_duration
