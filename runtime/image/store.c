/* SPDX-License-Identifier: Apache-2.0 */
/* The rootfs store: content-addressed images, names, and the stat index that
 * makes re-importing an unchanged file O(1).  See store.h for the layout. */
#include "config.h"

#include "store.h"

#include <cJSON.h>
#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pwd.h>
#include <sched.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>

#include "paths.h"
#include "policy.h"
#include "util.h"

/* A tmp directory younger than this may be one whose creator has not locked
 * it yet; it is never taken for a leftover. */
#define STALE_TMP_SECONDS 2

/* ---- opening ---------------------------------------------------------- */

int hutch_store_open(const char *path, struct hutch_store **out, hutch_error_t *err) {
  _cleanup_free_ char *p = path ? xstrdup(path) : paths_default_store();
  if (p[0] == '\0')
    return hutch_error_set(err, EINVAL, "rootfs store: the store path is empty");
  _cleanup_close_ int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    /* 0700 throughout: images hold setuid binaries whose owners are real
     * (or subordinate) ids on this host, and no other user may run them. */
    if (mkdir_p(p, 0700) < 0) {
      hutch_error_sys(err, "rootfs store: create %s", p);
      return hutch_error_hint(err, "choose another location with --store DIR or HUTCH_STORE");
    }
    fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  if (fd < 0)
    return hutch_error_sys(err, "rootfs store: open %s", p);
  _cleanup_free_ char *real = fd_path(fd);
  if (real == NULL && (real = realpath(p, NULL)) == NULL)
    return hutch_error_sys(err, "rootfs store: resolve %s", p);
  /* Made in this order: the last one there means all are (one lookup on
   * every start, not four mkdir). */
  static const char *const subdirs[] = {"images", "names", "index", "tmp"};
  struct stat st;
  bool made = fstatat(fd, "tmp", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
  for (size_t i = 0; !made && i < ARRAY_SIZE(subdirs); i++)
    if (mkdirat(fd, subdirs[i], 0700) < 0 && errno != EEXIST) {
      hutch_error_sys(err, "rootfs store: create %s/%s", real, subdirs[i]);
      return hutch_error_hint(err, "check the permissions of %s, or choose another store with --store DIR", real);
    }
  struct hutch_store *s = xcalloc(1, sizeof(*s));
  s->path = steal_pointer(&real);
  s->fd = steal_fd(&fd);
  *out = s;
  return 0;
}

void hutch_store_close(struct hutch_store *store) {
  if (store == NULL)
    return;
  if (store->fd >= 0)
    close(store->fd);
  free(store->path);
  free(store);
}

const char *hutch_store_path(const struct hutch_store *store) {
  return store->path;
}

void hutch_image_clear(struct hutch_image *image) {
  if (image == NULL)
    return;
  free(image->name);
  free(image->digest);
  free(image->rootfs);
  cleanup_strvp(&image->env);
  free(image->workdir);
  free(image->user);
  cleanup_strvp(&image->lowers);
  memset(image, 0, sizeof(*image));
}

void hutch_image_list_free(struct hutch_image *images, size_t n) {
  if (images == NULL)
    return;
  for (size_t i = 0; i < n; i++)
    hutch_image_clear(&images[i]);
  free(images);
}

/* ---- pure helpers ----------------------------------------------------- */

bool store_is_hex(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
      return false;
  return true;
}

/* "sha256-<hex>" directory name -> hex, or NULL. */
static const char *entry_hex(const char *dirname) {
  if (strncmp(dirname, "sha256-", 7) != 0)
    return NULL;
  const char *hex = dirname + 7;
  return strlen(hex) == SHA256_HEX_SIZE - 1 && store_is_hex(hex, SHA256_HEX_SIZE - 1) ? hex : NULL;
}

static void random_hex(char *out, size_t bytes) {
  uint8_t buf[16];
  if (bytes > sizeof(buf))
    bytes = sizeof(buf);
  if (getrandom(buf, bytes, 0) != (ssize_t)bytes) {
    /* Uniqueness, not secrecy, is what matters here. */
    uint64_t x = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(monotonic_seconds() * 1e9);
    for (size_t i = 0; i < bytes; i++, x >>= 5)
      buf[i] = (uint8_t)x;
  }
  for (size_t i = 0; i < bytes; i++)
    sprintf(out + 2 * i, "%02x", buf[i]);
}

/* An entry appears whole (one rename), so its directory existing is enough. */
static bool entry_exists(struct hutch_store *store, const char *hex) {
  _cleanup_free_ char *dir = xasprintf("images/sha256-%s", hex);
  struct stat st;
  return fstatat(store->fd, dir, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/* ---- removing trees that hold subordinate ids -------------------------- */

struct remove_job {
  int dirfd;
  char **names;
  size_t n;
};

static int remove_child(void *data, hutch_error_t *err) {
  struct remove_job *job = data;
  for (size_t i = 0; i < job->n; i++)
    if (remove_tree_at(job->dirfd, job->names[i]) < 0)
      return hutch_error_sys(err, "remove %s", job->names[i]);
  return 0;
}

/* Files owned by subordinate ids can only be removed by root of a user
 * namespace that maps them: do it there. */
static int remove_trees(int dirfd, char **names, size_t n, hutch_error_t *err) {
  if (n == 0)
    return 0;
  const struct idmap_set *maps;
  if (idmap_for_caller(&maps, err) < 0)
    return -1;
  struct remove_job job = {dirfd, names, n};
  return userns_run(maps, CLONE_NEWNS, remove_child, &job, err) < 0 ? -1 : 0;
}

/* ---- tmp directories --------------------------------------------------- */

/* A stale directory (locked by the sweep) that holds a sandbox's state
 * ("state": a build's stage) goes only once `vet` has stopped what that
 * sandbox recorded; without a vet it stays for a caller that can. */
static bool stale_may_go(struct hutch_store *store, int fd, const char *name, store_stale_vet vet, void *data) {
  struct stat st;
  if (fstatat(fd, "state", &st, AT_SYMLINK_NOFOLLOW) < 0)
    return true;
  if (vet == NULL)
    return false;
  _cleanup_free_ char *path = xasprintf("%s/tmp/%s", store->path, name);
  return vet(fd, path, data) == 0;
}

struct tmpdir {
  char name[40]; /* below tmp/ */
  int fd;        /* open and flock()ed while in use */
};

static int tmpdir_create(struct hutch_store *store, const char *suffix, struct tmpdir *t, hutch_error_t *err) {
  char rnd[33];
  random_hex(rnd, 8);
  snprintf(t->name, sizeof(t->name), "%s%s", rnd, suffix);
  _cleanup_free_ char *rel = xasprintf("tmp/%s", t->name);
  if (mkdirat(store->fd, rel, 0700) < 0)
    return hutch_error_sys(err, "rootfs store: create %s/%s", store->path, rel);
  t->fd = openat(store->fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (t->fd < 0 || flock(t->fd, LOCK_EX) < 0) {
    hutch_error_sys(err, "rootfs store: lock %s/%s", store->path, rel);
    if (t->fd >= 0)
      close(t->fd);
    t->fd = -1;
    unlinkat(store->fd, rel, AT_REMOVEDIR);
    return -1;
  }
  return 0;
}

/* Remove a tmp directory we hold (its contents may be owned by subordinate ids). */
static int tmpdir_discard(struct hutch_store *store, struct tmpdir *t, hutch_error_t *err) {
  if (t->fd < 0)
    return 0;
  _cleanup_close_ int tmpfd = openat(store->fd, "tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  char *names[] = {t->name};
  int r = tmpfd < 0 ? hutch_error_sys(err, "rootfs store: open tmp") : remove_trees(tmpfd, names, 1, err);
  close(t->fd);
  t->fd = -1;
  return r;
}

void store_clean_stale_tmp(struct hutch_store *store, store_stale_vet vet, void *data) {
  int tmpfd = openat(store->fd, "tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (tmpfd < 0)
    return;
  DIR *d = fdopendir(tmpfd);
  if (d == NULL) {
    close(tmpfd);
    return;
  }
  char **names = NULL;
  int *locks = NULL;
  size_t n = 0;
  time_t now = time(NULL);
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.')
      continue;
    struct stat st;
    if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || now - st.st_ctime < STALE_TMP_SECONDS)
      continue;
    int fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
      continue;
    if (flock(fd, LOCK_EX | LOCK_NB) < 0 || !stale_may_go(store, fd, de->d_name, vet, data)) {
      close(fd);
      continue;
    }
    names = xrealloc(names, (n + 1) * sizeof(*names));
    locks = xrealloc(locks, (n + 1) * sizeof(*locks));
    names[n] = xstrdup(de->d_name);
    locks[n] = fd;
    n++;
  }
  if (n > 0) {
    _cleanup_error_ hutch_error_t e = NULL;
    hutch_debug("rootfs store: removing %zu leftover tmp directories", n);
    if (remove_trees(dirfd(d), names, n, &e) < 0)
      hutch_debug("rootfs store: could not remove leftovers: %s", e->msg);
  }
  for (size_t i = 0; i < n; i++) {
    free(names[i]);
    close(locks[i]);
  }
  free(names);
  free(locks);
  closedir(d);
}

/* ---- names ------------------------------------------------------------- */

/* 1 and hex filled when `name` exists, 0 when it does not, -1 on error. */
static int name_get(struct hutch_store *store, const char *name, char hex[SHA256_HEX_SIZE], hutch_error_t *err) {
  _cleanup_free_ char *rel = xasprintf("names/%s", name);
  char target[256];
  ssize_t n = readlinkat(store->fd, rel, target, sizeof(target) - 1);
  if (n < 0) {
    if (errno == ENOENT)
      return 0;
    return hutch_error_sys(err, "rootfs store: read the name %s", name);
  }
  target[n] = '\0';
  const char *base = strrchr(target, '/');
  const char *h = entry_hex(base ? base + 1 : target);
  if (h == NULL)
    return hutch_error_set(err, EINVAL, "rootfs store: the name %s points at \"%s\", not an image", name, target);
  memcpy(hex, h, SHA256_HEX_SIZE);
  return 1;
}

static int name_set(struct hutch_store *store, const char *name, const char *hex, hutch_error_t *err) {
  _cleanup_free_ char *target = xasprintf("../images/sha256-%s", hex);
  char rnd[17];
  random_hex(rnd, 8);
  _cleanup_free_ char *tmp = xasprintf("names/.%s.%s", name, rnd);
  _cleanup_free_ char *rel = xasprintf("names/%s", name);
  if (symlinkat(target, store->fd, tmp) < 0)
    return hutch_error_sys(err, "rootfs store: create the name %s", name);
  if (renameat(store->fd, tmp, store->fd, rel) < 0) {
    hutch_error_sys(err, "rootfs store: set the name %s", name);
    unlinkat(store->fd, tmp, 0);
    return -1;
  }
  return 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A store subdirectory as a DIR (NULL with errno set); closedir() frees it. */
static DIR *store_opendir(struct hutch_store *store, const char *sub) {
  int fd = openat(store->fd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd < 0 ? NULL : fdopendir(fd);
  if (d == NULL && fd >= 0) {
    int saved = errno;
    close(fd);
    errno = saved;
  }
  return d;
}

/* Sorted names pointing at hex (all names when hex is NULL, with their
 * targets in hexes[]). */
static int names_list(struct hutch_store *store, const char *hex, char ***out, size_t *n_out, hutch_error_t *err) {
  DIR *d = store_opendir(store, "names");
  if (d == NULL) {
    return hutch_error_sys(err, "rootfs store: read %s/names", store->path);
  }
  char **names = NULL;
  size_t n = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.' || !paths_valid_name(de->d_name))
      continue;
    char h[SHA256_HEX_SIZE];
    if (name_get(store, de->d_name, h, NULL) != 1)
      continue;
    if (hex && strcmp(h, hex) != 0)
      continue;
    names = xrealloc(names, (n + 2) * sizeof(*names));
    names[n++] = xstrdup(de->d_name);
    names[n] = NULL;
  }
  closedir(d);
  if (n > 1)
    qsort(names, n, sizeof(*names), cmp_str);
  *out = names;
  *n_out = n;
  return 0;
}

/* ---- meta.json --------------------------------------------------------- */

struct meta {
  uint64_t size;
  int64_t created;
  bool ids_preserved;
};

/* An entry's meta.json is read with this bound, and so never written
 * larger: an image's Env, labels or recipe cannot make an entry that the
 * store can no longer read. */
#define META_MAX (1 << 20)

static int meta_read(struct hutch_store *store, const char *hex, cJSON **out, hutch_error_t *err) {
  _cleanup_free_ char *rel = xasprintf("images/sha256-%s/meta.json", hex);
  _cleanup_free_ char *text = read_file_at(store->fd, rel, META_MAX, NULL);
  if (text == NULL)
    return hutch_error_sys(err, "rootfs store: read %s/%s", store->path, rel);
  cJSON *j = cJSON_Parse(text);
  if (j == NULL || !cJSON_IsObject(j)) {
    cJSON_Delete(j);
    hutch_error_set(err, EINVAL, "rootfs store: %s/%s is not valid JSON", store->path, rel);
    return hutch_error_hint(err, "remove the damaged entry with `hutch rootfs rm sha256:%s`", hex);
  }
  *out = j;
  return 0;
}

static int meta_write(struct hutch_store *store, const char *dir_rel, cJSON *j, hutch_error_t *err) {
  _cleanup_free_ char *text = cJSON_Print(j);
  _cleanup_free_ char *path = xasprintf("%s/%s/meta.json", store->path, dir_rel);
  size_t len = strlen(text);
  if (len + 1 >= META_MAX) {
    hutch_error_set(err, EFBIG, "rootfs store: the image's meta.json would be %zu bytes, more than 1 MiB", len + 1);
    return hutch_error_hint(err, "its environment, labels or recipe are that large: make them smaller");
  }
  text = xrealloc(text, len + 2);
  text[len] = '\n';
  text[len + 1] = '\0';
  if (write_file_atomic(path, text, len + 1, 0644) < 0)
    return hutch_error_sys(err, "rootfs store: write %s", path);
  return 0;
}

/* The names directory is authoritative; meta.json carries a copy for people
 * and tools that look at an entry on its own. */
static int meta_sync_names(struct hutch_store *store, const char *hex, hutch_error_t *err) {
  if (!entry_exists(store, hex))
    return 0;
  cJSON *j = NULL;
  if (meta_read(store, hex, &j, err) < 0)
    return -1;
  _cleanup_strv_ char **names = NULL;
  size_t n = 0;
  int r = names_list(store, hex, &names, &n, err);
  if (r == 0) {
    cJSON_DeleteItemFromObjectCaseSensitive(j, "names");
    cJSON_AddItemToObject(j, "names", cJSON_CreateStringArray((const char *const *)names, (int)n));
    _cleanup_free_ char *dir = xasprintf("images/sha256-%s", hex);
    r = meta_write(store, dir, j, err);
  }
  cJSON_Delete(j);
  return r;
}

static void meta_fields(const cJSON *j, struct meta *m) {
  const cJSON *v;
  memset(m, 0, sizeof(*m));
  if ((v = cJSON_GetObjectItemCaseSensitive(j, "size")) && cJSON_IsNumber(v))
    m->size = v->valuedouble > 0 ? (uint64_t)v->valuedouble : 0;
  if ((v = cJSON_GetObjectItemCaseSensitive(j, "created")) && cJSON_IsNumber(v))
    m->created = (int64_t)v->valuedouble;
  m->ids_preserved = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "ids_preserved"));
}

/* A built image's "lowers": the digests of the images below its layer,
 * nearest first, as the trees an overlay stacks under it. */
static int meta_lowers(struct hutch_store *store, const char *hex, const cJSON *j, char ***out, hutch_error_t *err) {
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(j, "lowers");
  *out = NULL;
  if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) == 0)
    return 0;
  size_t n = (size_t)cJSON_GetArraySize(arr), i = 0;
  char **lowers = xcalloc(n + 1, sizeof(*lowers));
  const cJSON *item;
  cJSON_ArrayForEach(item, arr) {
    const char *d = cJSON_GetStringValue(item);
    const char *h = d && strncmp(d, "sha256:", 7) == 0 ? d + 7 : NULL;
    if (h == NULL || strlen(h) != SHA256_HEX_SIZE - 1 || !store_is_hex(h, SHA256_HEX_SIZE - 1) ||
        !entry_exists(store, h)) {
      cleanup_strvp(&lowers);
      hutch_error_set(err, ENOENT, "rootfs store: image sha256:%.12s is built on %s, which is not in the store", hex,
                      d ? d : "(invalid)");
      return hutch_error_hint(err,
                              "build the image again (`hutch rootfs build`), or remove it with `hutch rootfs rm "
                              "sha256:%s`",
                              hex);
    }
    lowers[i++] = xasprintf("%s/images/sha256-%s/rootfs", store->path, h);
  }
  *out = lowers;
  return 0;
}

/* Whether an image built on `hex` is in the store (its layer needs it). */
static bool entry_has_dependents(struct hutch_store *store, const char *hex) {
  DIR *d = store_opendir(store, "images");
  if (d == NULL)
    return false;
  _cleanup_free_ char *digest = xasprintf("sha256:%s", hex);
  bool found = false;
  struct dirent *de;
  while (!found && (de = readdir(d)) != NULL) {
    const char *eh = entry_hex(de->d_name);
    cJSON *j = NULL;
    if (eh == NULL || strcmp(eh, hex) == 0 || meta_read(store, eh, &j, NULL) < 0)
      continue;
    const cJSON *item, *arr = cJSON_GetObjectItemCaseSensitive(j, "lowers");
    cJSON_ArrayForEach(item, arr) {
      const char *v = cJSON_GetStringValue(item);
      if (v && strcmp(v, digest) == 0)
        found = true;
    }
    cJSON_Delete(j);
  }
  closedir(d);
  return found;
}

/* The image's defaults recorded in an entry's meta.json (NULL when none):
 * written by the importer (oci.c), read back here. */
static void meta_defaults(const struct cJSON *meta, char ***env, char **workdir, char **user) {
  *env = NULL;
  *workdir = *user = NULL;
  const cJSON *img = cJSON_GetObjectItemCaseSensitive(meta, "image");
  if (!cJSON_IsObject(img))
    return;
  const cJSON *e = cJSON_GetObjectItemCaseSensitive(img, "env");
  if (cJSON_IsArray(e)) {
    size_t n = 0;
    *env = xcalloc((size_t)cJSON_GetArraySize(e) + 1, sizeof(char *));
    const cJSON *item;
    cJSON_ArrayForEach(item, e) {
      if (cJSON_IsString(item) && strchr(item->valuestring, '='))
        (*env)[n++] = xstrdup(item->valuestring);
    }
  }
  const cJSON *w = cJSON_GetObjectItemCaseSensitive(img, "workdir");
  if (cJSON_IsString(w) && w->valuestring[0] == '/')
    *workdir = xstrdup(w->valuestring);
  const cJSON *u = cJSON_GetObjectItemCaseSensitive(img, "user");
  if (cJSON_IsString(u) && u->valuestring[0])
    *user = xstrdup(u->valuestring);
}

static int image_fill(struct hutch_store *store, const char *hex, const char *name, struct hutch_image *out,
                      hutch_error_t *err) {
  cJSON *j = NULL;
  if (meta_read(store, hex, &j, err) < 0)
    return -1;
  struct meta m;
  meta_fields(j, &m);
  memset(out, 0, sizeof(*out));
  out->name = name ? xstrdup(name) : NULL;
  out->digest = xasprintf("sha256:%s", hex);
  out->rootfs = xasprintf("%s/images/sha256-%s/rootfs", store->path, hex);
  out->size = m.size;
  out->created = m.created;
  out->ids_preserved = m.ids_preserved;
  meta_defaults(j, &out->env, &out->workdir, &out->user);
  int r = meta_lowers(store, hex, j, &out->lowers, err);
  cJSON_Delete(j);
  if (r < 0)
    hutch_image_clear(out);
  return r;
}

/* ---- the stat index ---------------------------------------------------- */

/* Read and written by imports (import.c); an entry's lines go with it. */
static void index_forget(struct hutch_store *store, const char *hex) {
  DIR *d = store_opendir(store, "index");
  if (d == NULL) {
    return;
  }
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    if (de->d_name[0] == '.')
      continue;
    _cleanup_free_ char *text = read_file_at(dirfd(d), de->d_name, 4096, NULL);
    if (text && strstr(text, hex))
      unlinkat(dirfd(d), de->d_name, 0);
  }
  closedir(d);
}

