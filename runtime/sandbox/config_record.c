/* SPDX-License-Identifier: Apache-2.0 */
/* A long-lived sandbox's creation record (config_record.h): its
 * configuration and extras to JSON and back.  Unsigned 64-bit sizes are
 * strings, as state.json's start times are: a double holds them only up
 * to 2^53. */
#include "config.h"

#include "config_record.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "labels.h"
#include "policy.h"
#include "sha256.h"
#include "user_spec.h"
#include "util.h"

void config_record_fingerprint(const struct hutch_policy *policy, const char *net_policy, size_t net_policy_len,
                               char out[CONFIG_FINGERPRINT_LEN]) {
  struct sha256_ctx ctx;
  sha256_init(&ctx);
  const char *parts[] = {"policy ", policy->file_digest, "\nseccomp ", policy->digest, "\nnet-policy "};
  for (size_t i = 0; i < ARRAY_SIZE(parts); i++)
    sha256_update(&ctx, parts[i], strlen(parts[i]));
  if (net_policy != NULL) {
    uint8_t d[SHA256_DIGEST_SIZE];
    char hex[SHA256_HEX_SIZE];
    sha256_buffer(net_policy, net_policy_len, d);
    sha256_hex(d, hex);
    sha256_update(&ctx, hex, strlen(hex));
  } else {
    sha256_update(&ctx, "none", 4);
  }
  uint8_t d[SHA256_DIGEST_SIZE];
  char hex[SHA256_HEX_SIZE];
  sha256_final(&ctx, d);
  sha256_hex(d, hex);
  snprintf(out, CONFIG_FINGERPRINT_LEN, "sha256:%s", hex);
}

static bool relative(const char *p) {
  return p != NULL && p[0] != '/';
}

bool config_record_needs_cwd(const struct hutch_sandbox_config *cfg) {
  bool r = relative(cfg->rootfs) || relative(cfg->store) || relative(cfg->net_policy) || relative(cfg->net_audit_log) ||
           (cfg->policy && relative(hutch_policy_path(cfg->policy)));
  for (const char *const *l = cfg->rootfs_lowers; !r && l && *l; l++)
    r = relative(*l);
  for (size_t i = 0; !r && i < cfg->n_binds; i++)
    r = relative(cfg->binds[i].source);
  return r;
}

/* ---- encode ---- */

static void add_path(cJSON *o, const char *key, const char *p, const char *cwd) {
  if (p == NULL)
    return;
  if (relative(p) && cwd != NULL) {
    _cleanup_free_ char *abs = xasprintf("%s/%s", cwd, p);
    cJSON_AddStringToObject(o, key, abs);
  } else {
    cJSON_AddStringToObject(o, key, p);
  }
}

static void add_str(cJSON *o, const char *key, const char *s) {
  if (s != NULL)
    cJSON_AddStringToObject(o, key, s);
}

static void add_list(cJSON *o, const char *key, const char *const *l, const char *cwd) {
  if (l == NULL || l[0] == NULL)
    return;
  cJSON *a = cJSON_AddArrayToObject(o, key);
  for (; *l; l++) {
    _cleanup_free_ char *abs = cwd && relative(*l) ? xasprintf("%s/%s", cwd, *l) : NULL;
    cJSON_AddItemToArray(a, cJSON_CreateString(abs ? abs : *l));
  }
}

static void add_u64(cJSON *o, const char *key, uint64_t v) {
  if (v == 0)
    return;
  char buf[32];
  snprintf(buf, sizeof(buf), "%" PRIu64, v);
  cJSON_AddStringToObject(o, key, buf);
}

static void add_true(cJSON *o, const char *key, bool v) {
  if (v)
    cJSON_AddTrueToObject(o, key);
}

static void encode_limits(cJSON *o, const struct hutch_limits *l, const char *cwd) {
  cJSON *j = cJSON_AddObjectToObject(o, "limits");
  add_u64(j, "memory", l->memory);
  add_u64(j, "memory_swap", l->memory_swap);
  add_true(j, "memory_swap_set", l->memory_swap_set);
  if (l->cpus > 0)
    cJSON_AddNumberToObject(j, "cpus", l->cpus);
  add_u64(j, "pids", l->pids);
  add_u64(j, "io_weight", l->io_weight);
  add_u64(j, "disk", l->disk);
  add_path(j, "cgroup_parent", l->cgroup_parent, cwd);
  add_true(j, "no_cgroups", l->no_cgroups);
}

