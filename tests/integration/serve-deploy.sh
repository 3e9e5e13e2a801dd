#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# hutch serve's deployments (contrib/): the systemd unit as built (checked
# by systemd-analyze, its hardening scored; its user by systemd-sysusers),
# its restrictions applied by hand (no new privileges, no capability) to a
# server that must still answer, and why its user has no subordinate id
# range; contrib/slurm/serve.sbatch submitted to a real single-node Slurm
# (tests/lib/slurm.sh), /run_code called on the URL it prints, the job
# cancelled; contrib/kubernetes/serve.yaml's Deployment and Service checked
# field by field (no cluster here), and its container's arguments run.
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/../lib/mcp.sh" # no_sandboxes

img=$(hutch_test_rootfs debian) || tap_skip_all "the Debian test rootfs is unavailable (tests/setup-host.sh)"
tmp=$(hutch_test_tmpdir)
chmod 755 "$tmp"
mode=${HUTCH_TEST_MODE:-root}
srv=
trap '[ -n "$srv" ] && kill -9 "$srv" 2>/dev/null; type stop_cluster >/dev/null 2>&1 && stop_cluster; rm -rf "$tmp"' EXIT
client() { /usr/bin/python3 "$HUTCH_SRCDIR/tests/lib/serve-client.py" "$@"; }
stdout_of() { # the run_result.stdout of a "STATUS JSON" line
  /usr/bin/python3 -c 'import json, sys; print(json.loads(sys.argv[1].split(" ", 1)[1])["run_result"]["stdout"], end="")' "$1" 2>/dev/null
}
# wait_url FILE: the "url" of hutch serve --json's line in FILE, once there.
wait_url() {
  local u
  for _ in $(seq 1200); do
    u=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["url"])' "$1" 2>/dev/null) &&
      echo "$u" && return 0
    kill -0 "$srv" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# ---- systemd ----
# As built; where the run's copy of the build tree lacks it (the rootless
# half), made from the template as make does.
unit=$HUTCH_BUILDDIR/hutch-serve.service
if [ ! -f "$unit" ]; then
  unit=$tmp/built.service
  sed 's|@BINDIR@|/usr/local/bin|g' "$HUTCH_SRCDIR/contrib/systemd/hutch-serve.service.in" >"$unit"
fi
if ! command -v systemd-analyze >/dev/null; then
  tap_skip "the systemd unit" "systemd-analyze is not installed"
else
  tap_like "$(grep '^ExecStart=' "$unit")" '^ExecStart=/.*/bin/hutch serve ' "the unit is built with the installed hutch's path"
  sed "s|^ExecStart=[^ ]*/hutch |ExecStart=$HUTCH_BIN |" "$unit" >"$tmp/hutch-serve.service"
  out=$(systemd-analyze verify --man=no "$tmp/hutch-serve.service" 2>&1)
  tap_check $? "systemd-analyze verify takes the unit"
  tap_is "$out" "" "without a warning"
  sec=$(systemd-analyze security --offline=true "$tmp/hutch-serve.service" 2>&1)
  level=$(sed -n 's/.*Overall exposure level for hutch-serve.service: \([0-9.]*\).*/\1/p' <<<"$sec")
  tap_ok "systemd-analyze security scores its exposure $level, below 5 (of 10)" \
    /usr/bin/python3 -c "import sys; sys.exit(not 0 < float('${level:-99}') < 5)"
  for s in NoNewPrivileges= 'CapabilityBoundingSet=~CAP_SYS_ADMIN' ProtectSystem= ProtectHome= PrivateTmp= \
    RestrictSUIDSGID= 'User=/DynamicUser='; do
    tap_like "$(grep -F -- "$s" <<<"$sec")" '✓' "hardened: $s"
  done
  if command -v systemd-sysusers >/dev/null; then
    mkdir -p "$tmp/root/etc"
    out=$(systemd-sysusers --dry-run --root="$tmp/root" "$HUTCH_SRCDIR/contrib/systemd/hutch-serve.sysusers" 2>&1)
    tap_like "$out" "Creating user 'hutch-serve'" "systemd-sysusers makes its user from hutch-serve.sysusers"
  else
    tap_skip "the unit's user" "systemd-sysusers is not installed"
  fi
