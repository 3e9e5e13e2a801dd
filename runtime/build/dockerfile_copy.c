/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "dockerfile_copy.h"

#include <linux/openat2.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util.h"

#define COPY_MAX_DEPTH 256
#define COPY_MAX_NAMES 1000000 /* entries of one directory, all trees together */

/* ---- .dockerignore ------------------------------------------------------------ */

/* "./a//b/" -> "a/b" */
static char *clean_path(const char *s) {
  char *out = xmalloc(strlen(s) + 1);
  size_t n = 0;
  while (*s) {
    while (*s == '/')
      s++;
    if (s[0] == '.' && (s[1] == '/' || s[1] == '\0')) {
      s++;
      continue;
    }
    size_t len = strcspn(s, "/");
    if (len == 0)
      break;
    if (n > 0)
      out[n++] = '/';
    memcpy(out + n, s, len);
    n += len;
    s += len;
  }
  out[n] = '\0';
  return out;
}

/* Where a destination or WORKDIR names in the image: p (relative to wd when
 * it is not absolute) with "." and ".." resolved lexically and clamped at
 * "/", as Docker does, so "/../../x" is "/x".  Never a ".." left in it:
 * the layer directory is the image's root, and a ".." at the top of it is
 * the store (or the host) above. */
char *df_image_path(const char *wd, const char *p) {
  _cleanup_free_ char *joined = p[0] == '/' ? xstrdup(p) : xasprintf("%s/%s", wd ? wd : "/", p);
  char *out = xmalloc(strlen(joined) + 2);
  size_t n = 0;
  for (const char *s = joined; *s;) {
    s += strspn(s, "/");
    size_t len = strcspn(s, "/");
    if (len == 0 || (len == 1 && s[0] == '.')) {
      s += len;
      continue;
    }
    if (len == 2 && s[0] == '.' && s[1] == '.') {
      while (n > 0 && out[n - 1] != '/')
        n--;
      if (n > 0)
        n--; /* the slash before the dropped component */
      s += len;
      continue;
    }
    out[n++] = '/';
    memcpy(out + n, s, len);
    n += len;
    s += len;
  }
  if (n == 0)
    out[n++] = '/';
  out[n] = '\0';
  return out;
}

void df_ignore_parse(const char *text, struct df_ignore *out) {
  memset(out, 0, sizeof(*out));
  for (const char *p = text; p && *p;) {
    size_t len = strcspn(p, "\n");
    _cleanup_free_ char *line = xstrndup(p, len);
    p += len + (p[len] == '\n');
    char *s = line + strspn(line, " \t");
    for (size_t n = strlen(s); n > 0 && strchr(" \t\r", s[n - 1]); n--)
      s[n - 1] = '\0';
    if (*s == '\0' || *s == '#' || out->n >= 10000)
      continue;
    bool neg = *s == '!';
    _cleanup_free_ char *clean = clean_path(s + neg);
    if (*clean == '\0')
      continue;
    out->patterns = xrealloc(out->patterns, (out->n + 2) * sizeof(char *));
    out->patterns[out->n++] = xasprintf("%s%s", neg ? "!" : "", clean);
    out->patterns[out->n] = NULL;
  }
}

void df_ignore_clear(struct df_ignore *ig) {
  cleanup_strvp(&ig->patterns);
  ig->n = 0;
}

/* A pattern matches the path or one of its parents ("dir" excludes
 * "dir/x"); "**" matches any number of directories. */
static bool pattern_matches(const char *pat, const char *rel) {
  bool deep = strstr(pat, "**") != NULL;
  _cleanup_free_ char *prefix = xstrdup(rel);
  for (;;) {
    if (fnmatch(pat, prefix, deep ? 0 : FNM_PATHNAME) == 0)
      return true;
    /* A leading double star and slash also matches no directory at all. */
    if (strncmp(pat, "**/", 3) == 0 && fnmatch(pat + 3, prefix, 0) == 0)
      return true;
    char *slash = strrchr(prefix, '/');
    if (slash == NULL)
      return false;
    *slash = '\0';
  }
}

