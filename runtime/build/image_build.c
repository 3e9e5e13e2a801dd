/* SPDX-License-Identifier: Apache-2.0 */
/* hutch_image_build: run a recipe (hutch-recipe(5)) in a sandbox on a base
 * image and keep what it changed as a new image: a layer of its own, stacked
 * on the base's tree by overlayfs, never a copy of it. */
#include "config.h"

#include <linux/openat2.h>

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netdb.h>
#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "apt_sources.h"
#include "build_layer.h"
#include "build_sweep.h"
#include "build_step.h"
#include "download.h"
#include "hutch.h"
#include "idmap.h"
#include "image.h"
#include "image_layers.h"
#include "layer_copy.h"
#include "manifest.h"
#include "net_policy.h"
#include "paths.h"
#include "recipe.h"
#include "sandbox.h"
#include "store.h"
#include "util.h"

#define SAY(o, ...) ((void)(o), image_say(__VA_ARGS__))

/* ---- the base image ------------------------------------------------------ */

/* Every enabled entry of an apt sources.list.d directory: one-line .list
 * files and deb822 .sources files. */
static void read_source_file(const char *path, const char *name, bool image, struct apt_source **list, size_t *n) {
  size_t len = strlen(name);
  bool deb822 = len > 8 && strcmp(name + len - 8, ".sources") == 0;
  bool oneline = len > 5 && strcmp(name + len - 5, ".list") == 0;
  if (!deb822 && !oneline)
    return;
  /* An image's file may be a symlink that means another file on the host
   * than in a sandbox, or a FIFO a build left: only regular files count. */
  _cleanup_free_ char *text =
      image ? read_regular_file_at(AT_FDCWD, path, 1 << 20, NULL) : read_file_at(AT_FDCWD, path, 1 << 20, NULL);
  if (text)
    apt_sources_parse(text, deb822, list, n);
}

static void read_sources_dir(const char *dir, struct apt_source **list, size_t *n) {
  _cleanup_dir_ DIR *d = opendir(dir);
  struct dirent *de;
  while (d && (de = readdir(d)) != NULL) {
    _cleanup_free_ char *path = xasprintf("%s/%s", dir, de->d_name);
    read_source_file(path, de->d_name, false, list, n);
  }
}

static void read_host_sources(struct apt_source **list, size_t *n) {
  _cleanup_free_ char *main_list = read_file_at(AT_FDCWD, "/etc/apt/sources.list", 1 << 20, NULL);
  if (main_list)
    apt_sources_parse(main_list, false, list, n);
  read_sources_dir("/etc/apt/sources.list.d", list, n);
}

/* Set K=V in a NULL-terminated list, replacing K's entry; without '=' the
 * list is a plain one without duplicates. */
static void env_set(char ***env, size_t *n, const char *kv) {
  size_t klen = strcspn(kv, "=") + 1;
  for (size_t i = 0; i < *n; i++)
    if (strncmp((*env)[i], kv, klen) == 0) {
      free((*env)[i]);
      (*env)[i] = xstrdup(kv);
      return;
    }
  *env = xrealloc(*env, (*n + 2) * sizeof(**env));
  (*env)[(*n)++] = xstrdup(kv);
  (*env)[*n] = NULL;
}

/* No internet (Ubuntu's servers unreachable): a Debian base from the mirror
 * this machine's apt already uses, by mmdebstrap. */
