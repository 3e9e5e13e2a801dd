# SPDX-License-Identifier: Apache-2.0
"""hutch.compat.llm_in_sandbox's Agent.run, held to LLM-in-Sandbox 0.2.0's
own: tests/golden/lis-bench/out holds the trajectories its Agent.run made
for the task sets of tests/golden/lis-bench/tasks, played by the scripted
model of replies/; the same model (tests/lib/mock-openai.py) plays them
here against Agent.run driving a DockerRuntime of the Debian test image."""

import json
import os
import subprocess
import sys
import tempfile
import time

import pytest

from hutch.compat.llm_in_sandbox import Agent, AgentArgs, DockerRuntime
from hutch.compat.llm_in_sandbox.observation import CONTINUE_MSG

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.join(HERE, "..", "..")
GOLDEN = os.path.join(TOP, "tests", "golden", "lis-bench")
MOCK = os.path.join(TOP, "tests", "lib", "mock-openai.py")
DEBIAN = os.environ.get("HUTCH_TEST_DEBIAN_IMAGE")
needs_debian = pytest.mark.skipif(not DEBIAN, reason="HUTCH_TEST_DEBIAN_IMAGE is not set (bash, git, coreutils)")
# The golden sets' directories (their config.yaml), as LLM-in-Sandbox's runner
# gives them to the run.
DIRS = {"working_dir": "/testbed", "input_dir": "/testbed/input", "output_dir": "/testbed/output"}
# Its trajectory holds no step of this task: the runner dropped them when
# the task's reward.py raised, which is the runner's doing, not the agent's.
RUNNER_ONLY = {"edge_raise"}


class Model:
    """The scripted model, served on loopback; requests() are what it was sent."""

    def __init__(self, script, tmp):
        self.script = os.path.join(tmp, "script.json")
        with open(self.script, "w") as f:
            json.dump(script, f)
        self.port_file = os.path.join(tmp, "port")
        self.log = os.path.join(tmp, "requests.jsonl")
        env = dict(os.environ, MOCK_PORT="0")
        self.proc = subprocess.Popen([sys.executable, MOCK, self.script, self.port_file, self.log], env=env)
        deadline = time.monotonic() + 30
        while not (os.path.exists(self.port_file) and open(self.port_file).read().strip()):
            assert self.proc.poll() is None and time.monotonic() < deadline, "the mock model did not start"
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{int(open(self.port_file).read())}/v1"

    def requests(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log) as f:
            return [json.loads(line)["body"] for line in f if line.strip()]

    def close(self):
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def model(tmp_path):
    made = []

    def make(script):
        m = Model(script, str(tmp_path))
        made.append(m)
        return m

    yield make
    for m in made:
        m.close()


def silent():
    """A logger that writes nothing: the suite's TAP reader would take a
    captured "ERROR ..." line (a scripted failure's, logged as LLM-in-Sandbox
    logs it) for a test's."""
    import logging

    log = logging.getLogger("test-agent-silent")
    log.disabled = True
    return log


def agent(url, system="You are in a sandbox.", instance="{problem_statement}", **kw):
    return Agent(AgentArgs(system_prompt=system, instance_prompt=instance, llm_name="openai/mock",
                           llm_base_url=url, **kw), logger=silent())


def runtime():
    return DockerRuntime(DEBIAN, logger=silent(), environment={"LANG": "C.UTF-8"})


def golden_cases():
    cases = []
    for name in ("demo", "edge"):
        with open(os.path.join(GOLDEN, "out", name, "trajectory.json")) as f:
            runs = json.load(f)
        with open(os.path.join(GOLDEN, "tasks", name, "data.json")) as f:
            rows = {r["id"]: r for r in json.load(f)}
        for tid, run in sorted(runs.items()):
            if tid not in RUNNER_ONLY:
                cases.append(pytest.param(name, tid, run, rows[tid], id=tid))
    return cases


def _steps(traj):
    """A trajectory's steps with the times (a float of each run) left out."""
    out = []
    for s in traj:
        s = dict(s, metadata={k: v for k, v in s["metadata"].items() if k != "exec_time"})
        out.append(s)
    return out


@needs_debian
@pytest.mark.parametrize("name,tid,run,row", golden_cases())
def test_steps_are_llm_in_sandbox_s(model, name, tid, run, row):
    import yaml

    with open(os.path.join(GOLDEN, "replies", name + ".json")) as f:
        m = model(json.load(f))
    with open(os.path.join(GOLDEN, "tasks", name, "config.yaml")) as f:
        config = yaml.safe_load(f)

    def place(text):
        for k, v in DIRS.items():
            text = text.replace("{" + k + "}", v)
        return text

    rt = runtime()
    try:
        files = {k: v for k, v in (row.get("input_files") or {}).items() if v is not None}
        if files:
            with tempfile.TemporaryDirectory() as d:
                for k, v in files.items():
                    with open(os.path.join(d, k), "w") as f:
                        f.write(v)
                # Where LLM-in-Sandbox's runner puts them, whatever the
                # config's input_dir says (tests/golden/lis-bench/README).
                rt.copy_dir_to_container(d, "/testbed/documents")
        a = agent(m.url, place(config["system_prompt"]), place(config["instance_prompt"]), quiet=True)
        traj = a.run(rt, run["problem_statement"], max_steps=100, temperature=None)
    finally:
        rt.close()
    got = [s.to_dict() for s in traj.steps]
    assert _steps(got) == _steps(run["trajectory"])
    assert traj.metadata == {"total_steps": len(run["trajectory"])}
    assert all(isinstance(s["metadata"]["exec_time"], float) for s in got)


