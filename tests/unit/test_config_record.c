/* SPDX-License-Identifier: Apache-2.0 */
/* The creation record of a long-lived sandbox (config_record.c): every
 * member of a configuration and its extras survives the trip through
 * JSON (and through state.json), relative paths come back absolute, a
 * record over its bound is refused, a changed policy is told by its
 * fingerprint, and a damaged record is refused naming the member. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config_record.h"
#include "policy.h"
#include "state.h"
#include "tap.h"
#include "util.h"

#define ID "0123456789ab"

static bool strv_eq(const char *const *a, const char *const *b) {
  for (; a && b && *a && *b; a++, b++)
    if (strcmp(*a, *b) != 0)
      return false;
  return (a == NULL || *a == NULL) && (b == NULL || *b == NULL);
}

static bool str_eq(const char *a, const char *b) {
  return (a == NULL && b == NULL) || (a && b && strcmp(a, b) == 0);
}

/* Encode, print, parse, decode: as a reset reads what create wrote. */
static int trip(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x, const char *cwd,
                struct config_record *out, hutch_error_t *err) {
  cJSON *o;
  if (config_record_encode(cfg, x,
                           "sha256:"
                           "0000000000000000000000000000000000000000000000000000000000000000",
                           cwd, &o, err) < 0)
    return -1;
  char *text = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  cJSON *back = cJSON_Parse(text);
  free(text);
  int r = config_record_decode(back, ID, out, err);
  cJSON_Delete(back);
  return r;
}

static int err_no(hutch_error_t *err) {
  int e = *err ? (*err)->errnum : 0;
  hutch_error_free(err);
  return e;
}