static void encode_net(cJSON *o, const struct hutch_sandbox_config *cfg, const char *cwd) {
  cJSON *j = cJSON_AddObjectToObject(o, "net");
  cJSON_AddStringToObject(j, "mode", cfg->net == HUTCH_NET_PROXY ? "proxy" : "none");
  add_list(j, "allow", cfg->net_allow, NULL);
  add_path(j, "policy", cfg->net_policy, cwd);
  add_list(j, "resolve", cfg->net_resolve, NULL);
  add_list(j, "allow_address", cfg->net_allow_address, NULL);
  add_path(j, "audit_log", cfg->net_audit_log, cwd);
}

static void encode_extras(cJSON *o, const struct hutch_sandbox_extras *x) {
  if (x == NULL)
    return;
  add_str(o, "name", x->name);
  add_list(o, "labels", x->labels, NULL);
  if (x->ttl > 0) {
    cJSON_AddNumberToObject(o, "ttl", x->ttl);
    cJSON_AddStringToObject(o, "on_ttl", x->on_ttl == HUTCH_TTL_PAUSE ? "pause" : "remove");
  }
  if (x->n_ports > 0) {
    cJSON *a = cJSON_AddArrayToObject(o, "ports");
    for (size_t i = 0; i < x->n_ports; i++) {
      cJSON *p = cJSON_CreateObject();
      add_str(p, "host_addr", x->ports[i].host_addr);
      cJSON_AddNumberToObject(p, "host_port", x->ports[i].host_port);
      cJSON_AddNumberToObject(p, "port", x->ports[i].port);
      cJSON_AddItemToArray(a, p);
    }
  }
  add_list(o, "devices", x->devices, NULL);
  add_str(o, "user", x->user);
}

int config_record_encode(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x,
                         const char *fingerprint, const char *cwd, cJSON **out, hutch_error_t *err) {
  *out = NULL;
  if (cfg->policy == NULL)
    return hutch_error_set(err, EINVAL, "sandbox: no policy");
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "v", CONFIG_RECORD_VERSION);
  add_path(o, "rootfs", cfg->rootfs, cwd);
  add_list(o, "lowers", cfg->rootfs_lowers, cwd);
  add_str(o, "image", cfg->image);
  add_str(o, "workdir", cfg->workdir);
  add_true(o, "subordinate_ids", cfg->rootfs_subordinate_ids);
  add_str(o, "hostname", cfg->hostname);
  add_list(o, "env", cfg->env, NULL);
  if (cfg->n_binds > 0) {
    cJSON *a = cJSON_AddArrayToObject(o, "binds");
    for (size_t i = 0; i < cfg->n_binds; i++) {
      cJSON *b = cJSON_CreateObject();
      add_path(b, "source", cfg->binds[i].source, cwd);
      add_str(b, "dest", cfg->binds[i].dest);
      add_true(b, "readonly", cfg->binds[i].readonly);
      cJSON_AddItemToArray(a, b);
    }
  }
  add_true(o, "keep", cfg->keep);
  add_true(o, "proc_host_ro", cfg->proc_host_ro);
  add_true(o, "read_only_root", cfg->read_only_root);
  add_true(o, "build_caps", cfg->build_caps);
  cJSON_AddStringToObject(o, "overlay", cfg->overlay == HUTCH_OVERLAY_FUSE ? "fuse" : "kernel");
  add_path(o, "store", cfg->store, cwd);
  encode_limits(o, &cfg->limits, cwd);
  encode_net(o, cfg, cwd);
  add_true(o, "die_with_creator", cfg->die_with_creator);
  cJSON *p = cJSON_AddObjectToObject(o, "policy");
  add_path(p, "path", hutch_policy_path(cfg->policy), cwd);
  add_str(p, "fingerprint", fingerprint);
  encode_extras(o, x);
  /* Measured as state.json will hold it: the env and the binds are the
   * caller's, of any size. */
  _cleanup_free_ char *text = cJSON_PrintUnformatted(o);
  size_t len = text ? strlen(text) : SIZE_MAX;
  if (len > CONFIG_RECORD_MAX) {
    cJSON_Delete(o);
    hutch_error_set(err, EFBIG, "sandbox: its configuration takes %zu bytes to record, more than %u", len,
                    CONFIG_RECORD_MAX);
    return hutch_error_hint(err, "a long-lived sandbox's environment, binds and allow list are recorded for its "
                                 "reset: pass fewer or shorter ones");
  }
  *out = o;
  return 0;
}

