# SPDX-License-Identifier: Apache-2.0
"""What the sandbox can make the host hold through the persistent
interpreter's answer channel: time, memory and the caller's stack.  The code
a call runs is the attacker: it finds the answer channel (a pipe of the
driver's other than its stdin and stderr) and writes on it (the Debian test
image: python3)."""

import os
import resource
import threading
import time

import pytest

import hutch

DEBIAN = os.environ.get("HUTCH_TEST_DEBIAN_IMAGE")

# Writes the bytes of the expression DATA on every pipe the driver holds
# besides its stdin and stderr (its answer channel), 4 KiB at a time into a
# pipe shrunk to 4 KiB, so that each of the host's reads gets 4 KiB.
ATTACK = (
    "import fcntl, os, stat\n"
    "mine = {(os.fstat(0).st_ino), (os.fstat(2).st_ino)}\n"
    "data = DATA\n"
    "for fd in range(3, 64):\n"
    "    try:\n"
    "        st = os.fstat(fd)\n"
    "    except OSError:\n"
    "        continue\n"
    "    if stat.S_ISFIFO(st.st_mode) and st.st_ino not in mine:\n"
    "        fcntl.fcntl(fd, 1031, 4096)  # F_SETPIPE_SZ\n"
    "        for i in range(0, len(data), 4096):\n"
    "            os.write(fd, data[i : i + 4096])\n"
)


@pytest.fixture(scope="module")
def deb():
    if not DEBIAN:
        pytest.skip("HUTCH_TEST_DEBIAN_IMAGE is not set")
    with hutch.Sandbox(DEBIAN) as s:
        yield s


def attack(data: str, prelude: str = "") -> str:
    return prelude + ATTACK.replace("DATA", data)


def peak_rss_mib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def test_a_32_mib_answer_line_is_refused_in_time(deb):
    # Read quadratically (each chunk appended to the whole and the whole
    # searched), a 32 MiB line held the host for about a minute.
    with deb.interpreter() as it:
        it.run("kept = 1")
        t0 = time.monotonic()
        with pytest.raises(hutch.Error) as e:
            it.run(attack("b'x' * (32 << 20) + b'\\n'"))
        took = time.monotonic() - t0
        assert took < 15, f"the 32 MiB line took {took:.1f} s to refuse"
        assert "longer than" in str(e.value), str(e.value)
        assert it.run("'kept' in globals()").value == "False"  # it was killed
        assert it.run("6 * 7").value == "42"


def test_a_nested_answer_is_a_protocol_error(deb):
    # json.loads recurses once per level: RecursionError, raised into the
    # caller, is not hutch's error.
    with deb.interpreter() as it:
        for data in ("b'[' * 200000 + b']' * 200000 + b'\\n'", "b'{\"a\":' * 100000 + b'1' + b'}' * 100000 + b'\\n'"):
            with pytest.raises(hutch.Error) as e:
                it.run(attack(data))
            assert "malformed" in str(e.value), str(e.value)
        assert it.run("1 + 1").value == "2"


def test_an_answer_of_many_containers_does_not_blow_up_the_host(deb):
    # 15 MiB of "[]," decode to five million lists: about 1 GiB in the
    # host's process for one answer.
    before = peak_rss_mib()
    with deb.interpreter() as it:
        with pytest.raises(hutch.Error) as e:
            it.run(attack("b'[' + b'[],' * (5 << 20) + b'[]]\\n'"))
        assert "malformed" in str(e.value), str(e.value)
        assert it.run("2 + 2").value == "4"
    grew = peak_rss_mib() - before
    assert grew < 256, f"the host's peak memory grew by {grew} MiB for one answer"


