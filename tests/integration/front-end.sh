#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The musl front end (configure --with-musl-front-end): `hutch` is a static
# musl program that starts sandboxes and runs commands in them itself, and
# hands everything else to hutch-full, with the same results.
. "$(dirname "$0")/../lib/tap.sh"

full=$(dirname "$HUTCH_BIN")/hutch-full
if [ ! -x "$full" ] || cmp -s "$full" "$HUTCH_BIN"; then
  tap_skip_all "hutch is hutch-full here (configured without --with-musl-front-end)"
fi
img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
py=${HUTCH_PYTHON:-python3}
handed='handing the command to hutch-full'

# ---- the program ----
if command -v readelf >/dev/null; then
  readelf -lW "$HUTCH_BIN" >"$tmp/segments"
  tap_check $? "readelf reads hutch"
  tap_unlike "$(cat "$tmp/segments")" "INTERP" "hutch is a static program: no interpreter"
  tap_like "$(cat "$tmp/segments")" "DYN \(Position-Independent" "and position-independent (static-pie)"
  tap_unlike "$(readelf -dW "$HUTCH_BIN" 2>&1)" "NEEDED" "and no shared library"
else
  tap_skip "hutch is a static program" "no readelf here"
fi
tap_ok "built with musl (no glibc symbol version in it)" sh -c "! grep -qa 'GLIBC_2\\.' '$HUTCH_BIN'"
tap_ok "while hutch-full is glibc's" grep -qa 'GLIBC_2\.' "$full"

# ---- installed: hutch in the bin directory, hutch-full in libexec ----
if [ "${HUTCH_TEST_MODE:-root}" = root ]; then
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$HUTCH_BUILDDIR" install-binSCRIPTS \
    install-pkglibexecPROGRAMS DESTDIR="$tmp/dest" >"$tmp/install.log" 2>&1
  tap_check $? "make install of the programs"
  inst_bin=$(find "$tmp/dest" -path '*/bin/hutch' -type f)
  inst_full=$(find "$tmp/dest" -path '*/libexec/hutch/hutch-full' -type f)
  tap_ok "installs the front end as bin/hutch" cmp "$inst_bin" "$HUTCH_BIN"
  tap_ok "and hutch-full in the libexec directory" cmp "$inst_full" "$full"
else
  tap_skip "make install of the programs" "the rootless run has no build tree"
fi

# ---- the start verbs run in the front end ----
export HUTCH_DEBUG=1
tap_ok "exec runs a command" "$HUTCH_BIN" exec --rootfs "$img" -- echo native
tap_is "$tap_stdout" "native" "its output"
tap_unlike "$tap_stderr" "$handed" "without handing it over"
tap_ok "create starts a sandbox" "$HUTCH_BIN" create --rootfs "$img"
id=$tap_stdout
tap_unlike "$tap_stderr" "$handed" "without handing it over"
tap_ok "exec --in runs a command in it" "$HUTCH_BIN" exec --in "$id" -- echo inside
tap_is "$tap_stdout" "inside" "its output"
tap_unlike "$tap_stderr" "$handed" "without handing it over"
"$HUTCH_BIN" exec --in "$id" -- sh -c 'echo forked >/root/f' 2>/dev/null
tap_ok "fork starts a child of it" "$HUTCH_BIN" fork "$id"
child=$tap_stdout
tap_unlike "$tap_stderr" "$handed" "without handing it over"
tap_is "$("$HUTCH_BIN" exec --in "$child" -- cat /root/f 2>/dev/null)" "forked" "the child has the sandbox's file"
"$HUTCH_BIN" rm "$child" 2>/dev/null

# ---- the other verbs go to hutch-full ----
tap_ok "hutch ps" "$HUTCH_BIN" ps
tap_like "$tap_stdout" "$id" "lists the sandbox"
tap_like "$tap_stderr" "front end: a verb of hutch-full: $handed" "handed to hutch-full"
tap_ok "hutch rm removes it" "$HUTCH_BIN" rm "$id"
tap_like "$tap_stderr" "$handed" "handed to hutch-full"
tap_ok "--version" "$HUTCH_BIN" --version
tap_is "$tap_stdout" "hutch $("$full" --version | sed 's/^hutch //')" "is hutch-full's"
tap_status 2 "an unknown verb" "$HUTCH_BIN" no-such-verb
tap_like "$tap_stderr" "unknown command 'no-such-verb'" "is refused by hutch-full, as usage error 2"

# --net proxy: its veth is configured over libmnl, which the front end lacks.
tap_ok "exec --net proxy" "$HUTCH_BIN" exec --rootfs "$img" --net proxy -- sh -c 'ip -4 addr show eth0 | grep -c inet'
tap_is "$tap_stdout" "1" "the sandbox has its veth"
tap_like "$tap_stderr" "front end: --net proxy: $handed" "handed to hutch-full"
np=$("$HUTCH_BIN" create --rootfs "$img" --net proxy 2>/dev/null)
tap_ok "fork of a --net proxy sandbox" "$HUTCH_BIN" fork "$np"
npc=$tap_stdout
tap_like "$tap_stderr" "front end: a fork of a --net proxy sandbox: $handed" "handed to hutch-full"
tap_ok "the child has its veth" "$HUTCH_BIN" exec --in "$npc" -- sh -c 'ip -4 addr show eth0 | grep -q inet'
"$HUTCH_BIN" rm "$np" "$npc" 2>/dev/null
# Handed over, hutch-full (and the sandbox's processes it forks) go by the
# name the user ran.
"$HUTCH_BIN" exec --rootfs "$img" --net proxy -- sleep 30 2>/dev/null &
pid=$!
hutch_wait_until 30 sh -c "[ \"\$(cat /proc/$pid/comm)\" = hutch ] && readlink /proc/$pid/exe | grep -q hutch-full"
tap_is "$(readlink "/proc/$pid/exe")" "$(readlink -f "$full")" "the handed-over process runs hutch-full"
tap_is "$(cat "/proc/$pid/comm" 2>/dev/null)" "hutch" "under the name hutch"
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null

