/* SPDX-License-Identifier: Apache-2.0 */
/* layer_copy_tree (layer_tree.c): a layer copied as it is (contents, a
 * sparse file's holes, hard links, symlinks unfollowed, fifos, xattrs),
 * twice from one directory fd as a fork's children copy their one seed,
 * and a tree too deep refused. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "layer_tree.h"
#include "tap.h"
#include "util.h"

#define SPARSE_SIZE (256ll << 20)

static char base[64];

static void make_source(int src) {
  write_file_at(src, "a", "alpha\n", 6, 0640);
  int fd = openat(src, "sparse", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
  /* one byte at the start and one at the end: holes between */
  if (fd < 0 || pwrite(fd, "x", 1, 0) != 1 || pwrite(fd, "y", 1, SPARSE_SIZE - 1) != 1)
    perror("sparse");
  close(fd);
  linkat(src, "a", src, "a.link", 0);
  symlinkat("/etc/passwd", src, "s");
  mkfifoat(src, "f", 0600);
  mkdirat(src, "d", 0750);
  mkdirat(src, "d/e", 0700);
  write_file_at(src, "d/e/file", "deep\n", 5, 0600);
  /* Modes a file made with the umask, or chowned, would lose; a time. */
  static const struct {
    const char *name;
    mode_t mode;
  } modes[] = {{"setgid", 02755}, {"open", 0777}, {"none", 0}, {"empty", 0644}};
  for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
    write_file_at(src, modes[i].name, "m", strcmp(modes[i].name, "empty") ? 1 : 0, 0600);
    fchmodat(src, modes[i].name, modes[i].mode, 0);
  }
  struct timespec t[2] = {{1000000000, 5}, {1234567890, 123456789}};
  utimensat(src, "open", t, 0);
}

