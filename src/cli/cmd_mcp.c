/* SPDX-License-Identifier: Apache-2.0 */
/* hutch mcp: the options, the stdio transport (newline-delimited JSON-RPC
 * on stdin and stdout, the log on stderr) and the server's one way out,
 * which destroys every sandbox. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../mcp/mcp.h"
#include "cli.h"
#include "options.h"
#include "util.h"

#define MAX_LINE (32u << 20)

enum {
  OPT_LISTEN = 256,
  OPT_TOKEN_FILE,
  OPT_STORE,
  OPT_STATE_DIR,
  OPT_POLICY,
  OPT_IMAGE,
  OPT_MEMORY,
  OPT_CPUS,
  OPT_PIDS,
  OPT_DISK,
  OPT_TIMEOUT,
  OPT_MAX_OUTPUT,
  OPT_MAX_FILE,
  OPT_MAX_SANDBOXES,
  OPT_MAX_SNAPSHOTS,
  OPT_MAX_SESSIONS,
  OPT_NET,
  OPT_ALLOW,
  OPT_ALLOW_IMAGE,
  OPT_IDLE,
  OPT_AUDIT_LOG,
  OPT_AUDIT_LOG_MAX,
};

static const struct option mcp_options[] = {
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"token-file", required_argument, NULL, OPT_TOKEN_FILE},
    {"store", required_argument, NULL, OPT_STORE},
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"image", required_argument, NULL, OPT_IMAGE},
    {"memory", required_argument, NULL, OPT_MEMORY},
    {"cpus", required_argument, NULL, OPT_CPUS},
    {"pids", required_argument, NULL, OPT_PIDS},
    {"disk", required_argument, NULL, OPT_DISK},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"max-output", required_argument, NULL, OPT_MAX_OUTPUT},
    {"max-file", required_argument, NULL, OPT_MAX_FILE},
    {"max-sandboxes", required_argument, NULL, OPT_MAX_SANDBOXES},
    {"max-snapshots", required_argument, NULL, OPT_MAX_SNAPSHOTS},
    {"max-sessions", required_argument, NULL, OPT_MAX_SESSIONS},
    {"net", required_argument, NULL, OPT_NET},
    {"allow", required_argument, NULL, OPT_ALLOW},
    {"allow-image", required_argument, NULL, OPT_ALLOW_IMAGE},
    {"idle", required_argument, NULL, OPT_IDLE},
    {"audit-log", required_argument, NULL, OPT_AUDIT_LOG},
    {"audit-log-max", required_argument, NULL, OPT_AUDIT_LOG_MAX},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void mcp_usage(FILE *out) {
  fprintf(out, "Usage: hutch mcp [OPTIONS]\n\n"
               "Serve sandboxes to Model Context Protocol clients, over stdio (the default) or\n"
               "Streamable HTTP on a loopback address.  Sandboxes are sessions: they persist across\n"
               "tool calls until destroyed or the client goes away, and all are removed when the\n"
               "server exits, however it exits.\n\n"
               "Options:\n"
               "  --listen ADDR:PORT   serve Streamable HTTP at http://ADDR:PORT/mcp (127.0.0.1 or\n"
               "                       [::1] only; port 0 picks one); needs a bearer token\n"
               "  --token-file FILE    the bearer tokens, one a line, each one client's (default:\n"
               "                       $HUTCH_MCP_TOKEN)\n"
               "  --store DIR          rootfs store\n"
               "  --state-dir DIR      where sandboxes keep their state\n"
               "  --policy FILE        sandbox policy\n"
               "  --image NAME         image of a sandbox whose client names none (default: default)\n"
               "  --allow-image NAME   an image a client may name besides --image (repeatable; without\n"
               "                       it, any image in the store)\n"
               "  --memory SIZE        the most memory a client may give a sandbox (default: it may\n"
               "                       set none; the policy's [limits] apply)\n"
               "  --cpus N             the most CPUs a client may give a sandbox\n"
               "  --pids N             the most processes a client may give a sandbox\n"
               "  --disk SIZE          the most writable space a client may give a sandbox\n"
               "  --timeout SECONDS    the longest a command may run (default: 300)\n"
               "  --max-output SIZE    bytes kept of each output stream of a command (default: 1M)\n"
               "  --max-file SIZE      the largest file read or written (default: 16M)\n"
               "  --max-sandboxes N    sandboxes per session at most (default: 8)\n"
               "  --max-snapshots N    snapshots a session keeps at most (default: 4; at most 64)\n"
               "  --max-sessions N     HTTP sessions per client (token) at most, of the server's 64\n"
               "                       (default: 16)\n"
               "  --net MODE           none (default), or proxy: clients may ask for --net proxy\n"
               "  --allow HOST[:PORT]  a host clients may add to a sandbox's allowlist (repeatable)\n"
               "  --idle SECONDS       an HTTP session unused this long ends (default: 1800)\n"
               "  --audit-log FILE     one JSON line per tool call (default: stderr)\n"
               "  --audit-log-max SIZE past this, --audit-log's FILE becomes FILE.1 and a new one\n"
               "                       starts (default: 64M)\n"
               "  -h, --help           show this help\n");
}

static void on_signal(int sig) {
  (void)sig;
  mcp_stopping = 1;
}

/* stdin, read by lines; also polled while a call runs, for the client's
 * end (EOF) and for notifications/cancelled of the running request. */
