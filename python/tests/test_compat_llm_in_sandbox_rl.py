# SPDX-License-Identifier: Apache-2.0
"""hutch.compat.llm_in_sandbox under the code that uses LLM-in-Sandbox's
runtime: LLM-in-Sandbox-RL's environment (its own file, only its imports
changed, against a stand-in for rLLM's BaseEnv; read from a checkout when
one is there), the same rollout written here, which always runs, and
LLM-in-Sandbox's own Agent driving hutch's DockerRuntime (its checkout's
code, or a package of this test's laid out as LLM-in-Sandbox's)."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

import hutch
from hutch.compat.llm_in_sandbox import Action, DockerRuntime
from hutch.compat.llm_in_sandbox.agent import Agent
from hutch.compat.llm_in_sandbox.benchmark.runner import load_reward_function

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN_LIS = os.path.join(HERE, "..", "..", "tests", "golden", "lis")
DEBIAN = os.environ.get("HUTCH_TEST_DEBIAN_IMAGE")
pytestmark = pytest.mark.skipif(not DEBIAN, reason="HUTCH_TEST_DEBIAN_IMAGE is not set (bash, python3)")

# The checkouts (git directories) fetched from github.com/llm-in-sandbox.
MIRROR = os.environ.get("HUTCH_LIS_MIRROR", "/work/.mirror")
LIS_GIT = os.path.join(MIRROR, "llm-in-sandbox+llm-in-sandbox", "repo")
LIS_COMMIT = "bf93b89cd5e8d848979e6460e96854cf0ff3c79c"  # v0.2.0
RL_GIT = os.path.join(MIRROR, "llm-in-sandbox+llm-in-sandbox-rl", "repo")
RL_ENV = "rllm/environments/llm_in_sandbox/llm_in_sandbox_env.py"


def git(repo, *args):
    return subprocess.run(["git", "-c", "safe.directory=*", "-C", repo, *args], capture_output=True, check=True).stdout


def labelled():
    return [s for s in hutch.sandboxes() if "llm-in-sandbox" in (s.get("labels") or {})]


@pytest.fixture
def tasks(tmp_path, monkeypatch):
    """A folder of task folders with instruct_pretrain (LLM-in-Sandbox-RL's
    training reward) of this test's own: exact match after strip."""
    d = tmp_path / "tasks" / "instruct_pretrain"
    d.mkdir(parents=True)
    (d / "reward.py").write_text(textwrap.dedent("""\
        def compute_score(agent_answer, ground_truth, **kw):
            assert kw["domain"] == "math", kw
            return 1.0 if agent_answer.strip() == ground_truth.strip() else 0.0
        """))
    monkeypatch.setenv("HUTCH_LIS_TASKS", str(tmp_path / "tasks"))
    monkeypatch.setenv("HUTCH_LIS_REWARD_IMAGE", DEBIAN)
    return d


@pytest.fixture
def fake_rllm(tmp_path, monkeypatch):
    """rLLM's BaseEnv as its environments see it (an abstract reset, step
    and from_dict), in a package of its own on sys.path."""
    root = tmp_path / "site"
    base = root / "rllm" / "environments" / "base"
    base.mkdir(parents=True)
    for d in (root / "rllm", root / "rllm" / "environments", base):
        (d / "__init__.py").write_text("")
    (base / "base_env.py").write_text(textwrap.dedent("""\
        import abc

        class BaseEnv(abc.ABC):
            @abc.abstractmethod
            def reset(self): ...

            @abc.abstractmethod
            def step(self, action): ...

            def close(self):
                pass

            @staticmethod
            @abc.abstractmethod
            def from_dict(info): ...
        """))
    monkeypatch.syspath_prepend(str(root))
    yield root
    for name in [m for m in sys.modules if m == "rllm" or m.startswith("rllm.")]:
        del sys.modules[name]


ENTRY = {
    "id": "t1", "domain": "math", "problem_statement": "Add the numbers in documents/nums.txt.",
    "ground_truth": "42", "input_files": json.dumps({"nums.txt": "40\n2\n", "sub/readme.txt": "hi"}),
}
# A model's rollout: look, compute, write the answer, submit.
STEPS = [
    Action("execute_bash", {"command": "cat documents/nums.txt; ls documents/sub"}),
    "<function=str_replace_editor>\n<parameter=command>create</parameter>\n<parameter=path>/testbed/sum.py"
    "</parameter>\n<parameter=file_text>print(sum(int(x) for x in open('documents/nums.txt')))"
    "</parameter>\n</function>",
    '{"name": "execute_bash", "arguments": {"command": "python3 sum.py > /testbed/answer.txt"}}',
    Action("submit", {}),
]


