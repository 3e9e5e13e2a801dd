/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "state.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "errno_text.h"
#include "idmap.h"
#include "paths.h"
#include "proc_stat.h"
#include "util.h"

/* Opens (creating 0700 when missing) a directory named by the user or the
 * session: refuses one owned by someone else or writable by others. */
static int open_private_dir(const char *path, hutch_error_t *err) {
  /* It exists but for the very first sandbox: open first, create after. */
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    if (mkdir_p(path, 0700) < 0)
      return hutch_error_sys(err, "state directory: create %s", path);
    fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  if (fd < 0)
    return hutch_error_sys(err, "state directory: open %s", path);
  struct stat st;
  if (fstat(fd, &st) < 0) {
    close(fd);
    return hutch_error_sys(err, "state directory: stat %s", path);
  }
  /* Sandboxes' control sockets live here: anyone who can write the
   * directory could plant one and receive our commands. */
  if (st.st_uid != geteuid() || (st.st_mode & 022) != 0) {
    close(fd);
    hutch_error_set(err, EPERM, "state directory: %s is owned by uid %d or writable by others", path, (int)st.st_uid);
    return hutch_error_hint(err, "use a private directory with --state-dir or HUTCH_STATE_DIR");
  }
  return fd;
}

/* $TMPDIR/hutch-UID lives in a directory everyone can write, so its name
 * may have been taken first: only a directory (never a link to one) that
 * we own and nobody else may enter is used.  Returns the fd, or -1 with
 * *why saying what is in the way. */
static int open_in_shared_tmp(const char *path, char **why) {
  char unknown[32];
  /* mkdir does not follow a link in the last component: it says EEXIST. */
  if (mkdir(path, 0700) < 0 && errno != EEXIST) {
    *why = hutch_errno_format(errno, "cannot be created");
    return -1;
  }
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  int open_errno = errno;
  struct stat st;
  if (fd >= 0 ? fstat(fd, &st) < 0 : lstat(path, &st) < 0)
    *why = xstrdup(errno_text(errno, unknown));
  else if (S_ISLNK(st.st_mode))
    *why = xstrdup("is a symbolic link");
  else if (!S_ISDIR(st.st_mode))
    *why = xstrdup("is not a directory");
  else if (st.st_uid != geteuid())
    *why = xasprintf("belongs to uid %d", (int)st.st_uid);
  else if ((st.st_mode & 077) != 0)
    *why = xasprintf("is open to others (mode %04o)", (unsigned)(st.st_mode & 07777));
  else if (fd >= 0)
    return fd;
  else
    *why = xstrdup(errno_text(open_errno, unknown));
  if (fd >= 0)
    close(fd);
  return -1;
}

int state_open_root(const char *opt, char **used, hutch_error_t *err) {
  bool shared = false;
  _cleanup_free_ char *path = opt ? xstrdup(opt) : paths_default_state(&shared);
  int fd;
  if (shared) {
    _cleanup_free_ char *why = NULL;
    fd = open_in_shared_tmp(path, &why);
    if (fd < 0) {
      /* Refusing would let any local user stop our sandboxes; following
       * would let them choose where we write.  Every command comes to the
       * same conclusion, so they all agree on the fallback. */
      _cleanup_free_ char *fallback = paths_state_fallback();
      hutch_warn("state directory %s %s: using %s", path, why, fallback);
      free(path);
      path = steal_pointer(&fallback);
      fd = open_private_dir(path, err);
    }
  } else {
    fd = open_private_dir(path, err);
  }
  if (fd >= 0 && used)
    *used = steal_pointer(&path);
  return fd;
}

/* Random and private to the user; in the state directory, which no bind
 * can reach (protected.c), and never in the cache it authenticates. */
#define CACHE_KEY_FILE ".seccomp-cache.key"

