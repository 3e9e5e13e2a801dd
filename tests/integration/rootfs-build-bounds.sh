#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What a build step can make hutch hold is bounded: a RUN step's output (to
# the build log and to the terminal) is capped per step and for the whole
# build, with a line saying how much was dropped, and escaped; output that
# outlives the step's own process does not hold the build; a step that runs
# past --step-timeout is killed and names the fix; and an image never stacks
# more than 127 layers (a Dockerfile of too many is refused before its first
# step, a layer on an image of 127 is refused before its sandbox starts).
. "${HUTCH_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}/tests/lib/tap.sh"

work=$(hutch_test_tmpdir) || exit 1
chmod 0755 "$work"
export HUTCH_STORE=$work/store

# Built images first: one that another is built on has fewer lowers.
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
  local all
  all=$("$HUTCH_BIN" rootfs ls --json 2>/dev/null | python3 -c '
import json, sys
seen, out = set(), []
for i in sorted(json.load(sys.stdin), key=lambda i: -len(i.get("lowers") or [])):
    if i["digest"] not in seen:
        seen.add(i["digest"])
        out.append(i["digest"])
print(" ".join(out))' 2>/dev/null)
  # shellcheck disable=SC2086 # a list of digests
  [ -z "$all" ] || "$HUTCH_BIN" rootfs rm $all >/dev/null 2>&1
  rm -rf "$work"
}
trap cleanup EXIT

base=$(hutch_test_rootfs busybox) || tap_skip_all "the busybox test rootfs is not available"
ctx=$work/ctx
mkdir -p "$ctx"
echo hello >"$ctx/a.txt"
size() { stat -c %s "$1" 2>/dev/null || echo 0; }
esc=$'\033'
mib=$((1024 * 1024))

# build NAME ARGS...: a build with its stdout and stderr in $work/NAME.out
# and .err (tens of MB would not fit tap_ok's variables), killed after 60 s.
build() {
  local name=$1
  shift
  timeout --kill-after=5 60 "$HUTCH_BIN" rootfs build --name "$name" "$@" \
    >"$work/$name.out" 2>"$work/$name.err"
  rc=$?
}

# ---- a Dockerfile RUN step that floods its output ---------------------------
# 20,000,005 bytes: 8 MiB (the default cap) are kept, the rest counted.
printf 'FROM %s\nRUN yes hutch | head -c 20000000; echo done\n' "$base" >"$ctx/flood.Dockerfile"
build flood -f "$ctx/flood.Dockerfile" "$ctx"
tap_check "$rc" "a RUN step that writes 20 MB builds"
log=$HUTCH_STORE/logs/build-flood.log
tap_check "$(($(size "$log") <= 8 * mib + 65536 ? 0 : 1))" \
  "the build log holds at most 8 MiB of its output ($(size "$log") bytes)"
tap_like "$(tail -c 4096 "$log")" "output truncated, 11611397 bytes dropped" \
  "the log ends the step with how many bytes were dropped (all of them drained and counted)"
tap_check "$(($(size "$work/flood.err") <= 8 * mib + 65536 ? 0 : 1))" \
  "what is shown on the terminal is bounded the same way ($(size "$work/flood.err") bytes)"
tap_like "$(tail -c 4096 "$work/flood.err")" "output truncated, 11611397 bytes dropped" "and says so too"

# ---- control sequences in the output and in the Dockerfile ------------------
printf 'FROM %s\nRUN printf "osc:\\033]52;c;aGk=\\007 csi:\\033[2J bidi:\\342\\200\\256 end\\n"\nRUN echo "%s[31mred"\n' \
  "$base" "$esc" >"$ctx/escape.Dockerfile"
build escape -f "$ctx/escape.Dockerfile" "$ctx"
tap_check "$rc" "a build whose steps print control sequences"
log=$HUTCH_STORE/logs/build-escape.log
tap_is "$(grep -c "$esc" "$log")" 0 "the build log holds no escape character"
tap_is "$(grep -c "$esc" "$work/escape.err")" 0 "nor does what is shown on the terminal"
tap_like "$(cat "$log")" 'osc:\\x1b\]52;c;aGk=\\x07 csi:\\x1b\[2J bidi:\\u202e end' \
  "the step's control characters are shown as escapes"
tap_like "$(cat "$work/escape.err")" 'RUN echo "\\x1b\[31mred"' "and so is the Dockerfile's own text"