def check_rollout(env):
    problem, info = env.reset()
    assert problem == ENTRY["problem_statement"] and info["extra_info"]["id"] == "t1"
    obs = []
    for i, a in enumerate(STEPS):
        o, reward, done, _ = env.step(a)
        obs.append(o)
        assert reward == 0.0 and done == (i == len(STEPS) - 1)
    assert obs[0] == "Exit code: 0\nExecution output of \\[execute_bash]:\n\\[STDOUT]\n40\n2\nreadme.txt\n"
    assert obs[1].startswith("Execution output of \\[str_replace_editor]:\nFile created at /testbed/sum.py.")
    assert obs[2] == "Exit code: 0\nExecution output of \\[execute_bash]:\n\\[STDOUT]\n"
    assert obs[3] == "<<< Finished >>>"
    assert env.compute_final_reward() == 1.0
    env.runtime.run("echo 41 > /testbed/answer.txt")
    assert env.compute_final_reward() == 0.0
    sid = env.runtime.container.id
    env.close()
    assert env.runtime is None and not any(s["id"] == sid for s in hutch.sandboxes())


def test_lis_rl_environment_with_only_its_imports_changed(tmp_path, tasks, fake_rllm):
    try:
        src = git(RL_GIT, "show", f"HEAD:{RL_ENV}").decode()
    except (OSError, subprocess.CalledProcessError):
        pytest.skip(f"no LLM-in-Sandbox-RL checkout at {RL_GIT} (HUTCH_LIS_MIRROR)")
    changed = src.replace("from llm_in_sandbox", "from hutch.compat.llm_in_sandbox")
    # Only import lines change: four of them, one inside the scoring worker.
    diff = [(a, b) for a, b in zip(src.splitlines(), changed.splitlines()) if a != b]
    assert len(diff) == 4 and all(b.lstrip().startswith("from hutch.compat.llm_in_sandbox") for _, b in diff)
    (fake_rllm / "lis_rl_env.py").write_text(changed)
    import lis_rl_env

    try:
        assert lis_rl_env.LLMinSandboxEnv.is_multithread_safe()
        env = lis_rl_env.LLMinSandboxEnv.from_dict(dict(ENTRY, docker_image=DEBIAN))
        check_rollout(env)
    finally:
        del sys.modules["lis_rl_env"]


class Rollout:
    """LLM-in-Sandbox-RL's environment's flow, written here: a runtime per
    episode, input files copied in, actions through Agent._execute_action,
    the answer read with cat, scored by the instruct_pretrain reward."""

    def __init__(self, entry, image):
        self.entry, self.image, self.runtime = entry, image, None
        self.agent = Agent.__new__(Agent)

    def reset(self):
        self.close()
        self.runtime = DockerRuntime(docker_image=self.image, repo_path="/testbed", logger=False)
        files = json.loads(self.entry["input_files"])
        host = self.tmp / "in"
        for name, text in files.items():
            (host / name).parent.mkdir(parents=True, exist_ok=True)
            (host / name).write_text(text)
        self.runtime.copy_dir_to_container(str(host), "/testbed/documents")
        return self.entry["problem_statement"], {"extra_info": self.entry}

    def step(self, action):
        if not isinstance(action, Action):
            action = Action.from_string(action)
        return self.agent._execute_action(action, self.runtime), 0.0, action.function_name == "submit", {}

    def compute_final_reward(self):
        answer, _ = self.runtime.run("cat /testbed//answer.txt 2>/dev/null || echo ''")
        kw = {k: v for k, v in self.entry.items() if k != "ground_truth"}
        return load_reward_function("instruct_pretrain")(answer.strip(), self.entry["ground_truth"], **kw)

    def close(self):
        if self.runtime is not None:
            self.runtime.close()
            self.runtime = None


def test_rollout_flow(tmp_path, tasks):
    env = Rollout(ENTRY, DEBIAN)
    env.tmp = tmp_path
    check_rollout(env)


# ---- LLM-in-Sandbox's own Agent driving hutch's runtime ----

# Run in a process of its own: LLM-in-Sandbox's agent.py needs litellm and
# rich, stood in for (tests/golden/lis/generate.py's stubs; litellm's
# completion replays the model's replies below).
AGENT_SCRIPT = r"""
import json, logging, sys, types
sys.path.insert(0, sys.argv[1])            # tests/golden/lis: the stubs
import generate
sys.path.insert(0, sys.argv[2])            # the llm_in_sandbox package
replies = [("execute_bash", {"command": "echo hi; echo oops >&2; exit 2"}),
           ("str_replace_editor", {"command": "create", "path": "/testbed/a.py", "file_text": "x = 1\n"}),
           ("str_replace_editor", {"command": "view", "path": "/testbed/a.py"}),
           ("submit", {})]

class Msg:
    def __init__(self, name, args):
        fn = types.SimpleNamespace(name=name, arguments=json.dumps(args))
        self.content, self.tool_calls = "thinking", [types.SimpleNamespace(id="c%d" % len(seen), function=fn)]
    def model_dump(self, exclude_none=True):
        return {"role": "assistant", "content": self.content}

seen = []
def completion(**kw):
    seen.append(kw["messages"][-1]["content"])
    return types.SimpleNamespace(choices=[types.SimpleNamespace(message=Msg(*replies[len(seen) - 1]))])

litellm = sys.modules["litellm"]
litellm.completion, litellm.token_counter = completion, lambda **kw: 10
from llm_in_sandbox.agent import Agent, AgentArgs
from hutch.compat.llm_in_sandbox import DockerRuntime
rt = DockerRuntime(sys.argv[3], logger=False)
args = AgentArgs(system_prompt="S", instance_prompt="{problem_statement}", llm_name="openai/m", quiet=True)
agent = Agent(args, logger=logging.getLogger("t"))
traj = agent.run(rt, "do it", max_steps=5)
print(json.dumps({"obs": [s.observation for s in traj.steps], "sent": seen, "steps": traj.metadata}))
rt.close()
"""


