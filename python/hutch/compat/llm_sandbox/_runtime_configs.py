# SPDX-License-Identifier: Apache-2.0
"""runtime_configs (the Docker-style container settings llm-sandbox passes
to its backend) as hutch.Sandbox options: each key is honoured or refused
with ValidationError naming it; none is ignored."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Tuple

from .exceptions import ValidationError

# Docker's own switches that change nothing about a hutch sandbox's
# isolation or resources (a hutch sandbox has no terminal and is always
# "detached"; it is removed when the session closes).
_NO_OPS = {"detach", "tty", "stdin_open", "auto_remove", "remove"}
_ROOT_USERS = {"", "root", "0", "0:0", "root:root", "root:0", "0:root"}
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def _refuse(key: str, why: str) -> ValidationError:
    return ValidationError(f"runtime_configs[{key!r}]: {why}")


def memory_bytes(key: str, value: Any) -> int:
    """Docker's memory sizes: bytes, or "512m", "1g", "1GB", "2GiB"."""
    if isinstance(value, bool):
        raise _refuse(key, f"a size, not {value!r}")
    if isinstance(value, int) and value > 0:
        return value
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([bkmgt]?)(?:i?b)?\s*", str(value), re.IGNORECASE)
    if not m or float(m.group(1)) <= 0:
        raise _refuse(key, f"a size such as 512m or 2g, not {value!r}")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def _positive(key: str, value: Any) -> float:
    try:
        n = float(value)
    except (TypeError, ValueError):
        n = 0.0
    if isinstance(value, bool) or n <= 0:
        raise _refuse(key, f"a positive number, not {value!r}")
    return n


_USER = re.compile(r"[A-Za-z0-9._$-]{1,32}(:[A-Za-z0-9._$-]{1,32})?")


def _user(options: Dict[str, Any], value: Any) -> None:
    """Docker's user ("1000:1000", "nobody", 1000): every process of the
    sandbox runs as it (hutch.Sandbox(user=)); root is what it runs as anyway."""
    text = str(value).strip()
    if text == "" and not isinstance(value, bool):
        return  # Docker's "": the image's default, root here
    if isinstance(value, bool) or not _USER.fullmatch(text):
        raise _refuse("user", f"USER[:GROUP], each a number or a name, not {value!r}")
    if text.lower() not in _ROOT_USERS:
        options["user"] = text