struct line_reader {
  char *buf;
  size_t len, cap;
  bool eof;
  bool cancelled;
};

/* Reads what stdin holds without blocking; false on EOF or error. */
static bool fill(struct line_reader *r) {
  for (;;) {
    if (r->len > 2 * MAX_LINE)
      return true; /* held until the running call ends; the loop then refuses it */
    struct pollfd p = {STDIN_FILENO, POLLIN, 0};
    if (poll(&p, 1, 0) <= 0)
      return true;
    if (r->cap - r->len < 65536) {
      r->cap = r->cap * 2 + 65536;
      r->buf = xrealloc(r->buf, r->cap + 1);
    }
    ssize_t n = read(STDIN_FILENO, r->buf + r->len, r->cap - r->len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      r->eof = true;
      return false;
    }
    r->len += (size_t)n;
    if (n < 65536)
      return true;
  }
}

static bool same_id(const cJSON *a, const cJSON *b) {
  if (cJSON_IsNumber(a) && cJSON_IsNumber(b))
    return a->valuedouble == b->valuedouble;
  return cJSON_IsString(a) && cJSON_IsString(b) && strcmp(a->valuestring, b->valuestring) == 0;
}

static bool stdio_gone(void *data, const cJSON *request) {
  struct line_reader *r = data;
  if (!fill(r))
    return true;
  /* A cancellation of this request among the lines read meanwhile is
   * taken out; the other messages wait their turn. */
  for (size_t start = 0; start < r->len;) {
    char *nl = memchr(r->buf + start, '\n', r->len - start);
    if (nl == NULL)
      break;
    size_t end = (size_t)(nl - r->buf) + 1;
    cJSON *m = cJSON_ParseWithLength(r->buf + start, end - start);
    const cJSON *method = cJSON_GetObjectItemCaseSensitive(m, "method");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(m, "params");
    bool hit = cJSON_IsString(method) && strcmp(method->valuestring, "notifications/cancelled") == 0 &&
               same_id(cJSON_GetObjectItemCaseSensitive(params, "requestId"), request);
    cJSON_Delete(m);
    if (hit) {
      memmove(r->buf + start, r->buf + end, r->len - end);
      r->len -= end - start;
      r->cancelled = true;
      return true;
    }
    start = end;
  }
  return false;
}

/* A notification (a subscribed resource changed), between the replies:
 * one thread writes them all. */
static void stdio_notify(struct mcp_session *s, const char *json) {
  (void)s;
  if (write_all(STDOUT_FILENO, json, strlen(json)) == 0)
    write_all(STDOUT_FILENO, "\n", 1);
}

