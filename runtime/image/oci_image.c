/* SPDX-License-Identifier: Apache-2.0 */
/* Parsing OCI and Docker v2 image documents (oci_image.h). */
#include "config.h"

#include "oci_image.h"

#include <cJSON.h>
#include <string.h>

#include "util.h"

/* Digests are lowercase hex (the OCI image spec's sha256 encoding). */
static bool hex64(const char *s, size_t len) {
  return len == SHA256_HEX_SIZE - 1 && strspn(s, "0123456789abcdef") >= len;
}

bool oci_digest_hex(const char *digest, char hex[SHA256_HEX_SIZE]) {
  if (digest == NULL || strncmp(digest, "sha256:", 7) != 0 || !hex64(digest + 7, strlen(digest + 7)))
    return false;
  if (hex)
    memcpy(hex, digest + 7, SHA256_HEX_SIZE);
  return true;
}

static const char *str_member(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

static char *dup_or_null(const char *s) {
  return s ? xstrdup(s) : NULL;
}

static cJSON *parse_object(const char *json, size_t len, const char *what, hutch_error_t *err) {
  if (len > OCI_MAX_DOCUMENT) {
    hutch_error_set(err, EFBIG, "the %s is larger than %u bytes", what, OCI_MAX_DOCUMENT);
    return NULL;
  }
  cJSON *j = cJSON_ParseWithLength(json, len);
  if (j == NULL || !cJSON_IsObject(j)) {
    cJSON_Delete(j);
    hutch_error_set(err, EINVAL, "the %s is not a JSON object", what);
    return NULL;
  }
  return j;
}

enum oci_doc_kind oci_doc_kind(const char *media_type, const char *json, size_t len) {
  if (media_type) {
    if (strncmp(media_type, OCI_MT_INDEX, strlen(OCI_MT_INDEX)) == 0 ||
        strncmp(media_type, DOCKER_MT_LIST, strlen(DOCKER_MT_LIST)) == 0)
      return OCI_DOC_INDEX;
    if (strncmp(media_type, OCI_MT_MANIFEST, strlen(OCI_MT_MANIFEST)) == 0 ||
        strncmp(media_type, DOCKER_MT_MANIFEST, strlen(DOCKER_MT_MANIFEST)) == 0)
      return OCI_DOC_MANIFEST;
  }
  cJSON *j = json ? cJSON_ParseWithLength(json, len) : NULL;
  enum oci_doc_kind k = OCI_DOC_UNKNOWN;
  const char *mt = str_member(j, "mediaType");
  if (mt && strcmp(mt, media_type ? media_type : "") != 0 && (media_type == NULL || strstr(media_type, "json")))
    k = oci_doc_kind(mt, NULL, 0);
  if (k == OCI_DOC_UNKNOWN && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "manifests")))
    k = OCI_DOC_INDEX;
  else if (k == OCI_DOC_UNKNOWN && cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(j, "layers")))
    k = OCI_DOC_MANIFEST;
  cJSON_Delete(j);
  return k;
}

