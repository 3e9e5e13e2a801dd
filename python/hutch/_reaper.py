# SPDX-License-Identifier: Apache-2.0
"""The reaper: a process of its own that removes the sandboxes a program
left when it was killed (SIGKILL included, which no atexit handler sees).

The program starts it, in a session of its own so that a signal to the
program's process group does not reach it, at its first sandbox, and tells
it on a pipe, one JSON line each, which sandboxes it holds: ["+", state_dir,
id] when one is made, ["-", state_dir, id] when it is closed.  The pipe's
end of file is the program's end, however it came: the reaper then removes
what is still listed, as `hutch rm` does, and exits.  It keeps every
sandbox it is told of (no cap: its memory grows with the sandboxes the
program holds at once), and it runs nothing of a sandbox."""

import errno
import json
import signal
import sys


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    live = {}
    for line in sys.stdin.buffer:
        try:
            op, state_dir, sid = json.loads(line)
        except ValueError:
            continue
        if op == "+":
            live[(state_dir, sid)] = None
        elif op == "-":
            live.pop((state_dir, sid), None)
    if not live:
        return 0
    from hutch import _hutch

    print(
        f"hutch: reaper: removing {len(live)} sandbox(es) left by a program that ended without closing them",
        file=sys.stderr,
        flush=True,
    )
    failed = 0
    for state_dir, sid in live:
        try:
            _hutch.remove_sandbox(sid, state_dir)
        except _hutch.Error as e:
            if e.errno != errno.ENOENT:
                failed += 1
                print(f"hutch: reaper: {sid}: {e}", file=sys.stderr, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
