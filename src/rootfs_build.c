/* hutch rootfs build: run a recipe (hutch-recipe(5)) in a sandbox on a base
 * image and keep what it changed as a new image: a layer of its own, stacked
 * on the base's tree by overlayfs, never a copy of it. */
#include "config.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "apt_sources.h"
#include "cli.h"
#include "download.h"
#include "idmap.h"
#include "manifest.h"
#include "paths.h"
#include "recipe.h"
#include "rootfs.h"
#include "store.h"
#include "util.h"

static const char build_usage[] = "Usage: hutch rootfs build --from IMAGE --recipe FILE --name NAME [OPTIONS]\n"
                                  "\n"
                                  "Run the steps of a recipe (hutch-recipe(5)) in a sandbox started on IMAGE,\n"
                                  "and keep what they changed as a new image NAME: a layer stacked on IMAGE,\n"
                                  "which stays shared.  Each step's output is shown as it runs; a failing step\n"
                                  "stops the build with its exit status and leaves no image behind.\n"
                                  "\n"
                                  "IMAGE is an image in the store, or an image manifest's name (ubuntu:24.04),\n"
                                  "which is pulled first.  When that download fails for want of a network and\n"
                                  "the manifest names a Debian fallback, the base is bootstrapped from Debian\n"
                                  "with mmdebstrap from the mirror in this machine's apt sources instead.\n"
                                  "\n"
                                  "Options:\n"
                                  "  --from IMAGE     the base image\n"
                                  "  --recipe FILE    the recipe\n"
                                  "  -n, --name NAME  the new image's name (moves the name if it is in use)\n"
                                  "  --net MODE       proxy: the steps reach the archive hosts of the image's\n"
                                  "                   apt sources and the recipe's `allow` hosts through\n"
                                  "                   hutch's proxy; none: loopback only (default: proxy when\n"
                                  "                   the recipe has apt, pip or allow lines, else none)\n"
                                  "  --net-policy FILE  a policy whose [network] section replaces the policy's\n"
                                  "                   (e.g. allow_address for a mirror on a private address)\n"
                                  "  --arch ARCH      the architecture of a base that is pulled\n"
                                  "  --policy FILE    the sandbox policy (default: $HUTCH_POLICY or the\n"
                                  "                   installed one)\n"
                                  "  --store DIR      the store\n"
                                  "  -h, --help       show this help\n";

enum { OPT_STORE = 256, OPT_FROM, OPT_RECIPE, OPT_NET, OPT_ARCH, OPT_POLICY, OPT_NET_POLICY };

struct build_opts {
  const char *from, *recipe_path, *name, *arch, *policy, *store, *net_policy;
  int net; /* -1: decide from the recipe */
};

/* ---- the base image ------------------------------------------------------ */

static int read_host_sources(struct apt_source **list, size_t *n) {
  static const char *const dirs[] = {"/etc/apt/sources.list.d"};
  _cleanup_free_ char *main_list = read_file_at(AT_FDCWD, "/etc/apt/sources.list", 1 << 20, NULL);
  if (main_list)
    apt_sources_parse(main_list, false, list, n);
  for (size_t d = 0; d < ARRAY_SIZE(dirs); d++) {
    _cleanup_dir_ DIR *dir = opendir(dirs[d]);
    struct dirent *de;
    while (dir && (de = readdir(dir)) != NULL) {
      size_t len = strlen(de->d_name);
      bool deb822 = len > 8 && strcmp(de->d_name + len - 8, ".sources") == 0;
      bool oneline = len > 5 && strcmp(de->d_name + len - 5, ".list") == 0;
      if (!deb822 && !oneline)
        continue;
      _cleanup_free_ char *path = xasprintf("%s/%s", dirs[d], de->d_name);
      _cleanup_free_ char *text = read_file_at(AT_FDCWD, path, 1 << 20, NULL);
      if (text)
        apt_sources_parse(text, deb822, list, n);
    }
  }
  return 0;
}