# ---- a process that outlives its step's own --------------------------------
# It keeps the output pipe open: the step ends with its shell all the same.
printf 'FROM %s\nRUN setsid sh -c "while :; do echo background; sleep 0.01; done" & echo started\n' \
  "$base" >"$ctx/linger.Dockerfile"
build linger -f "$ctx/linger.Dockerfile" "$ctx"
tap_check "$rc" "a RUN step that leaves a writer of its output behind ends (status $rc)"
tap_like "$(cat "$HUTCH_STORE/logs/build-linger.log")" "started" "its own output is in the log"

# ---- the per-step and whole-log caps, as options ----------------------------
{
  echo "FROM $base"
  for i in 1 2 3; do echo "RUN yes step$i | head -c 4000"; done
} >"$ctx/caps.Dockerfile"
build caps -f "$ctx/caps.Dockerfile" --step-log-max 3K --log-max 7K "$ctx"
tap_check "$rc" "--step-log-max 3K --log-max 7K"
log=$HUTCH_STORE/logs/build-caps.log
tap_is "$(grep -c "output truncated" "$log")" 3 "each step's output was cut"
tap_like "$(cat "$log")" "output truncated, 928 bytes dropped" "the first at 3 KiB"
tap_like "$(cat "$log")" "output truncated, 2976 bytes dropped" "the third after 7 KiB of output in all"
tap_check "$(($(size "$log") <= 7168 + 2048 ? 0 : 1))" "the log stays near 7 KiB ($(size "$log") bytes)"
tap_status 2 "--step-log-max takes a size" "$HUTCH_BIN" rootfs build -f "$ctx/caps.Dockerfile" --name x \
  --step-log-max lots "$ctx"

# ---- the step timeout -------------------------------------------------------
printf 'FROM %s\nRUN echo before\nRUN sleep 30\n' "$base" >"$ctx/slow.Dockerfile"
build slow -f "$ctx/slow.Dockerfile" --step-timeout 1s "$ctx"
tap_is "$rc" 125 "a RUN step past --step-timeout fails the build"
tap_like "$(cat "$work/slow.err")" "$ctx/slow.Dockerfile:3: RUN: .*1 s" "the error names the step and the timeout"
tap_like "$(cat "$work/slow.err")" "raise it with --step-timeout" "and the option that raises it"
tap_fails "no image slow" "$HUTCH_BIN" exec --rootfs slow -- /bin/true
tap_status 2 "--step-timeout takes a duration" "$HUTCH_BIN" rootfs build -f "$ctx/slow.Dockerfile" --name x \
  --step-timeout soon "$ctx"
tap_ok "rootfs build -f --help" "$HUTCH_BIN" rootfs build -f x --help
tap_like "$tap_stdout" "--step-timeout DURATION" "describes --step-timeout"
tap_like "$tap_stdout" "default: 1h" "with its default"

# ---- a recipe's steps --------------------------------------------------------
printf 'run yes hutch | head -c 20000000\n' >"$work/flood.recipe"
build rflood --from "$base" --recipe "$work/flood.recipe" --net none
tap_check "$rc" "a recipe step that writes 20 MB builds"
tap_check "$(($(size "$work/rflood.err") <= 8 * mib + 65536 ? 0 : 1))" \
  "what it shows on the terminal is capped at 8 MiB ($(size "$work/rflood.err") bytes)"
tap_like "$(tail -c 4096 "$work/rflood.err")" "output truncated, 11611392 bytes dropped" \
  "with how many bytes were dropped"
printf 'run printf "osc:\\033]52;c;aGk=\\007 end\\n"\n' >"$work/escape.recipe"
build rescape --from "$base" --recipe "$work/escape.recipe" --net none
tap_check "$rc" "a recipe step that prints control sequences"
tap_is "$(grep -c "$esc" "$work/rescape.err")" 0 "they do not reach the terminal"
tap_like "$(cat "$work/rescape.err")" 'osc:\\x1b\]52;c;aGk=\\x07 end' "they are shown as escapes"
printf 'run echo before\nrun sleep 30\n' >"$work/slow.recipe"
build rslow --from "$base" --recipe "$work/slow.recipe" --net none --step-timeout 1s
tap_is "$rc" 125 "a recipe step past --step-timeout fails the build"
tap_like "$(cat "$work/rslow.err")" "step 2 \\($work/slow.recipe:2\\).*1 s" "the error names the step and the timeout"
tap_like "$(cat "$work/rslow.err")" "raise it with --step-timeout" "and the option that raises it"
tap_ok "rootfs build --help" "$HUTCH_BIN" rootfs build --help
tap_like "$tap_stdout" "--step-timeout DURATION" "describes --step-timeout"

