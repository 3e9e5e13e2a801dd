/* SPDX-License-Identifier: Apache-2.0 */
/* Loading policies, and their compiled seccomp programs through the cache.
 *
 * A sandbox start calls hutch_policy_load() then policy_seccomp_program().
 * The load reads two small files and hashes one; with a warm cache the
 * program is one more file read: no JSON parse, no libseccomp compile. */
#include "config.h"

#include "policy.h"

#include <cJSON.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "audit.h"
#include "paths.h"
#include "sha256.h"
#include "util.h"

/* Bumped whenever the compiler's output for the same profile or the cache
 * entry's form changes, so that entries written by an older hutch are not
 * read (2: entries carry a MAC; 3: programs start with the prefix of
 * seccomp_prefix.c). */
#define CACHE_FORMAT "hutch-seccomp-bpf-3"

static void compute_digest(const char *json, size_t json_len, char hex[65]) {
  static const char sep = '\0';
  const char *parts[] = {seccomp_native_arch(), seccomp_library_version(), CACHE_FORMAT};
  struct sha256_ctx ctx;
  sha256_init(&ctx);
  sha256_update(&ctx, json, json_len);
  for (size_t i = 0; i < ARRAY_SIZE(parts); i++) {
    sha256_update(&ctx, &sep, 1);
    sha256_update(&ctx, parts[i], strlen(parts[i]));
  }
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_final(&ctx, d);
  sha256_hex(d, hex);
}

/* The JSON text lives in an anonymous mapping of its own, not on the heap:
 * it is needed only to hash and compile, and a freed heap chunk would stay
 * resident in every long-lived sandbox's init, which is a fork of this
 * process (the text is the largest object there, about 21 KB).  The mapping
 * reserves the size limit but only the pages read into are ever touched,
 * and it is zero-filled, so the text is NUL-terminated. */
static void unmap_json(char **text);
static void release_seccomp_json(struct hutch_policy *p) {
  unmap_json(&p->seccomp_json);
  p->seccomp_json = NULL;
  p->seccomp_json_len = 0;
}

/* Returns 0, or -1 with errno (EFBIG: over POLICY_SECCOMP_MAX_BYTES). */
static int read_seccomp_json(const char *path, char **out, size_t *len) {
  _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  size_t cap = POLICY_SECCOMP_MAX_BYTES + 1u;
  char *buf = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (buf == MAP_FAILED)
    return -1;
  /* Read at most the limit: one byte more than the limit says too large. */
  ssize_t got = read_all(fd, buf, POLICY_SECCOMP_MAX_BYTES);
  char extra;
  if (got >= 0 && (size_t)got == POLICY_SECCOMP_MAX_BYTES && read_all(fd, &extra, 1) == 1) {
    errno = EFBIG;
    got = -1;
  }
  if (got < 0) {
    int saved = errno;
    munmap(buf, cap);
    errno = saved;
    return -1;
  }
  *out = buf;
  *len = (size_t)got;
  return 0;
}

static void unmap_json(char **text) {
  if (*text != NULL)
    munmap(*text, POLICY_SECCOMP_MAX_BYTES + 1u);
}

/* The JSON the digest covers: the policy's copy, or, once the start path
 * has released it, read again into *reread (unmap_json() it) and checked
 * against the digest: a file changed since the load is refused, not
 * compiled under the old digest. */
static int seccomp_json_text(const struct hutch_policy *p, const char **text, size_t *len, char **reread,
                             hutch_error_t *err) {
  *reread = NULL;
  if (p->seccomp_json != NULL) {
    *text = p->seccomp_json;
    *len = p->seccomp_json_len;
    return 0;
  }
  if (read_seccomp_json(p->seccomp_path, reread, len) < 0)
    return hutch_error_sys(err, "policy %s: seccomp profile %s: read", p->path, p->seccomp_path);
  char digest[65];
  compute_digest(*reread, *len, digest);
  if (strcmp(digest, p->digest) != 0) {
    hutch_error_set(err, 0, "policy %s: seccomp profile %s changed after the policy was loaded", p->path,
                    p->seccomp_path);
    return hutch_error_hint(err, "run the command again");
  }
  *text = *reread;
  return 0;
}

