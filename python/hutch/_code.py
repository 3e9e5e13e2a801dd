# SPDX-License-Identifier: Apache-2.0
"""Sandbox.run_code: a snippet in one of the languages an image may have."""

from __future__ import annotations

import errno
import json
import os
import shlex
import time
import uuid
from typing import Dict, List, Optional, Sequence, Tuple

from . import _hutch

# lang -> (file name, the programs to look for, the command run in the
# snippet's directory; {prog} is the program found, {file} the snippet)
LANGS: Dict[str, Tuple[str, Sequence[str], str]] = {
    "python": ("main.py", ("python3", "python"), "{prog} main.py"),
    "bash": ("main.sh", ("bash",), "{prog} main.sh"),
    "sh": ("main.sh", ("sh",), "{prog} main.sh"),
    "node": ("main.js", ("node", "nodejs"), "{prog} main.js"),
    "javascript": ("main.js", ("node", "nodejs"), "{prog} main.js"),
    "c": ("main.c", ("gcc", "cc", "clang"), "{prog} -O1 -o main main.c -lm && ./main"),
    "cpp": ("main.cpp", ("g++", "c++", "clang++"), "{prog} -O1 -o main main.cpp && ./main"),
    "go": ("main.go", ("go",), "{prog} run main.go"),
    "java": ("Main.java", ("java",), "{prog} Main.java"),
    "ruby": ("main.rb", ("ruby",), "{prog} main.rb"),
    "r": ("main.R", ("Rscript",), "{prog} main.R"),
}
ALIASES = {"py": "python", "python3": "python", "js": "node", "c++": "cpp", "golang": "go", "rb": "ruby", "R": "r"}

# How libraries are installed, per language (through the sandbox's network:
# net="proxy" with the package index in its allowlist).
INSTALLERS: Dict[str, str] = {
    "python": "{prog} -m pip install --quiet --disable-pip-version-check {libs}",
    "node": "npm install --silent --no-audit --no-fund {libs}",
    "javascript": "npm install --silent --no-audit --no-fund {libs}",
    "ruby": "gem install --no-document {libs}",
    "r": "Rscript -e 'install.packages(commandArgs(TRUE), repos=\"https://cloud.r-project.org\")' {libs}",
    "go": "go mod init snippet >/dev/null 2>&1; go get {libs}",
}
# What the installers run with, before the caller's env (which may override
# it).  pip refuses a distribution's own python (PEP 668, "externally
# managed", as Debian's is) without being told: the sandbox is disposable,
# and the snippet runs with that same python.
INSTALL_ENV: Dict[str, Sequence[str]] = {
    "python": ("PIP_BREAK_SYSTEM_PACKAGES=1", "PIP_NO_INPUT=1"),
}


#: How much of the proxy's audit log is read for the hosts it refused
#: during an installation.
MAX_LOG_READ = 1 << 20


class LibraryError(_hutch.Error):
    """Installing run_code's libraries failed: result is the installer's
    Result; refused lists the "host:port" the sandbox's proxy refused
    meanwhile (a package index missing from its allowlist)."""

    def __init__(self, message: str, hint: str, result, refused: List[str]):
        super().__init__(message)
        self.errno, self.message, self.hint = None, message, hint
        self.result, self.refused = result, refused

    def __str__(self) -> str:
        return f"{self.message} (hint: {self.hint})"


def _log_size(log: Optional[str]) -> int:
    try:
        return os.stat(log).st_size if log else 0
    except OSError:
        return 0


def _refused(log: Optional[str], start: int) -> List[str]:
    """The "host:port" the proxy refused since offset start of its audit
    log (written by hutch's proxy; the names in it are the sandbox's, so
    they are only reported)."""
    if not log:
        return []
    try:
        with open(log, "rb") as f:
            f.seek(start)
            data = f.read(MAX_LOG_READ)
    except OSError:
        return []
    out: List[str] = []
    for line in data.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict) and rec.get("decision") == "refuse":
            where = f"{rec.get('host')}:{rec.get('port')}"
            # Why, when it is not the allowlist: a reserved address, say.
            why = rec.get("error")
            if isinstance(why, str) and why and "allowlist" not in why:
                where += f" ({why[:200]})"
            if where not in out:
                out.append(where)
    return out