static int serve_stdio(const struct mcp_config *cfg, struct mcp_session *s) {
  struct line_reader r = {0};
  s->notify = stdio_notify;
  for (;;) {
    char *nl;
    while ((nl = r.len ? memchr(r.buf, '\n', r.len) : NULL) == NULL && !r.eof && !mcp_stopping) {
      if (r.len > MAX_LINE) {
        fprintf(stderr, "hutch mcp: a message longer than %u bytes: ending\n", MAX_LINE);
        r.eof = true;
        break;
      }
      /* Waiting for the client, the subscribed files are looked at. */
      struct pollfd p = {STDIN_FILENO, POLLIN, 0};
      if (poll(&p, 1, 1000) > 0)
        fill(&r);
      mcp_watches_poll(cfg, s);
    }
    if (nl == NULL)
      break; /* the client went away (EOF), or a signal */
    size_t end = (size_t)(nl - r.buf) + 1;
    size_t len = end - 1;
    if (len && r.buf[len - 1] == '\r')
      len--;
    _cleanup_free_ char *line = xstrndup(r.buf, len);
    memmove(r.buf, r.buf + end, r.len - end);
    r.len -= end;
    if (line[strspn(line, " \t")] == '\0')
      continue;
    struct mcp_cancel cancel = {.fd = STDIN_FILENO, .gone = stdio_gone, .data = &r};
    _cleanup_free_ char *reply = mcp_handle_message(cfg, s, line, strlen(line), &cancel);
    if (reply && !r.eof &&
        (write_all(STDOUT_FILENO, reply, strlen(reply)) < 0 || write_all(STDOUT_FILENO, "\n", 1) < 0))
      break;
    if (r.eof)
      break;
  }
  free(r.buf);
  return 0;
}

/* Appends v to a NULL-terminated list of n entries. */
static void list_add(const char ***list, size_t *n, const char *v) {
  *list = xrealloc(*list, (*n + 2) * sizeof(char *));
  (*list)[(*n)++] = v;
  (*list)[*n] = NULL;
}

static bool parse_size_opt(const char *opt, const char *v, uint64_t *out) {
  if (!hutch_parse_size(v, out) || *out == 0) {
    cli_usage_error("mcp", "%s wants a size such as 512M, got '%s'", opt, v);
    return false;
  }
  return true;
}

#define MIN_TOKEN CLI_MIN_TOKEN