bool df_ignored(const struct df_ignore *ig, const char *rel) {
  bool ignored = false;
  for (size_t i = 0; ig && i < ig->n; i++) {
    const char *pat = ig->patterns[i];
    bool neg = pat[0] == '!';
    if (pattern_matches(pat + neg, rel))
      ignored = !neg;
  }
  return ignored;
}

/* ---- the source trees ------------------------------------------------------------ */

static bool whiteout(const struct stat *st) {
  return S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0);
}

/* The topmost tree's rel (O_PATH, not following a last link unless
 * follow), or -1: ENOENT (absent or whited out), EXDEV (a link out of the
 * context), ELOOP (a link in a stage's tree). */
static int source_open(const struct df_copy *c, const char *rel, bool follow, struct stat *st) {
  for (size_t i = 0; i < c->n_trees; i++) {
    uint64_t resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | (c->context ? 0 : RESOLVE_NO_SYMLINKS);
    int fd = openat2_retry(c->trees[i], *rel ? rel : ".", O_PATH | (follow && c->context ? 0 : O_NOFOLLOW), 0, resolve);
    if (fd < 0 && errno == ENOENT)
      continue;
    if (fd < 0)
      return -1;
    if (fstat(fd, st) < 0) {
      close(fd);
      return -1;
    }
    if (whiteout(st)) {
      close(fd);
      errno = ENOENT;
      return -1;
    }
    return fd;
  }
  errno = ENOENT;
  return -1;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The names of directory rel in every tree, sorted, each once. */
static char **source_list(const struct df_copy *c, const char *rel, hutch_error_t *err) {
  char **names = NULL;
  size_t n = 0;
  for (size_t i = 0; i < c->n_trees; i++) {
    uint64_t resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | (c->context ? 0 : RESOLVE_NO_SYMLINKS);
    int fd = openat2_retry(c->trees[i], *rel ? rel : ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0, resolve);
    if (fd < 0)
      continue;
    DIR *d = fdopendir(fd);
    if (d == NULL) {
      close(fd);
      continue;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
      if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
        continue;
      if (n >= COPY_MAX_NAMES) {
        closedir(d);
        cleanup_strvp(&names);
        hutch_error_set(err, E2BIG, "%s: more than %d entries", rel, COPY_MAX_NAMES);
        return NULL;
      }
      names = xrealloc(names, (n + 2) * sizeof(*names));
      names[n++] = xstrdup(de->d_name);
      names[n] = NULL;
    }
    closedir(d);
    if (c->context)
      break; /* one tree */
  }
  if (names == NULL)
    names = xcalloc(1, sizeof(*names));
  /* Each name once, whichever trees have it (sorted, duplicates dropped:
   * linear, where a search per name would be quadratic). */
  qsort(names, n, sizeof(*names), cmp_str);
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (k > 0 && strcmp(names[k - 1], names[i]) == 0) {
      free(names[i]);
      continue;
    }
    names[k++] = names[i];
  }
  names[k] = NULL;
  return names;
}

static int source_error(const struct df_copy *c, const char *rel, hutch_error_t *err) {
  if (errno == EXDEV)
    return hutch_error_set(err, EXDEV, "%s: a link that leads out of the build context", rel);
  if (errno == ELOOP && !c->context)
    return hutch_error_set(err, ELOOP, "%s: a symbolic link on the way (not followed in a stage's files)", rel);
  if (errno == ENOENT)
    return hutch_error_set(err, ENOENT, "%s: no such file or directory in the %s", rel,
                           c->context ? "build context" : "stage");
  return hutch_error_sys(err, "%s", rel);
}

/* ---- walking the sources ----------------------------------------------------------- */

/* One entry to copy: its source (fd O_PATH, stat) and where it goes in the
 * image (dest, relative to the layer). */
typedef int (*entry_fn)(const struct df_copy *c, const char *rel, int fd, const struct stat *st, const char *dest,
                        void *data, hutch_error_t *err);