static char *find_in_path(const char *prog) {
  const char *path = getenv("PATH");
  _cleanup_free_ char *copy = xstrdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin");
  char *save = NULL;
  for (char *dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
    char *full = xasprintf("%s/%s", dir, prog);
    if (access(full, X_OK) == 0)
      return full;
    free(full);
  }
  return NULL;
}

/* No internet (Ubuntu's servers unreachable): a Debian base from the mirror
 * this machine's apt already uses, by mmdebstrap. */
static int debian_fallback(struct hutch_store *store, const char *suite, struct hutch_image *out, hutch_error_t *err) {
  _cleanup_free_ char *mmdebstrap = find_in_path("mmdebstrap");
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
  fprintf(stderr, "%s: building a Debian %s base with mmdebstrap from %s (this machine's apt sources)\n",
          hutch_program_name, suite, mirror);
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
    /* Its chatter is progress for people: stderr, keeping stdout for the digest. */
    dup2(STDERR_FILENO, STDOUT_FILENO);
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

static int resolve_base(struct hutch_store *store, const struct build_opts *o, struct hutch_image *base,
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
  fprintf(stderr, "%s: %s is not in the store: pulling it\n", hutch_program_name, o->from);
  _cleanup_error_ hutch_error_t pe = NULL;
  int r = rootfs_pull_manifest(store, o->from, o->arch, NULL, base, &pe);
  if (r >= 0) {
    manifest_clear(&m);
    return 0;
  }
  if (!download_network_error(pe) || m.fallback_suite == NULL) {
    manifest_clear(&m);
    hutch_error_move(err, &pe);
    return -1;
  }
  fprintf(stderr, "%s: %s: %s\n%s: no network to download %s: falling back to Debian %s, built locally\n",
          hutch_program_name, pe->msg, strerror(pe->errnum), hutch_program_name, o->from, m.fallback_suite);
  r = debian_fallback(store, m.fallback_suite, base, err);
  manifest_clear(&m);
  return r;
}

/* ---- the network a build needs ------------------------------------------- */

/* The first copy of `rel` in the image's layers, top down. */
static char *image_read(const struct hutch_image *img, const char *rel) {
  char *text = NULL;
  for (size_t i = 0; text == NULL && (i == 0 || (img->lowers && img->lowers[i - 1])); i++) {
    const char *tree = i == 0 ? img->rootfs : img->lowers[i - 1];
    _cleanup_free_ char *path = xasprintf("%s/%s", tree, rel);
    text = read_file_at(AT_FDCWD, path, 1 << 20, NULL);
  }
  return text;
}

/* The archive hosts of the image's apt sources, added to allow (NULL-terminated). */
static void add_archive_hosts(const struct hutch_image *img, char ***allow, size_t *n_allow) {
  struct apt_source *list = NULL;
  size_t n = 0;
  _cleanup_free_ char *main_list = image_read(img, "etc/apt/sources.list");
  if (main_list)
    apt_sources_parse(main_list, false, &list, &n);
  for (size_t i = 0; i == 0 || (img->lowers && img->lowers[i - 1]); i++) {
    const char *tree = i == 0 ? img->rootfs : img->lowers[i - 1];
    _cleanup_free_ char *dir = xasprintf("%s/etc/apt/sources.list.d", tree);
    _cleanup_dir_ DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d)) != NULL) {
      size_t len = strlen(de->d_name);
      bool deb822 = len > 8 && strcmp(de->d_name + len - 8, ".sources") == 0;
      if (!deb822 && !(len > 5 && strcmp(de->d_name + len - 5, ".list") == 0))
        continue;
      _cleanup_free_ char *path = xasprintf("%s/%s", dir, de->d_name);
      _cleanup_free_ char *text = read_file_at(AT_FDCWD, path, 1 << 20, NULL);
      if (text)
        apt_sources_parse(text, deb822, &list, &n);
    }
  }
  for (size_t i = 0; i < n; i++) {
    char *host = apt_uri_host(list[i].uri);
    bool dup = host == NULL;
    for (size_t j = 0; !dup && j < *n_allow; j++)
      dup = strcmp((*allow)[j], host) == 0;
    if (dup) {
      free(host);
      continue;
    }
    *allow = xrealloc(*allow, (*n_allow + 2) * sizeof(**allow));
    (*allow)[(*n_allow)++] = host;
    (*allow)[*n_allow] = NULL;
  }
  apt_sources_free(list, n);
}

