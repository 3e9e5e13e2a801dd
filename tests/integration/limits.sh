#!/bin/bash
# Resource limits on a host whose cgroups hutch cannot use (cgroup v1 or
# hybrid, or no delegation): explicit limits are refused with the cause and
# the fix, the shipped defaults fall back to rlimits with one warning, and
# the rlimits really hold.  Real cgroup v2 behaviour: tests/vm (cgroup-vm.sh).
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
hx() { "$HUTCH_BIN" exec --rootfs "$img" "$@"; }
json_get() { # JSON PYTHON-EXPR over the object `j`
  /usr/bin/python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"
}

tap_ok "policy show --effective" "$HUTCH_BIN" policy show --effective
tap_like "$tap_stdout" $'limits:\n  memory: 2 GiB' "shows the default memory limit"
tap_like "$tap_stdout" "cpus: 1 \\(cpu.max 100000 100000\\)" "the CPU limit as cpu.max"
tap_like "$tap_stdout" "pids: 1024" "the pids limit"
tap_like "$tap_stdout" "fallback: rlimits" "and the fallback"
tap_like "$tap_stdout" "on this host: " "and where limits come from on this host"
where=$(printf '%s\n' "$tap_stdout" | sed -n 's/^  on this host: //p')
tap_ok "policy show --effective --json" "$HUTCH_BIN" policy show --effective --json
tap_is "$(json_get "$tap_stdout" 'j["limits"]["memory"]')" "2147483648" "--json: memory in bytes"

if [[ $where == "cgroup v2"* ]]; then
  tap_diag "this host gives hutch cgroup v2 ($where): the refusal cases run in the VM suite"
  cgroups=1
else
  cgroups=0
fi

if [ $cgroups -eq 0 ]; then
  # ---- explicit limits are never dropped ----
  for opt in "--memory 64M" "--cpus 0.5" "--pids 20"; do
    # shellcheck disable=SC2086 # the option and its value
    tap_status 125 "exec $opt is refused" hx $opt -- true
    tap_like "$tap_stderr" "resource limits: ${opt% *} cannot be applied without a cgroup" "naming the option"
  done
  tap_like "$tap_stderr" "cgroups: (hybrid cgroup setup|this host uses cgroup v1|cgroup .* is not delegated)" \
    "and the cause"
  tap_like "$tap_stderr" "hint: .*--no-cgroups" "and the fix"
  tap_status 125 "create --memory is refused too" "$HUTCH_BIN" create --rootfs "$img" --memory 64M
  tap_ok "ps" "$HUTCH_BIN" ps --json
  tap_is "$tap_stdout" "[]" "a refused start leaves no sandbox behind"

  # ---- the shipped defaults degrade, visibly ----
  tap_ok "the default limits fall back to rlimits" hx --json -- true
  tap_is "$(printf '%s\n' "$tap_stderr" | grep -c .)" "1" "with one line on stderr"
  tap_like "$tap_stderr" '^hutch: warning: limits: no cgroup here, rlimits per process instead; not limited: [^;]+; see `hutch doctor`$' \
    "a warning naming what is not limited and where the cause and the fix are"
  tap_is "$(json_get "$tap_stdout" 'j["limits"]["mode"]')" "rlimits" "--json: mode rlimits"
  tap_is "$(json_get "$tap_stdout" 'j["limits"]["degraded"]')" "True" "--json: degraded"
  tap_like "$(json_get "$tap_stdout" 'j["limits"]["reason"]')" "^cgroups: " "--json: and why"
  tap_ok "the warning is one short line" test "$(printf '%s' "$tap_stderr" | wc -c)" -le 160
  printf '[sandbox]\nseccomp = %s\n[limits]\nmemory = 1G\nfallback_quiet = yes\n' \
    "$(dirname "$HUTCH_POLICY")/seccomp.json" >"$tmp/quiet.policy"
  tap_ok "a policy the user writes may silence it" hx --policy "$tmp/quiet.policy" --json -- true
  tap_is "$tap_stderr" "" "with fallback_quiet = yes, nothing on stderr"
  tap_is "$(json_get "$tap_stdout" 'j["limits"]["degraded"]')" "True" "yet --json still says degraded"
  tap_unlike "$(grep -v '^ *#' "$HUTCH_POLICY")" "fallback_quiet" "the shipped policy does not silence it"
  tap_ok "hutch doctor names the cause and the fix" "$HUTCH_BIN" doctor
  tap_like "$tap_stdout$tap_stderr" "cgroup" "doctor speaks of cgroups"
  tap_ok "the rlimits are set" hx -- sh -c 'ulimit -v; ulimit -u'
  tap_is "$tap_stdout" $'2097152\n1024' "RLIMIT_AS 2 GiB, RLIMIT_NPROC 1024"

  # ---- a policy that will not degrade ----
  for rule in "required = yes" "fallback = refuse"; do
    printf '[sandbox]\nseccomp = %s\n[limits]\nmemory = 1G\n%s\n' \
      "$(dirname "$HUTCH_POLICY")/seccomp.json" "$rule" >"$tmp/strict.policy"
    tap_status 125 "a policy with $rule refuses" hx --policy "$tmp/strict.policy" -- true
    tap_like "$tap_stderr" "\\[limits\\] memory \\(${rule//=/= }\\)|\\[limits\\] memory \\($rule\\)" "naming the policy's key"
  done

  # ---- ps and the state say so ----
  id=$(timeout 20 "$HUTCH_BIN" create --rootfs "$img" 2>"$tmp/create.err")
  tap_check $? "create with the default limits"
  tap_like "$(cat "$tmp/create.err")" "limits: no cgroup here" "warns once"
  tap_ok "ps --json" "$HUTCH_BIN" ps --json
  tap_is "$(json_get "$tap_stdout" '[s["limits"]["degraded"] for s in j if s["id"] == "'"$id"'"][0]')" "True" \
    "ps --json: degraded"
  tap_ok "ps" "$HUTCH_BIN" ps
  tap_like "$tap_stdout" "$id .* rlimits \\(degraded\\)" "ps: rlimits (degraded)"
  tap_ok "state.json records it" grep -q '"degraded":true' "$HUTCH_STATE_DIR/$id/state.json"
  tap_ok "the rlimits hold in exec --in" "$HUTCH_BIN" exec --in "$id" -- sh -c 'ulimit -u'
  tap_is "$tap_stdout" "1024" "RLIMIT_NPROC of the sandbox"
  tap_ok "rm" "$HUTCH_BIN" rm "$id"
