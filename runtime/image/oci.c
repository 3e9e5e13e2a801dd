/* SPDX-License-Identifier: Apache-2.0 */
/* OCI and Docker images into the rootfs store (oci.h): checking each blob
 * against its digest and applying the layers into one new entry, for an
 * archive or layout (oci_local.c) and a pull from a registry (here). */
#include "config.h"

#include "oci.h"

#include <cJSON.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>

#include "idmap.h"
#include "layer.h"
#include "oci_image.h"
#include "oci_plan.h"
#include "oci_tar.h"
#include "paths.h"
#include "policy.h"
#include "registry.h"
#include "request.h"
#include "store.h"
#include "util.h"

#define HASH_CHUNK (1024 * 1024)

/* ---- blobs: byte ranges of a file ------------------------------------- */

void blob_close(struct blob *b) {
  if (b->fd >= 0)
    close(b->fd);
  b->fd = -1;
}

int blob_hash(const struct blob *b, char hex[SHA256_HEX_SIZE], hutch_error_t *err) {
  _cleanup_free_ char *buf = xmalloc(HASH_CHUNK);
  struct sha256_ctx ctx;
  sha256_init(&ctx);
  uint64_t done = 0;
  while (done < b->size) {
    size_t want = b->size - done < HASH_CHUNK ? (size_t)(b->size - done) : HASH_CHUNK;
    ssize_t n = pread(b->fd, buf, want, (off_t)(b->offset + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return hutch_error_sys(err, "read at byte %" PRIu64, b->offset + done);
    if (n == 0)
      return hutch_error_set(err, EIO, "the blob ends after %" PRIu64 " of %" PRIu64 " bytes", done, b->size);
    sha256_update(&ctx, buf, (size_t)n);
    done += (uint64_t)n;
  }
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_final(&ctx, d);
  sha256_hex(d, hex);
  return 0;
}

/* Before a blob is used: its bytes must be the ones its digest names. */
int blob_verify(const struct blob *b, const char *what, const char *want_hex, uint64_t want_size, hutch_error_t *err) {
  if (want_size && want_size != b->size) {
    hutch_error_set(err, EBADMSG, "%s sha256:%.12s: %" PRIu64 " bytes where its descriptor says %" PRIu64, what,
                    want_hex, b->size, want_size);
    return hutch_error_hint(err, "the image is damaged or was tampered with; nothing was imported");
  }
  char got[SHA256_HEX_SIZE];
  if (blob_hash(b, got, err) < 0)
    return hutch_error_wrap(err, "%s sha256:%.12s", what, want_hex);
  if (strcmp(got, want_hex) != 0) {
    hutch_error_set(err, EBADMSG, "%s: digest mismatch: expected sha256:%s, got sha256:%s", what, want_hex, got);
    return hutch_error_hint(err, "the image is damaged or was tampered with; nothing was imported");
  }
  return 0;
}

int blob_read(const struct blob *b, const char *what, char **out, size_t *len, hutch_error_t *err) {
  if (b->size > OCI_MAX_DOCUMENT)
    return hutch_error_set(err, EFBIG, "%s: %" PRIu64 " bytes, more than a document may have", what, b->size);
  char *buf = xmalloc(b->size + 1);
  size_t done = 0;
  while (done < b->size) {
    ssize_t n = pread(b->fd, buf + done, b->size - done, (off_t)(b->offset + done));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      free(buf);
      return n < 0 ? hutch_error_sys(err, "read %s", what) : hutch_error_set(err, EIO, "read %s: short file", what);
    }
    done += (size_t)n;
  }
  buf[done] = '\0';
  *out = buf;
  *len = done;
  return 0;
}

/* ---- what an image is made of, wherever it comes from ----------------- */

void plan_clear(struct plan *p) {
  free(p->manifest_digest);
  free(p->config_digest);
  oci_config_clear(&p->config);
  for (size_t i = 0; i < p->n_layers; i++)
    free(p->layer_hex[i]);
  free(p->layer_hex);
  free(p->layer_size);
  memset(p, 0, sizeof(*p));
}

void plan_add_layer(struct plan *p, const char *hex, uint64_t size) {
  p->layer_hex = xrealloc(p->layer_hex, (p->n_layers + 1) * sizeof(*p->layer_hex));
  p->layer_size = xrealloc(p->layer_size, (p->n_layers + 1) * sizeof(*p->layer_size));
  p->layer_hex[p->n_layers] = xstrdup(hex);
  p->layer_size[p->n_layers] = size;
  p->n_layers++;
}

/* Layers from a manifest; refuses what hutch cannot apply. */
int plan_layers_from_manifest(struct plan *p, const struct oci_manifest *m, hutch_error_t *err) {
  for (size_t i = 0; i < m->n_layers; i++) {
    if (!oci_layer_media_type_ok(m->layers[i].media_type)) {
      hutch_error_set(err, ENOTSUP, "layer %zu has the media type %s, which is not a tar layer", i + 1,
                      m->layers[i].media_type);
      return hutch_error_hint(err, "hutch applies tar layers, uncompressed or compressed with gzip or zstd");
    }
    char hex[SHA256_HEX_SIZE];
    oci_digest_hex(m->layers[i].digest, hex);
    plan_add_layer(p, hex, m->layers[i].size);
  }
  return 0;
}

static void add_string_or_null(cJSON *o, const char *key, const char *v) {
  if (v)
    cJSON_AddStringToObject(o, key, v);
  else
    cJSON_AddNullToObject(o, key);
}

static cJSON *plan_meta(const struct plan *p, const struct idmap_set *maps, const struct unpack_stats *stats) {
  cJSON *j = store_meta_new(p->key, p->source, maps, stats);
  cJSON *img = cJSON_AddObjectToObject(j, "image");
  cJSON_AddStringToObject(img, "format", p->format);
  add_string_or_null(img, "manifest", p->manifest_digest);
  cJSON_AddStringToObject(img, "config", p->config_digest);
  if (p->config.os || p->config.arch) {
    _cleanup_free_ char *platform =
        xasprintf("%s/%s", p->config.os ? p->config.os : "?", p->config.arch ? p->config.arch : "?");
    cJSON_AddStringToObject(img, "platform", platform);
  }
  cJSON *layers = cJSON_AddArrayToObject(img, "layers");
  for (size_t i = 0; i < p->n_layers; i++) {
    _cleanup_free_ char *d = xasprintf("sha256:%s", p->layer_hex[i]);
    cJSON_AddItemToArray(layers, cJSON_CreateString(d));
  }
  cJSON_AddNumberToObject(img, "whiteouts", (double)stats->whiteouts);
  cJSON_AddItemToObject(img, "env",
                        cJSON_CreateStringArray((const char *const *)p->config.env,
                                                (int)strv_length((const char *const *)p->config.env)));
  add_string_or_null(img, "workdir", p->config.workdir && p->config.workdir[0] ? p->config.workdir : NULL);
  add_string_or_null(img, "user", p->config.user && p->config.user[0] ? p->config.user : NULL);
  return j;
}

static void add_stats(struct unpack_stats *sum, const struct unpack_stats *s) {
  sum->size += s->size;
  sum->entries += s->entries;
  sum->skipped_special += s->skipped_special;
  sum->owners_collapsed += s->owners_collapsed;
  sum->non_root_owned += s->non_root_owned;
  sum->setid_dropped += s->setid_dropped;
  sum->warnings += s->warnings;
  sum->whiteouts += s->whiteouts;
  sum->headers += s->headers;
  if (sum->first_warning[0] == '\0')
    memcpy(sum->first_warning, s->first_warning, sizeof(sum->first_warning));
  if (sum->first_collapsed[0] == '\0')
    memcpy(sum->first_collapsed, s->first_collapsed, sizeof(sum->first_collapsed));
}

/* Apply every layer into a new entry.  0: made, 1: it was there already. */
int plan_apply(struct hutch_store *store, const struct plan *p, layer_fn get_layer, void *ctx,
               hutch_progress_fn progress, void *progress_data, hutch_error_t *err) {
  if (store_has_entry(store, p->key))
    return 1;
  if (p->n_layers == 0)
    return hutch_error_set(err, EINVAL, "the image has no layers");
  if (oci_check_layer_count(p->n_layers, err) < 0)
    return -1;
  /* One budget for all the layers. */
  const struct idmap_set *maps;
  struct import_budget budget;
  struct store_stage stage;
  if (store_import_begin(store, &maps, &budget, &stage, err) < 0)
    return -1;
  struct unpack_stats total = {0};
  for (size_t i = 0; i < p->n_layers; i++) {
    struct blob b = {.fd = -1};
    if (get_layer(ctx, p, i, &b, err) < 0) {
      store_stage_abort(store, &stage);
      return hutch_error_wrap(err, "layer %zu of %zu", i + 1, p->n_layers);
    }
    struct unpack_request req = {
        .fd = b.fd,
        .total = b.size,
        .target = stage.rootfs,
        .maps = maps,
        .progress = progress,
        .progress_data = progress_data,
        .layer = true,
        .offset = b.offset,
        .length = b.size,
        .budget = &budget,
        .used_bytes = total.size,
        .used_entries = total.headers,
    };
    uint8_t digest[SHA256_DIGEST_SIZE];
    struct unpack_stats stats;
    int r = unpack_archive(&req, digest, &stats, err);
    blob_close(&b);
    char hex[SHA256_HEX_SIZE];
    if (r == 0) {
      sha256_hex(digest, hex);
      /* The bytes unpacked are the bytes verified (a file changed in
       * between would show here). */
      if (strcmp(hex, p->layer_hex[i]) != 0)
        r = hutch_error_set(err, EBADMSG, "the blob changed while it was applied (sha256:%.12s, then sha256:%.12s)",
                            p->layer_hex[i], hex);
    }
    if (r < 0) {
      store_stage_abort(store, &stage);
      return hutch_error_wrap(err, "layer %zu of %zu (sha256:%.12s)", i + 1, p->n_layers, p->layer_hex[i]);
    }
    add_stats(&total, &stats);
  }
  cJSON *meta = plan_meta(p, maps, &total);
  int r = store_stage_commit(store, &stage, p->key, meta, err);
  cJSON_Delete(meta);
  if (r == 0)
    store_print_notices(p->source, maps, &total);
  return r;
}

/* ---- choosing among the images of an index ------------------------- */

ssize_t oci_pick_platform(const struct oci_descriptor *d, size_t n, const char *where, hutch_error_t *err) {
  const char *os, *arch, *variant;
  oci_host_platform(&os, &arch, &variant);
  ssize_t i = oci_select_platform(d, n, os, arch, variant);
  if (i >= 0)
    return i;
  /* A layout of single-platform manifests (one per tag) says no platform. */
  for (size_t k = 0; k < n; k++)
    if (d[k].arch == NULL)
      return (ssize_t)k;
  _cleanup_free_ char *have = xstrdup("");
  for (size_t k = 0; k < n; k++) {
    char *next = xasprintf("%s%s%s/%s%s%s", have, k ? ", " : "", d[k].os ? d[k].os : "?", d[k].arch ? d[k].arch : "?",
                           d[k].variant ? "/" : "", d[k].variant ? d[k].variant : "");
    free(have);
    have = next;
  }
  hutch_error_set(err, ENOENT, "%s has no image for %s/%s%s%s (it has: %s)", where, os, arch, variant ? "/" : "",
                  variant ? variant : "", have);
  return -1;
}

/* ---- an image's defaults in a sandbox ---------------------------------- */

char **hutch_image_env(const struct hutch_image *image, const char *const *extra) {
  const char *const *layers[] = {(const char *const *)image->env, extra};
  return env_merge(layers, 2);
}

void hutch_image_user_notice(const struct hutch_image *image) {
  static bool warned;
  if (warned || oci_user_is_root(image->user))
    return;
  warned = true;
  /* The image's text, on one line: a newline in it would start a line of
   * the image's own at the terminal (the log sink escapes the rest). */
  _cleanup_free_ char *user = xstrdup(image->user);
  for (char *c = user; *c; c++)
    if (*c == '\n' || *c == '\r')
      *c = ' ';
  hutch_warn("the image's User \"%s\" is not applied: commands in a sandbox run as root of its user namespace "
             "unless --user (Python: user=) names another",
             user);
}

/* ---- pulling from a registry ------------------------------------------- */

struct pull_ctx {
  struct registry_client *client;
  struct store_stage area; /* where blobs are downloaded, removed afterwards */
  hutch_progress_fn progress;
  void *progress_data;
  /* A layer a manifest names again further up is downloaded once: its
   * (unlinked) file stays open here, at the index of its first place,
   * until its last place is applied. */
  int kept[HUTCH_IMAGE_MAX_LAYERS];
};

/* Download a blob into the pull area (verified by download_file against
 * its digest) and open it; the file itself is removed at once. */
static int pull_blob(struct pull_ctx *c, const char *hex, uint64_t want_size, struct blob *b, hutch_error_t *err) {
  _cleanup_free_ char *digest = xasprintf("sha256:%s", hex);
  _cleanup_free_ char *dest = xasprintf("%s/../%s", c->area.rootfs, hex);
  if (registry_get_blob(c->client, digest, want_size, dest, c->progress, c->progress_data, err) < 0)
    return -1;
  int fd = open(dest, O_RDONLY | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) {
    if (fd >= 0)
      close(fd);
    return hutch_error_sys(err, "open the downloaded blob %s", dest);
  }
  unlink(dest);
  *b = (struct blob){.fd = fd, .offset = 0, .size = (uint64_t)st.st_size};
  if (want_size && want_size != b->size) {
    blob_close(b);
    return hutch_error_set(err, EBADMSG, "blob %s: %" PRIu64 " bytes where its descriptor says %" PRIu64, digest,
                           (uint64_t)st.st_size, want_size);
  }
  return 0;
}

static ssize_t layer_place(const struct plan *p, size_t i, size_t from, size_t to) {
  for (size_t k = from; k < to; k++)
    if (strcmp(p->layer_hex[k], p->layer_hex[i]) == 0)
      return (ssize_t)k;
  return -1;
}

/* Applying a layer again is not a no-op (a whiteout between its places
 * may have removed what it adds): each place is applied, from one
 * download. */
static int pull_layer(void *data, const struct plan *p, size_t i, struct blob *out, hutch_error_t *err) {
  struct pull_ctx *c = data;
  ssize_t first = layer_place(p, i, 0, i);
  bool again = layer_place(p, i, i + 1, p->n_layers) >= 0;
  if (first >= 0 && c->kept[first] >= 0) {
    int fd = again ? dup(c->kept[first]) : c->kept[first];
    if (fd < 0)
      return hutch_error_sys(err, "dup");
    if (!again)
      c->kept[first] = -1;
    struct stat st;
    if (fstat(fd, &st) < 0) {
      close(fd);
      return hutch_error_sys(err, "stat the downloaded blob sha256:%.12s", p->layer_hex[i]);
    }
    *out = (struct blob){.fd = fd, .offset = 0, .size = (uint64_t)st.st_size};
    return 0;
  }
  if (pull_blob(c, p->layer_hex[i], p->layer_size[i], out, err) < 0)
    return -1;
  if (again && (c->kept[i] = dup(out->fd)) < 0) {
    blob_close(out);
    return hutch_error_sys(err, "dup");
  }
  return 0;
}

/* Sizes are required in a registry's descriptors (the OCI distribution
 * spec): they bound each download before it starts. */
static int check_sizes(const struct oci_manifest *m, hutch_error_t *err) {
  int r = 0;
  if (m->config.size > OCI_MAX_DOCUMENT)
    r = hutch_error_set(err, EFBIG, "the image manifest gives the config %" PRIu64 " bytes, more than %u",
                        m->config.size, OCI_MAX_DOCUMENT);
  else if (m->config.size == 0)
    r = hutch_error_set(err, EBADMSG, "the image manifest gives the config no size");
  for (size_t i = 0; r == 0 && i < m->n_layers; i++)
    if (m->layers[i].size == 0)
      r = hutch_error_set(err, EBADMSG, "the image manifest gives layer %zu of %zu no size", i + 1, m->n_layers);
  return r < 0 ? hutch_error_hint(err, "the registry's manifest is damaged or hostile; nothing was downloaded") : 0;
}

/* Resolve the reference to one image manifest for this platform. */
static int pull_resolve(struct registry_client *client, const struct registry_ref *ref, char **text, size_t *len,
                        char key[SHA256_HEX_SIZE], hutch_error_t *err) {
  _cleanup_free_ char *reference = xstrdup(ref->digest ? ref->digest : ref->tag);
  _cleanup_free_ char *want = ref->digest ? xstrdup(ref->digest + 7) : NULL;
  uint64_t want_size = 0;
  for (int depth = 0; depth < OCI_MAX_INDEX_DEPTH; depth++) {
    _cleanup_free_ char *mt = NULL;
    char hex[SHA256_HEX_SIZE];
    free(*text);
    *text = NULL;
    if (registry_get_manifest(client, reference, text, len, &mt, hex, err) < 0)
      return -1;
    if (want && strcmp(hex, want) != 0) {
      hutch_error_set(err, EBADMSG, "the manifest %s: digest mismatch: expected sha256:%s, got sha256:%s", reference,
                      want, hex);
      return hutch_error_hint(err, "the registry sent other bytes than the ones named; nothing was imported");
    }
    if (want_size && want_size != *len)
      return hutch_error_set(err, EBADMSG, "the manifest %s: %zu bytes where the index says %" PRIu64, reference, *len,
                             want_size);
    enum oci_doc_kind kind = oci_doc_kind(mt, *text, *len);
    if (kind == OCI_DOC_MANIFEST) {
      memcpy(key, hex, SHA256_HEX_SIZE);
      return 0;
    }
    if (kind != OCI_DOC_INDEX) {
      hutch_error_set(err, ENOTSUP, "%s is neither an image manifest nor an index (Content-Type %s)", reference,
                      mt ? mt : "none");
      return hutch_error_hint(err, "hutch pulls OCI and Docker v2 (schema 2) images");
    }
    struct oci_descriptor *list = NULL;
    size_t n = 0;
    if (oci_parse_index(*text, *len, &list, &n, err) < 0)
      return -1;
    _cleanup_free_ char *where = xasprintf("the image index of %s", ref->repo);
    ssize_t i = oci_pick_platform(list, n, where, err);
    if (i >= 0) {
      free(reference);
      reference = xstrdup(list[i].digest);
      free(want);
      want = xstrdup(list[i].digest + 7);
      want_size = list[i].size;
    }
    oci_descriptors_free(list, n);
    if (i < 0)
      return -1;
  }
  return hutch_error_set(err, ELOOP, "image indexes nested more than %d deep", OCI_MAX_INDEX_DEPTH);
}

int rootfs_pull_oci(const char *store_path, const char *ref_text, const char *name, const struct oci_pull_options *opts,
                    struct hutch_image *out, hutch_error_t *err) {
  static const struct oci_pull_options defaults;
  if (opts == NULL)
    opts = &defaults;
  struct registry_ref ref;
  if (registry_ref_parse(ref_text, &ref, err) < 0)
    return -1;
  _cleanup_free_ char *pretty = registry_ref_format(&ref);
  struct hutch_store *store = NULL;
  struct registry_client *client = NULL;
  _cleanup_free_ char *text = NULL, *short_name = NULL;
  size_t len = 0;
  struct plan p = {.format = "registry", .source = pretty};
  struct pull_ctx ctx = {.area = {.fd = -1}, .progress = opts->progress, .progress_data = opts->progress_data};
  for (size_t i = 0; i < ARRAY_SIZE(ctx.kept); i++)
    ctx.kept[i] = -1;
  struct oci_manifest m = {0};
  int ret = -1;
  if (hutch_store_open(store_path, &store, err) < 0 || registry_client_new(&ref, &opts->registry, &client, err) < 0)
    goto out;
  ctx.client = client;
  if (pull_resolve(client, &ref, &text, &len, p.key, err) < 0)
    goto out;
  p.manifest_digest = xasprintf("sha256:%s", p.key);
  if (store_has_entry(store, p.key)) {
    hutch_debug("pull %s: sha256:%s is in the store already", pretty, p.key);
    ret = 1;
  } else {
    if (oci_parse_manifest(text, len, &m, err) < 0 || check_sizes(&m, err) < 0 ||
        store_stage_begin(store, &ctx.area, err) < 0)
      goto out;
    char chex[SHA256_HEX_SIZE];
    oci_digest_hex(m.config.digest, chex);
    struct blob cb;
    if (pull_blob(&ctx, chex, m.config.size, &cb, err) < 0)
      goto out;
    free(text);
    text = NULL;
    int r = blob_read(&cb, "image config", &text, &len, err);
    blob_close(&cb);
    if (r < 0 || oci_parse_config(text, len, &p.config, err) < 0 || plan_layers_from_manifest(&p, &m, err) < 0)
      goto out;
    p.config_digest = xstrdup(m.config.digest);
    ret = plan_apply(store, &p, pull_layer, &ctx, NULL, NULL, err);
    if (ret < 0)
      goto out;
  }
  /* The default name is the reference, whose '/' a store name cannot
   * have: the last component and the tag stand for it then. */
  if (name && !paths_valid_name(name)) {
    const char *last = strrchr(ref.repo, '/') ? strrchr(ref.repo, '/') + 1 : ref.repo;
    short_name = ref.tag ? xasprintf("%s:%s", last, ref.tag) : xasprintf("%s-%.12s", last, ref.digest + 7);
    name = short_name;
  }
  if (store_name_entry(store, p.key, name, out, err) < 0)
    ret = -1;
out:
  if (ret < 0)
    hutch_error_wrap(err, "pull %s", pretty);
  for (size_t i = 0; i < ARRAY_SIZE(ctx.kept); i++)
    if (ctx.kept[i] >= 0)
      close(ctx.kept[i]);
  if (ctx.area.rootfs)
    store_stage_abort(store, &ctx.area);
  oci_manifest_clear(&m);
  plan_clear(&p);
  registry_client_free(client);
  hutch_store_close(store);
  registry_ref_clear(&ref);
  return ret;
}
