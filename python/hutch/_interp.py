# SPDX-License-Identifier: Apache-2.0
"""Sandbox.interpreter(): a persistent Python interpreter in a sandbox."""

from __future__ import annotations

import base64
import json
import math
import secrets
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Union

from . import _hutch

# The program the sandbox's python3 runs: one JSON request per line on
# stdin, one JSON answer per line on a copy of its stdout.  What the code
# prints through sys.stdout and sys.stderr is captured per call; what it
# writes to the file descriptors directly (a subprocess) goes to stderr.
#
# The code runs in the driver's process, so it can write on the answer
# channel too (it is hostile input): each request carries a nonce the host
# draws for that call only, and an answer counts only with that nonce.  The
# code cannot know a later call's nonce, so it cannot answer for another
# call (an answer written ahead, or by a thread it left running, is refused
# and the interpreter killed); within its own call it decides its own
# results anyway.
# How deep a parsed JSON value nests, without recursing: the driver holds
# the value's application/json to a depth before it sends it, and the host
# holds what it reads to the same (the one source, run on both sides).
JSON_DEPTH = r"""
def json_depth(obj):
    deepest, todo = 0, [(obj, 1)]
    while todo:
        o, d = todo.pop()
        if isinstance(o, (list, dict)):
            deepest = max(deepest, d)
            todo.extend((v, d + 1) for v in (o.values() if isinstance(o, dict) else o))
    return deepest
"""
_json_ns: Dict[str, Any] = {}
exec(JSON_DEPTH, _json_ns)
_json_depth = _json_ns["json_depth"]