@needs_debian
def test_what_the_model_is_sent(model):
    m = model([
        {"content": "Looking.", "calls": [["execute_bash", {"command": "echo hi"}]]},
        {"content": "no call"},
        {"calls": [["submit", {}]]},
    ])
    rt = runtime()
    try:
        traj = agent(m.url, system="SYS {command_docs}{demo}", instance="Task: {problem_statement}").run(
            rt, "say hi", max_steps=5)
    finally:
        rt.close()
    assert [s.action["function"] for s in traj.steps] == ["execute_bash", "", "submit"]
    first, second, third = m.requests()
    assert first["model"] == "mock" and first["max_tokens"] == 65536 and first["temperature"] == 1.0
    assert [t["function"]["name"] for t in first["tools"]] == ["str_replace_editor", "execute_bash", "submit"]
    assert first["messages"] == [{"role": "system", "content": "SYS "},
                                 {"role": "user", "content": "Task: say hi\nSteps Remaining: 5"}]
    # The tool's result goes back under its call's id, the next count after it.
    call = second["messages"][2]["tool_calls"][0]
    assert second["messages"][2]["content"] == "Looking."
    assert second["messages"][3] == {"role": "tool", "tool_call_id": call["id"],
                                     "content": traj.steps[0].observation + "\nSteps Remaining: 4"}
    assert traj.steps[0].observation == "Exit code: 0\nExecution output of \\[execute_bash]:\n\\[STDOUT]\nhi\n"
    # A reply without a call is answered with the continue message, as the user.
    assert third["messages"][-1] == {"role": "user", "content": CONTINUE_MSG + "\nSteps Remaining: 3"}
    assert traj.steps[1].observation == CONTINUE_MSG


@needs_debian
def test_max_steps_ends_the_run(model):
    m = model([{"repeat": 5, "calls": [["execute_bash", {"command": "true"}]]}])
    rt = runtime()
    try:
        traj = agent(m.url).run(rt, "loop", max_steps=2)
    finally:
        rt.close()
    assert len(traj.steps) == 2 and traj.metadata == {"total_steps": 2} and len(m.requests()) == 2


def test_context_error_asks_again_with_less(model):
    m = model([{"context_error": True}, {"calls": [["submit", {}]]}])
    traj = agent(m.url).run(None, "x", max_steps=3)
    first, second = m.requests()
    assert (first["max_tokens"], second["max_tokens"]) == (65536, 32768)
    assert [s.observation for s in traj.steps] == ["<<< Finished >>>"]


def test_failures_end_the_run_after_max_retries(model):
    m = model([{"repeat": 9, "status": 500}])
    traj = agent(m.url, max_retries=3).run(None, "x", max_steps=3)
    assert len(m.requests()) == 3
    assert traj.steps == [] and traj.metadata == {"total_steps": 0}


def test_a_conversation_over_the_limit_is_not_sent(model):
    m = model([{"calls": [["submit", {}]]}])
    traj = agent(m.url).run(None, "x" * 400, max_steps=3, max_token_limit=50)
    assert m.requests() == [] and traj.steps == []


def test_saved_exchanges(model, tmp_path):
    m = model([{"calls": [["submit", {}]]}])
    out = tmp_path / "calls"
    agent(m.url, save_litellm_response=True, output_dir=str(out)).run(None, "x", max_steps=3)
    assert sorted(os.listdir(out)) == ["request_001.json", "response_001.json"]
    req = json.loads((out / "request_001.json").read_text())
    assert req["call_id"] == 1 and req["model"] == "openai/mock" and req["messages"][1]["content"].endswith(
        "Steps Remaining: 3")
    resp = json.loads((out / "response_001.json").read_text())
    assert resp["response"]["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "submit"


def test_other_providers_are_refused_clearly(model):
    m = model([{"calls": [["submit", {}]]}])
    a = Agent(AgentArgs(system_prompt="", instance_prompt="", llm_name="anthropic/claude", llm_base_url=m.url),
              logger=silent())
    traj = a.run(None, "x", max_steps=1)
    assert traj.steps == [] and m.requests() == []
    from hutch.compat.llm_in_sandbox import _llm

    with pytest.raises(ValueError, match="only OpenAI-compatible endpoints"):
        _llm.endpoint_model("anthropic/claude")


def test_a_huge_reply_is_refused_not_held(model):
    m = model([{"huge": 70_000_000}])
    traj = agent(m.url, max_retries=1).run(None, "x", max_steps=1)
    assert traj.steps == [] and len(m.requests()) == 1


def test_a_reply_without_a_message_ends_the_run_with_its_steps(model):
    m = model([{"calls": [["execute_bash", {"command": "true"}]]}, {"raw": '{"choices": [{}]}'}])

    class Runtime:
        def demux_run(self, command):
            return "", "", 0

    traj = agent(m.url, max_retries=1).run(Runtime(), "x", max_steps=3)
    assert [s.action["function"] for s in traj.steps] == ["execute_bash"]
    assert traj.metadata == {"total_steps": 1}


def test_the_key_is_not_sent_where_a_redirect_points(tmp_path, monkeypatch):
    import http.server
    import threading

    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):
            seen.append((self.command, self.path, self.headers.get("Authorization")))
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(302)
            self.send_header("Location", f"http://127.0.0.1:{srv.server_address[1]}/elsewhere")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_GET(self):
            seen.append((self.command, self.path, self.headers.get("Authorization")))
            body = json.dumps({"choices": [{"message": {"role": "assistant", "content": "hi"}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    try:
        from hutch.compat.llm_in_sandbox import _llm

        r = _llm.completion("openai/m", [], [], f"http://127.0.0.1:{srv.server_address[1]}/v1", 10, 16)
        assert r.choices[0].message.content == "hi"
    finally:
        srv.shutdown()
    assert seen == [("POST", "/v1/chat/completions", "Bearer sk-secret"), ("GET", "/elsewhere", None)]