void hutch_policy_free(struct hutch_policy *p) {
  if (p == NULL)
    return;
  free(p->path);
  free(p->seccomp_path);
  policy_settings_clear(&p->settings);
  release_seccomp_json(p);
  free(p->bpf);
  free(p);
}

static void policy_freep(struct hutch_policy **p) {
  hutch_policy_free(*p);
}

const char *hutch_policy_path(const struct hutch_policy *p) {
  return p->path;
}

bool hutch_policy_run_proxy(const struct hutch_policy *p) {
  return p->settings.network.run_proxy;
}

static char *resolve_beside(const char *file, const char *rel) {
  if (rel[0] == '/')
    return xstrdup(rel);
  const char *slash = strrchr(file, '/');
  if (slash == NULL)
    return xstrdup(rel);
  return xasprintf("%.*s/%s", (int)(slash - file), file, rel);
}

int hutch_policy_load(const char *path, struct hutch_policy **out, hutch_error_t *err) {
  _cleanup_free_ char *default_path = NULL;
  if (path == NULL)
    path = default_path = paths_default_policy();
  size_t len;
  _cleanup_free_ char *text = read_file_at(AT_FDCWD, path, POLICY_MAX_BYTES, &len);
  if (text == NULL) {
    if (errno == EFBIG)
      return hutch_error_set(err, EFBIG, "policy %s: larger than %u bytes", path, POLICY_MAX_BYTES);
    hutch_error_sys(err, "policy %s: read", path);
    if (errno == ENOENT && default_path != NULL)
      hutch_error_hint(err, "install hutch's policies, or name a policy with --policy FILE or $HUTCH_POLICY");
    return -1;
  }
  if (strlen(text) != len)
    return hutch_error_set(err, 0, "policy %s: contains a NUL byte: not a policy file", path);

  _cleanup_(policy_freep) struct hutch_policy *p = xcalloc(1, sizeof(*p));
  p->path = xstrdup(path);
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_buffer(text, len, d);
  sha256_hex(d, p->file_digest);
  if (policy_parse(text, path, &p->settings, err) < 0)
    return -1;

  p->seccomp_path = resolve_beside(path, p->settings.seccomp);
  if (read_seccomp_json(p->seccomp_path, &p->seccomp_json, &p->seccomp_json_len) < 0) {
    if (errno == EFBIG)
      return hutch_error_set(err, EFBIG, "%s:%u: seccomp profile %s: larger than %u bytes", path,
                             p->settings.seccomp_line, p->seccomp_path, POLICY_SECCOMP_MAX_BYTES);
    hutch_error_sys(err, "%s:%u: seccomp profile %s: read", path, p->settings.seccomp_line, p->seccomp_path);
    if (p->settings.seccomp[0] != '/')
      hutch_error_hint(err, "a relative seccomp path is resolved from the policy file's directory");
    return -1;
  }
  compute_digest(p->seccomp_json, p->seccomp_json_len, p->digest);
  *out = steal_pointer(&p);
  return 0;
}

char *policy_cache_file(const struct hutch_policy *p) {
  _cleanup_free_ char *cache = paths_default_cache();
  return xasprintf("%s/seccomp/%s.bpf", cache, p->digest);
}

/* A cache entry is MAC || program, the MAC being HMAC-SHA256 under the
 * user's key over the policy's digest and the program: the cache directory
 * is in the user's home, where a sandbox with a bind may write, but the key
 * is in the state directory, which no bind reaches, so only hutch can make
 * an entry that verifies, and only for the policy it was compiled from. */
#define CACHE_MAC_SIZE SHA256_DIGEST_SIZE

static void cache_mac(const uint8_t key[POLICY_CACHE_KEY_SIZE], const struct hutch_policy *p, const void *bpf,
                      size_t len, uint8_t mac[CACHE_MAC_SIZE]) {
  struct hmac_sha256_ctx ctx;
  hmac_sha256_init(&ctx, key, POLICY_CACHE_KEY_SIZE);
  hmac_sha256_update(&ctx, p->digest, strlen(p->digest));
  hmac_sha256_update(&ctx, bpf, len);
  hmac_sha256_final(&ctx, mac);
}