DRIVER = JSON_DEPTH + r"""
import ast, base64, contextlib, io, json, linecache, os, sys, traceback
# The answer channel: a copy of stdout kept by main() only, not inherited
# by what the code starts; fd 1 becomes stderr's.
_proto_fd = os.dup(1)
os.dup2(2, 1)
sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", 0), write_through=True)
ns = {"__name__": "__main__", "__builtins__": __builtins__}
# What one answer may hold (bytes of JSON text per field, figures), so that
# it stays under the host's cap on an answer: past it, a field is cut.
limits = json.loads(sys.argv[1])

# text, cut (its end kept when tail) so that its JSON takes at most the
# field's bytes; and whether it was cut.
def fit(text, field, tail=False):
    budget = limits[field]
    if len(text) * 12 <= budget or len(json.dumps(text)) <= budget:
        return text, False
    cut = lambda n: text[len(text) - n:] if tail else text[:n]
    lo, hi = 0, min(len(text), budget)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if len(json.dumps(cut(mid))) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return cut(lo), True

# The figures the call left open, as PNG, but the one that is its value
# (returned as that).
def figures(value_fig):
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return [], False
    out, size, cut = [], 0, False
    for n in plt.get_fignums():
        fig = plt.figure(n)
        if fig is value_fig:
            continue
        b = io.BytesIO()
        fig.savefig(b, format="png")
        f = base64.b64encode(b.getvalue()).decode()
        if len(out) == limits["max_figures"] or size + len(f) > limits["figures"]:
            cut = True
            continue
        out.append(f)
        size += len(f)
    plt.close("all")
    return out, cut

# The traceback from the user's code on: the driver's frames above the
# first cell's are left out.
def user_traceback(e):
    tb = e.__traceback__
    while tb is not None and not tb.tb_frame.f_code.co_filename.startswith("<cell "):
        tb = tb.tb_next
    if tb is None:  # raised before any cell ran (SyntaxError, an interrupt)
        return "".join(traceback.format_exception_only(type(e), e))
    return "".join(traceback.format_exception(type(e), e, tb))

# The object's rich representations, as Jupyter shows them: text/html,
# image/png and application/json from its _repr_html_, _repr_png_ and
# _repr_json_, and a matplotlib figure as PNG.  Each is kept whole or
# dropped, within the answer's "data" bytes in all.
REPRS = (("text/html", "_repr_html_"), ("image/png", "_repr_png_"), ("application/json", "_repr_json_"))

def rich(v, notes):
    data, left, cut = {}, limits["data"], False
    mpl = sys.modules.get("matplotlib.figure")
    for mime, name in REPRS:
        try:
            if mime == "image/png" and mpl is not None and isinstance(v, mpl.Figure):
                b = io.BytesIO()
                v.savefig(b, format="png")
                r = b.getvalue()
            else:
                # Looked up on the type: an object that answers every name
                # (__getattr__) does not claim every representation.
                f = getattr(type(v), name, None)
                r = f(v) if callable(f) else None
            if isinstance(r, tuple):  # (data, metadata)
                r = r[0] if r else None
            if r is None:
                continue
            if mime == "image/png":
                raw = bytes(r) if isinstance(r, (bytes, bytearray)) else base64.b64decode(r, validate=True)
                r = base64.b64encode(raw).decode()
            elif mime == "application/json":
                r = json.dumps(json.loads(r) if isinstance(r, str) else r)
                if json_depth(json.loads(r)) > limits["json_depth"]:
                    raise ValueError("nested deeper than %d" % limits["json_depth"])
            elif not isinstance(r, str):
                raise TypeError("%s returned %s, not str" % (name, type(r).__name__))
        except Exception as e:
            notes.append("hutch: %s of the value: %s: %s\n" % (mime, type(e).__name__, e))
            continue
        size = len(json.dumps(r))
        if size > left:
            notes.append("hutch: %s of the value dropped: %d bytes, over what is left of the %d bytes its "
                         "representations share\n" % (mime, size, limits["data"]))
            cut = True
            continue
        data[mime] = r
        left -= size
    return data, cut

def run(code, n):
    out, err = io.StringIO(), io.StringIO()
    res = {"value": None, "error": None, "data": {}}
    cut, notes = [], []
    value_fig = None
    name = "<cell %d>" % n
    # Source lines for the cell's frames in tracebacks, now and later.
    linecache.cache[name] = (len(code), None, code.splitlines(True), name)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            tree = ast.parse(code, name, "exec")
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            exec(compile(tree, name, "exec"), ns)
            if last is not None:
                v = eval(compile(last, name, "eval"), ns)
                if v is not None:
                    res["value"], c = fit(repr(v), "value")
                    cut.append(c)
                    res["data"], c = rich(v, notes)
                    cut.append(c)
                    if "image/png" in res["data"]:
                        value_fig = v
        except BaseException as e:
            (tname, c1), (message, c2) = fit(type(e).__name__, "type"), fit(str(e), "message")
            tb, c3 = fit(user_traceback(e), "traceback", tail=True)
            res["error"] = {"type": tname, "message": message, "traceback": tb}
            cut += [c1, c2, c3]
    stderr = err.getvalue() + "".join(notes)
    try:
        res["figures"], c = figures(value_fig)
        if c:
            stderr += "hutch: figures past %d, or %d bytes, were dropped\n" % (limits["max_figures"], limits["figures"])
            cut.append(c)
    except Exception as e:
        res["figures"] = []
        stderr += "hutch: figures: %r\n" % (e,)
    res["stdout"], c1 = fit(out.getvalue(), "stdout")
    res["stderr"], c2 = fit(stderr, "stderr")
    res["truncated"] = any(cut + [c1, c2])
    return res

def main(proto):
    n = 0
    while True:
        nonce = None
        try:
            line = sys.stdin.readline()
            if not line:
                break
            req = json.loads(line)
            nonce = req["nonce"]
            n += 1
            res = run(req["code"], n)
        except KeyboardInterrupt:
            if nonce is None:
                continue  # between calls: the request is read next
            res = {"value": None, "error": {"type": "KeyboardInterrupt", "message": "", "traceback": ""},
                   "data": {}, "stdout": "", "stderr": "", "figures": [], "truncated": False}
        res["nonce"] = nonce
        proto.write(json.dumps(res) + "\n")
        proto.flush()

main(os.fdopen(_proto_fd, "w"))
"""

