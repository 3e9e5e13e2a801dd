/* SPDX-License-Identifier: Apache-2.0 */
/* Devices of a sandbox, resolved on the host (cdi.h). */
#include "config.h"

#include "cdi.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cdi_spec.h"
#include "policy.h"
#include "util.h"

#define CDI_MAX_SPECS 256

static void strv_add(char ***v, size_t *n, char *s) {
  *v = xrealloc(*v, (*n + 2) * sizeof(char *));
  (*v)[(*n)++] = s;
  (*v)[*n] = NULL;
}

static bool strv_has(char **v, const char *s) {
  for (; v && *v; v++)
    if (strcmp(*v, s) == 0)
      return true;
  return false;
}

/* The specs of the host, in priority order, and why those that could not
 * be read were not (to say so when a device is not found). */
struct spec_set {
  struct cdi_spec *v;
  char **files;
  size_t n;
  hutch_error_t unread; /* the first failure */
  size_t n_unread;
};

static void spec_set_clear(struct spec_set *s) {
  for (size_t i = 0; i < s->n; i++) {
    cdi_spec_clear(&s->v[i]);
    free(s->files[i]);
  }
  free(s->v);
  free(s->files);
  hutch_error_free(&s->unread);
}

static void note_unread(struct spec_set *s, hutch_error_t *e) {
  s->n_unread++;
  if (s->unread == NULL)
    s->unread = steal_pointer(e);
  hutch_error_free(e);
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One spec file: a regular file of root's or the caller's that no one
 * else may write (a spec names what is bound into a sandbox). */
static int read_spec(int dirfd, const char *dir, const char *name, struct spec_set *set) {
  _cleanup_free_ char *path = xasprintf("%s/%s", dir, name);
  hutch_error_t e = NULL;
  if (ends_with(name, ".yaml") || ends_with(name, ".yml")) {
    hutch_error_set(&e, EINVAL, "CDI spec %s: YAML, which hutch does not read", path);
    hutch_error_hint(&e, "generate a JSON spec instead, such as `nvidia-ctk cdi generate --format=json "
                         "--output=/etc/cdi/nvidia.json`");
    note_unread(set, &e);
    return 0;
  }
  _cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) {
    hutch_error_sys(&e, "CDI spec %s", path);
    note_unread(set, &e);
    return 0;
  }
  if (!S_ISREG(st.st_mode) || (st.st_mode & 022) || (st.st_uid != 0 && st.st_uid != geteuid()) ||
      st.st_size > CDI_SPEC_MAX_BYTES) {
    hutch_error_set(&e, EPERM,
                    "CDI spec %s: not a regular file of root's or yours, writable by you alone, "
                    "of at most 1 MiB",
                    path);
    note_unread(set, &e);
    return 0;
  }
  _cleanup_free_ char *text = xmalloc((size_t)st.st_size + 1);
  ssize_t len = read_all(fd, text, (size_t)st.st_size);
  if (len < 0) {
    hutch_error_sys(&e, "CDI spec %s: read", path);
    note_unread(set, &e);
    return 0;
  }
  struct cdi_spec spec;
  if (cdi_spec_parse(text, (size_t)len, path, &spec, &e) < 0) {
    note_unread(set, &e);
    return 0;
  }
  set->v = xrealloc(set->v, (set->n + 1) * sizeof(*set->v));
  set->files = xrealloc(set->files, (set->n + 1) * sizeof(char *));
  set->v[set->n] = spec;
  set->files[set->n++] = steal_pointer(&path);
  return 0;
}

static int read_dir(const char *dir, struct spec_set *set, hutch_error_t *err) {
  _cleanup_dir_ DIR *d = opendir(dir);
  if (d == NULL)
    return errno == ENOENT || errno == ENOTDIR ? 0 : hutch_error_sys(err, "CDI spec directory %s", dir);
  _cleanup_strv_ char **names = NULL;
  size_t n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' ||
        !(ends_with(e->d_name, ".json") || ends_with(e->d_name, ".yaml") || ends_with(e->d_name, ".yml")))
      continue;
    if (n + set->n >= CDI_MAX_SPECS)
      return hutch_error_set(err, E2BIG, "CDI spec directory %s: more than %d specs", dir, CDI_MAX_SPECS);
    strv_add(&names, &n, xstrdup(e->d_name));
  }
  if (n)
    qsort(names, n, sizeof(char *), compare_names);
  for (size_t i = 0; i < n; i++)
    read_spec(dirfd(d), dir, names[i], set);
  return 0;
}