/* ---- resolving a name or digest ---------------------------------------- */

static int not_found(struct hutch_store *store, const char *ref, hutch_error_t *err) {
  hutch_error_set(err, ENOENT, "no image \"%s\" in the store %s", ref, store->path);
  if (strcmp(ref, "default") == 0)
    return hutch_error_hint(err,
                            "build the default image with `hutch rootfs build --from ubuntu:24.04 --recipe "
                            "%s/rootfs/agent.recipe --name default`, or import one with `hutch rootfs import "
                            "FILE --name default`",
                            hutch_data_dir());
  return hutch_error_hint(err, "import one with `hutch rootfs import FILE --name NAME`; `hutch rootfs ls` lists "
                               "what the store holds");
}

/* Fill hex for a name, "sha256:<hex>" or a unique hex prefix; *by_name says
 * which one matched. */
static int resolve(struct hutch_store *store, const char *ref, char hex[SHA256_HEX_SIZE], bool *by_name,
                   hutch_error_t *err) {
  *by_name = false;
  if (paths_valid_name(ref)) {
    int r = name_get(store, ref, hex, err);
    if (r < 0)
      return -1;
    if (r == 1) {
      if (!entry_exists(store, hex)) {
        hutch_error_set(err, ENOENT, "the name %s points at sha256:%s, which is not in the store %s", ref, hex,
                        store->path);
        return hutch_error_hint(err, "import the image again with `hutch rootfs import FILE --name %s`", ref);
      }
      *by_name = true;
      return 0;
    }
  }
  bool prefixed = strncmp(ref, "sha256:", 7) == 0;
  const char *h = prefixed ? ref + 7 : ref;
  size_t len = strlen(h);
  if (len < STORE_MIN_PREFIX || len > SHA256_HEX_SIZE - 1 || !store_is_hex(h, len)) {
    if (!prefixed)
      return not_found(store, ref, err);
    hutch_error_set(err, EINVAL, "\"%s\" is not a digest", ref);
    return hutch_error_hint(err, "give a name, sha256:<64 hex digits>, or at least %d hex digits of a digest",
                            STORE_MIN_PREFIX);
  }
  DIR *d = store_opendir(store, "images");
  if (d == NULL) {
    return hutch_error_sys(err, "rootfs store: read %s/images", store->path);
  }
  int matches = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    const char *eh = entry_hex(de->d_name);
    if (eh && strncmp(eh, h, len) == 0) {
      if (matches++ == 0)
        memcpy(hex, eh, SHA256_HEX_SIZE);
    }
  }
  closedir(d);
  if (matches > 1) {
    hutch_error_set(err, EINVAL, "the digest prefix %s matches %d images", h, matches);
    return hutch_error_hint(err, "give more digits (`hutch rootfs ls` shows the images)");
  }
  if (matches == 0 || !entry_exists(store, hex))
    return not_found(store, ref, err);
  return 0;
}

