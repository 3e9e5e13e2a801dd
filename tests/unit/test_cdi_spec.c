/* SPDX-License-Identifier: Apache-2.0 */
/* CDI specs (cdi_spec.c): names, the JSON of a spec, and what is refused
 * (YAML, wrong types, unclean paths, block-device types parse but are
 * left to cdi.c), plus the policy's [devices] allow matching. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cdi_spec.h"
#include "policy.h"
#include "tap.h"

static int parse(const char *text, struct cdi_spec *s, hutch_error_t *err) {
  return cdi_spec_parse(text, strlen(text), "test.json", s, err);
}

/* Whether text is refused, with `why` in the message. */
static bool refused(const char *text, const char *why) {
  struct cdi_spec s;
  hutch_error_t err = NULL;
  int r = parse(text, &s, &err);
  bool ok = r < 0 && err != NULL && strstr(err->msg, why) != NULL;
  if (r < 0 && !ok)
    fprintf(stderr, "# got: %s\n", err ? err->msg : "(no error)");
  if (r == 0)
    cdi_spec_clear(&s);
  hutch_error_free(&err);
  return ok;
}

static const char spec[] =
    "{\"cdiVersion\": \"0.6.0\", \"kind\": \"example.com/dev\",\n"
    " \"containerEdits\": {\"env\": [\"A=1\"], \"hooks\": [{\"hookName\": \"createContainer\", \"path\": "
    "\"/usr/bin/nvidia-ctk\"}]},\n"
    " \"devices\": [\n"
    "  {\"name\": \"one\", \"containerEdits\": {\"deviceNodes\": [{\"path\": \"/dev/fake0\", \"hostPath\": "
    "\"/dev/zero\", \"type\": \"c\", \"major\": 1, \"minor\": 5}],\n"
    "     \"mounts\": [{\"hostPath\": \"/usr/lib/x/libx.so.1\", \"containerPath\": \"/usr/lib/x/libx.so.1\", "
    "\"options\": [\"ro\"]}]}},\n"
    "  {\"name\": \"gpu:1\", \"containerEdits\": {\"deviceNodes\": [{\"path\": \"/dev/nvidia1\"}]}}\n"
    " ]}\n";

