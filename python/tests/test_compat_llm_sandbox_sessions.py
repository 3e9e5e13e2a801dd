# SPDX-License-Identifier: Apache-2.0
"""hutch.compat.llm_sandbox sessions in real sandboxes: commands, files,
code, time limits, streaming, runtime_configs, plots, the interactive
session and the pool's reset."""

import os

import pytest

from hutch.compat.llm_sandbox import (
    ArtifactSandboxSession,
    ConsoleOutput,
    InteractiveSandboxSession,
    NotOpenSessionError,
    SandboxSession,
)
from hutch.compat.llm_sandbox.exceptions import SandboxTimeoutError
from hutch.compat.llm_sandbox.pool import PoolConfig, create_pool_manager

from test_code import DEBIAN

MATPLOTLIB = os.environ.get("HUTCH_TEST_MATPLOTLIB_IMAGE")
needs_debian = pytest.mark.skipif(not DEBIAN, reason="HUTCH_TEST_DEBIAN_IMAGE is not set")


def test_commands_and_copies(image, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("to the sandbox\n")
    with SandboxSession(lang="python", image=image, backend="podman", client=object()) as s:
        out = s.execute_command("pwd; echo err >&2; exit 2")
        assert isinstance(out, ConsoleOutput)
        assert out.stdout == "/sandbox\n" and out.stderr == "err\n" and out.exit_code == 2 and not out.success()
        s.copy_to_runtime(str(src), "/sandbox/in.txt")
        assert s.execute_command("cat in.txt").stdout == "to the sandbox\n"
        s.execute_command("mkdir -p d && echo back > d/out.txt")
        s.copy_from_runtime("/sandbox/d/out.txt", str(tmp_path / "out.txt"))
        assert (tmp_path / "out.txt").read_text() == "back\n"
        s.copy_from_runtime("/sandbox/d", str(tmp_path / "tree"))
        assert (tmp_path / "tree" / "d" / "out.txt").read_text() == "back\n"
        last = s.execute_commands(["true", ("false", "/"), "echo never"])
        assert last.exit_code == 1 and last.stdout == ""
    assert not s.is_open
    with pytest.raises(NotOpenSessionError):
        s.execute_command("true")


def test_environment_and_no_network(image):
    cfg = {"environment": {"GREETING": "hi"}, "network_mode": "none", "mem_limit": "256m", "cap_drop": ["ALL"]}
    with SandboxSession(image=image, runtime_configs=cfg) as s:
        assert s.execute_command("echo $GREETING").stdout == "hi\n"
        # Loopback only: no interface but lo.
        lines = s.execute_command("cat /proc/net/dev").stdout.splitlines()[2:]
        assert [ln.split(":")[0].strip() for ln in lines] == ["lo"], lines


def test_streaming_callbacks(image):
    got = []
    with SandboxSession(image=image) as s:
        r = s.execute_command("echo one; echo two >&2; echo three", on_stdout=got.append)
    assert "".join(got) == "one\nthree\n" == r.stdout and r.stderr == "two\n"


@needs_debian
def test_run_python_and_timeout():
    with SandboxSession(lang="python", image=DEBIAN) as s:
        r = s.run("print(sum(range(10)))")
        assert r.stdout == "45\n" and r.exit_code == 0
        assert s.run("raise ValueError('x')").exit_code != 0
        with pytest.raises(SandboxTimeoutError):
            s.run("while True: pass", timeout=1)
        assert s.execute_command("ls /sandbox").stdout == "", "code files are not left behind"


@pytest.mark.skipif(not MATPLOTLIB, reason="HUTCH_TEST_MATPLOTLIB_IMAGE is not set")
def test_artifact_session_captures_plots():
    code = "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\nplt.figure(); plt.bar([1], [2]); plt.show()"
    with ArtifactSandboxSession(lang="python", image=MATPLOTLIB, runtime_configs={"network_mode": "none"}) as s:
        r = s.run(code)
        assert r.exit_code == 0, r.stderr
        assert [p.format.value for p in r.plots] == ["png", "png"]
        assert r.plots[0].content_base64.startswith("iVBORw0KGgo")
        assert len(s.run("print(1)", clear_plots=True).plots) == 0


@needs_debian
def test_interactive_session_keeps_state():
    with InteractiveSandboxSession(lang="python", image=DEBIAN, runtime_configs={"network_mode": "none"}) as s:
        s.run("x = 20")
        r = s.run("print(x + 1)\nx * 2")
        assert r.stdout == "21\n40\n" and r.exit_code == 0
        assert s.run("1/0").exit_code == 1
        s.restart()
        assert "NameError" in s.run("x").stderr


def test_pool_hands_back_a_reset_sandbox(image):
    pool = create_pool_manager(backend="docker", config=PoolConfig(max_pool_size=1, min_pool_size=0), image=image)
    try:
        with SandboxSession(pool=pool) as s:
            s.execute_command("echo secret > /sandbox/left; mkdir -p /etc/x; (sleep 300 &)")
            first = s.sandbox.id
        with SandboxSession(pool=pool) as s:
            assert s.sandbox.id == first, "the pool reused its one sandbox"
            assert s.execute_command("ls /sandbox/left /etc/x").exit_code != 0
            assert "sleep" not in s.execute_command("ps").stdout
        assert pool.get_stats()["total_size"] == 1
    finally:
        pool.close()


def test_runtime_configs_user(image, tmp_path):
    """runtime_configs user: the code runs as it, in a workdir of its own,
    with the files copied in its own; and it cannot become root again."""
    src = tmp_path / "data.txt"
    src.write_text("in\n")
    with SandboxSession(lang="python", image=image, runtime_configs={"user": "1000:1000"}, workdir="/tmp/sandbox") as s:
        out = s.execute_command("id -u; id -g; pwd; stat -c %u:%g .")
        assert out.stdout.split() == ["1000", "1000", "/tmp/sandbox", "1000:1000"]
        s.copy_to_runtime(str(src), "/tmp/sandbox/data.txt")
        out = s.execute_command("stat -c %u:%g data.txt; echo more >> data.txt && cat data.txt")
        assert out.stdout.split() == ["1000:1000", "in", "more"]
        status = s.execute_command("cat /proc/self/status").stdout
        assert "NoNewPrivs:\t1" in status and "CapEff:\t0000000000000000" in status
    with SandboxSession(lang="python", image=image, runtime_configs={"user": "1000:1000"}) as s:
        # The default workdir too is the user's, made by hutch.
        assert s.execute_command("touch here && stat -c %u here").stdout == "1000\n"


def test_runtime_configs_read_only(image):
    with SandboxSession(lang="python", image=image, runtime_configs={"read_only": True}, workdir="/tmp/w") as s:
        assert s.execute_command("touch /etc/x").exit_code != 0
        assert s.execute_command("touch here && echo ok").stdout == "ok\n"
    from hutch.compat.llm_sandbox.exceptions import ContainerError

    with pytest.raises(ContainerError, match="read_only=True: the workdir /sandbox"):
        with SandboxSession(lang="python", image=image, runtime_configs={"read_only": True}):
            pass


def test_pod_manifest_user_is_applied(image):
    pod = {"spec": {"containers": [{"name": "c", "securityContext": {"runAsUser": 1000, "runAsGroup": 1000}}]}}
    with SandboxSession(backend="kubernetes", lang="python", image=image, pod_manifest=pod) as s:
        assert s.execute_command("id -u; id -g").stdout.split() == ["1000", "1000"]


def test_unclosed_session_keeps_its_sandbox_for_container_id(image):
    """As a container outlives the session object that started it: a
    session dropped without close() (or its name bound to another) keeps
    its sandbox, which another session connects to by container_id, also
    given as the first session's .container (Kubernetes code does)."""
    import gc

    import hutch

    first = SandboxSession(lang="python", image=image)
    first.open()
    first.execute_command("echo kept > /sandbox/mark")
    sid, container = first.container.id, first.container
    del first, container
    gc.collect()
    assert sid in [s["id"] for s in hutch.sandboxes()]
    with SandboxSession(lang="python", container_id=sid) as again:
        assert again.execute_command("cat /sandbox/mark").stdout == "kept\n"
        with SandboxSession(lang="python", container_id=again.container) as third:
            assert third.execute_command("cat /sandbox/mark").stdout == "kept\n"
    hutch.Sandbox.attach(sid).destroy()
