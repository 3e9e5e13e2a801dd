/* SPDX-License-Identifier: Apache-2.0 */
/* hutch exec and hutch create: the sandbox options they share. */
#include "config.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"
#include "options.h"
#include "sandbox_opts.h"

void sandbox_opts_free(struct sandbox_opts *o) {
  for (size_t i = 0; i < o->n_binds; i++)
    free(o->bind_storage[i]);
  free(o->bind_storage);
  free(o->binds);
  free(o->env);
  free(o->allow);
  free(o->resolve);
  free(o->labels);
  free(o->devices);
  free(o->ports);
  free(o->port_addrs);
}

/* Append to a NULL-terminated list. */
static void strv_push(const char ***list, size_t *n, const char *s) {
  *list = realloc(*list, (*n + 2) * sizeof(char *));
  (*list)[(*n)++] = s;
  (*list)[*n] = NULL;
}

enum {
  OPT_ROOTFS = 256,
  OPT_STORE,
  OPT_STATE_DIR,
  OPT_POLICY,
  OPT_WORKDIR,
  OPT_ENV,
  OPT_BIND,
  OPT_HOSTNAME,
  OPT_TIMEOUT,
  OPT_KEEP,
  OPT_JSON,
  OPT_IN,
  OPT_MEMORY,
  OPT_DISK,
  OPT_MEMORY_SWAP,
  OPT_CPUS,
  OPT_PIDS,
  OPT_IO_WEIGHT,
  OPT_CGROUP_PARENT,
  OPT_NO_CGROUPS,
  OPT_PROC,
  OPT_READ_ONLY,
  OPT_OVERLAY,
  OPT_NET,
  OPT_ALLOW,
  OPT_NET_POLICY,
  OPT_RESOLVE,
  OPT_NO_DIE_WITH_PARENT,
  OPT_AUDIT,
  OPT_NAME,
  OPT_LABEL,
  OPT_DEVICE,
  OPT_TTL,
  OPT_ON_TTL,
};

