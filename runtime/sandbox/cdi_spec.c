/* SPDX-License-Identifier: Apache-2.0 */
/* CDI specs (cdi_spec.h): the JSON of one spec into its devices and their
 * edits.  Only what hutch applies is read (deviceNodes, mounts, env) and
 * the hooks, which are listed and never run; a member of the wrong type is
 * an error naming it, so that a spec is never half understood. */
#include "config.h"

#include "cdi_spec.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <string.h>

#include "util.h"

static bool name_chars(const char *s, size_t n, const char *extra) {
  if (n == 0 || !isalnum((unsigned char)s[0]))
    return false;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && strchr(extra, s[i]) == NULL)
      return false;
  return true;
}

bool cdi_kind_valid(const char *kind) {
  const char *slash = strchr(kind, '/');
  if (slash == NULL || strlen(kind) > CDI_NAME_MAX)
    return false;
  return name_chars(kind, (size_t)(slash - kind), ".-") && name_chars(slash + 1, strlen(slash + 1), "_.-");
}

bool cdi_qualified_split(const char *qualified, size_t *kind_len, const char **name) {
  const char *eq = strchr(qualified, '=');
  if (eq == NULL || strlen(qualified) > 2 * CDI_NAME_MAX)
    return false;
  _cleanup_free_ char *kind = xstrndup(qualified, (size_t)(eq - qualified));
  if (!cdi_kind_valid(kind) || !name_chars(eq + 1, strlen(eq + 1), "_.:-") || strlen(eq + 1) > CDI_NAME_MAX)
    return false;
  *kind_len = (size_t)(eq - qualified);
  *name = eq + 1;
  return true;
}

/* Absolute, no control characters, no "." or ".." component, no "//" and
 * no trailing '/'. */
static bool path_clean(const char *p) {
  if (p[0] != '/' || p[1] == '\0' || strlen(p) >= 4096)
    return false;
  for (const char *c = p; *c; c++)
    if (iscntrl((unsigned char)*c))
      return false;
  for (const char *c = p; *c;) {
    const char *end = strchrnul(c + 1, '/');
    size_t n = (size_t)(end - c - 1);
    if (n == 0 || (n == 1 && c[1] == '.') || (n == 2 && c[1] == '.' && c[2] == '.'))
      return false;
    c = end;
  }
  return true;
}

bool cdi_dev_path_valid(const char *path) {
  return strncmp(path, "/dev/", 5) == 0 && path_clean(path);
}

bool cdi_device_name_valid(const char *device) {
  size_t kind_len;
  const char *name;
  return cdi_dev_path_valid(device) || cdi_qualified_split(device, &kind_len, &name);
}

static bool env_valid(const char *kv) {
  const char *eq = strchr(kv, '=');
  if (eq == NULL || eq == kv || !(isalpha((unsigned char)kv[0]) || kv[0] == '_'))
    return false;
  for (const char *c = kv; c < eq; c++)
    if (!isalnum((unsigned char)*c) && *c != '_')
      return false;
  for (const char *c = eq; *c; c++)
    if (iscntrl((unsigned char)*c))
      return false;
  return true;
}

struct parse_ctx {
  const char *source;
  hutch_error_t *err;
};

static int bad(struct parse_ctx *c, const char *where, const char *what) {
  hutch_error_set(c->err, EINVAL, "CDI spec %s: %s: %s", c->source, where, what);
  return -1;
}

/* A string member: NULL when absent; *ok false when of another type. */
static const char *member_str(const cJSON *o, const char *key, bool *ok) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  if (v == NULL || cJSON_IsNull(v))
    return NULL;
  if (!cJSON_IsString(v)) {
    *ok = false;
    return NULL;
  }
  return v->valuestring;
}

/* An array member, or NULL when absent; -1 when it is not an array or
 * longer than CDI_MAX_EDITS. */
static int member_array(struct parse_ctx *c, const cJSON *o, const char *key, const cJSON **out, int *n) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  *out = NULL;
  *n = 0;
  if (v == NULL || cJSON_IsNull(v))
    return 0;
  if (!cJSON_IsArray(v))
    return bad(c, key, "not an array");
  *n = cJSON_GetArraySize(v);
  if (*n > CDI_MAX_EDITS)
    return bad(c, key, "too many entries");
  *out = v;
  return 0;
}

/* Two string members of o (NULL when absent): false when o is no object
 * or either is of another type. */
static bool two_strs(const cJSON *o, const char *k1, const char **v1, const char *k2, const char **v2) {
  bool ok = cJSON_IsObject(o);
  *v1 = ok ? member_str(o, k1, &ok) : NULL;
  *v2 = ok ? member_str(o, k2, &ok) : NULL;
  return ok;
}

