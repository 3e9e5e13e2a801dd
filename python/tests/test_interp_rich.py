# SPDX-License-Identifier: Apache-2.0
"""The persistent interpreter's results beyond a repr: tracebacks of the
caller's code alone, and the last value's display data as a Jupyter kernel
returns it (text/plain, text/html, image/png, application/json), bounded
and checked (the Debian test image: python3)."""

import os

import pytest

import hutch
from hutch._interp import FIELD_LIMITS
from test_interp_bounds import attack

DEBIAN = os.environ.get("HUTCH_TEST_DEBIAN_IMAGE")


@pytest.fixture(scope="module")
def it():
    if not DEBIAN:
        pytest.skip("HUTCH_TEST_DEBIAN_IMAGE is not set")
    with hutch.Sandbox(DEBIAN) as s:
        with s.interpreter() as i:
            yield i


def test_a_traceback_shows_the_callers_code_only(it):
    it.run("def f():\n    return 1 / 0\n")
    r = it.run("x = 1\nf()")
    tb = r.error["traceback"]
    assert r.error["type"] == "ZeroDivisionError"
    assert tb.startswith('Traceback (most recent call last):\n  File "<cell '), tb
    assert "<string>" not in tb and ", in run" not in tb, tb
    # Each frame with its line, the call in this cell and the division in the earlier one.
    assert "    f()\n" in tb and "    return 1 / 0\n" in tb, tb
    assert tb.endswith("ZeroDivisionError: division by zero\n"), tb


def test_a_library_frame_stays(it):
    r = it.run("import json\njson.loads('{')")
    tb = r.error["traceback"]
    assert tb.startswith('Traceback (most recent call last):\n  File "<cell '), tb
    assert "json/decoder.py" in tb and "<string>" not in tb, tb


def test_a_syntax_error_has_no_frames(it):
    r = it.run("x = (1 +")
    tb = r.error["traceback"]
    assert r.error["type"] == "SyntaxError"
    assert "Traceback" not in tb and "<string>" not in tb and "ast.py" not in tb, tb
    assert tb.lstrip().startswith('File "<cell ') and "x = (1 +" in tb, tb


def test_an_interrupt_at_the_timeout_points_at_the_cell(it):
    r = it.run("import time\nwhile True:\n    time.sleep(0.01)", timeout=1)
    assert r.timed_out and r.error["type"] == "KeyboardInterrupt"
    tb = r.error["traceback"]
    assert tb.startswith('Traceback (most recent call last):\n  File "<cell ') and "<string>" not in tb, tb


RICH = '''
class Rich:
    def __repr__(self):
        return "Rich()"
    def _repr_html_(self):
        return "<b>rich</b>"
    def _repr_png_(self):
        return b"\\x89PNG\\r\\n\\x1a\\nnot really"
    def _repr_json_(self):
        return {"a": [1, 2.5, None, "\\u00e9"]}
'''


def test_the_value_has_its_display_data(it):
    it.run(RICH)
    r = it.run("Rich()")
    assert r.ok and not r.truncated and r.stderr == "", r.stderr
    assert r.data == {
        "text/plain": "Rich()",
        "text/html": "<b>rich</b>",
        "image/png": b"\x89PNG\r\n\x1a\nnot really",
        "application/json": {"a": [1, 2.5, None, "\u00e9"]},
    }
    assert r.value == "Rich()" and r.html == "<b>rich</b>" and r.png.startswith(b"\x89PNG") and r.json["a"][1] == 2.5


def test_plain_values_and_none(it):
    assert it.run("[1, 'a']").data == {"text/plain": "[1, 'a']"}
    assert it.run("x = 3").data == {}
    assert it.run("None").data == {}
    # A class is not its instances: K itself has no display data.
    it.run("class K:\n    def _repr_html_(self): return 'k'")
    assert it.run("K").data == {"text/plain": "<class '__main__.K'>"}


def test_what_ipython_takes_is_taken(it):
    # (data, metadata) tuples, a PNG as base64 text, JSON as text.
    r = it.run(
        "import base64\n"
        "class T:\n"
        "    def _repr_html_(self): return ('<i>t</i>', {'isolated': True})\n"
        "    def _repr_png_(self): return base64.b64encode(b'png bytes').decode()\n"
        "    def _repr_json_(self): return '[1, 2]'\n"
        "T()"
    )
    assert r.html == "<i>t</i>" and r.png == b"png bytes" and r.json == [1, 2], (r.data, r.stderr)


def test_an_object_that_answers_every_name_claims_nothing(it):
    r = it.run("class Any:\n    def __getattr__(self, name):\n        return lambda *a: '<b>x</b>'\nAny()")
    assert list(r.data) == ["text/plain"] and r.stderr == ""


def test_a_failing_representation_is_said_and_the_others_kept(it):
    r = it.run(
        "class Bad:\n"
        "    def _repr_html_(self): raise KeyError('boom')\n"
        "    def _repr_png_(self): return 42\n"
        "    def _repr_json_(self):\n"
        "        a = []\n"
        "        a.append(a)\n"
        "        return a\n"
        "    def _repr_markdown_(self): return 'ignored'\n"
        "Bad()"
    )
    assert r.ok and list(r.data) == ["text/plain"]
    assert "hutch: text/html of the value: KeyError: 'boom'" in r.stderr
    assert "hutch: image/png of the value: " in r.stderr
    assert "hutch: application/json of the value: ValueError: Circular reference detected" in r.stderr


def test_representations_are_bounded(it):
    budget = FIELD_LIMITS["data"]
    r = it.run(f"class Big:\n    def _repr_html_(self): return 'h' * {budget + 10}\n    def _repr_json_(self): return [1]\nBig()")
    assert r.truncated and "text/html" not in r.data and r.json == [1]
    assert "hutch: text/html of the value dropped" in r.stderr
    # Nested past the bound: the caller's repr() of it would recurse.
    r = it.run("class Deep:\n    def _repr_json_(self):\n        o = []\n        for _ in range(500): o = [o]\n        return o\nDeep()")
    assert "application/json" not in r.data and "nested deeper than" in r.stderr
    assert it.run("6 * 7").value == "42"


# The code finds its own call's nonce (it runs in the driver) and answers
# first, on the answer channel, with display data that is not well-formed.
FORGE = (
    "import json, sys\n"
    "f = sys._getframe()\n"
    "while 'nonce' not in f.f_locals:\n"
    "    f = f.f_back\n"
    "ans = {'nonce': f.f_locals['nonce'], 'stdout': '', 'stderr': '', 'value': VALUE, 'error': None,\n"
    "       'figures': [], 'truncated': False, 'data': DATA}\n"
    "line = json.dumps(ans).encode() + b'\\n'\n"
)


@pytest.mark.parametrize(
    "value, data",
    [
        ("'v'", "{'image/png': 'not base64!'}"),
        ("'v'", "{'application/json': '[1,'}"),
        ("'v'", "{'application/json': '[' * 200 + ']' * 200}"),
        ("'v'", "{'text/x-unknown': 'x'}"),
        ("'v'", "{'text/html': 5}"),
        ("None", "{'text/html': '<b>no value</b>'}"),
    ],
)
def test_malformed_display_data_breaks_the_protocol(it, value, data):
    it.run("kept = 1")
    with pytest.raises(hutch.Error) as e:
        it.run(attack("line", FORGE.replace("VALUE", value).replace("DATA", data)))
    assert "malformed" in str(e.value), str(e.value)
    assert it.run("'kept' in globals()").value == "False"  # it was killed and replaced