else
  tap_skip "refusal of explicit limits" "this host has usable cgroup v2 (see the VM suite)"
fi

# ---- --no-cgroups: rlimits asked for ----
tap_ok "--no-cgroups" hx --no-cgroups --json -- true
tap_is "$tap_stderr" "" "prints no warning"
tap_is "$(json_get "$tap_stdout" 'j["limits"]["mode"]')" "rlimits" "--json: mode rlimits"
tap_is "$(json_get "$tap_stdout" 'j["limits"]["degraded"]')" "True" "--json: degraded"
tap_like "$(json_get "$tap_stdout" 'j["limits"]["reason"]')" "^--no-cgroups" "--json: because of --no-cgroups"

tap_ok "--no-cgroups with explicit limits" hx --no-cgroups --memory 64M --pids 20 --cpus 1 --timeout 30 \
  -- sh -c 'ulimit -v; ulimit -u; ulimit -t'
tap_is "$tap_stdout" $'65536\n20\n30' "RLIMIT_AS 64 MiB, RLIMIT_NPROC 20, RLIMIT_CPU cpus x timeout"

# RLIMIT_AS stops a big allocation (dd allocates its block), and only then.
tap_fails "a 200 MB allocation under --no-cgroups --memory 64M fails" \
  hx --no-cgroups --memory 64M -- dd if=/dev/zero of=/dev/null bs=200M count=1
tap_like "$tap_stderr" "out of memory|Cannot allocate" "with an allocation error"
tap_ok "the same allocation without that limit works" hx --no-cgroups -- dd if=/dev/zero of=/dev/null bs=200M count=1

# RLIMIT_NPROC stops a fork loop.  Counted with shell builtins only: once the
# limit is reached, nothing more can be forked, ps included.
# The loop's shell dies when fork fails; the outer one counts what is left.
forkloop='sh -c '"'"'i=0; while [ $i -lt 60 ]; do sleep 30 & i=$((i+1)); done'"'"' 2>/dev/null; set -- /proc/[0-9]*; echo $#'
if [ "$HUTCH_TEST_MODE" = root ]; then
  tap_ok "as root, RLIMIT_NPROC is set" hx --no-cgroups --pids 20 --json -- sh -c 'ulimit -u >&2'
  tap_like "$(json_get "$tap_stdout" 'j["limits"]["reason"]')" "pids for uid 0" \
    "and the note says it cannot bind the host's root"
else
  tap_ok "a fork loop under --no-cgroups --pids 20" hx --no-cgroups --pids 20 -- sh -c "$forkloop"
  n=${tap_stdout##*$'\n'}
  tap_ok "stops at 20 processes (saw $n)" test "$n" -le 20 -a "$n" -ge 2
fi

# ---- options ----
tap_status 2 "--memory wants a size" hx --memory lots -- true
tap_status 2 "--cpus 0 is refused" hx --cpus 0 -- true
tap_status 2 "--pids -1 is refused" hx --pids -1 -- true
tap_status 2 "--io-weight 20000 is refused" hx --io-weight 20000 -- true
tap_status 2 "limits belong to the creation, not to exec --in" "$HUTCH_BIN" exec --in abc --memory 1G -- true

tap_done
