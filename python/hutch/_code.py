"""Sandbox.run_code: a snippet in one of the languages an image may have."""

from __future__ import annotations

import errno
import shlex
import uuid
from typing import Dict, Optional, Sequence, Tuple

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
            if lang not in INSTALLERS:
                raise _hutch.InvalidArgument(f"run_code: no package manager known for {lang}")
            libs = " ".join(shlex.quote(x) for x in libraries)
            r = sb.exec(INSTALLERS[lang].format(prog=shlex.quote(prog), libs=libs), cwd=d, timeout=timeout, env=env)
            if r.exit_code != 0:
                return r
        cmd = LANGS[lang][2].format(prog=shlex.quote(prog), file=file)
        return sb.exec(cmd, cwd=d, timeout=timeout, env=env)
    finally:
        try:
            sb.exec(["rm", "-rf", d], timeout=30)
        except _hutch.Error as e:
            if e.errno != errno.EBADF:
                raise