/* What a copy must hold: the source as make_source made it. */
static void check_copy(int dst, const char *which) {
  struct stat a, l, sp, s, f, e;
  char target[64] = "";
  ssize_t n = readlinkat(dst, "s", target, sizeof(target) - 1);
  if (n > 0)
    target[n] = '\0';
  _cleanup_free_ char *text = read_file_at(dst, "a", 64, NULL);
  _cleanup_free_ char *deep = read_file_at(dst, "d/e/file", 64, NULL);
  tap_is_str(text, "alpha\n", "%s: a file's contents", which);
  tap_is_str(deep, "deep\n", "%s: a file two directories down", which);
  tap_ok(fstatat(dst, "a", &a, AT_SYMLINK_NOFOLLOW) == 0 && (a.st_mode & 07777) == 0640, "%s: its mode", which);
  tap_ok(fstatat(dst, "a.link", &l, AT_SYMLINK_NOFOLLOW) == 0 && l.st_ino == a.st_ino && a.st_nlink == 2,
         "%s: a hard link stays one", which);
  tap_is_str(target, "/etc/passwd", "%s: a symlink's target, unfollowed", which);
  tap_ok(fstatat(dst, "s", &s, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(s.st_mode), "%s: still a symlink", which);
  tap_ok(fstatat(dst, "f", &f, AT_SYMLINK_NOFOLLOW) == 0 && S_ISFIFO(f.st_mode), "%s: a fifo", which);
  tap_ok(fstatat(dst, "d/e", &e, AT_SYMLINK_NOFOLLOW) == 0 && (e.st_mode & 07777) == 0700, "%s: a directory's mode",
         which);
  tap_ok(fstatat(dst, "sparse", &sp, AT_SYMLINK_NOFOLLOW) == 0 && sp.st_size == SPARSE_SIZE,
         "%s: the sparse file's size", which);
  static const struct {
    const char *name;
    mode_t mode;
    off_t size;
  } modes[] = {{"setgid", 02755, 1}, {"open", 0777, 1}, {"none", 0, 1}, {"empty", 0644, 0}};
  for (size_t i = 0; i < ARRAY_SIZE(modes); i++) {
    struct stat m;
    tap_ok(fstatat(dst, modes[i].name, &m, AT_SYMLINK_NOFOLLOW) == 0 && (m.st_mode & 07777) == modes[i].mode &&
               m.st_size == modes[i].size && m.st_uid == geteuid(),
           "%s: %s keeps mode %04o (umask %03o), size %lld and owner", which, modes[i].name, modes[i].mode, 022,
           (long long)modes[i].size);
  }
  struct stat o;
  tap_ok(fstatat(dst, "open", &o, AT_SYMLINK_NOFOLLOW) == 0 && o.st_mtim.tv_sec == 1234567890 &&
             o.st_mtim.tv_nsec == 123456789,
         "%s: a file's modification time", which);
  tap_ok((long long)sp.st_blocks * 512 < (1ll << 20), "%s: its holes kept (%lld bytes allocated)", which,
         (long long)sp.st_blocks * 512);
  int fd = openat(dst, "sparse", O_RDONLY | O_CLOEXEC);
  char first = 0, last = 0, mid = 1;
  if (fd >= 0) {
    pread(fd, &first, 1, 0);
    pread(fd, &mid, 1, SPARSE_SIZE / 2);
    pread(fd, &last, 1, SPARSE_SIZE - 1);
    close(fd);
  }
  tap_ok(first == 'x' && mid == 0 && last == 'y', "%s: and its bytes", which);
}

int main(void) {
  /* tmpfs where there is one: a fork's layers are on one. */
  /* A umask a copy's modes must not go through. */
  umask(022);
  const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  snprintf(base, sizeof(base), "%s/test_layer_tree.XXXXXX", dir);
  tap_ok(mkdtemp(base) != NULL, "a directory");
  int top = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  mkdirat(top, "src", 0755);
  mkdirat(top, "dst1", 0755);
  mkdirat(top, "dst2", 0755);
  int src = openat(top, "src", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  make_source(src);
  bool xattrs = fsetxattr(src, "user.overlay.opaque", "y", 1, 0) == 0;

  /* One source fd, copied from twice: each copy reads it from its start. */
  int d1 = openat(top, "dst1", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int d2 = openat(top, "dst2", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  hutch_error_t err = NULL;
  tap_is_int(layer_copy_tree(src, d1, &err), 0, "the first copy");
  if (err)
    printf("#   %s\n", err->msg), hutch_error_free(&err);
  tap_is_int(layer_copy_tree(src, d2, &err), 0, "a second one from the same fd");
  if (err)
    printf("#   %s\n", err->msg), hutch_error_free(&err);
  check_copy(d1, "first");
  check_copy(d2, "second");
  if (xattrs) {
    char v[8] = "";
    tap_ok(fgetxattr(d2, "user.overlay.opaque", v, sizeof(v)) == 1 && v[0] == 'y', "the top directory's xattr");
  } else {
    printf("ok %d - # SKIP no user xattrs on %s\n", ++tap_count, dir);
  }

  /* As root: file capabilities are not carried (as when every copy
   * chowned), and a set-group-id destination does not give the copies its
   * group (their owner is set, not assumed from the creation). */
  if (geteuid() == 0) {
    /* VFS_CAP_REVISION_2, CAP_NET_RAW permitted and effective. */
    static const uint32_t cap[5] = {0x02000001u, 1u << 13, 0, 0, 0};
    write_file_at(src, "capped", "c", 1, 0755);
    int cfd = openat(src, "capped", O_RDONLY | O_CLOEXEC);
    bool caps = cfd >= 0 && fsetxattr(cfd, "security.capability", cap, sizeof(cap), 0) == 0;
    if (cfd >= 0)
      close(cfd);
    mkdirat(top, "dstg", 02775);
    fchownat(top, "dstg", 0, 4242, 0);
    fchmodat(top, "dstg", 02775, 0);
    int dg = openat(top, "dstg", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    tap_is_int(layer_copy_tree(src, dg, &err), 0, "a copy into a set-group-id directory of group 4242");
    if (err)
      printf("#   %s\n", err->msg), hutch_error_free(&err);
    struct stat a, e;
    tap_ok(fstatat(dg, "a", &a, AT_SYMLINK_NOFOLLOW) == 0 && a.st_gid == 0 && fstatat(dg, "d/e/file", &e, 0) == 0 &&
               e.st_gid == 0,
           "its files keep their group, 0 (not the directory's)");
    if (caps) {
      int got = openat(dg, "capped", O_RDONLY | O_CLOEXEC);
      tap_ok(got >= 0 && fgetxattr(got, "security.capability", NULL, 0) < 0 && errno == ENODATA,
             "a file's capabilities are not carried");
      if (got >= 0)
        close(got);
    } else {
      printf("ok %d - # SKIP no file capabilities on %s\n", ++tap_count, dir);
    }
    unlinkat(src, "capped", 0);
    close(dg);
  } else {
    printf("ok %d - # SKIP not root: a set-group-id directory of another group\n", ++tap_count);
    printf("ok %d - # SKIP not root: file capabilities\n", ++tap_count);
  }

  /* Deeper than LAYER_COPY_MAX_DEPTH: refused (ELOOP), naming the depth. */
  mkdirat(top, "deep", 0755);
  mkdirat(top, "dst3", 0755);
  int deep = openat(top, "deep", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int at = dup(deep);
  for (int i = 0; i < LAYER_COPY_MAX_DEPTH + 2; i++) {
    mkdirat(at, "d", 0755);
    int next = openat(at, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    close(at);
    at = next;
  }
  close(at);
  int d3 = openat(top, "dst3", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  tap_is_int(layer_copy_tree(deep, d3, &err), -1, "a tree %d directories deep is refused", LAYER_COPY_MAX_DEPTH + 2);
  tap_is_int(err ? err->errnum : 0, ELOOP, "with ELOOP");
  tap_ok(err && strstr(err->msg, "directories deep") != NULL, "saying why");
  hutch_error_free(&err);

  close(d1);
  close(d2);
  close(d3);
  close(deep);
  close(src);
  close(top);
  int dfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  remove_dir_contents_fd(dfd);
  close(dfd);
  rmdir(base);
  return tap_done();
}
