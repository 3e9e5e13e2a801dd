/* SPDX-License-Identifier: Apache-2.0 */
/* hutch serve: the options of the SandboxFusion-compatible HTTP service
 * (src/serve/), the image looked up once, the reaper started, the image
 * probed, then the server until SIGINT or SIGTERM. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../serve/serve.h"
#include "cli.h"
#include "options.h"
#include "util.h"

enum {
  OPT_LISTEN = 256,
  OPT_IMAGE,
  OPT_MAX_CONCURRENCY,
  OPT_MAX_QUEUE,
  OPT_MAX_BODY,
  OPT_MAX_OUTPUT,
  OPT_MAX_FILE,
  OPT_MAX_TIMEOUT,
  OPT_MAX_MEMORY,
  OPT_BUSY_STATUS,
  OPT_TOKEN_FILE,
  OPT_STORE,
  OPT_STATE_DIR,
  OPT_POLICY,
  OPT_AUDIT_LOG,
  OPT_AUDIT_LOG_MAX,
  OPT_JSON,
  OPT_WARM,
};

static const struct option serve_options[] = {
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"image", required_argument, NULL, OPT_IMAGE},
    {"max-concurrency", required_argument, NULL, OPT_MAX_CONCURRENCY},
    {"max-queue", required_argument, NULL, OPT_MAX_QUEUE},
    {"max-body", required_argument, NULL, OPT_MAX_BODY},
    {"max-output", required_argument, NULL, OPT_MAX_OUTPUT},
    {"max-file", required_argument, NULL, OPT_MAX_FILE},
    {"max-timeout", required_argument, NULL, OPT_MAX_TIMEOUT},
    {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
    {"busy-status", required_argument, NULL, OPT_BUSY_STATUS},
    {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
    {"store", required_argument, NULL, OPT_STORE},
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"audit-log", required_argument, NULL, OPT_AUDIT_LOG},
    {"audit-log-max", required_argument, NULL, OPT_AUDIT_LOG_MAX},
    {"json", no_argument, NULL, OPT_JSON},
    {"warm", required_argument, NULL, OPT_WARM},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void serve_usage(FILE *out) {
  fprintf(out, "Usage: hutch serve [OPTIONS]\n\n"
               "Serve SandboxFusion's HTTP API (POST /run_code, GET /v1/ping) so that verl's code\n"
               "reward and its sandbox_fusion tool run against hutch unchanged: each request runs in\n"
               "a sandbox of its own, without network, with the request's limits.  GET /metrics is in\n"
               "Prometheus' format.  SIGINT or SIGTERM: the running requests finish, then it ends.\n\n"
               "Options:\n"
               "  --listen ADDR:PORT    where to listen (default: 127.0.0.1:8080; port 0 picks one); an\n"
               "                        address that is not loopback needs --token-file\n"
               "  --image NAME          the image requests run in (default: default)\n"
               "  --max-concurrency N   requests run at once (default: 32)\n"
               "  --max-queue N         requests waiting past those, at most (default: 256); past it,\n"
               "                        503\n"
               "  --warm N              sandboxes made ahead of the requests, at most (default: 4; 0:\n"
               "                        each request's is made for it)\n"
               "  --busy-status CODE    the answer when the queue is full: 503 (default) or 504, which\n"
               "                        verl's client retries\n"
               "  --max-body SIZE       the largest request body (default: 32M)\n"
               "  --max-output SIZE     bytes kept of each output stream of a step (default: 4M)\n"
               "  --max-file SIZE       the largest file fetch_files returns (default: 16M)\n"
               "  --max-timeout SECONDS the longest compile_timeout or run_timeout (default: 300)\n"
               "  --max-memory SIZE     the largest memory_limit_MB a request may ask for (default: any)\n"
               "  --token-file FILE     bearer tokens, one a line, each one client's: every request but\n"
               "                        GET /v1/ping and /health must carry one\n"
               "  --audit-log FILE      one JSON line per request (default: stderr)\n"
               "  --audit-log-max SIZE  past this, FILE becomes FILE.1 and a new one starts (default: 64M)\n"
               "  --store DIR           rootfs store\n"
               "  --state-dir DIR       where sandboxes keep their state\n"
               "  --policy FILE         sandbox policy\n"
               "  --json                print where it listens and what it serves as a JSON line on\n"
               "                        stdout\n"
               "  -h, --help            show this help\n\n"
               "Languages: python, pytest, cpp, bash, perl, nodejs, typescript, go, java, php, rust,\n"
               "lua, R, ruby, julia, racket, kotlin_script, swift, D_ut, each where the image has its\n"
               "tool (hutch-serve(1) has the table); SandboxFusion's others are refused.\n");
}

static void on_signal(int sig) {
  (void)sig;
  serve_stopping = 1;
}

static bool count_opt(const char *opt, const char *v, unsigned max, unsigned *out) {
  char *end;
  errno = 0;
  unsigned long n = strtoul(v, &end, 10);
  if (end == v || *end || errno || n == 0 || n > max) {
    cli_usage_error("serve", "%s wants a number from 1 to %u, got '%s'", opt, max, v);
    return false;
  }
  *out = (unsigned)n;
  return true;
}

static bool size_opt(const char *opt, const char *v, uint64_t min, uint64_t *out) {
  if (!hutch_parse_size(v, out) || *out < min || *out > (1ull << 40)) {
    cli_usage_error("serve", "%s wants a size such as 16M (at least %llu bytes), got '%s'", opt,
                    (unsigned long long)min, v);
    return false;
  }
  return true;
}

/* The image, its environment; the audit file. */
static int open_things(struct serve_config *cfg, struct mcp_audit *audit, const char *audit_path, hutch_error_t *err) {
  struct hutch_store *store = NULL;
  if (hutch_store_open(cfg->store, &store, err) < 0)
    return -1;
  int r = hutch_image_lookup(store, cfg->image_name, &cfg->image, err);
  hutch_store_close(store);
  if (r < 0) {
    if (strcmp(cfg->image_name, "default") == 0)
      hutch_error_hint(err, "build it: hutch rootfs build --from ubuntu:24.04 --recipe rootfs/agent.recipe --name "
                            "default, or name another with --image");
    return -1;
  }
  cfg->env = hutch_image_env(&cfg->image, NULL);
  if (audit_path) {
    audit->f = fopen(audit_path, "ae");
    if (audit->f == NULL)
      return hutch_error_sys(err, "serve: open the audit log %s", audit_path);
    struct stat st;
    audit->path = audit_path;
    audit->size = fstat(fileno(audit->f), &st) == 0 ? (uint64_t)st.st_size : 0;
  } else {
    audit->f = stderr;
  }
  cfg->audit = audit;
  return 0;
}

