# SPDX-License-Identifier: Apache-2.0
"""hutch.compat.llm_in_sandbox: LLM-in-Sandbox 0.2.0's runtime, actions and
tool results on hutch, held to what LLM-in-Sandbox's own code returns
(tests/golden/lis-runtime/cases.json: its DockerRuntime; tests/golden/lis:
its Agent._execute_action)."""

import gc
import importlib
import json
import os
import types

import pytest

import hutch
from hutch.compat.llm_in_sandbox import Action, DockerRuntime
from hutch.compat.llm_in_sandbox.agent import Agent

GOLDEN = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden")
DEBIAN = os.environ.get("HUTCH_TEST_DEBIAN_IMAGE")
needs_debian = pytest.mark.skipif(not DEBIAN, reason="HUTCH_TEST_DEBIAN_IMAGE is not set (bash, git, coreutils)")
# What LLM-in-Sandbox's image (python:3.11-slim) sets that the test image does not.
IMAGE_ENV = {"LANG": "C.UTF-8"}


def runtime(**kw):
    return DockerRuntime(DEBIAN, logger=False, environment=IMAGE_ENV, **kw)


@pytest.mark.parametrize("mod", ["", ".docker_runtime", ".action", ".agent", ".observation", ".tools",
                                 ".trajectory", ".benchmark", ".benchmark.runner"])
def test_layout_imports(mod):
    importlib.import_module("hutch.compat.llm_in_sandbox" + mod)


def test_top_level_names():
    import hutch.compat.llm_in_sandbox as lis

    assert set(lis.__all__) == {"Agent", "AgentArgs", "DockerRuntime", "Trajectory", "TrajectoryStep", "Action",
                                "get_logger", "__version__"}
    for name in lis.__all__:
        assert hasattr(lis, name), name
    assert lis.CMD_TIMEOUT == 120 and lis.DOCKER_PATH.startswith("/root/.local/bin:")


def test_action():
    a = Action("execute_bash", {"command": "ls"})
    assert a.to_dict() == {"function": "execute_bash", "parameters": {"command": "ls"}}
    assert str(a) == "{'function': 'execute_bash', 'parameters': {'command': 'ls'}}"
    for text in [str(a), json.dumps(a.to_dict()), '{"name": "execute_bash", "arguments": "{\\"command\\": \\"ls\\"}"}',
                 '<tool_call>\n{"name": "execute_bash", "arguments": {"command": "ls"}}\n</tool_call>',
                 "<function=execute_bash>\n<parameter=command>\nls\n</parameter>\n</function>",
                 {"type": "function", "function": {"name": "execute_bash", "arguments": {"command": "ls"}}}]:
        b = Action.from_string(text)
        assert (b.function_name, b.parameters) == ("execute_bash", {"command": "ls"}), text
    for junk in ["just words", "", '{"name": "x", "arguments": "{not json"}', "{'a': __import__('os')}", None]:
        b = Action.from_string(junk)
        assert (b.function_name, b.parameters) == ("", {}), junk


def test_tool_schemas_have_lis_shape():
    from hutch.compat.llm_in_sandbox import tools

    with open(os.path.join(GOLDEN, "lis", "tools-shape.json")) as f:
        want = json.load(f)
    got = json.dumps([tools.str_replace_editor_tool, tools.execute_bash_tool, tools.submit_tool])
    got = json.loads(got, object_hook=lambda d: {k: v for k, v in d.items() if k != "description"})
    assert json.dumps(got, sort_keys=True) == json.dumps(want, sort_keys=True)


def test_docker_kwargs_refused_not_ignored():
    with pytest.raises(TypeError, match="volumes"):
        DockerRuntime("hutch-test-busybox", logger=False, volumes={"/x": {}})


# ---- the runtime against LLM-in-Sandbox's own DockerRuntime ----

def load_runtime_golden():
    with open(os.path.join(GOLDEN, "lis-runtime", "cases.json")) as f:
        return json.load(f)