/* Returns 0 with the key, 1 when there is none yet, -1 on failure. */
static int read_key(int rootfd, uint8_t key[STATE_CACHE_KEY_SIZE], hutch_error_t *err) {
  _cleanup_close_ int fd = openat(rootfd, CACHE_KEY_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return errno == ENOENT ? 1 : hutch_error_sys(err, "seccomp cache key %s: open", CACHE_KEY_FILE);
  struct stat st;
  if (fstat(fd, &st) < 0)
    return hutch_error_sys(err, "seccomp cache key: stat");
  if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077) != 0 || st.st_size != STATE_CACHE_KEY_SIZE) {
    hutch_error_set(err, EPERM, "seccomp cache key %s: not a private %d-byte file of uid %d", CACHE_KEY_FILE,
                    STATE_CACHE_KEY_SIZE, (int)geteuid());
    return hutch_error_hint(err, "remove it from the state directory: hutch makes a new one");
  }
  if (read_all(fd, key, STATE_CACHE_KEY_SIZE) != STATE_CACHE_KEY_SIZE)
    return hutch_error_sys(err, "seccomp cache key: read");
  return 0;
}

int state_cache_key(int rootfd, uint8_t key[STATE_CACHE_KEY_SIZE], hutch_error_t *err) {
  int r = read_key(rootfd, key, err);
  if (r <= 0)
    return r;
  if (getrandom(key, STATE_CACHE_KEY_SIZE, 0) != STATE_CACHE_KEY_SIZE)
    return hutch_error_sys(err, "seccomp cache key: getrandom");
  /* Written whole into an unnamed file, then linked into place: a
   * concurrent start reads either no key or a complete one, and a start
   * killed half way leaves no name behind. */
  _cleanup_close_ int fd = openat(rootfd, ".", O_WRONLY | O_TMPFILE | O_CLOEXEC, 0600);
  if (fd < 0)
    return hutch_error_sys(err, "seccomp cache key: create (O_TMPFILE)");
  if (write_all(fd, key, STATE_CACHE_KEY_SIZE) < 0)
    return hutch_error_sys(err, "seccomp cache key: write");
  char self[64];
  snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
  r = linkat(AT_FDCWD, self, rootfd, CACHE_KEY_FILE, AT_SYMLINK_FOLLOW);
  int saved = errno;
  if (r == 0)
    return 0;
  /* Another start linked its key first: that one is the key. */
  if (saved == EEXIST)
    return read_key(rootfd, key, err) == 0 ? 0 : hutch_error_set(err, EIO, "seccomp cache key: vanished");
  errno = saved;
  return hutch_error_sys(err, "seccomp cache key: link");
}

bool state_stamp_due(int rootfd, const char *name) {
  /* A new stamp: due, and now marked. */
  _cleanup_close_ int fd =
      openat(rootfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0600);
  if (fd >= 0)
    return true;
  if (errno != EEXIST)
    return true; /* it cannot be kept: said every time rather than never */
  fd = openat(rootfd, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  struct stat st;
  /* Only a private regular file of ours counts (not a link, a FIFO, a
   * device, or a file someone else may set the time of). */
  if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) ||
      st.st_nlink != 1)
    return true;
  time_t now = time(NULL);
  if (st.st_mtime <= now && now - st.st_mtime < STATE_STAMP_PERIOD)
    return false;
  futimens(fd, NULL);
  return true;
}

void state_new_id(char id[40]) {
  unsigned char rnd[6];
  if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t v = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 20);
    memcpy(rnd, &v, sizeof(rnd));
  }
  snprintf(id, 40, "%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
}

/* Empty sandbox directories kept for the next start, named .free-0 ...
 * (hidden from listings: no id starts with a dot).  A directory made and
 * removed costs a block allocated and freed on disk filesystems, and on
 * ext4 mounted with `discard` the free is a synchronous discard (about 0.15
 * ms per start); renaming a spare into place and back touches no block.
 * Bounded, so a burst of removals leaves at most this many behind.  Only
 * the sandbox directory itself is recycled: nothing of it is reachable
 * from inside a sandbox (its upper/ is, through the overlay, so upper/,
 * work/ and root/ are made fresh and removed each time). */
#define STATE_SPARES 4

static void spare_name(char name[16], int i) {
  /* i is below STATE_SPARES; the modulo says so to -Wformat-truncation,
   * which at -O1 cannot tell and sees up to 11 digits. */
  snprintf(name, 16, ".free-%u", (unsigned)i % STATE_SPARES);
}

/* A spare renamed to `id`, or -1 (errno ENOENT: there is none).  It is used
 * only when it is still a private directory of ours with nothing in it;
 * anything else is removed and the caller makes a fresh one. */
