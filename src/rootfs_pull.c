/* hutch rootfs pull: an image from its manifest (hutch-manifest(5)), or
 * from a registry (docker://, runtime/oci.h). */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "download.h"
#include "manifest.h"
#include "oci.h"
#include "paths.h"
#include "rootfs.h"
#include "util.h"

static const char pull_usage[] = "Usage: hutch rootfs pull IMAGE [--name NAME] [--arch ARCH] [--store DIR]\n"
                                 "\n"
                                 "Download an image, check its sha256, and import it into the store.  IMAGE\n"
                                 "is the name of an image manifest (ubuntu:24.04, ubuntu:22.04: see\n"
                                 "hutch-manifest(5); $HUTCH_ROOTFS_DIR names another directory of them), or\n"
                                 "docker://NAME[:TAG|@DIGEST] for an image in an OCI registry.  Nothing is\n"
                                 "downloaded when the pinned digest is in the store already.  An interrupted\n"
                                 "download resumes where it stopped.  The proxy variables (https_proxy,\n"
                                 "http_proxy, no_proxy) apply.  Prints the digest on stdout.\n"
                                 "\n"
                                 "Options:\n"
                                 "  -n, --name NAME  name the image (default: IMAGE without docker://)\n"
                                 "  --arch ARCH      the architecture to fetch (amd64, arm64; default: this\n"
                                 "                   machine's)\n"
                                 "  --store DIR      the store to import into\n"
                                 "  -h, --help       show this help\n";

enum { OPT_STORE = 256, OPT_ARCH };

static int download_dir(struct hutch_store *store, char **out, hutch_error_t *err) {
  char *dir = xasprintf("%s/downloads", hutch_store_path(store));
  if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
    hutch_error_sys(err, "rootfs store: create %s", dir);
    free(dir);
    return -1;
  }
  *out = dir;
  return 0;
}

int rootfs_pull_manifest(struct hutch_store *store, const char *ref, const char *arch, const char *name,
                         struct hutch_image *out, hutch_error_t *err) {
  struct manifest m = {0};
  if (manifest_load(ref, &m, err) < 0)
    return -1;
  if (arch == NULL)
    arch = manifest_host_arch();
  if (name == NULL)
    name = ref;
  const struct manifest_source *src = manifest_find_arch(&m, arch);
  if (src == NULL) {
    _cleanup_free_ char *have = xstrdup("");
    for (size_t i = 0; i < m.n_sources; i++) {
      char *t = xasprintf("%s%s%s", have, i ? ", " : "", m.sources[i].arch);
      free(have);
      have = t;
    }
    hutch_error_set(err, ENOENT, "%s has no download for the architecture %s", ref, arch);
    hutch_error_hint(err, "the manifest lists %s (--arch chooses one)", have);
    manifest_clear(&m);
    return -1;
  }
  _cleanup_free_ char *digest = xasprintf("sha256:%s", src->sha256);
  _cleanup_free_ char *url = xstrdup(src->url);
  manifest_clear(&m);

  /* The store keys an image by the sha256 of its tarball: the pinned digest
   * finds it without any download. */
  _cleanup_error_ hutch_error_t e = NULL;
  if (hutch_image_lookup(store, digest, out, &e) == 0) {
    hutch_image_clear(out);
    if (hutch_image_tag(store, digest, name, err) < 0 || hutch_image_lookup(store, name, out, err) < 0)
      return -1;
    return 1;
  }

  _cleanup_free_ char *dir = NULL;
  if (download_dir(store, &dir, err) < 0)
    return -1;
  _cleanup_free_ char *dest = xasprintf("%s/sha256-%s", dir, digest + 7);
  const char *base = strrchr(url, '/');
  _cleanup_free_ char *label = xasprintf("downloading %s", base ? base + 1 : url);
  struct cli_progress prog = {.label = label};
  struct download_request req = {.url = url, .dest = dest, .sha256 = digest};
  if (isatty(STDERR_FILENO)) {
    req.progress = cli_draw_progress;
    req.progress_data = &prog;
  }
  double t0 = monotonic_seconds();
  int r = download_file(&req, err);
  cli_progress_end(&prog);
  if (r < 0)
    return hutch_error_wrap(err, "pull %s", ref);
  fprintf(stderr, "%s: downloaded %s in %.1f s, sha256 verified\n", hutch_program_name, url, monotonic_seconds() - t0);

  _cleanup_free_ char *ilabel = xasprintf("importing %s", ref);
  struct cli_progress iprog = {.label = ilabel};
  struct hutch_import_options opts = {.name = name, .sha256 = digest};
  if (isatty(STDERR_FILENO)) {
    opts.progress = cli_draw_progress;
    opts.progress_data = &iprog;
  }
  r = hutch_image_import(store, dest, &opts, out, err);
  cli_progress_end(&iprog);
  /* The tarball is in the store now, unpacked: keeping it would double the space. */
  unlink(dest);
  if (r < 0)
    return hutch_error_wrap(err, "pull %s", ref);
  if (strcmp(out->digest, digest) != 0) {
    hutch_error_set(err, EBADMSG, "pull %s: imported as %s, not the verified %s", ref, out->digest, digest);
    return -1;
  }
  return r;
}

