/* SPDX-License-Identifier: Apache-2.0 */
/* hutch rootfs build -f Dockerfile: option parsing and printing around
 * hutch_dockerfile_build. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "rootfs.h"
#include "util.h"

static const char dockerfile_usage[] =
    "Usage: hutch rootfs build -f DOCKERFILE --name NAME [OPTIONS] [CONTEXT]\n"
    "       hutch build [-f DOCKERFILE] --image_name NAME [--force] [OPTIONS] [CONTEXT]\n"
    "\n"
    "Build the image a Dockerfile describes (the subset in hutch-rootfs(1)): each\n"
    "RUN in a sandbox on the layers so far, COPY and ADD from the build context\n"
    "CONTEXT (default: the Dockerfile's directory; .dockerignore applies).  Each\n"
    "instruction that changes files is a layer of its own, reused by a rebuild\n"
    "while the instruction and its inputs are unchanged.  Each step is shown with\n"
    "its time; the whole log goes to the store's logs/ directory (or --log).\n"
    "\n"
    "Options:\n"
    "  -f, --file FILE       the Dockerfile\n"
    "  -n, --name NAME       the new image's name (moves the name if it is in use);\n"
    "                        --image_name NAME is the same\n"
    "  --build-arg K=V       a value for ARG K (repeatable; K alone: from the environment)\n"
    "  --allow HOST[:PORT]   a host RUN steps and ADD URLs may reach through hutch's\n"
    "                        proxy (repeatable)\n"
    "  --target STAGE        build the stage FROM ... AS STAGE and stop there\n"
    "  --no-cache, --force   make every layer again\n"
    "  --net MODE            proxy or none (default: proxy when --allow names a host)\n"
    "  --net-policy FILE     a policy whose [network] section replaces the policy's\n"
    "  --log FILE            the build log (default: STORE/logs/build-NAME.log)\n"
    "  --step-timeout DURATION  a RUN step still running then is killed and the build\n"
    "                        fails (default: 1h; 30s, 90m, 2h)\n"
    "  --step-log-max SIZE   of a RUN step's output, the bytes shown and logged\n"
    "                        (escaped); the rest is dropped and counted (default: 8M)\n"
    "  --log-max SIZE        the same for all the steps' output (default: 64M)\n"
    "  --arch ARCH           the architecture of a base that is pulled\n"
    "  --authfile FILE       registry credentials, for a FROM pulled from a registry\n"
    "  --tls-verify=false    no TLS check (or plain HTTP) for that registry\n"
    "  --policy FILE         the sandbox policy\n"
    "  --store DIR           the store\n"
    "  -h, --help            show this help\n";

enum {
  OPT_STORE = 256,
  OPT_BUILD_ARG,
  OPT_ALLOW,
  OPT_TARGET,
  OPT_NO_CACHE,
  OPT_NET,
  OPT_NET_POLICY,
  OPT_LOG,
  OPT_ARCH,
  OPT_POLICY,
  OPT_AUTHFILE,
  OPT_TLS_VERIFY,
};

static void push(const char ***v, size_t *n, const char *s) {
  *v = xrealloc(*v, (*n + 2) * sizeof(**v));
  (*v)[(*n)++] = s;
  (*v)[*n] = NULL;
}

const struct option rootfs_dockerfile_longopts[] = {
    {"file", required_argument, NULL, 'f'},
    {"name", required_argument, NULL, 'n'},
    {"image_name", required_argument, NULL, 'n'},
    {"build-arg", required_argument, NULL, OPT_BUILD_ARG},
    {"allow", required_argument, NULL, OPT_ALLOW},
    {"target", required_argument, NULL, OPT_TARGET},
    {"no-cache", no_argument, NULL, OPT_NO_CACHE},
    {"force", no_argument, NULL, OPT_NO_CACHE},
    {"net", required_argument, NULL, OPT_NET},
    {"net-policy", required_argument, NULL, OPT_NET_POLICY},
    {"log", required_argument, NULL, OPT_LOG},
    {"arch", required_argument, NULL, OPT_ARCH},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"store", required_argument, NULL, OPT_STORE},
    {"authfile", required_argument, NULL, OPT_AUTHFILE},
    {"tls-verify", required_argument, NULL, OPT_TLS_VERIFY},
    ROOTFS_STEP_LONGOPTS,
    {"help", no_argument, NULL, 'h'},
    {0},
};

int rootfs_dockerfile(int argc, char **argv, const char *store_path, bool lis) {
  const char *verb = lis ? "build" : "rootfs build";
  struct cli_progress prog = {0};
  struct hutch_dockerfile_options o = {
      .net = -1,
      .output_fd = STDERR_FILENO,
      .phase = cli_progress_phase,
      .data = &prog,
  };
  if (isatty(STDERR_FILENO))
    o.progress = cli_draw_progress;
  _cleanup_free_ const char **args = NULL, **allow = NULL;
  _cleanup_strv_ char **from_env = xcalloc(1, sizeof(char *));
  size_t n_args = 0, n_allow = 0, n_env = 0;
  int c, r;
  optind = 0;
  while ((c = getopt_long(argc, argv, ":f:n:h", rootfs_dockerfile_longopts, NULL)) != -1) {
    switch (c) {
    case 'f':
      o.dockerfile = optarg;
      break;
    case 'n':
      o.name = optarg;
      break;
    case OPT_BUILD_ARG:
      if (strchr(optarg, '=') == NULL) {
        /* K alone: its value in hutch's environment, as docker build takes it. */
        const char *v = getenv(optarg);
        if (v == NULL)
          break;
        from_env = xrealloc(from_env, (n_env + 2) * sizeof(char *));
        from_env[n_env] = xasprintf("%s=%s", optarg, v);
        push(&args, &n_args, from_env[n_env++]);
        from_env[n_env] = NULL;
      } else {
        push(&args, &n_args, optarg);
      }
      break;
    case OPT_ALLOW:
      push(&allow, &n_allow, optarg);
      break;
    case OPT_TARGET:
      o.target = optarg;
      break;
    case OPT_NO_CACHE:
      o.no_cache = true;
      break;
    case OPT_NET:
      if (strcmp(optarg, "proxy") == 0)
        o.net = HUTCH_NET_PROXY;
      else if (strcmp(optarg, "none") == 0)
        o.net = HUTCH_NET_NONE;
      else
        return cli_usage_error(verb, "--net takes proxy or none, not \"%s\"", optarg);
      break;
    case OPT_NET_POLICY:
      o.net_policy = optarg;
      break;
    case OPT_LOG:
      o.log_file = optarg;
      break;
    case OPT_ARCH:
      o.arch = optarg;
      break;
    case OPT_POLICY:
      o.policy = optarg;
      break;
    case OPT_STORE:
      store_path = optarg;
      break;
    case OPT_AUTHFILE:
      o.auth_file = optarg;
      break;
    case OPT_TLS_VERIFY:
      if (strcmp(optarg, "true") != 0 && strcmp(optarg, "false") != 0)
        return cli_usage_error(verb, "--tls-verify takes true or false, not \"%s\"", optarg);
      o.tls_insecure = strcmp(optarg, "false") == 0;
      break;
    case ROOTFS_OPT_STEP_TIMEOUT:
    case ROOTFS_OPT_STEP_LOG_MAX:
    case ROOTFS_OPT_LOG_MAX:
      if ((r = rootfs_step_option(verb, c, optarg, &o.step_timeout, &o.step_log_max, &o.log_max)) != 0)
        return r;
      break;
    case 'h':
      fputs(dockerfile_usage, stdout);
      return 0;
    default:
      return cli_bad_option(verb, argc, argv, c);
    }
  }
  if (optind < argc)
    o.context = argv[optind++];
  if (optind < argc)
    return cli_usage_error(verb, "unexpected argument \"%s\"", argv[optind]);
  _cleanup_free_ char *default_file = NULL;
  if (o.dockerfile == NULL) {
    default_file = xasprintf("%s/Dockerfile", o.context ? o.context : ".");
    o.dockerfile = default_file;
  }
  if (o.name == NULL)
    return cli_usage_error(verb, "--name NAME is needed");
  if (!hutch_image_name_valid(o.name))
    return cli_usage_error(verb, "\"%s\" is not a valid image name", o.name);
  o.build_args = args;
  o.allow = allow;
  _cleanup_error_ hutch_error_t err = NULL;
  struct hutch_build_result res = {0};
  r = hutch_dockerfile_build(store_path, &o, &res, &err);
  cli_progress_end(&prog);
  if (r < 0)
    return cli_fail(&err);
  if (r > 0)
    return r;
  fprintf(stderr, "%s: built %s: sha256:%.12s\n", hutch_program_name, o.name, res.digest + strlen("sha256:"));
  printf("%s\n", res.digest);
  return 0;
}

/* `hutch build`: LIS's `llm-in-sandbox build` spellings (--image_name,
 * --force, CONTEXT/Dockerfile by default). */
int cmd_build(int argc, char **argv) {
  return rootfs_dockerfile(argc, argv, NULL, true);
}
