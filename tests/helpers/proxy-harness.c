/* SPDX-License-Identifier: Apache-2.0 */
/* Runs hutch's proxy engine alone, for tests/integration/proxy.sh and
 * bench/proxy: one listener on 127.0.0.1 (an ephemeral port, printed on
 * stdout), served until stdin reaches EOF.
 *
 *   proxy-harness [--policy FILE] [--allow HOST[:PORT]]... [--resolve NAME=ADDR]...
 *                 [--allow-address CIDR]... [--port N]... [--max-connections N]
 *                 [--idle-timeout DURATION] [--byte-budget SIZE] [--sni-check yes|no]
 *                 [--tls-required PORTS|all|none]
 *                 [--audit FILE] [--sandbox ID]
 *   proxy-harness --summary FILE     prints the totals of an audit log
 *
 * --policy reads the [network] section of a policy file; the other options
 * are applied on top, as net_policy_set() values. */
#include "config.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "net_policy.h"
#include "policy.h"
#include "proxy.h"
#include "util.h"

static int die(hutch_error_t *err) {
  hutch_error_print(stderr, "proxy-harness", *err);
  return 1;
}

static int summary(const char *path) {
  _cleanup_error_ hutch_error_t err = NULL;
  struct proxy_audit_summary s;
  if (proxy_audit_summarize(path, &s, &err) < 0)
    return die(&err);
  printf("requests=%llu allowed=%llu refused=%llu errors=%llu bytes_up=%llu bytes_down=%llu\n",
         (unsigned long long)s.requests, (unsigned long long)s.allowed, (unsigned long long)s.refused,
         (unsigned long long)s.errors, (unsigned long long)s.bytes_up, (unsigned long long)s.bytes_down);
  for (size_t i = 0; i < s.n_top_refused; i++)
    printf("refused: %s\n", s.top_refused[i]);
  return 0;
}

static int load_policy(const char *path, struct net_policy *out, hutch_error_t *err) {
  size_t len;
  _cleanup_free_ char *text = read_file_at(AT_FDCWD, path, POLICY_MAX_BYTES, &len);
  if (text == NULL)
    return hutch_error_sys(err, "read %s", path);
  struct policy_settings s;
  if (policy_parse(text, path, &s, err) < 0)
    return -1;
  net_policy_clear(out);
  net_policy_copy(out, &s.network);
  policy_settings_clear(&s);
  return 0;
}

int main(int argc, char **argv) {
  static const struct option opts[] = {
      {"policy", required_argument, NULL, 'P'},       {"allow", required_argument, NULL, 'a'},
      {"resolve", required_argument, NULL, 'r'},      {"allow-address", required_argument, NULL, 'A'},
      {"port", required_argument, NULL, 'p'},         {"max-connections", required_argument, NULL, 'm'},
      {"idle-timeout", required_argument, NULL, 'i'}, {"byte-budget", required_argument, NULL, 'b'},
      {"sni-check", required_argument, NULL, 's'},    {"tls-required", required_argument, NULL, 't'},
      {"audit", required_argument, NULL, 'l'},        {"sandbox", required_argument, NULL, 'S'},
      {"summary", required_argument, NULL, 'M'},      {NULL, 0, NULL, 0},
  };
  _cleanup_error_ hutch_error_t err = NULL;
  struct net_policy policy;
  net_policy_init(&policy);
  const char *audit = NULL, *sandbox = "harness";
  _cleanup_free_ char *ports = NULL;
  int c;
  /* --policy first, wherever it is: the other options refine it. */
  for (int i = 1; i < argc - 1; i++)
    if (strcmp(argv[i], "--policy") == 0 && load_policy(argv[i + 1], &policy, &err) < 0)
      return die(&err);
  while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    const char *key = NULL;
    switch (c) {
    case 'P':
      continue;
    case 'M':
      return summary(optarg);
    case 'a':
      key = "allow";
      break;
    case 'r':
      key = "resolve";
      break;
    case 'A':
      key = "allow_address";
      break;
    case 'm':
      key = "max_connections";
      break;
    case 'i':
      key = "idle_timeout";
      break;
    case 'b':
      key = "byte_budget";
      break;
    case 's':
      key = "sni_check";
      break;
    case 't':
      key = "tls_required";
      break;
    case 'p': {
      char *next = xasprintf("%s%s%s", ports ? ports : "", ports ? "," : "", optarg);
      free(ports);
      ports = next;
      continue;
    }
    case 'l':
      audit = optarg;
      continue;
    case 'S':
      sandbox = optarg;
      continue;
    default:
      return 2;
    }
    if (net_policy_set(&policy, key, optarg, 0, &err) < 0)
      return die(&err);
  }
  if (ports && net_policy_set(&policy, "ports", ports, 0, &err) < 0)
    return die(&err);

  int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof(addr);
  if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0 || listen(lfd, 4096) < 0 ||
      getsockname(lfd, (struct sockaddr *)&addr, &alen) < 0) {
    perror("proxy-harness: listener");
    return 1;
  }
  int afd = -1;
  if (audit) {
    afd = open(audit, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (afd < 0) {
      perror(audit);
      return 1;
    }
  }
  struct proxy *p;
  if (proxy_new(&p, &err) < 0)
    return die(&err);
  struct proxy_listener_config cfg = {.listen_fd = lfd, .sandbox_id = sandbox, .policy = &policy, .audit_fd = afd};
  if (proxy_add_listener(p, &cfg, &err) < 0)
    return die(&err);
  printf("%u\n", ntohs(addr.sin_port));
  fflush(stdout);
  int r = proxy_run(p, STDIN_FILENO, &err);
  proxy_free(p);
  net_policy_clear(&policy);
  if (r < 0)
    return die(&err);
  return 0;
}
