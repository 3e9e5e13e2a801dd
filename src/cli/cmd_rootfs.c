/* SPDX-License-Identifier: Apache-2.0 */
/* hutch rootfs import|ls|rm: the store of images that sandboxes start from. */
#include "config.h"

#include <cJSON.h>
#include <getopt.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "suggest.h"
#include "rootfs.h"
#include "util.h"

static const char rootfs_usage[] = "Usage: hutch rootfs COMMAND [OPTIONS]\n"
                                   "\n"
                                   "Manage the store of root filesystem images that sandboxes start from.\n"
                                   "\n"
                                   "Commands:\n"
                                   "  pull IMAGE [--name NAME]   download an image (ubuntu:24.04, docker://...)\n"
                                   "  build --from IMAGE --recipe FILE --name NAME\n"
                                   "                             build an image on another from a recipe\n"
                                   "  import FILE [--name NAME]  import a rootfs tarball or an image archive\n"
                                   "  export NAME [--format F] FILE\n"
                                   "                             write an image as an oci-archive or docker-archive\n"
                                   "  push NAME docker://REF     upload an image to a registry\n"
                                   "  ls [--json]                list the images\n"
                                   "  rm NAME|DIGEST...          remove a name, and the image once no name is left\n"
                                   "\n"
                                   "Options:\n"
                                   "  --store DIR   the store (default: $HUTCH_STORE, else $XDG_DATA_HOME/hutch,\n"
                                   "                or /var/lib/hutch for root)\n"
                                   "  -h, --help    show this help\n"
                                   "\n"
                                   "`hutch rootfs COMMAND --help` describes each command.\n";

static const char import_usage[] = "Usage: hutch rootfs import FILE [--name NAME] [--image REF] [--store DIR]\n"
                                   "\n"
                                   "Unpack a rootfs tarball (tar, tar.gz, tar.xz, tar.zst, tar.bz2, tar.lz4; the\n"
                                   "compression is recognised from the content) into the store, once: the image\n"
                                   "is keyed by the sha256 of the file, and importing the same bytes again only\n"
                                   "(re)sets the name.  Prints the digest on stdout.\n"
                                   "\n"
                                   "FILE may also be an image as docker, podman and skopeo write it: a\n"
                                   "docker-archive (`docker save`), an OCI layout (oci-archive, oci-dir) or a\n"
                                   "dir: copy (docker-dir), as a directory or a tarball.  Its layers are checked\n"
                                   "against their digests and applied in order; see hutch-rootfs(1).  A file\n"
                                   "with manifest.json, index.json or oci-layout that is not understood is\n"
                                   "refused, never unpacked as a tree.\n"
                                   "\n"
                                   "Options:\n"
                                   "  -n, --name NAME  name the image (moves the name if it is already in use)\n"
                                   "  --image REF      the image to take from an archive of several (a name\n"
                                   "                   it lists, such as busybox:1, or sha256:HEX)\n"
                                   "  --store DIR      the store to import into\n"
                                   "  -h, --help       show this help\n";

static const char ls_usage[] = "Usage: hutch rootfs ls [--json] [--store DIR]\n"
                               "\n"
                               "List the images in the store: NAME, DIGEST (first 12 hex digits), SIZE (bytes\n"
                               "of file content) and DATE (when it was imported).  An image with several\n"
                               "names is listed once per name; an image without a name shows <none>.\n"
                               "\n"
                               "Options:\n"
                               "  --json       print a JSON array of {name, digest, size, created, rootfs,\n"
                               "               ids_preserved[, lowers]} objects instead (lowers: the\n"
                               "               trees below a built image's layer)\n"
                               "  --store DIR  the store to list\n"
                               "  -h, --help   show this help\n";

static const char rm_usage[] = "Usage: hutch rootfs rm NAME|DIGEST... [--store DIR]\n"
                               "\n"
                               "Remove names from the store.  An image is removed with its last name.  A\n"
                               "digest (sha256:HEX, or at least 12 leading hex digits) removes the image and\n"
                               "every name that points at it.\n"
                               "\n"
                               "Options:\n"
                               "  --store DIR  the store to remove from\n"
                               "  -h, --help   show this help\n";

static const char export_usage[] =
    "Usage: hutch rootfs export NAME|DIGEST [--format oci-archive|docker-archive] FILE [--store DIR]\n"
    "\n"
    "Write an image of the store to FILE as an archive that podman load, skopeo\n"
    "and docker load read: one uncompressed layer holding the image's tree (a\n"
    "built image's layers merged), its Env, WorkingDir and User in the config,\n"
    "named localhost/NAME (with :latest when NAME has no tag).  FILE is replaced\n"
    "once it is complete.\n"
    "\n"
    "Options:\n"
    "  -f, --format F  oci-archive (the default) or docker-archive\n"
    "  --store DIR     the store to export from\n"
    "  -h, --help      show this help\n";

