# SPDX-License-Identifier: Apache-2.0
"""What a live sandbox is beyond its processes and files: its name and
labels, its status, pause and resume (hutch.Sandbox's methods)."""

from __future__ import annotations

import types
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Union

from . import _hutch

Labels = Union[None, Mapping[str, str], Iterable[str]]


def labels_arg(labels: Labels) -> Optional[List[str]]:
    """labels as the runtime takes them: "KEY=VALUE" strings (the runtime
    checks their syntax)."""
    if labels is None:
        return None
    if isinstance(labels, Mapping):
        items = []
        for k, v in labels.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise TypeError(f"labels: keys and values are str, not {type(k).__name__}: {type(v).__name__}")
            items.append(f"{k}={v}")
        return items
    if isinstance(labels, str):
        raise TypeError('labels: a dict, or a list of "KEY=VALUE" strings, not one str')
    return list(labels)


def labels_dict(labels: Optional[List[str]]) -> Dict[str, str]:
    out: Dict[str, str] = {}
    for kv in labels or ():
        k, _, v = kv.partition("=")
        out[k] = v  # a key given twice: the last wins, as in the runtime
    return out


class hybridmethod:
    """A method that is one thing called on an instance and another called
    on the class: ``sb.resume()`` and ``Sandbox.resume("name")``."""

    def __init__(self, on_instance: Callable[..., Any], on_class: Callable[..., Any]):
        self._on_instance = on_instance
        self._on_class = on_class
        self.__doc__ = on_instance.__doc__
        self.__name__ = on_instance.__name__

    def __get__(self, obj: Any, owner: type) -> Callable[..., Any]:
        if obj is None:
            return types.MethodType(self._on_class, owner)
        return types.MethodType(self._on_instance, obj)


_UNKNOWN: Any = object()


class _Lifecycle:
    """hutch.Sandbox's name, labels, status, pause and resume."""

    _h: "_hutch.Sandbox"
    _name: Optional[str] = _UNKNOWN
    _labels: Dict[str, str] = _UNKNOWN

    def _identity(self) -> None:
        # A handle from attach(): the name and labels the sandbox was made
        # with, read once (they do not change while it lives).
        st = self._h.status()
        self._name, self._labels = st["name"], dict(st["labels"])

    @property
    def name(self) -> Optional[str]:
        """Its name (None: it has none); attach() and Sandbox.resume() take it in place of the id."""
        if self._name is _UNKNOWN:
            self._identity()
        return self._name

    @property
    def labels(self) -> Dict[str, str]:
        """Its labels (a copy)."""
        if self._labels is _UNKNOWN:
            self._identity()
        return dict(self._labels)

    def status(self) -> Dict[str, object]:
        """Its entry in hutch.sandboxes(): id, name, labels, state ("running",
        "paused" or "dead"), pause_method (when paused), pid, running, created, image, net_proxy,
        ports, devices, ttl, ttl_left, on_ttl and forked_from (the id of the sandbox it was forked
        from, None when it was not)."""
        return self._h.status()

    @property
    def paused(self) -> bool:
        """Whether it is paused (or being paused)."""
        return self._h.pause_status() is not None

    def pause(self) -> str:
        """Freezes every process of it, its init included: its memory stays,
        it uses no CPU, and nothing inside can undo it.  Returns the method:
        "cgroup" (its cgroup's freezer) or "ptrace" (a host process of hutch's
        holds every task; should it die, the sandbox's processes die with
        it).  While paused, exec(), spawn() and the file calls raise
        hutch.PausedError; close() and destroy() work as ever.  A sandbox
        paused already raises hutch.Error (errno EALREADY)."""
        return self._h.pause()

    def _resume(self) -> None:
        """Lets a paused sandbox go on.  Called on the class,
        ``Sandbox.resume(id_or_name, state_dir=None)`` attaches to the
        sandbox, resumes it and returns the handle (closing that handle
        leaves it running).  A sandbox that is not paused raises
        hutch.InvalidArgument."""
        self._h.resume()

    def _resume_by_name(cls, id: str, *, state_dir: Optional[str] = None, store: Optional[str] = None) -> Any:
        sb = cls.attach(id, state_dir=state_dir, store=store)  # type: ignore[attr-defined]
        try:
            sb._h.resume()
        except BaseException:
            sb.close()
            raise
        return sb

    resume = hybridmethod(_resume, _resume_by_name)
