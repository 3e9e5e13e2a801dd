/* hutch rootfs pull: an image from its manifest (hutch-manifest(5)), or
 * from a registry (docker://): option parsing and printing around
 * hutch_image_pull. */
#include "config.h"

#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
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
    default:
      return cli_bad_option("rootfs pull", argc, argv, c);
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
  if (name && !hutch_image_name_valid(name))
    return cli_usage_error("rootfs pull", "\"%s\" is not a valid image name", name);

  _cleanup_error_ hutch_error_t err = NULL;
  struct hutch_store *store = NULL;
  if (hutch_store_open(store_path, &store, &err) < 0)
    return cli_fail(&err);
  struct hutch_image image = {0};
  struct cli_progress prog = {0};
  struct hutch_pull_options opts = {.name = name, .arch = arch, .phase = cli_progress_phase, .data = &prog};
  if (isatty(STDERR_FILENO))
    opts.progress = cli_draw_progress;
  int r = hutch_image_pull(store, ref, &opts, &image, &err);
  cli_progress_end(&prog);
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
