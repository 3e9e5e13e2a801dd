/* SPDX-License-Identifier: Apache-2.0 */
/* hutch_sandbox_snapshot: a live sandbox's writable layer kept as an image,
 * a layer over the image the sandbox runs, made as a build's layer is
 * (build_layer.h).  The layer is read while every process of the sandbox
 * is frozen, so that it holds one moment of the sandbox's files, never
 * half of a write that goes on meanwhile; the state lock (state.h) is held
 * throughout, so that no pause or resume of another caller comes between
 * the freeze and the end of the copy. */
#include "config.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "build_layer.h"
#include "idmap.h"
#include "proc_stat.h"
#include "sandbox.h"
#include "sandbox_fds.h"
#include "state.h"
#include "store.h"
#include "util.h"

/* The store the sandbox's image is in, and the image's digest: its root
 * is "STORE/images/sha256-HEX/rootfs" (store.h). */
static int image_of(const char *rootfs, char **store, char hex[SHA256_HEX_SIZE]) {
  static const char mid[] = "/images/sha256-", tail[] = "/rootfs";
  const char *p = rootfs ? strstr(rootfs, mid) : NULL;
  while (p && strstr(p + 1, mid))
    p = strstr(p + 1, mid);
  if (p == NULL || p == rootfs)
    return -1;
  const char *h = p + strlen(mid);
  if (!store_is_hex(h, SHA256_HEX_SIZE - 1) || strcmp(h + SHA256_HEX_SIZE - 1, tail) != 0)
    return -1;
  *store = xstrndup(rootfs, (size_t)(p - rootfs));
  snprintf(hex, SHA256_HEX_SIZE, "%.*s", SHA256_HEX_SIZE - 1, h);
  return 0;
}

static bool same_dir(const char *a, const char *b) {
  char ra[PATH_MAX], rb[PATH_MAX];
  return realpath(a, ra) && realpath(b, rb) && strcmp(ra, rb) == 0;
}

/* The image the sandbox runs, from the store it is in (o->store must be
 * that one: a layer's lowers are entries of its own store). */
static int open_base(struct hutch_sandbox *sb, const struct hutch_snapshot_options *o, struct hutch_store **store,
                     struct hutch_image *base, hutch_error_t *err) {
  struct sandbox_state st;
  if (state_read(sb->state_fd, sb->id, &st, err) < 0)
    return -1;
  _cleanup_free_ char *own = NULL;
  char hex[SHA256_HEX_SIZE];
  bool fuse = st.overlay_fuse;
  int r = image_of(st.rootfs, &own, hex);
  state_clear(&st);
  if (fuse) {
    hutch_error_set(err, EOPNOTSUPP,
                    "sandbox %s runs on fuse-overlayfs (--overlay fuse), whose layer is not "
                    "the kernel's overlayfs format an image holds",
                    sb->id);
    return hutch_error_hint(err, "make the sandbox without --overlay fuse to snapshot it");
  }
  if (r < 0)
    return hutch_error_set(err, EINVAL, "sandbox %s does not run an image of a store", sb->id);
  if (o->store && !same_dir(o->store, own)) {
    hutch_error_set(err, EXDEV, "sandbox %s runs an image of the store %s, not of %s", sb->id, own, o->store);
    return hutch_error_hint(err, "a snapshot is a layer over that image, in its store: leave out --store");
  }
  _cleanup_free_ char *digest = xasprintf("sha256:%s", hex);
  if (hutch_store_open(own, store, err) < 0)
    return -1;
  /* What a snapshot (or an import) killed during its copy left: a
   * store where only snapshots are made would otherwise keep every such
   * stage.  A build's stage, with its sandbox's state, is left to a build. */
  store_clean_stale_tmp(*store, NULL, NULL);
  if (hutch_image_lookup(*store, digest, base, err) < 0) {
    hutch_error_wrap(err, "the image sandbox %s runs", sb->id);
    return hutch_error_hint(err, "it was removed from the store since the sandbox started; nothing can be "
                                 "layered over it");
  }
  return build_check_depth(base, err);
}

/* Freezes the sandbox unless it is paused already, and copies its layer
 * into dest.  The layer's fd is taken first: a running init hands it over,
 * a frozen one no longer answers. */
static int copy_frozen(struct sandbox_hold *h, struct hutch_sandbox *sb, const char *dest,
                       struct hutch_snapshot_result *out, hutch_error_t *err) {
  if (sandbox_hold_begin(h, sb, err) < 0)
    return -1;
  out->was_paused = h->was_paused;
  out->method = h->method;
  _cleanup_close_ int layer = sandbox_upper_fd(sb, err);
  if (layer < 0 || sandbox_hold_freeze(h, err) < 0)
    return -1;
  out->method = h->method;
  if (build_copy_layer(layer, dest, err) < 0 || sandbox_hold_end(h, err) < 0)
    return -1;
  out->paused_seconds = out->was_paused ? 0 : h->paused_seconds;
  return 0;
}

