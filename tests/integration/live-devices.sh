#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# --device: a synthetic CDI spec of a fake vendor (example.com/dev) naming
# host character devices under other names, a library of its own and a
# hook; a plain /dev/NODE; the policy's [devices] allow; and what must be
# refused: a block device, a symlink, a file that is no device, a node
# whose rdev differs from the spec, a mount of hutch's state directory,
# YAML, an unknown name, a spec others may write.  The hook must never run.
. "$(dirname "$0")/../lib/tap.sh"

img=$(hutch_test_rootfs busybox) || tap_skip_all "busybox test rootfs unavailable"
tmp=$(hutch_test_tmpdir)
chmod 755 "$tmp"
state=$HUTCH_STATE_DIR
[ -n "$state" ] || tap_skip_all "HUTCH_STATE_DIR is not set"
H() { timeout 30 "$HUTCH_BIN" "$@"; }
seccomp="$(dirname "$HUTCH_POLICY")/seccomp.json"
policy() { # NAME [devices] allow lines...
  local f="$tmp/$1.policy" line
  shift
  sed "s|^seccomp = .*|seccomp = $seccomp|" "$HUTCH_POLICY" >"$f"
  printf '[devices]\n' >>"$f"
  for line in "$@"; do printf 'allow = %s\n' "$line" >>"$f"; done
}
policy yes yes
policy list example.com/dev /dev/full

# ---- the fake vendor's spec: nodes, a library, env and a hook ----
mkdir -p "$tmp/cdi" "$tmp/lib"
cat >"$tmp/hook.sh" <<HOOK
#!/bin/sh
touch "$tmp/hook-ran"
HOOK
chmod 755 "$tmp/hook.sh"
echo "not a library, but a file of the vendor's" >"$tmp/lib/libexample-cdi.so.1"
cat >"$tmp/cdi/example.json" <<SPEC
{"cdiVersion": "0.6.0", "kind": "example.com/dev",
 "containerEdits": {"env": ["EXAMPLE_SHARED=1"],
   "hooks": [{"hookName": "createContainer", "path": "$tmp/hook.sh", "args": ["hook.sh"]}]},
 "devices": [
  {"name": "one", "containerEdits": {
     "deviceNodes": [{"path": "/dev/fake0", "hostPath": "/dev/zero", "type": "c", "major": 1, "minor": 5}],
     "env": ["EXAMPLE_DEVICE=one"],
     "mounts": [{"hostPath": "$tmp/lib/libexample-cdi.so.1",
                 "containerPath": "/usr/lib/example-cdi/libexample-cdi.so.1", "options": ["ro", "bind"]}]}},
  {"name": "two", "containerEdits": {"deviceNodes": [{"path": "/dev/sub/fake1", "hostPath": "/dev/full"}]}}
 ]}
SPEC
chmod 644 "$tmp/cdi/example.json"
export HUTCH_CDI_DIRS="$tmp/cdi"

# ---- the policy decides ----
devices_shown() { python3 -c 'import json, sys; print(json.load(sys.stdin)["devices"]["allow"])'; }
tap_ok "policy show --json of the default" H policy show --json
tap_is "$(devices_shown <<<"$tap_stdout")" "no" "allows no device"
tap_ok "policy show --json of a list" H policy show --json --policy "$tmp/list.policy"
tap_is "$(devices_shown <<<"$tap_stdout")" "['example.com/dev', '/dev/full']" "shows the list"
printf '[devices]\nallow = no\nallow = /dev/full\n' >>"$tmp/bad.policy"
sed "s|^seccomp = .*|seccomp = $seccomp|" "$HUTCH_POLICY" | cat - "$tmp/bad.policy" >"$tmp/bad2.policy"
tap_status 125 "a policy saying no and a device" H exec --rootfs "$img" --policy "$tmp/bad2.policy" -- true
tap_like "$tap_stderr" "bad value for allow" "is refused, naming the key"
tap_status 125 "the default policy allows no device" H exec --rootfs "$img" --device example.com/dev=one -- true
tap_like "$tap_stderr" "does not allow it" "saying so"
tap_like "$tap_stderr" "\\[devices\\] allow" "and naming the setting that would"
tap_status 2 "a device that is neither a CDI name nor /dev/NODE is a usage error" \
  H exec --rootfs "$img" --policy "$tmp/yes.policy" --device zero -- true

