# SPDX-License-Identifier: Apache-2.0
"""Which hutch image a session runs on: llm-sandbox's image names (its
DefaultImage per language) map to hutch images, built from their recipes
the first time a session needs them (_build.py); any other name is an image
of hutch's store, pulled from its registry the first time."""

from __future__ import annotations

import logging
import os
from typing import List, Optional
from urllib.parse import urlsplit

import hutch

from .const import DefaultImage, SupportedLanguage
from ._build import ensure_built
from .exceptions import ImageNotFoundError, ImagePullError

log = logging.getLogger(__name__)

# Python and C++ run on the default image (Python, its scientific stack, g++);
# Python on llm-sandbox-python instead where it has been built (the default
# image plus the libraries llm-sandbox's Python image has: pandas, seaborn,
# plotly, scikit-learn...).  Each other language has an image of its own,
# built from its recipe (rootfs/NAME.recipe) the first time a session asks.
_BY_LANGUAGE = {
    SupportedLanguage.PYTHON: "default",
    SupportedLanguage.CPP: "default",
    SupportedLanguage.JAVASCRIPT: "llm-sandbox-javascript",
    SupportedLanguage.JAVA: "llm-sandbox-java",
    SupportedLanguage.GO: "llm-sandbox-go",
    SupportedLanguage.RUBY: "llm-sandbox-ruby",
    SupportedLanguage.R: "llm-sandbox-r",
}
#: How an image a session needs is made when the store lacks it: the base
#: it is built on and its recipe (rootfs/, hutch-recipe(5)).
BUILDS = {
    "default": ("ubuntu:24.04", "agent.recipe"),
    **{n: ("default", f"{n}.recipe") for n in _BY_LANGUAGE.values() if n != "default"},
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


_PYTHON_IMAGE = "llm-sandbox-python"
_PYTHON_BUILD = (
    "hutch rootfs build --from default --recipe rootfs/llm-sandbox-python.recipe --name llm-sandbox-python"
)
_told_python = False


def _python_image() -> str:
    global _told_python
    if _have(_PYTHON_IMAGE):
        return _PYTHON_IMAGE
    if not _told_python:
        _told_python = True
        log.warning(
            "Python sessions run on the image default: it lacks some libraries llm-sandbox's Python image has "
            "(pandas, seaborn, plotly, scikit-learn...), which libraries= installs through the proxy; to have "
            "them without a network, build them once: %s",
            _PYTHON_BUILD,
        )
    return "default"


def _pull(image: str) -> str:
    """image from hutch's manifests (ubuntu:24.04), else from its registry
    as Docker names it (python:3.11-slim, ghcr.io/OWNER/NAME:TAG): the name
    it has in the store."""
    try:
        hutch.pull(image)
        return image
    except hutch.InvalidArgument:
        pass  # not one of hutch's manifests
    except hutch.Error as e:
        raise ImagePullError(image, str(e)) from e
    ref = image if image.startswith("docker://") else f"docker://{image}"
    try:
        got = hutch.pull(ref)
    except hutch.Error as e:
        raise ImagePullError(image, str(e)) from e
    return str(got.get("name") or got["digest"])


def hutch_image(lang: str, image: Optional[str]) -> str:
    """The hutch image for a session of lang given image (None: the language's)."""
    if image and image not in _DEFAULTS:
        if _have(image):
            return image
        return _pull(image)
    language = _DEFAULTS.get(image) if image else SupportedLanguage(lang)
    name = _BY_LANGUAGE[language]
    if language == SupportedLanguage.PYTHON:
        name = _python_image()
    if image:
        log.info("llm-sandbox image %s: running on hutch image %s", image, name)
    if not _have(name):
        ensure(name)
    return name


def ensure(name: str) -> None:
    """Builds image name (and the image it is built on) unless the store has it."""
    base, recipe = BUILDS[name]
    if base in BUILDS and not _have(base):
        ensure(base)
    ensure_built(name, base, recipe, _have)
    if not _have(name):
        raise MissingImageError(name, f"its build ended without it: hutch rootfs build --from {base} "
                                f"--recipe rootfs/{recipe} --name {name}")


def registries(lang: str) -> List[str]:
    """The hosts a session of lang reaches for libraries= besides what the
    policy allows (PyPI and the distribution's archive are there already):
    the language's package registry, as llm-sandbox's containers reach it."""
    language = SupportedLanguage(str(lang).upper())
    if language == SupportedLanguage.R:
        host = urlsplit(os.environ.get("R_REPO", "https://cran.rstudio.com/")).hostname
        return [host] if host else []
    return list(_REGISTRIES.get(language, ()))


_REGISTRIES = {
    SupportedLanguage.JAVASCRIPT: ("registry.npmjs.org",),
    # The compact index and gem files are served from both names.
    SupportedLanguage.RUBY: ("rubygems.org", "index.rubygems.org"),
    # Go's module proxy and checksum database (GOPROXY, GOSUMDB); `direct`
    # fetches from GitHub, which the policy allows.
    SupportedLanguage.GO: ("proxy.golang.org", "sum.golang.org"),
}