static void audit_snapshot(struct hutch_sandbox *sb, const struct hutch_snapshot_result *r, const char *name,
                           const struct hutch_image *base) {
  struct audit_rec rec;
  audit_rec_init(&rec, "snapshot");
  audit_rec_caller(&rec);
  audit_rec_str(&rec, "digest", r->digest);
  audit_rec_str(&rec, "name", name);
  audit_rec_str(&rec, "base", base->digest);
  audit_rec_u64(&rec, "bytes", r->size);
  audit_rec_u64(&rec, "files", r->files);
  audit_rec_double(&rec, "paused_ms", r->paused_seconds * 1000);
  audit_rec_str(&rec, "method", hutch_pause_method_name(r->method));
  audit_rec_bool(&rec, "was_paused", r->was_paused);
  hutch_error_t err = NULL;
  _cleanup_close_ int dirfd = openat(sb->state_fd, sb->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dirfd < 0 || audit_append(dirfd, AUDIT_LOG_NAME, 0, &rec, &err) < 0) {
    if (err == NULL)
      hutch_error_sys(&err, "open sandbox %s's state", sb->id);
    hutch_error_wrap(&err, "snapshot %s: its audit record", r->digest);
    hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
  }
  audit_rec_free(&rec);
}

static int snapshot(struct hutch_sandbox *sb, const struct hutch_snapshot_options *o, struct hutch_store *store,
                    const struct hutch_image *base, struct hutch_snapshot_result *out, hutch_error_t *err) {
  const struct idmap_set *maps;
  struct store_stage stage = {.fd = -1};
  if (idmap_for_caller(&maps, err) < 0 || store_stage_begin(store, &stage, err) < 0)
    return -1;
  int r;
  {
    /* Resumed and unlocked on every way out of this block. */
    __attribute__((cleanup(sandbox_hold_cleanup))) struct sandbox_hold h = {.dirfd = -1};
    r = copy_frozen(&h, sb, stage.rootfs, out, err);
  }
  if (r < 0) {
    store_stage_abort(store, &stage);
    return -1;
  }
  build_prune_sandbox_files(stage.rootfs, base, true);
  struct build_tree_stats tree;
  build_tree_stats(stage.rootfs, &tree);
  char hex[SHA256_HEX_SIZE];
  build_layer_digest("hutch-snapshot", base->digest, sb->id, hex);
  _cleanup_free_ char *source = xasprintf("snapshot of sandbox %s", sb->id);
  cJSON *meta = build_layer_meta(hex, source, maps, base, &tree);
  cJSON_AddStringToObject(meta, "snapshot_of", sb->id);
  build_meta_image(meta, base->env, base->workdir);
  r = store_stage_commit(store, &stage, hex, meta, err);
  cJSON_Delete(meta);
  if (r < 0)
    return -1;
  snprintf(out->digest, sizeof(out->digest), "sha256:%s", hex);
  out->size = tree.bytes;
  out->files = tree.entries;
  if (o->name && hutch_image_tag(store, out->digest, o->name, err) < 0)
    return hutch_error_wrap(err, "name the snapshot %s", out->digest);
  return 0;
}

int hutch_sandbox_snapshot(struct hutch_sandbox *sb, const struct hutch_snapshot_options *o,
                           struct hutch_snapshot_result *out, hutch_error_t *err) {
  static const struct hutch_snapshot_options defaults = {0};
  *out = (struct hutch_snapshot_result){0};
  if (o == NULL)
    o = &defaults;
  if (o->processes) {
    hutch_error_set(err, EOPNOTSUPP, "a snapshot of a sandbox's processes is not supported by this version");
    return hutch_error_hint(err, "leave out --processes: the snapshot then holds the sandbox's files");
  }
  if (o->name && !hutch_image_name_valid(o->name))
    return hutch_error_set(err, EINVAL, "\"%s\" is not a valid image name", o->name);
  if (!proc_stat_alive(sb->pid, sb->start_time)) {
    hutch_error_set(err, ESRCH, "sandbox %s is not running", sb->id);
    return hutch_error_hint(err, "remove it with `hutch rm %s`", sb->id);
  }
  struct hutch_store *store = NULL;
  struct hutch_image base = {0};
  int r = open_base(sb, o, &store, &base, err);
  if (r == 0)
    r = snapshot(sb, o, store, &base, out, err);
  if (r == 0)
    audit_snapshot(sb, out, o->name, &base);
  hutch_image_clear(&base);
  if (store)
    hutch_store_close(store);
  return r < 0 ? hutch_error_wrap(err, "snapshot of sandbox %s", sb->id) : 0;
}