def refused_text(refused: List[str]) -> str:
    """What the proxy's refusals were, for an installation's error."""
    if all("(" not in r for r in refused):
        return f"the sandbox's proxy refused {', '.join(refused)}, not in its allowlist"
    return f"the sandbox's proxy refused {', '.join(refused)}"


def install(sb, lang: str, prog: str, libraries: Sequence[str], cwd: Optional[str], timeout, env):
    """Installs libraries with the language's package manager, through the
    sandbox's network; raises LibraryError saying why when that fails."""
    if lang not in INSTALLERS:
        raise _hutch.InvalidArgument(f"run_code: no package manager known for {lang}")
    libs = " ".join(shlex.quote(x) for x in libraries)
    log = sb._h.proxy_log()
    start = _log_size(log)
    ienv = list(INSTALL_ENV.get(lang, ())) + list(env or ())
    r = sb.exec(INSTALLERS[lang].format(prog=shlex.quote(prog), libs=libs), cwd=cwd, timeout=timeout, env=ienv)
    if r.exit_code == 0:
        return r
    what = f"run_code: installing {', '.join(libraries)} for {lang} failed ({r.failure or f'exit {r.exit_code}'})"
    refused = _refused(log, start)
    if log and not refused and not r.timed_out:
        time.sleep(0.2)  # the proxy logs a request once its connection is closed
        refused = _refused(log, start)
    if refused:
        what += ": " + refused_text(refused)
        if all("(" not in r for r in refused):
            hint = f"add the package index to the allowlist: Sandbox(..., net=\"proxy\", allow=[{refused[0]!r}, ...])"
        else:
            hint = "the proxy said why; hutch-policy(5) says which hosts and addresses a sandbox may reach"
    elif not log:
        what += ": the sandbox has no network"
        hint = 'libraries are installed through the proxy: Sandbox(..., net="proxy", allow=[the package index])'
    else:
        # The installer's words are the sandbox's: escaped, so that a
        # printed error cannot drive the terminal it is shown on.
        tail = [_escape(x) for x in r.stderr.decode("utf-8", "replace").strip().splitlines()[-3:]]
        what += (": " + " / ".join(tail)) if tail else ""
        hint = "see the installer's output in the error's result.stderr"
    raise LibraryError(what, hint, r, refused)


def _escape(text: str) -> str:
    """text with C0 and C1 control characters (and DEL) as \\xNN escapes."""
    return "".join(c if c.isprintable() or c == " " else f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}" for c in text)


def resolve(lang: str) -> str:
    key = ALIASES.get(lang, lang.lower())
    if key not in LANGS:
        raise _hutch.InvalidArgument(f"run_code: unknown language {lang!r} (one of {', '.join(sorted(LANGS))})")
    return key


def find_program(sb, lang: str) -> str:
    """The first of the language's programs on the sandbox's PATH."""
    progs = LANGS[lang][1]
    r = sb.exec(" || ".join(f"command -v {shlex.quote(p)}" for p in progs), timeout=30)
    found = r.stdout.decode("utf-8", "replace").strip().splitlines()
    if r.exit_code != 0 or not found:
        raise _hutch.NotFoundError(
            f"run_code: the sandbox's image has no {lang} ({' or '.join(progs)} not on its PATH); "
            f"use an image with {lang}, e.g. one built with `hutch rootfs build`"
        )
    return found[0]


def run_code(sb, code: str, lang: str, libraries: Optional[Sequence[str]], timeout: Optional[float], env):
    lang = resolve(lang)
    prog = find_program(sb, lang)
    d = f"/tmp/hutch-code-{uuid.uuid4().hex[:12]}"
    file = LANGS[lang][0]
    sb.write_file(f"{d}/{file}", code)
    try:
        if libraries:
            install(sb, lang, prog, libraries, d, timeout, env)
        cmd = LANGS[lang][2].format(prog=shlex.quote(prog), file=file)
        return sb.exec(cmd, cwd=d, timeout=timeout, env=env)
    finally:
        try:
            sb.exec(["rm", "-rf", d], timeout=30)
        except _hutch.Error as e:
            if e.errno != errno.EBADF:
                raise