static int walk(const struct df_copy *c, const char *rel, bool top, const char *dest, int depth, entry_fn fn,
                void *data, hutch_error_t *err) {
  if (depth > COPY_MAX_DEPTH)
    return hutch_error_set(err, ELOOP, "%s: deeper than %d directories", rel, COPY_MAX_DEPTH);
  if (c->context && c->ignore && *rel && df_ignored(c->ignore, rel))
    return top ? hutch_error_set(err, ENOENT, "%s: excluded by .dockerignore", rel) : 0;
  struct stat st;
  _cleanup_close_ int fd = source_open(c, rel, top, &st);
  if (fd < 0)
    return source_error(c, rel, err);
  if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode))
    return 0; /* devices, sockets, fifos: not part of an image's content */
  /* A directory source's contents go into dest; itself only below the top. */
  if (!(top && S_ISDIR(st.st_mode)) && fn(c, rel, fd, &st, dest, data, err) < 0)
    return -1;
  if (!S_ISDIR(st.st_mode))
    return 0;
  _cleanup_strv_ char **names = source_list(c, rel, err);
  if (names == NULL)
    return -1;
  for (char **n = names; *n; n++) {
    _cleanup_free_ char *crel = *rel ? xasprintf("%s/%s", rel, *n) : xstrdup(*n);
    _cleanup_free_ char *cdest = *dest ? xasprintf("%s/%s", dest, *n) : xstrdup(*n);
    struct stat cst;
    int cfd = source_open(c, crel, false, &cst);
    if (cfd < 0 && errno == ENOENT)
      continue; /* whited out */
    if (cfd >= 0)
      close(cfd);
    if (walk(c, crel, false, cdest, depth + 1, fn, data, err) < 0)
      return -1;
  }
  return 0;
}

static bool has_glob(const char *s) {
  return strpbrk(s, "*?[") != NULL;
}

static const char *base_name(const char *s) {
  const char *slash = strrchr(s, '/');
  return slash ? slash + 1 : s;
}

/* Source i, its glob (in the last component) expanded: the paths it names,
 * relative to the trees. */
static char **expand_source(const struct df_copy *c, size_t i, hutch_error_t *err) {
  _cleanup_free_ char *src = clean_path(c->sources[i]);
  if (strcmp(src, "..") == 0 || strncmp(src, "../", 3) == 0)
    return hutch_error_set(err, EXDEV, "%s: outside the build context", c->sources[i]), NULL;
  char **matches = xcalloc(2, sizeof(*matches));
  if (!has_glob(base_name(src))) {
    matches[0] = steal_pointer(&src);
    return matches;
  }
  _cleanup_free_ char *dir = xstrndup(src, (size_t)(base_name(src) - src));
  size_t dl = strlen(dir);
  if (dl > 0)
    dir[dl - 1] = '\0';
  if (has_glob(dir)) {
    free(matches);
    return hutch_error_set(err, ENOTSUP, "%s: a wildcard is supported in the last component only", src), NULL;
  }
  _cleanup_strv_ char **names = source_list(c, dir, err);
  if (names == NULL) {
    free(matches);
    return NULL;
  }
  size_t n = 0;
  for (char **nm = names; *nm; nm++) {
    if (fnmatch(base_name(src), *nm, FNM_PERIOD) != 0)
      continue;
    _cleanup_free_ char *rel = *dir ? xasprintf("%s/%s", dir, *nm) : xstrdup(*nm);
    if (c->context && c->ignore && df_ignored(c->ignore, rel))
      continue;
    matches = xrealloc(matches, (n + 2) * sizeof(*matches));
    matches[n++] = steal_pointer(&rel);
    matches[n] = NULL;
  }
  if (n == 0) {
    cleanup_strvp(&matches);
    return hutch_error_set(err, ENOENT, "%s: no file matches", c->sources[i]), NULL;
  }
  return matches;
}

char **df_copy_expand(const struct df_copy *c, hutch_error_t *err) {
  char **all = xcalloc(1, sizeof(*all));
  size_t n = 0;
  for (size_t i = 0; i < c->n_sources; i++) {
    _cleanup_strv_ char **m = expand_source(c, i, err);
    if (m == NULL) {
      cleanup_strvp(&all);
      return NULL;
    }
    for (char **p = m; *p; p++) {
      all = xrealloc(all, (n + 2) * sizeof(*all));
      all[n++] = steal_pointer(p);
      all[n] = NULL;
    }
  }
  return all;
}