static int read_specs(struct spec_set *set, hutch_error_t *err) {
  const char *env = getenv("HUTCH_CDI_DIRS");
  _cleanup_free_ char *dirs = xstrdup(env && *env ? env : "/var/run/cdi:/etc/cdi");
  char *cursor = dirs, *dir;
  while ((dir = strsep(&cursor, ":")) != NULL)
    if (*dir && read_dir(dir, set, err) < 0)
      return -1;
  return 0;
}

struct resolver {
  const struct hutch_sandbox_config *cfg;
  struct cdi_resolved *out;
  const char *device; /* the one being resolved, for messages */
  size_t n_names, n_env, n_text, n_hooks;
  char **lib_dirs;
  size_t n_lib_dirs;
};

/* Where a node may go: under /dev, not where hutch's own entries are. */
static bool dest_allowed(const char *dest) {
  static const char *const taken[] = {"/dev/pts",    "/dev/shm",    "/dev/fd",   "/dev/stdin",
                                      "/dev/stdout", "/dev/stderr", "/dev/ptmx", "/dev/.hutch-etc"};
  if (!cdi_dev_path_valid(dest))
    return false;
  for (size_t i = 0; i < ARRAY_SIZE(taken); i++) {
    size_t n = strlen(taken[i]);
    if (strncmp(dest, taken[i], n) == 0 && (dest[n] == '\0' || dest[n] == '/'))
      return false;
  }
  return true;
}

static int add_node(struct resolver *r, const char *host, const char *dest, char type, bool has_rdev, unsigned major,
                    unsigned minor, hutch_error_t *err) {
  if (!dest_allowed(dest)) {
    hutch_error_set(err, EPERM, "device %s: %s is not a place for a device node", r->device, dest);
    return hutch_error_hint(err, "a node goes under /dev, not on /dev/pts, /dev/shm, /dev/fd, /dev/std* or "
                                 "/dev/ptmx");
  }
  if (type == 'b' || type == 'p') {
    hutch_error_set(err, EPERM, "device %s: %s is a %s", r->device, host, type == 'b' ? "block device" : "FIFO");
    return hutch_error_hint(err, "hutch gives sandboxes character devices only");
  }
  struct stat st;
  if (lstat(host, &st) < 0)
    return hutch_error_sys(err, "device %s: %s", r->device, host);
  if (!S_ISCHR(st.st_mode)) {
    const char *what = S_ISBLK(st.st_mode)   ? "a block device"
                       : S_ISLNK(st.st_mode) ? "a symlink (name the node itself)"
                                             : "not a device";
    hutch_error_set(err, EPERM, "device %s: %s is %s", r->device, host, what);
    return hutch_error_hint(err, "hutch gives sandboxes character devices only");
  }
  if (has_rdev && st.st_rdev != makedev(major, minor)) {
    hutch_error_set(err, EPERM, "device %s: %s is device %u:%u, the spec says %u:%u", r->device, host,
                    major(st.st_rdev), minor(st.st_rdev), major, minor);
    return hutch_error_hint(err, "the spec is out of date or the node was replaced: generate the spec again");
  }
  struct device_plan *p = &r->out->plan;
  for (size_t i = 0; i < p->n_nodes; i++) {
    if (strcmp(p->nodes[i].dest, dest) != 0)
      continue;
    if (p->nodes[i].rdev == st.st_rdev)
      return 0; /* named by two devices (a spec's shared edits and "all") */
    return hutch_error_set(err, EEXIST, "device %s: %s is given two different nodes", r->device, dest);
  }
  p->nodes = xrealloc(p->nodes, (p->n_nodes + 1) * sizeof(*p->nodes));
  p->nodes[p->n_nodes++] = (struct device_node){
      .host_path = xstrdup(host),
      .dest = xstrdup(dest),
      .rdev = st.st_rdev,
      .id = {st.st_dev, st.st_ino},
      .fd = -1,
  };
  strv_add(&r->out->nodes_text, &r->n_text, xasprintf("%s -> %s", host, dest));
  return 0;
}

