#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch exec -t / -i: a shell at a pseudo-terminal of its own in the
# sandbox, driven from a pty of the test's as a person at a terminal would
# (tests/lib/pty-drive.py): the prompt, the window size and its changes,
# ^C and ^Z reaching the command, line editing, the exit status, and the
# caller's terminal as it was after every way out.
. "$(dirname "$0")/../lib/tap.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed to drive a pseudo-terminal"
img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
drive="$HUTCH_SRCDIR/tests/lib/pty-drive.py"
val() { sed -n "s/^$1 //p" <<<"$out"; }

# The whole session: one-shot (a new sandbox), then --in (a live one).
session() {
  local how=$1
  shift
  out=$(timeout 120 python3 "$drive" full -- "$HUTCH_BIN" exec -it --env 'PS1=hutch-pty$ ' "$@" -- sh 2>&1)
  tap_check $? "$how: the session ran to its end"
  tap_is "$(val prompt)" yes "$how: the shell's prompt appears"
  tap_is "$(val raw)" yes "$how: the caller's terminal is raw while attached (no echo, no line editing, no signals of its own)"
  tap_is "$(val size)" "31 97" "$how: stty size inside is the caller's window size"
  tap_is "$(val resized)" "40 120" "$how: a resize and SIGWINCH reach the pty"
  tap_is "$(val interrupted)" 130 "$how: ^C interrupts sleep 100 inside (SIGINT from the pty) and the shell survives"
  tap_is "$(val stopped)" yes "$how: ^Z stops it (job control)"
  tap_is "$(val resumed)" 130 "$how: fg resumes it in the foreground, where ^C reaches it"
  tap_is "$(val edited)" "ed-abc" "$how: line editing (a backspace) is the shell's"
  tap_is "$(val status)" 3 "$how: exit 3 is hutch's exit status"
  tap_is "$(val restored)" yes "$how: the caller's terminal settings (stty -g) are back"
  [ "$(val status)" == 3 ] || tap_diag "$out"
}
session "one-shot" --rootfs "$img"

id=$(timeout 20 "$HUTCH_BIN" create --rootfs "$img")
tap_check $? "hutch create"
session "--in" --in "$id"

# Other ways out: a signal to hutch goes to the command (the shell dies of
# SIGHUP), and the command killed; the terminal comes back each time.
for how in hup kill; do
  out=$(timeout 60 python3 "$drive" $how -- "$HUTCH_BIN" exec -it --env 'PS1=hutch-pty$ ' --in "$id" -- sh 2>&1)
  want=$([ $how == hup ] && echo 129 || echo 137)
  tap_is "$(val status)" "$want" "$how: hutch ends with the shell's end ($want)"
  tap_is "$(val restored)" yes "$how: the caller's terminal settings are back"
done
out=$(timeout 60 python3 "$drive" usr1 -- "$HUTCH_BIN" exec -it --env 'PS1=hutch-pty$ ' --in "$id" -- sh 2>&1)
tap_is "$(val status)" -10 "SIGUSR1, which hutch does not forward, ends hutch"
tap_is "$(val restored)" yes "which restores the caller's terminal settings first"
tap_ok "the sandbox answers after its client was killed" "$HUTCH_BIN" exec --in "$id" -- true
out=$(timeout 60 python3 "$drive" hup -- "$HUTCH_BIN" exec -it --env 'PS1=hutch-pty$ ' --rootfs "$img" -- sh 2>&1)
tap_is "$(val status)" 129 "one-shot: SIGHUP to hutch ends the shell"
tap_is "$(val restored)" yes "one-shot: and the caller's terminal settings are back"

# -t without a terminal: the pty all the same, with no input.
tty_fds='tty; for f in /proc/$$/fd/*; do readlink $f; done; true'
tap_ok "-t alone works without a terminal on stdin" "$HUTCH_BIN" exec -t --in "$id" -- sh -c "$tty_fds" </dev/null
tap_like "$tap_stdout" "^/dev/pts/[0-9]+" "the command's terminal is a pty of the sandbox's devpts"
tap_is "$(sed 1d <<<"$tap_stdout" | sort -u | tr -d '\r')" "$(sed -n 1p <<<"$tap_stdout" | tr -d '\r')" \
  "its only fds are the pty's slave: no master, nothing of hutch's"
