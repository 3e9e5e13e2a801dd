"""Sandbox.interpreter(): a persistent Python interpreter in a sandbox."""

from __future__ import annotations

import base64
import json
import secrets
import signal
import threading
import time
from dataclasses import dataclass, field
from typing import List, Optional

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
DRIVER = r"""
import ast, base64, contextlib, io, json, os, sys, traceback
# The answer channel: a copy of stdout kept by main() only, not inherited
# by what the code starts; fd 1 becomes stderr's.
_proto_fd = os.dup(1)
os.dup2(2, 1)
sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", 0), write_through=True)
ns = {"__name__": "__main__", "__builtins__": __builtins__}

def figures():
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return []
    out = []
    for n in plt.get_fignums():
        b = io.BytesIO()
        plt.figure(n).savefig(b, format="png")
        out.append(base64.b64encode(b.getvalue()).decode())
    plt.close("all")
    return out

def run(code):
    out, err = io.StringIO(), io.StringIO()
    res = {"value": None, "error": None}
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            tree = ast.parse(code, "<cell>", "exec")
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                last = ast.Expression(tree.body.pop().value)
            exec(compile(tree, "<cell>", "exec"), ns)
            if last is not None:
                v = eval(compile(last, "<cell>", "eval"), ns)
                if v is not None:
                    res["value"] = repr(v)
        except BaseException as e:
            res["error"] = {"type": type(e).__name__, "message": str(e), "traceback": traceback.format_exc()}
    res["stdout"] = out.getvalue()
    res["stderr"] = err.getvalue()
    try:
        res["figures"] = figures()
    except Exception as e:
        res["figures"] = []
        res["stderr"] += "hutch: figures: %r\n" % (e,)
    return res

def main(proto):
    while True:
        nonce = None
        try:
            line = sys.stdin.readline()
            if not line:
                break
            req = json.loads(line)
            nonce = req["nonce"]
            res = run(req["code"])
        except KeyboardInterrupt:
            if nonce is None:
                continue  # between calls: the request is read next
            res = {"value": None, "error": {"type": "KeyboardInterrupt", "message": "", "traceback": ""},
                   "stdout": "", "stderr": "", "figures": []}
        res["nonce"] = nonce
        proto.write(json.dumps(res) + "\n")
        proto.flush()

main(os.fdopen(_proto_fd, "w"))
"""

#: After an interrupt (SIGINT) at the timeout, how long the interpreter has
#: to answer before it is killed and replaced.
INTERRUPT_GRACE = 2.0
#: The longest answer taken from the interpreter (what runs in the sandbox
#: writes it, so it is bounded like any of its output).
MAX_ANSWER = 256 << 20


class InterpreterDied(_hutch.Error):
    """The interpreter process ended during a call: its variables are lost;
    the next call starts a new one."""


@dataclass(frozen=True)
class Execution:
    """One call's results: what it printed, the repr of its last expression
    (None when there is none or it is None), the exception it raised (type,
    message, traceback) and every matplotlib figure it left open, as PNG."""

    stdout: str
    stderr: str
    value: Optional[str] = None
    error: Optional[dict] = None
    figures: List[bytes] = field(default_factory=list)
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None


class Interpreter:
    """A persistent Python interpreter inside a sandbox: run(code) executes
    code in one namespace that survives between calls, as a notebook's
    kernel does.  One call at a time (calls from several threads queue);
    close() ends it."""

    def __init__(self, sb, python: str = "python3", timeout: Optional[float] = None):
        self._sb = sb
        self._python = python
        self._timeout = timeout
        self._lock = threading.Lock()
        self._proc = None
        self._buf = b""
        self._raw_err = bytearray()
        self._err_lock = threading.Lock()
        self._start()

    def _start(self) -> None:
        env = ["MPLBACKEND=Agg", "PYTHONUNBUFFERED=1", "PYTHONDONTWRITEBYTECODE=1"]
        self._proc = self._sb._h.spawn([self._python, "-u", "-c", DRIVER], env, None, True, True, True)
        self._buf = b""
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
        """A line from the interpreter; b"" when it ended, None at the deadline."""
        while b"\n" not in self._buf:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            chunk = self._proc.read(1, 1 << 20, left)
            if chunk is None:
                return None
            if not chunk:
                return b""
            self._buf += chunk
            if len(self._buf) > MAX_ANSWER:
                raise self._bad(f"an answer longer than {MAX_ANSWER} bytes")
        line, self._buf = self._buf.split(b"\n", 1)
        return line

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
        try:
            res = json.loads(line)
        except ValueError:
            return None
        if not isinstance(res, dict):
            return None
        ok = (
            isinstance(res.get("nonce"), str)
            and isinstance(res.get("stdout"), str)
            and isinstance(res.get("stderr"), str)
            and isinstance(res.get("value"), (str, type(None)))
            and isinstance(res.get("error"), (dict, type(None)))
            and isinstance(res.get("figures"), list)
            and all(isinstance(f, str) for f in res["figures"])
        )
        return res if ok else None

    def run(self, code: str, timeout: Optional[float] = None) -> Execution:
        """Runs code; its last expression's repr is the value.  At the
        timeout the call is interrupted (KeyboardInterrupt in the code; the
        variables stay), or when that does not end it, the interpreter is
        killed (hutch.TimeoutError; the next call starts a new one)."""
        timeout = self._timeout if timeout is None else timeout
        with self._lock:
            if self._proc is None:
                self._start()
            deadline = None if timeout is None else time.monotonic() + timeout
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