static int parse_node(struct parse_ctx *c, const cJSON *o, void *entry) {
  struct cdi_node *n = entry;
  const char *path, *host, *type;
  bool ok = two_strs(o, "path", &path, "hostPath", &host);
  type = ok ? member_str(o, "type", &ok) : NULL;
  if (!ok || path == NULL)
    return bad(c, "deviceNodes", "an entry is not an object with a string \"path\"");
  if (!path_clean(path) || (host && !path_clean(host)))
    return bad(c, "deviceNodes", "a path is not absolute and plain (no '.', '..' or control characters)");
  if (type && (strlen(type) != 1 || strchr("cbpu", type[0]) == NULL))
    return bad(c, "deviceNodes", "type is not \"c\", \"b\", \"u\" or \"p\"");
  const cJSON *major = cJSON_GetObjectItemCaseSensitive(o, "major");
  const cJSON *minor = cJSON_GetObjectItemCaseSensitive(o, "minor");
  if ((major && !cJSON_IsNumber(major)) || (minor && !cJSON_IsNumber(minor)))
    return bad(c, "deviceNodes", "major or minor is not a number");
  if ((major != NULL) != (minor != NULL))
    return bad(c, "deviceNodes", "major without minor, or minor without major");
  if (major &&
      (major->valuedouble < 0 || major->valuedouble > 4095 || minor->valuedouble < 0 || minor->valuedouble > 1048575 ||
       major->valuedouble != (int)major->valuedouble || minor->valuedouble != (int)minor->valuedouble))
    return bad(c, "deviceNodes", "major or minor out of range");
  n->path = xstrdup(path);
  n->host_path = xstrdup(host ? host : path);
  /* "u" is the kernel's other name for a character device. */
  n->type = type ? (type[0] == 'u' ? 'c' : type[0]) : 0;
  n->has_rdev = major != NULL;
  n->major = major ? (unsigned)major->valuedouble : 0;
  n->minor = minor ? (unsigned)minor->valuedouble : 0;
  return 0;
}

static int parse_mount(struct parse_ctx *c, const cJSON *o, void *entry) {
  struct cdi_mount *m = entry;
  const char *host, *dest;
  if (!two_strs(o, "hostPath", &host, "containerPath", &dest) || host == NULL || dest == NULL)
    return bad(c, "mounts", "an entry is not an object with string \"hostPath\" and \"containerPath\"");
  if (!path_clean(host) || !path_clean(dest))
    return bad(c, "mounts", "a path is not absolute and plain (no '.', '..' or control characters)");
  m->host_path = xstrdup(host);
  m->container_path = xstrdup(dest);
  return 0;
}

static int parse_hook(struct parse_ctx *c, const cJSON *o, void *entry) {
  struct cdi_hook *h = entry;
  const char *name, *path;
  if (!two_strs(o, "hookName", &name, "path", &path) || path == NULL)
    return bad(c, "hooks", "an entry is not an object with a string \"path\"");
  h->hook_name = xstrdup(name ? name : "?");
  h->path = xstrdup(path);
  return 0;
}

/* The array member key, each entry (of `size` bytes) parsed by fn into a
 * new array *out of *n entries. */
typedef int (*entry_parser)(struct parse_ctx *c, const cJSON *o, void *entry);
static int parse_list(struct parse_ctx *c, const cJSON *o, const char *key, size_t size, entry_parser fn, void **out,
                      size_t *n) {
  const cJSON *a, *v;
  int len;
  if (member_array(c, o, key, &a, &len) < 0)
    return -1;
  *out = xcalloc((size_t)len + 1, size);
  cJSON_ArrayForEach(v, a) {
    if (fn(c, v, (char *)*out + *n * size) < 0)
      return -1;
    (*n)++;
  }
  return 0;
}

static int parse_edits(struct parse_ctx *c, const cJSON *o, struct cdi_edits *e) {
  e->env = xcalloc(1, sizeof(char *));
  if (o == NULL || cJSON_IsNull(o))
    return 0;
  if (!cJSON_IsObject(o))
    return bad(c, "containerEdits", "not an object");
  const cJSON *a, *v;
  int n;
  if (member_array(c, o, "env", &a, &n) < 0)
    return -1;
  e->env = xrealloc(e->env, ((size_t)n + 1) * sizeof(char *));
  size_t i = 0;
  e->env[0] = NULL;
  cJSON_ArrayForEach(v, a) {
    if (!cJSON_IsString(v) || !env_valid(v->valuestring))
      return bad(c, "env", "an entry is not a string KEY=VALUE");
    e->env[i++] = xstrdup(v->valuestring);
    e->env[i] = NULL;
  }
  if (parse_list(c, o, "deviceNodes", sizeof(*e->nodes), parse_node, (void **)&e->nodes, &e->n_nodes) < 0 ||
      parse_list(c, o, "mounts", sizeof(*e->mounts), parse_mount, (void **)&e->mounts, &e->n_mounts) < 0 ||
      parse_list(c, o, "hooks", sizeof(*e->hooks), parse_hook, (void **)&e->hooks, &e->n_hooks) < 0)
    return -1;
  return 0;
}