enum { OPT_STORE = 256, OPT_JSON };

int cli_bad_option(const char *verb, int argc, char **argv, int c) {
  const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
  if (c == ':')
    return cli_usage_error(verb, "option %s needs an argument", arg);
  return cli_usage_error(verb, "unknown option %s", arg);
}

void cli_format_size(uint64_t bytes, char *buf, size_t len) {
  static const char *const units[] = {"B", "kB", "MB", "GB", "TB"};
  double v = (double)bytes;
  size_t u = 0;
  while (v >= 1000 && u + 1 < ARRAY_SIZE(units)) {
    v /= 1000;
    u++;
  }
  if (u == 0)
    snprintf(buf, len, "%" PRIu64 " B", bytes);
  else
    snprintf(buf, len, v < 10 ? "%.1f %s" : "%.0f %s", v, units[u]);
}

static int open_store(const char *path, struct hutch_store **store) {
  _cleanup_error_ hutch_error_t err = NULL;
  if (hutch_store_open(path, store, &err) < 0)
    return cli_fail(&err);
  return 0;
}

/* ---- progress --------------------------------------------------------- */

void cli_draw_progress(uint64_t done, uint64_t total, void *data) {
  struct cli_progress *p = data;
  double now = monotonic_seconds();
  if (done != total && now - p->last < 0.1)
    return;
  p->last = now;
  char d[16], t[16];
  cli_format_size(done, d, sizeof(d));
  if (total > 0) {
    enum { WIDTH = 30 };
    int fill = (int)(done >= total ? WIDTH : done * WIDTH / total);
    static const char bar[] = "##############################";
    fprintf(stderr, "\r%.40s [%.*s%*s] %3d%% %s/", p->label, fill, bar, WIDTH - fill, "",
            (int)(done >= total ? 100 : done * 100 / total), d);
    cli_format_size(total, t, sizeof(t));
    fprintf(stderr, "%s\033[K", t);
  } else {
    fprintf(stderr, "\r%.40s %s\033[K", p->label, d);
  }
  p->drawn = true;
}

void cli_progress_end(struct cli_progress *p) {
  if (p->drawn)
    fputs("\r\033[K", stderr);
  p->drawn = false;
}

void cli_progress_phase(const char *label, void *data) {
  struct cli_progress *p = data;
  cli_progress_end(p);
  if (label)
    p->label = label;
}

/* ---- import ----------------------------------------------------------- */