static int parse_descriptor(const cJSON *o, const char *what, struct oci_descriptor *d, hutch_error_t *err) {
  memset(d, 0, sizeof(*d));
  const char *digest = str_member(o, "digest");
  if (!oci_digest_hex(digest, NULL)) {
    hutch_error_set(err, EINVAL, "the %s has %s digest \"%s\"", what, digest ? "the unsupported" : "no",
                    digest ? digest : "");
    return hutch_error_hint(err, "hutch verifies sha256 digests (sha256:<64 hex digits>) only");
  }
  const cJSON *size = cJSON_GetObjectItemCaseSensitive(o, "size");
  /* A JSON number is a double: one past 2^64 (or NaN) has no uint64_t, and
   * converting it would be undefined.  No real blob is that large. */
  if (cJSON_IsNumber(size) && !(size->valuedouble < 0x1p64)) {
    hutch_error_set(err, EINVAL, "the %s has the impossible size %g", what, size->valuedouble);
    return -1;
  }
  d->digest = xstrdup(digest);
  d->media_type = dup_or_null(str_member(o, "mediaType"));
  d->size = cJSON_IsNumber(size) && size->valuedouble > 0 ? (uint64_t)size->valuedouble : 0;
  const cJSON *p = cJSON_GetObjectItemCaseSensitive(o, "platform");
  if (cJSON_IsObject(p)) {
    d->os = dup_or_null(str_member(p, "os"));
    d->arch = dup_or_null(str_member(p, "architecture"));
    d->variant = dup_or_null(str_member(p, "variant"));
  }
  /* The image's name in a layout of several: containerd (Docker 25 and
   * later) writes the full reference, podman and skopeo the one they were
   * given (a tag alone for `oci:DIR:TAG`). */
  const cJSON *a = cJSON_GetObjectItemCaseSensitive(o, "annotations");
  const char *ref = str_member(a, "io.containerd.image.name");
  d->ref_name = dup_or_null(ref ? ref : str_member(a, "org.opencontainers.image.ref.name"));
  return 0;
}

int oci_parse_index(const char *json, size_t len, struct oci_descriptor **out, size_t *n_out, hutch_error_t *err) {
  cJSON *j = parse_object(json, len, "image index", err);
  if (j == NULL)
    return -1;
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "manifests");
  int n = cJSON_GetArraySize(arr);
  if (!cJSON_IsArray(arr) || n == 0) {
    cJSON_Delete(j);
    return hutch_error_set(err, EINVAL, "the image index lists no manifests");
  }
  struct oci_descriptor *d = xcalloc((size_t)n, sizeof(*d));
  int i = 0;
  const cJSON *item;
  cJSON_ArrayForEach(item, arr) {
    if (parse_descriptor(item, "image index entry", &d[i], err) < 0) {
      oci_descriptors_free(d, (size_t)i);
      cJSON_Delete(j);
      return -1;
    }
    i++;
  }
  cJSON_Delete(j);
  *out = d;
  *n_out = (size_t)n;
  return 0;
}

int oci_parse_manifest(const char *json, size_t len, struct oci_manifest *out, hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  cJSON *j = parse_object(json, len, "image manifest", err);
  if (j == NULL)
    return -1;
  int ret = -1;
  const cJSON *layers = cJSON_GetObjectItemCaseSensitive(j, "layers");
  if (!cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "config")) || !cJSON_IsArray(layers)) {
    hutch_error_set(err, EINVAL, "the image manifest has no config or no layers");
    goto out;
  }
  if (oci_check_layer_count((size_t)cJSON_GetArraySize(layers), err) < 0)
    goto out;
  if (parse_descriptor(cJSON_GetObjectItemCaseSensitive(j, "config"), "image config", &out->config, err) < 0)
    goto out;
  out->layers = xcalloc((size_t)cJSON_GetArraySize(layers) + 1, sizeof(*out->layers));
  const cJSON *item;
  cJSON_ArrayForEach(item, layers) {
    if (parse_descriptor(item, "layer", &out->layers[out->n_layers], err) < 0)
      goto out;
    out->n_layers++;
  }
  ret = 0;
out:
  cJSON_Delete(j);
  if (ret < 0)
    oci_manifest_clear(out);
  return ret;
}

int oci_check_layer_count(size_t n, hutch_error_t *err) {
  if (n <= HUTCH_IMAGE_MAX_LAYERS)
    return 0;
  hutch_error_set(err, EFBIG, "the image has %zu layers; an image may have at most %d", n, HUTCH_IMAGE_MAX_LAYERS);
  return hutch_error_hint(err, "as in Docker; flatten it (docker export of a container, imported as a root "
                               "filesystem tarball) or build it with fewer layers");
}

static char **string_array(const cJSON *arr, size_t *n_out) {
  size_t n = 0;
  char **v = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof(char *));
  const cJSON *item;
  cJSON_ArrayForEach(item, arr) {
    if (cJSON_IsString(item))
      v[n++] = xstrdup(item->valuestring);
  }
  if (n_out)
    *n_out = n;
  return v;
}

