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
    r = sb.exec(["/no/such/program"])
    assert r.exit_code == 127
    assert r.failure


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