int hutch_image_lookup(struct hutch_store *store, const char *name_or_digest, struct hutch_image *out,
                       hutch_error_t *err) {
  char hex[SHA256_HEX_SIZE];
  bool by_name;
  if (resolve(store, name_or_digest, hex, &by_name, err) < 0)
    return -1;
  if (by_name)
    return image_fill(store, hex, name_or_digest, out, err);
  _cleanup_strv_ char **names = NULL;
  size_t n = 0;
  if (names_list(store, hex, &names, &n, err) < 0)
    return -1;
  return image_fill(store, hex, n > 0 ? names[0] : NULL, out, err);
}

/* ---- listing ----------------------------------------------------------- */

static int cmp_image(const void *a, const void *b) {
  const struct hutch_image *x = a, *y = b;
  if (x->name && y->name)
    return strcmp(x->name, y->name);
  if (x->name || y->name)
    return x->name ? -1 : 1;
  if (x->created != y->created)
    return x->created < y->created ? -1 : 1;
  return strcmp(x->digest, y->digest);
}

int hutch_image_list(struct hutch_store *store, struct hutch_image **out, size_t *n_out, hutch_error_t *err) {
  DIR *d = store_opendir(store, "images");
  if (d == NULL) {
    return hutch_error_sys(err, "rootfs store: read %s/images", store->path);
  }
  struct hutch_image *list = NULL;
  size_t n = 0;
  int ret = 0;
  struct dirent *de;
  while ((de = readdir(d)) != NULL) {
    const char *hex = entry_hex(de->d_name);
    if (hex == NULL)
      continue;
    _cleanup_strv_ char **names = NULL;
    size_t nn = 0;
    if (names_list(store, hex, &names, &nn, err) < 0) {
      ret = -1;
      break;
    }
    for (size_t i = 0; i < (nn ? nn : 1); i++) {
      list = xrealloc(list, (n + 1) * sizeof(*list));
      _cleanup_error_ hutch_error_t e = NULL;
      if (image_fill(store, hex, nn ? names[i] : NULL, &list[n], &e) < 0) {
        /* One damaged entry must not hide the others. */
        hutch_warn("%s; skipped (`hutch rootfs rm sha256:%s` removes it)", e->msg, hex);
        break;
      }
      n++;
    }
  }
  closedir(d);
  if (ret < 0) {
    hutch_image_list_free(list, n);
    return -1;
  }
  if (n > 1)
    qsort(list, n, sizeof(*list), cmp_image);
  *out = list;
  *n_out = n;
  return 0;
}