int oci_parse_config(const char *json, size_t len, struct oci_config *out, hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  cJSON *j = parse_object(json, len, "image config", err);
  if (j == NULL)
    return -1;
  const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "config");
  /* Env entries without '=' are not variables; they are dropped here. */
  out->env = string_array(cJSON_GetObjectItemCaseSensitive(c, "Env"), NULL);
  size_t k = 0;
  for (size_t i = 0; out->env[i]; i++) {
    if (strchr(out->env[i], '=') && out->env[i][0] != '=')
      out->env[k++] = out->env[i];
    else
      free(out->env[i]);
  }
  out->env[k] = NULL;
  out->workdir = dup_or_null(str_member(c, "WorkingDir"));
  out->user = dup_or_null(str_member(c, "User"));
  out->os = dup_or_null(str_member(j, "os"));
  out->arch = dup_or_null(str_member(j, "architecture"));
  const cJSON *rootfs = cJSON_GetObjectItemCaseSensitive(j, "rootfs");
  out->diff_ids = string_array(cJSON_GetObjectItemCaseSensitive(rootfs, "diff_ids"), &out->n_diff_ids);
  cJSON_Delete(j);
  return 0;
}

/* A reference as users write it and tools record it: without the default
 * registry ("docker.io/library/", "docker.io/") or "localhost/", and with
 * ":latest" when it has neither tag nor digest. */
static char *ref_normal(const char *ref) {
  static const char *const prefixes[] = {"docker.io/library/", "docker.io/", "index.docker.io/library/", "localhost/",
                                         "library/"};
  for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++)
    if (strncmp(ref, prefixes[i], strlen(prefixes[i])) == 0) {
      ref += strlen(prefixes[i]);
      break;
    }
  const char *last = strrchr(ref, '/') ? strrchr(ref, '/') + 1 : ref;
  return strchr(last, ':') || strchr(ref, '@') ? xstrdup(ref) : xasprintf("%s:latest", ref);
}

bool oci_ref_matches(const char *name, const char *want) {
  if (name == NULL || want == NULL)
    return false;
  _cleanup_free_ char *a = ref_normal(name), *b = ref_normal(want);
  return strcmp(a, b) == 0;
}

int docker_parse_save(const char *json, size_t len, const char *want, struct docker_save *out, hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  if (len > OCI_MAX_DOCUMENT)
    return hutch_error_set(err, EFBIG, "manifest.json is larger than %u bytes", OCI_MAX_DOCUMENT);
  cJSON *j = cJSON_ParseWithLength(json, len);
  int n = cJSON_IsArray(j) ? cJSON_GetArraySize(j) : 0;
  const cJSON *item, *chosen = NULL;
  size_t matches = 0;
  _cleanup_free_ char *names = xstrdup("");
  const cJSON *images = cJSON_IsArray(j) ? j : NULL;
  cJSON_ArrayForEach(item, images) {
    const char *config = str_member(item, "Config");
    if (config == NULL || !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(item, "Layers"))) {
      cJSON_Delete(j);
      return hutch_error_set(err, EINVAL,
                             "manifest.json is not a `docker save` manifest (an array of {Config, Layers})");
    }
    const cJSON *tags = cJSON_GetObjectItemCaseSensitive(item, "RepoTags"), *t;
    if (!cJSON_IsArray(tags))
      tags = NULL;
    bool hit = want == NULL;
    size_t n_tags = 0;
    cJSON_ArrayForEach(t, tags) {
      if (!cJSON_IsString(t))
        continue;
      hit = hit || oci_ref_matches(t->valuestring, want);
      char *next = xasprintf("%s%s%s", names, names[0] ? ", " : "", t->valuestring);
      free(names);
      names = next;
      n_tags++;
    }
    /* An untagged image goes by its config's digest (the name of its file). */
    const char *base = strrchr(config, '/') ? strrchr(config, '/') + 1 : config;
    if (want && !hit && strncmp(want, "sha256:", 7) == 0 && strlen(want) >= 7 + 12)
      hit = strncmp(base, want + 7, strlen(want + 7)) == 0;
    if (n_tags == 0) {
      char *next = xasprintf("%s%ssha256:%.12s", names, names[0] ? ", " : "", base);
      free(names);
      names = next;
    }
    if (hit && matches++ == 0)
      chosen = item;
  }
  if (n == 0) {
    cJSON_Delete(j);
    return hutch_error_set(err, EINVAL, "manifest.json is not a `docker save` manifest (an array of {Config, Layers})");
  }
  if (matches != 1) {
    cJSON_Delete(j);
    if (matches == 0)
      hutch_error_set(err, ENOENT, "the archive has no image %s (it has: %s)", want, names);
    else
      hutch_error_set(err, EINVAL, "the archive holds %d images (%s)", n, names);
    return hutch_error_hint(err, "choose one with --image NAME");
  }
  const cJSON *layers = cJSON_GetObjectItemCaseSensitive(chosen, "Layers");
  if (oci_check_layer_count((size_t)cJSON_GetArraySize(layers), err) < 0) {
    cJSON_Delete(j);
    return -1;
  }
  out->config = xstrdup(str_member(chosen, "Config"));
  out->layers = string_array(layers, &out->n_layers);
  cJSON_Delete(j);
  return 0;
}

