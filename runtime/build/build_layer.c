/* SPDX-License-Identifier: Apache-2.0 */
/* A sandbox's writable layer made into a store entry over its image: what
 * the recipe builder, the Dockerfile builder and a snapshot share
 * (build_layer.h). */
#include "config.h"

#include <linux/openat2.h>

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "build_layer.h"
#include "layer_copy.h"
#include "sandbox.h"
#include "sandbox_fds.h"
#include "sha256.h"
#include "store.h"
#include "util.h"

int build_check_depth(const struct hutch_image *top, hutch_error_t *err) {
  size_t trees = 1;
  while (top->lowers && top->lowers[trees - 1])
    trees++;
  if (trees + 1 <= HUTCH_IMAGE_MAX_LAYERS)
    return 0;
  hutch_error_set(err, EFBIG, "%s has %zu layers, one more would make %zu: an image may have at most %d layers",
                  top->name ? top->name : top->digest, trees, trees + 1, HUTCH_IMAGE_MAX_LAYERS);
  return hutch_error_hint(err,
                          "build on an image of fewer layers (join the RUN steps of the Dockerfile that "
                          "made it), or on its flattened copy (`hutch rootfs export`, then `hutch rootfs import`)");
}

int build_open_layer(struct hutch_sandbox *sb, hutch_error_t *err) {
  if (sb->layer_fd >= 0) {
    int fd = fcntl(sb->layer_fd, F_DUPFD_CLOEXEC, 0);
    return fd >= 0 ? fd : hutch_error_sys(err, "open the layer");
  }
  return sandbox_upper_fd(sb, err);
}

int build_copy_layer(int layer, const char *dest, hutch_error_t *err) {
  return layer_copy_out(layer, dest, err) < 0 ? hutch_error_wrap(err, "copy the layer to %s", dest) : 0;
}

int build_copy_sandbox_layer(struct hutch_sandbox *sb, const char *dest, hutch_error_t *err) {
  _cleanup_close_ int layer = build_open_layer(sb, err);
  return layer < 0 ? hutch_error_wrap(err, "copy the layer to %s", dest) : build_copy_layer(layer, dest, err);
}

/* Whether `rel` is a regular file somewhere in the image's layers. */
static bool image_has_file(const struct hutch_image *img, const char *rel) {
  for (size_t i = 0; i == 0 || (img->lowers && img->lowers[i - 1]); i++) {
    const char *tree = i == 0 ? img->rootfs : img->lowers[i - 1];
    _cleanup_free_ char *path = xasprintf("%s/%s", tree, rel);
    struct stat st;
    if (lstat(path, &st) == 0)
      return S_ISREG(st.st_mode);
  }
  return false;
}

/* What the sandbox itself put in its upper layer is about that one sandbox
 * (its proxy's address, its name servers): it must not become part of the
 * image.  The tool configurations carry hutch's marker; /etc/hosts and
 * /etc/resolv.conf are the sandbox's when the base has no such file. */
/* Removes rel from the stage, if it is there and (marked_only) carries
 * hutch's marker.  The stage holds what the build's sandbox wrote, where
 * any directory may be a symlink to anywhere on the host: every name is
 * reached from the stage's fd without following one, and only a regular
 * file is read. */
