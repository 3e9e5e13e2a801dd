/* SPDX-License-Identifier: Apache-2.0 */
/* hutch cp: files and directories between the host and a live sandbox.
 * Everything goes through the runtime's copies (hutch_sandbox_copy_*),
 * which reach the sandbox's files through its root fd: no program of the
 * sandbox runs, no symlink of it is followed, and every copy is bounded. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "options.h"
#include "util.h"

enum { OPT_STATE_DIR = 256, OPT_MAX_BYTES, OPT_TIMEOUT, OPT_QUIET };

static const struct option cp_options[] = {
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"max-bytes", required_argument, NULL, OPT_MAX_BYTES},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void cp_usage(FILE *out) {
  fprintf(out, "Usage: hutch cp [OPTIONS] SRC DST\n\n"
               "Copy a file or a directory between the host and a live sandbox: one of SRC and\n"
               "DST is ID:/PATH (a path inside sandbox ID), the other a host path (write ./A:B\n"
               "for a host path with a colon).  A DST that is a directory receives SRC under its\n"
               "own name.  Regular files and directories only: symlinks, FIFOs, devices and\n"
               "sockets are skipped inside a directory and refused as SRC or DST; nothing in the\n"
               "sandbox is run and no symlink of it is followed.\n\n"
               "Options:\n"
               "  --state-dir DIR      where sandboxes keep their state (default: $HUTCH_STATE_DIR)\n"
               "  --max-bytes SIZE     stop after this much file content (default: 1G)\n"
               "  --timeout SECONDS    stop after this long (default: 600)\n"
               "  -q, --quiet          print nothing on success\n"
               "  -h, --help           show this help\n");
}

/* "ID:/path" (or "NAME:/path") -> id and path (pointing into a copy the
 * caller frees); false for a host path.  An id is letters, digits, '-' and
 * '_' (and a name's '.' after its first character) before the first '/',
 * so "./a:b" and "/x:y" stay host paths. */
static bool split_sandbox_spec(const char *spec, char **id, const char **path) {
  const char *colon = strchr(spec, ':');
  if (colon == NULL || colon == spec || colon[1] != '/')
    return false;
  for (const char *p = spec; p < colon; p++)
    if (!(('a' <= *p && *p <= 'z') || ('A' <= *p && *p <= 'Z') || ('0' <= *p && *p <= '9') || *p == '-' || *p == '_' ||
          (*p == '.' && p > spec)))
      return false;
  *id = strndup(spec, (size_t)(colon - spec));
  *path = colon + 1;
  return true;
}

/* The last component of a path, without trailing slashes ("" for "/"). */
static char *last_name(const char *path) {
  _cleanup_free_ char *copy = xstrdup(path);
  size_t n = strlen(copy);
  while (n > 1 && copy[n - 1] == '/')
    copy[--n] = '\0';
  const char *b = basename(copy);
  return xstrdup(strcmp(b, "/") == 0 || strcmp(b, ".") == 0 || strcmp(b, "..") == 0 ? "" : b);
}

static void report(const struct hutch_copy_report *rep, bool quiet) {
  if (rep->stopped)
    fprintf(stderr, "hutch cp: stopped at the %s bound; what was copied until then stays\n", rep->stopped);
  if (!quiet && !rep->stopped)
    fprintf(stderr, "hutch cp: %llu files, %llu directories, %llu bytes copied, %llu skipped\n",
            (unsigned long long)rep->files, (unsigned long long)rep->dirs, (unsigned long long)rep->bytes,
            (unsigned long long)rep->skipped);
  if (!quiet && rep->renamed)
    fprintf(stderr,
            "hutch cp: %llu renamed to NAME.sandbox: names host programs load by themselves (hutch-security(7))\n",
            (unsigned long long)rep->renamed);
}

/* The host side of a copy out, checked as every host path that sandbox
 * content reaches is (hutch_check_host_path): never hutch's store, state
 * directory or cache, nor a directory holding them or inside them.  What
 * the copy writes to is made first (an empty directory, or an empty file,
 * never through a link), so that the check sees the very directory and
 * inode the copy then fills; what was made for a refused copy goes again. */
static int check_host_dest(const char *to, bool dir, const char *state_dir, hutch_error_t *err) {
  bool made = false;
  if (dir) {
    made = mkdir(to, 0755) == 0;
  } else {
    int fd = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    made = fd >= 0;
    if (fd >= 0)
      close(fd);
  }
  int made_errno = errno;
  struct stat st;
  if (!made && lstat(to, &st) < 0) {
    errno = made_errno; /* why it could not be made, not that it is missing */
    return hutch_error_sys(err, "create %s", to);
  }
  if (hutch_check_host_path(to, true, NULL, state_dir, NULL, err) < 0) {
    if (made)
      dir ? rmdir(to) : unlink(to);
    return -1;
  }
  return 0;
}