# A user /etc/passwd does not list: musl has no NSS, and the subordinate id
# ranges are found by user name.
if [ "${HUTCH_TEST_MODE:-root}" = root ] && command -v setpriv >/dev/null && ! getent passwd 54321 >/dev/null; then
  tap_ok "a user not in /etc/passwd" setpriv --reuid=54321 --regid=54321 --clear-groups \
    env HOME=/ HUTCH_DEBUG=1 "$HUTCH_BIN" exec --help
  tap_like "$tap_stderr" "front end: a user not in /etc/passwd: $handed" "is handed to hutch-full"
else
  tap_skip "a user not in /etc/passwd is handed to hutch-full" "needs root and a free uid 54321"
fi
unset HUTCH_DEBUG

# A one-shot's init is a fork of the front end, so musl's calls (open, not
# openat; epoll_pwait; fstat) are what init's own filter must allow.  A
# profile allowing glibc's calls only makes init keep the filter for its
# commands, not take it and die at its first epoll_pwait.
mkdir -p "$tmp/pol"
cp "$HUTCH_POLICY" "$tmp/pol/default.policy"
"$py" - "$(dirname "$HUTCH_POLICY")/seccomp.json" "$tmp/pol/seccomp.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for r in d["syscalls"]:
    r["names"] = [n for n in r["names"] if n not in ("open", "epoll_pwait", "fstat")]
d["syscalls"] = [r for r in d["syscalls"] if r["names"]]
json.dump(d, open(sys.argv[2], "w"))
PY
tap_ok "a profile without open, epoll_pwait and fstat" \
  "$HUTCH_BIN" exec --rootfs "$img" --policy "$tmp/pol/default.policy" -- sh -c 'sleep 0.3; echo ok'
tap_is "$tap_stdout" "ok" "runs the command, init watching it the while"

# ---- the same results from both programs ----
# The audit logs of the same commands: the same records, field for field,
# but the times, ids and what a run used; each verifies with hutch audit.
for prog in front full; do
  bin=$HUTCH_BIN
  [ $prog = full ] && bin=$full
  "$bin" exec --rootfs "$img" --audit "$tmp/$prog-exit.jsonl" -- sh -c 'exit 3' 2>/dev/null
  "$bin" exec --rootfs "$img" --audit "$tmp/$prog-kill.jsonl" -- sh -c 'kill -KILL $$' 2>/dev/null
  "$bin" exec --rootfs "$img" --json -- sh -c 'exit 4' >"$tmp/$prog.json" 2>/dev/null
done
for log in exit kill; do
  tap_ok "the front end's audit log ($log) verifies" "$full" audit --quiet "$tmp/front-$log.jsonl"
  same=$("$py" - "$tmp/front-$log.jsonl" "$tmp/full-$log.jsonl" <<'PY'
import json, sys
VARY = {"time", "ts", "start", "end", "sandbox", "id", "prev", "seq", "wall_seconds", "cpu_seconds", "cpu_usec", "maxrss",
        "max_rss_kib", "memory_peak", "start_time", "pid", "hash", "usage", "limits", "duration_seconds"}
def load(path):
    out = []
    for line in open(path):
        rec = json.loads(line)
        out.append({k: v for k, v in rec.items() if k not in VARY})
    return out
a, b = load(sys.argv[1]), load(sys.argv[2])
print("same" if a == b else "differ:\n%s\n%s" % (a, b))
PY
)
  tap_is "$same" "same" "and holds what hutch-full's holds ($log)"
done
tap_like "$(cat "$tmp/front-kill.jsonl")" '"signal_name":"KILL"' "a signal's name, as glibc names it"
tap_is "$("$py" -c 'import json,sys; print(sorted(json.load(open(sys.argv[1]))))' "$tmp/front.json")" \
  "$("$py" -c 'import json,sys; print(sorted(json.load(open(sys.argv[1]))))' "$tmp/full.json")" \
  "exec --json gives the same fields"
tap_is "$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["exit_code"])' "$tmp/front.json")" "4" \
  "and the same exit code"

# An errno's text is glibc's from both (musl words ELOOP "Symbolic link loop").
ln -s loop "$tmp/loop"
"$HUTCH_BIN" exec --rootfs "$img" --policy "$tmp/loop" -- true 2>"$tmp/front.err"
"$full" exec --rootfs "$img" --policy "$tmp/loop" -- true 2>"$tmp/full.err"
tap_like "$(cat "$tmp/front.err")" "Too many levels of symbolic links" "an errno's text is glibc's"
tap_is "$(cat "$tmp/front.err")" "$(cat "$tmp/full.err")" "and the whole message hutch-full's"

tap_done
