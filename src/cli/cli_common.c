/* SPDX-License-Identifier: Apache-2.0 */
/* What the hutch command's two mains share: hutch-full's (main.c) and the
 * musl front end's (front.c); and the option parsing of the verbs that act
 * on one live sandbox. */
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "util.h"

int cli_fail(hutch_error_t *err) {
  hutch_error_print(stderr, "hutch", *err);
  hutch_error_free(err);
  return EXIT_RUNTIME;
}

int cli_usage_error(const char *verb, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "hutch %s: ", verb);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\nTry `hutch %s --help`.\n", verb);
  va_end(ap);
  return EXIT_USAGE;
}

pid_t cli_parent_pid;
bool cli_handed_over;

/* Every line of the runtime's log: "hutch: warning: ..." on stderr. */
static void cli_log(enum hutch_log_level level, const char *line, void *data) {
  (void)data;
  fprintf(stderr, "hutch: %s%s\n", hutch_log_level_prefix(level), line);
}

void cli_start(void) {
  /* Before anything else: a parent that dies from here on is seen. */
  cli_parent_pid = getppid();
  hutch_set_log_handler(cli_log, NULL);
}

void cli_add_ports_json(struct cJSON *parent, const struct hutch_published_port *ports, size_t n) {
  cJSON *list = cJSON_AddArrayToObject(parent, "ports");
  for (size_t i = 0; i < n; i++) {
    cJSON *one = cJSON_CreateObject();
    cJSON_AddItemToArray(list, one);
    cJSON_AddStringToObject(one, "host_addr", ports[i].host_addr);
    cJSON_AddNumberToObject(one, "host_port", ports[i].host_port);
    cJSON_AddNumberToObject(one, "port", ports[i].port);
  }
}

enum { OPT_STATE_DIR = 256, OPT_JSON };

int cli_sandbox_verb_opts(const char *verb, int argc, char **argv, void (*usage)(FILE *out), const char **state_dir,
                          bool *json) {
  static const struct option options[] = {
      {"state-dir", required_argument, NULL, OPT_STATE_DIR},
      {"json", no_argument, NULL, OPT_JSON},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  optind = 1;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
    if (c == 'h') {
      usage(stdout);
      return 0;
    }
    if (c == OPT_JSON)
      *json = true;
    else if (c == OPT_STATE_DIR)
      *state_dir = optarg;
    else
      return cli_usage_error(verb, "unknown option '%s'", argv[optind - 1]);
  }
  return -1;
}

int cli_parse_on_ttl(const char *verb, const char *arg, enum hutch_ttl_action *out) {
  if (strcmp(arg, "remove") != 0 && strcmp(arg, "pause") != 0)
    return cli_usage_error(verb, "--on-ttl wants remove or pause, got '%s'", arg);
  *out = strcmp(arg, "pause") == 0 ? HUTCH_TTL_PAUSE : HUTCH_TTL_REMOVE;
  return 0;
}

/* A token file holds at most this many clients' tokens. */
#define MAX_TOKENS 256

char **cli_read_tokens(const char *verb, const char *file, const char *env_name, hutch_error_t *err) {
  size_t n = 0;
  char **tokens = xcalloc(MAX_TOKENS + 1, sizeof(char *));
  if (file == NULL) {
    const char *env = env_name ? getenv(env_name) : NULL;
    if (env && env[0])
      tokens[n++] = xstrdup(env);
  } else {
    _cleanup_free_ char *text = read_file_at(AT_FDCWD, file, 65536, NULL);
    if (text == NULL) {
      hutch_error_sys(err, "%s: read the token file %s", verb, file);
      free(tokens);
      return NULL;
    }
    unsigned line = 0;
    for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
      line++;
      l[strcspn(l, "\r")] = '\0';
      if (l[0] == '\0' || l[0] == '#')
        continue;
      bool twice = false;
      for (size_t i = 0; i < n; i++)
        twice |= strcmp(tokens[i], l) == 0;
      if (n == MAX_TOKENS || strlen(l) < CLI_MIN_TOKEN || strpbrk(l, " \t") || twice) {
        hutch_error_set(err, EINVAL, "%s: %s, line %u: %s", verb, file, line,
                        n == MAX_TOKENS ? "more than 256 tokens"
                        : twice         ? "the same token as an earlier line (each line is one client's)"
                                        : "a token is at least 16 characters, without spaces");
        hutch_error_hint(err, "one token a line: head -c 32 /dev/urandom | base64 >> FILE");
        break;
      }
      tokens[n++] = xstrdup(l);
    }
  }
  if (n == 0 || (err && *err)) {
    for (size_t i = 0; i < n; i++)
      free(tokens[i]);
    free(tokens);
    return NULL;
  }
  return tokens;
}
