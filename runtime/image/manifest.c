/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "manifest.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/utsname.h>

#include "hutch.h"
#include "util.h"

#define MANIFEST_MAX_SIZE (64 * 1024)

void manifest_clear(struct manifest *m) {
  if (m == NULL)
    return;
  free(m->name);
  free(m->description);
  free(m->fallback_distro);
  free(m->fallback_suite);
  for (size_t i = 0; i < m->n_sources; i++) {
    free(m->sources[i].arch);
    free(m->sources[i].url);
  }
  free(m->sources);
  memset(m, 0, sizeof(*m));
}

static bool valid_word(const char *s, const char *extra) {
  if (*s == '\0')
    return false;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && strchr(extra, *s) == NULL)
      return false;
  return true;
}

static bool valid_sha256(const char *s) {
  if (strlen(s) != SHA256_HEX_SIZE - 1)
    return false;
  for (; *s; s++)
    if (!isxdigit((unsigned char)*s))
      return false;
  return true;
}

/* Split a line into at most `max` whitespace-separated words; the last word
 * takes the rest of the line when `rest` is true.  Returns the count. */
static size_t split(char *line, char **words, size_t max, bool rest) {
  size_t n = 0;
  char *p = line;
  while (n < max) {
    while (*p == ' ' || *p == '\t')
      p++;
    if (*p == '\0')
      break;
    words[n++] = p;
    if (rest && n == max) {
      size_t len = strlen(p);
      while (len > 0 && (p[len - 1] == ' ' || p[len - 1] == '\t'))
        p[--len] = '\0';
      break;
    }
    while (*p && *p != ' ' && *p != '\t')
      p++;
    if (*p)
      *p++ = '\0';
  }
  /* Anything left over is an extra word: report it as one more. */
  if (!rest && n == max) {
    while (*p == ' ' || *p == '\t')
      p++;
    if (*p)
      n++;
  }
  return n;
}

int manifest_parse(const char *text, const char *origin, struct manifest *out, hutch_error_t *err) {
  struct manifest m = {0};
  _cleanup_free_ char *copy = xstrdup(text);
  int lineno = 0;
  char *line = copy;
  int ret = 0;
  while (line) {
    char *next = strchr(line, '\n');
    if (next)
      *next++ = '\0';
    lineno++;
    size_t len = strlen(line);
    if (len > 0 && line[len - 1] == '\r')
      line[--len] = '\0';
    char *p = line;
    while (*p == ' ' || *p == '\t')
      p++;
    if (*p == '\0' || *p == '#') {
      line = next;
      continue;
    }
    char *w[5];
    char *keyword = p;
    while (*p && *p != ' ' && *p != '\t')
      p++;
    if (*p)
      *p++ = '\0';
    if (strcmp(keyword, "name") == 0) {
      size_t n = split(p, w, 1, false);
      if (n != 1 || !valid_word(w[0], "._:-")) {
        ret = hutch_error_set(err, EINVAL, "%s:%d: `name` takes one image reference such as ubuntu:24.04", origin,
                              lineno);
        break;
      }
      if (m.name) {
        ret = hutch_error_set(err, EINVAL, "%s:%d: a second `name` line", origin, lineno);
        break;
      }
      m.name = xstrdup(w[0]);
    } else if (strcmp(keyword, "description") == 0) {
      if (split(p, w, 1, true) != 1) {
        ret = hutch_error_set(err, EINVAL, "%s:%d: `description` needs text", origin, lineno);
        break;
      }
      free(m.description);
      m.description = xstrdup(w[0]);
    } else if (strcmp(keyword, "arch") == 0) {
      size_t n = split(p, w, 3, false);
      if (n != 3) {
        ret = hutch_error_set(err, EINVAL, "%s:%d: `arch` takes ARCH URL SHA256 (got %zu words)", origin, lineno, n);
        break;
      }
      const char *digest = strncmp(w[2], "sha256:", 7) == 0 ? w[2] + 7 : w[2];
      if (!valid_word(w[0], "_-")) {
        ret = hutch_error_set(err, EINVAL, "%s:%d: \"%s\" is not an architecture name", origin, lineno, w[0]);
        break;
      }
      if (strncmp(w[1], "https://", 8) != 0 && strncmp(w[1], "http://", 7) != 0) {
        ret = hutch_error_set(err, EINVAL, "%s:%d: the URL \"%s\" is not http:// or https://", origin, lineno, w[1]);
        break;
      }
      if (!valid_sha256(digest)) {
        ret =
            hutch_error_set(err, EINVAL, "%s:%d: \"%s\" is not a sha256 digest (64 hex digits)", origin, lineno, w[2]);
        break;
      }
      if (manifest_find_arch(&m, w[0])) {
        ret = hutch_error_set(err, EINVAL, "%s:%d: a second `arch %s` line", origin, lineno, w[0]);
        break;
      }
      m.sources = xrealloc(m.sources, (m.n_sources + 1) * sizeof(*m.sources));
      struct manifest_source *s = &m.sources[m.n_sources++];
      s->arch = xstrdup(w[0]);
      s->url = xstrdup(w[1]);
      for (size_t i = 0; i < SHA256_HEX_SIZE; i++)
        s->sha256[i] = (char)tolower((unsigned char)digest[i]);
    } else if (strcmp(keyword, "fallback") == 0) {
      size_t n = split(p, w, 2, false);
      if (n != 2 || strcmp(w[0], "debian") != 0 || !valid_word(w[1], "-")) {
        ret = hutch_error_set(err, EINVAL, "%s:%d: `fallback` takes `debian SUITE` (e.g. debian bookworm)", origin,
                              lineno);
        break;
      }
      free(m.fallback_distro);
      free(m.fallback_suite);
      m.fallback_distro = xstrdup(w[0]);
      m.fallback_suite = xstrdup(w[1]);
    } else {
      ret = hutch_error_set(err, EINVAL, "%s:%d: unknown keyword \"%s\" (name, description, arch, fallback)", origin,
                            lineno, keyword);
      break;
    }
    line = next;
  }
  if (ret == 0 && m.name == NULL)
    ret = hutch_error_set(err, EINVAL, "%s: no `name` line", origin);
  if (ret == 0 && m.n_sources == 0)
    ret = hutch_error_set(err, EINVAL, "%s: no `arch ARCH URL SHA256` line", origin);
  if (ret < 0) {
    hutch_error_hint(err, "the format is described in hutch-manifest(5)");
    manifest_clear(&m);
    return -1;
  }
  *out = m;
  return 0;
}