/* docker:// references are the OCI importer's (runtime/oci.h). */
static int pull_dispatch(struct hutch_store *store, const char *store_path, const char *ref, const char *arch,
                         const char *name, struct hutch_image *out, hutch_error_t *err) {
  if (strncmp(ref, ROOTFS_DOCKER_PREFIX, strlen(ROOTFS_DOCKER_PREFIX)) == 0) {
    struct oci_pull_options opts = {0};
    struct cli_progress prog = {.label = "downloading"};
    if (isatty(STDERR_FILENO)) {
      opts.progress = cli_draw_progress;
      opts.progress_data = &prog;
    }
    int r = rootfs_pull_oci(store_path, ref, name ? name : ref + strlen(ROOTFS_DOCKER_PREFIX), &opts, out, err);
    cli_progress_end(&prog);
    return r;
  }
  return rootfs_pull_manifest(store, ref, arch, name, out, err);
}

int rootfs_pull(int argc, char **argv, const char *store_path) {
  static const struct option longopts[] = {
      {"name", required_argument, NULL, 'n'},
      {"arch", required_argument, NULL, OPT_ARCH},
      {"store", required_argument, NULL, OPT_STORE},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  const char *name = NULL, *arch = NULL;
  int c;
  optind = 0;
  while ((c = getopt_long(argc, argv, ":n:h", longopts, NULL)) != -1) {
    switch (c) {
    case 'n':
      name = optarg;
      break;
    case OPT_ARCH:
      arch = optarg;
      break;
    case OPT_STORE:
      store_path = optarg;
      break;
    case 'h':
      fputs(pull_usage, stdout);
      return 0;
    case ':':
      return cli_usage_error("rootfs pull", "option %s needs an argument", argv[optind - 1]);
    default:
      return cli_usage_error("rootfs pull", "unknown option %s", argv[optind - 1]);
    }
  }
  if (optind >= argc)
    return cli_usage_error("rootfs pull", "missing IMAGE (e.g. ubuntu:24.04)");
  if (argc - optind > 1)
    return cli_usage_error("rootfs pull", "one IMAGE at a time (got %d)", argc - optind);
  const char *ref = argv[optind];
  if (arch && strncmp(ref, ROOTFS_DOCKER_PREFIX, strlen(ROOTFS_DOCKER_PREFIX)) == 0)
    return cli_usage_error("rootfs pull", "--arch applies to manifest images only (a registry pull takes this "
                                          "machine's platform)");
  if (name && !paths_valid_name(name))
    return cli_usage_error("rootfs pull", "\"%s\" is not a valid image name", name);

  _cleanup_error_ hutch_error_t err = NULL;
  struct hutch_store *store = NULL;
  if (hutch_store_open(store_path, &store, &err) < 0)
    return cli_fail(&err);
  struct hutch_image image = {0};
  int r = pull_dispatch(store, store_path, ref, arch, name, &image, &err);
  hutch_store_close(store);
  if (r < 0)
    return cli_fail(&err);
  const char *hex = image.digest + strlen("sha256:");
  if (r == 1)
    fprintf(stderr, "%s: %s is already in the store as sha256:%.12s%s%s\n", hutch_program_name, ref, hex,
            image.name ? ", named " : "", image.name ? image.name : "");
  else
    fprintf(stderr, "%s: pulled %s%s%s: sha256:%.12s\n", hutch_program_name, ref, image.name ? " as " : "",
            image.name ? image.name : "", hex);
  printf("%s\n", image.digest);
  hutch_image_clear(&image);
  return 0;
}