static int debian_fallback(struct hutch_store *store, const struct hutch_build_options *o, const char *suite,
                           struct hutch_image *out, hutch_error_t *err) {
  _cleanup_free_ char *mmdebstrap = find_in_path("mmdebstrap", "/usr/local/bin:/usr/bin:/bin");
  if (mmdebstrap == NULL) {
    hutch_error_set(err, ENOENT, "Debian fallback: mmdebstrap is not installed");
    return hutch_error_hint(err, "install it (apt-get install mmdebstrap), or import a base image with `hutch rootfs "
                                 "import FILE --name NAME`");
  }
  struct apt_source *sources = NULL;
  size_t n = 0;
  read_host_sources(&sources, &n);
  const char *m = apt_sources_mirror(sources, n, suite);
  _cleanup_free_ char *mirror = m ? xstrdup(m) : NULL;
  apt_sources_free(sources, n);
  if (mirror == NULL) {
    hutch_error_set(err, ENOENT, "Debian fallback: no source for %s in this machine's apt sources (/etc/apt)", suite);
    return hutch_error_hint(err,
                            "add a Debian mirror for %s to /etc/apt/sources.list.d, or import a base image "
                            "with `hutch rootfs import FILE --name NAME`",
                            suite);
  }
  _cleanup_free_ char *dir = xasprintf("%s/downloads", hutch_store_path(store));
  if (mkdir(dir, 0700) < 0 && errno != EEXIST)
    return hutch_error_sys(err, "Debian fallback: create %s", dir);
  _cleanup_free_ char *tar = xasprintf("%s/debian-%s-%d.tar", dir, suite, (int)getpid());
  SAY(o, "building a Debian %s base with mmdebstrap from %s (this machine's apt sources)", suite, mirror);
  _cleanup_free_ char *spec = xasprintf("deb %s %s main", mirror, suite);
  const char *argv[] = {mmdebstrap,
                        "--variant=minbase",
                        "--include=ca-certificates",
                        geteuid() == 0 ? "--mode=root" : "--mode=unshare",
                        suite,
                        tar,
                        spec,
                        NULL};
  pid_t pid = fork();
  if (pid < 0)
    return hutch_error_sys(err, "Debian fallback: fork");
  if (pid == 0) {
    /* Its chatter is progress for people: the caller's output fd. */
    if (o->output_fd != STDOUT_FILENO)
      dup2(o->output_fd, STDOUT_FILENO);
    if (o->output_fd != STDERR_FILENO)
      dup2(o->output_fd, STDERR_FILENO);
    execv(mmdebstrap, (char *const *)argv);
    _exit(127);
  }
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
    ;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    unlink(tar);
    hutch_error_set(err, EIO, "Debian fallback: mmdebstrap failed (%s %d)",
                    WIFEXITED(status) ? "exit status" : "signal",
                    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    return hutch_error_hint(err, "its output is above; as a user, --mode=unshare needs a subordinate id range "
                                 "(/etc/subuid, /etc/subgid)");
  }
  _cleanup_free_ char *name = xasprintf("debian:%s", suite);
  struct hutch_import_options opts = {.name = name};
  int r = hutch_image_import(store, tar, &opts, out, err);
  unlink(tar);
  return r < 0 ? hutch_error_wrap(err, "Debian fallback") : 0;
}

int build_resolve_base(struct hutch_store *store, const struct hutch_build_options *o, struct hutch_image *base,
                       hutch_error_t *err) {
  _cleanup_error_ hutch_error_t e = NULL;
  if (hutch_image_lookup(store, o->from, base, &e) == 0)
    return 0;
  struct manifest m = {0};
  _cleanup_error_ hutch_error_t me = NULL;
  if (e->errnum != ENOENT || manifest_load(o->from, &m, &me) < 0) {
    hutch_error_move(err, &e);
    return hutch_error_hint(err,
                            "pull it (`hutch rootfs pull %s`) or import it (`hutch rootfs import FILE --name "
                            "%s`) first",
                            o->from, o->from);
  }
  SAY(o, "%s is not in the store: pulling it", o->from);
  _cleanup_error_ hutch_error_t pe = NULL;
  struct hutch_pull_options po = {.arch = o->arch, .progress = o->progress, .phase = o->phase, .data = o->data};
  int r = hutch_image_pull(store, o->from, &po, base, &pe);
  if (r >= 0) {
    manifest_clear(&m);
    return 0;
  }
  if (!download_network_error(pe) || m.fallback_suite == NULL) {
    manifest_clear(&m);
    hutch_error_move(err, &pe);
    return -1;
  }
  _cleanup_free_ char *why = hutch_error_format(pe);
  SAY(o, "%s", why);
  SAY(o, "no network to download %s: falling back to Debian %s, built locally", o->from, m.fallback_suite);
  r = debian_fallback(store, o, m.fallback_suite, base, err);
  manifest_clear(&m);
  return r;
}

/* ---- the network a build needs ------------------------------------------- */

/* The first copy of `rel` in the image's layers, top down. */
/* The image's trees, its own first (image_layers.h). */
const char **build_image_trees(const struct hutch_image *img) {
  size_t n = 0;
  while (img->lowers && img->lowers[n])
    n++;
  const char **trees = xcalloc(n + 2, sizeof(*trees));
  trees[0] = img->rootfs;
  for (size_t i = 0; i < n; i++)
    trees[i + 1] = img->lowers[i];
  return trees;
}

struct sources_acc {
  struct apt_source **list;
  size_t *n;
};

static void read_layered_source(const char *path, const char *name, void *data) {
  struct sources_acc *acc = data;
  read_source_file(path, name, true, acc->list, acc->n);
}

/* The archive hosts of the image's apt sources (as its sandboxes see
 * them: a source a later layer deleted counts no more), added to allow
 * (NULL-terminated). */