/* A cached program is used only when it is ours (or root's), not writable
 * by others, of a plausible size, authenticated by its MAC and well-formed;
 * anything else is recompiled.  Returns 0 and the program, or -1 (with a
 * debug note). */
static int read_cached(const char *file, const struct hutch_policy *p, const uint8_t key[POLICY_CACHE_KEY_SIZE],
                       void **bpf, size_t *len) {
  _cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    if (errno != ENOENT) {
      _cleanup_free_ char *why = hutch_errno_format(errno, "seccomp cache %s", file);
      hutch_debug("%s: recompiling", why);
    }
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    hutch_debug("seccomp cache %s: not a regular file: recompiling", file);
    return -1;
  }
  if ((st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & 0022) != 0) {
    hutch_debug("seccomp cache %s: owned by uid %d or writable by others: not trusted, recompiling", file,
                (int)st.st_uid);
    return -1;
  }
  size_t size = (size_t)st.st_size;
  if (size <= CACHE_MAC_SIZE || (size - CACHE_MAC_SIZE) % SECCOMP_INSN_SIZE != 0 ||
      size - CACHE_MAC_SIZE > (size_t)SECCOMP_MAX_INSNS * SECCOMP_INSN_SIZE) {
    hutch_debug("seccomp cache %s: %zu bytes is not an entry: recompiling", file, size);
    return -1;
  }
  _cleanup_free_ uint8_t *buf = xmalloc(size);
  if (read_all(fd, buf, size) != (ssize_t)size) {
    hutch_debug("seccomp cache %s: unreadable: recompiling", file);
    return -1;
  }
  size_t prog_len = size - CACHE_MAC_SIZE;
  uint8_t mac[CACHE_MAC_SIZE];
  cache_mac(key, p, buf + CACHE_MAC_SIZE, prog_len, mac);
  if (!sha256_digest_equal(mac, buf)) {
    hutch_debug("seccomp cache %s: not made by hutch under this user's key: recompiling", file);
    return -1;
  }
  if (!seccomp_program_valid(buf + CACHE_MAC_SIZE, prog_len)) {
    hutch_debug("seccomp cache %s: malformed: recompiling", file);
    return -1;
  }
  void *prog = xmalloc(prog_len);
  memcpy(prog, buf + CACHE_MAC_SIZE, prog_len);
  *bpf = prog;
  *len = prog_len;
  return 0;
}

static void write_cached(const char *file, const struct hutch_policy *p, const uint8_t key[POLICY_CACHE_KEY_SIZE]) {
  size_t size = CACHE_MAC_SIZE + p->bpf_len;
  _cleanup_free_ uint8_t *buf = xmalloc(size);
  cache_mac(key, p, p->bpf, p->bpf_len, buf);
  memcpy(buf + CACHE_MAC_SIZE, p->bpf, p->bpf_len);
  /* A cache that cannot be written (read-only home, full disk) only
   * costs the next start a compile. */
  _cleanup_free_ char *dir = xstrndup(file, (size_t)(strrchr(file, '/') - file));
  const char *failed = mkdir_p(dir, 0700) < 0 ? dir : write_file_atomic(file, buf, size, 0644) < 0 ? file : NULL;
  if (failed) {
    _cleanup_free_ char *why = hutch_errno_format(errno, "seccomp cache %s", failed);
    hutch_debug("%s: program kept in memory", why);
  }
}

static int compile_policy(const struct hutch_policy *p, void **bpf, size_t *len, hutch_error_t *err) {
  struct seccomp_profile *profile = NULL;
  const char *text;
  size_t text_len;
  __attribute__((cleanup(unmap_json))) char *reread = NULL;
  if (seccomp_json_text(p, &text, &text_len, &reread, err) < 0)
    return -1;
  if (seccomp_profile_parse(text, text_len, p->seccomp_path, &profile, err) < 0)
    return hutch_error_wrap(err, "policy %s", p->path);
  int r = seccomp_profile_compile(profile, bpf, len, err);
  seccomp_profile_free(profile);
  if (r < 0)
    return hutch_error_wrap(err, "policy %s", p->path);
  return 0;
}

