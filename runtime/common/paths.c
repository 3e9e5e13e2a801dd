/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "paths.h"

#include <ctype.h>
#include <linux/limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hutch.h"
#include "util.h"

static const char *env_nonempty(const char *name) {
  const char *v = getenv(name);
  return v != NULL && v[0] == '/' ? v : NULL;
}

static const char *home_dir(void) {
  const char *h = env_nonempty("HOME");
  if (h)
    return h;
  struct passwd *pw = getpwuid(geteuid());
  return pw && pw->pw_dir ? pw->pw_dir : "/";
}

char *paths_default_store(void) {
  const char *v;
  if ((v = env_nonempty("HUTCH_STORE")))
    return xstrdup(v);
  if (geteuid() == 0)
    return xstrdup("/var/lib/hutch");
  if ((v = env_nonempty("XDG_DATA_HOME")))
    return xasprintf("%s/hutch", v);
  return xasprintf("%s/.local/share/hutch", home_dir());
}

char *paths_default_state(bool *shared_tmp) {
  const char *v;
  if (shared_tmp)
    *shared_tmp = false;
  if ((v = env_nonempty("HUTCH_STATE_DIR")))
    return xstrdup(v);
  if (geteuid() == 0)
    return xstrdup("/run/hutch");
  if ((v = env_nonempty("XDG_RUNTIME_DIR")))
    return xasprintf("%s/hutch", v);
  /* No login session (su, cron, CI): a directory in /tmp, where anyone may
   * have made that name first; state.c then uses paths_state_fallback(). */
  if (shared_tmp)
    *shared_tmp = true;
  const char *tmp = env_nonempty("TMPDIR");
  return xasprintf("%s/hutch-%d", tmp ? tmp : "/tmp", (int)geteuid());
}

char *paths_state_fallback(void) {
  const char *v;
  if ((v = env_nonempty("XDG_STATE_HOME")))
    return xasprintf("%s/hutch/run", v);
  return xasprintf("%s/.local/state/hutch/run", home_dir());
}

char *paths_user_config(void) {
  const char *v;
  if ((v = env_nonempty("XDG_CONFIG_HOME")))
    return xasprintf("%s/hutch", v);
  return xasprintf("%s/.config/hutch", home_dir());
}

char *paths_default_cache(void) {
  const char *v;
  if ((v = env_nonempty("HUTCH_CACHE_DIR")))
    return xstrdup(v);
  if (geteuid() == 0)
    return xstrdup("/var/cache/hutch");
  if ((v = env_nonempty("XDG_CACHE_HOME")))
    return xasprintf("%s/hutch", v);
  return xasprintf("%s/.cache/hutch", home_dir());
}

/* The binary runs from the build tree it was built in (not from the bindir
 * it installs to): the source tree beside it holds its policies, prompts and
 * image manifests, of the same version as its code.  Only that exact
 * configure-time directory counts, never "whatever lies beside the binary":
 * an installed hutch must not take a policy planted next to it. */
static bool running_uninstalled(void) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n <= 0)
    return false;
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (slash == NULL)
    return false;
  *slash = '\0';
  /* The installed binary, the common case, costs no more lookups. */
  if (strcmp(exe, HUTCH_BINDIR) == 0)
    return false;
  _cleanup_free_ char *build = realpath(HUTCH_BUILDDIR, NULL);
  if (build == NULL || strcmp(exe, build) != 0)
    return false;
  _cleanup_free_ char *bin = realpath(HUTCH_BINDIR, NULL);
  if (bin != NULL && strcmp(exe, bin) == 0)
    return false;
  struct stat st;
  return stat(HUTCH_SRCDIR "/policies/default.policy", &st) == 0 && S_ISREG(st.st_mode);
}

const char *hutch_data_dir(void) {
  static int uninstalled = -1;
  if (uninstalled < 0)
    uninstalled = running_uninstalled();
  return uninstalled ? HUTCH_SRCDIR : HUTCH_DATADIR;
}

char *paths_default_policy(void) {
  const char *v;
  if ((v = env_nonempty("HUTCH_POLICY")))
    return xstrdup(v);
  /* A build tree's own policy goes with its code; the administrator's
   * copy is for the installed hutch. */
  if (strcmp(hutch_data_dir(), HUTCH_DATADIR) != 0)
    return xasprintf("%s/policies/default.policy", hutch_data_dir());
  /* The administrator's copy wins over the packaged one. */
  struct stat st;
  _cleanup_free_ char *etc = xasprintf("%s/default.policy", HUTCH_SYSCONFDIR);
  if (stat(etc, &st) == 0)
    return steal_pointer(&etc);
  return xasprintf("%s/policies/default.policy", HUTCH_DATADIR);
}

bool paths_valid_name(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n > 128 || !isalnum((unsigned char)name[0]))
    return false;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)name[i];
    if (!isalnum(c) && c != '.' && c != '_' && c != '-' && c != ':')
      return false;
  }
  return strstr(name, "..") == NULL;
}

char *paths_normalize_inside(const char *path) {
  if (path == NULL || path[0] != '/')
    return NULL;
  size_t n = strlen(path);
  char *out = xmalloc(n + 2);
  size_t o = 0;
  const char *p = path;
  while (*p) {
    while (*p == '/')
      p++;
    if (!*p)
      break;
    const char *end = strchr(p, '/');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == 1 && p[0] == '.') {
      /* skip */
    } else if (len == 2 && p[0] == '.' && p[1] == '.') {
      free(out);
      return NULL;
    } else {
      out[o++] = '/';
      memcpy(out + o, p, len);
      o += len;
    }
    p += len;
  }
  if (o == 0)
    out[o++] = '/';
  out[o] = '\0';
  return out;
}

bool paths_next_name(const char *path, size_t *at, size_t *start) {
  while (path[*at] == '/')
    (*at)++;
  if (path[*at] == '\0')
    return false;
  *start = *at;
  while (path[*at] != '\0' && path[*at] != '/')
    (*at)++;
  return true;
}

bool paths_led_into(const char *real, const char *named, const char *dir) {
  size_t n = strlen(dir);
  bool inside = strncmp(real, dir, n) == 0 && (real[n] == '\0' || real[n] == '/');
  return inside && strcmp(real, named) != 0;
}
