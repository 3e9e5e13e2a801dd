# SPDX-License-Identifier: Apache-2.0
"""The three tools' schemas (str_replace_editor_tool, execute_bash_tool,
submit_tool).  With LLM-in-Sandbox installed, its own tools.py is loaded (by
itself: the package, and so its dependencies, is not imported), so a model
sees the descriptions it was trained on; otherwise hutch's own, with the
same names, parameters and order (tests/golden/lis/tools-shape.json)."""

import importlib.util
import os


def _lis_tools():
    try:
        spec = importlib.util.find_spec("llm_in_sandbox")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for d in spec.submodule_search_locations:
        path = os.path.join(d, "tools.py")
        if os.path.isfile(path):
            s = importlib.util.spec_from_file_location("_hutch_lis_tools", path)
            mod = importlib.util.module_from_spec(s)
            s.loader.exec_module(mod)
            return mod
    return None


def _fn(name, desc, props, required):
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": desc,
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


def _p(kind, desc, **more):
    return dict({"type": kind, "description": desc}, **more)


_EDITOR = _fn(
    "str_replace_editor",
    "View, create and edit files.\n"
    "* `view` of a directory lists its subdirectories and its .py and .rst files, two levels deep.\n"
    "* `view` of a file shows it numbered like `cat -n`; only .py and .rst files can be viewed.\n"
    "* `create` writes `file_text` to `path`, replacing any file there.\n"
    "* `str_replace` replaces `old_str`, which must occur exactly once, with `new_str`.\n"
    "* `insert` inserts `new_str` after line `insert_line`.",
    {
        "command": {"enum": ["view", "create", "str_replace", "insert"], "type": "string",
                    "description": "The command: `view`, `create`, `str_replace` or `insert`."},
        "path": _p("string", "Absolute path to a file or directory, e.g. `/testbed/file.py`."),
        "file_text": _p("string", "Content of the file to create (`create`)."),
        "old_str": _p("string", "The exact text to replace (`str_replace`)."),
        "new_str": _p("string", "The replacement (`str_replace`) or the text to insert (`insert`)."),
        "insert_line": _p("integer", "Insert after this line; 0 inserts at the top (`insert`)."),
        "view_range": _p("array", "Lines to show, [start, end]; end -1 to the end (`view`).",
                         items={"type": "integer"}),
    },
    ["command", "path"],
)
_BASH = _fn(
    "execute_bash",
    "Execute a bash command in the terminal. Each call starts a fresh shell in the working directory.",
    {"command": {"type": "string", "description": "The bash command to run."}},
    ["command"],
)
_SUBMIT = _fn("submit", "Submit your work and end the task. No parameters required.", {}, [])

_mod = _lis_tools()
str_replace_editor_tool = getattr(_mod, "str_replace_editor_tool", _EDITOR)
execute_bash_tool = getattr(_mod, "execute_bash_tool", _BASH)
submit_tool = getattr(_mod, "submit_tool", _SUBMIT)