static void edits_clear(struct cdi_edits *e) {
  cleanup_strvp(&e->env);
  for (size_t i = 0; i < e->n_nodes; i++) {
    free(e->nodes[i].path);
    free(e->nodes[i].host_path);
  }
  free(e->nodes);
  for (size_t i = 0; i < e->n_mounts; i++) {
    free(e->mounts[i].host_path);
    free(e->mounts[i].container_path);
  }
  free(e->mounts);
  for (size_t i = 0; i < e->n_hooks; i++) {
    free(e->hooks[i].hook_name);
    free(e->hooks[i].path);
  }
  free(e->hooks);
  *e = (struct cdi_edits){0};
}

void cdi_spec_clear(struct cdi_spec *s) {
  if (s == NULL)
    return;
  free(s->kind);
  edits_clear(&s->edits);
  for (size_t i = 0; i < s->n_devices; i++) {
    free(s->devices[i].name);
    edits_clear(&s->devices[i].edits);
  }
  free(s->devices);
  *s = (struct cdi_spec){0};
}

int cdi_spec_parse(const char *text, size_t len, const char *source, struct cdi_spec *out, hutch_error_t *err) {
  *out = (struct cdi_spec){0};
  struct parse_ctx c = {source, err};
  size_t skip = 0;
  while (skip < len && isspace((unsigned char)text[skip]))
    skip++;
  if (skip == len || text[skip] != '{') {
    hutch_error_set(err, EINVAL, "CDI spec %s: not JSON (a YAML spec?)", source);
    return hutch_error_hint(err, "hutch reads JSON specs only: generate one, such as `nvidia-ctk cdi generate "
                                 "--format=json --output=/etc/cdi/nvidia.json`");
  }
  if (len > CDI_SPEC_MAX_BYTES)
    return bad(&c, "the file", "larger than 1 MiB");
  cJSON *root = cJSON_ParseWithLength(text, len);
  if (root == NULL || !cJSON_IsObject(root)) {
    cJSON_Delete(root);
    return bad(&c, "the file", "not a valid JSON object");
  }
  int r = -1;
  bool ok = true;
  const char *kind = member_str(root, "kind", &ok);
  if (!ok || kind == NULL || !cdi_kind_valid(kind)) {
    bad(&c, "kind", "missing or not \"vendor/class\"");
    goto out;
  }
  out->kind = xstrdup(kind);
  if (parse_edits(&c, cJSON_GetObjectItemCaseSensitive(root, "containerEdits"), &out->edits) < 0)
    goto out;
  const cJSON *devices = cJSON_GetObjectItemCaseSensitive(root, "devices");
  if (!cJSON_IsArray(devices)) {
    bad(&c, "devices", "missing or not an array");
    goto out;
  }
  int n = cJSON_GetArraySize(devices);
  if (n > CDI_MAX_DEVICES) {
    bad(&c, "devices", "more than 256");
    goto out;
  }
  out->devices = xcalloc((size_t)n + 1, sizeof(*out->devices));
  const cJSON *d;
  cJSON_ArrayForEach(d, devices) {
    const char *name = cJSON_IsObject(d) ? member_str(d, "name", &ok) : NULL;
    size_t kl;
    const char *nm;
    _cleanup_free_ char *q = name ? xasprintf("%s=%s", kind, name) : NULL;
    if (!ok || name == NULL || !cdi_qualified_split(q, &kl, &nm) || strcmp(name, "all") == 0) {
      bad(&c, "devices", "an entry has no valid \"name\" (\"all\" is reserved)");
      goto out;
    }
    if (cdi_spec_device(out, name) != NULL) {
      bad(&c, name, "device named twice");
      goto out;
    }
    struct cdi_device *dev = &out->devices[out->n_devices++];
    dev->name = xstrdup(name);
    const cJSON *edits = cJSON_GetObjectItemCaseSensitive(d, "containerEdits");
    if (edits == NULL) {
      bad(&c, name, "no containerEdits");
      goto out;
    }
    if (parse_edits(&c, edits, &dev->edits) < 0)
      goto out;
  }
  r = 0;
out:
  if (r < 0)
    cdi_spec_clear(out);
  cJSON_Delete(root);
  return r;
}

const struct cdi_device *cdi_spec_device(const struct cdi_spec *s, const char *name) {
  for (size_t i = 0; i < s->n_devices; i++)
    if (s->devices[i].name && strcmp(s->devices[i].name, name) == 0)
      return &s->devices[i];
  return NULL;
}
