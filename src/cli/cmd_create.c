/* SPDX-License-Identifier: Apache-2.0 */
/* hutch create: a long-lived sandbox, with its name, labels and time limit. */
#include "config.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "sandbox_opts.h"

void create_usage(FILE *out) {
  fprintf(out,
          "Usage: hutch create [OPTIONS]\n\n"
          "Start a long-lived sandbox, print its id and leave it running; run commands in it\n"
          "with `hutch exec --in ID` and remove it with `hutch rm ID` (or its name for ID).\n\n"
          "Options:\n"
          "  --rootfs NAME        image to use (name or digest; default: default)\n"
          "  --store DIR          rootfs store\n"
          "  --state-dir DIR      where sandboxes keep their state\n"
          "  --policy FILE        sandbox policy\n"
          "  --name NAME          a name unique in the state directory, usable wherever an id is\n"
          "  --label KEY=VALUE    a label, for `hutch ps --filter label=KEY=VALUE` (repeatable)\n"
          "  -p, --publish [ADDR:]HOSTPORT:PORT\n"
          "                       relay ADDR:HOSTPORT on the host (default 127.0.0.1; HOSTPORT 0:\n"
          "                       any free port) to PORT on the sandbox's loopback (repeatable)\n"
          "  --ttl DURATION       remove the sandbox once it has run this long (90s, 10m, 2h; paused\n"
          "                       time does not count); `hutch ttl ID` changes it\n"
          "  --on-ttl ACTION      what the end of --ttl does: remove (default) or pause\n"
          "  --env K=V            set an environment variable for every process (repeatable)\n"
          "  --bind SRC:DST[:ro]  bind-mount a host path into the sandbox (repeatable)\n"
          "  --hostname NAME      hostname inside the sandbox\n"
          "  --keep               keep the upper and work directories after hutch rm\n"
          "  -u, --user USER[:GROUP]\n"
          "                       every process runs as this uid and gid (or names of the image's),\n"
          "                       with no capability and no way back to root (rootless: needs a\n"
          "                       subordinate id range in /etc/subuid and /etc/subgid)\n"
          "%s"
          "  --json               print {\"id\": ...} instead of the bare id\n"
          "  -h, --help           show this help\n",
          sandbox_limit_options);
}

/* "ports": as published, each host port as chosen (from its state, as
 * `hutch ps` shows them). */
static void add_ports_json(cJSON *j, const struct sandbox_opts *o, const char *id) {
  struct hutch_sandbox_status *all = NULL;
  size_t n = 0;
  hutch_error_t err = NULL;
  if (hutch_sandbox_list_status(o->state_dir, &all, &n, &err) < 0)
    hutch_error_free(&err);
  size_t i = 0;
  while (i < n && strcmp(all[i].info.id, id) != 0)
    i++;
  cli_add_ports_json(j, i < n ? all[i].ports : NULL, i < n ? all[i].n_ports : 0);
  hutch_sandbox_status_free(all, n);
}

int cmd_create(int argc, char **argv) {
  struct sandbox_opts o = {0};
  int first = 0;
  int r = parse_sandbox_opts("create", argc, argv, &o, &first);
  if (r >= 0)
    goto out;
  if (first < argc) {
    r = cli_usage_error("create", "unexpected argument '%s'", argv[first]);
    goto out;
  }
  if (o.on_ttl_set && o.ttl == 0) {
    r = cli_usage_error("create", "--on-ttl needs --ttl");
    goto out;
  }
  if (o.net == HUTCH_NET_PROXY && (r = cli_hand_over("--net proxy")) >= 0)
    goto out;
  hutch_error_t err = NULL;
  struct prepared p;
  struct hutch_sandbox *sb = NULL;
  /* The addresses' buffers were moved as -p options were added. */
  for (size_t i = 0; i < o.n_ports; i++)
    if (o.ports[i].host_addr)
      o.ports[i].host_addr = o.port_addrs[i];
  struct hutch_sandbox_extras x = {
      .name = o.name,
      .labels = o.labels,
      .ttl = o.ttl,
      .on_ttl = o.on_ttl,
      .ports = o.ports,
      .n_ports = o.n_ports,
      .devices = o.devices,
      .user = o.user,
  };
  if (prepare(&o, &p, &err) < 0 || hutch_sandbox_create_with(&p.cfg, &x, &sb, &err) < 0) {
    prepared_release(&p);
    r = cli_fail(&err);
    goto out;
  }
  prepared_release(&p);
  if (o.json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "id", hutch_sandbox_id(sb));
    if (o.name)
      cJSON_AddStringToObject(j, "name", o.name);
    if (o.ttl > 0) {
      cJSON_AddNumberToObject(j, "ttl", o.ttl);
      cJSON_AddStringToObject(j, "on_ttl", o.on_ttl == HUTCH_TTL_PAUSE ? "pause" : "remove");
    }
    add_limits_json(j, hutch_sandbox_limits(sb));
    add_network_json(j, o.net, hutch_sandbox_audit_log(sb), NULL);
    add_degraded_json(j, &o, hutch_sandbox_limits(sb));
    if (o.n_ports)
      add_ports_json(j, &o, hutch_sandbox_id(sb));
    char *s = cJSON_PrintUnformatted(j);
    printf("%s\n", s);
    free(s);
    cJSON_Delete(j);
  } else
    printf("%s\n", hutch_sandbox_id(sb));
  hutch_sandbox_close(sb);
  r = 0;
out:
  sandbox_opts_free(&o);
  return r;
}
