#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch run moves files in and out of the sandbox, and the editor reads and
# writes them, with hutch's own code through the sandbox's root: a model that
# replaces find, cat or anything else on PATH changes nothing, and the
# copy-back is bounded by entries, bytes and one deadline
# (hutch-security(7), "copy-back").
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
AGENT_IMAGE=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"

obs() { traj "t[\"steps\"][$1][\"observation\"]"; }
# hrun within SECONDS, or it is killed: a hang fails the test, not the suite.
trun() {
  local t=$1
  shift
  AGENT_EXEC="timeout $t" hrun "$@"
}
# steps JSON: a mock script of one call per line of Python below, where
# fake(PROGRAMS, SCRIPT) is a shell command that replaces each program
# everywhere on the sandbox's PATH with SCRIPT (written by the shell's
# printf builtin: nothing replaced is used on the way).
steps() {
  /usr/bin/python3 -c '
import json, sys
def fake(progs, script, shebang="#!/bin/sh"):
    dirs = "/usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin".split()
    paths = " ".join(d + "/" + p for d in dirs for p in progs.split())
    body = shebang + "\n" + script + "\n"
    q = "'"'"'" + body.replace("'"'"'", "'"'"'\\'"'"''"'"'") + "'"'"'"
    cmd = "rm -f " + paths + "; for f in " + paths + "; do printf %s " + q + " > $f 2>/dev/null && chmod 755 $f; done; true"
    return cmd
E = "str_replace_editor"
print(json.dumps([{"calls": [c]} for c in eval("[" + sys.argv[1] + "]")]))' "$@"
}

# ---- a fake find that lists 200,000 directories ----
# busybox's sh runs its own find applet, whatever is on PATH: the fake sh
# passes everything to it but a find over the output directory.
lister='case "$*" in *"-type d"*) seq 200000 | sed "s|^|./d|" | tr "\\n" "\\0";; *) exec /bin/busybox sh "$@";; esac'
mock_start "$(steps '["execute_bash", {"command": "echo real > /testbed/output/real; " + fake("find", "seq 200000 | sed \"s|^|./d|\" | tr \"\\\\n\" \"\\\\0\"") + "; " + fake("sh", sys.argv[2], "#!/bin/busybox sh")}]' "$lister")"
tap_status 0 "a run whose model replaced find and sh" trun 300 --query q
run_dir
tap_is "$(cd "$RUN_DIR/files" && find . | sort | tr '\n' ' ')" ". ./real " \
  "the copy-back never asks the sandbox's find: only what is there is copied"