int cmd_mcp(int argc, char **argv) {
  struct mcp_config cfg = {
      .default_image = "default",
      .max_timeout = 300,
      .max_output = 1u << 20,
      .max_file = 16u << 20,
      .max_sandboxes = 8,
      .max_snapshots = 4,
      .reaper_fd = -1,
  };
  const char *token_file = NULL, *policy = NULL, *audit = NULL;
  struct mcp_audit audit_log = {.max = 64ull << 20};
  struct mcp_http_config http = {.idle = 1800, .max_sessions = 16};
  _cleanup_free_ const char **allow = NULL, **images = NULL;
  size_t n_allow = 0, n_images = 0;
  uint64_t v;
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "+h", mcp_options, NULL)) != -1) {
    switch (c) {
    case OPT_LISTEN:
      http.listen = optarg;
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
    case OPT_IMAGE:
      cfg.default_image = optarg;
      break;
    case OPT_MEMORY:
    case OPT_DISK:
      if (!parse_size_opt(c == OPT_MEMORY ? "--memory" : "--disk", optarg,
                          c == OPT_MEMORY ? &cfg.max.memory : &cfg.max.disk))
        return EXIT_USAGE;
      break;
    case OPT_MAX_OUTPUT:
    case OPT_MAX_FILE:
      if (!parse_size_opt(c == OPT_MAX_OUTPUT ? "--max-output" : "--max-file", optarg, &v) || v > (1u << 30))
        return v > (1u << 30) ? cli_usage_error("mcp", "%s is at most 1G", argv[optind - 2]) : EXIT_USAGE;
      *(c == OPT_MAX_OUTPUT ? &cfg.max_output : &cfg.max_file) = (size_t)v;
      break;
    case OPT_CPUS:
    case OPT_PIDS:
    case OPT_MAX_SANDBOXES:
    case OPT_MAX_SNAPSHOTS:
    case OPT_MAX_SESSIONS: {
      char *end;
      double d = strtod(optarg, &end);
      if (end == optarg || *end || !(d > 0) || (c != OPT_CPUS && d != (double)(uint64_t)d))
        return cli_usage_error("mcp", "%s wants a positive number, got '%s'", argv[optind - 2], optarg);
      if (c == OPT_MAX_SESSIONS && d > MCP_MAX_SESSIONS)
        return cli_usage_error("mcp", "--max-sessions is at most %d (the server's sessions, all clients together)",
                               MCP_MAX_SESSIONS);
      if (c == OPT_MAX_SNAPSHOTS && d > MCP_MAX_SNAPSHOTS)
        return cli_usage_error("mcp", "--max-snapshots is at most %d (images a session keeps in the store)",
                               MCP_MAX_SNAPSHOTS);
      if (c == OPT_CPUS)
        cfg.max.cpus = d;
      else if (c == OPT_PIDS)
        cfg.max.pids = (uint64_t)d;
      else if (c == OPT_MAX_SANDBOXES)
        cfg.max_sandboxes = (unsigned)d;
      else if (c == OPT_MAX_SNAPSHOTS)
        cfg.max_snapshots = (unsigned)d;
      else
        http.max_sessions = (unsigned)d;
      break;
    }
    case OPT_TIMEOUT:
    case OPT_IDLE:
      if (!parse_duration(optarg, c == OPT_TIMEOUT ? &cfg.max_timeout : &http.idle))
        return cli_usage_error("mcp", "%s wants a positive number of seconds, got '%s'", argv[optind - 2], optarg);
      break;
    case OPT_NET:
      if (strcmp(optarg, "proxy") != 0 && strcmp(optarg, "none") != 0)
        return cli_usage_error("mcp", "--net wants none or proxy, got '%s'", optarg);
      cfg.net_proxy = strcmp(optarg, "proxy") == 0;
      break;
    case OPT_ALLOW:
      list_add(&allow, &n_allow, optarg);
      break;
    case OPT_ALLOW_IMAGE:
      list_add(&images, &n_images, optarg);
      break;
    case OPT_AUDIT_LOG:
      audit = optarg;
      break;
    case OPT_AUDIT_LOG_MAX:
      if (!hutch_parse_size(optarg, &audit_log.max) || audit_log.max < 4096)
        return cli_usage_error("mcp", "--audit-log-max wants a size of at least 4K, such as 64M, got '%s'", optarg);
      break;
    case 'h':
      mcp_usage(stdout);
      return 0;
    default:
      return cli_usage_error("mcp", "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return cli_usage_error("mcp", "unexpected argument '%s'", argv[optind]);
  if (n_allow && !cfg.net_proxy)
    return cli_usage_error("mcp", "--allow needs --net proxy");
  cfg.allow = allow;
  cfg.images = images;
  hutch_error_t err = NULL;
  _cleanup_strv_ char **tokens = NULL;
  if (http.listen) {
    tokens = cli_read_tokens("mcp", token_file, "HUTCH_MCP_TOKEN", &err);
    if (err)
      return cli_fail(&err);
    if (tokens == NULL || strlen(tokens[0]) < MIN_TOKEN) {
      fprintf(stderr, "hutch mcp: --listen needs a bearer token of at least 16 characters: set HUTCH_MCP_TOKEN or "
                      "--token-file FILE\nhint: head -c 32 /dev/urandom | base64 > token; chmod 600 token\n");
      return EXIT_USAGE;
    }
    http.tokens = (const char *const *)tokens;
  } else if (token_file) {
    return cli_usage_error("mcp", "--token-file goes with --listen");
  }
  _cleanup_fclose_ FILE *audit_file = NULL;
  if (audit && (audit_file = fopen(audit, "ae")) == NULL) {
    hutch_error_sys(&err, "mcp: open the audit log %s", audit);
    return cli_fail(&err);
  }
  if (audit_file) {
    struct stat st;
    audit_log.path = audit;
    audit_log.size = fstat(fileno(audit_file), &st) == 0 ? (uint64_t)st.st_size : 0;
  }
  audit_log.f = audit_file ? audit_file : stderr;
  cfg.audit = &audit_log;
  if (hutch_policy_load(policy, &cfg.policy, &err) < 0)
    return cli_fail(&err);
  /* A server started for a program (an MCP client) ends with it. */
  if (hutch_die_with_parent(cli_parent_pid, &err) < 0) {
    hutch_policy_free(cfg.policy);
    return cli_fail(&err);
  }
  struct sigaction sa = {.sa_handler = on_signal};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  int reaper = mcp_reaper_start(cfg.state_dir, cfg.store, &err);
  if (reaper < 0) {
    hutch_policy_free(cfg.policy);
    return cli_fail(&err);
  }
  cfg.reaper_fd = reaper;
  int r = 0;
  if (http.listen) {
    if (mcp_http_serve(&cfg, &http, &err) < 0)
      r = cli_fail(&err);
  } else {
    struct mcp_session s = {0};
    serve_stdio(&cfg, &s);
    mcp_session_end(&cfg, &s);
  }
  /* Everything is destroyed: the reaper finds nothing left to do. */
  close(reaper);
  while (wait(NULL) > 0 || errno == EINTR)
    ;
  hutch_policy_free(cfg.policy);
  return r;
}
