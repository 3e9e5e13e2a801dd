/* SPDX-License-Identifier: Apache-2.0 */
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
                                 "  --authfile FILE  docker://: the credentials (default: $REGISTRY_AUTH_FILE,\n"
                                 "                   podman's auth.json, ~/.docker/config.json)\n"
                                 "  --cert-dir DIR   docker://: trust the CA certificates DIR/*.crt\n"
                                 "  --tls-verify=false\n"
                                 "                   docker://: do not check the registry's certificate, and\n"
                                 "                   allow plain http\n"
                                 "  -h, --help       show this help\n";

static const char push_usage[] = "Usage: hutch rootfs push NAME|DIGEST docker://HOST/REPO[:TAG] [--store DIR]\n"
                                 "\n"
                                 "Upload an image of the store to an OCI registry, so that other machines pull\n"
                                 "it (hutch rootfs pull, podman pull, skopeo copy).  The image is sent as\n"
                                 "`hutch rootfs export` writes it: one layer with the whole tree, its config\n"
                                 "(Env, WorkingDir, User) and an OCI manifest, tagged TAG (default: latest).\n"
                                 "Blobs the registry has already are not sent again.  Prints the manifest's\n"
                                 "digest on stdout.\n"
                                 "\n"
                                 "Options:\n"
                                 "  --authfile FILE  the credentials (default: $REGISTRY_AUTH_FILE, podman's\n"
                                 "                   auth.json, ~/.docker/config.json)\n"
                                 "  --cert-dir DIR   trust the CA certificates DIR/*.crt\n"
                                 "  --tls-verify=false\n"
                                 "                   do not check the registry's certificate, and allow plain\n"
                                 "                   http\n"
                                 "  --store DIR      the store to push from\n"
                                 "  -h, --help       show this help\n";

enum { OPT_STORE = 256, OPT_ARCH, OPT_AUTHFILE, OPT_CERT_DIR, OPT_TLS_VERIFY };

struct registry_flags {
  const char *auth_file, *cert_dir;
  bool tls_insecure, given;
};

/* The registry options pull and push share; 1 when c was one of them,
 * -1 for a bad value. */
static int registry_flag(const char *verb, int c, struct registry_flags *f) {
  switch (c) {
  case OPT_AUTHFILE:
    f->auth_file = optarg;
    break;
  case OPT_CERT_DIR:
    f->cert_dir = optarg;
    break;
  case OPT_TLS_VERIFY:
    if (optarg == NULL || strcmp(optarg, "true") == 0)
      f->tls_insecure = false;
    else if (strcmp(optarg, "false") == 0)
      f->tls_insecure = true;
    else
      return cli_usage_error(verb, "--tls-verify takes true or false, not \"%s\"", optarg), -1;
    break;
  default:
    return 0;
  }
  f->given = true;
  return 1;
}

#define REGISTRY_LONGOPTS                                                                                              \
  {"authfile", required_argument, NULL, OPT_AUTHFILE}, {"cert-dir", required_argument, NULL, OPT_CERT_DIR}, {          \
    "tls-verify", optional_argument, NULL, OPT_TLS_VERIFY                                                              \
  }

int rootfs_pull(int argc, char **argv, const char *store_path) {
  static const struct option longopts[] = {
      {"name", required_argument, NULL, 'n'},
      {"arch", required_argument, NULL, OPT_ARCH},
      {"store", required_argument, NULL, OPT_STORE},
      {"help", no_argument, NULL, 'h'},
      REGISTRY_LONGOPTS,
      {0},
  };
  const char *name = NULL, *arch = NULL;
  struct registry_flags rf = {0};
  int c;
  optind = 0;
  while ((c = getopt_long(argc, argv, ":n:h", longopts, NULL)) != -1) {
    int rr = registry_flag("rootfs pull", c, &rf);
    if (rr < 0)
      return 2;
    if (rr > 0)
      continue;
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
  if (rf.given && strncmp(ref, ROOTFS_DOCKER_PREFIX, strlen(ROOTFS_DOCKER_PREFIX)) != 0)
    return cli_usage_error("rootfs pull", "--authfile, --cert-dir and --tls-verify apply to docker:// images only");
  if (name && !hutch_image_name_valid(name))
    return cli_usage_error("rootfs pull", "\"%s\" is not a valid image name", name);

  _cleanup_error_ hutch_error_t err = NULL;
  struct hutch_store *store = NULL;
  if (hutch_store_open(store_path, &store, &err) < 0)
    return cli_fail(&err);
  struct hutch_image image = {0};
  struct cli_progress prog = {0};
  struct hutch_pull_options opts = {
      .name = name,
      .arch = arch,
      .phase = cli_progress_phase,
      .data = &prog,
      .auth_file = rf.auth_file,
      .tls_insecure = rf.tls_insecure,
      .cert_dir = rf.cert_dir,
  };
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

int rootfs_push(int argc, char **argv, const char *store_path) {
  static const struct option longopts[] = {
      {"store", required_argument, NULL, OPT_STORE},
      {"help", no_argument, NULL, 'h'},
      REGISTRY_LONGOPTS,
      {0},
  };
  struct registry_flags rf = {0};
  int c;
  optind = 0;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    int rr = registry_flag("rootfs push", c, &rf);
    if (rr < 0)
      return 2;
    if (rr > 0)
      continue;
    switch (c) {
    case OPT_STORE:
      store_path = optarg;
      break;
    case 'h':
      fputs(push_usage, stdout);
      return 0;
    default:
      return cli_bad_option("rootfs push", argc, argv, c);
    }
  }
  if (argc - optind != 2)
    return cli_usage_error("rootfs push", "give NAME (or DIGEST) and docker://HOST/REPO[:TAG]");
  const char *ref = argv[optind + 1];
  if (strncmp(ref, ROOTFS_DOCKER_PREFIX, strlen(ROOTFS_DOCKER_PREFIX)) != 0)
    return cli_usage_error("rootfs push", "\"%s\" is not a docker:// reference", ref);
  _cleanup_error_ hutch_error_t err = NULL;
  struct hutch_store *store = NULL;
  if (hutch_store_open(store_path, &store, &err) < 0)
    return cli_fail(&err);
  struct cli_progress prog = {0};
  struct hutch_push_options opts = {
      .auth_file = rf.auth_file,
      .tls_insecure = rf.tls_insecure,
      .cert_dir = rf.cert_dir,
      .phase = cli_progress_phase,
      .data = &prog,
  };
  if (isatty(STDERR_FILENO))
    opts.progress = cli_draw_progress;
  char digest[72];
  double t0 = monotonic_seconds();
  int r = hutch_image_push(store, argv[optind], ref, &opts, digest, &err);
  cli_progress_end(&prog);
  hutch_store_close(store);
  if (r < 0)
    return cli_fail(&err);
  fprintf(stderr, "%s: pushed %s to %s: %.19s in %.1f s\n", hutch_program_name, argv[optind], ref, digest,
          monotonic_seconds() - t0);
  printf("%s\n", digest);
  return 0;
}