def test_a_deep_value_in_a_well_formed_answer_is_refused(deb):
    # The code can read its own call's nonce (it runs in the driver): an
    # answer with that nonce and a deeply nested "error" would reach the
    # caller, whose repr() or json.dumps() of it then recurses.
    prelude = (
        "import json, sys\n"
        "f = sys._getframe()\n"
        "while 'nonce' not in f.f_locals:\n"
        "    f = f.f_back\n"
        "deep = '[' * 900 + ']' * 900\n"
        "ans = '{\"nonce\": %s, \"stdout\": \"\", \"stderr\": \"\", \"value\": null, \"figures\": [], '\n"
        "ans += '\"error\": {\"type\": \"X\", \"message\": \"\", \"traceback\": \"\", \"deep\": %s}}'\n"
        "line = (ans % (json.dumps(f.f_locals['nonce']), deep)).encode() + b'\\n'\n"
    )
    code = attack("line", prelude)
    with deb.interpreter() as it:
        with pytest.raises(hutch.Error) as e:
            it.run(code)
        assert "malformed" in str(e.value), str(e.value)
        assert it.run("3").value == "3"


def test_every_call_has_a_default_timeout(deb, monkeypatch):
    # Code that ignores the interrupt and never answers: without a timeout
    # of the caller's, the call still ends (the default, shortened here).
    monkeypatch.setattr(hutch.Interpreter, "DEFAULT_TIMEOUT", 1.5, raising=False)
    with deb.interpreter() as it:
        it.run("import signal; signal.signal(signal.SIGINT, signal.SIG_IGN)")
        out = {}

        def call():
            try:
                it.run("import time; time.sleep(3600)")
                out["r"] = "answered"
            except hutch.TimeoutError as e:
                out["r"] = e

        t0 = time.monotonic()
        th = threading.Thread(target=call, daemon=True)
        th.start()
        th.join(30)
        hung = th.is_alive()
        if hung:
            it._proc.kill()  # let the test end on the old code
            th.join(10)
        assert not hung, "the call waited on the sandbox without end"
        assert isinstance(out.get("r"), hutch.TimeoutError) and time.monotonic() - t0 < 20
        assert it.run("5").value == "5"
        assert deb.interpreter(timeout=None)._timeout is None  # no bound, when asked for


def test_an_honest_call_with_much_output_is_cut_not_killed(deb):
    # What the driver answers stays under the cap: output past it is cut
    # and said to be, and the variables stay.
    with deb.interpreter() as it:
        it.run("kept = 'yes'")
        r = it.run("print('x' * (20 << 20))\nimport sys; sys.stderr.write('e' * (20 << 20))\n'v' * (20 << 20)")
        assert r.truncated
        assert r.stdout.startswith("xxx") and len(r.stdout) < (20 << 20)
        assert r.stderr.startswith("eee") and len(r.stderr) < (20 << 20)
        assert r.value.startswith("'vvv") and len(r.value) < (20 << 20)
        assert it.run("kept").value == "'yes'"


def test_the_shape_check_takes_every_honest_answer():
    # Strings full of what the check looks at (quotes, backslashes,
    # brackets), as the driver's json.dumps writes them.
    import json
    import random

    from hutch._interp import FIELD_LIMITS, MIME_TYPES, _shape_ok

    rnd = random.Random(7)
    alphabet = '"\\[]{}:,nu\u00e9\U0001f600\x00\n '

    def text():
        return "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(0, 40)))

    for _ in range(2000):
        err = rnd.choice([None, {"type": text(), "message": text(), "traceback": text()}])
        figs = [text() for _ in range(rnd.randrange(0, FIELD_LIMITS["max_figures"] + 1))]
        data = {m: text() for m in MIME_TYPES if rnd.random() < 0.5}
        ans = {"value": rnd.choice([None, text()]), "error": err, "figures": figs, "stdout": text(),
               "stderr": text(), "truncated": rnd.random() < 0.5, "nonce": "ab" * 16, "data": data}
        line = json.dumps(ans)
        assert _shape_ok(line), line
    assert not _shape_ok('{"a": [[[[]]]]}')
    assert not _shape_ok('{"a": "\\\\", "b": [[[[]]]]}')
    assert not _shape_ok('{"a": "\\"", "b": [[[[]]]]}')
    assert not _shape_ok("[" + "0," * 5000 + "0]")