/* ---- removal ----------------------------------------------------------- */

static int entry_remove(struct hutch_store *store, const char *hex, hutch_error_t *err) {
  if (entry_has_dependents(store, hex)) {
    /* Its tree is a lower layer of a built image: it stays, unnamed, until
     * that image is removed. */
    hutch_notice("sha256:%.12s stays in the store, unnamed, while images built on it exist (`hutch rootfs ls` "
                 "lists them)",
                 hex);
    return 0;
  }
  struct tmpdir t = {.fd = -1};
  if (tmpdir_create(store, "-rm", &t, err) < 0)
    return -1;
  /* One rename makes the entry disappear; the slow part happens out of sight. */
  _cleanup_free_ char *from = xasprintf("images/sha256-%s", hex);
  _cleanup_free_ char *to = xasprintf("tmp/%s/entry", t.name);
  if (renameat(store->fd, from, store->fd, to) < 0) {
    hutch_error_sys(err, "rootfs store: move %s/%s aside", store->path, from);
    tmpdir_discard(store, &t, NULL);
    return -1;
  }
  index_forget(store, hex);
  if (tmpdir_discard(store, &t, err) < 0)
    return hutch_error_wrap(err, "rootfs store: remove sha256:%s (a later import retries)", hex);
  return 0;
}