static int add_mount(struct resolver *r, const struct cdi_mount *m, hutch_error_t *err) {
  const struct hutch_sandbox_config *cfg = r->cfg;
  if (hutch_check_host_path(m->host_path, false, cfg->store, cfg->state_dir, cfg->policy, err) < 0)
    return hutch_error_wrap(err, "device %s: mount %s", r->device, m->host_path);
  struct cdi_resolved *o = r->out;
  for (size_t i = 0; i < o->n_mounts; i++)
    if (strcmp(o->mounts[i].dest, m->container_path) == 0)
      return strcmp(o->mounts[i].source, m->host_path) == 0
                 ? 0
                 : hutch_error_set(err, EEXIST, "device %s: %s is mounted from two places", r->device,
                                   m->container_path);
  o->mounts = xrealloc(o->mounts, (o->n_mounts + 1) * sizeof(*o->mounts));
  o->mounts[o->n_mounts++] = (struct hutch_bind){xstrdup(m->host_path), xstrdup(m->container_path), true};
  /* A library: its directory goes to LD_LIBRARY_PATH and the sandbox's
   * ld.so configuration, instead of the spec's hook updating a cache. */
  const char *base = strrchr(m->container_path, '/') + 1;
  if (strstr(base, ".so") != NULL) {
    char *dir = xstrndup(m->container_path, (size_t)(base - 1 - m->container_path));
    if (*dir == '\0' || strv_has(r->lib_dirs, dir))
      free(dir);
    else
      strv_add(&r->lib_dirs, &r->n_lib_dirs, dir);
  }
  return 0;
}

static int apply_edits(struct resolver *r, const struct cdi_edits *e, hutch_error_t *err) {
  for (size_t i = 0; i < e->n_nodes; i++) {
    const struct cdi_node *n = &e->nodes[i];
    if (add_node(r, n->host_path, n->path, n->type, n->has_rdev, n->major, n->minor, err) < 0)
      return -1;
  }
  for (size_t i = 0; i < e->n_mounts; i++)
    if (add_mount(r, &e->mounts[i], err) < 0)
      return -1;
  for (char **kv = e->env; kv && *kv; kv++)
    strv_add(&r->out->env, &r->n_env, xstrdup(*kv));
  for (size_t i = 0; i < e->n_hooks; i++) {
    char *h = xasprintf("%s %s", e->hooks[i].hook_name, e->hooks[i].path);
    if (strv_has(r->out->hooks, h))
      free(h);
    else
      strv_add(&r->out->hooks, &r->n_hooks, h);
  }
  return 0;
}

static int resolve_cdi(struct resolver *r, struct spec_set *set, hutch_error_t *err) {
  size_t kind_len;
  const char *name;
  cdi_qualified_split(r->device, &kind_len, &name);
  bool all = strcmp(name, "all") == 0, found = false;
  for (size_t i = 0; i < set->n; i++) {
    const struct cdi_spec *s = &set->v[i];
    if (strlen(s->kind) != kind_len || strncmp(s->kind, r->device, kind_len) != 0)
      continue;
    const struct cdi_device *d = all ? NULL : cdi_spec_device(s, name);
    if (!all && d == NULL)
      continue;
    if (apply_edits(r, &s->edits, err) < 0)
      return hutch_error_wrap(err, "%s", set->files[i]);
    for (size_t j = 0; j < s->n_devices; j++)
      if ((all || &s->devices[j] == d) && apply_edits(r, &s->devices[j].edits, err) < 0)
        return hutch_error_wrap(err, "%s", set->files[i]);
    found = true;
    if (!all)
      break; /* the first spec that has it: /var/run/cdi before /etc/cdi */
  }
  if (found)
    return 0;
  if (set->unread) {
    hutch_error_set(err, ENOENT, "device %s: in no CDI spec hutch could read (%zu could not be read; the first: %s)",
                    r->device, set->n_unread, set->unread->msg);
    return hutch_error_hint(err, "%s",
                            set->unread->hint ? set->unread->hint
                                              : "`hutch exec --help` names the spec "
                                                "directories");
  }
  hutch_error_set(err, ENOENT, "device %s: in no CDI spec (%zu read)", r->device, set->n);
  return hutch_error_hint(err, "the specs are read from /var/run/cdi and /etc/cdi ($HUTCH_CDI_DIRS instead)");
}