static int take_spare(int rootfd, const char *id) {
  for (int i = 0; i < STATE_SPARES; i++) {
    char name[16];
    spare_name(name, i);
    /* Atomic: of two starts racing for one spare, one gets it. */
    if (renameat2(rootfd, name, rootfd, id, RENAME_NOREPLACE) < 0) {
      if (errno == ENOENT)
        continue;
      return -1; /* EEXIST (the id is taken: mkdir says so), or no RENAME_NOREPLACE here */
    }
    int fd = openat(rootfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == geteuid() && (st.st_mode & 077) == 0 && dir_is_empty(fd) == 1) {
      /* Its times say when this sandbox began (state_read's `created` of
       * a sandbox that died before it was recorded). */
      futimens(fd, NULL);
      return fd;
    }
    if (fd >= 0)
      close(fd);
    remove_tree_at(rootfd, id);
    break;
  }
  errno = ENOENT;
  return -1;
}

/* Empties the sandbox directory `id` and renames it to a free spare name;
 * 0, or -1 when all spares are there (or it could not be emptied), and the
 * caller removes it.  Whether it is still empty is checked when it is taken
 * (take_spare). */
static int put_spare(int rootfd, const char *id) {
  _cleanup_close_ int fd = openat(rootfd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0 || remove_dir_contents_fd(fd) < 0)
    return -1;
  for (int i = 0; i < STATE_SPARES; i++) {
    char name[16];
    spare_name(name, i);
    if (renameat2(rootfd, id, rootfd, name, RENAME_NOREPLACE) == 0)
      return 0;
    if (errno != EEXIST)
      return -1;
  }
  return -1;
}

bool state_mountinfo_discard(const char *line, int mnt_id) {
  char *end;
  long id = strtol(line, &end, 10);
  if (end == line || id != mnt_id)
    return false;
  /* "ID PARENT MAJ:MIN ROOT POINT OPTIONS [TAGS...] - FSTYPE SOURCE SUPER" */
  const char *sep = strstr(line, " - ");
  if (sep == NULL)
    return false;
  const char *super = sep + 3;
  for (int field = 0; field < 2 && super != NULL; field++) {
    super = strchr(super, ' ');
    if (super != NULL)
      super++;
  }
  if (super == NULL)
    return false;
  /* "discard" alone is the synchronous kind; btrfs's discard=async and
   * nodiscard are not it. */
  for (const char *p = super; *p != '\0' && *p != '\n';) {
    size_t n = strcspn(p, ",\n");
    if (n == 7 && strncmp(p, "discard", 7) == 0)
      return true;
    p += n;
    if (*p == ',')
      p++;
  }
  return false;
}

