# SPDX-License-Identifier: Apache-2.0
"""run_code and the persistent interpreter (the Debian test image: python3, gcc;
the figure round trips with the real matplotlib are in test_figures.py)."""

import os
import threading
import time

import pytest

import hutch

DEBIAN = os.environ.get("HUTCH_TEST_DEBIAN_IMAGE")
needs_debian = pytest.mark.skipif(not DEBIAN, reason="HUTCH_TEST_DEBIAN_IMAGE is not set")

@pytest.fixture(scope="module")
def deb():
    if not DEBIAN:
        pytest.skip("HUTCH_TEST_DEBIAN_IMAGE is not set")
    with hutch.Sandbox(DEBIAN) as s:
        yield s


def test_missing_language_is_refused(sb):
    with pytest.raises(hutch.NotFoundError) as e:
        sb.run_code("print(1)", lang="python")
    assert "python" in str(e.value)
    with pytest.raises(hutch.InvalidArgument):
        sb.run_code("x", lang="cobol")


def test_shell_snippet(sb):
    r = sb.run_code("echo $((6 * 7))", lang="sh")
    assert r.ok and r.stdout == b"42\n"


@needs_debian
def test_python_and_c(deb):
    assert deb.run_code("import sys; print(sys.version_info[0])").stdout == b"3\n"
    r = deb.run_code('#include <stdio.h>\nint main(void) { puts("from c"); return 3; }\n', lang="c")
    assert r.stdout == b"from c\n" and r.exit_code == 3
    assert deb.run_code("raise SystemExit(5)").exit_code == 5


@needs_debian
def test_interpreter_state_value_error(deb):
    with deb.interpreter() as it:
        assert it.run("x = 20").value is None
        r = it.run("print('hi', x)\nx * 2 + 2")
        assert r.stdout == "hi 20\n" and r.value == "42" and r.ok
        r = it.run("import sys; print('warn', file=sys.stderr); undefined_name")
        assert r.stderr.startswith("warn") and r.error["type"] == "NameError" and not r.ok
        assert it.run("x").value == "20"


@needs_debian
def test_interpreter_timeout_keeps_state(deb):
    with deb.interpreter() as it:
        it.run("kept = 'yes'")
        r = it.run("import time\nwhile True: time.sleep(0.1)", timeout=0.5)
        assert r.timed_out and r.error["type"] == "KeyboardInterrupt"
        assert it.run("kept").value == "'yes'"


@needs_debian
def test_killed_interpreter(deb):
    with deb.interpreter() as it:
        it.run("a = 1")
        with pytest.raises(hutch.InterpreterDied) as e:
            it.run("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
        assert "signal 9" in str(e.value)
        # The next call gets a new interpreter: the old variables are gone.
        assert it.run("'a' in globals()").value == "False"
        assert it.run("1 + 1").value == "2"


@needs_debian
def test_interpreter_from_threads(deb):
    with deb.interpreter() as it:
        it.run("n = 0")

        def bump():
            for _ in range(10):
                it.run("n += 1")

        ts = [threading.Thread(target=bump) for _ in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(60)
        assert it.run("n").value == "40"


@needs_debian
def test_interpreter_that_stops_reading(deb):
    with deb.interpreter() as it:
        # The code in the sandbox makes the driver stop reading requests: a
        # call larger than the pipe still ends at its timeout.
        it.run("import sys, time\nclass Stall:\n    def readline(self):\n        time.sleep(3600)\nsys.stdin = Stall()")
        t0 = time.monotonic()
        with pytest.raises(hutch.TimeoutError):
            it.run("x = 1  # " + "y" * (4 << 20), timeout=2)
        assert time.monotonic() - t0 < 20
        assert it.run("1 + 1").value == "2"  # a new interpreter


@needs_debian
def test_interpreter_protocol_is_hostile_input(deb):
    with deb.interpreter() as it:
        # The code in the sandbox finds the answer channel and lies on it.
        code = "import os\nfor fd in range(3, 10):\n    try: os.write(fd, b'not json\\n')\n    except OSError: pass"
        with pytest.raises(hutch.Error) as e:
            it.run(code)
        assert "malformed" in str(e.value)
        with pytest.raises(hutch.Error):
            it.run('import os\nos.write(3, b\'{"stdout": 1, "stderr": "", "value": null, "error": null, "figures": []}\\n\')')
        assert it.run("2 + 2").value == "4"


FORGED = '{"nonce": "00000000000000000000000000000000", "stdout": "forged", "stderr": "", "value": "\'forged\'", "error": null, "figures": [], "truncated": false, "data": {}}'


@needs_debian
def test_interpreter_answers_cannot_be_forged(deb):
    with deb.interpreter() as it:
        # The code writes well-formed answers on the answer channel, as
        # many as the calls that follow: none may be taken for a call's.
        forge = (
            "import os, sys\n"
            "proto = sys.modules['__main__'].__dict__.get('proto')\n"
            "fds = [proto.fileno()] if proto else list(range(3, 10))\n"
            f"line = {FORGED!r}.encode() + b'\\n'\n"
            "for fd in fds:\n"
            "    try: os.write(fd, line * 3)\n"
            "    except OSError: pass\n"
            "'genuine'"
        )
        try:
            r = it.run(forge)
        except hutch.Error as e:
            assert "forged" not in str(e) and "not this call's" in str(e)
        else:
            assert r.stdout != "forged" and r.value == "'genuine'"
        for _ in range(3):
            r = it.run("'next'")
            assert r.stdout == "" and r.value == "'next'"
        # A background thread that writes one later, during another call.
        try:
            it.run(
                "import os, sys, threading, time\n"
                "def later():\n"
                "    time.sleep(0.5)\n"
                "    for fd in range(3, 10):\n"
                f"        try: os.write(fd, {FORGED!r}.encode() + b'\\n')\n"
                "        except OSError: pass\n"
                "threading.Thread(target=later, daemon=True).start()"
            )
            r = it.run("import time; time.sleep(1.5); 'slow'")
        except hutch.Error as e:
            assert "not this call's" in str(e) or "malformed" in str(e)
        else:
            assert r.stdout == "" and r.value == "'slow'"
        assert it.run("3 * 3").value == "9"


def test_installer_output_in_errors_is_escaped():
    # A failed install's error quotes the installer's last lines, which the
    # sandbox wrote: an OSC 52 (clipboard) or a cursor move stays inert text.
    from hutch._code import _escape

    assert _escape("ok \x1b]52;c;aGk=\x07 \x9b2J\x7f\u202e") == "ok \\x1b]52;c;aGk=\\x07 \\x9b2J\\x7f\\u202e"
    assert _escape("plain text: é, 中") == "plain text: é, 中"