const struct manifest_source *manifest_find_arch(const struct manifest *m, const char *arch) {
  for (size_t i = 0; i < m->n_sources; i++)
    if (strcmp(m->sources[i].arch, arch) == 0)
      return &m->sources[i];
  return NULL;
}

const char *manifest_host_arch(void) {
  static struct utsname u;
  static const struct {
    const char *machine, *arch;
  } map[] = {
      {"x86_64", "amd64"},    {"aarch64", "arm64"}, {"armv7l", "armhf"},    {"i686", "i386"},
      {"ppc64le", "ppc64el"}, {"s390x", "s390x"},   {"riscv64", "riscv64"},
  };
  if (uname(&u) < 0)
    return "unknown";
  for (size_t i = 0; i < ARRAY_SIZE(map); i++)
    if (strcmp(u.machine, map[i].machine) == 0)
      return map[i].arch;
  return u.machine;
}

const char *manifest_dir(void) {
  const char *env = getenv("HUTCH_ROOTFS_DIR");
  if (env && *env)
    return env;
  static char *dir;
  if (dir == NULL)
    dir = xasprintf("%s/rootfs", hutch_data_dir());
  return dir;
}

char *manifest_file_name(const char *ref) {
  if (!valid_word(ref, "._:-") || strstr(ref, "..") || ref[0] == '.' || strlen(ref) > 128)
    return NULL;
  char *name = xasprintf("%s.manifest", ref);
  for (char *p = name; *p; p++)
    if (*p == ':')
      *p = '-';
  return name;
}

/* The image names the manifests in `dir` describe, for a hint. */
static char *list_available(const char *dir) {
  _cleanup_dir_ DIR *d = opendir(dir);
  if (d == NULL)
    return NULL;
  char *list = NULL;
  struct dirent *de;
  const char *suffix = ".manifest";
  while ((de = readdir(d)) != NULL) {
    size_t len = strlen(de->d_name), sl = strlen(suffix);
    if (de->d_name[0] == '.' || len <= sl || strcmp(de->d_name + len - sl, suffix) != 0)
      continue;
    _cleanup_free_ char *path = xasprintf("%s/%s", dir, de->d_name);
    _cleanup_free_ char *text = read_file_at(AT_FDCWD, path, MANIFEST_MAX_SIZE, NULL);
    struct manifest m = {0};
    if (text == NULL || manifest_parse(text, path, &m, NULL) < 0)
      continue;
    char *old = list;
    list = old ? xasprintf("%s, %s", old, m.name) : xstrdup(m.name);
    manifest_clear(&m);
    free(old);
  }
  return list;
}

int manifest_load(const char *ref, struct manifest *out, hutch_error_t *err) {
  _cleanup_free_ char *file = manifest_file_name(ref);
  if (file == NULL)
    return hutch_error_set(err, EINVAL, "\"%s\" is not an image reference such as ubuntu:24.04", ref);
  const char *dir = manifest_dir();
  _cleanup_free_ char *path = xasprintf("%s/%s", dir, file);
  _cleanup_free_ char *text = read_file_at(AT_FDCWD, path, MANIFEST_MAX_SIZE, NULL);
  if (text == NULL) {
    if (errno != ENOENT)
      return hutch_error_sys(err, "read the manifest %s", path);
    hutch_error_set(err, ENOENT, "no manifest for the image %s (looked for %s)", ref, path);
    _cleanup_free_ char *avail = list_available(dir);
    if (avail)
      return hutch_error_hint(err, "known images: %s (HUTCH_ROOTFS_DIR names another directory of manifests)", avail);
    return hutch_error_hint(err, "HUTCH_ROOTFS_DIR names the directory that holds *.manifest files");
  }
  if (manifest_parse(text, path, out, err) < 0)
    return -1;
  if (strcmp(out->name, ref) != 0) {
    hutch_error_set(err, EINVAL, "%s describes %s, not %s", path, out->name, ref);
    manifest_clear(out);
    return -1;
  }
  return 0;
}
