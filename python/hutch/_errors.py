# SPDX-License-Identifier: Apache-2.0
"""The runtime's messages and hints as a Python caller reads them.

The runtime library words its hints for the hutch command ("or pass
--no-cgroups to use rlimits"); a Python caller passes arguments instead:
pythonize() spells each of the command's options that hutch.Sandbox takes
as its argument ("no_cgroups=True"), and a command this package does with a
call of its own (`hutch resume ID`, `hutch rm ID`, `hutch ps`) as that call.
Any other command line quoted whole for the shell (`hutch rootfs build
...`) is left as it is: it is to be run."""

from __future__ import annotations

import re
from typing import Optional

# The command's option -> hutch.Sandbox's argument, and whether that takes
# a list.  Options with no argument here (--memory-swap, --overlay, --keep,
# --cgroup-parent, ...) are left as they are.
_ARGS = {
    "memory": ("memory", False),
    "cpus": ("cpus", False),
    "pids": ("pids", False),
    "disk": ("disk", False),
    "net": ("net", False),
    "allow": ("allow", True),
    "resolve": ("resolve", True),
    "bind": ("binds", True),
    "env": ("env", True),
    "net-policy": ("net_policy", False),
    "policy": ("policy", False),
    "store": ("store", False),
    "state-dir": ("state_dir", False),
    "workdir": ("workdir", False),
    "hostname": ("hostname", False),
    "timeout": ("timeout", False),
}
# An option and what follows it: "proxy"/"none" (--net only), a quoted
# value, or a placeholder in capitals (FILE, DIR, HOST[:PORT]).
_OPTION = re.compile(
    r"(?<![\w-])--(?P<name>no-cgroups|" + "|".join(re.escape(n) for n in sorted(_ARGS, key=len, reverse=True)) + r")"
    r"(?![\w-])"
    r"(?: (?P<word>proxy|none)(?![\w-])| (?P<quoted>\"[^\"\n]*\")| (?P<ph>[A-Z][A-Z_]*(?:\[[^\]\s]*\])?)(?![\w-]))?"
)
# `...` spans: a hutch command line is left whole, unless this package has
# the same call (the verbs of a live sandbox: its name or id is kept).
_QUOTED = re.compile(r"(`[^`]*`)")
_COMMANDS = [
    (re.compile(r"^`hutch resume (\S+)`$"), r'`hutch.Sandbox.resume("\1")`'),
    (re.compile(r"^`hutch pause (\S+)`$"), r'`hutch.Sandbox.attach("\1").pause()`'),
    (re.compile(r"^`hutch pause`$"), "`pause()`"),
    (re.compile(r"^`hutch rm (\S+)`$"), r'`hutch.Sandbox.attach("\1").destroy()`'),
    (re.compile(r"^`hutch ps`$"), "`hutch.sandboxes()`"),
]


def _command(span: str) -> str:
    for pattern, call in _COMMANDS:
        if pattern.match(span):
            return pattern.sub(call, span)
    return span


def _option(m: "re.Match[str]") -> str:
    name = m.group("name")
    if name == "no-cgroups":
        return "no_cgroups=True"
    arg, is_list = _ARGS[name]
    word, quoted, ph = m.group("word"), m.group("quoted"), m.group("ph")
    if name == "net" and word:
        return f'net="{word}"'
    if word:  # "proxy"/"none" after another option: not its value
        value, rest = "...", f" {word}"
    elif quoted or ph:
        value, rest = quoted or ph, ""
    else:
        value, rest = "...", ""
    return f"{arg}=[{value}]{rest}" if is_list and value != "..." else f"{arg}={value}{rest}"


def pythonize(text: Optional[str]) -> Optional[str]:
    """text with the command's options spelled as hutch.Sandbox's arguments."""
    if not text or ("--" not in text and "`hutch " not in text):
        return text
    parts = _QUOTED.split(text)
    for i, part in enumerate(parts):
        if i % 2 == 1 and part[1:].lstrip().startswith("hutch"):
            parts[i] = _command(part)
            continue
        parts[i] = _OPTION.sub(_option, part)
    return "".join(parts)


def error_str(self: BaseException) -> str:
    """str() of a hutch.Error: what failed, then on a line of its own the
    hint on how to fix it, as the hutch command prints them."""
    text = BaseException.__str__(self)
    hint = getattr(self, "hint", None)
    return f"{text}\nhint: {hint}" if hint else text
