#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch benchmark's task-folder mistakes are usage errors (exit status 2)
# that name the tasks there are: a --task that is not there, a task folder
# without its config.yaml or its data file, a TASKDIR that is none or is a
# task folder itself.  Nothing is written, no model is asked.
. "$(dirname "$0")/../lib/tap.sh"

tmp=$(hutch_test_tmpdir)
tasks=$tmp/tasks
mkdir -p "$tasks/alpha" "$tasks/beta" "$tasks/nodata" "$tasks/noconfig" "$tasks/.hidden" "$tmp/none"
for t in alpha beta .hidden; do
  printf 'dataset: "json"\ndata_files: "%s/data.json"\nsystem_prompt: "s"\ninstance_prompt: "{problem_statement}"\n' \
    "$t" >"$tasks/$t/config.yaml"
  printf '%s\n' '{"id": "a", "problem_statement": "p", "ground_truth": "1"}' >"$tasks/$t/data.json"
done
printf 'dataset: "json"\ndata_files: "nodata/data.json"\nsystem_prompt: "s"\n' >"$tasks/nodata/config.yaml"
# No server listens there: a task-folder mistake is found before any request.
hb() { "$HUTCH_BIN" benchmark "$@" --model m --base-url http://127.0.0.1:9/v1 --output-dir "$tmp/out"; }

tap_status 2 "a --task that is not there is a usage error" hb "$tasks" --task gamma
tap_like "$tap_stderr" "task 'gamma'" "naming it"
tap_like "$tap_stderr" "the tasks in $tasks: alpha, beta, nodata" "and the tasks there are (sorted, hidden folders and folders without config.yaml left out)"
tap_status 2 "so is LLM-in-Sandbox's TASK word" hb "$tasks" gamma
tap_like "$tap_stderr" "the tasks in $tasks: alpha, beta, nodata" "with the same list"
tap_status 2 "a task folder without config.yaml" hb "$tasks" --task noconfig
tap_like "$tap_stderr" "noconfig/config.yaml" "names the missing file"
tap_like "$tap_stderr" "the tasks in $tasks: alpha" "and the tasks there are"
tap_status 2 "a task folder without its data file" hb "$tasks" --task nodata
tap_like "$tap_stderr" "data file $tasks/nodata/data.json" "names the missing data file"
tap_like "$tap_stderr" "the tasks in $tasks: alpha" "and the tasks there are"
tap_status 2 "--task with a /" hb "$tasks" --task alpha/x
tap_like "$tap_stderr" "the tasks in $tasks: alpha" "lists the tasks too"
tap_status 2 "a TASKDIR without task folders" hb "$tmp/none" --task alpha
tap_like "$tap_stderr" "holds no task folder" "says so"
tap_status 2 "a TASKDIR that does not exist" hb "$tmp/missing" --task alpha
tap_like "$tap_stderr" "TASKDIR '$tmp/missing' is no directory" "says so"
tap_status 2 "a task folder given as TASKDIR" hb "$tasks/alpha/" --task alpha
tap_like "$tap_stderr" "is a task folder itself.*hutch benchmark $tasks --task alpha" "gives the command meant"
tap_ok "nothing was written" test ! -e "$tmp/out"
tap_done