static int rootfs_import(int argc, char **argv, const char *store_path) {
  static const struct option longopts[] = {
      {"name", required_argument, NULL, 'n'},
      {"image", required_argument, NULL, 'i'},
      {"store", required_argument, NULL, OPT_STORE},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  const char *name = NULL, *image_ref = NULL;
  int c;
  optind = 0;
  while ((c = getopt_long(argc, argv, ":n:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'n':
      name = optarg;
      break;
    case 'i':
      image_ref = optarg;
      break;
    case OPT_STORE:
      store_path = optarg;
      break;
    case 'h':
      fputs(import_usage, stdout);
      return 0;
    default:
      return cli_bad_option("rootfs import", argc, argv, c);
    }
  }
  if (optind >= argc)
    return cli_usage_error("rootfs import", "missing FILE (a rootfs tarball)");
  if (argc - optind > 1)
    return cli_usage_error("rootfs import", "one FILE at a time (got %d)", argc - optind);
  const char *file = argv[optind];
  if (name && !hutch_image_name_valid(name))
    return cli_usage_error("rootfs import",
                           "\"%s\" is not a valid image name: use 1 to 128 letters, digits, '.', '_', "
                           "'-' or ':', starting with a letter or digit",
                           name);

  struct hutch_store *store = NULL;
  int r = open_store(store_path, &store);
  if (r != 0)
    return r;
  const char *base = strrchr(file, '/');
  _cleanup_free_ char *label = xasprintf("importing %s", base ? base + 1 : file);
  struct cli_progress prog = {.label = label};
  struct hutch_import_options opts = {.name = name, .image = image_ref};
  if (isatty(STDERR_FILENO)) {
    opts.progress = cli_draw_progress;
    opts.progress_data = &prog;
  }
  struct hutch_image image = {0};
  _cleanup_error_ hutch_error_t err = NULL;
  double t0 = monotonic_seconds();
  r = hutch_image_import(store, file, &opts, &image, &err);
  cli_progress_end(&prog);
  hutch_store_close(store);
  if (r < 0)
    return cli_fail(&err);
  char size[16];
  cli_format_size(image.size, size, sizeof(size));
  const char *hex = image.digest + strlen("sha256:");
  if (r == 1)
    fprintf(stderr, "%s: %s is already in the store as sha256:%.12s%s%s\n", hutch_program_name, file, hex,
            image.name ? ", named " : "", image.name ? image.name : "");
  else
    fprintf(stderr, "%s: imported %s%s%s: sha256:%.12s, %s in %.2f s\n", hutch_program_name, file,
            image.name ? " as " : "", image.name ? image.name : "", hex, size, monotonic_seconds() - t0);
  printf("%s\n", image.digest);
  hutch_image_clear(&image);
  return 0;
}

/* ---- ls --------------------------------------------------------------- */

static int print_json(const struct hutch_image *images, size_t n) {
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; i < n; i++) {
    cJSON *o = cJSON_CreateObject();
    if (images[i].name)
      cJSON_AddStringToObject(o, "name", images[i].name);
    else
      cJSON_AddNullToObject(o, "name");
    cJSON_AddStringToObject(o, "digest", images[i].digest);
    cJSON_AddNumberToObject(o, "size", (double)images[i].size);
    cJSON_AddNumberToObject(o, "created", (double)images[i].created);
    cJSON_AddStringToObject(o, "rootfs", images[i].rootfs);
    cJSON_AddBoolToObject(o, "ids_preserved", images[i].ids_preserved);
    if (images[i].lowers) {
      cJSON *lowers = cJSON_AddArrayToObject(o, "lowers");
      for (char **l = images[i].lowers; *l; l++)
        cJSON_AddItemToArray(lowers, cJSON_CreateString(*l));
    }
    cJSON_AddItemToArray(arr, o);
  }
  _cleanup_free_ char *text = cJSON_Print(arr);
  cJSON_Delete(arr);
  printf("%s\n", text);
  return 0;
}

static void print_table(const struct hutch_image *images, size_t n) {
  int wname = 4;
  for (size_t i = 0; i < n; i++) {
    int len = (int)strlen(images[i].name ? images[i].name : "<none>");
    if (len > wname)
      wname = len;
  }
  printf("%-*s  %-12s  %8s  %s\n", wname, "NAME", "DIGEST", "SIZE", "DATE");
  for (size_t i = 0; i < n; i++) {
    char size[16], date[32] = "-";
    cli_format_size(images[i].size, size, sizeof(size));
    time_t t = (time_t)images[i].created;
    struct tm tm;
    if (localtime_r(&t, &tm))
      strftime(date, sizeof(date), "%Y-%m-%d %H:%M", &tm);
    printf("%-*s  %-12.12s  %8s  %s\n", wname, images[i].name ? images[i].name : "<none>",
           images[i].digest + strlen("sha256:"), size, date);
  }
}

static int rootfs_ls(int argc, char **argv, const char *store_path) {
  static const struct option longopts[] = {
      {"json", no_argument, NULL, OPT_JSON},
      {"store", required_argument, NULL, OPT_STORE},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  bool json = false;
  int c;
  optind = 0;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    switch (c) {
    case OPT_JSON:
      json = true;
      break;
    case OPT_STORE:
      store_path = optarg;
      break;
    case 'h':
      fputs(ls_usage, stdout);
      return 0;
    default:
      return cli_bad_option("rootfs ls", argc, argv, c);
    }
  }
  if (optind < argc)
    return cli_usage_error("rootfs ls", "unexpected argument \"%s\"", argv[optind]);
  struct hutch_store *store = NULL;
  int r = open_store(store_path, &store);
  if (r != 0)
    return r;
  struct hutch_image *images = NULL;
  size_t n = 0;
  _cleanup_error_ hutch_error_t err = NULL;
  r = hutch_image_list(store, &images, &n, &err);
  hutch_store_close(store);
  if (r < 0)
    return cli_fail(&err);
  if (json)
    print_json(images, n);
  else
    print_table(images, n);
  hutch_image_list_free(images, n);
  return 0;
}

/* ---- rm --------------------------------------------------------------- */

static int rootfs_rm(int argc, char **argv, const char *store_path) {
  static const struct option longopts[] = {
      {"store", required_argument, NULL, OPT_STORE},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  int c;
  optind = 0;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    switch (c) {
    case OPT_STORE:
      store_path = optarg;
      break;
    case 'h':
      fputs(rm_usage, stdout);
      return 0;
    default:
      return cli_bad_option("rootfs rm", argc, argv, c);
    }
  }
  if (optind >= argc)
    return cli_usage_error("rootfs rm", "missing NAME or DIGEST");
  struct hutch_store *store = NULL;
  int r = open_store(store_path, &store);
  if (r != 0)
    return r;
  int ret = 0;
  for (int i = optind; i < argc; i++) {
    _cleanup_error_ hutch_error_t err = NULL;
    if (hutch_image_remove(store, argv[i], &err) < 0)
      ret = cli_fail(&err);
  }
  hutch_store_close(store);
  return ret;
}

/* ---- export ----------------------------------------------------------- */

static int rootfs_export(int argc, char **argv, const char *store_path) {
  static const struct option longopts[] = {
      {"format", required_argument, NULL, 'f'},
      {"store", required_argument, NULL, OPT_STORE},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  const char *format = "oci-archive";
  int c;
  optind = 0;
  while ((c = getopt_long(argc, argv, ":f:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'f':
      format = optarg;
      break;
    case OPT_STORE:
      store_path = optarg;
      break;
    case 'h':
      fputs(export_usage, stdout);
      return 0;
    default:
      return cli_bad_option("rootfs export", argc, argv, c);
    }
  }
  if (argc - optind != 2)
    return cli_usage_error("rootfs export", "give NAME (or DIGEST) and FILE");
  if (strcmp(format, "oci-archive") != 0 && strcmp(format, "docker-archive") != 0)
    return cli_usage_error("rootfs export", "unknown --format \"%s\" (oci-archive or docker-archive)", format);
  struct hutch_store *store = NULL;
  int r = open_store(store_path, &store);
  if (r != 0)
    return r;
  _cleanup_error_ hutch_error_t err = NULL;
  double t0 = monotonic_seconds();
  r = hutch_image_export(store, argv[optind], format, argv[optind + 1], &err);
  hutch_store_close(store);
  if (r < 0)
    return cli_fail(&err);
  struct stat st;
  char size[16] = "?";
  if (stat(argv[optind + 1], &st) == 0)
    cli_format_size((uint64_t)st.st_size, size, sizeof(size));
  fprintf(stderr, "%s: exported %s to %s (%s, %s) in %.2f s\n", hutch_program_name, argv[optind], argv[optind + 1],
          format, size, monotonic_seconds() - t0);
  return 0;
}

/* ---- dispatch --------------------------------------------------------- */

int cmd_rootfs(int argc, char **argv) {
  static const struct option longopts[] = {
      {"store", required_argument, NULL, OPT_STORE},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  const char *store_path = NULL;
  int c;
  optind = 0;
  /* Options before the command apply to it (`hutch rootfs --store DIR ls`). */
  while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
    switch (c) {
    case OPT_STORE:
      store_path = optarg;
      break;
    case 'h':
      fputs(rootfs_usage, stdout);
      return 0;
    default:
      return cli_bad_option("rootfs", argc, argv, c);
    }
  }
  if (optind >= argc)
    return cli_usage_error("rootfs", "missing command (pull, build, import, export, push, ls or rm)");
  const char *sub = argv[optind];
  int sub_argc = argc - optind;
  char **sub_argv = argv + optind;
  if (strcmp(sub, "import") == 0)
    return rootfs_import(sub_argc, sub_argv, store_path);
  if (strcmp(sub, "pull") == 0)
    return rootfs_pull(sub_argc, sub_argv, store_path);
  if (strcmp(sub, "build") == 0)
    return rootfs_build(sub_argc, sub_argv, store_path);
  if (strcmp(sub, "export") == 0)
    return rootfs_export(sub_argc, sub_argv, store_path);
  if (strcmp(sub, "push") == 0)
    return rootfs_push(sub_argc, sub_argv, store_path);
  if (strcmp(sub, "ls") == 0 || strcmp(sub, "list") == 0)
    return rootfs_ls(sub_argc, sub_argv, store_path);
  if (strcmp(sub, "rm") == 0 || strcmp(sub, "remove") == 0)
    return rootfs_rm(sub_argc, sub_argv, store_path);
  if (strcmp(sub, "help") == 0) {
    fputs(rootfs_usage, stdout);
    return 0;
  }
  static const char *const subs[] = {"pull", "build", "import", "export", "push", "ls", "rm"};
  const char *found[SUGGEST_MAX];
  size_t n_found = suggest_closest(sub, subs, sizeof(subs) / sizeof(subs[0]), found);
  char list[128];
  suggest_format(found, n_found, list, sizeof(list));
  if (n_found > 0)
    return cli_usage_error("rootfs", "unknown command \"%s\": did you mean %s?", sub, list);
  return cli_usage_error("rootfs", "unknown command \"%s\" (pull, build, import, export, push, ls or rm)", sub);
}