/* ---- freezing the layer --------------------------------------------------- */

/* Whether `rel` is a regular file somewhere in the image's layers. */
static bool image_has_file(const struct hutch_image *img, const char *rel) {
  for (size_t i = 0; i == 0 || (img->lowers && img->lowers[i - 1]); i++) {
    const char *tree = i == 0 ? img->rootfs : img->lowers[i - 1];
    _cleanup_free_ char *path = xasprintf("%s/%s", tree, rel);
    struct stat st;
    if (lstat(path, &st) == 0)
      return S_ISREG(st.st_mode);
  }
  return false;
}

/* What the sandbox itself put in its upper layer is about that one sandbox
 * (its proxy's address, its name servers): it must not become part of the
 * image.  The tool configurations carry hutch's marker; /etc/hosts and
 * /etc/resolv.conf are the sandbox's when the base has no such file. */
static void prune_sandbox_files(const char *upper, const struct hutch_image *base) {
  static const char *const marked[] = {"etc/apt/apt.conf.d/00hutch-proxy", "etc/pip.conf", "etc/gitconfig"};
  for (size_t i = 0; i < ARRAY_SIZE(marked); i++) {
    _cleanup_free_ char *path = xasprintf("%s/%s", upper, marked[i]);
    _cleanup_free_ char *text = read_file_at(AT_FDCWD, path, 4096, NULL);
    if (text && (strncmp(text, "// Written by hutch", 19) == 0 || strncmp(text, "# Written by hutch", 18) == 0))
      unlink(path);
  }
  static const char *const provided[] = {"etc/hosts", "etc/resolv.conf"};
  for (size_t i = 0; i < ARRAY_SIZE(provided); i++) {
    if (image_has_file(base, provided[i]))
      continue;
    _cleanup_free_ char *path = xasprintf("%s/%s", upper, provided[i]);
    unlink(path);
  }
}

static uint64_t tree_bytes;
static bool tree_foreign_ids; /* an entry belongs to another user or group than ours (a subordinate id) */
static int count_file(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  if (flag == FTW_F && S_ISREG(st->st_mode))
    tree_bytes += (uint64_t)st->st_size;
  if (st->st_uid != geteuid() || st->st_gid != getegid())
    tree_foreign_ids = true;
  return 0;
}

/* A built image has no archive to hash: its key is the hash of what made it
 * (base, recipe) and of when, so two builds never collide. */
static void layer_digest(const char *base_digest, const char *recipe_text, char hex[SHA256_HEX_SIZE]) {
  struct sha256_ctx ctx;
  sha256_init(&ctx);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint8_t rnd[16] = {0};
  if (getrandom(rnd, sizeof(rnd), 0) < 0)
    memset(rnd, 0, sizeof(rnd));
  _cleanup_free_ char *head =
      xasprintf("hutch-rootfs-build\n%s\n%lld.%09ld\n", base_digest, (long long)ts.tv_sec, ts.tv_nsec);
  sha256_update(&ctx, head, strlen(head));
  sha256_update(&ctx, rnd, sizeof(rnd));
  sha256_update(&ctx, recipe_text, strlen(recipe_text));
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_final(&ctx, d);
  sha256_hex(d, hex);
}

/* "…/images/sha256-HEX/rootfs" -> "sha256:HEX" */
static char *tree_digest(const char *tree) {
  const char *p = strstr(tree, "/images/sha256-");
  if (p == NULL)
    return NULL;
  p += strlen("/images/sha256-");
  return xasprintf("sha256:%.*s", SHA256_HEX_SIZE - 1, p);
}