int policy_seccomp_program(struct hutch_policy *p, const uint8_t *cache_key, const void **bpf, size_t *len,
                           hutch_error_t *err) {
  if (p->bpf == NULL) {
    _cleanup_free_ char *file = policy_cache_file(p);
    if (cache_key == NULL || read_cached(file, p, cache_key, &p->bpf, &p->bpf_len) < 0) {
      if (compile_policy(p, &p->bpf, &p->bpf_len, err) < 0)
        return -1;
      if (cache_key != NULL)
        write_cached(file, p, cache_key);
    }
    /* The program is all a sandbox needs from here on. */
    release_seccomp_json(p);
  }
  *bpf = p->bpf;
  *len = p->bpf_len;
  return 0;
}

/* ---- hutch policy show ---------------------------------------------------- */

/* What the sandbox code does whatever the policy says (runtime/sandbox/sandbox.c,
 * contain/caps.c, contain/payload.c); listed so that a reader sees the whole picture. */
static const char *const namespaces[] = {"user", "mount", "pid", "net", "ipc", "uts", "cgroup"};

int policy_import_budget(const char *path, struct import_budget *out, hutch_error_t *err) {
  _cleanup_(policy_freep) struct hutch_policy *p = NULL;
  if (hutch_policy_load(path, &p, err) < 0)
    return hutch_error_wrap(err, "image import: its limits");
  limits_import_budget(&p->settings.limits, p->path, out);
  return 0;
}

/* Parse the profile and compile it too: a profile libseccomp refuses must
 * not look fine in a description. */
static int parse_profile(const struct hutch_policy *p, struct seccomp_profile **profile, void **bpf, size_t *bpf_len,
                         hutch_error_t *err) {
  const char *text;
  size_t text_len;
  __attribute__((cleanup(unmap_json))) char *reread = NULL;
  if (seccomp_json_text(p, &text, &text_len, &reread, err) < 0)
    return -1;
  if (seccomp_profile_parse(text, text_len, p->seccomp_path, profile, err) < 0 ||
      seccomp_profile_compile(*profile, bpf, bpf_len, err) < 0)
    return hutch_error_wrap(err, "policy %s", p->path);
  return 0;
}

static void profile_freep(struct seccomp_profile **p) {
  seccomp_profile_free(*p);
}

/* [limits] as a sandbox started under this policy with no limit options gets them. */
static void limit_text(uint64_t v, bool size, char *buf, size_t len) {
  if (v == 0)
    snprintf(buf, len, "not set");
  else if (v == LIMITS_UNLIMITED)
    snprintf(buf, len, "max (no limit)");
  else if (size)
    hutch_format_size(v, buf, len);
  else
    snprintf(buf, len, "%llu", (unsigned long long)v);
}

/* What [limits] memory means where the sandbox has no memory cgroup
 * (memwatch.h, init.c: watch_memory). */
static const char memory_without_cgroup[] =
    "RLIMIT_DATA (the private memory a process may write) per process, and init's watchdog over the whole sandbox: it "
    "sums the resident memory "
    "(RssAnon + RssShmem) of every process in it, with the kernel memory no process maps (memfds, System V "
    "segments, messages and semaphores, the socket buffers of its network namespace, pipes, epoll watches, threads, "
    "open files), every 20 ms while any runs and sooner near the limit, and kills them all past the limit (reported as "
    "out "
    "of "
    "memory). Margin: what the sandbox allocates in one interval, at most its allocation rate x 20 ms (2.7 "
    "GiB/s per CPU measured: 110 MiB on 2 CPUs). tmpfs pages ([limits] disk) come on top";

/* What [limits] disk bounds, mode by mode: see sandbox.c and contain.c. */
static const char disk_in_effect[] =
    "one tmpfs of this size per sandbox holds its writable layer, /tmp and /dev/shm (one-shot and "
    "long-lived sandboxes; image builds and a one-shot --keep copy the layer out at the end); with create "
    "--keep and --overlay fuse the layer is on the host's disk, not bounded (\"disk unbounded\"), /tmp and "
    "/dev/shm still are. tmpfs pages count as the sandbox's "
    "memory where it has a memory cgroup; without one they come on top of [limits] memory";