int df_copy_open_source(const struct df_copy *c, const char *rel, struct stat *st, hutch_error_t *err) {
  int fd = source_open(c, rel, true, st);
  if (fd < 0)
    return source_error(c, rel, err);
  return fd;
}

/* Each source (globs expanded in their last component) to its place. */
static int walk_sources(const struct df_copy *c, entry_fn fn, void *data, hutch_error_t *err) {
  _cleanup_free_ char *dest = clean_path(c->dest);
  for (size_t i = 0; i < c->n_sources; i++) {
    _cleanup_strv_ char **matches = expand_source(c, i, err);
    if (matches == NULL)
      return -1;
    for (char **m = matches; *m; m++) {
      struct stat st;
      int fd = source_open(c, *m, true, &st);
      if (fd < 0)
        return source_error(c, *m, err);
      close(fd);
      _cleanup_free_ char *to = NULL;
      if (S_ISDIR(st.st_mode) || !c->dest_is_dir)
        to = xstrdup(dest);
      else
        to = *dest ? xasprintf("%s/%s", dest, base_name(*m)) : xstrdup(base_name(*m));
      if (walk(c, *m, true, to, 0, fn, data, err) < 0)
        return -1;
    }
  }
  return 0;
}

/* ---- the hash ------------------------------------------------------------------------- */

static int hash_entry(const struct df_copy *c, const char *rel, int fd, const struct stat *st, const char *dest,
                      void *data, hutch_error_t *err) {
  struct sha256_ctx *ctx = data;
  _cleanup_free_ char *head = xasprintf("%s\n%s\n%o\n", dest, rel, (unsigned)st->st_mode);
  sha256_update(ctx, head, strlen(head) + 1);
  if (S_ISLNK(st->st_mode)) {
    char target[4096];
    ssize_t n = readlinkat(fd, "", target, sizeof(target));
    if (n < 0)
      return hutch_error_sys(err, "read the link %s", rel);
    sha256_update(ctx, target, (size_t)n);
  } else if (S_ISREG(st->st_mode)) {
    _cleanup_free_ char *proc = xasprintf("/proc/self/fd/%d", fd);
    _cleanup_close_ int rfd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (rfd < 0)
      return hutch_error_sys(err, "open %s", rel);
    char buf[65536];
    ssize_t n;
    while ((n = read(rfd, buf, sizeof(buf))) > 0)
      sha256_update(ctx, buf, (size_t)n);
    if (n < 0)
      return hutch_error_sys(err, "read %s", rel);
  }
  (void)c;
  return 0;
}

int df_copy_hash(const struct df_copy *c, struct sha256_ctx *ctx, hutch_error_t *err) {
  return walk_sources(c, hash_entry, ctx, err);
}

/* ---- the copy ------------------------------------------------------------------------- */

/* The directory dir (relative, no links followed) in the layer, made as
 * needed. */