fi

# The unit's restrictions by hand (setpriv): no new privileges, no
# capability, as a user without a subordinate id range (as root:
# hutchnosub, with a store of its own); a user with a range needs the setuid
# newuidmap, which no new privileges forbids: why the unit's user has none.
nnp=(setpriv --no-new-privs --inh-caps=-all)
[ "$mode" = root ] && nnp+=(--bounding-set=-all) # dropping it needs CAP_SETPCAP
if ! command -v setpriv >/dev/null; then
  tap_skip "the unit's restrictions" "setpriv is not installed"
elif [ "$mode" = root ]; then
  if hutch_nosub_user "the unit's restrictions, as a user without a range"; then
    u=$tmp/nosub
    # The Debian image (bash, python3), in hutch_nosub_prepare's busybox.tar.
    hutch_nosub_prepare "$u" "$nosub" "$(hutch_rootfs_tar debian)"
    # A command, not a function: a server started in the background is then
    # $! itself, which SIGTERM reaches.
    as_nosub=("${nnp[@]}" --reuid="$nosub" --regid="$nosub" --init-groups env -i PATH=/usr/bin:/bin HOME="$u"
      HUTCH_STATE_DIR="$u/state" HUTCH_STORE="$u/store" HUTCH_POLICY="$u/policy/default.policy")
    tap_ok "$nosub imports an image into its store" "${as_nosub[@]}" "$u/hutch" rootfs import "$u/busybox.tar" --name deb
    "${as_nosub[@]}" "$u/hutch" serve --listen 127.0.0.1:0 --image deb --json --warm 0 >"$tmp/nosub.json" 2>"$tmp/nosub.err" &
    srv=$!
    url=$(wait_url "$tmp/nosub.json")
    out=$(client run "$url/run_code" language=bash code='echo $(id -u) $(cat /proc/self/uid_map)')
    tap_is "$(stdout_of "$out")" "0 0 $(id -u "$nosub") 1" \
      "with no new privileges and no capability, as a user without a range, hutch serve runs a request (uid 0 mapped alone)" ||
      tap_diag "$out $(tail -n 5 "$tmp/nosub.err")"
    kill -TERM "$srv"
    wait "$srv"
    tap_check $? "and ends on SIGTERM"
    srv=
  fi
else
  if grep -q "^$(id -un):" /etc/subuid 2>/dev/null; then
    out=$("${nnp[@]}" "$HUTCH_BIN" exec --rootfs "$img" -- true 2>&1)
    tap_ok "with no new privileges, a user with a subordinate id range cannot start a sandbox" test $? -ne 0
    tap_like "$out" 'newuidmap' "the setuid newuidmap being refused: why the unit's user has no range"
  else
    out=$("${nnp[@]}" "$HUTCH_BIN" exec --rootfs "$img" -- cat /proc/self/uid_map 2>&1)
    tap_like "$out" "^ *0 +$(id -u) +1$" "with no new privileges, a user without a range maps uid 0 alone"
  fi
fi

# ---- Kubernetes: the manifests, field by field, then the container's arguments run ----
k8s=$HUTCH_SRCDIR/contrib/kubernetes/serve.yaml
if ! /usr/bin/python3 -c 'import yaml' 2>/dev/null; then
  tap_skip "the Kubernetes manifests" "python3-yaml is not installed"