void build_add_archive_hosts(const struct hutch_image *img, char ***allow, size_t *n_allow) {
  struct apt_source *list = NULL;
  size_t n = 0;
  _cleanup_free_ const char **trees = build_image_trees(img);
  _cleanup_free_ char *main_path = image_layers_path(trees, "etc/apt/sources.list");
  _cleanup_free_ char *main_list = main_path ? read_regular_file_at(AT_FDCWD, main_path, 1 << 20, NULL) : NULL;
  if (main_list)
    apt_sources_parse(main_list, false, &list, &n);
  struct sources_acc acc = {&list, &n};
  image_layers_list(trees, "etc/apt/sources.list.d", read_layered_source, &acc);
  for (size_t i = 0; i < n; i++) {
    _cleanup_free_ char *host = apt_uri_host(list[i].uri);
    if (host)
      env_set(allow, n_allow, host);
  }
  apt_sources_free(list, n);
}

/* The proxy refuses names that resolve to internal addresses, but a
 * company's apt mirror or cache often has one.  An archive host that this
 * machine's own apt uses is trusted as the machine trusts it: its current
 * addresses are listed for the build (allow_address), and said so.  Hosts
 * the image alone names get no such pass. */
static void add_host_mirror_addresses(const struct hutch_build_options *o, char **allow, char ***addrs) {
  struct apt_source *sources = NULL;
  size_t n_sources = 0, n_addrs = 0;
  read_host_sources(&sources, &n_sources);
  *addrs = xcalloc(1, sizeof(**addrs));
  for (char **h = allow; *h; h++) {
    bool host_uses_it = false;
    for (size_t i = 0; i < n_sources && !host_uses_it; i++) {
      _cleanup_free_ char *host = apt_uri_host(sources[i].uri);
      host_uses_it = host && strcmp(host, *h) == 0;
    }
    if (!host_uses_it)
      continue;
    _cleanup_free_ char *name = xstrdup(*h);
    char *colon = strrchr(name, ':');
    if (colon && name[0] != '[')
      *colon = '\0';
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
    if (getaddrinfo(name, NULL, &hints, &res) != 0)
      continue;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
      const char *cls = net_address_class(ai->ai_addr);
      if (cls == NULL)
        continue;
      char text[INET6_ADDRSTRLEN];
      net_address_format(ai->ai_addr, text, sizeof(text));
      _cleanup_free_ char *cidr = xasprintf("%s/%d", text, ai->ai_family == AF_INET ? 32 : 128);
      size_t before = n_addrs;
      env_set(addrs, &n_addrs, cidr);
      if (n_addrs > before)
        SAY(o, "%s resolves to %s (%s); allowed for this build because this machine's apt uses it", name, text, cls);
    }
    freeaddrinfo(res);
  }
  apt_sources_free(sources, n_sources);
}

/* ---- running the recipe --------------------------------------------------- */

/* A signal between steps must not kill hutch and leave the build's sandbox
 * running: it ends the build at the next step boundary.  During a step,
 * hutch_sandbox_exec() forwards it to the step. */
static volatile sig_atomic_t interrupted;
static void on_signal(int sig) {
  interrupted = sig;
}
static void catch_signals(void) {
  struct sigaction sa = {.sa_handler = on_signal};
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
}

