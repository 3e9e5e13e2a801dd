#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch benchmark's scoring, attacked from inside: what one answer's code
# can leave for the next answer scored in the same slot's scoring sandbox
# through what the kernel counts and stamps (the times of /tmp, /dev/shm and
# /dev, the pid counter, the tmpfs inode counter, the SysV IPC ids, the
# network counters, the driver's CPU time and wake-ups), and a score outside
# the task set's declared range.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
IMAGE=$(hutch_test_rootfs debian) || tap_skip_all "debian test rootfs unavailable (tests/setup-host.sh)"
tmp=$(hutch_test_tmpdir)
export HUTCH_STATE_DIR=$tmp/state
mkdir -p "$HUTCH_STATE_DIR" "$tmp/set/ch" "$tmp/set/rg" "$tmp/set/hr" "$tmp/set/bad"
. "$HUTCH_SRCDIR/tests/lib/bench.sh"

hbench() {
  "$HUTCH_BIN" benchmark "$tmp/set" --base-url "$MOCK_URL" --model mock --rootfs "$IMAGE" \
    --output-dir "$tmp/out" --retry-delay 0.05 "$@"
}
bench_dir() { OUT=$(printf '%s\n' "$tap_stdout" | tail -n 1); }
json() { "$AGENT_PY" -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$@"; }
# answers JSON: {match: answer text}, each written as /testbed/answer.txt.
script() {
  "$AGENT_PY" -c '
import json, sys
w = lambda text: {"calls": [["str_replace_editor", {"command": "create", "path": "/testbed/answer.txt", "file_text": text}]]}
print(json.dumps({"tasks": [{"match": k, "steps": [w(v)]} for k, v in json.loads(sys.argv[1]).items()]}))' "$1"
}

# ---- what one answer leaves for the next one's scoring ----
# One worker: every task is scored by the slot's scoring sandbox, one after
# the other.  A check reports what it sees (as its error, which
# results.jsonl keeps); a plant runs the answer's code inside
# compute_score's process, as a coding task's reward does.
printf 'dataset: "json"\ndata_files: "ch/data.jsonl"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
  >"$tmp/set/ch/config.yaml"
cat >"$tmp/set/ch/reward.py" <<'PY'
import ctypes, json, os, time
MARK = 1000000000123456789
libc = ctypes.CDLL(None, use_errno=True)
def marked():
    # Every time of /tmp, /dev/shm and /dev's tree an answer can set.
    paths = ["/tmp", "/dev/shm", "/dev"]
    for root, dirs, files in os.walk("/dev"):
        if not root.startswith("/dev/shm"):
            paths += [os.path.join(root, n) for n in dirs + files]
    out = []
    for p in paths:
        try:
            st = os.stat(p, follow_symlinks=False)
        except OSError:
            continue
        if MARK in (st.st_atime_ns, st.st_mtime_ns, st.st_ctime_ns):
            out.append(p)
    return sorted(set(out))
def procs():
    # Every other process of the sandbox: its start time, the CPU time of
    # the children it reaped, its voluntary context switches.
    out = {}
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            st = open("/proc/%s/stat" % p).read()
            f = st[st.rindex(")") + 2:].split()
            vol = [l.split()[1] for l in open("/proc/%s/status" % p) if l.startswith("voluntary_ctxt_switches")][0]
        except (OSError, IndexError, ValueError):
            continue
        out[p] = [int(f[19]), int(f[13]) + int(f[14]), int(vol)]
    return out
def snmp(proto, field):
    rows = [l.split() for l in open("/proc/net/snmp") if l.startswith(proto + ":")]
    return int(rows[1][rows[0].index(field)])
def compute_score(agent_answer, ground_truth, **kw):
    how = kw["how"]
    if how == "check":
        fd = os.open("/tmp", os.O_TMPFILE | os.O_WRONLY)
        ino = os.fstat(fd).st_ino
        os.close(fd)
        seen = {"pid": os.getpid(), "ino": ino, "marked": marked(), "tmp_ctime": os.stat("/tmp").st_ctime_ns,
                "shm_ctime": os.stat("/dev/shm").st_ctime_ns, "procs": procs()}
        raise ValueError("SEEN " + json.dumps(seen))
    if how == "checkipc":
        shm = libc.shmget(0, 1, 0o600)
        libc.shmctl(shm, 0, None)
        raise ValueError("SEEN " + json.dumps({"pid": os.getpid(), "shm": shm, "udp": snmp("Udp", "OutDatagrams")}))
    if how == "plant":
        ns = {}
        exec(agent_answer, ns)
        raise ValueError("PLANTED " + json.dumps({"M": ns.get("M"), "END": time.time_ns()}))
    return 0.0
PY
# forks N: Python that forks N processes, one after the other.
forks() { printf 'import os\nfor i in range(%d):\n    pid = os.fork()\n    if pid == 0:\n        os._exit(0)\n    os.waitpid(pid, 0)\n' "$1"; }
# Within what an answer may use: five processes, five files, /tmp's and
# /dev/shm's times set (then 1 s of nothing), CPU time, and fifty wake-ups
# of whatever reads the request's result pipe.
forks 5 >"$tmp/p1.py"
cat >>"$tmp/p1.py" <<'PY'
import stat, time
for i in range(5):
    open("/tmp/f%d" % i, "w").close()
    os.unlink("/tmp/f%d" % i)
MARK = 1000000000123456789
os.utime("/tmp", ns=(MARK, MARK))
os.utime("/dev/shm", ns=(MARK, MARK))
M = time.time_ns()
t = time.process_time()
while time.process_time() - t < 0.3:
    pass
pipes = []
for fd in range(3, 64):
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode):
            pipes.append(fd)
    except OSError:
        pass