int hutch_image_remove(struct hutch_store *store, const char *name_or_digest, hutch_error_t *err) {
  char hex[SHA256_HEX_SIZE];
  bool by_name;
  if (resolve(store, name_or_digest, hex, &by_name, err) < 0)
    return -1;
  _cleanup_strv_ char **names = NULL;
  size_t n = 0;
  if (by_name) {
    _cleanup_free_ char *rel = xasprintf("names/%s", name_or_digest);
    if (unlinkat(store->fd, rel, 0) < 0 && errno != ENOENT)
      return hutch_error_sys(err, "rootfs store: remove the name %s", name_or_digest);
    if (names_list(store, hex, &names, &n, err) < 0)
      return -1;
    if (n > 0) /* other names still use the entry */
      return meta_sync_names(store, hex, err);
  } else {
    /* A digest names the entry itself: it goes with every name on it. */
    if (names_list(store, hex, &names, &n, err) < 0)
      return -1;
    for (size_t i = 0; i < n; i++) {
      _cleanup_free_ char *rel = xasprintf("names/%s", names[i]);
      if (unlinkat(store->fd, rel, 0) < 0 && errno != ENOENT)
        return hutch_error_sys(err, "rootfs store: remove the name %s", names[i]);
    }
  }
  return entry_remove(store, hex, err);
}