else
  checks=$(/usr/bin/python3 - "$k8s" <<'PY'
import sys, yaml
docs = list(yaml.safe_load_all(open(sys.argv[1])))
kinds = {d["kind"]: d for d in docs}
def check(ok, what):
    print(("ok " if ok else "FAIL ") + what)
check(sorted(kinds) == ["Deployment", "Service"], "a Deployment and a Service")
dep, svc = kinds["Deployment"], kinds["Service"]
check(dep["apiVersion"] == "apps/v1" and svc["apiVersion"] == "v1", "their apiVersions")
spec = dep["spec"]
labels = spec["template"]["metadata"]["labels"]
check(all(labels.get(k) == v for k, v in spec["selector"]["matchLabels"].items()), "the selector matches the pods' labels")
check(all(labels.get(k) == v for k, v in svc["spec"]["selector"].items()), "the Service selects the same pods")
pod = spec["template"]["spec"]
(c,) = pod["containers"]
args = c["command"] + c["args"]
check(args[:2] == ["hutch", "serve"], "the container runs hutch serve")
listen = args[args.index("--listen") + 1]
port = int(listen.rsplit(":", 1)[1])
check(listen.startswith("0.0.0.0:"), "listening on the pod's addresses")
tf = args[args.index("--token-file") + 1]
mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
vols = {v["name"]: v for v in pod["volumes"]}
tdir, tkey = tf.rsplit("/", 1)
check(tdir in mounts and "secret" in vols[mounts[tdir]["name"]], "--token-file is a file of a mounted Secret")
check(vols[mounts[tdir]["name"]]["secret"]["defaultMode"] & 0o040 and pod["securityContext"].get("fsGroup") == pod["securityContext"]["runAsUser"],
      "which the pod's user can read (fsGroup, mode g+r)")
ports = {p["name"]: p["containerPort"] for p in c["ports"]}
check(ports.get("http") == port, "the container port is the one listened on")
(sp,) = svc["spec"]["ports"]
check(sp["targetPort"] in ("http", port), "the Service's targetPort names it")
check(c["readinessProbe"]["httpGet"]["path"] == "/v1/ping" and c["livenessProbe"]["httpGet"]["path"] == "/health",
      "the probes are the paths that need no token")
sc, psc = c["securityContext"], pod["securityContext"]
check(pod.get("hostUsers") is False and sc.get("procMount") == "Unmasked", "a user namespace and an unmasked /proc for the sandboxes")
check(sc.get("allowPrivilegeEscalation") is False and sc["capabilities"]["drop"] == ["ALL"] and psc.get("runAsNonRoot") is True,
      "no privilege escalation, no capability, not root")
check(psc["seccompProfile"]["type"] in ("Unconfined", "Localhost"), "a seccomp profile that lets hutch make namespaces")
check(pod["terminationGracePeriodSeconds"] >= 300, "time for the running requests to finish on SIGTERM")
check("HUTCH_STATE_DIR" in {e["name"] for e in c["env"]}, "a state directory on a writable volume")
print("ARGS " + "\x1f".join(c["args"]))
PY
)
  while IFS= read -r line; do
    case $line in
    "ok "*) tap_ok "serve.yaml: ${line#ok }" true ;;
    "FAIL "*) tap_ok "serve.yaml: ${line#FAIL }" false ;;
    "ARGS "*) IFS=$'\x1f' read -r -a kargs <<<"${line#ARGS }" ;;
    *) tap_diag "$line" ;;
    esac
  done <<<"$checks"
  # The container's arguments, here: its address, token file, image and
  # audit log swapped for the test's.
  head -c 32 /dev/urandom | base64 >"$tmp/ktoken"
  run=()
  for ((i = 0; i < ${#kargs[@]}; i++)); do
    a=${kargs[i]}
    case $a in
    --listen | --token-file | --image | --audit-log) run+=("$a") && i=$((i + 1)) ;;
    *) run+=("$a") && continue ;;
    esac
    case $a in
    --listen) run+=(127.0.0.1:0) ;;
    --token-file) run+=("$tmp/ktoken") ;;
    --image) run+=("$img") ;;
    --audit-log) run+=("$tmp/kaudit") ;;
    esac
  done
  "$HUTCH_BIN" serve "${run[@]}" --json >"$tmp/k.json" 2>"$tmp/k.err" &
  srv=$!
  url=$(wait_url "$tmp/k.json")
  tap_like "$url" '^http://127' "the container's arguments start hutch serve (${run[*]})" || tap_diag <"$tmp/k.err"
  tap_is "$(curl -s "$url/v1/ping")$(curl -s "$url/health")" '"pong"{"status":"ok"}' "its probes answer without the token"
  out=$(client run "$url/run_code" code='print(6 * 7)' token="$(cat "$tmp/ktoken")")
  tap_is "$(stdout_of "$out")" "42" "and /run_code with the Secret's token"
  kill -TERM "$srv"
  wait "$srv"
  srv=