for i in range(50):
    for fd in pipes:
        try:
            os.write(fd, b"x")
        except OSError:
            pass
    time.sleep(0.002)
time.sleep(1)
PY
cat >"$tmp/p2.py" <<'PY'
import os
MARK = 1000000000123456789
os.utime("/dev", ns=(MARK, MARK))
for p in ("/dev/stdin", "/dev/pts", "/dev/fd"):
    try:
        os.utime(p, ns=(MARK, MARK), follow_symlinks=False)
    except OSError:
        pass
PY
forks 100 >"$tmp/p3.py"
cat >"$tmp/pi.py" <<'PY'
import ctypes, socket
libc = ctypes.CDLL(None)
for i in range(10):
    libc.shmctl(libc.shmget(0, 1, 0o600), 0, None)
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", 9))
PY
cat >"$tmp/set/ch/data.jsonl" <<'JSONL'
{"id": "c1", "problem_statement": "CH-CHECK", "ground_truth": "", "how": "check"}
{"id": "q", "problem_statement": "CH-QUIET", "ground_truth": "", "how": "quiet"}
{"id": "c2", "problem_statement": "CH-CHECK", "ground_truth": "", "how": "check"}
{"id": "p1", "problem_statement": "CH-P1", "ground_truth": "", "how": "plant"}
{"id": "c3", "problem_statement": "CH-CHECK", "ground_truth": "", "how": "check"}
{"id": "p2", "problem_statement": "CH-P2", "ground_truth": "", "how": "plant"}
{"id": "c4", "problem_statement": "CH-CHECK", "ground_truth": "", "how": "check"}
{"id": "p3", "problem_statement": "CH-P3", "ground_truth": "", "how": "plant"}
{"id": "ci1", "problem_statement": "CH-CHECK", "ground_truth": "", "how": "checkipc"}
{"id": "pi", "problem_statement": "CH-PI", "ground_truth": "", "how": "plant"}
{"id": "ci2", "problem_statement": "CH-CHECK", "ground_truth": "", "how": "checkipc"}
JSONL
mock_start "$(script "$("$AGENT_PY" -c 'import json, sys; print(json.dumps({"CH-CHECK": "x", "CH-QUIET": "x",
  "CH-P1": open(sys.argv[1]).read(), "CH-P2": open(sys.argv[2]).read(), "CH-P3": open(sys.argv[3]).read(),
  "CH-PI": open(sys.argv[4]).read()}))' "$tmp/p1.py" "$tmp/p2.py" "$tmp/p3.py" "$tmp/pi.py")")"
tap_status 0 "answers that stamp times and move counters, each scored after the other in one slot" \
  hbench --task ch --num-workers 1 --reward-timeout 20
