/* SPDX-License-Identifier: Apache-2.0 */
/* hutch policy show: what a sandbox gets under a policy. */
#include "config.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char policy_usage[] = "Usage: hutch policy COMMAND [OPTIONS]\n"
                                   "\n"
                                   "Inspect sandbox policies (see hutch-policy(5)).\n"
                                   "\n"
                                   "Commands:\n"
                                   "  show [--effective] [--policy FILE] [--json]\n"
                                   "                print what a sandbox started under a policy gets\n"
                                   "\n"
                                   "Options:\n"
                                   "  -h, --help    show this help\n";

static const char show_usage[] = "Usage: hutch policy show [--effective] [--policy FILE] [--json]\n"
                                 "\n"
                                 "Print what a sandbox started under the policy gets: its namespaces, its\n"
                                 "capabilities (none), no_new_privs, and from the seccomp profile the default\n"
                                 "action, the system calls allowed (count and list), those allowed only with\n"
                                 "certain arguments, and those refused with their errno.  The policy and its\n"
                                 "profile are checked as a sandbox start would check them: a policy that is\n"
                                 "refused here (exit status 125) starts no sandbox.\n"
                                 "\n"
                                 "Options:\n"
                                 "  --policy FILE  the policy to show (default: $HUTCH_POLICY, else the\n"
                                 "                 installed default.policy)\n"
                                 "  --effective    resolve the rules on this host: its architecture, syscall\n"
                                 "                 numbers, names that are not system calls here or that\n"
                                 "                 libseccomp does not know, the compiled program and its cache\n"
                                 "  --json         print one JSON object instead of text\n"
                                 "  -h, --help     show this help\n";

enum { OPT_POLICY = 256, OPT_EFFECTIVE, OPT_JSON };

static int bad_option(const char *verb, int argc, char **argv, int c) {
  const char *arg = optind > 0 && optind <= argc ? argv[optind - 1] : "?";
  if (c == ':')
    return cli_usage_error(verb, "option %s needs an argument", arg);
  return cli_usage_error(verb, "unknown option %s", arg);
}

static int policy_show(int argc, char **argv) {
  static const struct option longopts[] = {
      {"policy", required_argument, NULL, OPT_POLICY},
      {"effective", no_argument, NULL, OPT_EFFECTIVE},
      {"json", no_argument, NULL, OPT_JSON},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  const char *path = NULL;
  bool effective = false, json = false;
  int c;
  optind = 0;
  while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
    switch (c) {
    case OPT_POLICY:
      path = optarg;
      break;
    case OPT_EFFECTIVE:
      effective = true;
      break;
    case OPT_JSON:
      json = true;
      break;
    case 'h':
      fputs(show_usage, stdout);
      return 0;
    default:
      return bad_option("policy show", argc, argv, c);
    }
  }
  if (optind < argc)
    return cli_usage_error("policy show", "unexpected argument '%s'", argv[optind]);

  hutch_error_t err = NULL;
  struct hutch_policy *policy = NULL;
  if (hutch_policy_load(path, &policy, &err) < 0)
    return cli_fail(&err);
  int r = json ? hutch_policy_describe_json(policy, effective, stdout, &err)
               : hutch_policy_describe(policy, effective, stdout, &err);
  hutch_policy_free(policy);
  if (r < 0)
    return cli_fail(&err);
  if (fflush(stdout) != 0 || ferror(stdout)) {
    perror("hutch policy show: write");
    return EXIT_RUNTIME;
  }
  return 0;
}

int cmd_policy(int argc, char **argv) {
  if (argc < 2)
    return cli_usage_error("policy", "missing COMMAND (show)");
  const char *sub = argv[1];
  if (strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0 || strcmp(sub, "help") == 0) {
    fputs(policy_usage, stdout);
    return 0;
  }
  if (strcmp(sub, "show") == 0)
    return policy_show(argc - 1, argv + 1);
  return cli_usage_error("policy", "unknown command '%s' (show)", sub);
}