/* Runs every step; returns 0, the failing step's exit code (> 0), or -1. */
static int run_steps(struct hutch_sandbox *sb, const struct hutch_build_options *o, const struct recipe *rcp,
                     char ***image_env, size_t *n_image_env, hutch_error_t *err) {
  const char *origin = o->recipe;
  double timeout = o->step_timeout > 0 ? o->step_timeout : BUILD_STEP_DEFAULT_TIMEOUT;
  struct build_output out;
  build_output_init(&out, o->output_fd, -1, o->step_log_max, o->log_max);
  _cleanup_close_ int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  _cleanup_strv_ char **step_env = NULL;
  size_t n_step_env = 0;
  /* Packages install without questions, and pip may write where the
   * distribution's Python lives (the image is ours to shape). */
  env_set(&step_env, &n_step_env, "DEBIAN_FRONTEND=noninteractive");
  env_set(&step_env, &n_step_env, "PIP_BREAK_SYSTEM_PACKAGES=1");
  env_set(&step_env, &n_step_env, "PIP_ROOT_USER_ACTION=ignore");
  bool apt_updated = false;
  for (size_t i = 0; i < rcp->n_steps; i++) {
    const struct recipe_step *st = &rcp->steps[i];
    if (interrupted) {
      SAY(o, "interrupted by signal %d before step %zu; no image was made", (int)interrupted, i + 1);
      return 128 + interrupted;
    }
    _cleanup_free_ char *desc = recipe_step_describe(st);
    SAY(o, "step %zu/%zu (%s:%d): %s", i + 1, rcp->n_steps, origin, st->line, desc);
    if (st->kind == RECIPE_ENV) {
      env_set(&step_env, &n_step_env, st->args[0]);
      env_set(image_env, n_image_env, st->args[0]);
      continue;
    }
    _cleanup_free_ char *script = recipe_step_script(st, st->kind == RECIPE_APT && !apt_updated);
    if (st->kind == RECIPE_APT)
      apt_updated = true;
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    struct hutch_process proc = {
        .argv = argv,
        .env = (const char *const *)step_env,
        .workdir = "/",
        .stdio = {devnull},
    };
    struct hutch_exit ex = {0};
    double t0 = monotonic_seconds();
    if (build_step_exec(sb, &proc, timeout, &out, &ex, err) < 0)
      return hutch_error_wrap(err, "step %zu (%s:%d)", i + 1, origin, st->line);
    int code = hutch_exit_code(&ex);
    if (code != 0) {
      SAY(o, "step %zu (%s:%d) failed: %s %d%s%s; no image was made", i + 1, origin, st->line,
          ex.signal ? "killed by signal" : "exit status", ex.signal ? ex.signal : ex.status, ex.failure[0] ? ": " : "",
          ex.failure);
      return code;
    }
    hutch_debug("step %zu took %.2f s", i + 1, monotonic_seconds() - t0);
  }
  if (apt_updated) {
    /* The package lists are tens of megabytes, stale within days, and
     * fetched again by the next `apt-get update`: not part of the image. */
    const char *argv[] = {"/bin/sh", "-c", "rm -rf /var/lib/apt/lists/* 2>/dev/null; true", NULL};
    struct hutch_process proc = {.argv = argv, .workdir = "/", .stdio = {devnull}};
    struct hutch_exit ex = {0};
    if (build_step_exec(sb, &proc, timeout, &out, &ex, err) < 0)
      return hutch_error_wrap(err, "remove the apt lists");
  }
  return 0;
}

