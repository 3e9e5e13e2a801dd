/* SPDX-License-Identifier: Apache-2.0 */
/* The sandbox options of hutch exec and hutch create (cmd_exec.c), and
 * what both make of them. */
#ifndef HUTCH_CLI_SANDBOX_OPTS_H
#define HUTCH_CLI_SANDBOX_OPTS_H

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdio.h>

#include "hutch.h"

struct sandbox_opts {
  const char *rootfs;
  const char *store;
  const char *state_dir;
  const char *policy;
  const char *workdir;
  const char *hostname;
  const char *in;
  const char **env;
  size_t n_env;
  struct hutch_bind *binds;
  char **bind_storage;
  size_t n_binds;
  double timeout;
  bool keep;
  bool proc_host_ro;
  bool read_only;
  bool overlay_fuse;
  bool json;
  bool tty;         /* -t */
  bool interactive; /* -i */
  bool no_die_with_parent;
  struct hutch_limits limits;
  enum hutch_net_mode net;
  const char **allow;
  size_t n_allow;
  const char **resolve;
  size_t n_resolve;
  const char *net_policy;
  const char *audit;   /* exec --audit FILE */
  const char *name;    /* create --name */
  const char **labels; /* create --label, NULL-terminated */
  size_t n_labels;
  const char **devices; /* --device, NULL-terminated */
  const char *user;     /* --user USER[:GROUP] */
  size_t n_devices;
  struct hutch_port *ports; /* create -p */
  char (*port_addrs)[64];   /* their addresses */
  size_t n_ports;
  double ttl; /* create --ttl (0: none) and --on-ttl */
  enum hutch_ttl_action on_ttl;
  bool on_ttl_set;
};

void sandbox_opts_free(struct sandbox_opts *o);
/* Parses the options of `verb` (exec or create); -1 to go on with the
 * arguments from *first_arg, else an exit code. */
int parse_sandbox_opts(const char *verb, int argc, char **argv, struct sandbox_opts *o, int *first_arg);
/* The limit and degraded-mode options of both verbs' --help. */
extern const char sandbox_limit_options[];
void create_usage(FILE *out);

/* The policy, store and image the options name, and the configuration. */
struct prepared {
  struct hutch_store *store;
  struct hutch_policy *policy;
  struct hutch_image image;
  struct hutch_sandbox_config cfg;
  char **env; /* the image's Env, then --env */
};
int prepare(const struct sandbox_opts *o, struct prepared *p, hutch_error_t *err);
void prepared_release(struct prepared *p);

/* Members of the --json output. */
void add_limits_json(cJSON *parent, const struct hutch_limits_status *l);
void add_network_json(cJSON *parent, enum hutch_net_mode mode, const char *audit_log,
                      const struct hutch_net_summary *sum);
void add_degraded_json(cJSON *j, const struct sandbox_opts *o, const struct hutch_limits_status *l);

#endif