fi

# ---- Slurm: serve.sbatch on a real single-node cluster ----
. "$HUTCH_SRCDIR/tests/lib/slurm.sh"
for b in munged slurmctld slurmd sbatch squeue scontrol sinfo scancel; do
  command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] || {
    tap_skip "serve.sbatch" "$b is not installed (Debian's slurm-wlm and munge: tests/setup-host.sh)"
    tap_ok "no sandbox is left" no_sandboxes
    tap_done
  }
done
PATH=$(dirname "$HUTCH_BIN"):$PATH:/usr/sbin
export PATH
slurm_start "$tmp" # sets node, user
tap_is "$(sinfo -h -o '%P %D %t')" "hutch* 1 idle" "a single-node Slurm runs as $user"
mkdir -p "$tmp/job"
chmod 700 "$tmp/job"
tap_status 0 "sbatch contrib/slurm/serve.sbatch" sbatch --parsable --cpus-per-task=2 --chdir="$tmp/job" \
  --output="$tmp/job/serve-%j.log" "$HUTCH_SRCDIR/contrib/slurm/serve.sbatch" --image "$img" --warm 1
job=${tap_stdout%%;*}
have_url() { [ -s "$tmp/job/hutch-serve-$job.url" ]; }
tap_ok "the job writes the URL" hutch_wait_until 120 have_url || {
  tap_diag "$(cat "$tmp/job/serve-$job.log" 2>/dev/null)"
  scontrol show job "$job" | tap_diag
}
jurl=$(cat "$tmp/job/hutch-serve-$job.url" 2>/dev/null)
tap_like "$jurl" "^http://$(hostname -f):[0-9]+/run_code$" "http://NODE:PORT/run_code ($jurl)"
tap_like "$(cat "$tmp/job/serve-$job.log")" "SANDBOX_FUSION_URL=${jurl:-no URL file}" "and prints it in the job's log"
tap_is "$(stat -c %a "$tmp/job/hutch-serve-$job.token")" 600 "its token file is the user's alone"
out=$(client run "$jurl" code='import os; print(os.getenv("SLURM_JOB_ID", "none"), 6 * 7)')
tap_like "$out" '^401 ' "/run_code without the token is refused"
out=$(client run "$jurl" code='import os; print(os.getenv("SLURM_JOB_ID", "none"), 6 * 7)' \
  basic="$(cat "$tmp/job/hutch-serve-$job.token")")
tap_is "$(stdout_of "$out")" "none 42" \
  "/run_code on the printed URL runs, with the token as ~/.netrc gives verl's client (and none of the job's environment)"
tap_status 0 "scancel ends the job" scancel "$job"
gone() { [ -z "$(squeue -h -j "$job" 2>/dev/null)" ]; }
tap_ok "the job ends" hutch_wait_until 120 gone
files() { [ ! -e "$tmp/job/hutch-serve-$job.url" ] && [ ! -e "$tmp/job/hutch-serve-$job.token" ]; }
tap_ok "its URL and token files are removed" hutch_wait_until 20 files
tap_like "$(cat "$tmp/job/serve-$job.log")" 'stopping: the running requests finish' "hutch serve stopped in order"
stop_cluster
tap_ok "no sandbox is left" no_sandboxes
tap_done