static void describe_limits(const struct hutch_policy *p, const char *on_host, FILE *out) {
  bool effective = on_host != NULL;
  const struct policy_limits *l = &p->settings.limits;
  char v[64];
  fprintf(out, "limits:\n");
  limit_text(l->memory, true, v, sizeof(v));
  fprintf(out, "  memory: %s%s\n", v, l->memory && l->memory != LIMITS_UNLIMITED ? " (memory.max; no swap)" : "");
  if (l->cpus_milli == 0 || l->cpus_milli == LIMITS_UNLIMITED) {
    limit_text(l->cpus_milli, false, v, sizeof(v));
    fprintf(out, "  cpus: %s\n", v);
  } else {
    uint64_t q, per;
    limits_cpu_max((double)l->cpus_milli / 1000.0, &q, &per);
    fprintf(out, "  cpus: %g (cpu.max %llu %llu)\n", (double)l->cpus_milli / 1000.0, (unsigned long long)q,
            (unsigned long long)per);
  }
  limit_text(l->pids, false, v, sizeof(v));
  fprintf(out, "  pids: %s\n", v);
  limit_text(l->io_weight, false, v, sizeof(v));
  fprintf(out, "  io_weight: %s\n", v);
  fprintf(out, "  fallback: %s\n", l->fallback == LIMITS_FALLBACK_REFUSE ? "refuse" : "rlimits");
  fprintf(out, "  required: %s\n", l->required ? "yes" : "no");
  limit_text(limits_or_default(l->disk, LIMITS_DEFAULT_DISK), true, v, sizeof(v));
  fprintf(out, "  disk: %s%s\n", v, l->disk ? "" : " (default)");
  if (effective)
    fprintf(out, "    in effect: %s\n", disk_in_effect);
  if (effective && l->memory && l->memory != LIMITS_UNLIMITED)
    fprintf(out, "  memory without a cgroup: %s\n", memory_without_cgroup);
  char pools[256];
  limits_pools_text(pools, sizeof(pools));
  fprintf(out, "  kernel pools per sandbox: %s\n", pools);
  limit_text(limits_or_default(l->image_size, LIMITS_DEFAULT_IMAGE_SIZE), true, v, sizeof(v));
  fprintf(out, "  image_size: %s%s\n", v, l->image_size ? "" : " (default)");
  limit_text(limits_or_default(l->image_entries, LIMITS_DEFAULT_IMAGE_ENTRIES), false, v, sizeof(v));
  fprintf(out, "  image_entries: %s%s\n", v, l->image_entries ? "" : " (default)");
  limit_text(l->audit_log ? l->audit_log : AUDIT_DEFAULT_CAP, true, v, sizeof(v));
  fprintf(out, "  audit_log: %s%s\n", v, l->audit_log ? "" : " (default)");
  if (effective)
    fprintf(out, "  on this host: %s\n", on_host);
}

static void describe_network_json(const struct net_policy *n, bool effective, cJSON *root) {
  cJSON *o = cJSON_AddObjectToObject(root, "network");
  cJSON *allow = cJSON_AddArrayToObject(o, "allow");
  for (size_t i = 0; i < n->n_allow; i++) {
    char *e =
        n->allow[i].port ? xasprintf("%s:%u", n->allow[i].pattern, n->allow[i].port) : xstrdup(n->allow[i].pattern);
    cJSON_AddItemToArray(allow, cJSON_CreateString(e));
    free(e);
  }
  cJSON *ports = cJSON_AddArrayToObject(o, "ports");
  for (size_t i = 0; i < n->n_ports; i++)
    cJSON_AddItemToArray(ports, cJSON_CreateNumber(n->ports[i]));
  cJSON_AddNumberToObject(o, "allow_address", (double)n->n_allow_address);
  cJSON_AddNumberToObject(o, "publish_address", (double)n->n_publish_address);
  cJSON_AddNumberToObject(o, "resolve", (double)n->n_resolve);
  cJSON_AddNumberToObject(o, "max_connections", n->max_connections);
  cJSON_AddNumberToObject(o, "idle_timeout", n->idle_timeout);
  if (n->byte_budget)
    cJSON_AddNumberToObject(o, "byte_budget", (double)n->byte_budget);
  else
    cJSON_AddNullToObject(o, "byte_budget");
  cJSON_AddNumberToObject(o, "log_max", (double)n->log_max);
  cJSON_AddBoolToObject(o, "sni_check", n->sni_check);
  if (n->tls_required_all) {
    cJSON_AddStringToObject(o, "tls_required", "all");
  } else {
    cJSON *tls = cJSON_AddArrayToObject(o, "tls_required");
    for (size_t i = 0; i < n->n_tls_required; i++)
      cJSON_AddItemToArray(tls, cJSON_CreateNumber(n->tls_required[i]));
  }
  cJSON_AddStringToObject(o, "run", n->run_proxy ? "proxy" : "none");
  if (effective)
    cJSON_AddStringToObject(o, "in_effect",
                            n->run_proxy ? "for hutch run by default, else with --net proxy only"
                                         : "with --net proxy only");
}