# ---- a CDI device, one-shot ----
probe='test -c /dev/fake0 && echo chr; head -c 4 /dev/fake0 | od -An -tx1 | tr -d " "; echo "$EXAMPLE_DEVICE $EXAMPLE_SHARED"
cat /etc/ld.so.conf.d/000-hutch-cdi.conf; echo "$LD_LIBRARY_PATH"; cat /usr/lib/example-cdi/libexample-cdi.so.1
echo x >/usr/lib/example-cdi/libexample-cdi.so.1 2>/dev/null && echo WRITABLE; ls /dev/sub 2>/dev/null; echo end'
tap_ok "exec --device example.com/dev=one" H exec --rootfs "$img" --policy "$tmp/yes.policy" \
  --device example.com/dev=one -- sh -c "$probe"
tap_is "$tap_stdout" "chr
00000000
one 1
/usr/lib/example-cdi
/usr/lib/example-cdi
not a library, but a file of the vendor's
end" "the node reads as /dev/zero, env, ld.so.conf.d, LD_LIBRARY_PATH, the library read-only, device two absent"
tap_like "$tap_stderr" "hook createContainer .*hook.sh not run" "the hook is named as not run"
tap_ok "the hook did not run" test ! -e "$tmp/hook-ran"
tap_ok "--env overrides the spec's env" H exec --rootfs "$img" --policy "$tmp/yes.policy" \
  --device example.com/dev=one --env EXAMPLE_DEVICE=mine -- sh -c 'echo $EXAMPLE_DEVICE'
tap_is "$tap_stdout" "mine" "the caller's value wins"

# ---- the policy's list ----
tap_status 1 "a kind in the list allows its devices (a write fails as /dev/full's)" H exec --rootfs "$img" --policy "$tmp/list.policy" \
  --device example.com/dev=two -- sh -c 'test -c /dev/sub/fake1 && echo x >/dev/sub/fake1'
tap_like "$tap_stderr" "No space left on device" "the node is /dev/full under another name"
tap_ok "a node in the list" H exec --rootfs "$img" --policy "$tmp/list.policy" --device /dev/full -- test -c /dev/full
tap_status 125 "a node not in the list" H exec --rootfs "$img" --policy "$tmp/list.policy" --device /dev/zero -- true
tap_like "$tap_stderr" "does not allow it" "refused by the policy"

# ---- a long-lived sandbox: all of the kind, ps, audit ----
tap_ok "create --device example.com/dev=all" H create --rootfs "$img" --policy "$tmp/yes.policy" \
  --device example.com/dev=all --device /dev/full --name devs
id=$tap_stdout
tap_ok "exec --in sees every device of the kind" H exec --in devs -- sh -c \
  'test -c /dev/fake0 && test -c /dev/sub/fake1 && test -c /dev/full && echo "$EXAMPLE_DEVICE"'
tap_is "$tap_stdout" "one" "both nodes, and the devices' env"
tap_status 2 "exec --in takes no --device" H exec --in devs --device /dev/full -- true
tap_ok "ps --json" H ps --json --filter name=devs
tap_is "$(python3 -c 'import json, sys; print(" ".join(json.load(sys.stdin)[0]["devices"]))' <<<"$tap_stdout")" \
  "example.com/dev=all /dev/full" "lists the devices"
tap_ok "audit" H audit --json devs
tap_is "$(python3 -c 'import json, sys
r = [r for r in json.load(sys.stdin)["records"] if r["type"] == "start"][0]
print(",".join(r["devices"]), "|", ",".join(r["device_nodes"]), "|", ",".join(sorted(r["device_env"])), "|",
      ",".join(h.split()[0] for h in r["device_hooks_skipped"]))' <<<"$tap_stdout")" \
  "example.com/dev=all,/dev/full | /dev/zero -> /dev/fake0,/dev/full -> /dev/sub/fake1,/dev/full -> /dev/full | EXAMPLE_DEVICE,EXAMPLE_SHARED,LD_LIBRARY_PATH | createContainer" \
  "the start record lists devices, nodes, env keys and the skipped hook"