#: After an interrupt (SIGINT) at the timeout, how long the interpreter has
#: to answer before it is killed and replaced.
INTERRUPT_GRACE = 2.0
#: The longest answer line taken from the interpreter, in bytes: what runs
#: in the sandbox writes it, so a longer one ends the interpreter.  16 MiB
#: is above all the driver sends (its fields are cut to FIELD_LIMITS, 15.75
#: MiB in all) and keeps one answer's cost on the host small: the line
#: (read in linear time), its decoded text (at most 4 bytes a character),
#: the figures' bytes and the value's JSON (at most 2 MiB of text), under
#: 150 MiB, parsed in well under a second.
MAX_ANSWER = 16 << 20
#: What the driver puts in one answer at most: bytes of JSON text per
#: field (past them the field is cut and Execution.truncated set), the
#: figures' base64 in all, and their number (the rest are dropped); "data"
#: is the value's rich representations together (each kept whole or
#: dropped, which sets truncated too).
FIELD_LIMITS = {
    "stdout": 4 << 20,
    "stderr": 4 << 20,
    "value": 1 << 20,
    "type": 1 << 10,
    "message": 256 << 10,
    "traceback": 512 << 10,
    "figures": 4 << 20,
    "max_figures": 64,
    "data": 2 << 20,
}
#: How deep the value's application/json may nest: the caller's repr() or
#: json.dumps() of it recurses once per level.
JSON_MAX_DEPTH = 100
#: The rich representations of a call's value (Execution.data) besides
#: text/plain, the repr.
MIME_TYPES = ("text/html", "image/png", "application/json")
#: A call's timeout when neither the call nor the interpreter names one:
#: every call waits on what runs in the sandbox, so none waits without end
#: unless asked to (Interpreter(timeout=None)).
DEFAULT_TIMEOUT = 300.0

# An answer's shape, before it is parsed: its fields' keys and values and
# the figures are at most this many strings, with this much text between
# them, and four containers (the answer, its error, its figures, its
# data).  So a hostile line never makes json.loads recurse deeply or build
# millions of objects from a few megabytes.
_MAX_STRINGS = 32 + FIELD_LIMITS["max_figures"]  # 24 keys and values, and the figures
_MAX_OUTSIDE = 4096
_MAX_CONTAINERS = 4


def _shape_ok(text: str) -> bool:
    """Whether a line's JSON has at most the answer's strings, text outside
    them and containers; linear, and allocates a few copies of the text."""
    # Escaped backslashes, then escaped quotes: what is left of a string is
    # its content without any quote, so quotes alternate start and end.
    bare = text.replace("\\\\", "").replace('\\"', "")
    if bare.count('"') > 2 * _MAX_STRINGS:
        return False
    outside = bare.split('"')[0::2]
    return (
        sum(len(p) for p in outside) <= _MAX_OUTSIDE
        and sum(p.count("[") + p.count("{") for p in outside) <= _MAX_CONTAINERS
    )


class _Default:
    def __repr__(self) -> str:
        return "DEFAULT_TIMEOUT"


#: "No timeout given": the interpreter's default (DEFAULT_TIMEOUT).
DEFAULT = _Default()

_FIELDS = {"nonce", "stdout", "stderr", "value", "error", "figures", "truncated", "data"}
_ERROR_FIELDS = {"type", "message", "traceback"}


class InterpreterDied(_hutch.Error):
    """The interpreter process ended during a call: its variables are lost;
    the next call starts a new one."""


@dataclass(frozen=True)
class Execution:
    """One call's results: what it printed, the repr of its last expression
    (None when there is none or it is None), the exception it raised (type,
    message, traceback of the call's code) and every matplotlib figure it
    left open, as PNG.

    data is the last expression's display data, as a Jupyter kernel's
    execute_result holds it: "text/plain" (the repr, as value), and where
    the value has them "text/html" (its _repr_html_), "image/png" (PNG
    bytes: its _repr_png_, or a matplotlib figure drawn) and
    "application/json" (its _repr_json_, parsed).  Empty without a value.
    truncated: a field was cut, or figures or a representation dropped, to
    keep the answer within FIELD_LIMITS."""

    stdout: str
    stderr: str
    value: Optional[str] = None
    error: Optional[dict] = None
    figures: List[bytes] = field(default_factory=list)
    timed_out: bool = False
    truncated: bool = False
    data: Dict[str, Any] = field(default_factory=dict)

    @property
    def html(self) -> Optional[str]:
        return self.data.get("text/html")

    @property
    def png(self) -> Optional[bytes]:
        return self.data.get("image/png")

    @property
    def json(self) -> Any:
        return self.data.get("application/json")

    @property
    def ok(self) -> bool:
        return self.error is None


