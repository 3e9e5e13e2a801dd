/* SPDX-License-Identifier: Apache-2.0 */
/* Image references and authentication challenges (registry.h).  Pure:
 * strings in, strings out. */
#include "config.h"

#include "registry.h"

#include <arpa/inet.h>
#include <cJSON.h>
#include <ctype.h>
#include <string.h>

#include "util.h"

static const char *const hub_aliases[] = {"index.docker.io", "registry-1.docker.io", "registry.hub.docker.com", NULL};
const struct registry_defaults registry_defaults = {
    .hub_domain = "docker.io",
    .hub_aliases = hub_aliases,
    .hub_api_host = "registry-1.docker.io",
    .hub_official_prefix = "library",
    .hub_auth_key = "https://index.docker.io/v1/",
    .default_tag = "latest",
};

bool registry_domain_is_hub(const char *domain) {
  if (strcmp(domain, registry_defaults.hub_domain) == 0)
    return true;
  for (const char *const *a = registry_defaults.hub_aliases; *a; a++)
    if (strcmp(domain, *a) == 0)
      return true;
  return false;
}

/* The host part of "host[:port]" or "[v6]:port", without the port. */
static char *host_only(const char *domain) {
  if (domain[0] == '[') {
    const char *end = strchr(domain, ']');
    return end ? xstrndup(domain + 1, (size_t)(end - domain - 1)) : xstrdup(domain);
  }
  return xstrndup(domain, strcspn(domain, ":"));
}

bool registry_host_is_loopback(const char *domain) {
  _cleanup_free_ char *h = host_only(domain);
  /* An address, not a name that starts like one: 127.0.0.1.example.com is
   * anywhere. */
  struct in_addr a4;
  struct in6_addr a6;
  if (inet_pton(AF_INET, h, &a4) == 1)
    return (ntohl(a4.s_addr) >> 24) == 127;
  if (inet_pton(AF_INET6, h, &a6) == 1)
    return IN6_IS_ADDR_LOOPBACK(&a6);
  return strcmp(h, "localhost") == 0;
}

/* A path component: lower-case letters and digits, separated by one '.',
 * one or two '_', or any number of '-'. */
static bool valid_component(const char *s, size_t len) {
  if (len == 0 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[len - 1]))
    return false;
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (isupper(ch))
      return false;
    if (isalnum(ch) || ch == '-')
      continue;
    if (ch == '.' && isalnum((unsigned char)s[i + 1]))
      continue;
    if (ch == '_') {
      if (s[i + 1] == '_')
        i++;
      if (isalnum((unsigned char)s[i + 1]))
        continue;
    }
    return false;
  }
  return true;
}

static bool valid_tag(const char *t) {
  size_t len = strlen(t);
  if (len == 0 || len > 128 || !(isalnum((unsigned char)t[0]) || t[0] == '_'))
    return false;
  for (size_t i = 0; i < len; i++)
    if (!isalnum((unsigned char)t[i]) && t[i] != '_' && t[i] != '.' && t[i] != '-')
      return false;
  return true;
}

static bool valid_domain(const char *d) {
  if (d[0] == '\0')
    return false;
  for (const char *p = d; *p; p++)
    if (!isalnum((unsigned char)*p) && !strchr(".-:[]", *p))
      return false;
  return true;
}

static int bad_ref(hutch_error_t *err, const char *ref, const char *why) {
  hutch_error_set(err, EINVAL, "\"%s\" is not an image reference: %s", ref, why);
  return hutch_error_hint(err, "write docker://NAME[:TAG] or docker://NAME@sha256:DIGEST, e.g. docker://debian:12 "
                               "or docker://HOST:PORT/REPO:TAG");
}