int store_name_entry(struct hutch_store *store, const char *hex, const char *name, struct hutch_image *out,
                     hutch_error_t *err) {
  if (name) {
    char old[SHA256_HEX_SIZE];
    int had = name_get(store, name, old, NULL);
    if (name_set(store, name, hex, err) < 0)
      return -1;
    if (meta_sync_names(store, hex, err) < 0)
      return -1;
    if (had == 1 && strcmp(old, hex) != 0) {
      _cleanup_strv_ char **left = NULL;
      size_t n = 0;
      meta_sync_names(store, old, NULL);
      if (entry_exists(store, old) && names_list(store, old, &left, &n, NULL) == 0 && n == 0)
        hutch_notice("the name %s moved; its previous image sha256:%.12s has no name now (`hutch rootfs rm "
                     "sha256:%s` removes it)",
                     name, old, old);
    }
  }
  if (out && image_fill(store, hex, name, out, err) < 0)
    return -1;
  if (out && out->name == NULL) {
    _cleanup_strv_ char **names = NULL;
    size_t n = 0;
    if (names_list(store, hex, &names, &n, NULL) == 0 && n > 0)
      out->name = xstrdup(names[0]);
  }
  return 0;
}

/* ---- for importers of image formats (store.h) -------------------------- */

bool store_has_entry(struct hutch_store *store, const char *hex) {
  return entry_exists(store, hex);
}