class Interpreter:
    """A persistent Python interpreter inside a sandbox: run(code) executes
    code in one namespace that survives between calls, as a notebook's
    kernel does.  One call at a time (calls from several threads queue);
    close() ends it.  timeout is each call's unless the call names its own:
    DEFAULT_TIMEOUT seconds by default, None for no bound."""

    DEFAULT_TIMEOUT = DEFAULT_TIMEOUT

    def __init__(self, sb, python: str = "python3", timeout: Union[None, float, _Default] = DEFAULT):
        self._sb = sb
        self._python = python
        self._timeout = self.DEFAULT_TIMEOUT if isinstance(timeout, _Default) else timeout
        self._lock = threading.Lock()
        self._proc = None
        self._buf = bytearray()
        self._scanned = 0  # bytes of _buf known to hold no newline
        self._raw_err = bytearray()
        self._err_lock = threading.Lock()
        self._start()

    def _start(self) -> None:
        env = ["MPLBACKEND=Agg", "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1"]
        argv = [self._python, "-u", "-c", DRIVER, json.dumps(dict(FIELD_LIMITS, json_depth=JSON_MAX_DEPTH))]
        self._proc = self._sb._h.spawn(argv, env, None, True, True, True)
        self._buf = bytearray()
        self._scanned = 0
        proc = self._proc
        threading.Thread(target=self._pump_stderr, args=(proc,), daemon=True, name="hutch-interp-stderr").start()

    def _pump_stderr(self, proc) -> None:
        try:
            while True:
                chunk = proc.read(2)
                if not chunk:
                    return
                with self._err_lock:
                    self._raw_err += chunk[: max(0, (1 << 20) - len(self._raw_err))]
        except _hutch.Error:
            return

    def _readline(self, deadline: Optional[float]) -> Optional[bytes]:
        """A line from the interpreter; b"" when it ended, None at the
        deadline.  Linear in the line's length however it comes (the
        sandbox can make each read return a few bytes): each read is
        appended and only its bytes are searched."""
        while True:
            nl = self._buf.find(b"\n", self._scanned)
            if nl >= 0:
                if nl > MAX_ANSWER:
                    raise self._bad(f"an answer longer than {MAX_ANSWER} bytes")
                line = bytes(self._buf[:nl])
                del self._buf[: nl + 1]
                self._scanned = 0
                return line
            self._scanned = len(self._buf)
            if len(self._buf) > MAX_ANSWER:
                raise self._bad(f"an answer longer than {MAX_ANSWER} bytes")
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            chunk = self._proc.read(1, 1 << 20, left)
            if chunk is None:
                return None
            if not chunk:
                return b""
            self._buf += chunk

    def _died(self, what: str):
        proc, self._proc = self._proc, None
        ex = proc.wait(5)
        proc.close()
        how = "" if ex is None else (f" (signal {ex['signal']})" if ex["signal"] else f" (exit {ex['exit_code']})")
        with self._err_lock:
            tail = bytes(self._raw_err[-2000:]).decode("utf-8", "replace")
            self._raw_err.clear()
        err = InterpreterDied(f"interpreter: the Python interpreter in the sandbox {what}{how}; its variables are lost")
        err.errno, err.message, err.hint = None, str(err), "the next call starts a new interpreter"
        err.stderr = tail
        return err

    def _bad(self, what: str) -> "_hutch.Error":
        """The interpreter broke the protocol (what runs in it can write to
        it): it is killed and replaced at the next call."""
        self._proc.kill()
        self._died(f"sent {what}")
        err = _hutch.Error(f"interpreter: the Python interpreter in the sandbox sent {what}; it was killed")
        err.errno, err.message, err.hint = None, str(err), "the next call starts a new interpreter"
        return err

    @staticmethod
    def _answer(line: bytes) -> Optional[dict]:
        """The answer in line, checked in shape before it is parsed and in
        every field after; None when it is not one."""
        try:
            text = line.decode("utf-8")
            if not _shape_ok(text):
                return None
            res = json.loads(text)
        except (ValueError, RecursionError, MemoryError):
            return None
        if not isinstance(res, dict) or set(res) != _FIELDS:
            return None
        err = res["error"]
        err_ok = err is None or (
            isinstance(err, dict) and set(err) == _ERROR_FIELDS and all(isinstance(v, str) for v in err.values())
        )
        data = res["data"]
        data_ok = (
            isinstance(data, dict)
            and set(data) <= set(MIME_TYPES)
            and all(isinstance(v, str) for v in data.values())
            and (res["value"] is not None or not data)
        )
        ok = (
            err_ok
            and data_ok
            and isinstance(res["nonce"], str)
            and isinstance(res["stdout"], str)
            and isinstance(res["stderr"], str)
            and isinstance(res["value"], (str, type(None)))
            and isinstance(res["figures"], list)
            and all(isinstance(f, str) for f in res["figures"])
            and isinstance(res["truncated"], bool)
        )
        return res if ok else None

    def _data(self, value: Optional[str], sent: Dict[str, str]) -> Dict[str, Any]:
        """Execution.data from the answer's: the PNG decoded and the JSON
        parsed (at most FIELD_LIMITS["data"] of text, already read), each
        checked; what is not well-formed breaks the protocol."""
        data: Dict[str, Any] = {} if value is None else {"text/plain": value}
        for mime in MIME_TYPES:
            if mime not in sent:
                continue
            try:
                if mime == "image/png":
                    data[mime] = base64.b64decode(sent[mime], validate=True)
                elif mime == "application/json":
                    data[mime] = json.loads(sent[mime])
                    if _json_depth(data[mime]) > JSON_MAX_DEPTH:
                        raise ValueError("nested too deep")
                else:
                    data[mime] = sent[mime]
            except (ValueError, RecursionError):
                raise self._bad(f"a malformed {mime} value") from None
        return data

    def _deadline(self, timeout: Optional[float]) -> Optional[float]:
        if timeout is None or math.isinf(timeout):
            return None
        return time.monotonic() + timeout

    def run(self, code: str, timeout: Optional[float] = None) -> Execution:
        """Runs code; its last expression's repr is the value.  timeout
        (default: the interpreter's, DEFAULT_TIMEOUT unless it was made
        with another; math.inf for none) bounds the call: the call is then
        interrupted (KeyboardInterrupt in the code; the variables stay),
        or when that does not end it, the interpreter is killed
        (hutch.TimeoutError; the next call starts a new one).  An answer
        that is not the protocol's (too long, malformed, another call's)
        kills the interpreter too, and raises hutch.Error."""
        timeout = self._timeout if timeout is None else timeout
        with self._lock:
            if self._proc is None:
                self._start()
            deadline = self._deadline(timeout)
            # What runs in the sandbox can stop the driver from reading its
            # requests: the write too ends at the deadline.
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            nonce = secrets.token_hex(16)
            try:
                self._proc.write(json.dumps({"code": code, "nonce": nonce}).encode() + b"\n", left)
            except _hutch.TimeoutError:
                self._proc.kill()
                self._died("did not read the call and was killed")
                raise _hutch.TimeoutError(
                    f"interpreter: the call was not read within {timeout} s; the interpreter was killed"
                ) from None
            except OSError:
                raise self._died("had ended") from None
            line = self._readline(deadline)
            timed_out = False
            if line is None:
                timed_out = True
                self._proc.signal(signal.SIGINT)
                line = self._readline(time.monotonic() + INTERRUPT_GRACE)
                if line is None:
                    self._proc.kill()
                    self._died("did not stop at the timeout and was killed")
                    raise _hutch.TimeoutError(f"interpreter: the call ran past {timeout} s; the interpreter was killed")
            if line == b"":
                raise self._died("died during the call")
            res = self._answer(line)
            if res is None:
                raise self._bad("a malformed answer")
            if res["nonce"] != nonce:
                raise self._bad("an answer that is not this call's (written by the code it ran)")
            try:
                figures = [base64.b64decode(f, validate=True) for f in res["figures"]]
            except ValueError:
                raise self._bad("a malformed figure") from None
            data = self._data(res["value"], res["data"])
            with self._err_lock:
                raw = bytes(self._raw_err).decode("utf-8", "replace")
                self._raw_err.clear()
            return Execution(
                stdout=res["stdout"],
                stderr=res["stderr"] + raw,
                value=res["value"],
                error=res["error"],
                figures=figures,
                timed_out=timed_out,
                truncated=res["truncated"],
                data=data,
            )

    def restart(self) -> None:
        """A new interpreter: every variable is gone."""
        self.close()
        with self._lock:
            self._start()

    def close(self) -> None:
        with self._lock:
            if self._proc is not None:
                self._proc.close()
                self._proc = None

    def __enter__(self) -> "Interpreter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