static int merge_into_config(const struct hutch_sandbox_config *cfg, struct resolver *r,
                             struct hutch_sandbox_config *cfg_out) {
  struct cdi_resolved *o = r->out;
  if (r->n_lib_dirs) {
    size_t len = 0, cap = 0;
    char *conf = NULL, *path = NULL;
    size_t plen = 0, pcap = 0;
    for (size_t i = 0; i < r->n_lib_dirs; i++) {
      text_appendf(&conf, &len, &cap, "%s\n", r->lib_dirs[i]);
      text_appendf(&path, &plen, &pcap, "%s%s", i ? ":" : "", r->lib_dirs[i]);
    }
    o->plan.ld_conf = conf;
    /* The spec's own LD_LIBRARY_PATH, if any, after the libraries' dirs. */
    for (char **kv = o->env; kv && *kv; kv++)
      if (strncmp(*kv, "LD_LIBRARY_PATH=", 16) == 0 && (*kv)[16])
        text_appendf(&path, &plen, &pcap, ":%s", *kv + 16);
    strv_add(&o->env, &r->n_env, xasprintf("LD_LIBRARY_PATH=%s", path));
    free(path);
  }
  *cfg_out = *cfg;
  o->binds = xcalloc(cfg->n_binds + o->n_mounts + 1, sizeof(*o->binds));
  for (size_t i = 0; i < cfg->n_binds; i++)
    o->binds[i] = cfg->binds[i];
  for (size_t i = 0; i < o->n_mounts; i++)
    o->binds[cfg->n_binds + i] = o->mounts[i];
  cfg_out->binds = o->binds;
  cfg_out->n_binds = cfg->n_binds + o->n_mounts;
  /* The caller's env after the devices', so that --env wins. */
  size_t n = 0;
  for (char **kv = o->env; kv && *kv; kv++)
    strv_add(&o->all_env, &n, xstrdup(*kv));
  for (const char *const *kv = cfg->env; kv && *kv; kv++)
    strv_add(&o->all_env, &n, xstrdup(*kv));
  cfg_out->env = (const char *const *)o->all_env;
  return 0;
}

int cdi_resolve(const struct hutch_sandbox_config *cfg, const char *const *devices, struct cdi_resolved *out,
                struct hutch_sandbox_config *cfg_out, hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  *cfg_out = *cfg;
  if (devices == NULL || devices[0] == NULL || cfg->policy == NULL)
    return 0;
  const struct policy_devices *allow = &cfg->policy->settings.devices;
  struct resolver r = {.cfg = cfg, .out = out};
  struct spec_set set = {0};
  int rc = -1;
  for (const char *const *d = devices; *d; d++) {
    r.device = *d;
    if (!policy_device_allowed(allow, *d)) {
      hutch_error_set(err, EPERM, "device %s: the policy %s does not allow it", *d, cfg->policy->path);
      hutch_error_hint(err, "devices are allowed by a policy's [devices] allow = yes, or one line for each kind, "
                            "device or node (hutch-policy(5)); a sandbox's GPU memory and compute are not "
                            "isolated from others' (hutch-security(7))");
      goto out;
    }
    if (strv_has(out->names, *d))
      continue;
    strv_add(&out->names, &r.n_names, xstrdup(*d));
    size_t kl;
    const char *nm;
    if (cdi_dev_path_valid(*d)) {
      if (add_node(&r, *d, *d, 0, false, 0, 0, err) < 0)
        goto out;
      continue;
    }
    if (!cdi_qualified_split(*d, &kl, &nm)) {
      hutch_error_set(err, EINVAL, "device %s: neither a CDI name (vendor/class=name) nor /dev/NODE", *d);
      goto out;
    }
    if (set.n == 0 && set.n_unread == 0 && read_specs(&set, err) < 0)
      goto out;
    if (resolve_cdi(&r, &set, err) < 0)
      goto out;
  }
  if (out->hooks)
    for (char **h = out->hooks; *h; h++)
      hutch_notice("CDI hook %s not run: hutch runs no host program for a sandbox", *h);
  merge_into_config(cfg, &r, cfg_out);
  rc = 0;
out:
  cleanup_strvp(&r.lib_dirs);
  spec_set_clear(&set);
  if (rc < 0)
    cdi_resolved_clear(out);
  return rc;
}

void cdi_resolved_clear(struct cdi_resolved *r) {
  for (size_t i = 0; i < r->plan.n_nodes; i++) {
    free(r->plan.nodes[i].host_path);
    free(r->plan.nodes[i].dest);
    if (r->plan.nodes[i].fd >= 0)
      close(r->plan.nodes[i].fd);
  }
  free(r->plan.nodes);
  free(r->plan.ld_conf);
  cleanup_strvp(&r->names);
  cleanup_strvp(&r->env);
  for (size_t i = 0; i < r->n_mounts; i++) {
    free((char *)r->mounts[i].source);
    free((char *)r->mounts[i].dest);
  }
  free(r->mounts);
  cleanup_strvp(&r->nodes_text);
  cleanup_strvp(&r->hooks);
  free(r->binds);
  cleanup_strvp(&r->all_env);
  memset(r, 0, sizeof(*r));
}