int oci_filter_by_name(struct oci_descriptor *d, size_t *n, const char *want, hutch_error_t *err) {
  _cleanup_free_ char *names = xstrdup("");
  size_t distinct = 0, kept = 0;
  for (size_t i = 0; i < *n; i++) {
    bool seen = false;
    for (size_t k = 0; k < i && d[i].ref_name; k++)
      seen = seen || (d[k].ref_name && strcmp(d[k].ref_name, d[i].ref_name) == 0);
    if (d[i].ref_name && !seen) {
      char *next = xasprintf("%s%s%s", names, distinct ? ", " : "", d[i].ref_name);
      free(names);
      names = next;
      distinct++;
    }
  }
  if (want == NULL) {
    if (distinct <= 1)
      return 0;
    hutch_error_set(err, EINVAL, "the image index holds %zu images (%s)", distinct, names);
    return hutch_error_hint(err, "choose one with --image NAME");
  }
  bool by_digest = strncmp(want, "sha256:", 7) == 0 && strlen(want) >= 7 + 12;
  for (size_t i = 0; i < *n; i++) {
    bool hit = oci_ref_matches(d[i].ref_name, want) || (by_digest && strncmp(d[i].digest, want, strlen(want)) == 0);
    if (hit)
      d[kept++] = d[i];
    else
      oci_descriptor_clear(&d[i]);
  }
  *n = kept;
  if (kept > 0)
    return 0;
  hutch_error_set(err, ENOENT, "the image index has no image %s (it has: %s)", want, distinct ? names : "no names");
  return hutch_error_hint(err, "choose one of those with --image NAME");
}

void oci_host_platform(const char **os, const char **arch, const char **variant) {
  *os = "linux";
  *variant = NULL;
#if defined(__x86_64__)
  *arch = "amd64";
#elif defined(__aarch64__)
  *arch = "arm64";
  *variant = "v8";
#elif defined(__arm__)
  *arch = "arm";
  *variant = "v7";
#elif defined(__i386__)
  *arch = "386";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  *arch = "ppc64le";
#elif defined(__s390x__)
  *arch = "s390x";
#elif defined(__riscv) && __riscv_xlen == 64
  *arch = "riscv64";
#else
  *arch = "unknown";
#endif
}

static bool eq(const char *a, const char *b) {
  return a && b && strcmp(a, b) == 0;
}