tap_ok "one-shot -t alone" "$HUTCH_BIN" exec -t --rootfs "$img" -- sh -c "$tty_fds" </dev/null
tap_is "$(sed 1d <<<"$tap_stdout" | sort -u | tr -d '\r')" "$(sed -n 1p <<<"$tap_stdout" | tr -d '\r')" \
  "one-shot: its only fds are the pty's slave"
tap_ok "stderr goes to the pty too" "$HUTCH_BIN" exec -t --in "$id" -- sh -c 'echo to-stderr >&2' </dev/null
tap_like "$tap_stdout" "to-stderr" "and reaches hutch's stdout"
tap_status 7 "-t: the exit status is the command's" "$HUTCH_BIN" exec -t --in "$id" -- sh -c 'exit 7' </dev/null
tap_status 125 "-it refuses a stdin that is not a terminal" "$HUTCH_BIN" exec -it --in "$id" -- true </dev/null
tap_like "$tap_stderr" "the input device is not a TTY" "as podman says it"
# -i alone: stdin attached as it always is.
tap_ok "-i alone pipes stdin" sh -c "echo via-i | '$HUTCH_BIN' exec -i --in $id -- cat | grep -qx via-i"
tap_fails "-t is an option of exec" "$HUTCH_BIN" create -t --rootfs "$img"

# TERM: the caller's under -t (xterm without one), as docker and podman;
# nothing else of hutch's environment.
show_term='printf "[%s]" "${TERM-unset}"'
for how in one-shot --in; do
  where=(--rootfs "$img")
  [ $how == --in ] && where=(--in "$id")
  tap_ok "$how: -t" env TERM=vt220 "$HUTCH_BIN" exec -t "${where[@]}" -- sh -c "$show_term" </dev/null
  tap_is "$tap_stdout" "[vt220]" "$how: -t passes the caller's TERM"
  tap_ok "$how: -t without TERM" env -u TERM "$HUTCH_BIN" exec -t "${where[@]}" -- sh -c "$show_term" </dev/null
  tap_is "$tap_stdout" "[xterm]" "$how: -t without a TERM of the caller's sets xterm"
  tap_ok "$how: -t with TERM empty" env TERM= "$HUTCH_BIN" exec -t "${where[@]}" -- sh -c "$show_term" </dev/null
  tap_is "$tap_stdout" "[xterm]" "$how: and with an empty one"
  tap_ok "$how: -t --env TERM" env TERM=vt220 "$HUTCH_BIN" exec -t --env TERM=dumb "${where[@]}" -- sh -c "$show_term" </dev/null
  tap_is "$tap_stdout" "[dumb]" "$how: --env TERM=... wins over the caller's"
  tap_ok "$how: without -t" env TERM=vt220 "$HUTCH_BIN" exec "${where[@]}" -- sh -c "$show_term" </dev/null
  tap_is "$tap_stdout" "[unset]" "$how: without -t, no TERM"
  # Every variable of the command's, by name: -t adds TERM and nothing else,
  # whatever hutch's own environment holds.
  names='env | sed "s/=.*//" | sort | tr "\n" " "'
  with=$(env TERM=vt220 HUTCH_LEAK_CANARY=1 LC_ALL=C "$HUTCH_BIN" exec -t "${where[@]}" -- sh -c "$names" </dev/null | tr -d '\r')
  without=$(env TERM=vt220 HUTCH_LEAK_CANARY=1 LC_ALL=C "$HUTCH_BIN" exec "${where[@]}" -- sh -c "$names" </dev/null)
  tap_is "$(comm -13 <(tr ' ' '\n' <<<"$without" | sort) <(tr ' ' '\n' <<<"$with" | sort) | tr '\n' ' ')" "TERM " \
    "$how: -t adds TERM to the command's environment, nothing else of hutch's"
  tap_unlike "$with" "HUTCH_LEAK_CANARY|LC_ALL" "$how: hutch's own variables stay outside"
done
if deb=$(hutch_test_rootfs debian); then
  tap_ok "clear works under -t (ncurses finds the caller's terminal)" env -u TERM "$HUTCH_BIN" exec -t --rootfs "$deb" \
    -- clear </dev/null
  tap_unlike "$tap_stdout$tap_stderr" "TERM environment variable not set" "without complaining of TERM"
else
  tap_skip "clear under -t" "debian test rootfs unavailable"
fi

tap_ok "hutch rm" "$HUTCH_BIN" rm "$id"
tap_done