int cmd_serve(int argc, char **argv) {
  static struct serve_metrics metrics = {.lock = PTHREAD_MUTEX_INITIALIZER};
  struct serve_config cfg = {
      .listen = "127.0.0.1:8080",
      .image_name = "default",
      .max_concurrency = 32,
      .max_queue = 256,
      .warm = 4,
      .max_body = 32u << 20,
      .max_file = 16u << 20,
      .max_timeout = 300,
      .busy_status = 503,
      .reaper_fd = -1,
      .exec = {.max_output = 4u << 20},
      .metrics = &metrics,
  };
  struct mcp_audit audit = {.max = 64ull << 20};
  const char *token_file = NULL, *policy = NULL, *audit_path = NULL;
  uint64_t v;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+h", serve_options, NULL)) != -1) {
    switch (c) {
    case OPT_LISTEN:
      cfg.listen = optarg;
      break;
    case OPT_IMAGE:
      cfg.image_name = optarg;
      break;
    case OPT_MAX_CONCURRENCY:
      if (!count_opt("--max-concurrency", optarg, 1024, &cfg.max_concurrency))
        return EXIT_USAGE;
      break;
    case OPT_MAX_QUEUE:
      if (!count_opt("--max-queue", optarg, 65536, &cfg.max_queue))
        return EXIT_USAGE;
      break;
    case OPT_MAX_BODY:
    case OPT_MAX_OUTPUT:
    case OPT_MAX_FILE:
      if (!size_opt(argv[optind - 2], optarg, 1024, &v) || v > (1u << 30))
        return v > (1u << 30) ? cli_usage_error("serve", "%s is at most 1G", argv[optind - 2]) : EXIT_USAGE;
      *(c == OPT_MAX_BODY ? &cfg.max_body : c == OPT_MAX_OUTPUT ? &cfg.exec.max_output : &cfg.max_file) = (size_t)v;
      break;
    case OPT_MAX_MEMORY:
      if (!size_opt("--max-memory", optarg, 1u << 20, &cfg.max_memory))
        return EXIT_USAGE;
      break;
    case OPT_MAX_TIMEOUT:
      if (!parse_duration(optarg, &cfg.max_timeout))
        return cli_usage_error("serve", "--max-timeout wants a positive number of seconds, got '%s'", optarg);
      break;
    case OPT_BUSY_STATUS:
      if (strcmp(optarg, "503") != 0 && strcmp(optarg, "504") != 0)
        return cli_usage_error("serve", "--busy-status wants 503 or 504, got '%s'", optarg);
      cfg.busy_status = atoi(optarg);
      break;
    case OPT_TOKEN_FILE:
      token_file = optarg;
      break;
    case OPT_STORE:
      cfg.store = optarg;
      break;
    case OPT_STATE_DIR:
      cfg.state_dir = optarg;
      break;
    case OPT_POLICY:
      policy = optarg;
      break;
    case OPT_AUDIT_LOG:
      audit_path = optarg;
      break;
    case OPT_AUDIT_LOG_MAX:
      if (!size_opt("--audit-log-max", optarg, 4096, &audit.max))
        return EXIT_USAGE;
      break;
    case OPT_JSON:
      cfg.json = true;
      break;
    case OPT_WARM:
      if (strcmp(optarg, "0") == 0)
        cfg.warm = 0;
      else if (!count_opt("--warm", optarg, 64, &cfg.warm))
        return EXIT_USAGE;
      break;
    case 'h':
      serve_usage(stdout);
      return 0;
    default:
      return cli_usage_error("serve", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return cli_usage_error("serve", "unexpected argument '%s'", argv[optind]);
  hutch_error_t err = NULL;
  _cleanup_strv_ char **tokens = NULL;
  if (token_file) {
    tokens = cli_read_tokens("serve", token_file, NULL, &err);
    if (err)
      return cli_fail(&err);
    if (tokens == NULL) {
      fprintf(stderr, "hutch serve: %s holds no token\nhint: head -c 32 /dev/urandom | base64 > %s\n", token_file,
              token_file);
      return EXIT_USAGE;
    }
    cfg.tokens = (const char *const *)tokens;
  }
  _cleanup_fclose_ FILE *audit_file = NULL;
  int r = hutch_policy_load(policy, &cfg.policy, &err) < 0 ? -1 : open_things(&cfg, &audit, audit_path, &err);
  if (audit_path)
    audit_file = audit.f;
  if (r == 0) {
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    cfg.reaper_fd = mcp_reaper_start(cfg.state_dir, cfg.store, &err);
    r = cfg.reaper_fd < 0 || serve_probe(&cfg, &err) < 0 || serve_http(&cfg, &err) < 0 ? -1 : 0;
  }
  int rc = r < 0 ? cli_fail(&err) : 0;
  /* Every sandbox is destroyed: the reaper finds nothing left to do. */
  if (cfg.reaper_fd >= 0) {
    close(cfg.reaper_fd);
    while (wait(NULL) > 0 || errno == EINTR)
      ;
  }
  for (char **e = cfg.env; e && *e; e++)
    free(*e);
  free(cfg.env);
  hutch_image_clear(&cfg.image);
  if (cfg.policy)
    hutch_policy_free(cfg.policy);
  return rc;
}