int registry_ref_parse(const char *ref, struct registry_ref *out, hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  const char *s = ref;
  if (strncmp(s, "docker://", 9) == 0)
    s += 9;
  _cleanup_free_ char *name = xstrdup(s);
  char *at = strchr(name, '@');
  if (at) {
    *at = '\0';
    if (!oci_digest_hex(at + 1, NULL))
      return bad_ref(err, ref, "the digest is not sha256:<64 lower-case hex digits>");
    out->digest = xstrdup(at + 1);
  }
  /* A tag is after the last ':' that follows the last '/'. */
  char *slash = strrchr(name, '/');
  char *colon = strrchr(slash ? slash : name, ':');
  if (colon) {
    *colon = '\0';
    if (!valid_tag(colon + 1)) {
      registry_ref_clear(out);
      return bad_ref(err, ref, "the tag must be 1 to 128 letters, digits, '_', '.' or '-'");
    }
    out->tag = xstrdup(colon + 1);
  }
  const char *path = name;
  char *first = strchr(name, '/');
  if (first) {
    size_t len = (size_t)(first - name);
    /* Docker's rule: the first component is a registry when it looks like
     * a host name (a '.' or a ':') or is localhost. */
    if (memchr(name, '.', len) || memchr(name, ':', len) || (len == 9 && strncmp(name, "localhost", 9) == 0)) {
      out->domain = xstrndup(name, len);
      path = first + 1;
    }
  }
  if (out->domain == NULL)
    out->domain = xstrdup(registry_defaults.hub_domain);
  if (!valid_domain(out->domain)) {
    registry_ref_clear(out);
    return bad_ref(err, ref, "the registry host has characters a host name cannot have");
  }
  for (const char *p = path;;) {
    const char *end = strchrnul(p, '/');
    if (!valid_component(p, (size_t)(end - p))) {
      registry_ref_clear(out);
      return bad_ref(err, ref, "a repository name is lower-case letters and digits, separated by '/', '.', '_' or '-'");
    }
    if (*end == '\0')
      break;
    p = end + 1;
  }
  bool hub = registry_domain_is_hub(out->domain);
  if (hub) {
    free(out->domain);
    out->domain = xstrdup(registry_defaults.hub_domain);
  }
  out->repo = hub && strchr(path, '/') == NULL ? xasprintf("%s/%s", registry_defaults.hub_official_prefix, path)
                                               : xstrdup(path);
  out->host = xstrdup(hub ? registry_defaults.hub_api_host : out->domain);
  if (out->tag == NULL && out->digest == NULL)
    out->tag = xstrdup(registry_defaults.default_tag);
  out->plain_http = registry_host_is_loopback(out->domain);
  return 0;
}

void registry_ref_clear(struct registry_ref *ref) {
  free(ref->domain);
  free(ref->host);
  free(ref->repo);
  free(ref->tag);
  free(ref->digest);
  memset(ref, 0, sizeof(*ref));
}

char *registry_ref_format(const struct registry_ref *ref) {
  return xasprintf("%s/%s%s%s%s%s", ref->domain, ref->repo, ref->tag ? ":" : "", ref->tag ? ref->tag : "",
                   ref->digest ? "@" : "", ref->digest ? ref->digest : "");
}

/* ---- WWW-Authenticate -------------------------------------------------- */

int registry_challenge_parse(const char *h, struct registry_challenge *out) {
  memset(out, 0, sizeof(*out));
  while (*h == ' ' || *h == '\t')
    h++;
  size_t slen = strcspn(h, " \t");
  if (slen == 0)
    return -1;
  out->scheme = xstrndup(h, slen);
  const char *p = h + slen;
  while (*p) {
    while (*p == ' ' || *p == '\t' || *p == ',')
      p++;
    if (*p == '\0')
      break;
    size_t klen = strcspn(p, "= \t,");
    const char *key = p;
    p += klen;
    while (*p == ' ' || *p == '\t')
      p++;
    if (*p != '=') {
      registry_challenge_clear(out);
      return -1;
    }
    p++;
    while (*p == ' ' || *p == '\t')
      p++;
    char *value;
    if (*p == '"') {
      p++;
      size_t cap = strlen(p) + 1, n = 0;
      value = xmalloc(cap);
      while (*p && *p != '"') {
        if (*p == '\\' && p[1])
          p++;
        value[n++] = *p++;
      }
      value[n] = '\0';
      if (*p != '"') {
        free(value);
        registry_challenge_clear(out);
        return -1;
      }
      p++;
    } else {
      size_t vlen = strcspn(p, ",");
      while (vlen > 0 && (p[vlen - 1] == ' ' || p[vlen - 1] == '\t'))
        vlen--;
      value = xstrndup(p, vlen);
      p += strcspn(p, ",");
    }
    char **slot = NULL;
    if (klen == 5 && strncasecmp(key, "realm", 5) == 0)
      slot = &out->realm;
    else if (klen == 7 && strncasecmp(key, "service", 7) == 0)
      slot = &out->service;
    else if (klen == 5 && strncasecmp(key, "scope", 5) == 0)
      slot = &out->scope;
    if (slot) {
      free(*slot);
      *slot = value;
    } else {
      free(value);
    }
  }
  return 0;
}

void registry_challenge_clear(struct registry_challenge *c) {
  free(c->scheme);
  free(c->realm);
  free(c->service);
  free(c->scope);
  memset(c, 0, sizeof(*c));
}