int hutch_image_build(const char *store_path, const struct hutch_build_options *o, struct hutch_build_result *out,
                      hutch_error_t *err) {
  _cleanup_free_ char *recipe_text = read_file_at(AT_FDCWD, o->recipe, 1 << 20, NULL);
  if (recipe_text == NULL)
    return hutch_error_sys(err, "read the recipe %s", o->recipe);
  struct recipe rcp = {0};
  if (recipe_parse(recipe_text, o->recipe, &rcp, err) < 0)
    return -1;

  struct hutch_store *store = NULL;
  struct hutch_policy *policy = NULL;
  struct hutch_image base = {0};
  struct store_stage stage = {.fd = -1};
  struct hutch_sandbox *sb = NULL;
  _cleanup_strv_ char **allow = NULL;
  _cleanup_strv_ char **mirror_addrs = NULL;
  _cleanup_strv_ char **image_env = NULL;
  size_t n_allow = 0, n_image_env = 0;
  _cleanup_free_ char *state_dir = NULL, *digest = NULL;
  int ret = -1;

  catch_signals();
  if (hutch_store_open(store_path, &store, err) < 0) {
    ret = -1;
    goto out;
  }
  build_sweep_stale(store);
  if (hutch_policy_load(o->policy, &policy, err) < 0 || build_resolve_base(store, o, &base, err) < 0) {
    ret = -1;
    goto out;
  }
  if (build_check_depth(&base, err) < 0) {
    hutch_error_wrap(err, "build %s", o->name);
    ret = -1;
    goto out;
  }
  for (char **e = base.env; e && *e; e++)
    env_set(&image_env, &n_image_env, *e);

  bool net = o->net >= 0 ? o->net == HUTCH_NET_PROXY : recipe_needs_network(&rcp);
  allow = xcalloc(1, sizeof(*allow));
  for (char **h = rcp.allow; h && *h; h++)
    env_set(&allow, &n_allow, *h); /* no '=': a plain, de-duplicated list */
  if (net) {
    build_add_archive_hosts(&base, &allow, &n_allow);
    if (o->net_policy == NULL)
      add_host_mirror_addresses(o, allow, &mirror_addrs);
  }

  /* The sandbox's state (and so its upper directory, the new layer) lives
   * inside the stage: one rename moves the layer into place. */
  if (store_stage_begin(store, &stage, err) < 0) {
    ret = -1;
    goto out;
  }
  state_dir = xasprintf("%s/tmp/%s/state", hutch_store_path(store), stage.name);
  const struct idmap_set *maps = NULL;
  if (idmap_for_caller(&maps, NULL) < 0)
    maps = NULL;
  struct hutch_sandbox_config cfg = {
      .rootfs = base.rootfs,
      .rootfs_lowers = (const char *const *)base.lowers,
      .image = base.name ? base.name : base.digest,
      /* Packages install files of system users and groups: map the whole
       * range where there is one, whatever the base holds. */
      .rootfs_subordinate_ids = base.ids_preserved || (maps && maps->kind != IDMAP_SINGLE),
      .build_caps = true,
      .policy = policy,
      .hostname = "build",
      .env = (const char *const *)base.env,
      .state_dir = state_dir,
      .net = net ? HUTCH_NET_PROXY : HUTCH_NET_NONE,
      .net_allow = (const char *const *)allow,
      .net_policy = net ? o->net_policy : NULL,
      .net_allow_address = (const char *const *)mirror_addrs,
      /* The build's own: it must not outlive a killed build, and nobody
       * else would remove it (its state is in the stage, not `hutch ps`'s;
       * build_sweep.c removes what it leaves on the host). */
      .die_with_creator = true,
  };
  if (net) {
    _cleanup_free_ char *hosts = xstrdup("");
    for (char **h = allow; *h; h++) {
      char *t = xasprintf("%s %s", hosts, *h);
      free(hosts);
      hosts = t;
    }
    SAY(o, "network through the proxy, allowed:%s", allow[0] ? hosts : " (nothing)");
  }
  if (hutch_sandbox_create(&cfg, &sb, err) < 0) {
    hutch_error_wrap(err, "build %s", o->name);
    ret = -1;
    goto out;
  }
  int r = run_steps(sb, o, &rcp, &image_env, &n_image_env, err);
  if (r < 0) {
    ret = -1;
    goto out;
  }
  if (r == 0 && interrupted) {
    SAY(o, "interrupted by signal %d; no image was made", (int)interrupted);
    r = 128 + interrupted;
  }
  if (r > 0) {
    ret = r;
    goto out;
  }

  /* The layer: the sandbox's upper directory, on its size-limited tmpfs,
   * copied into the stage while the sandbox idles; then the sandbox goes. */
  if (build_copy_sandbox_layer(sb, stage.rootfs, err) < 0) {
    hutch_error_wrap(err, "build %s", o->name);
    ret = -1;
    goto out;
  }
  build_prune_sandbox_files(stage.rootfs, &base, false);
  r = hutch_sandbox_destroy(sb, err);
  sb = NULL;
  if (r < 0 || remove_tree_at(stage.fd, "state") < 0) {
    if (err && *err == NULL)
      hutch_error_sys(err, "build %s: remove %s", o->name, state_dir);
    ret = -1;
    goto out;
  }
  struct build_tree_stats tree;
  build_tree_stats(stage.rootfs, &tree);
  char hex[SHA256_HEX_SIZE];
  build_layer_digest("hutch-rootfs-build", base.digest, recipe_text, hex);
  const struct idmap_set *meta_maps;
  if (idmap_for_caller(&meta_maps, err) < 0) {
    ret = -1;
    goto out;
  }
  cJSON *meta = build_layer_meta(hex, o->recipe, meta_maps, &base, &tree);
  cJSON_AddStringToObject(meta, "recipe", recipe_text);
  if (image_env && image_env[0])
    build_meta_image(meta, image_env, base.workdir);
  r = store_stage_commit(store, &stage, hex, meta, err);
  cJSON_Delete(meta);
  stage.fd = -1;
  digest = xasprintf("sha256:%s", hex);
  if (r < 0 || hutch_image_tag(store, digest, o->name, err) < 0) {
    ret = -1;
    goto out;
  }
  snprintf(out->digest, sizeof(out->digest), "%s", digest);
  snprintf(out->base, sizeof(out->base), "%s", base.name ? base.name : base.digest);
  out->size = tree.bytes;
  ret = 0;

out:
  if (sb) {
    _cleanup_error_ hutch_error_t e = NULL;
    if (hutch_sandbox_destroy(sb, &e) < 0)
      hutch_warn("build: %s", e->msg);
  }
  if (stage.fd >= 0)
    store_stage_abort(store, &stage);
  hutch_image_clear(&base);
  recipe_clear(&rcp);
  if (policy)
    hutch_policy_free(policy);
  if (store)
    hutch_store_close(store);
  return ret;
}
