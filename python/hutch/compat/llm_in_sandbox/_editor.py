# SPDX-License-Identifier: Apache-2.0
"""str_replace_editor as LLM-in-Sandbox 0.2.0 runs it: through the
runtime's run() (so a path reaches the shell unquoted, as there, and a
file's text is what `cat` printed, stderr included), with its texts.
tests/golden/lis/obs holds LLM-in-Sandbox's own results for each case."""

from typing import Any, Dict, List

CONTEXT = 4  # lines shown around an edit
CLIP_AT = 10000  # characters of a result before it is clipped
CLIPPED = (
    "<response clipped><NOTE>To save on context only part of this file has been shown to you. "
    "You should retry this tool after you have searched inside the file with `grep -n` in order to "
    "find the line numbers of what you are looking for.</NOTE>"
)
_VIEWABLE = (".py", ".rst")


def _clip(text: str) -> str:
    return text if len(text) <= CLIP_AT else text[:CLIP_AT] + CLIPPED


def _numbered(lines: List[str], first: int) -> str:
    return "\n".join(f"{n:6}\t{line}" for n, line in enumerate(lines, first))


def _listing(text: str, what: str, first: int = 1) -> str:
    body = _numbered(_clip(text).expandtabs().split("\n"), first)
    return f"Here's the result of running `cat -n` on {what}:\n{body}\n"


def _quote_for_echo(text: str) -> str:
    # Inside single quotes, a quote is closed, given double-quoted, reopened.
    return text.replace("'", "'\"'\"'")


def _write(runtime, path: str, text: str) -> bool:
    _, code = runtime.run(f"echo '{_quote_for_echo(text)}' > {path}")
    return "Error" not in str(code)


def _view(runtime, path: str, params: Dict[str, Any]) -> str:
    kind, _ = runtime.run(f"test -d {path} && echo 'dir' || (test -f {path} && echo 'file' || echo 'notfound')")
    kind = kind.strip()
    if kind == "dir":
        found, _ = runtime.run(
            f"find {path} -maxdepth 2 -not -path '*/.*' \\( -type d -o -name '*.py' -o -name '*.rst' \\) | head -100"
        )
        if not found:
            return f"(empty directory: {path})"
        return f"Here's the files and directories up to 2 levels deep in {path}, excluding hidden:\n{found}"
    if kind != "file":
        return f"Error: Path not found: {path}"
    if not path.endswith(_VIEWABLE):
        return (
            "ERROR: Viewing non-Python files is disallowed for saving context. "
            f"File '{path}' is not a .py or .rst file."
        )
    text, _ = runtime.run(f"cat {path}")
    if not text:
        return f"(empty file: {path})"
    lines = text.expandtabs().split("\n")
    first, shown = 1, lines
    want = params.get("view_range")
    if want and len(want) == 2:
        first, last = want
        if not 1 <= first <= len(lines):
            return f"Error: Invalid view_range {want}: start line must be in [1, {len(lines)}]"
        if last != -1 and (last < first or last > len(lines)):
            return (
                f"Error: Invalid view_range {want}: end must be >= start and <= {len(lines)}, "
                "or -1 to view until end."
            )
        shown = lines[first - 1:] if last == -1 else lines[first - 1:last]
    return _clip(f"Here's the result of running `cat -n` on {path}:\n{_numbered(shown, first)}")


def _create(runtime, path: str, params: Dict[str, Any]) -> str:
    text = str(params.get("file_text", ""))
    out, code = runtime.run(f"mkdir -p $(dirname {path}) && echo '{_quote_for_echo(text)}' > {path}")
    if "Error" in str(code):
        return f"Error creating file: {out}"
    return (
        f"File created at {path}. "
        + _listing(text, str(path))
        + "Review the file and make sure that it is as expected. Edit the file if necessary."
    )


def _str_replace(runtime, path: str, params: Dict[str, Any]) -> str:
    old = params.get("old_str", "")
    new = params.get("new_str", "")
    if not old:
        return "Error: old_str is required for str_replace."
    text, _ = runtime.run(f"cat {path}")
    if not text:
        return f"Error: Could not read file {path}"
    text, old = text.expandtabs(), old.expandtabs()
    new = new.expandtabs() if new else ""
    n = text.count(old)
    if n == 0:
        return f"Error: No occurrences of old_str found in {path} for replacement."
    if n > 1:
        return (
            f"Error: Multiple occurrences ({n}) of old_str found in {path}. "
            "Please ensure it is unique before using str_replace."
        )
    at = text.split(old)[0].count("\n")
    edited = text.replace(old, new, 1)
    if not _write(runtime, path, edited):
        return f"Error writing file: {path}"
    top = max(0, at - CONTEXT)
    bottom = at + CONTEXT + new.count("\n")
    snippet = "\n".join(edited.split("\n")[top:bottom + 1])
    return (
        f"The file {path} has been edited. "
        + _listing(snippet, f"a snippet of {path}", top + 1)
        + "Review the changes and make sure they are as expected. Edit the file again if necessary."
    )


def _insert(runtime, path: str, params: Dict[str, Any]) -> str:
    at = params.get("insert_line", 0)
    new = params.get("new_str", "")
    if not new:
        return "Error: new_str is required for insert."
    text, _ = runtime.run(f"cat {path}")
    text = text.expandtabs() if text else ""
    new = new.expandtabs()
    lines = text.split("\n") if text else []
    if at < 0 or at > len(lines):
        return f"Error: Invalid insert_line {at}. Must be in [0, {len(lines)}]."
    added = new.split("\n")
    if not _write(runtime, path, "\n".join(lines[:at] + added + lines[at:])):
        return f"Error writing file: {path}"
    around = lines[max(0, at - CONTEXT):at] + added + lines[at:at + CONTEXT]
    return (
        f"The file {path} has been edited. "
        + _listing("\n".join(around), "a snippet of the edited file", max(1, at - CONTEXT + 1))
        + "Review the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). "
        "Edit the file again if necessary."
    )


_COMMANDS = {"view": _view, "create": _create, "str_replace": _str_replace, "insert": _insert}


def run_editor(runtime, params: Dict[str, Any]) -> str:
    command = params.get("command", "")
    path = params.get("path", "")
    if not command or not path:
        return "Error: command and path are required."
    fn = _COMMANDS.get(command) if isinstance(command, str) else None
    if fn is None:
        return f"Unknown command: {command}"
    return fn(runtime, path, params)