int store_stage_begin(struct hutch_store *store, struct store_stage *stage, hutch_error_t *err) {
  struct tmpdir t = {.fd = -1};
  memset(stage, 0, sizeof(*stage));
  stage->fd = -1;
  if (tmpdir_create(store, "", &t, err) < 0)
    return -1;
  memcpy(stage->name, t.name, sizeof(stage->name));
  stage->fd = t.fd;
  stage->rootfs = xasprintf("%s/tmp/%s/rootfs", store->path, t.name);
  if (mkdirat(t.fd, "rootfs", 0755) < 0) {
    hutch_error_sys(err, "rootfs store: create %s", stage->rootfs);
    store_stage_abort(store, stage);
    return -1;
  }
  return 0;
}

int store_import_begin(struct hutch_store *store, const struct idmap_set **maps, struct import_budget *budget,
                       struct store_stage *stage, hutch_error_t *err) {
  if (idmap_for_caller(maps, err) < 0 || policy_import_budget(NULL, budget, err) < 0)
    return -1;
  return store_stage_begin(store, stage, err);
}

void store_stage_abort(struct hutch_store *store, struct store_stage *stage) {
  struct tmpdir t = {.fd = stage->fd};
  memcpy(t.name, stage->name, sizeof(t.name));
  _cleanup_error_ hutch_error_t e = NULL;
  if (tmpdir_discard(store, &t, &e) < 0)
    hutch_debug("rootfs store: could not remove tmp/%s: %s", stage->name, e->msg);
  free(stage->rootfs);
  stage->rootfs = NULL;
  stage->fd = -1;
}

