# SPDX-License-Identifier: Apache-2.0
"""hutch.compat.llm_sandbox: the llm-sandbox session contract."""


import pytest

from hutch.compat.llm_sandbox import ConsoleOutput, ExecutionResult, NotOpenSessionError, SandboxSession

from test_code import DEBIAN


def test_commands_and_copies(image, tmp_path):
    src = tmp_path / "in.txt"
    src.write_text("to the sandbox\n")
    with SandboxSession(lang="python", image=image) as s:
        out = s.execute_command("pwd; echo err >&2; exit 2")
        assert isinstance(out, ConsoleOutput)
        assert out.stdout == "/sandbox\n" and out.stderr == "err\n" and out.exit_code == 2 and not out.success()
        s.copy_to_runtime(str(src), "/sandbox/in.txt")
        assert s.execute_command("cat in.txt").stdout == "to the sandbox\n"
        s.execute_command("echo back > out.txt")
        s.copy_from_runtime("/sandbox/out.txt", str(tmp_path / "out.txt"))
        assert (tmp_path / "out.txt").read_text() == "back\n"
        last = s.execute_commands(["true", "false", "echo never"])
        assert last.exit_code == 1 and last.stdout == ""
    assert not s.is_open
    with pytest.raises(NotOpenSessionError):
        s.execute_command("true")


@pytest.mark.skipif(not DEBIAN, reason="HUTCH_TEST_DEBIAN_IMAGE is not set")
def test_run_python():
    with SandboxSession(lang="python", image=DEBIAN) as s:
        r = s.run("print(sum(range(10)))")
        assert isinstance(r, ExecutionResult) and r.stdout == "45\n" and r.exit_code == 0 and r.plots == []
        assert s.run("raise ValueError('x')").exit_code != 0
