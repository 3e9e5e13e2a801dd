# SPDX-License-Identifier: Apache-2.0
"""Where hutch's own files (policies/) are for this build of the package,
found as the hutch command finds them.

The runtime library knows its build's data directory (compiled in) and,
like the hutch command, reads $HUTCH_POLICY.  What it cannot know is where
this package was built from: setup.py writes that into hutch/_config.py
(the installed hutch's data directory that pkg-config named, or the
checkout).  So, with no policy named:
  - run from the build tree it was built in (python/build/lib, as the hutch
    command run from its build tree), the checkout's policies/;
  - else the runtime's own default (the administrator's copy in
    SYSCONFDIR/hutch, else the build's data directory), when it is there;
  - else the installed data directory pkg-config named at build time (an
    installation moved since, or DESTDIR), then the checkout's policies/.
Only those configure- and build-time places count: never a file that
merely lies beside the package."""

from __future__ import annotations

import os
from typing import Optional

from . import _hutch

try:
    from . import _config  # type: ignore[attr-defined]
except ImportError:  # a package not built by setup.py
    _config = None  # type: ignore[assignment]

POLICY = os.path.join("policies", "default.policy")
HERE = os.path.dirname(os.path.abspath(__file__))


def _conf(name: str) -> Optional[str]:
    return getattr(_config, name, None) if _config is not None else None


def _inside(path: str, top: Optional[str]) -> bool:
    if not top:
        return False
    top = os.path.realpath(top)
    return os.path.commonpath([os.path.realpath(path), top]) == top


def _policy_in(datadir: Optional[str]) -> Optional[str]:
    if not datadir:
        return None
    p = os.path.join(datadir, POLICY)
    return p if os.path.isfile(p) else None


def run_from_build_tree() -> bool:
    """This package is the one its build tree built (python/build/lib)."""
    return _conf("RUNTIME") == "checkout" and _inside(HERE, _conf("BUILDDIR"))


def default_policy() -> Optional[str]:
    """The policy a Sandbox takes when none is named: None leaves it to the
    runtime ($HUTCH_POLICY, the administrator's, the build's), else a path
    it cannot know of itself.  When there is none anywhere, None too: the
    runtime then says which file is missing."""
    if os.environ.get("HUTCH_POLICY", "").startswith("/"):
        return None
    if run_from_build_tree():
        tree = _policy_in(_conf("SRCDIR"))
        if tree:
            return tree
    try:
        _hutch.default_policy_path()
        return None
    except _hutch.NotFoundError:
        pass
    for d in (_conf("DATADIR"), _conf("SRCDIR")):
        p = _policy_in(d)
        if p:
            return p
    return None


def use_build_tree_init() -> None:
    """A package built from a checkout links the runtime statically and
    finds no hutch-init where the library looks (beside the program, which
    is python3, or the configured LIBEXECDIR, not installed): its sandboxes'
    init would then stay a fork of Python, which an unprivileged user cannot
    pause.  The build tree it was built from has one; an installed package
    uses the installed library, which finds its own."""
    if _conf("RUNTIME") != "checkout":
        return
    init = os.path.join(_conf("BUILDDIR") or "", "hutch-init")
    if os.path.isfile(init) and os.access(init, os.X_OK):
        _hutch.set_init_program(init)