static void describe_limits_json(const struct hutch_policy *p, const char *on_host, cJSON *root) {
  bool effective = on_host != NULL;
  const struct policy_limits *l = &p->settings.limits;
  cJSON *o = cJSON_AddObjectToObject(root, "limits");
#define NUM(name, v, scale)                                                                                            \
  do {                                                                                                                 \
    if ((v) == 0)                                                                                                      \
      cJSON_AddNullToObject(o, name);                                                                                  \
    else if ((v) == LIMITS_UNLIMITED)                                                                                  \
      cJSON_AddStringToObject(o, name, "max");                                                                         \
    else                                                                                                               \
      cJSON_AddNumberToObject(o, name, (double)(v) / (scale));                                                         \
  } while (0)
  NUM("memory", l->memory, 1);
  NUM("cpus", l->cpus_milli, 1000.0);
  NUM("pids", l->pids, 1);
  NUM("io_weight", l->io_weight, 1);
  cJSON_AddStringToObject(o, "fallback", l->fallback == LIMITS_FALLBACK_REFUSE ? "refuse" : "rlimits");
  cJSON_AddBoolToObject(o, "required", l->required != 0);
  NUM("disk", limits_or_default(l->disk, LIMITS_DEFAULT_DISK), 1);
  NUM("image_size", limits_or_default(l->image_size, LIMITS_DEFAULT_IMAGE_SIZE), 1);
  NUM("image_entries", limits_or_default(l->image_entries, LIMITS_DEFAULT_IMAGE_ENTRIES), 1);
  NUM("audit_log", l->audit_log ? l->audit_log : AUDIT_DEFAULT_CAP, 1);
  if (effective)
    cJSON_AddStringToObject(o, "disk_in_effect", disk_in_effect);
  if (effective)
    cJSON_AddStringToObject(o, "memory_without_cgroup", memory_without_cgroup);
#undef NUM
  cJSON *pools = cJSON_AddObjectToObject(o, "kernel_pools");
  for (size_t i = 0; i < limits_n_pools; i++)
    cJSON_AddNumberToObject(pools, limits_pools[i].key, (double)limits_pools[i].value);
  if (effective)
    cJSON_AddStringToObject(o, "on_this_host", on_host);
}

