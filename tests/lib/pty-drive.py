#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Drive `hutch exec -it` from a pseudo-terminal of the test's own, as a
person at a terminal would.  Usage: pty-drive.py SCENARIO -- HUTCH ARGS...

Prints one "key value" line per observation for the test to check:
  prompt, raw, size, resized, interrupted, stopped, resumed, edited, status,
  restored
A step that times out prints what came so far and exits 1.

pty-drive.py record OUT [PATTERN] -- HUTCH ARGS... runs a command that
asks nothing of the terminal (`hutch run`): every byte it writes there goes
to the file OUT, and once PATTERN (a regular expression) has appeared, ^C is
typed, as a person stopping it would; then "status N"."""
import fcntl
import os
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time

ROWS, COLS = 31, 97


def set_size(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def stty_g(fd):
    return subprocess.run(["stty", "-g"], stdin=fd, capture_output=True, text=True).stdout.strip()


class Session:
    def __init__(self, argv):
        self.master, self.slave = os.openpty()
        set_size(self.master, ROWS, COLS)
        self.before = stty_g(self.slave)
        slave = self.slave

        def child_setup():
            # hutch in a session of its own with the pty as controlling
            # terminal, as under a terminal emulator.
            os.setsid()
            fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, preexec_fn=child_setup,
                                     close_fds=True)
        self.buf = b""

    def read_some(self, timeout):
        r, _, _ = select.select([self.master], [], [], timeout)
        if not r:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:
            return False
        self.buf += data
        return bool(data)

    def expect(self, pattern, what, timeout=30):
        deadline = time.monotonic() + timeout
        rx = re.compile(pattern.encode())
        while True:
            m = rx.search(self.buf)
            if m:
                self.last = self.buf[:m.end()]
                self.buf = self.buf[m.end():]
                return m
            left = deadline - time.monotonic()
            if left <= 0 or (not self.read_some(left) and self.proc.poll() is not None):
                print("timeout %s: waited for %r, got %r" % (what, pattern, self.buf[-400:]))
                self.proc.kill()
                sys.exit(1)

    def send(self, data):
        os.write(self.master, data if isinstance(data, bytes) else data.encode())

    def finish(self):
        # Keep reading so that hutch never blocks on a full pty.
        deadline = time.monotonic() + 30
        while self.proc.poll() is None and time.monotonic() < deadline:
            self.read_some(0.1)
        if self.proc.poll() is None:
            self.proc.kill()
            print("status timeout: %r" % self.buf[-400:])
            return
        print("status %d" % self.proc.returncode)
        print("restored %s" % ("yes" if stty_g(self.slave) == self.before else "no"))


def record(argv, out, pattern):
    s = Session(argv)
    if pattern:
        s.expect(pattern, "the pattern to type ^C at", timeout=60)
        # What came up to the pattern was consumed by expect: keep it too.
        seen = s.last
        s.send(b"\x03")
    else:
        seen = b""
    deadline = time.monotonic() + 60
    while s.proc.poll() is None and time.monotonic() < deadline:
        s.read_some(0.1)
    while s.read_some(0.1):
        pass
    with open(out, "wb") as f:
        f.write(seen + s.buf)
    if s.proc.poll() is None:
        s.proc.kill()
        print("status timeout")
        return
    print("status %d" % s.proc.returncode)


def main():
    scenario = sys.argv[1]
    argv = sys.argv[sys.argv.index("--") + 1:]
    if scenario == "record":
        args = sys.argv[2:sys.argv.index("--")]
        record(argv, args[0], args[1] if len(args) > 1 else None)
        return
    s = Session(argv)
    s.expect(r"hutch-pty[$#] ", "the first prompt")
    print("prompt yes")
    attrs = termios.tcgetattr(s.slave)
    raw = not (attrs[3] & (termios.ICANON | termios.ECHO | termios.ISIG))
    print("raw %s" % ("yes" if raw else "no"))
    if scenario == "full":
        s.send("stty size\r")
        print("size %s" % s.expect(r"(\d+ \d+)\r?\n", "stty size").group(1).decode())
        s.expect(r"hutch-pty[$#] ", "the prompt after stty size")
        set_size(s.master, 40, 120)
        s.proc.send_signal(signal.SIGWINCH)
        # hutch passes the size on when the signal reaches it: ask until the
        # new size is there (30 s at most, for a slow build).
        deadline = time.monotonic() + 30
        while True:
            s.send("stty size\r")
            size = s.expect(r"(\d+ \d+)\r?\n", "stty size after a resize").group(1).decode()
            s.expect(r"hutch-pty[$#] ", "the prompt after the resize")
            if size == "40 120" or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        print("resized %s" % size)
        # ^C: the sandbox's line discipline makes it SIGINT for sleep.  The
        # job says when it runs, which is once the shell gave it the
        # terminal (its echoed command line has no digit there).
        s.send("sh -c 'echo running-$$; exec sleep 100'\r")
        s.expect(r"running-\d+", "the start of sleep 100")
        s.send(b"\x03")
        s.expect(r"hutch-pty[$#] ", "the prompt after ^C", timeout=10)
        s.send("echo interrupted-$?\r")
        print("interrupted %s" % s.expect(r"interrupted-(\d+)", "the status of sleep").group(1).decode())
        s.expect(r"hutch-pty[$#] ", "the prompt after echo")
        # ^Z: job control, the shell owns the pty's foreground.  The job
        # says when it runs, then reads a line.
        s.send("sh -c 'echo running-$$; read x; echo got-$x; exec sleep 200'\r")
        s.expect(r"running-\d+", "the start of sleep 200")
        s.send(b"\x1a")
        m = s.expect(r"(Stopped)|hutch-pty[$#] ", "the stop of sleep 200", timeout=10)
        print("stopped %s" % ("yes" if m.group(1) else "no"))
        if m.group(1):
            s.expect(r"hutch-pty[$#] ", "the prompt after the stop")
        # fg gives it the terminal back, and ^C reaches it again.  A line
        # typed after fg named it waits in the terminal until the job reads
        # it, which it can only do in the foreground: its answer says it has
        # the terminal.
        s.send("fg\r")
        s.expect(r"sleep 200\S*\r?\n", "fg naming sleep 200")
        s.send("go\r")
        s.expect(r"got-go", "the resumed job reading the terminal")
        s.send(b"\x03")
        s.expect(r"hutch-pty[$#] ", "the prompt after ^C to the resumed job", timeout=10)
        s.send("echo resumed-$?\r")
        print("resumed %s" % s.expect(r"resumed-(\d+)", "the status of the resumed job").group(1).decode())
        s.expect(r"hutch-pty[$#] ", "the prompt after echo")
        # Line editing: a backspace is the shell's to apply.
        s.send(b"echo ed-abX\x7fc\r")
        print("edited %s" % s.expect(r"\n(ed-\w+)\r?\n", "the edited line").group(1).decode())
        s.expect(r"hutch-pty[$#] ", "the prompt after the edited line")
        s.send("exit 3\r")
    elif scenario == "hup":
        # A signal to hutch goes to the command: a shell dies of SIGHUP.
        s.proc.send_signal(signal.SIGHUP)
    elif scenario == "usr1":
        # A signal hutch does not forward ends hutch itself.
        s.proc.send_signal(signal.SIGUSR1)
    elif scenario == "kill":
        s.send("kill -9 $$\r")
    s.finish()


main()