# ---- a fake cat that never ends; the editor with cat, find, mkdir, rm gone ----
script=$(steps '
  ["execute_bash", {"command": "echo 42 > /testbed/output/answer.txt; mkdir -p /testbed/output/sub; echo deep > /testbed/output/sub/f; " + fake("cat find mkdir rm dirname sort mv cp", "exec sleep 100000")}],
  [E, {"command": "create", "path": "/testbed/new/dir/a.txt", "file_text": "one\ntwo\n"}],
  [E, {"command": "view", "path": "/testbed/new/dir/a.txt"}],
  [E, {"command": "str_replace", "path": "/testbed/new/dir/a.txt", "old_str": "two", "new_str": "TWO"}],
  [E, {"command": "view", "path": "/testbed/new"}],
  [E, {"command": "undo_edit", "path": "/testbed/new/dir/a.txt"}],
  [E, {"command": "undo_edit", "path": "/testbed/new/dir/a.txt"}],
  [E, {"command": "create", "path": "/testbed/output/made.txt", "file_text": "made\n"}],
  ["execute_bash", {"command": "ls -lnd /testbed/output/made.txt /testbed/new | while read m l u g r; do echo $u:$g; done; [ -e /testbed/new/dir/a.txt ] || echo removed"}],
  [E, {"command": "view", "path": "/proc/1/environ"}],
  [E, {"command": "view", "path": "/proc/self/root/etc/passwd"}],
')
mock_start "$script"
start=$(date +%s)
tap_status 0 "a run whose model replaced cat, find, mkdir and rm with programs that never end" \
  trun 120 --query q --tools hutch --tool-timeout 20
took=$(($(date +%s) - start))
run_dir
echo "# the run took ${took}s"
tap_check $((took >= 60)) "it is not held up (a copy through the sandbox's cat waits for it)"
tap_is "$(cat "$RUN_DIR/files/answer.txt" 2>&1)" "42" "answer.txt is copied back all the same"
tap_is "$(cat "$RUN_DIR/files/sub/f" 2>&1)" "deep" "and a subdirectory"
tap_like "$(obs 1)" "File created successfully at: /testbed/new/dir/a.txt" "the editor creates a file and its directories"
tap_like "$(obs 2)" $'cat -n` on /testbed/new/dir/a.txt:\n     1\tone\n     2\ttwo$' "and reads it"
tap_like "$(obs 3)" "has been edited.*     2	TWO" "and edits it"
tap_like "$(obs 4)" $'in /testbed/new, excluding hidden items:\n/testbed/new\n/testbed/new/dir\n/testbed/new/dir/a.txt$' \
  "a directory view lists it, two levels deep, sorted"
tap_like "$(obs 5)" "undone successfully" "undo of the edit"
tap_like "$(obs 6)" "the file it created was removed" "undo of the create removes the file"
tap_is "$(cat "$RUN_DIR/files/made.txt" 2>&1)" "made" "a file the editor made in the output directory is copied back"
tap_like "$(obs 8)" $'STDOUT]\n0:0\n0:0\nremoved' "what hutch made inside is the sandbox's root's"
tap_like "$(obs 9)" "ERROR: could not read /proc/1/environ: .*kernel file system" \
  "the editor reads nothing on /proc for the model (hutch sees more there than the sandbox)"
tap_like "$(obs 10)" "ERROR: could not inspect /proc/self/root/etc/passwd|does not exist|not a regular file" \
  "nor through /proc's magic links"

# ---- the same for the editor of --tools lis, which answers as if it ran them ----
script=$(steps '
  ["execute_bash", {"command": fake("cat find mkdir dirname test bash sh", "exec sleep 100000", "#!/bin/busybox sh")}],
  [E, {"command": "create", "path": "/testbed/new/dir/a.py", "file_text": "one\ntwo"}],
  [E, {"command": "view", "path": "/testbed/new/dir/a.py"}],
  [E, {"command": "view", "path": "/testbed/new"}],
  [E, {"command": "str_replace", "path": "/proc/1/environ", "old_str": "PATH", "new_str": "x"}],
')
mock_start "$script"
start=$(date +%s)
tap_status 0 "--tools lis: a run whose model replaced cat, find, mkdir, test and the shells" \
  trun 120 --query q --tool-timeout 20
took=$(($(date +%s) - start))
run_dir
tap_check $((took >= 60)) "it is not held up"
tap_like "$(obs 1)" "File created at /testbed/new/dir/a.py" "the editor creates a file and its directories"
tap_like "$(obs 2)" $'cat -n` on /testbed/new/dir/a.py:\n     1\tone\n     2\ttwo\n     3\t$' "and reads it"
tap_like "$(obs 3)" $'excluding hidden:\n/testbed/new\n/testbed/new/dir\n/testbed/new/dir/a.py$' "a directory view"
tap_like "$(obs 4)" "Error: No occurrences of old_str" "the editor reads nothing on /proc for the model"

# ---- symlinks, a FIFO, a link to a bound host directory ----
hostdir=$(hutch_test_tmpdir)
mkdir -p "$hostdir/data"
echo secret >"$hostdir/data/secret"
mkdir -p "$hostdir/in/sub"
echo input >"$hostdir/in/sub/i.txt"
ln -s /etc/passwd "$hostdir/in/passwd"
mkfifo "$hostdir/in/fifo"
chmod -R a+rwX "$hostdir"
mock_start '[{"calls": [["execute_bash", {"command": "cat /testbed/input/sub/i.txt; ls /testbed/input; cd /testbed/output && ln -s /etc/passwd leak && ln -s /data/secret bound && ln -s /data datadir && mkfifo pipe && mkfifo /testbed/output/sub2 2>/dev/null; echo ok > real"}]]}]'
start=$(date +%s)
tap_status 0 "a run whose output holds symlinks to /etc/passwd and a bound host directory, and a FIFO" \
  trun 120 --query q --bind "$hostdir/data:/data" --input-dir "$hostdir/in"
took=$(($(date +%s) - start))
run_dir
echo "# the run took ${took}s"
tap_check $((took >= 60)) "no hang on the FIFO"
tap_is "$(cd "$RUN_DIR/files" && find . | sort | tr '\n' ' ')" ". ./real " "only the regular file is copied back"
tap_like "$(traj 't["hutch"]["copy_back_skipped"]')" "^5$" "the symlinks and FIFOs are counted"
tap_like "$(obs 0)" $'STDOUT]\ninput\nsub$' "copy-in: the regular file and directory, no symlink, no FIFO"
mock_start '[{"calls": [["execute_bash", {"command": "rm -rf /testbed/output && ln -s /data /testbed/output"}]]}]'
tap_status 0 "a run whose output directory is a symlink to a bound host directory" \
  trun 120 --query q --bind "$hostdir/data:/data"
run_dir
tap_is "$(ls -A "$RUN_DIR/files" | tr '\n' ' ')" "" "nothing is copied back through it"
tap_like "$(cat "$RUN_DIR/run.log")" "open /testbed/output in the sandbox: Too many levels of symbolic links" \
  "and the log says why"

# ---- 100,005 empty files: the copy-back stops at its entry cap ----
mock_start '[{"calls": [["execute_bash", {"command": "mkdir /testbed/output/many && cd /testbed/output/many && seq 100005 | xargs touch && echo made"}]]}]'
tap_status 0 "a run whose output holds 100,005 empty files" trun 600 --query q --tool-timeout 300
run_dir
tap_is "$(traj 't["hutch"]["copy_back_stopped"], t["hutch"]["copy_back_limit_hit"]')" "('entries', True)" \
  "the copy-back stops at the entry cap"
n=$(find "$RUN_DIR/files" -mindepth 1 | wc -l)
echo "# $n entries copied back"
tap_check $((n > 100000 || n < 99990)) "the host gets at most the cap"
tap_like "$(cat "$RUN_DIR/run.log")" "copy-back stopped at 100000 entries" "the log says so"

mock_stop
tap_done