bench_dir
# seen EXPR: EXPR over what each task reported, s["c1"]... (None: no report).
seen() {
  "$AGENT_PY" -c '
import json, sys
s = {}
for l in open(sys.argv[1]):
    l = json.loads(l)
    e = l.get("error") or ""
    for tag in ("SEEN ", "PLANTED "):
        if tag in e:
            s[l["id"]] = json.loads(e[e.index(tag) + len(tag):])
print(eval(sys.argv[2]))' "$OUT/results.jsonl" "$1"
}
tap_is "$(seen 'sorted(s)')" "['c1', 'c2', 'c3', 'c4', 'ci1', 'ci2', 'p1', 'p2', 'p3', 'pi']" "every check and plant reported"
tap_is "$(seen '(s["c2"]["pid"] - s["c1"]["pid"]) - (s["c3"]["pid"] - s["c2"]["pid"])')" "0" \
  "the pid counter: the pids after an answer that forked five processes are as after one that forked none"
tap_is "$(seen '(s["c2"]["ino"] - s["c1"]["ino"]) - (s["c3"]["ino"] - s["c2"]["ino"])')" "0" \
  "the tmpfs inode counter: a new file's inode after an answer that made five files is as after one that made none"
tap_is "$(seen 's["c3"]["marked"]')" "[]" "the times an answer set on /tmp and /dev/shm are not the next one's"
tap_is "$(seen '(s["c3"]["tmp_ctime"] > s["p1"]["END"], s["c3"]["shm_ctime"] > s["p1"]["END"])')" "(True, True)" \
  "nor is the moment it set them (their ctime is after that answer's end)"
tap_is "$(seen 's["c4"]["marked"]')" "[]" "the times an answer set on /dev's entries are not the next one's"
tap_is "$(seen 's["c4"]["pid"] == s["c1"]["pid"]')" "True" "which is scored in a new scoring sandbox"
# The processes the checks see all three times (the driver, init): what they
# show of the answers before (CPU time of what they reaped, wake-ups) moves
# no more for the answer that used CPU and woke its reader fifty times.
tap_is "$(seen '[p for p in s["c2"]["procs"] if p in s["c1"]["procs"] and p in s["c3"]["procs"] and s["c1"]["procs"][p][0] == s["c3"]["procs"][p][0] and (s["c3"]["procs"][p][1] - s["c2"]["procs"][p][1]) != (s["c2"]["procs"][p][1] - s["c1"]["procs"][p][1])]')" \
  "[]" "no process the next answer sees counts the CPU time of the answer before"
tap_is "$(seen '[p for p in s["c2"]["procs"] if p != "1" and p in s["c1"]["procs"] and p in s["c3"]["procs"] and s["c1"]["procs"][p][0] == s["c3"]["procs"][p][0] and (s["c3"]["procs"][p][2] - s["c2"]["procs"][p][2]) - (s["c2"]["procs"][p][2] - s["c1"]["procs"][p][2]) >= 20]')" \
  "[]" "nor its wake-ups"
tap_is "$(seen 's["ci1"]["pid"] == s["c1"]["pid"]')" "True" \
  "an answer over the quota of processes (100 forks) ends its scoring sandbox: the next answer sees a new one"
tap_is "$(seen '(s["ci2"]["shm"] == s["ci1"]["shm"], s["ci2"]["udp"], s["ci1"]["udp"])')" "(True, 0, 0)" \
  "the SysV IPC ids and the network counters an answer moved are not the next one's"
tap_is "$(lines '[(l["id"], l["score"]) for l in ls if not (l.get("error") or "").startswith("reward: ValueError: ")]')" \
  "[('q', 0)]" "(every other task reported through its error)"
tap_ok "nothing is left" leftovers

# ---- a score outside the task set's range ----
printf 'dataset: "json"\ndata_files: "rg/data.jsonl"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
  >"$tmp/set/rg/config.yaml"