def _env(value: Any) -> Dict[str, str]:
    if isinstance(value, Mapping):
        return {str(k): str(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        env = {}
        for item in value:
            k, sep, v = str(item).partition("=")
            if not sep or not k:
                raise _refuse("environment", f"entries are KEY=VALUE, not {item!r}")
            env[k] = v
        return env
    raise _refuse("environment", f"a dict or a list of KEY=VALUE, not {type(value).__name__}")


def _volumes(value: Any) -> List[Tuple[str, str, bool]]:
    binds: List[Tuple[str, str, bool]] = []
    if isinstance(value, Mapping):
        for src, spec in value.items():
            if isinstance(spec, Mapping) and "bind" in spec:
                mode = str(spec.get("mode", "rw"))
                binds.append((str(src), str(spec["bind"]), mode.split(",")[0] == "ro"))
            else:
                raise _refuse("volumes", f"{src!r}: {{'bind': PATH, 'mode': 'ro'|'rw'}} expected, not {spec!r}")
        return binds
    if isinstance(value, (list, tuple)):
        for item in value:
            parts = str(item).split(":")
            if len(parts) not in (2, 3) or not parts[0].startswith("/"):
                raise _refuse("volumes", f"HOST_PATH:PATH[:ro|rw] expected, not {item!r} (named volumes do not exist here)")
            binds.append((parts[0], parts[1], len(parts) == 3 and parts[2] == "ro"))
        return binds
    raise _refuse("volumes", f"a dict or a list, not {type(value).__name__}")


def _mounts(value: Any) -> List[Tuple[str, str, bool]]:
    binds = []
    for m in value if isinstance(value, (list, tuple)) else [value]:
        if not isinstance(m, Mapping):
            raise _refuse("mounts", f"a mount is a dict (docker.types.Mount), not {type(m).__name__}")
        kind = str(m.get("Type", m.get("type", "bind")))
        src, dst = m.get("Source", m.get("source")), m.get("Target", m.get("target"))
        if kind != "bind" or not src or not dst:
            raise _refuse("mounts", f"only bind mounts of a host path exist here, not {dict(m)!r}")
        binds.append((str(src), str(dst), bool(m.get("ReadOnly", m.get("read_only", False)))))
    return binds


def _network(options: Dict[str, Any], value: Any) -> None:
    mode = str(value)
    if mode == "none":
        options["net"] = "none"
    elif mode in ("bridge", "default"):
        options["net"] = "proxy"
    else:
        raise _refuse(
            "network_mode",
            f"{value!r}: a hutch sandbox has no network ('none') or reaches the hosts of its policy's allowlist "
            "through hutch's proxy ('bridge'); there is no host network",
        )


def _security_opt(value: Any) -> None:
    for opt in value if isinstance(value, (list, tuple)) else [value]:
        if str(opt).replace("=", ":") not in ("no-new-privileges", "no-new-privileges:true"):
            raise _refuse(
                "security_opt",
                f"{opt!r}: every hutch process has no_new_privs, no capabilities and hutch's seccomp filter; "
                "only 'no-new-privileges' (already in force) is taken",
            )


def pod_identity(manifest: Any) -> Optional[str]:
    """The user a Kubernetes pod manifest runs its container as
    (securityContext runAsUser, runAsGroup; the container's over the pod's),
    as hutch.Sandbox's user=, or None (root)."""
    if not isinstance(manifest, Mapping):
        return None
    spec = manifest.get("spec") or {}
    containers = spec.get("containers") or [{}]
    pod_ctx = spec.get("securityContext") or {}
    ctx = (containers[0] if isinstance(containers[0], Mapping) else {}).get("securityContext") or {}
    uid = ctx.get("runAsUser", pod_ctx.get("runAsUser"))
    gid = ctx.get("runAsGroup", pod_ctx.get("runAsGroup"))
    for key, value in (("runAsUser", uid), ("runAsGroup", gid)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise ValidationError(f"pod_manifest securityContext {key}: a uid or gid, not {value!r}")
    if uid is None and gid is None:
        return None
    # No runAsUser: the image's user, root here.
    user = str(uid) if gid is None else f"{uid or 0}:{gid}"
    return None if user in _ROOT_USERS else user


def sandbox_options(configs: Optional[Mapping[str, Any]]) -> Tuple[Dict[str, Any], Optional[float]]:
    """(keyword arguments for hutch.Sandbox, the default execution timeout
    runtime_configs['timeout'] sets or None)."""
    options: Dict[str, Any] = {"net": "proxy"}
    env: Dict[str, str] = {}
    binds: List[Tuple[str, str, bool]] = []
    timeout: Optional[float] = None
    period = quota = None
    for key, value in (configs or {}).items():
        if key == "user":
            _user(options, value)
        elif key in ("mem_limit", "memory"):
            options["memory"] = memory_bytes(key, value)
        elif key == "cpu_count":
            options["cpus"] = _positive(key, value)
        elif key == "nano_cpus":
            options["cpus"] = _positive(key, value) / 1e9
        elif key == "cpu_period":
            period = _positive(key, value)
        elif key == "cpu_quota":
            quota = _positive(key, value)
        elif key == "pids_limit":
            options["pids"] = int(_positive(key, value))
        elif key == "read_only":
            if not isinstance(value, bool):
                raise _refuse("read_only", f"True or False, not {value!r}")
            if value:
                options["read_only"] = True
        elif key == "privileged":
            if value:
                raise _refuse("privileged", "hutch sandboxes never have privileges")
        elif key == "network_mode":
            _network(options, value)
        elif key == "network_disabled":
            if value:
                options["net"] = "none"
        elif key == "cap_drop":
            pass  # every capability is already dropped: a superset of any list
        elif key == "cap_add":
            if value:
                raise _refuse("cap_add", "hutch sandboxes have no capabilities, and none can be added")
        elif key == "security_opt":
            _security_opt(value)
        elif key == "timeout":
            timeout = _positive(key, value)
        elif key == "environment":
            env.update(_env(value))
        elif key == "volumes":
            binds += _volumes(value)
        elif key == "mounts":
            binds += _mounts(value)
        elif key == "hostname":
            options["hostname"] = str(value)
        elif key == "labels":
            options["labels"] = dict(value)
        elif key in _NO_OPS:
            pass
        else:
            raise _refuse(key, "not a setting hutch knows; nothing was started")
    if period or quota:
        if not (period and quota):
            raise _refuse("cpu_quota", "cpu_quota and cpu_period go together")
        options["cpus"] = quota / period
    if env:
        options["env"] = env
    if binds:
        options["binds"] = binds
    return options, timeout