def run_agent(pkg):
    r = subprocess.run([sys.executable, "-c", AGENT_SCRIPT, GOLDEN_LIS, str(pkg), DEBIAN],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout.splitlines()[-1])


def test_lis_agent_drives_hutch_runtime(tmp_path):
    try:
        tar = git(LIS_GIT, "archive", LIS_COMMIT, "llm_in_sandbox")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip(f"no LLM-in-Sandbox checkout at {LIS_GIT} (HUTCH_LIS_MIRROR)")
    subprocess.run(["tar", "x", "-C", str(tmp_path)], input=tar, check=True)
    before = {s["id"] for s in labelled()}
    got = run_agent(tmp_path)
    assert got["steps"] == {"total_steps": 4}
    assert got["obs"][0] == ("Exit code: Error: Exit code 2\nExecution output of \\[execute_bash]:\n"
                             "\\[STDOUT]\nhi\n\n\\[STDERR]\noops\n")
    assert got["obs"][1].startswith("Execution output of \\[str_replace_editor]:\nFile created at /testbed/a.py.")
    assert got["obs"][2] == ("Execution output of \\[str_replace_editor]:\nHere's the result of running `cat -n` "
                             "on /testbed/a.py:\n     1\tx = 1\n     2\t\n     3\t")
    assert got["obs"][3] == "<<< Finished >>>"
    assert got["sent"][1].endswith(got["obs"][0] + "\nSteps Remaining: 4")
    assert {s["id"] for s in labelled()} <= before


def test_fake_lis_package_agent_drives_hutch_runtime(tmp_path):
    """A package named llm_in_sandbox laid out as LLM-in-Sandbox 0.2.0's
    (agent.py, action.py, observation.py, docker_runtime.py, ...), this
    test's own text: its Agent calls the runtime as LLM-in-Sandbox's does
    (demux_run for execute_bash, run for the editor's shell commands)."""
    pkg = tmp_path / "llm_in_sandbox"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("CMD_TIMEOUT = 120\nfrom .agent import Agent, AgentArgs\n")
    (pkg / "action.py").write_text("from hutch.compat.llm_in_sandbox.action import Action\n")
    (pkg / "docker_runtime.py").write_text("raise ImportError('docker is not installed')\n")
    (pkg / "agent.py").write_text(textwrap.dedent("""\
        import dataclasses, json
        from .action import Action

        @dataclasses.dataclass
        class AgentArgs:
            system_prompt: str
            instance_prompt: str
            llm_name: str
            quiet: bool = False

        class _Step:
            def __init__(self, observation):
                self.observation = observation

        class Agent:
            def __init__(self, args, logger=None):
                self.args = args

            def run(self, runtime, problem_statement, max_steps=5, **kw):
                import litellm
                steps = []
                for i in range(max_steps):
                    call = litellm.completion(messages=[{"content": problem_statement}]).choices[0].message.tool_calls[0]
                    action = Action(call.function.name, json.loads(call.function.arguments))
                    if action.function_name == "execute_bash":
                        out, err, code = runtime.demux_run(action.parameters["command"])
                        obs = "Exit code: %s\\n%s%s" % (code, out, err)
                    elif action.function_name == "str_replace_editor":
                        out, code = runtime.run("cat " + action.parameters["path"])
                        obs = "%s|%s" % (code, out)
                    else:
                        obs = "<<< Finished >>>"
                    steps.append(_Step(obs))
                    if action.function_name == "submit":
                        break
                return type("T", (), {"steps": steps, "metadata": {"total_steps": len(steps)}})()
        """))
    got = run_agent(tmp_path)
    assert got["obs"] == ["Exit code: Error: Exit code 2\nhi\noops\n",
                          "Error: Exit code 1|cat: /testbed/a.py: No such file or directory\n",
                          "Error: Exit code 1|cat: /testbed/a.py: No such file or directory\n",
                          "<<< Finished >>>"]