# ---- 127 layers at most ------------------------------------------------------
# Refused before the first step: 127 layers over a base of at least one.
{
  echo "FROM $base"
  for i in $(seq 127); do echo "COPY a.txt /f$i"; done
} >"$ctx/deep.Dockerfile"
build deep -f "$ctx/deep.Dockerfile" "$ctx"
tap_is "$rc" 125 "a stage of 127 COPY steps is refused"
tap_like "$(cat "$work/deep.err")" "at most 127 layers" "the error names the limit"
tap_unlike "$(cat "$work/deep.err")" "Step 2/" "before its first step"
# An image of 127 layers (the base, 125 COPY layers and the config's):
# nothing more can be stacked on it.
{
  echo "FROM $base"
  for i in $(seq 125); do echo "COPY a.txt /f$i"; done
} >"$ctx/full.Dockerfile"
build full -f "$ctx/full.Dockerfile" "$ctx"
tap_check "$rc" "an image of 127 layers builds"
printf 'FROM full\nCOPY a.txt /more\n' >"$ctx/more.Dockerfile"
build more -f "$ctx/more.Dockerfile" "$ctx"
tap_is "$rc" 125 "a COPY on it is refused"
tap_like "$(cat "$work/more.err")" "more.Dockerfile:2: COPY: .*at most 127 layers" "naming the step and the limit"
printf 'run echo more >/more\n' >"$work/more.recipe"
build rmore --from full --recipe "$work/more.recipe" --net none
tap_is "$rc" 125 "a recipe build on it is refused"
tap_like "$(cat "$work/rmore.err")" "at most 127 layers" "naming the limit"
tap_unlike "$(cat "$work/rmore.err")" "step 1/1" "before its first step"

# ---- what a build records of its inputs ---------------------------------------
images() { find "$HUTCH_STORE/images" -mindepth 1 -maxdepth 1 | wc -l; }
# The recipe's text is kept in the image's meta.json, which is read back
# with a bound (1 MiB): a recipe near that size makes one too large.
python3 -c 'import sys; sys.stdout.write("# " + "x" * 1048560 + "\nrun true\n")' >"$work/huge.recipe"
before=$(images)
build huge --from "$base" --recipe "$work/huge.recipe" --net none
tap_is "$rc" 125 "a recipe whose image's meta.json would pass 1 MiB is refused"
tap_like "$(cat "$work/huge.err")" "meta.json.*more than 1 MiB" "the error says why"
tap_is "$(images)" "$before" "and no unreadable entry is left in the store"
# ENV values made large by substitution: an ARG of 60 kB, sixteen times in
# each of 20 ENV lines (about 19 MB of environment from a 1 kB Dockerfile).
{
  echo "FROM $base"
  echo "ARG A=$(head -c 60000 /dev/zero | tr '\0' a)"
  for i in $(seq 20); do printf 'ENV B%d=%s\n' "$i" "$(printf '$A%.0s' $(seq 16))"; done
  echo "RUN true"
} >"$ctx/state.Dockerfile"
before=$(images)
build state -f "$ctx/state.Dockerfile" "$ctx"
tap_is "$rc" 125 "ENV values that grow past 16 MiB in all are refused"
tap_like "$(cat "$work/state.err")" "state.Dockerfile:[0-9]+: ENV: .*more than 16 MiB" "at the instruction, naming the limit"
tap_unlike "$(cat "$work/state.err")" "Step 23/" "before the RUN"
tap_is "$(images)" "$before" "nothing is left in the store"
{
  echo "FROM $base"
  echo "ARG A=$(head -c 60000 /dev/zero | tr '\0' a)"
  for i in 1 2; do printf 'LABEL L%d=%s\n' "$i" "$(printf '$A%.0s' $(seq 16))"; done
} >"$ctx/labels.Dockerfile"
build labels -f "$ctx/labels.Dockerfile" "$ctx"
tap_is "$rc" 125 "labels that make the image's meta.json pass 1 MiB are refused"
tap_like "$(cat "$work/labels.err")" "meta.json.*more than 1 MiB" "the error says why"
tap_is "$(images)" "$before" "no unreadable entry is left in the store"

tap_done
