#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
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
tap_like "$tap_stdout" "memory without a cgroup: .*watchdog.*Margin: .* x 20 ms" \
  "and what bounds memory without a cgroup, with its margin"
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
  tap_like "$tap_stderr" '^hutch: warning: limits: no cgroup here: rlimits per process, memory watched by init; not limited: [^;]+; see `hutch doctor`$' \
    "a warning naming what is not limited and where the cause and the fix are"
  tap_is "$(json_get "$tap_stdout" 'j["limits"]["mode"]')" "rlimits" "--json: mode rlimits"
  tap_is "$(json_get "$tap_stdout" 'j["limits"]["degraded"]')" "True" "--json: degraded"
  tap_like "$(json_get "$tap_stdout" 'j["limits"]["reason"]')" "^cgroups: " "--json: and why"
  warning=${tap_stderr#hutch: warning: }
  tap_is "$(json_get "$tap_stdout" 'j["limits"]["warning"]')" "$warning" "--json: the warning, as a field"
  tap_ok "the warning is one short line" test "$(printf '%s' "$tap_stderr" | wc -c)" -le 160

  # The watchdog's start asks whether the kernel lists TCP and UDP sockets
  # without walking the host's connection table: a dump of no state, where
  # one of every state cost 1.3-3.5 ms a family at every start.  (strace
  # -xx prints the request's bytes: family, protocol, ext, pad, states.)
  if command -v strace >/dev/null; then
    strace -f -qq -xx -s 16 -e trace=sendto -e signal=none -o "$tmp/diag.trace" \
      "$HUTCH_BIN" exec --rootfs "$img" -- true 2>/dev/null
    diag_states() { # the states word of each TCP/UDP sock_diag request traced
      grep -oE 'nlmsg_type=0x14[^"]*"(\\x[0-9a-f]{2}){8}' "$tmp/diag.trace" | sed 's/.*"//' |
        grep -E '^\\x(02|0a)\\x(06|11)' | cut -c17-
    }
    tap_is "$(diag_states | grep -c '^\\x00\\x00\\x00\\x00$')" "4" \
      "the start asks whether TCP and UDP sockets, IPv4 and IPv6, can be listed"
    tap_is "$(diag_states | grep -vc '^\\x00\\x00\\x00\\x00$')" "0" \
      "and dumps no TCP or UDP socket of any state (no walk of the host's table)"
  fi

  # ---- said once a day, not on every start ----
  stamp=$HUTCH_STATE_DIR/.warned-no-cgroup
  tap_ok "a stamp in the state directory marks it said" test -f "$stamp" -a ! -L "$stamp"
  tap_is "$(stat -c '%a %u' "$stamp")" "600 $(id -u)" "the stamp is the user's, private"
  tap_ok "the next start" hx --json -- true
  tap_is "$tap_stderr" "" "does not say it again the same day"
  tap_is "$(json_get "$tap_stdout" 'j["limits"]["warning"]')" "$warning" "while --json carries it every time"
  tap_ok "hutch doctor" "$HUTCH_BIN" doctor --json
  tap_is "$(json_get "$tap_stdout" '[c["status"] for c in j["checks"] if c["id"] == "cgroup"]')" "['warn']" \
    "hutch doctor reports it every time"
  touch -d '25 hours ago' "$stamp"
  tap_ok "a start a day later" hx -- true
  tap_is "$tap_stderr" "hutch: warning: $warning" "says it again"
  tap_ok "and the one after it" hx -- true
  tap_is "$tap_stderr" "" "does not"
  touch -d 'tomorrow' "$stamp"
  tap_ok "a stamp from the future (a clock set back)" hx -- true
  tap_is "$tap_stderr" "hutch: warning: $warning" "does not silence it"
  # A stamp replaced by a symlink, a FIFO, a file of others' is never
  # followed nor written, and the warning is said.
  rm -f "$stamp"
  printf 'keep\n' >"$tmp/target"
  touch -d '2 days ago' "$tmp/target"
  before=$(stat -c %Y "$tmp/target")
  ln -s "$tmp/target" "$stamp"
  tap_ok "a stamp that is a symlink" hx -- true
  tap_is "$tap_stderr" "hutch: warning: $warning" "is not taken for one: the warning is said"
  tap_is "$(stat -c %Y "$tmp/target"):$(cat "$tmp/target")" "$before:keep" "and its target is not touched"
  tap_ok "the symlink is left as it was" test -L "$stamp"
  rm -f "$stamp"
  mkfifo "$stamp"
  tap_ok "a stamp that is a FIFO does not block a start" timeout 30 "$HUTCH_BIN" exec --rootfs "$img" -- true
  tap_like "$tap_stderr" "no cgroup here" "and the warning is said"
  rm -f "$stamp"
  touch "$stamp"
  chmod 0666 "$stamp"
  tap_ok "a stamp others may write" hx -- true
  tap_like "$tap_stderr" "no cgroup here" "is not trusted"
  rm -f "$stamp"
  printf '[sandbox]\nseccomp = %s\n[limits]\nmemory = 1G\nfallback_quiet = yes\n' \
    "$(dirname "$HUTCH_POLICY")/seccomp.json" >"$tmp/quiet.policy"
  tap_ok "a policy the user writes may silence it" hx --policy "$tmp/quiet.policy" --json -- true
  tap_is "$tap_stderr" "" "with fallback_quiet = yes, nothing on stderr"
  tap_is "$(json_get "$tap_stdout" 'j["limits"]["degraded"]')" "True" "yet --json still says degraded"
  tap_unlike "$(grep -v '^ *#' "$HUTCH_POLICY")" "fallback_quiet" "the shipped policy does not silence it"
  tap_ok "hutch doctor names the cause and the fix" "$HUTCH_BIN" doctor
  tap_like "$tap_stdout$tap_stderr" "cgroup" "doctor speaks of cgroups"
  tap_ok "the rlimits are set" hx -- sh -c 'ulimit -d; ulimit -u; ulimit -v'
  tap_is "$tap_stdout" "2097152"$'\n'"1024"$'\n'"$(ulimit -v)" "RLIMIT_DATA 2 GiB, RLIMIT_NPROC 1024, RLIMIT_AS left as it was"

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
  tap_is "$(cat "$tmp/create.err")" "" "does not warn again the same day"
  tap_ok "ps --json" "$HUTCH_BIN" ps --json
  tap_is "$(json_get "$tap_stdout" '[s["limits"]["degraded"] for s in j if s["id"] == "'"$id"'"][0]')" "True" \
    "ps --json: degraded"
  tap_like "$(json_get "$tap_stdout" '[s["limits"]["warning"] for s in j if s["id"] == "'"$id"'"][0]')" \
    "^limits: no cgroup here" "ps --json: and the warning"
  tap_ok "ps" "$HUTCH_BIN" ps
  tap_like "$tap_stdout" "$id .* rlimits \\(degraded\\)" "ps: rlimits (degraded)"
  tap_ok "state.json records it" grep -q '"degraded":true' "$HUTCH_STATE_DIR/$id/state.json"
  tap_ok "the rlimits hold in exec --in" "$HUTCH_BIN" exec --in "$id" -- sh -c 'ulimit -u'
  tap_is "$tap_stdout" "1024" "RLIMIT_NPROC of the sandbox"
  tap_ok "rm" "$HUTCH_BIN" rm "$id"

  # The policy's memory, degraded to rlimits, is a whole-sandbox bound too.
  sed "s|^seccomp = .*|seccomp = $(dirname "$HUTCH_POLICY")/seccomp.json|; s|^memory = .*|memory = 1G|" \
    "$HUTCH_POLICY" >"$tmp/mem.policy"
  tap_status 137 "the policy's memory = 1G, on rlimits: 4 x 700 MiB killed" hx --policy "$tmp/mem.policy" -- sh -c \
    'for i in 1 2 3 4; do dd if=/dev/zero of=/dev/null bs=700M count=20 2>/dev/null & done; wait'
  tap_like "$tap_stderr" "killed: out of memory at 1 GiB" "reported as out of memory"
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
  -- sh -c 'ulimit -d; ulimit -u; ulimit -t'
tap_is "$tap_stdout" $'65536\n20\n30' "RLIMIT_DATA 64 MiB, RLIMIT_NPROC 20, RLIMIT_CPU cpus x timeout"

# RLIMIT_DATA stops a big allocation (dd allocates its block), and only then.
tap_fails "a 200 MB allocation under --no-cgroups --memory 64M fails" \
  hx --no-cgroups --memory 64M -- dd if=/dev/zero of=/dev/null bs=200M count=1
tap_like "$tap_stderr" "out of memory|Cannot allocate" "with an allocation error"
tap_ok "the same allocation without that limit works" hx --no-cgroups -- dd if=/dev/zero of=/dev/null bs=200M count=1

# A JVM reserves far more address space than it uses (a GiB of class
# space, its heap) and so never started under an RLIMIT_AS of the default
# 2 GiB ("Could not allocate compressed class space").  Under RLIMIT_DATA it
# starts, and a program that writes more than the limit is still stopped.
# The host's JVM, bound read-only into the Debian test image.
java=$(readlink -f "$(command -v java 2>/dev/null)" 2>/dev/null)
if [ -x "$java" ] && command -v javac >/dev/null && deb=$(hutch_test_rootfs debian); then
  jdir=${java%/bin/java}
  mkdir -p "$tmp/java"
  cat >"$tmp/java/Hog.java" <<'EOF'
public class Hog {
  public static void main(String[] a) {
    java.util.ArrayList<byte[]> held = new java.util.ArrayList<>();
    for (int i = 0; i < 40; i++) {
      byte[] b = new byte[100 << 20];
      java.util.Arrays.fill(b, (byte) 1);
      held.add(b);
    }
    System.out.println("held " + held.size() * 100 + " MiB");
  }
}
EOF
  javac -d "$tmp/java" "$tmp/java/Hog.java" 2>/dev/null
  jx() {
    local b=()
    [ ! -d /etc/java-17-openjdk ] || b=(--bind /etc/java-17-openjdk:/etc/java-17-openjdk:ro)
    "$HUTCH_BIN" exec --rootfs "$deb" --no-cgroups --bind "$jdir:$jdir:ro" "${b[@]}" \
      --bind "$tmp/java:/java:ro" --workdir /tmp "$@"
  }
  tap_ok "a JVM starts under --no-cgroups and the default 2 GiB" jx -- "$java" -version
  tap_like "$tap_stderr" "version \"[0-9]" "and gives its version"
  tap_fails "a Java program writing 4 GiB under it is stopped" jx -- "$java" -Xmx7g -cp /java Hog
  tap_unlike "$tap_stdout" "held" "before it held them"
else
  tap_skip "a JVM under --no-cgroups" "no host JVM and javac, or no Debian test image"
  tap_skip "and its version" "no host JVM and javac, or no Debian test image"
  tap_skip "a Java program over the limit" "no host JVM and javac, or no Debian test image"
  tap_skip "before it held them" "no host JVM and javac, or no Debian test image"
fi

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

# ---- the whole sandbox's memory without a cgroup: the watchdog ----
# RLIMIT_DATA is per process: four processes of 700 MiB each fit under a
# 1 GiB RLIMIT_DATA one by one.  init's watchdog sums them and kills the lot;
# the end is reported as out of memory.  A host-side sampler (every ~1 ms)
# checks that they never held more than the limit and the stated margin.
cat >"$tmp/peak.py" <<'EOF'
# peak.py CMD...: run CMD; print the peak of RssAnon+RssShmem summed over
# all its descendants, sampled every millisecond (MiB), then CMD's stderr.
import os, subprocess, sys, time
p = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
def kids(pid):
    out = []
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            with open("/proc/%d/task/%s/children" % (pid, t)) as f:
                out += [int(x) for x in f.read().split()]
    except (OSError, ValueError):
        pass
    return out
peak = 0
while p.poll() is None:
    total, stack = 0, kids(p.pid)
    while stack:
        q = stack.pop()
        try:
            with open("/proc/%d/status" % q) as f:
                total += sum(int(l.split()[1]) for l in f if l.startswith(("RssAnon:", "RssShmem:"))) * 1024
        except (OSError, ValueError, IndexError):
            pass
        stack += kids(q)
    peak = max(peak, total)
    time.sleep(0.001)
print(peak >> 20)
sys.stdout.write(p.stderr.read().decode())
sys.exit(p.returncode)
EOF
alloc4='for i in 1 2 3 4; do dd if=/dev/zero of=/dev/null bs=700M count=20 2>/dev/null & done; wait'
tap_status 137 "4 x 700 MiB under --no-cgroups --memory 1G: killed" \
  python3 "$tmp/peak.py" "$HUTCH_BIN" exec --rootfs "$img" --no-cgroups --memory 1G -- sh -c "$alloc4"
tap_like "$tap_stdout" "killed: out of memory at 1 GiB" "reported as out of memory at the limit"
peak=${tap_stdout%%$'\n'*}
# The stated margin (hutch-security(7)): what the sandbox allocates in one
# look's interval, at most 20 ms; 2 CPUs at 2.7 GiB/s each is 110 MiB.
tap_check "$([ "$peak" -le $((1024 + 128)) ] && echo 0 || echo 1)" \
  "the host never saw more than 1 GiB + 128 MiB (peak $peak MiB)"
tap_ok "2 x 300 MiB under the same limit runs to its end" hx --no-cgroups --memory 1G -- sh -c \
  'for i in 1 2; do dd if=/dev/zero of=/dev/null bs=300M count=5 2>/dev/null & done; wait; echo done'
tap_is "$tap_stdout" "done" "nothing killed below the limit"
tap_status 137 "--json of a watchdog kill" hx --no-cgroups --memory 1G --json -- sh -c "$alloc4"
tap_is "$(json_get "$tap_stdout" 'j["oom_killed"]')" "True" "--json: oom_killed"
tap_is "$(json_get "$tap_stdout" 'j["exit_code"]')" "137" "--json: exit code 137"

# Memory no process maps: a memfd filled with write(2), System V segments
# filled and detached.  Counted from the processes' open memfds and the
# IPC namespace's unattached segments (python3 of the Debian test image).
if deb=$(hutch_test_rootfs debian 2>/dev/null); then
  memfd='import os, time
fd = os.memfd_create("m")
for i in range(1536): os.write(fd, bytes(1 << 20))
print("survived", flush=True); time.sleep(2)'
  sysv='import ctypes, time
libc = ctypes.CDLL(None)
libc.shmat.restype, libc.shmat.argtypes = ctypes.c_void_p, [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
for i in range(6):
    p = libc.shmat(libc.shmget(0, 256 << 20, 0o1000 | 0o600), None, 0)
    ctypes.memset(p, 1, 256 << 20)
    libc.shmdt(ctypes.c_void_p(p))
print("survived", flush=True); time.sleep(2)'
  tap_status 137 "1.5 GiB in a memfd, unmapped, against --memory 1G: killed" \
    "$HUTCH_BIN" exec --rootfs "$deb" --no-cgroups --memory 1G -- python3 -c "$memfd"
  tap_like "$tap_stderr" "killed: out of memory at 1 GiB" "the memfd: reported as out of memory"
  tap_status 137 "1.5 GiB of detached System V segments against --memory 1G: killed" \
    "$HUTCH_BIN" exec --rootfs "$deb" --no-cgroups --memory 1G -- python3 -c "$sysv"
  tap_like "$tap_stderr" "killed: out of memory at 1 GiB" "the segments: reported as out of memory"
else
  tap_skip "memfd and System V memory under the watchdog" "the Debian test rootfs is not built"
fi

# Kernel memory no process maps: socket and pipe buffers filled and never
# read (tests/helpers/kernel-pool, which prints its running total, so that
# the last "at" line before the kill is its high-water mark).  A unix socket
# takes up to twice net.core.wmem_max, a pipe 1 MiB: without counting them,
# a sandbox under --memory 256M held gigabytes of the host's memory.  The
# filling pauses after every 32 MiB, so that what is checked is the
# watchdog's count, not how soon a busy machine lets it look (the margin of
# the 4 x 700 MiB case above).
pool=$HUTCH_BUILDDIR/tests/helpers/kernel-pool
for how in "unix-buffers --procs 4" "unix-orphans --procs 4" "unix-embryos --procs 4" "tcp-buffers --procs 4" \
  "pipe-buffers --procs 100" "sysv-messages --procs 1" "sysv-semaphores --procs 1"; do
  # shellcheck disable=SC2086 # the pool and its options
  tap_status 137 "${how%% *} under --no-cgroups --memory 256M: killed" "$HUTCH_BIN" exec --rootfs "$img" \
    --no-cgroups --memory 256M --bind "$pool:/usr/bin/kernel-pool:ro" -- kernel-pool $how --max 768 --pace 32 --hold 3 </dev/null
  tap_like "$tap_stderr" "killed: out of memory at 256 MiB" "${how%% *}: reported as out of memory"
  peak=$(printf '%s\n' "$tap_stdout" | sed -n 's/^at //p' | tail -1)
  # The limit, a step of the pace, and what each process queues before it
  # pauses.
  tap_check "$([ "${peak:-9999}" -le $((256 + 64)) ] && echo 0 || echo 1)" \
    "${how%% *}: the sandbox held 256 MiB + 64 MiB at most (peak ${peak:-unknown} MiB)"
done

# Epoll watches (200 bytes each in the kernel, counted from each epoll
# instance's fdinfo): 64 MiB of them take 300000 epoll_ctl calls.  The
# kernel writes a line of fdinfo a watch, about a microsecond each: a look
# takes a third of a second here, so the pauses are longer and the margin
# is two of its steps.
tap_status 137 "epoll watches under --no-cgroups --memory 64M: killed" "$HUTCH_BIN" exec --rootfs "$img" \
  --no-cgroups --memory 64M --bind "$pool:/usr/bin/kernel-pool:ro" -- \
  kernel-pool epoll-watches --procs 16 --max 512 --pace 16 --pause 400 --hold 3 </dev/null
tap_like "$tap_stderr" "killed: out of memory at 64 MiB" "epoll watches: reported as out of memory"
peak=$(printf '%s\n' "$tap_stdout" | sed -n 's/^at //p' | tail -1)
tap_check "$([ "${peak:-9999}" -le $((64 + 32)) ] && echo 0 || echo 1)" \
  "epoll watches: the sandbox held 64 MiB + 32 MiB at most (peak ${peak:-unknown} MiB)"

# A long-lived sandbox: the processes go, the sandbox stays.
id=$(timeout 20 "$HUTCH_BIN" create --rootfs "$img" --no-cgroups --memory 1G 2>/dev/null)
tap_check $? "create --no-cgroups --memory 1G"
tap_status 137 "exec --in: 4 x 700 MiB killed" "$HUTCH_BIN" exec --in "$id" -- sh -c "$alloc4"
tap_like "$tap_stderr" "killed: out of memory at 1 GiB" "exec --in: reported as out of memory"
tap_ok "the sandbox still runs commands" "$HUTCH_BIN" exec --in "$id" -- true
# Idle, init does not poll: its CPU time stays put over a second.  Idle
# from when its last process is gone: the ones killed above can take a
# moment to give back 700 MiB each, and init looks at them until then.
initpid=$(json_get "$("$HUTCH_BIN" ps --json)" '[s["pid"] for s in j if s["id"] == "'"$id"'"][0]')
cpu() { awk '{ print $14 + $15 }' "/proc/$initpid/stat"; }
alone() { [ -z "$(cat /proc/"$initpid"/task/*/children)" ]; }
hutch_wait_until 10 alone || tap_diag "init still has processes: $(cat /proc/"$initpid"/task/*/children)"
sleep 0.1 # its look that found none
before=$(cpu)
sleep 1
tap_is "$(cpu)" "$before" "an idle sandbox's init uses no CPU time"
tap_ok "rm" "$HUTCH_BIN" rm "$id"

# ---- options ----
tap_status 2 "--memory wants a size" hx --memory lots -- true
tap_status 2 "--cpus 0 is refused" hx --cpus 0 -- true
tap_status 2 "--pids -1 is refused" hx --pids -1 -- true
tap_status 2 "--io-weight 20000 is refused" hx --io-weight 20000 -- true
tap_status 2 "limits belong to the creation, not to exec --in" "$HUTCH_BIN" exec --in abc --memory 1G -- true

tap_done