/* ---- decode ---- */

struct decoder {
  const char *id;
  hutch_error_t *err;
  const char *bad; /* the first member found wrong */
};

static const cJSON *member(const cJSON *o, const char *key) {
  return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *get_str(struct decoder *d, const cJSON *o, const char *key) {
  const cJSON *v = member(o, key);
  if (v == NULL)
    return NULL;
  if (!cJSON_IsString(v)) {
    d->bad = d->bad ? d->bad : key;
    return NULL;
  }
  return v->valuestring;
}

static bool get_bool(struct decoder *d, const cJSON *o, const char *key) {
  const cJSON *v = member(o, key);
  if (v != NULL && !cJSON_IsBool(v))
    d->bad = d->bad ? d->bad : key;
  return cJSON_IsTrue(v);
}

static uint64_t get_u64(struct decoder *d, const cJSON *o, const char *key) {
  const char *s = get_str(d, o, key);
  if (s == NULL)
    return 0;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || *end != '\0' || errno != 0 || s[0] == '-') {
    d->bad = d->bad ? d->bad : key;
    return 0;
  }
  return v;
}

static double get_num(struct decoder *d, const cJSON *o, const char *key, double min, double max) {
  const cJSON *v = member(o, key);
  if (v == NULL)
    return 0;
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= min && v->valuedouble <= max)) {
    d->bad = d->bad ? d->bad : key;
    return 0;
  }
  return v->valuedouble;
}

/* A NULL-terminated list of the array's strings (pointing into it); NULL
 * without the member. */
static const char **get_list(struct decoder *d, const cJSON *o, const char *key) {
  const cJSON *a = member(o, key);
  if (a == NULL)
    return NULL;
  if (!cJSON_IsArray(a)) {
    d->bad = d->bad ? d->bad : key;
    return NULL;
  }
  int n = cJSON_GetArraySize(a);
  const char **l = xcalloc((size_t)n + 1, sizeof(char *));
  int i = 0;
  const cJSON *v;
  cJSON_ArrayForEach(v, a) {
    if (!cJSON_IsString(v)) {
      d->bad = d->bad ? d->bad : key;
      break;
    }
    l[i++] = v->valuestring;
  }
  return l;
}

/* The object member `key`, or NULL (without it, or marked bad). */
static const cJSON *get_obj(struct decoder *d, const cJSON *o, const char *key) {
  const cJSON *v = member(o, key);
  if (v != NULL && !cJSON_IsObject(v)) {
    d->bad = d->bad ? d->bad : key;
    return NULL;
  }
  return v;
}

static void decode_limits(struct decoder *d, const cJSON *j, struct hutch_limits *l) {
  if (j == NULL)
    return;
  l->memory = get_u64(d, j, "memory");
  l->memory_swap = get_u64(d, j, "memory_swap");
  l->memory_swap_set = get_bool(d, j, "memory_swap_set");
  l->cpus = get_num(d, j, "cpus", 0, 4096);
  l->pids = get_u64(d, j, "pids");
  uint64_t w = get_u64(d, j, "io_weight");
  if (w > 10000)
    d->bad = d->bad ? d->bad : "io_weight";
  l->io_weight = (uint32_t)w;
  l->disk = get_u64(d, j, "disk");
  l->cgroup_parent = get_str(d, j, "cgroup_parent");
  l->no_cgroups = get_bool(d, j, "no_cgroups");
}