static void remove_from_stage(int stage, const char *rel, bool marked_only) {
  _cleanup_free_ char *parent = xstrdup(rel);
  char *slash = strrchr(parent, '/');
  if (slash == NULL)
    return;
  *slash = '\0';
  _cleanup_close_ int dir = openat2_retry(stage, parent, O_PATH | O_DIRECTORY, 0,
                                          RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
  if (dir < 0)
    return;
  if (marked_only) {
    _cleanup_free_ char *text = read_regular_file_at(dir, slash + 1, 4096, NULL);
    if (text == NULL || (strncmp(text, "// Written by hutch", 19) != 0 && strncmp(text, "# Written by hutch", 18) != 0))
      return;
  }
  unlinkat(dir, slash + 1, 0);
}

void build_prune_sandbox_files(const char *upper, const struct hutch_image *base, bool live) {
  _cleanup_close_ int stage = open(upper, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (stage < 0)
    return;
  static const char *const marked[] = {"etc/apt/apt.conf.d/00hutch-proxy", "etc/pip.conf", "etc/gitconfig"};
  for (size_t i = 0; i < ARRAY_SIZE(marked); i++)
    remove_from_stage(stage, marked[i], true);
  /* A build's sandbox has them bound over the image's files, and in its
   * layer only where the image has none; a live one writes them into its
   * layer (contain.c: step_etc_in_upper), over the image's. */
  static const char *const provided[] = {"etc/hosts", "etc/resolv.conf"};
  for (size_t i = 0; i < ARRAY_SIZE(provided); i++)
    if (live || !image_has_file(base, provided[i]))
      remove_from_stage(stage, provided[i], false);
  /* The etc/ made to hold them, when nothing else is in it. */
  if (live)
    unlinkat(stage, "etc", AT_REMOVEDIR);
}

/* "…/images/sha256-HEX/rootfs" -> "sha256:HEX" */
static char *tree_digest(const char *tree) {
  const char *p = strstr(tree, "/images/sha256-");
  if (p == NULL)
    return NULL;
  p += strlen("/images/sha256-");
  return xasprintf("sha256:%.*s", SHA256_HEX_SIZE - 1, p);
}

static struct build_tree_stats tree; /* of the walk under way (nftw has no data pointer) */
static int count_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  if (ftw->level > 0)
    tree.entries++;
  if (flag == FTW_F && S_ISREG(st->st_mode))
    tree.bytes += (uint64_t)st->st_size;
  if (st->st_uid != geteuid() || st->st_gid != getegid())
    tree.foreign_ids = true;
  return 0;
}

void build_tree_stats(const char *dir, struct build_tree_stats *out) {
  tree = (struct build_tree_stats){0};
  nftw(dir, count_entry, 16, FTW_PHYS);
  *out = tree;
}

uint64_t build_tree_bytes(const char *dir, bool *foreign_ids) {
  struct build_tree_stats t;
  build_tree_stats(dir, &t);
  *foreign_ids = t.foreign_ids;
  return t.bytes;
}

void build_add_lowers(struct cJSON *meta, const struct hutch_image *base) {
  cJSON *lowers = cJSON_AddArrayToObject(meta, "lowers");
  cJSON_AddItemToArray(lowers, cJSON_CreateString(base->digest));
  for (char **l = base->lowers; l && *l; l++) {
    _cleanup_free_ char *d = tree_digest(*l);
    if (d)
      cJSON_AddItemToArray(lowers, cJSON_CreateString(d));
  }
}

void build_layer_digest(const char *kind, const char *base_digest, const char *text, char hex[SHA256_HEX_SIZE]) {
  struct sha256_ctx ctx;
  sha256_init(&ctx);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint8_t rnd[16] = {0};
  if (getrandom(rnd, sizeof(rnd), 0) < 0)
    memset(rnd, 0, sizeof(rnd));
  _cleanup_free_ char *head = xasprintf("%s\n%s\n%lld.%09ld\n", kind, base_digest, (long long)ts.tv_sec, ts.tv_nsec);
  sha256_update(&ctx, head, strlen(head));
  sha256_update(&ctx, rnd, sizeof(rnd));
  sha256_update(&ctx, text, strlen(text));
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_final(&ctx, d);
  sha256_hex(d, hex);
}

struct cJSON *build_layer_meta(const char *hex, const char *source, const struct idmap_set *maps,
                               const struct hutch_image *base, const struct build_tree_stats *t) {
  struct unpack_stats stats = {0};
  cJSON *j = store_meta_new(hex, source, maps, &stats);
  cJSON_ReplaceItemInObjectCaseSensitive(j, "size", cJSON_CreateNumber((double)t->bytes));
  /* Owners other than the caller need the subordinate range to run, in the
   * layer as in the base. */
  cJSON_ReplaceItemInObjectCaseSensitive(j, "ids_preserved", cJSON_CreateBool(base->ids_preserved || t->foreign_ids));
  build_add_lowers(j, base);
  cJSON_AddStringToObject(j, "built_from", base->name ? base->name : base->digest);
  return j;
}

void build_meta_image(struct cJSON *meta, char *const *env, const char *workdir) {
  if ((env == NULL || env[0] == NULL) && workdir == NULL)
    return;
  cJSON *img = cJSON_AddObjectToObject(meta, "image");
  cJSON *arr = cJSON_AddArrayToObject(img, "env");
  for (char *const *e = env; e && *e; e++)
    cJSON_AddItemToArray(arr, cJSON_CreateString(*e));
  if (workdir)
    cJSON_AddStringToObject(img, "workdir", workdir);
}