static cJSON *layer_meta(const char *hex, const struct build_opts *o, const char *recipe_text,
                         const struct hutch_image *base, char **env, hutch_error_t *err) {
  const struct idmap_set *maps;
  if (idmap_for_caller(&maps, err) < 0)
    return NULL;
  struct unpack_stats stats = {0};
  cJSON *j = store_meta_new(hex, o->recipe_path, maps, &stats);
  cJSON_ReplaceItemInObjectCaseSensitive(j, "size", cJSON_CreateNumber((double)tree_bytes));
  /* Owners other than the caller need the subordinate range to run, in the
   * layer as in the base. */
  cJSON_ReplaceItemInObjectCaseSensitive(j, "ids_preserved", cJSON_CreateBool(base->ids_preserved || tree_foreign_ids));
  cJSON *lowers = cJSON_AddArrayToObject(j, "lowers");
  cJSON_AddItemToArray(lowers, cJSON_CreateString(base->digest));
  for (char **l = base->lowers; l && *l; l++) {
    _cleanup_free_ char *d = tree_digest(*l);
    if (d)
      cJSON_AddItemToArray(lowers, cJSON_CreateString(d));
  }
  cJSON_AddStringToObject(j, "built_from", base->name ? base->name : base->digest);
  cJSON_AddStringToObject(j, "recipe", recipe_text);
  if (env && env[0]) {
    cJSON *img = cJSON_AddObjectToObject(j, "image");
    cJSON *arr = cJSON_AddArrayToObject(img, "env");
    for (char **e = env; *e; e++)
      cJSON_AddItemToArray(arr, cJSON_CreateString(*e));
    if (base->workdir)
      cJSON_AddStringToObject(img, "workdir", base->workdir);
  }
  return j;
}

/* ---- running the recipe --------------------------------------------------- */

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
static int run_steps(struct hutch_sandbox *sb, const struct recipe *rcp, const char *origin, char ***image_env,
                     size_t *n_image_env, hutch_error_t *err) {
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
      fprintf(stderr, "%s: interrupted by signal %d before step %zu; no image was made\n", hutch_program_name,
              (int)interrupted, i + 1);
      return 128 + interrupted;
    }
    _cleanup_free_ char *desc = recipe_step_describe(st);
    fprintf(stderr, "%s: step %zu/%zu (%s:%d): %s\n", hutch_program_name, i + 1, rcp->n_steps, origin, st->line, desc);
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
        /* Output goes to stderr: stdout carries only the new image's digest. */
        .stdio = {devnull, STDERR_FILENO, STDERR_FILENO},
    };
    struct hutch_exit ex = {0};
    double t0 = monotonic_seconds();
    if (hutch_sandbox_exec(sb, &proc, &ex, err) < 0)
      return hutch_error_wrap(err, "step %zu (%s:%d)", i + 1, origin, st->line);
    int code = hutch_exit_code(&ex);
    if (code != 0) {
      fprintf(stderr, "%s: step %zu (%s:%d) failed: %s %d%s%s; no image was made\n", hutch_program_name, i + 1, origin,
              st->line, ex.signal ? "killed by signal" : "exit status", ex.signal ? ex.signal : ex.status,
              ex.failure[0] ? ": " : "", ex.failure);
      return code;
    }
    hutch_debug("step %zu took %.2f s", i + 1, monotonic_seconds() - t0);
  }
  if (apt_updated) {
    /* The package lists are tens of megabytes, stale within days, and
     * fetched again by the next `apt-get update`: not part of the image. */
    const char *argv[] = {"/bin/sh", "-c", "rm -rf /var/lib/apt/lists/* 2>/dev/null; true", NULL};
    struct hutch_process proc = {.argv = argv, .workdir = "/", .stdio = {devnull, STDERR_FILENO, STDERR_FILENO}};
    struct hutch_exit ex = {0};
    if (hutch_sandbox_exec(sb, &proc, &ex, err) < 0)
      return hutch_error_wrap(err, "remove the apt lists");
  }
  return 0;
}

