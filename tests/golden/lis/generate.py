#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the golden tool results of LLM-in-Sandbox 0.2.0 for hutch's tests.

Usage: generate.py LIS_CHECKOUT [OUTDIR]

LIS_CHECKOUT is a checkout of github.com/llm-in-sandbox/llm-in-sandbox at
tag v0.2.0 (the directory holding llm_in_sandbox/).  OUTDIR defaults to the
directory of this script.  See README for how the committed files were made.

LIS's own code produces every string: its package is imported unchanged and
each case goes through Agent.parse_response and Agent._execute_action (the
editor is Agent._execute_str_replace_editor, the results observation.py's
Observation).  Only imports that play no part in those strings are stubbed:
litellm and rich (the LLM client and the console), pydantic (the trajectory
record) and docker (the container API).  The container is replaced by a
stand-in whose exec_run runs the command LIS built (["bash", "-c",
"timeout 120 bash -c ..."]) with bubblewrap in a throwaway root made of the
host's /usr and /etc with /testbed and /root bound to scratch directories,
so LIS's DockerRuntime.run and demux_run do their usual work on its output.
Run it on a host like LIS's image (Debian 12, bash 5.2, GNU coreutils).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))

# ---- stubs for the imports that do not shape any string ----


def stub(name, **attrs):
    mod = types.ModuleType(name)
    mod.__dict__.update(attrs)
    sys.modules[name] = mod
    return mod


class _Anything:
    def __init__(self, *a, **k):
        pass

    def __getattr__(self, name):
        return lambda *a, **k: None


stub("litellm", drop_params=False, completion=None, token_counter=None)
stub("rich")
stub("rich.console", Console=_Anything)
stub("rich.panel", Panel=_Anything)
stub("rich.text", Text=_Anything)
stub("rich.markup", escape=lambda s: s)


stub("rich.logging", RichHandler=lambda *a, **k: __import__("logging").NullHandler())
if "pydantic" not in sys.modules:
    try:
        import pydantic  # noqa: F401
    except ImportError:
        class BaseModel:
            def __init__(self, **kw):
                self.__dict__.update(kw)

        stub("pydantic", BaseModel=BaseModel, Field=lambda default=None, default_factory=None, **k: (
            default_factory() if default_factory else default))
stub("docker", from_env=None, errors=types.SimpleNamespace(NotFound=Exception, ImageNotFound=Exception))

# ---- the container stand-in ----


class ExecResult:
    def __init__(self, output, exit_code):
        self.output = output
        self.exit_code = exit_code


class Container:
    """exec_run as docker's: the command in the container's root and
    environment, stdout and stderr apart (demux) or together."""

    def __init__(self, state):
        self.state = state
        for d in ("testbed/input", "testbed/output", "root"):
            os.makedirs(os.path.join(state, d), exist_ok=True)

    def exec_run(self, cmd, workdir="/testbed", environment=None, demux=False):
        env = {"HOME": "/root", "LANG": "C.UTF-8"}  # the python:3.11-slim image's
        env.update(environment or {})
        argv = ["bwrap", "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
        for link in ("bin", "sbin", "lib", "lib64"):
            argv += ["--symlink", "usr/" + link, "/" + link]
        argv += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                 "--bind", os.path.join(self.state, "testbed"), "/testbed",
                 "--bind", os.path.join(self.state, "root"), "/root",
                 "--unshare-net", "--die-with-parent", "--chdir", workdir, "--clearenv"]
        for k, v in env.items():
            argv += ["--setenv", k, v]
        argv += ["--"] + list(cmd)
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE if demux else subprocess.STDOUT)
        code = p.returncode if p.returncode >= 0 else 128 - p.returncode
        if demux:
            return ExecResult((p.stdout or None, p.stderr or None), code)
        return ExecResult(p.stdout, code)


