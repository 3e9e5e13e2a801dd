# SPDX-License-Identifier: Apache-2.0
"""Sandbox.exec: a command to its end."""

import hutch


def test_exit_code_and_output(sb):
    r = sb.exec("echo out; echo err >&2; exit 3")
    assert r.exit_code == 3
    assert r.stdout == b"out\n"
    assert r.stderr == b"err\n"
    assert not r.timed_out and r.signal == 0 and not r.ok


def test_argv_is_not_split(sb):
    r = sb.exec(["printf", "[%s]", "a b", "$HOME"])
    assert r.ok and r.stdout == b"[a b][$HOME]"


def test_stdin_env_cwd(sb):
    r = sb.exec("cat; echo $FOO; pwd", stdin="line\n", env={"FOO": "bar"}, cwd="/tmp")
    assert r.stdout == b"line\nbar\n/tmp\n"


def test_no_stdin_reads_eof(sb):
    r = sb.exec("cat", timeout=10)
    assert r.ok and r.stdout == b"" and not r.timed_out


def test_timeout_kills(sb):
    r = sb.exec("echo started; sleep 30", timeout=0.5)
    assert r.timed_out and r.exit_code == 124
    assert r.stdout == b"started\n"
    assert r.wall_seconds < 10


def test_missing_program(sb):
    # Nothing ran to say why: hutch says it on stderr, with the errno's
    # text, as hutch exec does.
    r = sb.exec(["/no/such/program"])
    assert r.exit_code == 127 and r.stdout == b""
    assert r.failure == "execute /no/such/program: No such file or directory"
    assert r.stderr == b"hutch: execute /no/such/program: No such file or directory\n"


def test_program_not_executable(sb):
    sb.write_file("/tmp/plain", "not a program")
    r = sb.exec(["/tmp/plain"], stdin="")
    assert r.exit_code == 126
    assert r.stderr.endswith(b": Permission denied\n") and b"/tmp/plain" in r.stderr, r.stderr


def test_a_failure_to_start_is_not_in_a_spawned_streams(sb):
    # A spawned process's streams are its own: the failure is in .exit.
    p = sb.spawn(["/no/such/program"])
    assert p.wait(30) == 127
    assert p.stderr.read() == b""
    assert p.exit.failure == "execute /no/such/program: No such file or directory" and p.exit.stderr == b""


def test_killed_by_signal(sb):
    r = sb.exec("kill -9 $$")
    assert r.signal == 9 and r.exit_code == 137


def test_large_output_and_cap(sb):
    r = sb.exec("head -c 3000000 /dev/zero")
    assert len(r.stdout) == 3000000 and not r.stdout_truncated
    r = sb.exec("head -c 100000 /dev/zero", max_output=1000)
    assert len(r.stdout) == 1000 and r.stdout_truncated and r.ok


def test_background_child_does_not_hang(sb):
    # A process left running holds stdout open: exec returns anyway.
    r = sb.exec("sleep 30 & echo parent", timeout=20)
    assert r.ok and r.stdout == b"parent\n" and r.wall_seconds < 10


def test_bad_env(sb):
    import pytest

    with pytest.raises(ValueError):
        sb.exec("true", env=["NOEQUALS"])


def test_usage_fields(sb):
    r = sb.exec("true")
    assert isinstance(r.usage, hutch.Usage) and r.oom_killed is False
