#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch-run(1) and hutch-benchmark(1) as man(1) shows them (groff's mdoc, and
# mandoc): their synopses name the verb and only commands that exist, LLM-in-
# Sandbox's build and benchmark commands are given their counterparts, and
# each page lists the differences that remain between hutch's files and
# LLM-in-Sandbox's.
. "$HUTCH_SRCDIR/tests/lib/tap.sh"

mandir=$HUTCH_SRCDIR/man
command -v groff >/dev/null || tap_skip_all "groff is needed (apt-get install groff-base)"
render() { groff -mandoc -Tutf8 -P-cbou "$mandir/$1" 2>/dev/null; }
# The SYNOPSIS section's lines.
synopsis() { render "$1" | sed -n '/^SYNOPSIS/,/^[A-Z]/p' | sed '1d;$d' | grep -v '^ *$'; }

run_syn=$(synopsis hutch-run.1)
tap_like "$run_syn" "^ +hutch run " "hutch-run(1)'s synopsis names the verb"
bench_syn=$(synopsis hutch-benchmark.1)
bad=$(printf '%s\n' "$bench_syn" | grep -Ev '^ +(hutch (benchmark|report) |[[:space:]]+\[)')
tap_is "$bad" "" "every line of hutch-benchmark(1)'s synopsis is a hutch benchmark or hutch report command"
tap_unlike "$bench_syn" "hutch judge" "none is hutch judge, which is no command"
for p in hutch-run.1 hutch-benchmark.1; do
  tap_unlike "$(render $p | tr -s ' \n' '  ')" "no counterpart" "$p: no LLM-in-Sandbox command is said to have no counterpart"
done
run_text=$(render hutch-run.1 | tr -s ' \n' '  ')
tap_like "$run_text" "llm-in-sandbox build.{0,80}hutch build" "hutch-run(1) gives llm-in-sandbox build its counterpart"
tap_like "$run_text" "llm-in-sandbox benchmark.{0,80}hutch benchmark" "and llm-in-sandbox benchmark its"
bench_text=$(render hutch-benchmark.1)
sect=$(printf '%s\n' "$bench_text" | sed -n '/^DIFFERENCES FROM LLM-IN-SANDBOX/,/^[A-Z]/p')
for f in results.json trajectory.json logs/ num_errors docker_image; do
  tap_like "$sect" "$f" "hutch-benchmark(1)'s DIFFERENCES FROM LLM-IN-SANDBOX covers $f"
done
sect=$(render hutch-run.1 | sed -n '/^DIFFERENCES FROM LLM-IN-SANDBOX/,/^[A-Z]/p')
for f in trajectory.json files/ request_NNN.json; do
  tap_like "$sect" "$f" "hutch-run(1)'s DIFFERENCES FROM LLM-IN-SANDBOX covers $f"
done

tap_done