int store_stage_commit(struct hutch_store *store, struct store_stage *stage, const char *hex, struct cJSON *meta,
                       hutch_error_t *err) {
  _cleanup_free_ char *dir_rel = xasprintf("tmp/%s", stage->name);
  if (entry_exists(store, hex)) {
    store_stage_abort(store, stage);
    return 1;
  }
  if (meta_write(store, dir_rel, meta, err) < 0) {
    store_stage_abort(store, stage);
    return -1;
  }
  _cleanup_free_ char *final = xasprintf("images/sha256-%s", hex);
  if (renameat(store->fd, dir_rel, store->fd, final) < 0) {
    int saved = errno;
    store_stage_abort(store, stage);
    if (saved == EEXIST || saved == ENOTEMPTY)
      return 1;
    errno = saved;
    return hutch_error_sys(err, "rootfs store: move the new image to %s/%s", store->path, final);
  }
  close(stage->fd);
  stage->fd = -1;
  free(stage->rootfs);
  stage->rootfs = NULL;
  return 0;
}

int hutch_image_tag(struct hutch_store *store, const char *name_or_digest, const char *name, hutch_error_t *err) {
  if (!paths_valid_name(name))
    return hutch_error_set(err, EINVAL, "\"%s\" is not a valid image name", name);
  char hex[SHA256_HEX_SIZE];
  bool by_name;
  if (resolve(store, name_or_digest, hex, &by_name, err) < 0)
    return -1;
  char old[SHA256_HEX_SIZE];
  int had = name_get(store, name, old, NULL);
  if (name_set(store, name, hex, err) < 0 || meta_sync_names(store, hex, err) < 0)
    return -1;
  if (had == 1 && strcmp(old, hex) != 0)
    meta_sync_names(store, old, NULL);
  return 0;
}