@needs_debian
def test_runtime_matches_lis_golden(tmp_path):
    doc = load_runtime_golden()
    rt = runtime()
    try:
        bad = []
        for c in doc["cases"]:
            got = list(getattr(rt, c["method"])(*c["args"], **c["kwargs"]))
            if got != c["result"]:
                bad.append((c["method"], c["args"], c["kwargs"], c["result"], got))
        assert not bad, "\n".join(repr(b)[:600] for b in bad)
        assert len(doc["cases"]) >= 30

        src = tmp_path / "src"
        for rel, text in doc["files"]:
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            (src / rel).write_text(text)
        rt.copy_dir_to_container(str(src), "/testbed/documents")
        rt.copy_to_container(str(src / "a.txt"), "/testbed/new/dir/a2.txt")
        assert list(rt.run("find documents new -type f | sort; cat documents/d/e/c.py new/dir/a2.txt")) \
            == doc["copy_in"]
        rt.run("mkdir -p output/o && echo answer > output/answer.txt && echo deep > output/o/x.txt")
        dst = tmp_path / "dst"
        rt.copy_from_container("/testbed/output", str(dst))
        copied = sorted(f"{os.path.relpath(os.path.join(d, n), dst)}={open(os.path.join(d, n)).read()}"
                        for d, _, ns in os.walk(dst) for n in ns)
        assert copied == doc["copy_out"]
        assert rt.get_task_instruction("task") == "task"
    finally:
        rt.close()


@needs_debian
def test_runtime_errors_read_as_lis_errors():
    rt = runtime()
    sb = rt.container
    rt.container = types.SimpleNamespace(exec=lambda *a, **k: (_ for _ in ()).throw(hutch.NotFoundError("gone")))
    try:
        out, code = rt.run("true")
        assert code == "-1" and out.startswith("Error: NotFoundError(")
        o, e, code = rt.demux_run("true")
        assert code == "-1" and o == e and o.startswith("Error: NotFoundError(")
    finally:
        rt.container = sb
        rt.close()


# ---- tool results against LLM-in-Sandbox's own Agent._execute_action ----

def reply(content, call):
    """A chat completion as litellm returns it, with the call (or none)."""
    ns = types.SimpleNamespace
    calls = call and [ns(id="call_x", function=ns(name=call[0], arguments=call[1] if isinstance(call[1], str)
                                                   else json.dumps(call[1])))]
    return ns(choices=[ns(message=ns(content=content, tool_calls=calls))])


@needs_debian
def test_execute_action_matches_lis_golden():
    with open(os.path.join(GOLDEN, "lis", "cases.json")) as f:
        cases = json.load(f)
    agent = Agent.__new__(Agent)  # as LLM-in-Sandbox-RL makes it
    rt = runtime()
    bad, n = [], 0
    try:
        for case in cases:
            step = case["reply"]
            for call, fname in zip(step.get("calls") or [None], case["golden"]):
                _, action, _ = agent.parse_response(reply(step.get("content"), call))
                got = agent._execute_action(action, rt)
                with open(os.path.join(GOLDEN, "lis", "obs", fname), encoding="utf-8", newline="") as f:
                    want = f.read()
                n += 1
                if got != want:
                    bad.append(f"{fname}:\n--- want\n{want[:400]!r}\n--- got\n{got[:400]!r}")
    finally:
        rt.close()
    assert not bad, "\n".join(bad)
    assert n >= 80


# ---- many runtimes, cleanup ----

def alive(sid):
    return any(s["id"] == sid for s in hutch.sandboxes())


@needs_debian
def test_close_and_del_remove_the_sandbox():
    rt = runtime()
    sid = rt.container.id
    assert alive(sid)
    rt.close()
    rt.close()
    assert not alive(sid)
    assert rt.run("true")[1] == "-1"
    rt = runtime()
    sid = rt.container.id
    del rt
    gc.collect()
    assert not alive(sid)


@needs_debian
def test_reset_starts_a_new_episode():
    rt = runtime()
    try:
        procs = "cat /proc/[0-9]*/comm 2>/dev/null | grep -c '^sleep$'"
        rt.run("echo x > /testbed/left.txt; setsid sleep 100 >/dev/null 2>&1 &")
        assert rt.run(procs) == ("1\n", "0")
        rt.reset()
        assert rt.run("ls /testbed") == ("input\noutput\n", "0")
        assert rt.run(procs) == ("0\n", "Error: Exit code 1")
    finally:
        rt.close()