bool state_on_discard_mount(int rootfd) {
  struct statx stx;
  if (statx(rootfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0 || !(stx.stx_mask & STATX_MNT_ID))
    return false;
  _cleanup_fclose_ FILE *f = fopen("/proc/self/mountinfo", "re");
  if (f == NULL)
    return false;
  _cleanup_free_ char *line = NULL;
  size_t cap = 0;
  while (getline(&line, &cap, f) > 0)
    if (state_mountinfo_discard(line, (int)stx.stx_mnt_id))
      return true;
  return false;
}

int state_create_sandbox_dir(int rootfd, const char *id, bool layers, hutch_error_t *err) {
  int fd = take_spare(rootfd, id);
  if (fd < 0) {
    if (mkdirat(rootfd, id, 0700) < 0)
      return hutch_error_sys(err, "state directory: create sandbox dir %s", id);
    fd = openat(rootfd, id, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  if (fd < 0)
    return hutch_error_sys(err, "state directory: open sandbox dir %s", id);
  static const char *const subdirs[] = {"upper", "work", "root"};
  for (size_t i = 0; layers && i < ARRAY_SIZE(subdirs); i++) {
    /* upper/ becomes the sandbox's "/" where the lower has none of its own
     * attributes: 0755 like any root directory. */
    if (mkdirat(fd, subdirs[i], 0755) < 0) {
      hutch_error_sys(err, "state directory: create %s/%s", id, subdirs[i]);
      close(fd);
      return -1;
    }
  }
  return fd;
}

int state_write(int sbdirfd, const struct sandbox_state *st, hutch_error_t *err) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddStringToObject(o, "id", st->id);
  cJSON_AddNumberToObject(o, "pid", st->pid);
  char start[32];
  snprintf(start, sizeof(start), "%" PRIu64, st->start_time);
  cJSON_AddStringToObject(o, "start_time", start);
  cJSON_AddNumberToObject(o, "created", (double)st->created);
  cJSON_AddBoolToObject(o, "long_lived", st->long_lived);
  cJSON_AddBoolToObject(o, "keep", st->keep);
  if (st->owner_pid > 0) {
    cJSON *ow = cJSON_AddObjectToObject(o, "owner");
    cJSON_AddNumberToObject(ow, "pid", st->owner_pid);
    snprintf(start, sizeof(start), "%" PRIu64, st->owner_start_time);
    cJSON_AddStringToObject(ow, "start_time", start);
  }
  if (st->proc_host_ro)
    cJSON_AddStringToObject(o, "degraded_proc", "host-ro: the outer /proc, read-only, instead of a fresh procfs");
  /* Every degraded mode the sandbox runs in, by its option's spelling. */
  cJSON *degraded = cJSON_AddArrayToObject(o, "degraded");
  if (st->overlay_fuse) {
    cJSON_AddItemToArray(degraded, cJSON_CreateString(HUTCH_DEGRADED_OVERLAY_FUSE));
    cJSON *f = cJSON_AddObjectToObject(o, "fuse_overlayfs");
    cJSON_AddNumberToObject(f, "pid", st->fuse.pid);
    char fstart[32];
    snprintf(fstart, sizeof(fstart), "%" PRIu64, st->fuse.start_time);
    cJSON_AddStringToObject(f, "start_time", fstart);
  }
  if (st->proc_host_ro)
    cJSON_AddItemToArray(degraded, cJSON_CreateString(HUTCH_DEGRADED_PROC_HOST_RO));
  if (st->limits.disk_unbounded)
    cJSON_AddItemToArray(degraded, cJSON_CreateString(HUTCH_DEGRADED_DISK_UNBOUNDED));
  if (st->image)
    cJSON_AddStringToObject(o, "image", st->image);
  if (st->rootfs)
    cJSON_AddStringToObject(o, "rootfs", st->rootfs);
  if (st->workdir)
    cJSON_AddStringToObject(o, "workdir", st->workdir);
  if (st->limits.mode[0]) {
    cJSON *l = cJSON_AddObjectToObject(o, "limits");
    cJSON_AddStringToObject(l, "mode", st->limits.mode);
    cJSON_AddBoolToObject(l, "degraded", st->limits.degraded);
    cJSON_AddBoolToObject(l, "disk_unbounded", st->limits.disk_unbounded);
    if (st->limits.reason[0])
      cJSON_AddStringToObject(l, "reason", st->limits.reason);
    if (st->limits.cgroup[0])
      cJSON_AddStringToObject(l, "cgroup", st->limits.cgroup);
    if (st->limits.warning[0])
      cJSON_AddStringToObject(l, "warning", st->limits.warning);
  }
  cJSON *n = cJSON_AddObjectToObject(o, "network");
  cJSON_AddStringToObject(n, "mode", st->net.proxy ? "proxy" : "none");
  if (st->net.proxy) {
    cJSON_AddStringToObject(n, "gateway", st->net.gateway);
    cJSON_AddStringToObject(n, "address", st->net.address);
    cJSON_AddNumberToObject(n, "proxy_pid", st->net.proxy_pid);
    char pstart[32];
    snprintf(pstart, sizeof(pstart), "%" PRIu64, st->net.proxy_start_time);
    cJSON_AddStringToObject(n, "proxy_start_time", pstart);
    if (st->net.audit_log)
      cJSON_AddStringToObject(n, "audit_log", st->net.audit_log);
  }
  state_live_write(o, &st->live);
  _cleanup_free_ char *text = cJSON_PrintUnformatted(o);
  cJSON_Delete(o);
  /* Write then rename, so `hutch ps` never reads half a file. */
  if (write_file_at(sbdirfd, "state.json.tmp", text, strlen(text), 0600) < 0 ||
      renameat(sbdirfd, "state.json.tmp", sbdirfd, "state.json") < 0)
    return hutch_error_sys(err, "state directory: write %s/state.json", st->id);
  return 0;
}

static char *json_string_dup(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? xstrdup(v->valuestring) : NULL;
}

int state_write_maker(int sbdirfd, const char *cgroup, hutch_error_t *err) {
  pid_t self = getpid();
  _cleanup_free_ char *text = xasprintf("%d %" PRIu64 "\n%s\n", (int)self, proc_stat_start_time(self), cgroup);
  if (write_file_at(sbdirfd, STATE_MAKER_FILE, text, strlen(text), 0600) < 0)
    return hutch_error_sys(err, "state directory: record the sandbox's maker");
  return 0;
}

void state_drop_maker(int sbdirfd) {
  unlinkat(sbdirfd, STATE_MAKER_FILE, 0);
}

/* <id>/maker, written by hutch itself (never by a sandbox): a line "PID
 * START", then the cgroup's path.  One that does not parse is no maker. */
static void read_maker(int rootfd, const char *id, struct sandbox_state *st) {
  _cleanup_free_ char *path = xasprintf("%s/%s", id, STATE_MAKER_FILE);
  _cleanup_free_ char *text = read_file_at(rootfd, path, 8192, NULL);
  char *nl = text ? strchr(text, '\n') : NULL;
  int pid;
  uint64_t start;
  char extra;
  if (nl == NULL)
    return;
  *nl = '\0';
  if (sscanf(text, "%d %" SCNu64 "%c", &pid, &start, &extra) != 2 || pid <= 0)
    return;
  const char *cg = nl + 1;
  size_t len = strcspn(cg, "\n");
  if (cg[len] != '\n' || len >= sizeof(st->limits.cgroup))
    return;
  st->starting = true;
  st->owner_pid = pid;
  st->owner_start_time = start;
  memcpy(st->limits.cgroup, cg, len);
  st->limits.cgroup[len] = '\0';
}

int state_read(int rootfd, const char *id, struct sandbox_state *st, hutch_error_t *err) {
  memset(st, 0, sizeof(*st));
  if (!paths_valid_name(id))
    return hutch_error_set(err, EINVAL, "invalid sandbox id '%s'", id);
  _cleanup_free_ char *path = xasprintf("%s/state.json", id);
  _cleanup_free_ char *text = read_file_at(rootfd, path, 1 << 20, NULL);
  snprintf(st->id, sizeof(st->id), "%s", id);
  if (text == NULL) {
    if (errno == ENOENT) {
      /* The directory exists but the sandbox died before it was recorded:
       * still listed (not running) so `hutch rm` can clean it. */
      struct stat sb;
      if (fstatat(rootfd, id, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(sb.st_mode)) {
        st->created = sb.st_mtime;
        read_maker(rootfd, id, st);
        return 0;
      }
      hutch_error_set(err, ENOENT, "no sandbox with id '%s'", id);
      return hutch_error_hint(err, "`hutch ps` lists the sandboxes");
    }
    return hutch_error_sys(err, "read state of sandbox %s", id);
  }
  cJSON *o = cJSON_Parse(text);
  if (o == NULL)
    return hutch_error_set(err, EINVAL, "state of sandbox %s is not valid JSON", id);
  const cJSON *v;
  if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(o, "pid")))
    st->pid = (pid_t)v->valuedouble;
  if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(o, "start_time")))
    st->start_time = strtoull(v->valuestring, NULL, 10);
  if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(o, "created")))
    st->created = (int64_t)v->valuedouble;
  st->long_lived = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "long_lived"));
  st->keep = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "keep"));
  const cJSON *ow = cJSON_GetObjectItemCaseSensitive(o, "owner");
  if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(ow, "pid")) && v->valuedouble > 0)
    st->owner_pid = (pid_t)v->valuedouble;
  if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(ow, "start_time")))
    st->owner_start_time = strtoull(v->valuestring, NULL, 10);
  st->proc_host_ro = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(o, "degraded_proc"));
  const cJSON *f = cJSON_GetObjectItemCaseSensitive(o, "fuse_overlayfs");
  if (cJSON_IsObject(f)) {
    st->overlay_fuse = true;
    if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(f, "pid")) && v->valuedouble > 0)
      st->fuse.pid = (pid_t)v->valuedouble;
    if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(f, "start_time")))
      st->fuse.start_time = strtoull(v->valuestring, NULL, 10);
  }
  st->image = json_string_dup(o, "image");
  st->workdir = json_string_dup(o, "workdir");
  st->rootfs = json_string_dup(o, "rootfs");
  const cJSON *l = cJSON_GetObjectItemCaseSensitive(o, "limits");
  if (cJSON_IsObject(l)) {
    static const struct {
      const char *key;
      size_t off, len;
    } fields[] = {
        {"mode", offsetof(struct hutch_limits_status, mode), sizeof(st->limits.mode)},
        {"reason", offsetof(struct hutch_limits_status, reason), sizeof(st->limits.reason)},
        {"cgroup", offsetof(struct hutch_limits_status, cgroup), sizeof(st->limits.cgroup)},
        {"warning", offsetof(struct hutch_limits_status, warning), sizeof(st->limits.warning)},
    };
    for (size_t i = 0; i < ARRAY_SIZE(fields); i++)
      if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(l, fields[i].key)))
        snprintf((char *)&st->limits + fields[i].off, fields[i].len, "%s", v->valuestring);
    st->limits.degraded = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(l, "degraded"));
    st->limits.disk_unbounded = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(l, "disk_unbounded"));
    /* Only a cgroup of ours is ever killed and removed through the state. */
    if (strncmp(st->limits.cgroup, "/sys/fs/cgroup/", 15) != 0 || strstr(st->limits.cgroup, "/../") != NULL ||
        strcmp(strrchr(st->limits.cgroup, '/') + 1, id) != 0)
      st->limits.cgroup[0] = '\0';
  }
  const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "network");
  if (cJSON_IsObject(n) && cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(n, "mode")) &&
      strcmp(v->valuestring, "proxy") == 0) {
    st->net.proxy = true;
    if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(n, "gateway")))
      snprintf(st->net.gateway, sizeof(st->net.gateway), "%s", v->valuestring);
    if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(n, "address")))
      snprintf(st->net.address, sizeof(st->net.address), "%s", v->valuestring);
    if (cJSON_IsNumber(v = cJSON_GetObjectItemCaseSensitive(n, "proxy_pid")))
      st->net.proxy_pid = (pid_t)v->valuedouble;
    if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(n, "proxy_start_time")))
      st->net.proxy_start_time = strtoull(v->valuestring, NULL, 10);
    st->net.audit_log = json_string_dup(n, "audit_log");
  }
  state_live_read(o, &st->live);
  cJSON_Delete(o);
  return 0;
}

