/* SPDX-License-Identifier: Apache-2.0 */
/* Host paths no sandbox may reach (protected.h).
 *
 * Why all of the store, state directory and cache, read-only too: the state
 * directory holds every long-lived sandbox's control socket, and a
 * read-only mount does not stop connect() on a unix socket; it also holds
 * the seccomp cache's key and the other sandboxes' upper layers.  The store
 * holds the shared read-only images under every sandbox, the cache the
 * compiled seccomp programs. */
#include "config.h"

#include "protected.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#include "paths.h"
#include "policy.h"
#include "state.h"
#include "util.h"

/* Deeper than any real tree; bounds a walk that never reaches "/". */
#define MAX_DEPTH 4096

struct protected_entry {
  char *path;
  const char *what;
  bool write_only;
  bool exists;           /* else only its would-be parents are protected */
  bool is_dir;           /* something can lie inside it */
  struct file_id self;   /* when it exists */
  struct file_id *above; /* itself (when it exists) and every directory above it, up to "/" */
  size_t n_above;
};

static bool same(const struct file_id *a, const struct stat *st) {
  return a->dev == st->st_dev && a->ino == st->st_ino;
}

/* Calls `visit` on the directory dirfd and each one above it, up to the
 * root, through "..": the host's tree as the kernel resolves it, whatever
 * names, links or mounts led there.  Stops early when visit returns true. */
static bool walk_up(int dirfd, bool (*visit)(const struct stat *st, void *data), void *data) {
  _cleanup_close_ int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  for (int depth = 0; fd >= 0 && depth < MAX_DEPTH; depth++) {
    struct stat st, up;
    if (fstat(fd, &st) < 0)
      return false;
    if (visit(&st, data))
      return true;
    int parent = openat(fd, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (parent < 0 || fstat(parent, &up) < 0 || (up.st_dev == st.st_dev && up.st_ino == st.st_ino)) {
      if (parent >= 0)
        close(parent);
      return false;
    }
    close(fd);
    fd = parent;
  }
  return false;
}

static bool collect(const struct stat *st, void *data) {
  struct protected_entry *e = data;
  e->above = xrealloc(e->above, (e->n_above + 1) * sizeof(*e->above));
  e->above[e->n_above++] = (struct file_id){st->st_dev, st->st_ino};
  return false;
}

/* Opens PATH, or when it does not exist the nearest existing directory
 * above it (*exists false).  The directory of a file is opened in *dirfd. */
static int open_nearest(const char *path, bool *exists, int *dirfd) {
  _cleanup_free_ char *p = xstrdup(path);
  *exists = true;
  *dirfd = -1;
  for (;;) {
    int fd = open(p, O_PATH | O_CLOEXEC);
    if (fd >= 0) {
      struct stat st;
      if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) {
        /* The file's own directory, as resolved: realpath follows the
         * links of the name to where the file really is. */
        _cleanup_free_ char *real = realpath(p, NULL);
        char *slash = real ? strrchr(real, '/') : NULL;
        if (slash) {
          if (slash == real)
            slash++;
          *slash = '\0';
          *dirfd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
        }
      }
      return fd;
    }
    if (errno != ENOENT && errno != ENOTDIR)
      return -1;
    *exists = false;
    char *slash = strrchr(p, '/');
    if (slash == NULL) {
      if (strcmp(p, ".") == 0)
        return -1;
      int cwd = open_nearest(".", exists, dirfd);
      *exists = false;
      return cwd;
    }
    if (slash == p)
      slash[1] = '\0';
    else
      *slash = '\0';
  }
}

void protected_set_add(struct protected_set *set, const char *path, const char *what, bool write_only) {
  /* Relative names too (--policy ./p.policy, --store DIR): from the
   * current directory, as everything else opens them. */
  if (path == NULL || path[0] == '\0')
    return;
  bool exists;
  _cleanup_close_ int dirfd = -1;
  _cleanup_close_ int fd = open_nearest(path, &exists, &dirfd);
  if (fd < 0)
    return;
  struct stat st;
  if (fstat(fd, &st) < 0)
    return;
  set->v = xrealloc(set->v, (set->n + 1) * sizeof(*set->v));
  struct protected_entry *e = &set->v[set->n++];
  *e = (struct protected_entry){.path = xstrdup(path), .what = what, .write_only = write_only, .exists = exists};
  if (exists) {
    e->self = (struct file_id){st.st_dev, st.st_ino};
    e->is_dir = S_ISDIR(st.st_mode);
  }
  if (!S_ISDIR(st.st_mode)) {
    collect(&st, e);
    if (dirfd >= 0)
      walk_up(dirfd, collect, e);
  } else {
    walk_up(fd, collect, e);
  }
}

void protected_set_hutch(struct protected_set *set, const char *store, const char *state,
                         const struct hutch_policy *policy) {
  _cleanup_free_ char *default_store = store ? NULL : paths_default_store();
  protected_set_add(set, store ? store : default_store, "hutch's image store", false);
  protected_set_add(set, state, "hutch's state directory (sandboxes' layers and control sockets)", false);
  /* Where the state goes when $TMPDIR/hutch-UID is taken (state.c): a
   * sandbox that could write it would be inside every later sandbox. */
  if (geteuid() != 0) {
    _cleanup_free_ char *fallback = paths_state_fallback();
    protected_set_add(set, fallback, "hutch's fallback state directory", false);
  }
  _cleanup_free_ char *cache = paths_default_cache();
  protected_set_add(set, cache, "hutch's cache", false);
  if (policy) {
    protected_set_add(set, policy->path, "the policy file", true);
    protected_set_add(set, policy->seccomp_path, "the policy's seccomp profile", true);
  }
  /* What later runs read as their configuration: the administrator's and
   * the installed policies, hutch-agent's settings (its base URL gets the
   * API key). */
  protected_set_add(set, HUTCH_SYSCONFDIR, "hutch's system configuration", true);
  protected_set_add(set, HUTCH_DATADIR, "hutch's installed policies", true);
  _cleanup_free_ char *config = paths_user_config();
  protected_set_add(set, config, "hutch's user configuration", true);
}