ssize_t oci_select_platform(const struct oci_descriptor *d, size_t n, const char *os, const char *arch,
                            const char *variant) {
  ssize_t loose = -1;
  for (size_t i = 0; i < n; i++) {
    if (!eq(d[i].os, os) || !eq(d[i].arch, arch))
      continue;
    if (variant == NULL || eq(d[i].variant, variant))
      return (ssize_t)i;
    /* arm64 images often leave out "v8"; an entry without a variant fits. */
    if (d[i].variant == NULL && loose < 0)
      loose = (ssize_t)i;
  }
  return loose;
}

bool oci_layer_media_type_ok(const char *mt) {
  if (mt == NULL)
    return true; /* docker save and old manifests leave it out: the content decides */
  static const char *const ok[] = {
      "application/vnd.oci.image.layer.v1.tar",
      "application/vnd.oci.image.layer.v1.tar+gzip",
      "application/vnd.oci.image.layer.v1.tar+zstd",
      "application/vnd.oci.image.layer.nondistributable.v1.tar",
      "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
      "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
      "application/vnd.docker.image.rootfs.diff.tar",
      "application/vnd.docker.image.rootfs.diff.tar.gzip",
      "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
  };
  for (size_t i = 0; i < ARRAY_SIZE(ok); i++)
    if (strcmp(mt, ok[i]) == 0)
      return true;
  return false;
}

bool oci_archive_marker(const char *clean) {
  return strcmp(clean, "manifest.json") == 0 || strcmp(clean, "index.json") == 0 || strcmp(clean, "oci-layout") == 0;
}

bool oci_archive_member_name(const char *n) {
  static const char *const fixed[] = {"", "oci-layout", "index.json", "manifest.json", "repositories", "blobs"};
  for (size_t i = 0; i < ARRAY_SIZE(fixed); i++)
    if (strcmp(n, fixed[i]) == 0)
      return true;
  if (strncmp(n, "blobs/", 6) == 0)
    return true;
  const char *slash = strchr(n, '/');
  size_t first = slash ? (size_t)(slash - n) : strlen(n);
  if (hex64(n, first))
    return true; /* a legacy `docker save` layer directory */
  size_t len = strlen(n);
  /* <hex>.json: a config; <hex>.tar: a layer as podman and skopeo name it */
  return (len > 5 && strcmp(n + len - 5, ".json") == 0 && hex64(n, len - 5)) ||
         (len > 4 && strcmp(n + len - 4, ".tar") == 0 && hex64(n, len - 4));
}

bool oci_user_is_root(const char *user) {
  if (user == NULL || user[0] == '\0')
    return true;
  size_t ulen = strcspn(user, ":");
  bool uid_root = (ulen == 4 && strncmp(user, "root", 4) == 0) || (ulen == 1 && user[0] == '0');
  if (!uid_root)
    return false;
  const char *g = user[ulen] == ':' ? user + ulen + 1 : NULL;
  return g == NULL || strcmp(g, "root") == 0 || strcmp(g, "0") == 0;
}

void oci_descriptor_clear(struct oci_descriptor *d) {
  free(d->ref_name);
  free(d->media_type);
  free(d->digest);
  free(d->os);
  free(d->arch);
  free(d->variant);
  memset(d, 0, sizeof(*d));
}

void oci_descriptors_free(struct oci_descriptor *d, size_t n) {
  if (d == NULL)
    return;
  for (size_t i = 0; i < n; i++)
    oci_descriptor_clear(&d[i]);
  free(d);
}

void oci_manifest_clear(struct oci_manifest *m) {
  oci_descriptor_clear(&m->config);
  oci_descriptors_free(m->layers, m->n_layers);
  memset(m, 0, sizeof(*m));
}

void oci_config_clear(struct oci_config *c) {
  cleanup_strvp(&c->env);
  cleanup_strvp(&c->diff_ids);
  free(c->workdir);
  free(c->user);
  free(c->os);
  free(c->arch);
  memset(c, 0, sizeof(*c));
}

void docker_save_clear(struct docker_save *d) {
  free(d->config);
  cleanup_strvp(&d->layers);
  memset(d, 0, sizeof(*d));
}