int main(void) {
  /* names */
  size_t kl;
  const char *name;
  tap_ok(cdi_qualified_split("nvidia.com/gpu=all", &kl, &name) && kl == 14 && strcmp(name, "all") == 0,
         "vendor/class=name splits");
  tap_ok(!cdi_qualified_split("nvidia.com/gpu", &kl, &name), "a kind alone is no device name");
  tap_ok(!cdi_qualified_split("nvidia.com=0", &kl, &name), "a kind needs a class");
  tap_ok(!cdi_qualified_split("nvidia.com/gpu=", &kl, &name), "an empty name");
  tap_ok(!cdi_qualified_split("nvidia.com/gpu=a/b", &kl, &name), "a '/' in a name");
  tap_ok(!cdi_qualified_split("-x.com/gpu=0", &kl, &name), "a vendor starting with '-'");
  tap_ok(cdi_dev_path_valid("/dev/dri/card0"), "/dev/dri/card0 is a device path");
  tap_ok(!cdi_dev_path_valid("/dev/../etc/passwd"), "not with ..");
  tap_ok(!cdi_dev_path_valid("/dev/"), "not /dev/ itself");
  tap_ok(!cdi_dev_path_valid("/etc/passwd"), "not outside /dev");
  tap_ok(!cdi_dev_path_valid("/dev//zero"), "not with //");
  tap_ok(cdi_device_name_valid("example.com/dev=one") && cdi_device_name_valid("/dev/full") &&
             !cdi_device_name_valid("zero"),
         "a device is either");

  /* a spec */
  struct cdi_spec s;
  hutch_error_t err = NULL;
  tap_is_int(parse(spec, &s, &err), 0, "a spec parses");
  tap_is_str(s.kind, "example.com/dev", "its kind");
  tap_is_int((int)s.n_devices, 2, "two devices");
  tap_is_str(s.edits.env[0], "A=1", "the spec's env");
  tap_ok(s.edits.n_hooks == 1 && strcmp(s.edits.hooks[0].hook_name, "createContainer") == 0, "its hook, listed");
  const struct cdi_device *one = cdi_spec_device(&s, "one");
  tap_ok(one && one->edits.n_nodes == 1 && strcmp(one->edits.nodes[0].host_path, "/dev/zero") == 0 &&
             strcmp(one->edits.nodes[0].path, "/dev/fake0") == 0 && one->edits.nodes[0].type == 'c' &&
             one->edits.nodes[0].has_rdev && one->edits.nodes[0].major == 1 && one->edits.nodes[0].minor == 5,
         "device one: its node, host path, type and rdev");
  tap_ok(one && one->edits.n_mounts == 1 && strcmp(one->edits.mounts[0].container_path, "/usr/lib/x/libx.so.1") == 0,
         "device one: its mount");
  const struct cdi_device *gpu = cdi_spec_device(&s, "gpu:1");
  tap_ok(gpu && strcmp(gpu->edits.nodes[0].host_path, "/dev/nvidia1") == 0 && !gpu->edits.nodes[0].has_rdev &&
             gpu->edits.nodes[0].type == 0,
         "a node without hostPath is its path; no type, no rdev");
  tap_ok(cdi_spec_device(&s, "two") == NULL, "an unknown device is none");
  cdi_spec_clear(&s);

  /* refused */
  err = NULL;
  const char yaml[] = "cdiVersion: 0.6.0\nkind: nvidia.com/gpu\n";
  tap_ok(cdi_spec_parse(yaml, strlen(yaml), "y.yaml", &s, &err) < 0 && err && strstr(err->msg, "YAML") && err->hint &&
             strstr(err->hint, "--format=json"),
         "YAML is refused, with the hint to generate JSON");
  hutch_error_free(&err);
  tap_ok(refused("{\"kind\": \"nvidia.com/gpu\", \"devices\": [", "not a valid JSON object"), "broken JSON");
  tap_ok(refused("{\"kind\": \"nvidia\", \"devices\": []}", "kind"), "a kind without class");
  tap_ok(refused("{\"kind\": \"a.com/b\"}", "devices"), "no devices");
  tap_ok(refused("{\"kind\": \"a.com/b\", \"devices\": [{\"name\": \"all\", \"containerEdits\": {}}]}", "reserved"),
         "a device named all");
  tap_ok(refused("{\"kind\": \"a.com/b\", \"devices\": [{\"name\": \"x\", \"containerEdits\": {}}, {\"name\": \"x\", "
                 "\"containerEdits\": {}}]}",
                 "twice"),
         "a device named twice");
  tap_ok(refused("{\"kind\": \"a.com/b\", \"devices\": [{\"name\": \"x\"}]}", "no containerEdits"),
         "a device without edits");
  tap_ok(refused("{\"kind\": \"a.com/b\", \"devices\": [{\"name\": \"x\", \"containerEdits\": {\"deviceNodes\": "
                 "[{\"path\": \"/dev/../etc/shadow\"}]}}]}",
                 "absolute and plain"),
         "a node path with ..");
  tap_ok(refused("{\"kind\": \"a.com/b\", \"devices\": [{\"name\": \"x\", \"containerEdits\": {\"deviceNodes\": "
                 "[{\"path\": \"dev/x\"}]}}]}",
                 "absolute and plain"),
         "a relative node path");
  tap_ok(refused("{\"kind\": \"a.com/b\", \"devices\": [{\"name\": \"x\", \"containerEdits\": {\"deviceNodes\": "
                 "[{\"path\": \"/dev/x\", \"major\": 1}]}}]}",
                 "major without minor"),
         "major without minor");
  tap_ok(refused("{\"kind\": \"a.com/b\", \"devices\": [{\"name\": \"x\", \"containerEdits\": {\"deviceNodes\": "
                 "[{\"path\": \"/dev/x\", \"type\": \"q\"}]}}]}",
                 "type"),
         "an unknown node type");
  tap_ok(refused("{\"kind\": \"a.com/b\", \"devices\": [{\"name\": \"x\", \"containerEdits\": {\"env\": "
                 "[\"NOEQUALS\"]}}]}",
                 "KEY=VALUE"),
         "env without =");
  tap_ok(refused("{\"kind\": \"a.com/b\", \"devices\": [{\"name\": \"x\", \"containerEdits\": {\"mounts\": "
                 "[{\"hostPath\": \"/x\"}]}}]}",
                 "containerPath"),
         "a mount without containerPath");
  tap_ok(refused("{\"kind\": \"a.com/b\", \"devices\": [{\"name\": \"x\", \"containerEdits\": {\"mounts\": {}}}]}",
                 "not an array"),
         "mounts not an array");
  struct cdi_spec b;
  tap_is_int(parse("{\"kind\": \"a.com/b\", \"devices\": [{\"name\": \"x\", \"containerEdits\": {\"deviceNodes\": "
                   "[{\"path\": \"/dev/sda\", \"type\": \"b\"}]}}]}",
                   &b, NULL),
             0, "a block device parses (cdi.c refuses it, naming it)");
  tap_ok(b.devices[0].edits.nodes[0].type == 'b', "as type b");
  cdi_spec_clear(&b);

  /* the policy's [devices] allow */
  char *list[] = {"example.com/dev", "other.com/x=1", "/dev/full", NULL};
  struct policy_devices none = {0}, any = {.any = true}, some = {.allow = list, .n_allow = 3};
  tap_ok(!policy_device_allowed(&none, "/dev/full"), "the default allows nothing");
  tap_ok(policy_device_allowed(&any, "nvidia.com/gpu=all"), "yes allows anything");
  tap_ok(policy_device_allowed(&some, "example.com/dev=one") && policy_device_allowed(&some, "example.com/dev=all"),
         "a kind allows its devices");
  tap_ok(policy_device_allowed(&some, "other.com/x=1") && !policy_device_allowed(&some, "other.com/x=2") &&
             !policy_device_allowed(&some, "other.com/x=all"),
         "a device allows itself only");
  tap_ok(policy_device_allowed(&some, "/dev/full") && !policy_device_allowed(&some, "/dev/zero"),
         "a node allows itself only");
  tap_ok(!policy_device_allowed(&some, "example.com/devx=1") && !policy_device_allowed(&some, "example.com=1"),
         "a kind is not a prefix");

  /* the policy's syntax */
  struct policy_settings ps;
  const char ok_text[] = "[sandbox]\nseccomp = s.json\n[devices]\nallow = example.com/dev\nallow = /dev/full\n";
  tap_is_int(policy_parse(ok_text, "p", &ps, NULL), 0, "[devices] allow, repeated");
  tap_ok(ps.devices.n_allow == 2 && !ps.devices.any, "two entries");
  policy_settings_clear(&ps);
  err = NULL;
  tap_ok(policy_parse("[sandbox]\nseccomp = s.json\n[devices]\nallow = no\nallow = /dev/full\n", "p", &ps, &err) < 0,
         "no with an entry is refused");
  hutch_error_free(&err);
  tap_ok(policy_parse("[sandbox]\nseccomp = s.json\n[devices]\nallow = /etc/passwd\n", "p", &ps, &err) < 0,
         "a path outside /dev is refused");
  hutch_error_free(&err);
  tap_ok(policy_parse("[sandbox]\nseccomp = s.json\n[devices]\nallow = /dev/../etc\n", "p", &ps, &err) < 0,
         "a /dev path with .. is refused");
  hutch_error_free(&err);
  tap_is_int(policy_parse("[sandbox]\nseccomp = s.json\n[devices]\nallow = yes\n", "p", &ps, NULL), 0, "allow = yes");
  tap_ok(ps.devices.any, "is any");
  policy_settings_clear(&ps);
  return tap_done();
}
