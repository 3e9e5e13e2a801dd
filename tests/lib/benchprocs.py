# SPDX-License-Identifier: Apache-2.0
"""Processes of a hutch benchmark run, for the tests that probe them.

find_agent(LOG): the agent the spawner forked for the task whose log is
LOG (not a process the agent forked, such as a sandbox's init before its
exec).  scan(PID, WORDS): PID's memory searched for WORDS, as one line.

scan's line is "memory: clean (N bytes read)", "memory: holds WORD, ...",
or "memory: unreadable (why)".  Only pages present in memory are read
(/proc/PID/pagemap), and mappings of a GiB or more are passed over: a
sanitizer build maps terabytes of shadow memory, which holds no data (its
heap is in mappings of its own).
"""
import os
import re
import struct
import sys

PAGE = os.sysconf("SC_PAGE_SIZE")


def ppid(p):
    return int(re.search(r"PPid:\s*(\d+)", open("/proc/%d/status" % p).read()).group(1))


def comm(p):
    return open("/proc/%d/comm" % p).read().strip()


def pids():
    return map(int, filter(str.isdigit, os.listdir("/proc")))


def children(q, name):
    out = []
    for p in pids():
        try:
            if ppid(p) == q and comm(p) == name:
                out.append(p)
        except (OSError, AttributeError):
            pass
    return out


def find_agent(log):
    for p in pids():
        try:
            if comm(p) == "hutch-agent" and comm(ppid(p)) == "hutch-spawner" and \
                    os.readlink("/proc/%d/fd/2" % p).endswith(log):
                return p
        except (OSError, AttributeError):
            pass
    return None
CHUNK = 256  # pages per pagemap read


def start_time(pid):
    try:
        return open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def alive(pid, began):
    """True while PID is the process that started at BEGAN and has not
    ended (a zombie keeps its start time but no memory and no files)."""
    try:
        fields = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] not in ("Z", "X") and fields[19] == began


def scan(pid, words):
    began = start_time(pid)
    found, total = set(), 0
    keep = max(len(w) for w in words) - 1
    try:
        maps = open("/proc/%d/maps" % pid)
        mem = open("/proc/%d/mem" % pid, "rb", 0)
        pagemap = open("/proc/%d/pagemap" % pid, "rb", 0)
    except OSError as e:
        return "memory: unreadable (%s)" % e.strerror
    with maps, mem, pagemap:
        for line in maps:
            addr, perms = line.split()[:2]
            if not perms.startswith("r"):
                continue
            lo, hi = (int(x, 16) for x in addr.split("-"))
            if hi - lo >= 1 << 30:
                continue
            tail = b""
            for first in range(lo // PAGE, hi // PAGE, CHUNK):
                n = min(CHUNK, hi // PAGE - first)
                try:
                    pagemap.seek(first * 8)
                    entries = struct.unpack("=%dQ" % n, pagemap.read(n * 8))
                except (OSError, struct.error, OverflowError, ValueError):
                    break
                for i, e in enumerate(entries):
                    if not e & (1 << 63) and not e & (1 << 62):  # neither present nor swapped
                        tail = b""
                        continue
                    try:
                        mem.seek((first + i) * PAGE)
                        data = mem.read(PAGE)
                    except (OSError, OverflowError, ValueError):
                        tail = b""
                        continue
                    total += len(data)
                    window = tail + data
                    for w in words:
                        if w in window:
                            found.add(w.decode())
                    tail = window[-keep:] if keep else b""
    if found:
        return "memory: holds " + ", ".join(sorted(found))
    # Pages of a process that ended meanwhile read as nothing: no verdict.
    if began is None or not alive(pid, began):
        return "memory: unreadable (the process ended during the scan)"
    return "memory: clean (%d bytes read)" % total