cfg_of() { python3 -c 'import json, sys
c = json.load(open(sys.argv[1]))["config"]
print(c.get("devices"), len(c.get("binds") or []), [e for e in c.get("env") or [] if e.startswith(("EXAMPLE", "LD_"))])' "$@"; }
tap_is "$(cfg_of "$state/$id/state.json" 2>&1)" "['example.com/dev=all', '/dev/full'] 0 []" \
  "the configuration record keeps the devices as asked, not their mounts and env (a reset resolves them again)"
tap_ok "rm" H rm devs
tap_ok "still no hook ran" test ! -e "$tmp/hook-ran"

# ---- what must be refused ----
refused() { # DESCRIPTION PATTERN SPEC-JSON-DEVICE-EDITS
  local d="$tmp/bad$((++nbad))"
  mkdir -p "$d"
  printf '{"kind": "example.com/bad", "devices": [{"name": "x", "containerEdits": %s}]}\n' "$3" >"$d/bad.json"
  HUTCH_CDI_DIRS=$d tap_status 125 "$1" H exec --rootfs "$img" --policy "$tmp/yes.policy" --device example.com/bad=x \
    -- true
  tap_like "$tap_stderr" "$2" "$1: why"
}
nbad=0
blk=$(find /dev -maxdepth 1 -type b 2>/dev/null | head -1)
if [ -n "$blk" ]; then
  refused "a spec naming a block device as one" "is a block device" \
    "{\"deviceNodes\": [{\"path\": \"/dev/b\", \"hostPath\": \"$blk\", \"type\": \"b\"}]}"
  refused "a spec naming a block device as a character device" "is a block device" \
    "{\"deviceNodes\": [{\"path\": \"/dev/b\", \"hostPath\": \"$blk\", \"type\": \"c\"}]}"
  tap_status 125 "--device of a block device" H exec --rootfs "$img" --policy "$tmp/yes.policy" --device "$blk" -- true
  tap_like "$tap_stderr" "is a block device" "refused as one"
else
  for i in 1 2 3 4; do tap_skip "block device $i" "no block device in /dev"; done
fi
ln -s /dev/zero "$tmp/link"
refused "a symlink to a device" "is a symlink" \
  "{\"deviceNodes\": [{\"path\": \"/dev/l\", \"hostPath\": \"$tmp/link\"}]}"
refused "a path that is not a device" "is not a device" \
  "{\"deviceNodes\": [{\"path\": \"/dev/f\", \"hostPath\": \"$tmp/hook.sh\"}]}"
refused "a node whose rdev differs from the spec" "is device 1:5, the spec says 1:7" \
  "{\"deviceNodes\": [{\"path\": \"/dev/z\", \"hostPath\": \"/dev/zero\", \"major\": 1, \"minor\": 7}]}"
refused "a mount of hutch's state directory" "state directory" \
  "{\"mounts\": [{\"hostPath\": \"$state\", \"containerPath\": \"/mnt/state\"}]}"
refused "a node placed on /dev/pts" "not a place for a device node" \
  "{\"deviceNodes\": [{\"path\": \"/dev/pts/9\", \"hostPath\": \"/dev/zero\"}]}"
refused "a node path with .." "not absolute and plain" \
  "{\"deviceNodes\": [{\"path\": \"/dev/../etc/x\", \"hostPath\": \"/dev/zero\"}]}"
tap_ok "no refused start ran the hook either" test ! -e "$tmp/hook-ran"

mkdir -p "$tmp/yaml"
printf 'cdiVersion: 0.6.0\nkind: example.com/yaml\ndevices: []\n' >"$tmp/yaml/y.yaml"
HUTCH_CDI_DIRS=$tmp/yaml tap_status 125 "a YAML spec" \
  H exec --rootfs "$img" --policy "$tmp/yes.policy" --device example.com/yaml=x -- true
tap_like "$tap_stderr" "YAML" "is named as YAML"
tap_like "$tap_stderr" "nvidia-ctk cdi generate --format=json" "with the way to a JSON spec"
tap_status 125 "an unknown device" H exec --rootfs "$img" --policy "$tmp/yes.policy" --device example.com/dev=nope -- true
tap_like "$tap_stderr" "example.com/dev=nope: in no CDI spec" "says it is in no spec"
chmod 666 "$tmp/cdi/example.json"
tap_status 125 "a spec others may write is not read" \
  H exec --rootfs "$img" --policy "$tmp/yes.policy" --device example.com/dev=one -- true
tap_like "$tap_stderr" "writable by you alone" "saying why"
chmod 644 "$tmp/cdi/example.json"
tap_is "$(ls "$state" | grep -v '^\.' | grep -c .)" "0" "no refused start left a sandbox behind"

# ---- root: a node of its own, made with mknod ----
if [ "$(id -u)" = 0 ]; then
  mknod "$tmp/mynode" c 1 7
  mkdir -p "$tmp/own"
  printf '{"kind": "example.com/own", "devices": [{"name": "n", "containerEdits": {"deviceNodes": [{"path": "/dev/own", "hostPath": "%s", "major": 1, "minor": 7}]}}]}\n' \
    "$tmp/mynode" >"$tmp/own/own.json"
  HUTCH_CDI_DIRS=$tmp/own tap_status 1 "root: a mknod'ed node (a write fails as /dev/full's)" \
    H exec --rootfs "$img" --policy "$tmp/yes.policy" --device example.com/own=n -- sh -c 'echo x >/dev/own'
  tap_like "$tap_stderr" "No space left on device" "is the device it names (/dev/full's 1:7)"
else
  for i in 1 2; do tap_skip "root: a mknod'ed node ($i)" "mknod needs root"; done
fi

# ---- a library of the spec's, loaded by a program in the sandbox ----
deb=$(hutch_test_rootfs debian 2>/dev/null)
if [ -n "$deb" ] && command -v gcc >/dev/null && [ "$(uname -m)" = x86_64 ]; then
  cat >"$tmp/lib.c" <<'C'
void example_hello(void) {
  static const char msg[] = "example-cdi loaded\n";
  long r;
  __asm__ volatile("syscall" : "=a"(r) : "a"(1), "D"(1), "S"(msg), "d"(sizeof(msg) - 1) : "rcx", "r11", "memory");
}
C
  cat >"$tmp/prog.c" <<'C'
void example_hello(void);
void _start(void) {
  example_hello();
  __asm__ volatile("syscall" : : "a"(60), "D"(0));
  for (;;)
    ;
}
C
  gcc -shared -fPIC -nostdlib -Wl,-soname,libexample-cdi.so.1 -o "$tmp/lib/libexample-cdi.so.1" "$tmp/lib.c" &&
    gcc -nostdlib -no-pie -o "$tmp/cdi-probe" "$tmp/prog.c" -L"$tmp/lib" -l:libexample-cdi.so.1 \
      -Wl,--dynamic-linker=/lib64/ld-linux-x86-64.so.2
  chmod 755 "$tmp/cdi-probe"
  tap_ok "a program linked with the spec's library runs" H exec --rootfs "$deb" --policy "$tmp/yes.policy" \
    --device example.com/dev=one --bind "$tmp/cdi-probe:/usr/local/bin/cdi-probe:ro" -- cdi-probe
  tap_is "$tap_stdout" "example-cdi loaded" "the library was found and loaded"
  tap_status 127 "without LD_LIBRARY_PATH it is not found" H exec --rootfs "$deb" --policy "$tmp/yes.policy" \
    --device example.com/dev=one --bind "$tmp/cdi-probe:/usr/local/bin/cdi-probe:ro" -- env -u LD_LIBRARY_PATH cdi-probe
  tap_ok "create with the spec's library" H create --rootfs "$deb" --policy "$tmp/yes.policy" \
    --device example.com/dev=one --bind "$tmp/cdi-probe:/usr/local/bin/cdi-probe:ro"
  lid=$tap_stdout
  tap_ok "a long-lived sandbox's ld.so cache has it (ldconfig ran inside)" \
    H exec --in "$lid" -- env -u LD_LIBRARY_PATH cdi-probe
  tap_is "$tap_stdout" "example-cdi loaded" "loaded without LD_LIBRARY_PATH"
  tap_ok "the ldconfig run is in its audit log" H audit --json "$lid"
  tap_like "$tap_stdout" '"argv":[[:space:]]*\["ldconfig"\]' "as a command of the sandbox's"
  tap_ok "rm" H rm "$lid"
else
  for i in 1 2 3 4 5 6 7 8 9; do tap_skip "the spec's library ($i)" "no debian test rootfs or gcc (x86_64)"; done
fi
tap_ok "the hook never ran" test ! -e "$tmp/hook-ran"

tap_done
