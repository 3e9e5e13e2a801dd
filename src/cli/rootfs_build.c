/* SPDX-License-Identifier: Apache-2.0 */
/* hutch rootfs build: option parsing and printing around hutch_image_build,
 * which runs a recipe (hutch-recipe(5)) in a sandbox on a base image and
 * keeps what it changed as a layer of its own. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "options.h"
#include "rootfs.h"
#include "util.h"

static const char build_usage[] = "Usage: hutch rootfs build --from IMAGE --recipe FILE --name NAME [OPTIONS]\n"
                                  "       hutch rootfs build -f DOCKERFILE --name NAME [OPTIONS] [CONTEXT]\n"
                                  "\n"
                                  "Run the steps of a recipe (hutch-recipe(5)) in a sandbox started on IMAGE,\n"
                                  "and keep what they changed as a new image NAME: a layer stacked on IMAGE,\n"
                                  "which stays shared.  Each step's output is shown as it runs; a failing step\n"
                                  "stops the build with its exit status and leaves no image behind.\n"
                                  "\n"
                                  "IMAGE is an image in the store, or an image manifest's name (ubuntu:24.04),\n"
                                  "which is pulled first.  When that download fails for want of a network and\n"
                                  "the manifest names a Debian fallback, the base is bootstrapped from Debian\n"
                                  "with mmdebstrap from the mirror in this machine's apt sources instead.\n"
                                  "\n"
                                  "Options:\n"
                                  "  --from IMAGE     the base image\n"
                                  "  --recipe FILE    the recipe\n"
                                  "  -n, --name NAME  the new image's name (moves the name if it is in use)\n"
                                  "  --net MODE       proxy: the steps reach the archive hosts of the image's\n"
                                  "                   apt sources and the recipe's `allow` hosts through\n"
                                  "                   hutch's proxy; none: loopback only (default: proxy when\n"
                                  "                   the recipe has apt, pip or allow lines, else none)\n"
                                  "  --net-policy FILE  a policy whose [network] section replaces the policy's\n"
                                  "                   (e.g. allow_address for a mirror on a private address)\n"
                                  "  --step-timeout DURATION\n"
                                  "                   a step still running then is killed and the build fails\n"
                                  "                   (default: 1h; 30s, 90m, 2h)\n"
                                  "  --step-log-max SIZE  of a step's output, the bytes shown (escaped); the\n"
                                  "                   rest is dropped and counted (default: 8M)\n"
                                  "  --log-max SIZE   the same for all the steps' output (default: 64M)\n"
                                  "  --arch ARCH      the architecture of a base that is pulled\n"
                                  "  --policy FILE    the sandbox policy (default: $HUTCH_POLICY or the\n"
                                  "                   installed one)\n"
                                  "  --store DIR      the store\n"
                                  "  -f, --file FILE  a Dockerfile instead (`hutch rootfs build -f x --help`)\n"
                                  "  -h, --help       show this help\n";

enum { OPT_STORE = 256, OPT_FROM, OPT_RECIPE, OPT_NET, OPT_ARCH, OPT_POLICY, OPT_NET_POLICY };

static const struct option recipe_longopts[] = {
    {"from", required_argument, NULL, OPT_FROM},
    {"recipe", required_argument, NULL, OPT_RECIPE},
    {"name", required_argument, NULL, 'n'},
    {"net", required_argument, NULL, OPT_NET},
    {"arch", required_argument, NULL, OPT_ARCH},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"store", required_argument, NULL, OPT_STORE},
    {"net-policy", required_argument, NULL, OPT_NET_POLICY},
    ROOTFS_STEP_LONGOPTS,
    {"help", no_argument, NULL, 'h'},
    {0},
};

int rootfs_step_option(const char *verb, int c, const char *arg, double *timeout, uint64_t *step_max,
                       uint64_t *all_max) {
  if (c == ROOTFS_OPT_STEP_TIMEOUT && !parse_duration(arg, timeout))
    return cli_usage_error(verb, "--step-timeout takes a duration such as 30s, 90m or 2h, not \"%s\"", arg);
  uint64_t *size = c == ROOTFS_OPT_STEP_LOG_MAX ? step_max : c == ROOTFS_OPT_LOG_MAX ? all_max : NULL;
  if (size && (!hutch_parse_size(arg, size) || *size == 0))
    return cli_usage_error(verb, "--%s takes a size such as 512K, 8M or 1G, not \"%s\"",
                           c == ROOTFS_OPT_LOG_MAX ? "log-max" : "step-log-max", arg);
  return 0;
}

/* -f picks a Dockerfile build.  Told by a parse of all options either kind
 * of build knows, so that an option's value beginning with -f (--name -fx,
 * --build-arg -fy) is taken as the value it is, not as -f. */