/* Host to sandbox. */
static int copy_in(struct hutch_sandbox *sb, const char *src, const char *dest, const struct hutch_copy_limits *lim,
                   struct hutch_copy_report *rep, const char *state_dir, hutch_error_t *err) {
  struct stat st;
  if (stat(src, &st) < 0)
    return hutch_error_sys(err, "%s", src);
  /* hutch's own files (other sandboxes' state, the store) never go in. */
  if (hutch_check_host_path(src, false, NULL, state_dir, NULL, err) < 0)
    return -1;
  _cleanup_free_ char *target = NULL;
  int kind = hutch_sandbox_file_kind(sb, dest, err);
  if (kind < 0)
    return -1;
  if (kind == HUTCH_FILE_DIR) {
    _cleanup_free_ char *name = last_name(src);
    if (name[0])
      target = xasprintf("%s%s%s", dest, dest[strlen(dest) - 1] == '/' ? "" : "/", name);
  }
  const char *to = target ? target : dest;
  if (S_ISDIR(st.st_mode))
    return hutch_sandbox_copy_in(sb, src, to, lim, rep, err);
  if (!S_ISREG(st.st_mode))
    return hutch_error_set(err, EINVAL, "%s is not a regular file or a directory", src);
  return hutch_sandbox_copy_file_in(sb, src, to, lim, rep, err);
}

/* Sandbox to host. */
static int copy_out(struct hutch_sandbox *sb, const char *src, const char *dest, const struct hutch_copy_limits *lim,
                    struct hutch_copy_report *rep, const char *state_dir, hutch_error_t *err) {
  int kind = hutch_sandbox_file_kind(sb, src, err);
  if (kind < 0)
    return -1;
  if (kind == HUTCH_FILE_NONE)
    return hutch_error_set(err, ENOENT, "%s in the sandbox: no such file or directory", src);
  _cleanup_free_ char *target = NULL;
  bool renamed = false;
  struct stat st;
  if (stat(dest, &st) == 0 && S_ISDIR(st.st_mode)) {
    /* The name is taken from the sandbox, so it goes through the same map
     * as every name of a tree copied out: `hutch cp ID:/testbed/.git .`
     * makes ./.git.sandbox, never a repository git would use here. */
    _cleanup_free_ char *name = last_name(src);
    _cleanup_free_ char *host_name = name[0] ? hutch_output_name(name) : NULL;
    if (host_name) {
      target = xasprintf("%s%s%s", dest, dest[strlen(dest) - 1] == '/' ? "" : "/", host_name);
      renamed = strcmp(host_name, name) != 0;
    }
  }
  const char *to = target ? target : dest;
  /* A path that looks like a directory is copied as one; the runtime
   * refuses it if it is really a symlink to one. */
  if ((kind == HUTCH_FILE_DIR || kind == HUTCH_FILE_REGULAR) &&
      check_host_dest(to, kind == HUTCH_FILE_DIR, state_dir, err) < 0)
    return -1;
  int r = kind == HUTCH_FILE_DIR ? hutch_sandbox_copy_out(sb, src, to, lim, rep, err)
                                 : hutch_sandbox_copy_file_out(sb, src, to, lim, rep, err);
  rep->renamed += renamed;
  return r;
}

int cmd_cp(int argc, char **argv) {
  const char *state_dir = NULL;
  struct hutch_copy_limits lim = {.bytes = 1ull << 30};
  bool quiet = false;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+hq", cp_options, NULL)) != -1) {
    switch (c) {
    case OPT_STATE_DIR:
      state_dir = optarg;
      break;
    case OPT_MAX_BYTES:
      if (!hutch_parse_size(optarg, &lim.bytes) || lim.bytes == 0)
        return cli_usage_error("cp", "--max-bytes wants a size such as 64M or 2G, got '%s'", optarg);
      break;
    case OPT_TIMEOUT:
      if (!parse_duration(optarg, &lim.seconds))
        return cli_usage_error("cp", "--timeout wants a positive number of seconds, got '%s'", optarg);
      break;
    case 'q':
      quiet = true;
      break;
    case 'h':
      cp_usage(stdout);
      return 0;
    default:
      return cli_usage_error("cp", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (argc - optind != 2)
    return cli_usage_error("cp", "wants SRC and DST, got %d argument%s", argc - optind, argc - optind == 1 ? "" : "s");
  const char *src = argv[optind], *dst = argv[optind + 1];
  _cleanup_free_ char *src_id = NULL, *dst_id = NULL;
  const char *src_path = src, *dst_path = dst;
  bool from = split_sandbox_spec(src, &src_id, &src_path);
  bool to = split_sandbox_spec(dst, &dst_id, &dst_path);
  if (from == to)
    return cli_usage_error("cp", "%s",
                           from ? "copies between two sandboxes go through the host: copy out, then in"
                                : "one of SRC and DST must be ID:/PATH in a sandbox");
  hutch_error_t err = NULL;
  struct hutch_sandbox *sb = NULL;
  if (hutch_sandbox_open(state_dir, from ? src_id : dst_id, &sb, &err) < 0)
    return cli_fail(&err);
  struct hutch_copy_report rep = {0};
  int r = from ? copy_out(sb, src_path, dst_path, &lim, &rep, state_dir, &err)
               : copy_in(sb, src_path, dst_path, &lim, &rep, state_dir, &err);
  hutch_sandbox_close(sb);
  if (r < 0)
    return cli_fail(&err);
  report(&rep, quiet);
  return rep.stopped ? 1 : 0;
}