void state_clear(struct sandbox_state *st) {
  free(st->image);
  free(st->rootfs);
  free(st->net.audit_log);
  free(st->workdir);
  st->image = st->rootfs = st->net.audit_log = st->workdir = NULL;
  state_live_clear(&st->live);
}

bool state_is_running(const struct sandbox_state *st) {
  return proc_stat_alive(st->pid, st->start_time);
}

static int remove_in_userns(void *data, hutch_error_t *err) {
  const char *path = data;
  if (remove_tree_at(AT_FDCWD, path) < 0)
    return hutch_error_sys(err, "remove %s", path);
  return 0;
}

int state_remove_sandbox_dir(int rootfd, const char *id, hutch_error_t *err) {
  if (put_spare(rootfd, id) == 0 || remove_tree_at(rootfd, id) == 0)
    return 0;
  if (errno != EACCES && errno != EPERM)
    return hutch_error_sys(err, "remove sandbox directory %s", id);
  /* Files the sandbox's non-root users created belong to subordinate ids:
   * only root in a namespace with the same maps may remove them. */
  const struct idmap_set *maps;
  if (idmap_for_caller(&maps, err) < 0)
    return -1;
  _cleanup_free_ char *resolved = fd_path(rootfd);
  if (resolved == NULL)
    return hutch_error_sys(err, "remove sandbox directory %s", id);
  _cleanup_free_ char *abs = xasprintf("%s/%s", resolved, id);
  if (userns_run(maps, 0, remove_in_userns, abs, err) < 0)
    return hutch_error_wrap(err, "remove sandbox directory %s", id);
  return 0;
}