int policy_describe(const struct hutch_policy *p, const char *on_host, FILE *out, hutch_error_t *err) {
  bool effective = on_host != NULL;
  _cleanup_(profile_freep) struct seccomp_profile *profile = NULL;
  _cleanup_free_ void *bpf = NULL;
  size_t bpf_len = 0;
  if (parse_profile(p, &profile, &bpf, &bpf_len, err) < 0)
    return -1;

  fprintf(out, "policy: %s\n", p->path);
  fprintf(out, "sandbox:\n");
  fprintf(out, "  namespaces:");
  for (size_t i = 0; i < ARRAY_SIZE(namespaces); i++)
    fprintf(out, "%s %s%s", i ? "," : "", namespaces[i], strcmp(namespaces[i], "net") == 0 ? " (loopback only)" : "");
  fprintf(out, "\n");
  fprintf(out, "  capabilities: none (bounding, permitted, effective, inheritable and ambient sets emptied)\n");
  fprintf(out, "  no_new_privs: yes\n");
  fprintf(out, "  hostname: %s\n", p->settings.hostname ? p->settings.hostname : "sandbox (default)");
  if (p->settings.nofile)
    fprintf(out, "  nofile: %llu\n", (unsigned long long)p->settings.nofile);
  else
    fprintf(out, "  nofile: inherited from hutch\n");
  describe_limits(p, on_host, out);
  net_policy_describe(&p->settings.network, out);
  const struct policy_devices *d = &p->settings.devices;
  fprintf(out, "devices: %s\n",
          d->any       ? "any character device or CDI device (not isolated: hutch-security(7))"
          : d->n_allow ? "these (not isolated: hutch-security(7)):"
                       : "none");
  for (size_t i = 0; i < d->n_allow && !d->any; i++)
    fprintf(out, "  %s\n", d->allow[i]);
  if (effective)
    fprintf(out, "  in effect: %s (otherwise the sandbox has loopback only)\n",
            p->settings.network.run_proxy ? "for `hutch run` unless it says `--net none`; for `hutch exec` and "
                                            "`hutch create` only with `--net proxy`"
                                          : "only with `--net proxy`");
  if (seccomp_profile_describe(profile, effective, out, err) < 0)
    return -1;
  if (effective) {
    _cleanup_free_ char *file = policy_cache_file(p);
    fprintf(out, "  compiled: %zu BPF instructions (digest %s)\n", bpf_len / SECCOMP_INSN_SIZE, p->digest);
    fprintf(out, "  cache: %s (%s)\n", file, access(file, F_OK) == 0 ? "present" : "not yet written");
  }
  return 0;
}

static void json_freep(cJSON **j) {
  cJSON_Delete(*j);
}

int policy_describe_json(const struct hutch_policy *p, const char *on_host, FILE *out, hutch_error_t *err) {
  bool effective = on_host != NULL;
  _cleanup_(profile_freep) struct seccomp_profile *profile = NULL;
  _cleanup_free_ void *bpf = NULL;
  size_t bpf_len = 0;
  if (parse_profile(p, &profile, &bpf, &bpf_len, err) < 0)
    return -1;

  _cleanup_(json_freep) cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "policy", p->path);
  cJSON *sb = cJSON_AddObjectToObject(root, "sandbox");
  cJSON *ns = cJSON_AddArrayToObject(sb, "namespaces");
  for (size_t i = 0; i < ARRAY_SIZE(namespaces); i++)
    cJSON_AddItemToArray(ns, cJSON_CreateString(namespaces[i]));
  cJSON_AddStringToObject(sb, "network", "loopback only");
  cJSON_AddArrayToObject(sb, "capabilities");
  cJSON_AddBoolToObject(sb, "no_new_privs", true);
  if (p->settings.hostname)
    cJSON_AddStringToObject(sb, "hostname", p->settings.hostname);
  else
    cJSON_AddNullToObject(sb, "hostname");
  if (p->settings.nofile)
    cJSON_AddNumberToObject(sb, "nofile", (double)p->settings.nofile);
  else
    cJSON_AddNullToObject(sb, "nofile");
  describe_limits_json(p, on_host, root);
  describe_network_json(&p->settings.network, effective, root);
  const struct policy_devices *d = &p->settings.devices;
  cJSON *devices = cJSON_AddObjectToObject(root, "devices");
  if (d->any || d->n_allow == 0)
    cJSON_AddStringToObject(devices, "allow", d->any ? "yes" : "no");
  else
    cJSON_AddItemToObject(devices, "allow", cJSON_CreateStringArray((const char *const *)d->allow, (int)d->n_allow));
  cJSON *sc = cJSON_AddObjectToObject(root, "seccomp");
  if (seccomp_profile_describe_json(profile, effective, sc, err) < 0)
    return -1;
  cJSON_AddStringToObject(sc, "digest", p->digest);
  if (effective) {
    _cleanup_free_ char *file = policy_cache_file(p);
    cJSON_AddNumberToObject(sc, "instructions", (double)(bpf_len / SECCOMP_INSN_SIZE));
    cJSON_AddStringToObject(sc, "cache_file", file);
    cJSON_AddBoolToObject(sc, "cached", access(file, F_OK) == 0);
  }
  _cleanup_free_ char *text = cJSON_Print(root);
  if (text == NULL)
    return hutch_error_set(err, ENOMEM, "policy show: format JSON");
  fprintf(out, "%s\n", text);
  return 0;
}
