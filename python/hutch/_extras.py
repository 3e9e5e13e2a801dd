# SPDX-License-Identifier: Apache-2.0
"""What a live sandbox has beyond its processes and files: a time limit
(ttl), published ports and devices, given to hutch.Sandbox(...), and the
calls that go with them: set_ttl, url and snapshot."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

from . import _hutch

#: A published port: the sandbox's port (any free host port on 127.0.0.1),
#: "[ADDR:]HOSTPORT:PORT" as ``hutch create -p`` takes it, or a tuple
#: (port,), (host_port, port), (host_addr, host_port, port).
PortSpec = Union[int, str, Tuple[Any, ...]]


@dataclass(frozen=True)
class Snapshot:
    """An image made of a live sandbox's writable layer (Sandbox.snapshot):
    ``hutch.Sandbox(image=snap)`` and ``sb.reset(to=snap)`` take it.  size
    is the layer's bytes of file content, files its entries; paused_seconds
    how long the copy kept the sandbox paused (0 when it was paused
    already)."""

    name: Optional[str]
    digest: str
    size: int
    files: int
    paused_seconds: float
    pause_method: str
    was_paused: bool

    @property
    def image(self) -> str:
        """What names it in the store: its name, else its digest."""
        return self.name or self.digest

    def __str__(self) -> str:
        return self.image


def image_arg(image: Union[str, Snapshot, None]) -> Optional[str]:
    """An image argument, a Snapshot included, as the runtime takes it."""
    if isinstance(image, Snapshot):
        return image.image
    if image is not None and not isinstance(image, str):
        raise TypeError(f"image: a str or a hutch.Snapshot, not {type(image).__name__}")
    return image


def _port_number(v: Any, what: str, low: int) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, str)):
        raise TypeError(f"ports: {what} {v!r} is not a number")
    try:
        n = int(v)
    except ValueError:
        raise ValueError(f"ports: {what} {v!r} is not a number") from None
    if not low <= n <= 65535:
        raise ValueError(f"ports: {what} {n} is out of range ({low} to 65535)")
    return n


def _port(spec: PortSpec) -> Tuple[Optional[str], int, int]:
    if isinstance(spec, bool):
        raise TypeError("ports: a port is an int, a str or a tuple, not a bool")
    if isinstance(spec, int):
        return (None, 0, _port_number(spec, "port", 1))
    if isinstance(spec, str):
        # "[ADDR:]HOSTPORT:PORT"; an IPv6 address in brackets.
        if spec.startswith("["):
            addr, sep, rest = spec[1:].partition("]:")
            if not sep:
                raise ValueError(f"ports: {spec!r}: [ADDR]:HOSTPORT:PORT")
            parts: List[Any] = [addr] + rest.split(":")
        else:
            parts = spec.split(":")
            if len(parts) == 2:
                parts = [None] + parts
        if len(parts) != 3:
            raise ValueError(f"ports: {spec!r}: [ADDR:]HOSTPORT:PORT")
        spec = tuple(parts)
    items = tuple(spec)
    if len(items) == 1:
        return (None, 0, _port_number(items[0], "port", 1))
    if len(items) == 2:
        return (None, _port_number(items[0], "host port", 0), _port_number(items[1], "port", 1))
    if len(items) == 3:
        addr = items[0]
        if addr is not None and not isinstance(addr, str):
            raise TypeError(f"ports: a host address is a str, not {type(addr).__name__}")
        return (addr or None, _port_number(items[1], "host port", 0), _port_number(items[2], "port", 1))
    raise ValueError(f"ports: {spec!r}: (port,), (host_port, port) or (host_addr, host_port, port)")


def ports_arg(ports: Optional[Iterable[PortSpec]]) -> Optional[List[Tuple[Optional[str], int, int]]]:
    if ports is None:
        return None
    if isinstance(ports, (int, str)):
        ports = [ports]
    return [_port(p) for p in ports]


def devices_arg(devices: Optional[Sequence[str]]) -> Optional[List[str]]:
    if devices is None:
        return None
    if isinstance(devices, str):
        return [devices]
    return list(devices)


def ttl_arg(ttl: Optional[float]) -> float:
    if ttl is None:
        return 0.0
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        raise TypeError(f"ttl: seconds, not {type(ttl).__name__}")
    if not ttl > 0:
        raise ValueError("ttl: seconds > 0 (None: no time limit)")
    return float(ttl)


def on_ttl_arg(on_ttl: str) -> bool:
    if on_ttl not in ("remove", "pause"):
        raise ValueError(f"on_ttl must be 'remove' or 'pause', not {on_ttl!r}")
    return on_ttl == "pause"


def host_address(addr: str, port: int) -> str:
    """ADDR:PORT a client connects to: an address that listens everywhere is
    reached on loopback; an IPv6 address goes in brackets."""
    if addr in ("", "0.0.0.0"):
        addr = "127.0.0.1"
    elif addr == "::":
        addr = "::1"
    return f"[{addr}]:{port}" if ":" in addr else f"{addr}:{port}"


class _ExtrasMixin:
    """hutch.Sandbox's ttl, ports and snapshots."""

    _h: "_hutch.Sandbox"

    def set_ttl(self, seconds: Optional[float]) -> None:
        """Its time limit, from now (while it is paused: from its resume),
        keeping what it does when it runs out ("remove" unless it was made
        with on_ttl="pause"); None or 0 clears it."""
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, (int, float))):
            raise TypeError(f"set_ttl: seconds, not {type(seconds).__name__}")
        self._h.set_ttl(float(seconds or 0))

    @property
    def ttl_left(self) -> Optional[float]:
        """Seconds until its time limit runs out (None: it has none)."""
        return self._h.status()["ttl_left"]

    def ports(self) -> List[dict]:
        """Its published ports: host_addr, host_port (as chosen, when it was
        0) and port (on its loopback)."""
        return self._h.status()["ports"]

    def url(self, port: int, scheme: Optional[str] = None) -> str:
        """Where the host reaches the sandbox's published port: "ADDR:PORT"
        (with scheme: "SCHEME://ADDR:PORT").  hutch.NotFoundError when that
        port is not published."""
        port = _port_number(port, "port", 1)
        for p in self.ports():
            if p["port"] == port:
                where = host_address(p["host_addr"], p["host_port"])
                return f"{scheme}://{where}" if scheme else where
        raise _hutch.NotFoundError(
            f"sandbox {self._h.id}: port {port} is not published (hutch.Sandbox(ports=[{port}]) publishes it)"
        )

    def snapshot(self, name: Optional[str] = None) -> Snapshot:
        """Its writable layer as an image in its image's store, without
        stopping it (it is paused while the layer is copied): what it
        changed on top of its image, not /tmp, /dev/shm or its binds, and
        not its env or workdir (an image is files, which outlive the
        sandbox: ``reset(to=snap)`` keeps its env, ``fork()`` its whole
        configuration).
        ``name`` names the image (a name another image has moves to this
        one, as ``hutch rootfs tag`` moves it); unnamed, its digest names
        it.  Returns a hutch.Snapshot, which
        ``hutch.Sandbox(image=...)`` and ``reset(to=...)`` take;
        ``hutch.remove_image(snap.image)`` removes it."""
        if name is not None and not isinstance(name, str):
            raise TypeError(f"name: a str, not {type(name).__name__}")
        return Snapshot(**self._h.snapshot(name))