static bool wants_dockerfile(int argc, char **argv) {
  struct option all[64];
  size_t n = 0;
  const struct option *tables[] = {recipe_longopts, rootfs_dockerfile_longopts};
  for (size_t t = 0; t < 2; t++)
    for (const struct option *o = tables[t]; o->name != NULL && n + 1 < sizeof(all) / sizeof(all[0]); o++) {
      bool dup = false;
      for (size_t i = 0; i < n; i++)
        dup = dup || strcmp(all[i].name, o->name) == 0;
      if (!dup)
        all[n++] = *o;
    }
  all[n] = (struct option){0};
  /* getopt_long reorders argv: a copy of it, so the real parse sees the
   * command line as given. */
  _cleanup_free_ char **copy = xmalloc(((size_t)argc + 1) * sizeof(*copy));
  memcpy(copy, argv, ((size_t)argc + 1) * sizeof(*copy));
  bool found = false;
  int c, saved = opterr;
  opterr = 0;
  optind = 0;
  while (!found && (c = getopt_long(argc, copy, ":n:f:h", all, NULL)) != -1)
    found = c == 'f';
  opterr = saved;
  optind = 0;
  return found;
}

int rootfs_build(int argc, char **argv, const char *store_path) {
  if (wants_dockerfile(argc, argv))
    return rootfs_dockerfile(argc, argv, store_path, false);
  struct cli_progress prog = {0};
  struct hutch_build_options o = {
      .net = -1,
      /* The steps' output goes to stderr: stdout carries only the new image's digest. */
      .output_fd = STDERR_FILENO,
      .phase = cli_progress_phase,
      .data = &prog,
  };
  if (isatty(STDERR_FILENO))
    o.progress = cli_draw_progress;
  int c, r;
  optind = 0;
  while ((c = getopt_long(argc, argv, ":n:h", recipe_longopts, NULL)) != -1) {
    switch (c) {
    case OPT_FROM:
      o.from = optarg;
      break;
    case OPT_RECIPE:
      o.recipe = optarg;
      break;
    case 'n':
      o.name = optarg;
      break;
    case OPT_NET:
      if (strcmp(optarg, "proxy") == 0)
        o.net = HUTCH_NET_PROXY;
      else if (strcmp(optarg, "none") == 0)
        o.net = HUTCH_NET_NONE;
      else
        return cli_usage_error("rootfs build", "--net takes proxy or none, not \"%s\"", optarg);
      break;
    case OPT_ARCH:
      o.arch = optarg;
      break;
    case OPT_POLICY:
      o.policy = optarg;
      break;
    case OPT_NET_POLICY:
      o.net_policy = optarg;
      break;
    case OPT_STORE:
      store_path = optarg;
      break;
    case ROOTFS_OPT_STEP_TIMEOUT:
    case ROOTFS_OPT_STEP_LOG_MAX:
    case ROOTFS_OPT_LOG_MAX:
      if ((r = rootfs_step_option("rootfs build", c, optarg, &o.step_timeout, &o.step_log_max, &o.log_max)) != 0)
        return r;
      break;
    case 'h':
      fputs(build_usage, stdout);
      return 0;
    default:
      return cli_bad_option("rootfs build", argc, argv, c);
    }
  }
  if (optind < argc)
    return cli_usage_error("rootfs build", "unexpected argument \"%s\"", argv[optind]);
  if (o.from == NULL || o.recipe == NULL || o.name == NULL)
    return cli_usage_error("rootfs build", "--from IMAGE, --recipe FILE and --name NAME are all needed");
  if (!hutch_image_name_valid(o.name))
    return cli_usage_error("rootfs build", "\"%s\" is not a valid image name", o.name);
  _cleanup_error_ hutch_error_t err = NULL;
  struct hutch_build_result res = {0};
  r = hutch_image_build(store_path, &o, &res, &err);
  cli_progress_end(&prog);
  if (r < 0)
    return cli_fail(&err);
  if (r > 0)
    return r;
  char size[16];
  cli_format_size(res.size, size, sizeof(size));
  fprintf(stderr, "%s: built %s: sha256:%.12s, a %s layer on %s\n", hutch_program_name, o.name,
          res.digest + strlen("sha256:"), size, res.base);
  printf("%s\n", res.digest);
  return 0;
}
