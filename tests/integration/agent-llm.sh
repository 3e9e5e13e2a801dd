#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch run's LLM client against a misbehaving server: rate limits, 5xx until
# the tries run out, context-length errors, garbage, a hung server, a huge reply.
. "$(dirname "$0")/../lib/tap.sh"
. "$HUTCH_SRCDIR/tests/lib/agent.sh"

[ -x /usr/bin/python3 ] || tap_skip_all "python3 is needed for the mock model server"
AGENT_IMAGE=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"

mock_start '[{"status": 429, "retry_after": "1", "error": "slow down"}, {"calls": [["submit", {}]]}]'
start=$SECONDS
tap_status 0 "429 then success: the run submits" hrun --query q
tap_is "$(mock_count)" "2" "the request was retried once"
tap_is "$(mock_request 1 'int(r["time"] - __import__("json").loads(open(__import__("sys").argv[1]).readline())["time"] >= 0.95)')" \
  "1" "after the Retry-After delay (1 s, not the 0.05 s backoff)"

mock_start '[{"repeat": 10, "status": 503, "error": "down for maintenance"}]'
tap_status 3 "5xx until the tries run out: exit 3" hrun --query q --max-tries 4
tap_is "$(mock_count)" "4" "exactly --max-tries requests"
tap_like "$tap_stderr" "failed 4 times.*HTTP 503: down for maintenance" "the error names the tries and the last failure"
run_dir
tap_is "$(traj 't["hutch"]["end_reason"]')" "error" "the trajectory records the error"

mock_start '[{"context_error": true}, {"calls": [["submit", {}]]}]'
tap_status 0 "a context-length error lowers max_tokens and retries" hrun --query q
tap_is "$(mock_request 0 'r["body"]["max_tokens"]'),$(mock_request 1 'r["body"]["max_tokens"]')" \
  "65536,31668" "max_tokens: 65536, then what fits (32768 - 1000 - 100)"
mock_start '[{"repeat": 20, "context_error": true}]'
tap_status 3 "but not below the floor" hrun --query q --max-tokens-per-call 1500
tap_like "$tap_stderr" "maximum context length" "and says why"

for case in 'raw:"{not json"' 'raw:"<html><body>502 Bad Gateway</body></html>"' 'raw_hex:"7b22fffe227d"' \
  'raw:"{\"choices\": [{\"message\": {\"tool_calls\": [{\"function\": {}}]}}]}"' 'raw:"{\"choices\": []}"'; do
  mock_start "[{\"${case%%:*}\": ${case#*:}}]"
  tap_status 3 "garbage reply (${case:0:40}) is an error, exit 3" hrun --query q
  tap_like "$tap_stderr" "hutch run: .*(not JSON|not UTF-8|no function name|no choices)" "with a clear message"
done

mock_start '[{"hang": 30}, {"calls": [["submit", {}]]}]'
start=$SECONDS
tap_status 0 "a hung server times out and the retry succeeds" hrun --query q --llm-timeout 1
tap_check $((SECONDS - start > 10)) "within the per-call timeout ($((SECONDS - start)) s)"
mock_start '[{"repeat": 5, "hang": 30}]'
tap_status 3 "a server that always hangs: exit 3 after the tries" hrun --query q --llm-timeout 0.5 --max-tries 2
tap_like "$tap_stderr" "failed 2 times.*(timeout|Timeout)" "named a timeout"

mock_start '[{"huge": 50000000}]'
tap_status 3 "a 50 MB reply is refused" hrun --query q
tap_like "$tap_stderr" "larger than 16777216 bytes" "past --max-reply-size"

mock_start '[{"status": 401, "error": "bad key"}]'
tap_status 3 "401 is not retried" hrun --query q --api-key wrong
tap_is "$(mock_count)" "1" "one request"
tap_like "$tap_stderr" "API key" "the hint points at the key"

mock_start '[]'
tap_status 3 "a server that is not there" hrun --query q --base-url http://127.0.0.1:9/v1 --max-tries 2
tap_like "$tap_stderr" "network" "is a network error"

mock_stop
tap_done