static void decode_net(struct decoder *d, const cJSON *j, struct config_record *r) {
  if (j == NULL)
    return;
  struct hutch_sandbox_config *c = &r->cfg;
  const char *mode = get_str(d, j, "mode");
  if (mode && strcmp(mode, "proxy") == 0)
    c->net = HUTCH_NET_PROXY;
  else if (mode && strcmp(mode, "none") != 0)
    d->bad = d->bad ? d->bad : "net.mode";
  c->net_allow = r->lists[2] = get_list(d, j, "allow");
  c->net_policy = get_str(d, j, "policy");
  c->net_resolve = r->lists[3] = get_list(d, j, "resolve");
  c->net_allow_address = r->lists[4] = get_list(d, j, "allow_address");
  c->net_audit_log = get_str(d, j, "audit_log");
}

static void decode_binds(struct decoder *d, const cJSON *a, struct config_record *r) {
  if (a == NULL)
    return;
  if (!cJSON_IsArray(a)) {
    d->bad = d->bad ? d->bad : "binds";
    return;
  }
  size_t n = (size_t)cJSON_GetArraySize(a), i = 0;
  r->binds = xcalloc(n + 1, sizeof(*r->binds));
  const cJSON *b;
  cJSON_ArrayForEach(b, a) {
    const char *src = get_str(d, b, "source"), *dest = get_str(d, b, "dest");
    if (src == NULL || dest == NULL || src[0] != '/' || dest[0] != '/') {
      d->bad = d->bad ? d->bad : "binds";
      break;
    }
    r->binds[i++] = (struct hutch_bind){.source = src, .dest = dest, .readonly = get_bool(d, b, "readonly")};
  }
  r->cfg.binds = r->binds;
  r->cfg.n_binds = i;
}

static void decode_extras(struct decoder *d, const cJSON *o, struct config_record *r) {
  struct hutch_sandbox_extras *x = &r->x;
  x->name = get_str(d, o, "name");
  if (x->name && labels_check_name(x->name, NULL) < 0)
    d->bad = d->bad ? d->bad : "name";
  x->labels = r->lists[5] = get_list(d, o, "labels");
  for (const char *const *l = x->labels; l && *l; l++)
    if (labels_check_label(*l, NULL) < 0)
      d->bad = d->bad ? d->bad : "labels";
  x->ttl = get_num(d, o, "ttl", 0, 1e12);
  const char *on_ttl = get_str(d, o, "on_ttl");
  x->on_ttl = on_ttl && strcmp(on_ttl, "pause") == 0 ? HUTCH_TTL_PAUSE : HUTCH_TTL_REMOVE;
  const cJSON *a = member(o, "ports");
  if (cJSON_IsArray(a)) {
    size_t n = (size_t)cJSON_GetArraySize(a);
    r->ports = xcalloc(n + 1, sizeof(*r->ports));
    const cJSON *p;
    cJSON_ArrayForEach(p, a) {
      r->ports[x->n_ports++] = (struct hutch_port){
          .host_addr = get_str(d, p, "host_addr"),
          .host_port = (unsigned short)get_num(d, p, "host_port", 0, 65535),
          .port = (unsigned short)get_num(d, p, "port", 1, 65535),
      };
    }
    x->ports = r->ports;
  } else if (a != NULL) {
    d->bad = d->bad ? d->bad : "ports";
  }
  x->devices = r->lists[6] = get_list(d, o, "devices");
  x->user = get_str(d, o, "user");
  struct user_spec user;
  if (user_spec_parse(x->user, &user, NULL) < 0)
    d->bad = d->bad ? d->bad : "user";
}