printf 'def compute_score(a, g, **k):\n    return float(k["value"])\n' >"$tmp/set/rg/reward.py"
cat >"$tmp/set/rg/data.jsonl" <<'JSONL'
{"id": "huge", "problem_statement": "RG", "ground_truth": "", "value": "1e300"}
{"id": "neg", "problem_statement": "RG", "ground_truth": "", "value": "-0.5"}
{"id": "over", "problem_statement": "RG", "ground_truth": "", "value": "1.5"}
{"id": "one", "problem_statement": "RG", "ground_truth": "", "value": "1"}
{"id": "zero", "problem_statement": "RG", "ground_truth": "", "value": "-0.0"}
{"id": "quarter", "problem_statement": "RG", "ground_truth": "", "value": "0.25"}
{"id": "nan", "problem_statement": "RG", "ground_truth": "", "value": "nan"}
{"id": "inf", "problem_statement": "RG", "ground_truth": "", "value": "inf"}
{"id": "vhuge", "problem_statement": "RG", "ground_truth": null, "hutch": {"verifier": "echo 1e300"}}
{"id": "vhalf", "problem_statement": "RG", "ground_truth": null, "hutch": {"verifier": "echo 0.5"}}
JSONL
mock_start '[]'
tap_status 0 "compute_score and a verifier returning scores outside [0, 1]" hbench --task rg --num-workers 2
bench_dir
tap_is "$(lines 'sorted((l["id"], l["score"], l["error"]) for l in ls)')" \
  "[('huge', 0, \"reward: compute_score returned 1e+300, outside the task set's score range [0, 1]\"), ('inf', 0, 'reward: compute_score returned inf'), ('nan', 0, 'reward: compute_score returned nan'), ('neg', 0, \"reward: compute_score returned -0.5, outside the task set's score range [0, 1]\"), ('one', 1, None), ('over', 0, \"reward: compute_score returned 1.5, outside the task set's score range [0, 1]\"), ('quarter', 0.25, None), ('vhalf', 0.5, None), ('vhuge', 0, \"verifier: scored 1e+300, outside the task set's score range [0, 1]\"), ('zero', 0, None)]" \
  "a score outside the range is that task's scoring error, naming the value; NaN and infinities too"
tap_is "$(json "$OUT/results.json" '(d["total"], d["mean_score"], d["num_errors"])')" "(10, 0.175, 6)" \
  "and is never averaged: the mean is of the scores in range"
tap_like "$(cat "$OUT/summary.md")" '\| ` huge ` \| 0\.0000 \| [0-9.]+ s \| ` reward: compute_score returned 1e\+300, outside' \
  "summary.md names the value"
# A task set that declares another range (hutch's keys in config.yaml).
printf 'dataset: "json"\ndata_files: "hr/data.jsonl"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\nhutch_score_min: -1\nhutch_score_max: 100\n' \
  >"$tmp/set/hr/config.yaml"
cp "$tmp/set/rg/reward.py" "$tmp/set/hr/reward.py"
printf '%s\n' '{"id": "fifty", "problem_statement": "RG", "ground_truth": "", "value": "50"}' \
  '{"id": "minus", "problem_statement": "RG", "ground_truth": "", "value": "-1"}' \
  '{"id": "past", "problem_statement": "RG", "ground_truth": "", "value": "100.5"}' >"$tmp/set/hr/data.jsonl"
tap_status 0 "a task set declaring hutch_score_min -1 and hutch_score_max 100" hbench --task hr
bench_dir
tap_is "$(lines 'sorted((l["id"], l["score"], l["error"]) for l in ls)')" \
  "[('fifty', 50, None), ('minus', -1, None), ('past', 0, \"reward: compute_score returned 100.5, outside the task set's score range [-1, 100]\")]" \
  "scores in its range count, one past it is refused"
for bad in 'hutch_score_max: x' 'hutch_score_max: inf' $'hutch_score_min: 2\nhutch_score_max: 1'; do
  printf 'dataset: "json"\ndata_files: "bad/data.jsonl"\nsystem_prompt: "s"\n%s\n' "$bad" >"$tmp/set/bad/config.yaml"
  cp "$tmp/set/rg/reward.py" "$tmp/set/bad/reward.py"
  cp "$tmp/set/hr/data.jsonl" "$tmp/set/bad/data.jsonl"
  tap_status 125 "config.yaml with ${bad//$'\n'/ and } is refused" hbench --task bad
  tap_like "$tap_stderr" "hutch_score_m(in|ax)" "naming the key"
done
tap_ok "nothing is left" leftovers

tap_done
