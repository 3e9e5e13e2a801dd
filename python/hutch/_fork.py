# SPDX-License-Identifier: Apache-2.0
"""Sandbox.fork: new live sandboxes that start from a live one's files (hutch-exec(1), FORK)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Sequence

from ._extras import on_ttl_arg, ttl_arg
from ._lifecycle import Labels, labels_arg

if TYPE_CHECKING:
    from . import _hutch
    from ._sandbox import Sandbox


def count_arg(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"fork: n is an int, not {type(n).__name__}")
    return n


class _ForkMixin:
    _h: "_hutch.Sandbox"

    def fork(
        self,
        n: int = 1,
        *,
        names: Optional[Sequence[str]] = None,
        labels: Labels = None,
        ttl: Optional[float] = None,
        on_ttl: str = "remove",
    ) -> List["Sandbox"]:
        """n new sandboxes (1 to hutch.FORK_MAX) that start from this one's
        files: each gets a copy of its writable layer, taken while it is
        paused for the copy (a paused sandbox stays paused), and the
        configuration it was created with (image, environment, binds,
        limits, network, policy).  Not carried: its /tmp and /dev/shm, its
        processes, its name, labels, time limit and published ports.  Each
        child is independent of this one and of the others: no write of one
        reaches another.  ``names`` names the first children, ``labels``,
        ``ttl`` and ``on_ttl`` are every child's, as hutch.Sandbox(...)
        takes them.  Returns the children as hutch.Sandbox handles that own
        them: closing one destroys it, as for a sandbox made here.  All or
        nothing: when one cannot start, none is left.  Raises
        hutch.InvalidArgument for n out of range, hutch.ExistsError for a
        name taken."""
        from ._sandbox import _reaper

        if isinstance(names, str):
            raise TypeError("fork: names is a list of str, not one str")
        label_list = labels_arg(labels)
        name_list = None if names is None else list(names)
        _reaper.ready()
        handles = self._h.fork(count_arg(n), name_list, label_list, ttl_arg(ttl), on_ttl_arg(on_ttl))
        names_given = name_list or []
        adopt = self._adopt  # type: ignore[attr-defined]
        return [adopt(h, names_given[i] if i < len(names_given) else None, label_list) for i, h in enumerate(handles)]
