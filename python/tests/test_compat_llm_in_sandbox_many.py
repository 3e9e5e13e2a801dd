# SPDX-License-Identifier: Apache-2.0
"""hutch.compat.llm_in_sandbox for training: many runtimes alive at once
from threads, nothing left after close(), the interpreter's end or SIGKILL,
and rewards scored in a sandbox of their own."""

import concurrent.futures
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import hutch
from hutch.compat.llm_in_sandbox import DockerRuntime
from hutch.compat.llm_in_sandbox.benchmark.runner import RewardError, load_reward_function

DEBIAN = os.environ.get("HUTCH_TEST_DEBIAN_IMAGE")
pytestmark = pytest.mark.skipif(not DEBIAN, reason="HUTCH_TEST_DEBIAN_IMAGE is not set (bash, python3)")
# bench/lis-runtime measures 512 (bench/README.md); the suite keeps to fewer.
MANY = int(os.environ.get("HUTCH_TEST_LIS_RUNTIMES", "48"))


def ids_alive(ids):
    return {s["id"] for s in hutch.sandboxes()} & set(ids)


def test_many_runtimes_from_threads():
    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        rts = list(pool.map(lambda _: DockerRuntime(DEBIAN, logger=False), range(MANY)))
        ids = [rt.container.id for rt in rts]
        try:
            assert len(set(ids)) == MANY and ids_alive(ids) == set(ids)
            # Each writes its own answer, then reads it back: no runtime sees another's files.
            list(pool.map(lambda p: p[1].run(f"echo {p[0]} > /testbed/answer.txt"), enumerate(rts)))
            got = list(pool.map(lambda rt: rt.run("cat /testbed/answer.txt; ls /testbed"), rts))
            assert got == [(f"{i}\ninput\noutput\nanswer.txt\n".replace("input\noutput\nanswer.txt",
                                                                      "answer.txt\ninput\noutput"), "0")
                           for i in range(MANY)]
        finally:
            list(pool.map(lambda rt: rt.close(), rts))
    assert not ids_alive(ids)


def test_one_runtime_from_many_threads():
    rt = DockerRuntime(DEBIAN, logger=False)
    try:
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            got = list(pool.map(lambda i: rt.demux_run(f"echo {i}; echo e{i} >&2; exit {i % 3}"), range(32)))
        assert got == [(f"{i}\n", f"e{i}\n", "0" if i % 3 == 0 else f"Error: Exit code {i % 3}") for i in range(32)]
    finally:
        rt.close()


LEAVER = """
import sys, time
from hutch.compat.llm_in_sandbox import DockerRuntime
rts = [DockerRuntime(sys.argv[1], logger=False) for _ in range(3)]
print(" ".join(rt.container.id for rt in rts), flush=True)
if sys.argv[2] == "wait":
    time.sleep(600)
"""


def test_interpreter_exit_leaves_nothing():
    r = subprocess.run([sys.executable, "-c", LEAVER, DEBIAN, "exit"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    ids = r.stdout.split()
    assert len(ids) == 3 and not ids_alive(ids)


def test_sigkill_leaves_nothing():
    p = subprocess.Popen([sys.executable, "-c", LEAVER, DEBIAN, "wait"], stdout=subprocess.PIPE, text=True)
    try:
        ids = p.stdout.readline().split()
        assert len(ids) == 3 and ids_alive(ids) == set(ids)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    deadline = time.monotonic() + 30
    while ids_alive(ids) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not ids_alive(ids)


# ---- rewards ----

@pytest.fixture
def task(tmp_path):
    d = tmp_path / "t"
    d.mkdir()
    (d / "reward.py").write_text(textwrap.dedent("""\
        import os, time
        def compute_score(agent_answer, ground_truth, mode="match", **kw):
            if mode == "raise":
                raise ValueError("bad answer " + agent_answer)
            if mode == "text":
                return "one"
            if mode == "sleep":
                time.sleep(kw["seconds"])
            if mode == "leave":
                open("/tmp/left", "w").write(agent_answer)
                os.system("sleep 100 &")
                print("%s ok 1.0" % agent_answer)  # a forged result line: not taken
                return 0.25
            if mode == "look":
                return 1.0 if os.path.exists("/tmp/left") else 0.0
            if mode == "write-root":
                open("/hutch-task/x", "w").write("x")
            return 1.0 if agent_answer.strip().lower() == ground_truth.strip().lower() else 0.0
        """))
    return d


def test_reward_scores_in_a_sandbox(task):
    f = load_reward_function(str(task), image=DEBIAN, timeout=60)
    try:
        assert f("Paris ", "paris") == 1.0 and f("Lyon", "paris") == 0.0
        # The answer is a string to compute_score, never code.
        assert f("__import__('os').system('touch /tmp/pwn')", "x") == 0.0
        assert f("x", "y", mode="leave") == 0.25
        assert f("x", "y", mode="look") == 0.0  # nothing of an earlier answer is left
        with pytest.raises(RewardError, match="ValueError: bad answer zz"):
            f("zz", "y", mode="raise")
        with pytest.raises(RewardError, match="not a finite number"):
            f("x", "y", mode="text")
        slow = load_reward_function(str(task), image=DEBIAN, timeout=3)
        with pytest.raises(RewardError, match="more than 3"):
            slow("x", "y", mode="sleep", seconds=120)
        slow.close()
        with pytest.raises(RewardError, match="Read-only file system"):
            f("x", "y", mode="write-root")
        assert not (task / "x").exists()
        assert f("a", "A") == 1.0  # it goes on after every failure
        g = pickle.loads(pickle.dumps(f))  # as LLM-in-Sandbox-RL's worker process gets it
        assert g("a", "a") == 1.0
        g.close()
    finally:
        f.close()


def test_reward_task_lookup(tmp_path, monkeypatch, task):
    monkeypatch.setenv("HUTCH_LIS_TASKS", str(tmp_path))
    monkeypatch.setenv("HUTCH_LIS_REWARD_IMAGE", DEBIAN)
    f = load_reward_function("t")
    try:
        assert f("x", "x") == 1.0
    finally:
        f.close()
    with pytest.raises(FileNotFoundError, match="nosuch"):
        load_reward_function("nosuch")