int df_layer_mkdirs(int layer_fd, const char *dir, uid_t uid, gid_t gid, int *out_fd, hutch_error_t *err) {
  _cleanup_free_ char *clean = clean_path(dir);
  /* Callers resolve ".." (df_image_path); one left here would climb out of
   * the layer, so it is refused, not followed. */
  for (const char *p = clean; *p; p += strcspn(p, "/"), p += *p == '/') {
    size_t len = strcspn(p, "/");
    if (len == 2 && p[0] == '.' && p[1] == '.')
      return hutch_error_set(err, EINVAL, "/%s: a \"..\" in a path in the image", clean);
  }
  int fd = dup(layer_fd);
  if (fd < 0)
    return hutch_error_sys(err, "dup");
  for (char *p = clean, *slash; *p; p = slash ? slash + 1 : p + strlen(p)) {
    slash = strchr(p, '/');
    if (slash)
      *slash = '\0';
    if (mkdirat(fd, p, 0755) == 0) {
      if (fchownat(fd, p, uid, gid, AT_SYMLINK_NOFOLLOW) < 0) {
        close(fd);
        return hutch_error_sys(err, "chown /%s", clean);
      }
    } else if (errno != EEXIST) {
      close(fd);
      return hutch_error_sys(err, "create /%s", clean);
    }
    int next = openat(fd, p, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    close(fd);
    if (next < 0)
      return hutch_error_sys(err, "open /%s (a file or a link where a directory goes)", clean);
    fd = next;
    if (slash)
      *slash = '/';
    else
      break;
  }
  *out_fd = fd;
  return 0;
}

static int copy_entry(const struct df_copy *c, const char *rel, int fd, const struct stat *st, const char *dest,
                      void *data, hutch_error_t *err) {
  int layer_fd = *(int *)data;
  _cleanup_free_ char *parent = xstrdup(dest);
  char *slash = strrchr(parent, '/');
  _cleanup_free_ char *name = xstrdup(slash ? slash + 1 : parent);
  if (slash)
    *slash = '\0';
  else
    parent[0] = '\0';
  if (*name == '\0')
    return hutch_error_set(err, EINVAL, "%s: nowhere to copy it (the destination is /)", rel);
  if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
    return hutch_error_set(err, EINVAL, "%s: a \"%s\" as the name to copy to", rel, name);
  _cleanup_close_ int pfd = -1;
  if (df_layer_mkdirs(layer_fd, parent, 0, 0, &pfd, err) < 0)
    return -1;
  mode_t mode = c->chmod >= 0 ? (mode_t)c->chmod : st->st_mode & 07777;
  if (S_ISDIR(st->st_mode)) {
    if (mkdirat(pfd, name, 0700) < 0 && errno != EEXIST)
      return hutch_error_sys(err, "create %s", dest);
    _cleanup_close_ int dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0 || fchown(dfd, c->uid, c->gid) < 0 || fchmod(dfd, mode) < 0)
      return hutch_error_sys(err, "set up the directory %s", dest);
    return 0;
  }
  /* A name an earlier source made goes: a link there is replaced, not followed. */
  if (unlinkat(pfd, name, 0) < 0 && errno != ENOENT && errno != EISDIR)
    return hutch_error_sys(err, "replace %s", dest);
  if (S_ISLNK(st->st_mode)) {
    char target[4096];
    ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);
    if (n < 0)
      return hutch_error_sys(err, "read the link %s", rel);
    target[n] = '\0';
    if (symlinkat(target, pfd, name) < 0 || fchownat(pfd, name, c->uid, c->gid, AT_SYMLINK_NOFOLLOW) < 0)
      return hutch_error_sys(err, "create the link %s", dest);
    return 0;
  }
  _cleanup_free_ char *proc = xasprintf("/proc/self/fd/%d", fd);
  _cleanup_close_ int in = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (in < 0)
    return hutch_error_sys(err, "open %s", rel);
  _cleanup_close_ int out = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (out < 0)
    return hutch_error_sys(err, "create %s", dest);
  char buf[65536];
  ssize_t n;
  uint64_t bytes = 0;
  struct sha256_ctx hash;
  sha256_init(&hash);
  while ((n = read(in, buf, sizeof(buf))) > 0) {
    if (write_all(out, buf, (size_t)n) < 0)
      return hutch_error_sys(err, "write %s", dest);
    if (c->copied)
      sha256_update(&hash, buf, (size_t)n);
    bytes += (uint64_t)n;
  }
  if (n < 0)
    return hutch_error_sys(err, "read %s", rel);
  struct timespec times[2] = {st->st_atim, st->st_mtim};
  if (fchown(out, c->uid, c->gid) < 0 || fchmod(out, mode) < 0 || futimens(out, times) < 0)
    return hutch_error_sys(err, "set the owner and mode of %s", dest);
  if (c->copied) {
    uint8_t digest[SHA256_DIGEST_SIZE];
    sha256_final(&hash, digest);
    _cleanup_free_ char *path = xasprintf("/%s", dest);
    audit_files_add(&c->copied->list, digest, bytes, path);
    c->copied->files++;
    c->copied->bytes += bytes;
  }
  return 0;
}

int df_copy_into(const struct df_copy *c, int layer_fd, hutch_error_t *err) {
  return walk_sources(c, copy_entry, &layer_fd, err);
}