# ---- the cases ----
# Each step is one model reply: {"calls": [[tool, arguments], ...]} (arguments
# a dict, or a string sent as it is) or {"content": text} without calls.
E = "str_replace_editor"
B = "execute_bash"
LONG = "".join("line %d\n" % i for i in range(1, 16))
STEPS = [
    ("bash-ok", {"calls": [[B, {"command": "printf 'hello\\n'"}]]}),
    ("bash-fail", {"calls": [[B, {"command": "printf 'out\\n'; printf 'err\\n' >&2; exit 3"}]]}),
    ("bash-empty", {"calls": [[B, {"command": "true"}]]}),
    ("bash-ws-stdout", {"calls": [[B, {"command": "printf '  \\n\\t\\n'"}]]}),
    ("bash-ws-stderr", {"calls": [[B, {"command": "printf 'x\\n'; printf ' \\n' >&2"}]]}),
    ("bash-stderr-only", {"calls": [[B, {"command": "printf 'oops\\n' >&2; exit 1"}]]}),
    ("bash-ansi", {"calls": [[B, {"command": "printf '\\033[31mred\\033[0m\\r\\nok'"}]]}),
    ("bash-utf8", {"calls": [[B, {"command": "printf 'a\\342\\202b\\377c\\303\\251\\n'"}]]}),
    ("bash-long", {"calls": [[B, {"command": "i=0; while [ $i -lt 100 ]; do i=$((i+1)); echo l$i; done"}]]}),
    ("bash-long-ff", {"calls": [[B, {"command": "printf 'x\\fy\\n'; i=1; while [ $i -lt 85 ]; do i=$((i+1)); "
                                                "echo l$i; done"}]]}),
    ("bash-exit-124", {"calls": [[B, {"command": "printf 'done\\n'; exit 124"}]]}),
    ("bash-killed", {"calls": [[B, {"command": "printf 'bye\\n'; kill -9 $$"}]]}),
    ("bash-no-command", {"calls": [[B, {}]]}),
    ("bash-empty-command", {"calls": [[B, {"command": ""}]]}),
    ("bad-json", {"calls": [[B, "{\"command\": "]]}),
    ("not-object", {"calls": [[B, "[\"ls\"]"]]}),
    ("not-object-editor", {"calls": [[E, "[1]"]]}),
    ("not-object-unknown", {"calls": [["fly", "3"]]}),
    ("empty-arguments", {"calls": [["submit", ""]]}),
    ("no-call", {"content": "I am thinking about it."}),
    ("unknown-tool", {"calls": [["fly", {"to": "moon"}]]}),
    ("two-calls", {"calls": [[B, {"command": "echo one"}], [B, {"command": "echo two"}]]}),
    ("setup-dirs", {"calls": [[B, {"command": "mkdir -p d/sub/.hid .cfg e && touch d/notes.txt d/.h.py "
                                              "d/sub/m.py d/sub/data.csv .cfg/c.py && printf '' > empty.py"}]]}),
    ("view-dir", {"calls": [[E, {"command": "view", "path": "/testbed/d"}]]}),
    ("view-dir-slash", {"calls": [[E, {"command": "view", "path": "/testbed/d/"}]]}),
    ("view-dir-empty", {"calls": [[E, {"command": "view", "path": "/testbed/e"}]]}),
    ("view-dir-hidden", {"calls": [[E, {"command": "view", "path": "/testbed/.cfg"}]]}),
    ("create", {"calls": [[E, {"command": "create", "path": "/testbed/a.py",
                               "file_text": "def f():\n\treturn 'x'  # it's\n"}]]}),
    ("view-py", {"calls": [[E, {"command": "view", "path": "/testbed/a.py"}]]}),
    ("view-relative", {"calls": [[E, {"command": "view", "path": "a.py"}]]}),
    ("create-overwrite", {"calls": [[E, {"command": "create", "path": "/testbed/a.py", "file_text": "x = 1"}]]}),
    ("view-after-overwrite", {"calls": [[E, {"command": "view", "path": "/testbed/a.py"}]]}),
    ("create-nested", {"calls": [[E, {"command": "create", "path": "/testbed/new/dir/b.rst",
                                      "file_text": LONG}]]}),
    ("view-rst", {"calls": [[E, {"command": "view", "path": "/testbed/new/dir/b.rst"}]]}),
    ("view-range", {"calls": [[E, {"command": "view", "path": "/testbed/new/dir/b.rst", "view_range": [3, 5]}]]}),
    ("view-range-end", {"calls": [[E, {"command": "view", "path": "/testbed/new/dir/b.rst",
                                       "view_range": [14, -1]}]]}),
    ("view-range-bad-start", {"calls": [[E, {"command": "view", "path": "/testbed/new/dir/b.rst",
                                             "view_range": [0, 3]}]]}),
    ("view-range-bad-end", {"calls": [[E, {"command": "view", "path": "/testbed/new/dir/b.rst",
                                           "view_range": [5, 99]}]]}),
    ("view-range-reversed", {"calls": [[E, {"command": "view", "path": "/testbed/new/dir/b.rst",
                                            "view_range": [5, 4]}]]}),
    ("view-range-one", {"calls": [[E, {"command": "view", "path": "/testbed/new/dir/b.rst", "view_range": [2]}]]}),
    ("create-txt", {"calls": [[E, {"command": "create", "path": "/testbed/notes.txt", "file_text": "a\tb\n"}]]}),
    ("view-txt", {"calls": [[E, {"command": "view", "path": "/testbed/notes.txt"}]]}),
    ("view-empty", {"calls": [[E, {"command": "view", "path": "/testbed/empty.py"}]]}),
    ("view-missing", {"calls": [[E, {"command": "view", "path": "/testbed/missing.py"}]]}),
    ("create-long", {"calls": [[E, {"command": "create", "path": "/testbed/c.py", "file_text": LONG}]]}),
    ("replace", {"calls": [[E, {"command": "str_replace", "path": "/testbed/c.py",
                                "old_str": "line 8\n", "new_str": "line 8a\n\tline 8b\n"}]]}),
    ("view-after-replace", {"calls": [[E, {"command": "view", "path": "/testbed/c.py"}]]}),
    ("replace-top", {"calls": [[E, {"command": "str_replace", "path": "/testbed/c.py",
                                    "old_str": "line 1\n", "new_str": ""}]]}),
    ("replace-none", {"calls": [[E, {"command": "str_replace", "path": "/testbed/c.py",
                                     "old_str": "nowhere", "new_str": "x"}]]}),
    ("replace-many", {"calls": [[E, {"command": "str_replace", "path": "/testbed/c.py",
                                     "old_str": "line 1", "new_str": "x"}]]}),
    ("replace-no-old", {"calls": [[E, {"command": "str_replace", "path": "/testbed/c.py", "new_str": "x"}]]}),
    ("replace-missing-file", {"calls": [[E, {"command": "str_replace", "path": "/testbed/nope.py",
                                             "old_str": "a", "new_str": "b"}]]}),
    ("replace-empty-file", {"calls": [[E, {"command": "str_replace", "path": "/testbed/empty.py",
                                           "old_str": "a", "new_str": "b"}]]}),
    ("insert-top", {"calls": [[E, {"command": "insert", "path": "/testbed/c.py", "insert_line": 0,
                                   "new_str": "# top"}]]}),
    ("insert-middle", {"calls": [[E, {"command": "insert", "path": "/testbed/c.py", "insert_line": 9,
                                      "new_str": "\tmid 1\nmid 2"}]]}),
    ("insert-end", {"calls": [[E, {"command": "insert", "path": "/testbed/c.py", "insert_line": 19,
                                   "new_str": "end"}]]}),
    ("insert-past-end", {"calls": [[E, {"command": "insert", "path": "/testbed/c.py", "insert_line": 99,
                                        "new_str": "x"}]]}),
    ("insert-negative", {"calls": [[E, {"command": "insert", "path": "/testbed/c.py", "insert_line": -1,
                                        "new_str": "x"}]]}),
    ("insert-no-new", {"calls": [[E, {"command": "insert", "path": "/testbed/c.py", "insert_line": 1}]]}),
    ("insert-no-line", {"calls": [[E, {"command": "insert", "path": "/testbed/c.py", "new_str": "first"}]]}),
    ("view-after-inserts", {"calls": [[E, {"command": "view", "path": "/testbed/c.py"}]]}),
    ("insert-new-file", {"calls": [[E, {"command": "insert", "path": "/testbed/fresh.py", "insert_line": 0,
                                        "new_str": "made"}]]}),
    ("view-new-file", {"calls": [[E, {"command": "view", "path": "/testbed/fresh.py"}]]}),
    ("undo-edit", {"calls": [[E, {"command": "undo_edit", "path": "/testbed/c.py"}]]}),
    ("unknown-command", {"calls": [[E, {"command": "fly", "path": "/testbed/c.py"}]]}),
    ("no-path", {"calls": [[E, {"command": "view"}]]}),
    ("no-command", {"calls": [[E, {"path": "/testbed/c.py"}]]}),
    ("create-on-dir", {"calls": [[E, {"command": "create", "path": "/testbed/d", "file_text": "x"}]]}),
    ("create-under-file", {"calls": [[E, {"command": "create", "path": "/testbed/a.py/x.py", "file_text": "x"}]]}),
    ("create-echo-option", {"calls": [[E, {"command": "create", "path": "/testbed/opt.py", "file_text": "-n"}]]}),
    ("view-echo-option", {"calls": [[E, {"command": "view", "path": "/testbed/opt.py"}]]}),
    ("create-null-text", {"calls": [[E, {"command": "create", "path": "/testbed/none.py", "file_text": None}]]}),
    ("setup-odd-files", {"calls": [[B, {"command": "printf 'a\\r\\n\\033[1mb\\033[0m\\r\\n\\377\\342\\202c\\n' > odd.py; "
                                                   "printf 'ab\\tx\\n\\ty\\n' > tabs.py"}]]}),
    ("view-odd", {"calls": [[E, {"command": "view", "path": "/testbed/odd.py"}]]}),
    ("replace-odd", {"calls": [[E, {"command": "str_replace", "path": "/testbed/odd.py", "old_str": "b",
                                    "new_str": "B"}]]}),
    ("view-odd-after", {"calls": [[E, {"command": "view", "path": "/testbed/odd.py"}]]}),
    ("replace-tab-shifted", {"calls": [[E, {"command": "str_replace", "path": "/testbed/tabs.py", "old_str": "\tx",
                                            "new_str": "\tX"}]]}),
    ("replace-tab-aligned", {"calls": [[E, {"command": "str_replace", "path": "/testbed/tabs.py", "old_str": "\ty",
                                            "new_str": "\tY"}]]}),
    ("create-unicode-tabs", {"calls": [[E, {"command": "create", "path": "/testbed/u.py",
                                            "file_text": "\u00e9\tx\n\u4e2d\u6587\ty\nback\\slash '\\n' $HOME `id`"}]]}),
    ("view-unicode-tabs", {"calls": [[E, {"command": "view", "path": "/testbed/u.py"}]]}),
    ("view-big", {"calls": [[E, {"command": "create", "path": "/testbed/big.py",
                                 "file_text": "".join("v%04d = %d\n" % (i, i) for i in range(1500))}],
                            [E, {"command": "view", "path": "/testbed/big.py"}]]}),
    ("submit", {"calls": [["submit", {}]]}),
]


