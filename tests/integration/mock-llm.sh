#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch-mock-llm, the scripted model of the offline demo: `make install`
# puts it in the bin directory with its man page and the demo task set in
# the data directory, and the installed program serves the installed demo
# to hutch benchmark.  (The rootless run has no build tree to install from:
# it runs the same program from the source tree.)
. "$(dirname "$0")/../lib/tap.sh"

command -v python3 >/dev/null || tap_skip_all "python3 is needed for hutch-mock-llm"
tmp=$(hutch_test_tmpdir)

if [ "${HUTCH_TEST_MODE:-root}" = root ]; then
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$HUTCH_BUILDDIR" install DESTDIR="$tmp/dest" \
    >"$tmp/install.log" 2>&1
  tap_check $? "make install DESTDIR=..."
  mock=$(find "$tmp/dest" -path '*/bin/hutch-mock-llm' -type f)
  tap_ok "hutch-mock-llm is installed in the bin directory, executable" test -x "$mock"
  tap_ok "beside hutch" test -x "$(dirname "$mock")/hutch"
  tap_is "$(head -n 1 "$mock")" "#!/usr/bin/env python3" "run by the python3 on PATH"
  tap_ok "its man page is installed" test -f "$(dirname "$(dirname "$mock")")/share/man/man1/hutch-mock-llm.1"
  tasks=$(dirname "$(dirname "$mock")")/share/hutch/examples/tasks
  for f in config.yaml data.json reward.py mock-replies.json vanilla_llm_prompt.py README.md; do
    tap_ok "the demo task set's $f is installed" test -f "$tasks/demo/$f"
  done
else
  tap_skip "make install" "the rootless run has no build tree"
  mock=$tmp/hutch-mock-llm
  printf '#!/bin/sh\nexec python3 %s "$@"\n' "$HUTCH_SRCDIR/tests/lib/mock-openai.py" >"$mock"
  chmod +x "$mock"
  tasks=$HUTCH_SRCDIR/examples/tasks
fi

tap_ok "hutch-mock-llm --help" "$mock" --help
mapfile -t opts < <(grep -oE -- '--[a-z][a-z-]*' <<<"$tap_stdout" | sort -u)
page=$(mandoc -T ascii -O width=400 "$HUTCH_SRCDIR/man/hutch-mock-llm.1" 2>/dev/null | sed 's/.\x08//g')
for o in "${opts[@]}"; do
  tap_like "$page" "(^|[^a-z-])$o([^a-z-]|\$)" "hutch-mock-llm $o is documented in hutch-mock-llm(1)"
done
tap_status 1 "a script that is not there" "$mock" "$tmp/no-such.json"
tap_like "$tap_stderr" "hutch-mock-llm: $tmp/no-such.json: " "is named"
tap_status 2 "an unknown option is a usage error" "$mock" --frob "$tasks/demo/mock-replies.json"

# ---- it serves the demo to hutch benchmark ----
"$mock" --port-file "$tmp/port" --requests "$tmp/requests.jsonl" "$tasks/demo/mock-replies.json" >"$tmp/url" &
mock_pid=$!
trap 'kill $mock_pid 2>/dev/null' EXIT
hutch_wait_until 20 test -s "$tmp/port"
tap_check $? "it listens and writes its port"
port=$(cat "$tmp/port")
hutch_wait_until 5 test -s "$tmp/url"
tap_is "$(cat "$tmp/url")" "http://127.0.0.1:$port/v1" "and prints its base URL"
models=$(python3 -c 'import json, sys, urllib.request
print([m["id"] for m in json.load(urllib.request.urlopen(sys.argv[1] + "/models"))["data"]])' "$(cat "$tmp/url")")
tap_is "$models" "['mock']" "GET /v1/models lists the model mock"

IMAGE=$(hutch_test_rootfs debian) || {
  tap_skip "the demo against it" "debian test rootfs unavailable (tests/setup-host.sh)"
  tap_done
}
tap_status 0 "hutch benchmark runs the demo task set against it" "$HUTCH_BIN" benchmark "$tasks" --task demo \
  --model mock --base-url "$(cat "$tmp/url")" --rootfs "$IMAGE" --end-id 4 --num-workers 2 --retry-delay 0.05 \
  --output-dir "$tmp/out"
out=$(printf '%s\n' "$tap_stdout" | tail -n 1)
tap_is "$(python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d["total"], float(d["mean_score"]), d["num_errors"])' \
  "$out/results.json" 2>&1)" "4 1.0 0" "its first four tasks solved by the scripted model"
tap_ok "the requests were recorded" test -s "$tmp/requests.jsonl"
tap_done
