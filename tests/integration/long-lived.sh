#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch create / exec --in / ps / rm: one sandbox, many commands.
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"

id=$(timeout 20 "$HUTCH_BIN" create --rootfs "$img" --env GREETING=hi)
tap_check $? "hutch create returns (it does not hold the caller's stdout)"
tap_like "$id" "^[0-9a-f]{12}$" "and prints an id"
hin() { "$HUTCH_BIN" exec --in "$id" "$@"; }

tap_ok "a command runs in it" hin -- echo one
tap_is "$tap_stdout" "one" "with its own stdout"
tap_ok "files persist between commands" hin -- sh -c 'echo state > /root/file'
tap_ok "the next command sees them" hin -- cat /root/file
tap_is "$tap_stdout" "state" "same upper layer"
tap_ok "the sandbox's environment" hin -- sh -c 'echo $GREETING'
tap_is "$tap_stdout" "hi" "--env of create reaches every command"
tap_ok "per-command environment" hin --env ONLY=me -- sh -c 'echo $ONLY'
tap_is "$tap_stdout" "me" "--env of exec --in"
tap_ok "working directory" hin --workdir /tmp -- pwd
tap_is "$tap_stdout" "/tmp" "--workdir of exec --in"
tap_status 5 "exit status" hin -- sh -c 'exit 5'
tap_status 137 "a signal" hin -- sh -c 'kill -9 $$'
tap_status 127 "not found" hin -- no-such-program
tap_ok "stdin" sh -c "echo via-stdin | '$HUTCH_BIN' exec --in $id -- cat | grep -q via-stdin"
tap_ok "stderr stays apart" hin -- sh -c 'echo err >&2'
tap_is "$tap_stderr" "err" "stderr is the command's stderr"
tap_is "$tap_stdout" "" "and stdout is empty"

# Once handed over, init is the small hutch-init beside hutch (when there
# is one): no copy of the creating hutch's memory, arguments or environment
# is left in the sandbox, and the exec leaves it as locked as before.
if [ -x "$(dirname "$HUTCH_BIN")/hutch-init" ]; then
  tap_ok "init's command line" hin -- sh -c 'tr "\0" " " </proc/1/cmdline'
  tap_like "$tap_stdout" "^hutch-init [0-9]+ $" "init is hutch-init, with nothing of the caller's"
  tap_fails "init's environment cannot be read (init is not dumpable)" hin -- cat /proc/1/environ
  tap_ok "init's status" hin -- cat /proc/1/status
  tap_like "$tap_stdout" $'CapEff:\t0000000000000000' "init holds no capability"
  tap_like "$tap_stdout" $'NoNewPrivs:\t1' "and cannot gain one"
else
  tap_skip "hutch-init" "no hutch-init beside $HUTCH_BIN"
fi

# Orphans are adopted by init, which must reap them.
tap_ok "orphans exit" hin -- sh -c '(sleep 0.2 &); (true &); true'
sleep 1
tap_ok "process states" hin -- ps -o stat,args
tap_unlike "$tap_stdout" $'\n *Z' "init reaped the orphans: no zombie is left"
tap_ok "a background process of one command" hin -- sh -c 'sleep 1000 >/dev/null 2>&1 &'
tap_status 124 "--timeout in a live sandbox" hin --timeout 0.5 -- sleep 30
tap_ok "the sandbox survives a timed-out command" hin -- true
tap_ok "process list" hin -- ps -o pid,args
tap_unlike "$tap_stdout" "sleep 30" "the timed-out command is gone"

# A client that dies takes its command with it.
naptime=$((200000 + RANDOM))
"$HUTCH_BIN" exec --in "$id" -- sleep "$naptime" &
client=$!
tap_ok "the command of a client runs" hutch_wait_until 30 pgrep -f "sleep $naptime"
kill -9 "$client"
wait "$client" 2>/dev/null
gone=1
for _ in $(seq 200); do
  if ! pgrep -f "sleep $naptime" >/dev/null; then gone=0; break; fi
  sleep 0.1
done
tap_check $gone "killing hutch exec --in kills its command"

tap_ok "ps" "$HUTCH_BIN" ps --json
tap_like "$tap_stdout" "\"id\":\"$id\"" "lists the sandbox"
tap_like "$tap_stdout" '"status":"running"' "as running"
tap_ok "ps table" "$HUTCH_BIN" ps
tap_like "$tap_stdout" "$id +[0-9]+ +running" "the table too"

init_pid=$("$HUTCH_BIN" ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["id"] == sys.argv[1]: print(s["pid"])' "$id")
tap_ok "hutch rm" "$HUTCH_BIN" rm "$id"
# Gone, or a zombie waiting for whichever process adopted it to reap it.
tap_ok "the init is gone" sh -c "! kill -0 $init_pid 2>/dev/null || grep -q '^[0-9]* (.*) Z' /proc/$init_pid/stat"
tap_ok "no process of the sandbox is left" sh -c "! pgrep -f 'sleep 1000\$'"
tap_ok "the state directory is gone" test ! -e "$HUTCH_STATE_DIR/$id"
tap_status 125 "exec --in a removed sandbox fails" hin -- true
tap_like "$tap_stderr" "no sandbox with id" "saying so"

# A sandbox whose init was killed from outside is found and cleaned.
id2=$("$HUTCH_BIN" create --rootfs "$img")
pid2=$("$HUTCH_BIN" ps --json | python3 -c '
import json, sys
for s in json.load(sys.stdin):
    if s["id"] == sys.argv[1]: print(s["pid"])' "$id2")
kill -9 "$pid2"
for _ in $(seq 50); do
  kill -0 "$pid2" 2>/dev/null || break
  grep -q '^[0-9]* (.*) Z' "/proc/$pid2/stat" 2>/dev/null && break
  sleep 0.1
done
tap_ok "ps after its init was killed" "$HUTCH_BIN" ps --json
tap_like "$tap_stdout" "\"id\":\"$id2\",\"pid\":$pid2,\"status\":\"dead\"" "shows it dead"
tap_ok "rm cleans a dead sandbox" "$HUTCH_BIN" rm "$id2"
tap_ok "its directory is gone" test ! -e "$HUTCH_STATE_DIR/$id2"

tap_status 2 "rm without an id is a usage error" "$HUTCH_BIN" rm
tap_status 2 "--timeout is not a create option" "$HUTCH_BIN" create --timeout 3
tap_done