class Msg:
    def __init__(self, content, calls):
        self.content = content
        self.tool_calls = calls


def reply(content, call):
    """A litellm-shaped response holding one tool call (or none)."""
    calls = None
    if call is not None:
        name, args = call
        fn = types.SimpleNamespace(name=name, arguments=args if isinstance(args, str) else json.dumps(args))
        calls = [types.SimpleNamespace(id="call_x", function=fn)]
    return types.SimpleNamespace(choices=[types.SimpleNamespace(message=Msg(content, calls))])


def strip_descriptions(x):
    if isinstance(x, dict):
        return {k: strip_descriptions(v) for k, v in x.items() if k != "description"}
    if isinstance(x, list):
        return [strip_descriptions(v) for v in x]
    return x


def main():
    checkout = os.path.abspath(sys.argv[1])
    out = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else HERE
    sys.path.insert(0, checkout)
    import llm_in_sandbox
    from llm_in_sandbox.agent import Agent
    from llm_in_sandbox.docker_runtime import DockerRuntime
    from llm_in_sandbox.tools import str_replace_editor_tool, execute_bash_tool, submit_tool

    state = tempfile.mkdtemp(prefix="lis-golden.")
    try:
        runtime = DockerRuntime.__new__(DockerRuntime)  # no docker daemon: see Container
        runtime.repo_path = "/testbed"
        runtime.container = Container(state)
        agent = Agent.__new__(Agent)

        obs_dir = os.path.join(out, "obs")
        shutil.rmtree(obs_dir, ignore_errors=True)
        os.makedirs(obs_dir)
        cases = []
        for n, (name, step) in enumerate(STEPS):
            files = []
            for i, call in enumerate(step.get("calls") or [None]):
                _, action, _ = agent.parse_response(reply(step.get("content"), call))
                text = agent._execute_action(action, runtime)
                fname = "%02d-%s%s.txt" % (n, name, "" if i == 0 else "-%d" % (i + 1))
                with open(os.path.join(obs_dir, fname), "w", encoding="utf-8", newline="") as f:
                    f.write(text)
                files.append(fname)
            cases.append({"name": name, "reply": step, "golden": files})
        with open(os.path.join(out, "cases.json"), "w") as f:
            json.dump(cases, f, indent=1, ensure_ascii=False)
            f.write("\n")
        tools = [str_replace_editor_tool, execute_bash_tool, submit_tool]
        with open(os.path.join(out, "tools.json"), "w") as f:
            json.dump(tools, f, indent=2, ensure_ascii=False)
            f.write("\n")
        with open(os.path.join(out, "tools-shape.json"), "w") as f:
            json.dump(strip_descriptions(tools), f, indent=2, ensure_ascii=False)
            f.write("\n")
        print("%d cases, %d files; LIS package version string %s" % (
            len(cases), sum(len(c["golden"]) for c in cases), llm_in_sandbox.__version__))
    finally:
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
