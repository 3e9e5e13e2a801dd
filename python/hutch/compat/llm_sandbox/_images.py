# SPDX-License-Identifier: Apache-2.0
"""Which hutch image a session runs on: llm-sandbox's image names (its
DefaultImage per language) map to hutch images; any other name is an image
of hutch's store, pulled from its registry the first time."""

from __future__ import annotations

import logging
from typing import Optional

import hutch

from .const import DefaultImage, SupportedLanguage
from .exceptions import ImageNotFoundError, ImagePullError

log = logging.getLogger(__name__)

# Python and C++ run on the default image (Python, its scientific stack, g++).
# Each other language has an image of its own, built from its recipe.
_BY_LANGUAGE = {
    SupportedLanguage.PYTHON: "default",
    SupportedLanguage.CPP: "default",
    SupportedLanguage.JAVASCRIPT: "llm-sandbox-javascript",
    SupportedLanguage.JAVA: "llm-sandbox-java",
    SupportedLanguage.GO: "llm-sandbox-go",
    SupportedLanguage.RUBY: "llm-sandbox-ruby",
    SupportedLanguage.R: "llm-sandbox-r",
}
_DEFAULTS = {getattr(DefaultImage, lang.name): lang for lang in SupportedLanguage}


class MissingImageError(ImageNotFoundError):
    """An image hutch's store lacks, with the command that makes it."""

    def __init__(self, image: str, hint: str) -> None:
        Exception.__init__(self, f"Image {image} not found\nhint: {hint}")


def _have(name: str) -> bool:
    try:
        hutch.image(name)
    except hutch.NotFoundError:
        return False
    return True


def hutch_image(lang: str, image: Optional[str]) -> str:
    """The hutch image for a session of lang given image (None: the language's)."""
    if image and image not in _DEFAULTS:
        if _have(image):
            return image
        try:
            hutch.pull(image)
        except hutch.Error as e:
            raise ImagePullError(image, str(e)) from e
        return image
    language = _DEFAULTS.get(image) if image else SupportedLanguage(lang)
    name = _BY_LANGUAGE[language]
    if image:
        log.info("llm-sandbox image %s: running on hutch image %s", image, name)
    if not _have(name):
        if name == "default":
            hint = "hutch rootfs build --from ubuntu:24.04 --recipe rootfs/agent.recipe --name default"
        else:
            recipe = f"rootfs/{name}.recipe"
            hint = f"hutch rootfs build --from ubuntu:24.04 --recipe {recipe} --name {name}"
        raise MissingImageError(name, f"make it once with: {hint}")
    return name