static const struct option long_options[] = {
    {"rootfs", required_argument, NULL, OPT_ROOTFS},
    {"store", required_argument, NULL, OPT_STORE},
    {"state-dir", required_argument, NULL, OPT_STATE_DIR},
    {"policy", required_argument, NULL, OPT_POLICY},
    {"workdir", required_argument, NULL, OPT_WORKDIR},
    {"env", required_argument, NULL, OPT_ENV},
    {"bind", required_argument, NULL, OPT_BIND},
    {"hostname", required_argument, NULL, OPT_HOSTNAME},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"keep", no_argument, NULL, OPT_KEEP},
    {"json", no_argument, NULL, OPT_JSON},
    {"in", required_argument, NULL, OPT_IN},
    {"memory", required_argument, NULL, OPT_MEMORY},
    {"disk", required_argument, NULL, OPT_DISK},
    {"memory-swap", required_argument, NULL, OPT_MEMORY_SWAP},
    {"cpus", required_argument, NULL, OPT_CPUS},
    {"pids", required_argument, NULL, OPT_PIDS},
    {"io-weight", required_argument, NULL, OPT_IO_WEIGHT},
    {"cgroup-parent", required_argument, NULL, OPT_CGROUP_PARENT},
    {"no-cgroups", no_argument, NULL, OPT_NO_CGROUPS},
    {"proc", required_argument, NULL, OPT_PROC},
    {"read-only", no_argument, NULL, OPT_READ_ONLY},
    {"overlay", required_argument, NULL, OPT_OVERLAY},
    {"net", required_argument, NULL, OPT_NET},
    {"allow", required_argument, NULL, OPT_ALLOW},
    {"net-policy", required_argument, NULL, OPT_NET_POLICY},
    {"resolve", required_argument, NULL, OPT_RESOLVE},
    {"tty", no_argument, NULL, 't'},
    {"interactive", no_argument, NULL, 'i'},
    {"no-die-with-parent", no_argument, NULL, OPT_NO_DIE_WITH_PARENT},
    {"audit", required_argument, NULL, OPT_AUDIT},
    {"name", required_argument, NULL, OPT_NAME},
    {"label", required_argument, NULL, OPT_LABEL},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"publish", required_argument, NULL, 'p'},
    {"ttl", required_argument, NULL, OPT_TTL},
    {"on-ttl", required_argument, NULL, OPT_ON_TTL},
    {"user", required_argument, NULL, 'u'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* The limit and degraded-mode options exec and create share. */
const char sandbox_limit_options[] =
    "  --memory SIZE        memory limit of the whole sandbox (512M, 2G): memory.max\n"
    "  --memory-swap SIZE   swap it may use besides (default: none)\n"
    "  --disk SIZE          the writable layer, /tmp and /dev/shm together (4G)\n"
    "  --cpus N             CPU time as a number of CPUs (0.5, 2): cpu.max\n"
    "  --pids N             processes and threads at most: pids.max\n"
    "  --io-weight N        relative block I/O weight, 1..10000: io.weight\n"
    "  --cgroup-parent PATH create the sandbox's cgroup under this cgroup\n"
    "  --no-cgroups         apply limits as per-process rlimits, without a cgroup\n"
    "  --read-only          the image's tree read-only: only /tmp, /dev/shm and read-write\n"
    "                       binds take writes\n"
    "  --proc MODE          fresh (default), or host-ro: a degraded mode for hosts that\n"
    "                       refuse a fresh procfs (the host's /proc, read-only)\n"
    "  --overlay MODE       kernel (default), or fuse: a degraded mode for hosts that refuse\n"
    "                       overlayfs in a user namespace (fuse-overlayfs serves the root)\n"
    "  --net MODE           none (default): loopback only; proxy: the outside only through\n"
    "                       hutch's HTTP proxy, to the hosts the policy allows\n"
    "  --allow HOST[:PORT]  with --net proxy: also allow this host (repeatable)\n"
    "  --net-policy FILE    with --net proxy: this file's [network] replaces the policy's\n"
    "  --resolve NAME=ADDR  with --net proxy: the proxy resolves NAME to ADDR (for tests;\n"
    "                       announced on stderr, logged)\n"
    "  --device DEV         a host device, if the policy allows it: a CDI name such as\n"
    "                       nvidia.com/gpu=all (specs in /etc/cdi, /var/run/cdi), or a\n"
    "                       character device /dev/NODE (repeatable)\n";

static void exec_usage(FILE *out) {
  fprintf(out,
          "Usage: hutch exec [OPTIONS] -- CMD [ARGS...]\n"
          "       hutch exec --in ID [OPTIONS] -- CMD [ARGS...]\n\n"
          "Run CMD in a new sandbox (or in the live sandbox ID) and exit with its status:\n"
          "128+N when killed by signal N, 124 on timeout, 125 when hutch failed,\n"
          "126 when CMD cannot be executed, 127 when it is not found.\n\n"
          "Options:\n"
          "  --rootfs NAME        image to use (name or digest; default: default)\n"
          "  --store DIR          rootfs store (default: $HUTCH_STORE or the per-user store)\n"
          "  --state-dir DIR      where sandboxes keep their state (default: $HUTCH_STATE_DIR)\n"
          "  --policy FILE        sandbox policy (default: $HUTCH_POLICY or the installed one)\n"
          "  --workdir DIR        working directory inside the sandbox (default: the image's WorkingDir, else /)\n"
          "  --env K=V            set an environment variable (repeatable)\n"
          "  --bind SRC:DST[:ro]  bind-mount a host path into the sandbox (repeatable)\n"
          "  --hostname NAME      hostname inside the sandbox\n"
          "  --timeout SECONDS    kill CMD (a new sandbox: the whole sandbox) after this long\n"
          "  --keep               keep the sandbox's upper and work directories\n"
          "  -u, --user USER[:GROUP]\n"
          "                       run as this uid and gid (or names of the image's) inside, with no\n"
          "                       capability and no way back to root (rootless: needs a subordinate\n"
          "                       id range in /etc/subuid and /etc/subgid)\n"
          "%s"
          "  --json               print one JSON object describing the exit on stdout\n"
          "  --in ID              run in the live sandbox ID (see hutch create)\n"
          "  -t, --tty            give CMD a pseudo-terminal of its own in the sandbox (with -i: an\n"
          "                       interactive shell; the caller's terminal is raw meanwhile), with\n"
          "                       the caller's TERM (xterm without one)\n"
          "  -i, --interactive    keep stdin attached (it always is; with -t it is relayed to the pty)\n"
          "  --no-die-with-parent go on running when the program that started hutch dies\n"
          "                       (by default hutch, and the sandbox with it, is killed)\n"
          "  --audit FILE         a new sandbox: also write its audit log to FILE (and FILE.head)\n"
          "                       when it ends; it is kept in the state directory's .audit/ too\n"
          "  -h, --help           show this help\n",
          sandbox_limit_options);
}

/* Returns -1 to continue, else an exit code. */
int parse_sandbox_opts(const char *verb, int argc, char **argv, struct sandbox_opts *o, int *first_arg) {
  bool is_exec = strcmp(verb, "exec") == 0;
  optind = 1;
  opterr = 0;
  int c;
  /* '+': stop at the first non-option, so CMD's own flags stay its own. */
  while ((c = getopt_long(argc, argv, is_exec ? "+hitu:" : "+hp:u:", long_options, NULL)) != -1) {
    switch (c) {
    case OPT_ROOTFS:
      o->rootfs = optarg;
      break;
    case OPT_STORE:
      o->store = optarg;
      break;
    case OPT_STATE_DIR:
      o->state_dir = optarg;
      break;
    case OPT_POLICY:
      o->policy = optarg;
      break;
    case OPT_AUDIT:
      if (!is_exec)
        return cli_usage_error(verb, "--audit is an option of exec (a live sandbox's log: hutch audit ID)");
      o->audit = optarg;
      break;
    case OPT_WORKDIR:
      if (!is_exec)
        return cli_usage_error(verb, "--workdir is an option of exec");
      if (optarg[0] != '/')
        return cli_usage_error(verb, "--workdir must be an absolute path inside the sandbox");
      o->workdir = optarg;
      break;
    case OPT_ENV:
      if (!valid_env_assignment(optarg))
        return cli_usage_error(verb, "--env wants KEY=VALUE, got '%s'", optarg);
      o->env = realloc(o->env, (o->n_env + 2) * sizeof(char *));
      o->env[o->n_env++] = optarg;
      o->env[o->n_env] = NULL;
      break;
    case OPT_BIND: {
      o->binds = realloc(o->binds, (o->n_binds + 1) * sizeof(*o->binds));
      o->bind_storage = realloc(o->bind_storage, (o->n_binds + 1) * sizeof(char *));
      if (!parse_bind(optarg, &o->binds[o->n_binds], &o->bind_storage[o->n_binds]))
        return cli_usage_error(verb, "--bind wants /SRC:/DST[:ro|:rw], got '%s'", optarg);
      o->n_binds++;
      break;
    }
    case OPT_HOSTNAME:
      o->hostname = optarg;
      break;
    case OPT_TIMEOUT:
      if (!is_exec)
        return cli_usage_error(verb, "--timeout is an option of exec");
      if (!parse_duration(optarg, &o->timeout))
        return cli_usage_error(verb, "--timeout wants a positive number of seconds, got '%s'", optarg);
      break;
    case OPT_KEEP:
      o->keep = true;
      break;
    case OPT_JSON:
      o->json = true;
      break;
    case OPT_NO_DIE_WITH_PARENT:
      if (!is_exec)
        return cli_usage_error(verb, "--no-die-with-parent is an option of exec (a created sandbox outlives hutch)");
      o->no_die_with_parent = true;
      break;
    case OPT_IN:
      if (!is_exec)
        return cli_usage_error(verb, "--in is an option of exec");
      o->in = optarg;
      break;
    case OPT_MEMORY:
    case OPT_MEMORY_SWAP: {
      uint64_t v;
      bool swap = c == OPT_MEMORY_SWAP;
      if (!hutch_parse_size(optarg, &v) || (!swap && v < (4u << 20)))
        return cli_usage_error(verb, "%s wants a size such as 512M or 2G%s, got '%s'",
                               swap ? "--memory-swap" : "--memory", swap ? "" : " (at least 4M)", optarg);
      if (swap) {
        o->limits.memory_swap = v;
        o->limits.memory_swap_set = true;
      } else {
        o->limits.memory = v;
      }
      break;
    }
    case OPT_DISK:
      if (!hutch_parse_size(optarg, &o->limits.disk) || o->limits.disk < (1u << 20))
        return cli_usage_error(verb, "--disk wants a size such as 512M or 4G (at least 1M), got '%s'", optarg);
      break;
    case OPT_CPUS: {
      char *end;
      double v = strtod(optarg, &end);
      if (end == optarg || *end != '\0' || !(v >= 0.001 && v <= 4096))
        return cli_usage_error(verb, "--cpus wants a number of CPUs from 0.001 to 4096 (0.5, 2), got '%s'", optarg);
      o->limits.cpus = v;
      break;
    }
    case OPT_PIDS:
    case OPT_IO_WEIGHT: {
      char *end;
      bool pids = c == OPT_PIDS;
      unsigned long long v = strtoull(optarg, &end, 10);
      if (end == optarg || *end != '\0' || optarg[0] == '-' || (pids ? v < 1 || v > 4194304 : v < 1 || v > 10000))
        return cli_usage_error(verb, "%s wants a whole number from 1 to %s, got '%s'", pids ? "--pids" : "--io-weight",
                               pids ? "4194304" : "10000", optarg);
      if (pids)
        o->limits.pids = v;
      else
        o->limits.io_weight = (uint32_t)v;
      break;
    }
    case OPT_CGROUP_PARENT:
      o->limits.cgroup_parent = optarg;
      break;
    case OPT_NO_CGROUPS:
      o->limits.no_cgroups = true;
      break;
    case OPT_READ_ONLY:
      o->read_only = true;
      break;
    case OPT_PROC:
      if (strcmp(optarg, "host-ro") == 0)
        o->proc_host_ro = true;
      else if (strcmp(optarg, "fresh") != 0)
        return cli_usage_error(verb, "--proc wants fresh or host-ro, got '%s'", optarg);
      break;
    case OPT_OVERLAY:
      if (strcmp(optarg, "fuse") == 0)
        o->overlay_fuse = true;
      else if (strcmp(optarg, "kernel") != 0)
        return cli_usage_error(verb, "--overlay wants kernel or fuse, got '%s'", optarg);
      break;
    case OPT_NET:
      if (strcmp(optarg, "proxy") == 0)
        o->net = HUTCH_NET_PROXY;
      else if (strcmp(optarg, "none") == 0)
        o->net = HUTCH_NET_NONE;
      else
        return cli_usage_error(verb, "--net wants none or proxy, got '%s'", optarg);
      break;
    case OPT_ALLOW:
      strv_push(&o->allow, &o->n_allow, optarg);
      break;
    case OPT_NET_POLICY:
      o->net_policy = optarg;
      break;
    case OPT_RESOLVE:
      if (strchr(optarg, '=') == NULL)
        return cli_usage_error(verb, "--resolve wants NAME=ADDR, got '%s'", optarg);
      strv_push(&o->resolve, &o->n_resolve, optarg);
      break;
    case OPT_NAME:
    case OPT_LABEL: {
      if (is_exec)
        return cli_usage_error(verb, "%s is an option of create", c == OPT_NAME ? "--name" : "--label");
      /* The syntax is checked here, so that a bad one is a usage error. */
      hutch_error_t bad = NULL;
      const char *one[] = {optarg, NULL};
      struct hutch_sandbox_extras x = {.name = c == OPT_NAME ? optarg : NULL, .labels = c == OPT_LABEL ? one : NULL};
      if (hutch_sandbox_extras_check(&x, &bad) < 0) {
        int r = cli_usage_error(verb, "%s%s%s", bad->msg, bad->hint ? ": " : "", bad->hint ? bad->hint : "");
        hutch_error_free(&bad);
        return r;
      }
      if (c == OPT_NAME)
        o->name = optarg;
      else if (o->n_labels == HUTCH_LABELS_MAX)
        return cli_usage_error(verb, "at most %d labels", HUTCH_LABELS_MAX);
      else
        strv_push(&o->labels, &o->n_labels, optarg);
      break;
    }
    case OPT_DEVICE: {
      hutch_error_t bad = NULL;
      const char *one[] = {optarg, NULL};
      struct hutch_sandbox_extras x = {.devices = one};
      if (hutch_sandbox_extras_check(&x, &bad) < 0) {
        int r = cli_usage_error(verb, "%s%s%s", bad->msg, bad->hint ? ": " : "", bad->hint ? bad->hint : "");
        hutch_error_free(&bad);
        return r;
      }
      if (o->n_devices == HUTCH_DEVICES_MAX)
        return cli_usage_error(verb, "at most %d devices", HUTCH_DEVICES_MAX);
      strv_push(&o->devices, &o->n_devices, optarg);
      break;
    }
    case 'p':
      if (is_exec)
        return cli_usage_error(verb, "--publish is an option of create");
      if (o->n_ports == 32)
        return cli_usage_error(verb, "at most 32 published ports");
      o->ports = realloc(o->ports, (o->n_ports + 1) * sizeof(*o->ports));
      o->port_addrs = realloc(o->port_addrs, (o->n_ports + 1) * sizeof(*o->port_addrs));
      if (o->ports == NULL || o->port_addrs == NULL)
        return cli_usage_error(verb, "out of memory");
      if (!parse_publish(optarg, &o->ports[o->n_ports], o->port_addrs[o->n_ports], sizeof(o->port_addrs[0])))
        return cli_usage_error(verb, "-p wants [ADDR:]HOSTPORT:PORT (HOSTPORT 0: any free port), got '%s'", optarg);
      o->n_ports++;
      break;
    case OPT_TTL: {
      if (is_exec)
        return cli_usage_error(verb, "--ttl is an option of create (exec has --timeout)");
      struct hutch_sandbox_extras x = {0};
      if (!parse_duration(optarg, &x.ttl) || hutch_sandbox_extras_check(&x, NULL) < 0)
        return cli_usage_error(verb, "--ttl wants a duration such as 90s, 10m or 2h (at most ten years), got '%s'",
                               optarg);
      o->ttl = x.ttl;
      break;
    }
    case OPT_ON_TTL:
      if (is_exec)
        return cli_usage_error(verb, "--on-ttl is an option of create");
      if (cli_parse_on_ttl(verb, optarg, &o->on_ttl) != 0)
        return EXIT_USAGE;
      o->on_ttl_set = true;
      break;
    case 'u': {
      hutch_error_t bad = NULL;
      struct hutch_sandbox_extras x = {.user = optarg};
      if (hutch_sandbox_extras_check(&x, &bad) < 0) {
        int r = cli_usage_error(verb, "%s%s%s", bad->msg, bad->hint ? ": " : "", bad->hint ? bad->hint : "");
        hutch_error_free(&bad);
        return r;
      }
      o->user = optarg;
      break;
    }
    case 't':
    case 'i':
      if (!is_exec)
        return cli_usage_error(verb, "%s is an option of exec", c == 't' ? "--tty" : "--interactive");
      *(c == 't' ? &o->tty : &o->interactive) = true;
      break;
    case 'h':
      (is_exec ? exec_usage : create_usage)(stdout);
      return 0;
    default:
      return cli_usage_error(verb, "unknown option '%s'", argv[optind - 1]);
    }
  }
  if (o->net != HUTCH_NET_PROXY && (o->n_allow || o->n_resolve || o->net_policy))
    return cli_usage_error(verb, "--allow, --net-policy and --resolve need --net proxy (without it the sandbox has "
                                 "loopback only)");
  *first_arg = optind;
  return -1;
}

void prepared_release(struct prepared *p) {
  hutch_image_clear(&p->image);
  for (char **e = p->env; e && *e; e++)
    free(*e);
  free(p->env);
  if (p->policy)
    hutch_policy_free(p->policy);
  if (p->store)
    hutch_store_close(p->store);
}

int prepare(const struct sandbox_opts *o, struct prepared *p, hutch_error_t *err) {
  memset(p, 0, sizeof(*p));
  if (o->proc_host_ro)
    fprintf(stderr, "hutch: warning: degraded mode --proc host-ro, as asked: the sandbox gets the host's /proc "
                    "read-only (dangerous files masked) instead of a fresh one, and sees the host's processes\n");
  if (o->overlay_fuse)
    fprintf(stderr, "hutch: warning: degraded mode --overlay fuse, as asked: the sandbox's root is served by the "
                    "fuse-overlayfs program instead of the kernel's overlayfs (a larger attack surface, slower file "
                    "access)\n");
  for (size_t i = 0; i < o->n_resolve; i++)
    fprintf(stderr, "hutch: --resolve %s: the proxy resolves this name to this address, not through DNS\n",
            o->resolve[i]);
  if (hutch_policy_load(o->policy, &p->policy, err) < 0)
    return -1;
  if (hutch_store_open(o->store, &p->store, err) < 0)
    return -1;
  const char *name = o->rootfs ? o->rootfs : "default";
  if (hutch_image_lookup(p->store, name, &p->image, err) < 0)
    return -1;
  if (o->user == NULL) /* --user names who runs: nothing to say of the image's */
    hutch_image_user_notice(&p->image);
  p->env = hutch_image_env(&p->image, o->env);
  p->cfg = (struct hutch_sandbox_config){
      .rootfs = p->image.rootfs,
      .rootfs_lowers = (const char *const *)p->image.lowers,
      .image = p->image.name ? p->image.name : p->image.digest,
      .workdir = p->image.workdir,
      .rootfs_subordinate_ids = p->image.ids_preserved,
      .policy = p->policy,
      .hostname = o->hostname,
      .env = (const char *const *)p->env,
      .binds = o->binds,
      .n_binds = o->n_binds,
      .keep = o->keep,
      .proc_host_ro = o->proc_host_ro,
      .read_only_root = o->read_only,
      .overlay = o->overlay_fuse ? HUTCH_OVERLAY_FUSE : HUTCH_OVERLAY_KERNEL,
      .state_dir = o->state_dir,
      .store = o->store,
      .limits = o->limits,
      .net = o->net,
      .net_allow = o->allow,
      .net_policy = o->net_policy,
      .net_resolve = o->resolve,
      .audit_copy = o->audit,
  };
  return 0;
}

void add_limits_json(cJSON *parent, const struct hutch_limits_status *l) {
  cJSON *o = cJSON_AddObjectToObject(parent, "limits");
  cJSON_AddStringToObject(o, "mode", l->mode[0] ? l->mode : "none");
  cJSON_AddBoolToObject(o, "degraded", l->degraded);
  if (l->reason[0])
    cJSON_AddStringToObject(o, "reason", l->reason);
  if (l->cgroup[0])
    cJSON_AddStringToObject(o, "cgroup", l->cgroup);
  /* Said on stderr once a day; here every time. */
  if (l->warning[0])
    cJSON_AddStringToObject(o, "warning", l->warning);
}

/* Only what the kernel reported: a missing field means "unknown". */
static void add_usage_json(cJSON *parent, const struct hutch_usage *u) {
  if (u->memory_peak == 0 && u->cpu_usec == 0 && u->memory_max == 0)
    return;
  cJSON *o = cJSON_AddObjectToObject(parent, "usage");
  if (u->memory_max)
    cJSON_AddNumberToObject(o, "memory_max", (double)u->memory_max);
  if (u->memory_peak)
    cJSON_AddNumberToObject(o, "memory_peak", (double)u->memory_peak);
  cJSON_AddNumberToObject(o, "oom_kills", (double)u->oom_kills);
  cJSON_AddNumberToObject(o, "cpu_usec", (double)u->cpu_usec);
  cJSON_AddNumberToObject(o, "nr_throttled", (double)u->nr_throttled);
  cJSON_AddNumberToObject(o, "throttled_usec", (double)u->throttled_usec);
  cJSON_AddBoolToObject(o, "throttled", u->nr_throttled > 0);
}

void add_network_json(cJSON *parent, enum hutch_net_mode mode, const char *audit_log,
                      const struct hutch_net_summary *sum) {
  cJSON *o = cJSON_AddObjectToObject(parent, "network");
  cJSON_AddStringToObject(o, "mode", mode == HUTCH_NET_PROXY ? "proxy" : "none");
  if (audit_log && audit_log[0])
    cJSON_AddStringToObject(o, "audit_log", audit_log);
  if (sum && sum->proxy && sum->unread[0]) {
    /* Unknown, not zero. */
    cJSON_AddNullToObject(o, "requests");
    cJSON_AddStringToObject(o, "unread", sum->unread);
  } else if (sum && sum->proxy) {
    cJSON_AddNumberToObject(o, "requests", (double)sum->requests);
    cJSON_AddNumberToObject(o, "allowed", (double)sum->allowed);
    cJSON_AddNumberToObject(o, "refused", (double)sum->refused);
    cJSON_AddNumberToObject(o, "errors", (double)sum->errors);
    cJSON_AddNumberToObject(o, "unlogged", (double)sum->unlogged);
    if (sum->top_refused[0])
      cJSON_AddStringToObject(o, "top_refused", sum->top_refused);
  }
}

/* The degraded modes asked for, by their options' spelling. */
void add_degraded_json(cJSON *j, const struct sandbox_opts *o, const struct hutch_limits_status *l) {
  if (!o->proc_host_ro && !o->overlay_fuse && !l->disk_unbounded)
    return;
  cJSON *a = cJSON_AddArrayToObject(j, "degraded_modes");
  if (o->overlay_fuse)
    cJSON_AddItemToArray(a, cJSON_CreateString(HUTCH_DEGRADED_OVERLAY_FUSE));
  if (o->proc_host_ro)
    cJSON_AddItemToArray(a, cJSON_CreateString(HUTCH_DEGRADED_PROC_HOST_RO));
  if (l->disk_unbounded)
    cJSON_AddItemToArray(a, cJSON_CreateString(HUTCH_DEGRADED_DISK_UNBOUNDED));
}

static void print_exit_json(const struct hutch_exit *ex, int code, const struct sandbox_opts *o) {
  cJSON *j = cJSON_CreateObject();
  add_degraded_json(j, o, &ex->limits);
  cJSON_AddStringToObject(j, "id", ex->id);
  cJSON_AddNumberToObject(j, "exit_code", code);
  cJSON_AddNumberToObject(j, "status", ex->status);
  cJSON_AddNumberToObject(j, "signal", ex->signal);
  cJSON_AddBoolToObject(j, "timed_out", ex->timed_out);
  cJSON_AddNumberToObject(j, "wall_seconds", ex->wall_seconds);
  if (ex->failure[0])
    cJSON_AddStringToObject(j, "error", ex->failure);
  cJSON_AddBoolToObject(j, "oom_killed", ex->usage.oom_killed);
  /* Where its audit log is now (hutch-audit(5)): the live sandbox's, or
   * the archived one of a sandbox that has ended. */
  char *audit = NULL;
  hutch_error_t err = NULL;
  if (hutch_audit_find(o->state_dir, ex->id, &audit, &err) == 0)
    cJSON_AddStringToObject(j, "audit_log", o->audit && !o->in ? o->audit : audit);
  hutch_error_free(&err);
  free(audit);
  add_limits_json(j, &ex->limits);
  add_usage_json(j, &ex->usage);
  if (ex->net.proxy)
    add_network_json(j, HUTCH_NET_PROXY, ex->net.audit_log, &ex->net);
  else if (o->in == NULL)
    add_network_json(j, HUTCH_NET_NONE, NULL, NULL);
  char *s = cJSON_PrintUnformatted(j);
  printf("%s\n", s);
  free(s);
  cJSON_Delete(j);
}

static int report_exit(const struct sandbox_opts *o, const struct hutch_exit *ex) {
  int code = hutch_exit_code(ex);
  if (ex->failure[0]) {
    char *why = hutch_errno_format(ex->exec_errno, "%s", ex->failure);
    fprintf(stderr, "hutch: %s\n", why);
    free(why);
  }
  if (ex->timed_out)
    fprintf(stderr, "hutch: timed out after %.3g s; killed\n", o->timeout);
  if (ex->usage.oom_killed) {
    char max[32] = "its limit";
    if (ex->usage.memory_max)
      hutch_format_size(ex->usage.memory_max, max, sizeof(max));
    fprintf(stderr, "hutch: killed: out of memory at %s (the sandbox's memory limit)\n", max);
  }
  if (ex->net.proxy) {
    char line[512];
    hutch_net_summary_format(&ex->net, line, sizeof(line));
    fprintf(stderr, "network: %s\n", line);
  }
  if (o->json)
    print_exit_json(ex, code, o);
  return code;
}

/* exec -it: the library puts the terminal in raw mode while it relays
 * and restores it on its every way out, and the signals it forwards
 * (SIGINT, SIGTERM, SIGHUP, SIGQUIT) do not end hutch.  The other signals
 * that would end hutch restore the terminal first, here. */
static struct termios guarded_termios;

static void terminal_restore(void) {
  tcsetattr(STDIN_FILENO, TCSANOW, &guarded_termios);
}

static void terminal_restore_and_die(int sig) {
  terminal_restore(); /* async-signal-safe */
  signal(sig, SIG_DFL);
  raise(sig);
}

static void terminal_guard_arm(void) {
  static const int fatal[] = {SIGUSR1, SIGUSR2, SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ, SIGIO, SIGPWR};
  if (tcgetattr(STDIN_FILENO, &guarded_termios) < 0)
    return;
  atexit(terminal_restore);
  struct sigaction sa = {.sa_handler = terminal_restore_and_die};
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++) {
    struct sigaction old;
    if (sigaction(fatal[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL)
      sigaction(fatal[i], &sa, NULL);
  }
}

/* exec -t: TERM, the one variable of hutch's environment a command gets
 * (hutch-exec(1)), as docker and podman give it: the caller's, or xterm
 * without one (or with one that is no terminal's name).  It goes first,
 * so that --env TERM=... wins; a one-shot sandbox's image's TERM does not,
 * since the terminal is the caller's. */
static void tty_term(struct sandbox_opts *o, char *buf, size_t len) {
  const char *term = getenv("TERM");
  bool usable = term != NULL && term[0] != '\0' && strlen(term) < len - sizeof("TERM=");
  for (const char *c = term; usable && *c; c++)
    usable = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || strchr("+-._", *c);
  snprintf(buf, len, "TERM=%s", usable ? term : "xterm");
  o->env = realloc(o->env, (o->n_env + 2) * sizeof(char *));
  if (o->env == NULL)
    abort();
  memmove(o->env + 1, o->env, o->n_env * sizeof(char *));
  o->env[0] = buf;
  o->env[++o->n_env] = NULL;
}

int cmd_exec(int argc, char **argv) {
  struct sandbox_opts o = {0};
  int first = 0;
  char term[128];
  int r = parse_sandbox_opts("exec", argc, argv, &o, &first);
  if (r >= 0)
    goto out;
  if (first >= argc) {
    r = cli_usage_error("exec", "no command given");
    goto out;
  }
  if (o.tty)
    tty_term(&o, term, sizeof(term));
  /* --net proxy's veth is set up over libmnl, which the musl front end lacks. */
  if (o.net == HUTCH_NET_PROXY && (r = cli_hand_over("--net proxy")) >= 0)
    goto out;
  /* As podman: -it wants a terminal to read from; -t alone does not. */
  if (o.tty && o.interactive && !isatty(STDIN_FILENO)) {
    fprintf(stderr, "hutch: exec -it: the input device is not a TTY (drop -t to pipe stdin to the command)\n");
    r = 125;
    goto out;
  }
  hutch_error_t err = NULL;
  /* A command started for a program dies with that program, unless asked. */
  if (!o.no_die_with_parent && hutch_die_with_parent(cli_parent_pid, &err) < 0) {
    r = cli_fail(&err);
    goto out;
  }
  struct hutch_exit ex;
  struct hutch_process proc = {
      .argv = (const char *const *)argv + first,
      .workdir = o.workdir,
      .stdio = {0, 1, 2},
      .timeout = o.timeout,
      .tty = o.tty,
      .tty_no_input = !o.interactive,
  };
  if (o.tty && o.interactive)
    terminal_guard_arm();
  if (o.in != NULL) {
    const struct hutch_limits *l = &o.limits;
    bool limits = l->memory || l->memory_swap_set || l->cpus > 0 || l->pids || l->io_weight || l->cgroup_parent ||
                  l->no_cgroups || l->disk;
    if (o.rootfs || o.policy || o.n_binds || o.hostname || o.keep || limits || o.net != HUTCH_NET_NONE ||
        o.overlay_fuse || o.proc_host_ro || o.read_only || o.audit || o.n_devices || o.user) {
      r = cli_usage_error("exec",
                          "--rootfs, --policy, --bind, --hostname, --keep, --net, --overlay, --proc, --read-only, "
                          "--audit, --device, --user and the "
                          "limits belong to the "
                          "sandbox's creation, not to --in");
      goto out;
    }
    proc.env = o.env;
    struct hutch_sandbox *sb = NULL;
    if (hutch_sandbox_open(o.state_dir, o.in, &sb, &err) < 0 || hutch_sandbox_exec(sb, &proc, &ex, &err) < 0) {
      hutch_sandbox_close(sb);
      r = cli_fail(&err);
      goto out;
    }
    hutch_sandbox_close(sb);
    r = report_exit(&o, &ex);
    goto out;
  }
  struct prepared p;
  int prepared = prepare(&o, &p, &err);
  if (prepared == 0 && proc.workdir == NULL)
    proc.workdir = p.image.workdir; /* the image's WorkingDir */
  struct hutch_sandbox_extras x = {.devices = o.devices, .user = o.user};
  if (prepared < 0 || hutch_run_with(&p.cfg, &x, &proc, &ex, &err) < 0) {
    prepared_release(&p);
    r = cli_fail(&err);
    goto out;
  }
  prepared_release(&p);
  r = report_exit(&o, &ex);
out:
  sandbox_opts_free(&o);
  return r;
}