int config_record_decode(const cJSON *src, const char *id, struct config_record *r, hutch_error_t *err) {
  memset(r, 0, sizeof(*r));
  if (src == NULL) {
    hutch_error_set(err, ESTALE,
                    "sandbox %s has no record of its configuration (made by an older hutch, or not "
                    "by hutch create)",
                    id);
    return hutch_error_hint(err, "recreate it: `hutch rm %s`, then `hutch create`", id);
  }
  if (!cJSON_IsObject(src))
    return hutch_error_set(err, EINVAL, "sandbox %s: its recorded configuration is not an object", id);
  const cJSON *v = member(src, "v");
  if (!cJSON_IsNumber(v) || v->valuedouble != CONFIG_RECORD_VERSION) {
    hutch_error_set(err, ESTALE, "sandbox %s: its configuration was recorded by another version of hutch", id);
    return hutch_error_hint(err, "recreate it: `hutch rm %s`, then `hutch create`", id);
  }
  r->json = cJSON_Duplicate(src, true);
  const cJSON *o = r->json;
  struct decoder d = {.id = id, .err = err};
  struct hutch_sandbox_config *c = &r->cfg;
  c->rootfs = get_str(&d, o, "rootfs");
  c->rootfs_lowers = r->lists[0] = get_list(&d, o, "lowers");
  c->image = get_str(&d, o, "image");
  c->workdir = get_str(&d, o, "workdir");
  c->rootfs_subordinate_ids = get_bool(&d, o, "subordinate_ids");
  c->hostname = get_str(&d, o, "hostname");
  c->env = r->lists[1] = get_list(&d, o, "env");
  decode_binds(&d, member(o, "binds"), r);
  c->keep = get_bool(&d, o, "keep");
  c->proc_host_ro = get_bool(&d, o, "proc_host_ro");
  c->read_only_root = get_bool(&d, o, "read_only_root");
  c->build_caps = get_bool(&d, o, "build_caps");
  const char *overlay = get_str(&d, o, "overlay");
  if (overlay && strcmp(overlay, "fuse") == 0)
    c->overlay = HUTCH_OVERLAY_FUSE;
  else if (overlay && strcmp(overlay, "kernel") != 0)
    d.bad = d.bad ? d.bad : "overlay";
  c->store = get_str(&d, o, "store");
  decode_limits(&d, get_obj(&d, o, "limits"), &c->limits);
  decode_net(&d, get_obj(&d, o, "net"), r);
  c->die_with_creator = get_bool(&d, o, "die_with_creator");
  const cJSON *p = get_obj(&d, o, "policy");
  r->policy_path = p ? get_str(&d, p, "path") : NULL;
  const char *fp = p ? get_str(&d, p, "fingerprint") : NULL;
  if (fp == NULL || strlen(fp) != CONFIG_FINGERPRINT_LEN - 1 || strncmp(fp, "sha256:", 7) != 0)
    d.bad = d.bad ? d.bad : "policy.fingerprint";
  else
    memcpy(r->fingerprint, fp, CONFIG_FINGERPRINT_LEN);
  decode_extras(&d, o, r);
  if (c->rootfs == NULL || c->rootfs[0] != '/')
    d.bad = d.bad ? d.bad : "rootfs";
  if (r->policy_path == NULL || r->policy_path[0] != '/')
    d.bad = d.bad ? d.bad : "policy.path";
  if (d.bad) {
    config_record_clear(r);
    hutch_error_set(err, EINVAL, "sandbox %s: its recorded configuration is damaged (member \"%s\")", id, d.bad);
    return hutch_error_hint(err, "recreate it: `hutch rm %s`, then `hutch create`", id);
  }
  return 0;
}

void config_record_clear(struct config_record *r) {
  for (size_t i = 0; i < ARRAY_SIZE(r->lists); i++)
    free(r->lists[i]);
  free(r->binds);
  free(r->ports);
  cJSON_Delete(r->json);
  memset(r, 0, sizeof(*r));
}

int config_record_check_policy(const struct config_record *r, const char *fingerprint, const char *id,
                               hutch_error_t *err) {
  if (strcmp(r->fingerprint, fingerprint) == 0)
    return 0;
  hutch_error_set(err, ESTALE,
                  "sandbox %s: its policy (%s, its seccomp profile or --net-policy file) changed since it was made", id,
                  r->policy_path);
  return hutch_error_hint(err, "recreate it (`hutch rm %s`, then `hutch create`) to run under the policy as it is now",
                          id);
}