int main(void) {
  struct hutch_policy policy = {.path = "/etc/hutch/policies/default.policy"};
  memset(policy.file_digest, 'a', 64);
  memset(policy.digest, 'b', 64);

  /* ---- a full configuration, both ways ---- */
  const char *lowers[] = {"/store/images/sha256-1/rootfs", "/store/images/sha256-2/rootfs", NULL};
  const char *env[] = {"PATH=/usr/bin:/bin", "TOKEN=x y\n\"z\"", "EMPTY=", NULL};
  const char *allow[] = {"pypi.org", "example.com:8443", NULL};
  const char *resolve[] = {"example.com=127.0.0.1", NULL};
  const char *addrs[] = {"10.1.0.0/16", NULL};
  const char *labels[] = {"team=rl", "pool/slot=3", NULL};
  struct hutch_bind binds[] = {{"/srv/data", "/data", true}, {"/srv/out", "/out", false}};
  struct hutch_port ports[] = {{"127.0.0.1", 8080, 80}, {NULL, 0, 22}};
  struct hutch_sandbox_config cfg = {
      .rootfs = "/store/images/sha256-0/rootfs",
      .rootfs_lowers = lowers,
      .image = "python:3.12",
      .workdir = "/work",
      .rootfs_subordinate_ids = true,
      .policy = &policy,
      .hostname = "box",
      .env = env,
      .binds = binds,
      .n_binds = 2,
      .keep = true,
      .proc_host_ro = true,
      .read_only_root = true,
      .overlay = HUTCH_OVERLAY_FUSE,
      .state_dir = "/run/hutch",
      .store = "/store",
      .limits = {.memory = 512ull << 20,
                 .memory_swap = (1ull << 62) + 1,
                 .memory_swap_set = true,
                 .cpus = 1.5,
                 .pids = 100,
                 .io_weight = 500,
                 .disk = 4ull << 30,
                 .cgroup_parent = "/sys/fs/cgroup/agents",
                 .no_cgroups = true},
      .net = HUTCH_NET_PROXY,
      .net_allow = allow,
      .net_policy = "/etc/hutch/net.policy",
      .net_resolve = resolve,
      .net_allow_address = addrs,
      .net_audit_log = "/var/log/proxy.log",
      .die_with_creator = true,
      .audit_copy = "/tmp/audit.jsonl",
  };
  struct hutch_sandbox_extras x = {
      .name = "web-1", .labels = labels, .ttl = 90.5, .on_ttl = HUTCH_TTL_PAUSE, .ports = ports, .n_ports = 2};
  struct config_record r;
  hutch_error_t err = NULL;
  tap_is_int(trip(&cfg, &x, NULL, &r, &err), 0, "a full configuration is recorded and read back");
  const struct hutch_sandbox_config *c = &r.cfg;
  tap_is_str(c->rootfs, cfg.rootfs, "rootfs");
  tap_ok(strv_eq(c->rootfs_lowers, lowers), "lowers, in order");
  tap_is_str(c->image, "python:3.12", "image");
  tap_is_str(c->workdir, "/work", "workdir");
  tap_ok(c->rootfs_subordinate_ids, "the subordinate-ids flag");
  tap_is_str(c->hostname, "box", "hostname");
  tap_ok(strv_eq(c->env, env), "the whole environment, escapes and empty values kept");
  tap_is_int((int)c->n_binds, 2, "both binds");
  tap_ok(c->n_binds == 2 && strcmp(c->binds[0].source, "/srv/data") == 0 && strcmp(c->binds[0].dest, "/data") == 0 &&
             c->binds[0].readonly && !c->binds[1].readonly && strcmp(c->binds[1].dest, "/out") == 0,
         "binds: source, dest, readonly");
  tap_ok(c->keep && c->proc_host_ro && c->read_only_root && !c->build_caps, "keep, proc_host_ro, read_only_root");
  tap_ok(c->overlay == HUTCH_OVERLAY_FUSE, "overlay mode");
  tap_is_str(c->store, "/store", "store");
  tap_ok(c->policy == NULL && c->state_dir == NULL && c->audit_copy == NULL,
         "policy, state dir and audit copy are not in the record");
  tap_ok(c->limits.memory == cfg.limits.memory && c->limits.memory_swap == cfg.limits.memory_swap &&
             c->limits.memory_swap_set && c->limits.cpus == 1.5 && c->limits.pids == 100 &&
             c->limits.io_weight == 500 && c->limits.disk == cfg.limits.disk && c->limits.no_cgroups &&
             str_eq(c->limits.cgroup_parent, "/sys/fs/cgroup/agents"),
         "every explicit limit (a size past 2^53 exact)");
  tap_ok(c->net == HUTCH_NET_PROXY, "net mode");
  tap_ok(strv_eq(c->net_allow, allow) && strv_eq(c->net_resolve, resolve) && strv_eq(c->net_allow_address, addrs),
         "allow, resolve and allow_address lists");
  tap_is_str(c->net_policy, "/etc/hutch/net.policy", "the --net-policy file");
  tap_is_str(c->net_audit_log, "/var/log/proxy.log", "the proxy's log");
  tap_ok(c->die_with_creator, "die_with_creator");
  tap_is_str(r.policy_path, policy.path, "the policy's path");
  tap_is_str(r.fingerprint, "sha256:0000000000000000000000000000000000000000000000000000000000000000",
             "the policy's fingerprint");
  tap_is_str(r.x.name, "web-1", "extras: name");
  tap_ok(strv_eq(r.x.labels, labels), "extras: labels");
  tap_ok(r.x.ttl == 90.5 && r.x.on_ttl == HUTCH_TTL_PAUSE, "extras: ttl and its action");
  tap_ok(r.x.n_ports == 2 && str_eq(r.x.ports[0].host_addr, "127.0.0.1") && r.x.ports[0].host_port == 8080 &&
             r.x.ports[0].port == 80 && r.x.ports[1].host_addr == NULL && r.x.ports[1].port == 22,
         "extras: ports");
  config_record_clear(&r);

  /* ---- the least: nothing optional set ---- */
  struct hutch_sandbox_config bare = {.rootfs = "/r", .policy = &policy};
  tap_is_int(trip(&bare, NULL, NULL, &r, &err), 0, "a bare configuration");
  tap_ok(r.cfg.env == NULL && r.cfg.n_binds == 0 && r.cfg.net == HUTCH_NET_NONE && r.cfg.limits.memory == 0 &&
             r.cfg.overlay == HUTCH_OVERLAY_KERNEL && !r.cfg.keep && r.x.name == NULL && r.x.labels == NULL,
         "comes back bare");
  config_record_clear(&r);

  /* ---- relative paths ---- */
  struct hutch_policy rel_policy = policy;
  rel_policy.path = "policies/p.policy";
  struct hutch_bind rel_bind = {"data", "/data", false};
  struct hutch_sandbox_config rel = {.rootfs = "/r", .policy = &rel_policy, .binds = &rel_bind, .n_binds = 1};
  tap_ok(config_record_needs_cwd(&rel), "a relative policy or bind path needs the working directory");
  tap_ok(!config_record_needs_cwd(&cfg), "absolute paths do not");
  tap_is_int(trip(&rel, NULL, "/home/u", &r, &err), 0, "relative paths recorded");
  tap_is_str(r.policy_path, "/home/u/policies/p.policy", "the policy's path made absolute");
  tap_is_str(r.cfg.binds ? r.cfg.binds[0].source : NULL, "/home/u/data", "a bind's source made absolute");
  config_record_clear(&r);
  tap_is_int(trip(&rel, NULL, NULL, &r, &err), -1, "without the directory a relative path is not recorded");
  tap_is_int(err_no(&err), EINVAL, "(EINVAL, on reading it back)");

  /* ---- the bound ---- */
  size_t big = CONFIG_RECORD_MAX / 4;
  char *vals[5];
  const char *big_env[5];
  for (int i = 0; i < 4; i++) {
    vals[i] = xcalloc(1, big + 1);
    memset(vals[i], 'v', big - 16);
    memcpy(vals[i], "K0=", 3);
    vals[i][1] = (char)('0' + i);
    big_env[i] = vals[i];
  }
  big_env[4] = NULL;
  struct hutch_sandbox_config huge = {.rootfs = "/r", .policy = &policy, .env = big_env};
  cJSON *o = NULL;
  tap_is_int(config_record_encode(&huge, NULL, "sha256:x", NULL, &o, &err), -1, "a record over 256 KiB is refused");
  tap_ok(o == NULL, "and none is made");
  tap_is_int(err_no(&err), EFBIG, "with EFBIG");
  big_env[3] = NULL;
  tap_is_int(config_record_encode(&huge, NULL, "sha256:x", NULL, &o, &err), 0, "three quarters of it is recorded");
  cJSON_Delete(o);
  /* Escaping counts: a control character takes 6 bytes in JSON. */
  memset(vals[0] + 3, '\001', big - 19);
  big_env[1] = NULL;
  tap_is_int(config_record_encode(&huge, NULL, "sha256:x", NULL, &o, &err), -1,
             "a quarter of control characters is over (they are escaped)");
  hutch_error_free(&err);
  for (int i = 0; i < 4; i++)
    free(vals[i]);

  /* ---- the fingerprint ---- */
  char f1[CONFIG_FINGERPRINT_LEN], f2[CONFIG_FINGERPRINT_LEN], f3[CONFIG_FINGERPRINT_LEN];
  config_record_fingerprint(&policy, NULL, 0, f1);
  tap_ok(strncmp(f1, "sha256:", 7) == 0 && strlen(f1) == 71, "a fingerprint is sha256:HEX");
  config_record_fingerprint(&policy, NULL, 0, f2);
  tap_is_str(f1, f2, "the same policy: the same fingerprint");
  struct hutch_policy changed = policy;
  changed.file_digest[0] = 'c';
  config_record_fingerprint(&changed, NULL, 0, f2);
  tap_ok(strcmp(f1, f2) != 0, "a changed policy file: another fingerprint");
  changed = policy;
  changed.digest[63] = 'c';
  config_record_fingerprint(&changed, NULL, 0, f2);
  tap_ok(strcmp(f1, f2) != 0, "a changed seccomp profile: another");
  config_record_fingerprint(&policy, "[network]\n", 10, f2);
  config_record_fingerprint(&policy, "[network]\n\n", 11, f3);
  tap_ok(strcmp(f1, f2) != 0 && strcmp(f2, f3) != 0, "a --net-policy file, and a change of it: others");
  cJSON *rec;
  tap_is_int(config_record_encode(&cfg, NULL, f1, NULL, &rec, &err), 0, "recorded with its fingerprint");
  tap_is_int(config_record_decode(rec, ID, &r, &err), 0, "read back");
  tap_is_int(config_record_check_policy(&r, f1, ID, &err), 0, "the same policy passes");
  tap_is_int(config_record_check_policy(&r, f3, ID, &err), -1, "a changed one is refused");
  tap_ok(err && err->hint && strstr(err->hint, "hutch rm " ID), "with the hint to recreate the sandbox");
  tap_is_int(err_no(&err), ESTALE, "with ESTALE");
  config_record_clear(&r);

  /* ---- through state.json ---- */
  char dir[] = "/tmp/test_config_record.XXXXXX";
  tap_ok(mkdtemp(dir) != NULL, "a state root");
  int rootfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  mkdirat(rootfd, ID, 0700);
  int sbfd = openat(rootfd, ID, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct sandbox_state st = {.id = ID, .pid = 1, .long_lived = true, .live = {.generation = 7, .config = rec}};
  tap_is_int(state_write(sbfd, &st, NULL), 0, "a state with its record written");
  struct sandbox_state got;
  tap_is_int(state_read(rootfd, ID, &got, NULL), 0, "and read");
  tap_is_int((int)got.live.generation, 7, "its generation");
  tap_is_int(config_record_decode(got.live.config, ID, &r, &err), 0, "its record");
  tap_ok(strv_eq(r.cfg.env, env) && r.cfg.n_binds == 2, "as written");
  config_record_clear(&r);
  state_clear(&got);
  cJSON_Delete(rec);

  /* ---- records hutch did not write ---- */
  tap_is_int(config_record_decode(NULL, ID, &r, &err), -1, "no record (an older hutch's sandbox)");
  tap_is_int(err_no(&err), ESTALE, "ESTALE");
  static const struct {
    const char *json;
    int errnum;
    const char *what;
  } bad
      [] =
          {
              {"{\"v\":2,\"rootfs\":\"/r\"}", ESTALE, "another version"},
              {"[]", EINVAL, "not an object"},
              {"{\"v\":1,\"rootfs\":7,\"policy\":{\"path\":\"/p\",\"fingerprint\":\"sha256:" /**/
               "0000000000000000000000000000000000000000000000000000000000000000\"}}",
               EINVAL, "a member of the wrong type"},
              {"{\"v\":1,\"rootfs\":\"/r\",\"policy\":{\"path\":\"/p\"}}", EINVAL, "no fingerprint"},
              {"{\"v\":1,\"rootfs\":\"/r\",\"labels\":[\"no-equals\"],\"policy\":{\"path\":\"/"
               "p\",\"fingerprint\":\"sha256:" /**/
               "0000000000000000000000000000000000000000000000000000000000000000\"}}",
               EINVAL, "a label that is not one"},
              {"{\"v\":1,\"rootfs\":\"/r\",\"binds\":[{\"source\":\"rel\",\"dest\":\"/d\"}],\"policy\":{\"path\":\"/"
               "p\","
               "\"fingerprint\":\"sha256:0000000000000000000000000000000000000000000000000000000000000000\"}}",
               EINVAL, "a relative bind source"},
              {"{\"v\":1,\"rootfs\":\"/r\",\"limits\":{\"memory\":\"-1\"},\"policy\":{\"path\":\"/p\",\"fingerprint\":"
               "\"sha256:0000000000000000000000000000000000000000000000000000000000000000\"}}",
               EINVAL, "a negative size"},
          };
  for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
    cJSON *j = cJSON_Parse(bad[i].json);
    tap_is_int(config_record_decode(j, ID, &r, &err), -1, "refused: %s", bad[i].what);
    tap_is_int(err_no(&err), bad[i].errnum, "(%s)", bad[i].errnum == ESTALE ? "ESTALE" : "EINVAL");
    cJSON_Delete(j);
  }
  return tap_done();
}