static int build(const struct build_opts *o, char **digest_out) {
  _cleanup_error_ hutch_error_t err = NULL;
  _cleanup_free_ char *recipe_text = read_file_at(AT_FDCWD, o->recipe_path, 1 << 20, NULL);
  if (recipe_text == NULL) {
    hutch_error_sys(&err, "read the recipe %s", o->recipe_path);
    return cli_fail(&err);
  }
  struct recipe rcp = {0};
  if (recipe_parse(recipe_text, o->recipe_path, &rcp, &err) < 0)
    return cli_fail(&err);

  struct hutch_store *store = NULL;
  struct hutch_policy *policy = NULL;
  struct hutch_image base = {0};
  struct store_stage stage = {.fd = -1};
  struct hutch_sandbox *sb = NULL;
  _cleanup_strv_ char **allow = NULL;
  _cleanup_strv_ char **image_env = NULL;
  size_t n_allow = 0, n_image_env = 0;
  _cleanup_free_ char *state_dir = NULL, *upper = NULL, *digest = NULL;
  int ret = EXIT_RUNTIME;

  catch_signals();
  if (hutch_store_open(o->store, &store, &err) < 0 || hutch_policy_load(o->policy, &policy, &err) < 0 ||
      resolve_base(store, o, &base, &err) < 0) {
    ret = cli_fail(&err);
    goto out;
  }
  for (char **e = base.env; e && *e; e++)
    env_set(&image_env, &n_image_env, *e);

  bool net = o->net >= 0 ? o->net == HUTCH_NET_PROXY : recipe_needs_network(&rcp);
  allow = xcalloc(1, sizeof(*allow));
  for (char **h = rcp.allow; h && *h; h++)
    env_set(&allow, &n_allow, *h); /* no '=': a plain, de-duplicated list */
  if (net)
    add_archive_hosts(&base, &allow, &n_allow);

  /* The sandbox's state (and so its upper directory, the new layer) lives
   * inside the stage: one rename moves the layer into place. */
  if (store_stage_begin(store, &stage, &err) < 0) {
    ret = cli_fail(&err);
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
  };
  if (net) {
    fprintf(stderr, "%s: network through the proxy, allowed:", hutch_program_name);
    for (char **h = allow; *h; h++)
      fprintf(stderr, " %s", *h);
    fprintf(stderr, "%s\n", allow[0] ? "" : " (nothing)");
  }
  if (hutch_sandbox_create(&cfg, &sb, &err) < 0) {
    hutch_error_wrap(&err, "build %s", o->name);
    ret = cli_fail(&err);
    goto out;
  }
  int r = run_steps(sb, &rcp, o->recipe_path, &image_env, &n_image_env, &err);
  if (r < 0) {
    ret = cli_fail(&err);
    goto out;
  }
  if (r == 0 && interrupted) {
    fprintf(stderr, "%s: interrupted by signal %d; no image was made\n", hutch_program_name, (int)interrupted);
    r = 128 + interrupted;
  }
  if (r > 0) {
    ret = r;
    goto out;
  }

  /* The layer: the sandbox's upper directory, moved into the stage while the
   * sandbox idles (overlayfs keeps its own references), then the sandbox goes. */
  upper = xasprintf("%s/%s/upper", state_dir, hutch_sandbox_id(sb));
  prune_sandbox_files(upper, &base);
  if (rmdir(stage.rootfs) < 0 || rename(upper, stage.rootfs) < 0) {
    hutch_error_sys(&err, "build %s: move the layer %s to %s", o->name, upper, stage.rootfs);
    ret = cli_fail(&err);
    goto out;
  }
  r = hutch_sandbox_destroy(sb, &err);
  sb = NULL;
  if (r < 0 || remove_tree_at(stage.fd, "state") < 0) {
    if (err == NULL)
      hutch_error_sys(&err, "build %s: remove %s", o->name, state_dir);
    ret = cli_fail(&err);
    goto out;
  }
  tree_bytes = 0;
  tree_foreign_ids = false;
  nftw(stage.rootfs, count_file, 16, FTW_PHYS);
  char hex[SHA256_HEX_SIZE];
  layer_digest(base.digest, recipe_text, hex);
  cJSON *meta = layer_meta(hex, o, recipe_text, &base, image_env, &err);
  if (meta == NULL) {
    ret = cli_fail(&err);
    goto out;
  }
  r = store_stage_commit(store, &stage, hex, meta, &err);
  cJSON_Delete(meta);
  stage.fd = -1;
  digest = xasprintf("sha256:%s", hex);
  if (r < 0 || hutch_image_tag(store, digest, o->name, &err) < 0) {
    ret = cli_fail(&err);
    goto out;
  }
  char size[16];
  cli_format_size(tree_bytes, size, sizeof(size));
  fprintf(stderr, "%s: built %s: sha256:%.12s, a %s layer on %s\n", hutch_program_name, o->name, hex, size,
          base.name ? base.name : base.digest);
  *digest_out = steal_pointer(&digest);
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

int rootfs_build(int argc, char **argv, const char *store_path) {
  static const struct option longopts[] = {
      {"from", required_argument, NULL, OPT_FROM},
      {"recipe", required_argument, NULL, OPT_RECIPE},
      {"name", required_argument, NULL, 'n'},
      {"net", required_argument, NULL, OPT_NET},
      {"arch", required_argument, NULL, OPT_ARCH},
      {"policy", required_argument, NULL, OPT_POLICY},
      {"store", required_argument, NULL, OPT_STORE},
      {"net-policy", required_argument, NULL, OPT_NET_POLICY},
      {"help", no_argument, NULL, 'h'},
      {0},
  };
  struct build_opts o = {.store = store_path, .net = -1};
  int c;
  optind = 0;
  while ((c = getopt_long(argc, argv, ":n:h", longopts, NULL)) != -1) {
    switch (c) {
    case OPT_FROM:
      o.from = optarg;
      break;
    case OPT_RECIPE:
      o.recipe_path = optarg;
      break;
    case 'n':
      o.name = optarg;
      break;
    case OPT_NET:
      if (strcmp(optarg, "proxy") == 0)
        o.net = HUTCH_NET_PROXY;
      else if (strcmp(optarg, "none") == 0)
        o.net = HUTCH_NET_NONE;
      else
        return cli_usage_error("rootfs build", "--net takes proxy or none, not \"%s\"", optarg);
      break;
    case OPT_ARCH:
      o.arch = optarg;
      break;
    case OPT_POLICY:
      o.policy = optarg;
      break;
    case OPT_NET_POLICY:
      o.net_policy = optarg;
      break;
    case OPT_STORE:
      o.store = optarg;
      break;
    case 'h':
      fputs(build_usage, stdout);
      return 0;
    case ':':
      return cli_usage_error("rootfs build", "option %s needs an argument", argv[optind - 1]);
    default:
      return cli_usage_error("rootfs build", "unknown option %s", argv[optind - 1]);
    }
  }
  if (optind < argc)
    return cli_usage_error("rootfs build", "unexpected argument \"%s\"", argv[optind]);
  if (o.from == NULL || o.recipe_path == NULL || o.name == NULL)
    return cli_usage_error("rootfs build", "--from IMAGE, --recipe FILE and --name NAME are all needed");
  if (!paths_valid_name(o.name))
    return cli_usage_error("rootfs build", "\"%s\" is not a valid image name", o.name);
  _cleanup_free_ char *digest = NULL;
  int r = build(&o, &digest);
  if (r == 0)
    printf("%s\n", digest);
  return r;
}