void protected_set_clear(struct protected_set *set) {
  for (size_t i = 0; i < set->n; i++) {
    free(set->v[i].path);
    free(set->v[i].above);
  }
  free(set->v);
  set->v = NULL;
  set->n = 0;
}

struct inside_ctx {
  const struct protected_set *set;
  bool write_only; /* the phase: hutch's own directories first, then what is protected from writes */
  const struct protected_entry *hit;
};

static bool find_container(const struct stat *st, void *data) {
  struct inside_ctx *c = data;
  for (size_t i = 0; i < c->set->n && c->hit == NULL; i++) {
    const struct protected_entry *e = &c->set->v[i];
    if (e->write_only == c->write_only && e->exists && e->is_dir && same(&e->self, st))
      c->hit = e;
  }
  return c->hit != NULL;
}

static int refuse(const char *use, const char *path, const char *how, const struct protected_entry *e,
                  hutch_error_t *err) {
  hutch_error_set(err, EPERM, "%s %s: %s %s %s%s", use, path, how, e->what, e->path,
                  e->write_only ? ", which a sandbox must not be able to change" : ", which no sandbox may reach");
  if (e->write_only)
    return hutch_error_hint(err, "bind it read-only (:ro), or a directory that does not hold it");
  return hutch_error_hint(err, "use a directory that holds none of hutch's own (store, state directory, cache), "
                               "or move them with HUTCH_STORE, HUTCH_STATE_DIR and HUTCH_CACHE_DIR; see "
                               "hutch-security(7)");
}

/* One phase of protected_check(): the entries of one kind. */
static int check_phase(const struct protected_set *set, bool write_only, const struct stat *st, int fd, int dirfd,
                       const char *use, const char *path, hutch_error_t *err) {
  /* It is an entry, or one of the directories above one. */
  for (size_t i = 0; i < set->n; i++) {
    const struct protected_entry *e = &set->v[i];
    if (e->write_only != write_only)
      continue;
    for (size_t j = 0; j < e->n_above; j++) {
      if (!same(&e->above[j], st))
        continue;
      bool is_it = e->exists && j == 0;
      return refuse(use, path, is_it ? "is" : e->exists ? "contains" : "would contain", e, err);
    }
  }
  /* It lies inside an entry. */
  struct inside_ctx c = {set, write_only, NULL};
  walk_up(S_ISDIR(st->st_mode) ? fd : dirfd, find_container, &c);
  if (c.hit)
    return refuse(use, path, "lies inside", c.hit, err);
  return 0;
}

int protected_check(const struct protected_set *set, const char *path, bool writable, const char *use,
                    struct file_id *id, hutch_error_t *err) {
  _cleanup_close_ int fd = open(path, O_PATH | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0)
    return hutch_error_sys(err, "%s: open %s", use, path);
  if (id)
    *id = (struct file_id){st.st_dev, st.st_ino};
  /* A file: what lies above it is found from its directory, as resolved. */
  _cleanup_close_ int dirfd = -1;
  if (!S_ISDIR(st.st_mode)) {
    _cleanup_free_ char *real = realpath(path, NULL);
    char *slash = real ? strrchr(real, '/') : NULL;
    if (slash == NULL)
      return hutch_error_sys(err, "%s: resolve %s", use, path);
    slash[slash == real ? 1 : 0] = '\0';
    dirfd = open(real, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0)
      return hutch_error_sys(err, "%s: open the directory of %s", use, path);
  }
  if (check_phase(set, false, &st, fd, dirfd, use, path, err) < 0)
    return -1;
  if (writable && check_phase(set, true, &st, fd, dirfd, use, path, err) < 0)
    return -1;
  return 0;
}

/* No bind may reach hutch's own directories, nor write the policy or the
 * image (protected.h); what each source was when checked goes to the child,
 * which mounts only that. */
int protected_check_binds(const struct hutch_sandbox_config *cfg, const char *state_path, struct file_id **ids,
                          hutch_error_t *err) {
  if (cfg->n_binds == 0)
    return 0;
  struct protected_set set = {0};
  protected_set_hutch(&set, cfg->store, state_path, cfg->policy);
  protected_set_add(&set, cfg->rootfs, "the sandbox's image", true);
  for (size_t i = 0; cfg->rootfs_lowers && cfg->rootfs_lowers[i]; i++)
    protected_set_add(&set, cfg->rootfs_lowers[i], "the sandbox's image", true);
  *ids = xcalloc(cfg->n_binds, sizeof(**ids));
  int r = 0;
  for (size_t i = 0; i < cfg->n_binds && r == 0; i++)
    r = protected_check(&set, cfg->binds[i].source, !cfg->binds[i].readonly, "--bind", &(*ids)[i], err);
  protected_set_clear(&set);
  return r;
}

int hutch_check_host_path(const char *path, bool writable, const char *store, const char *state_dir,
                          const struct hutch_policy *policy, hutch_error_t *err) {
  _cleanup_free_ char *state = NULL;
  struct protected_set set = {0};
  /* The state directory in use, made if need be, as a start would. */
  int fd = state_open_root(state_dir, &state, err);
  if (fd < 0)
    return -1;
  close(fd);
  protected_set_hutch(&set, store, state, policy);
  int r = protected_check(&set, path, writable, writable ? "output directory" : "input directory", NULL, err);
  protected_set_clear(&set);
  return r;
}
