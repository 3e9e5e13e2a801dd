/* SPDX-License-Identifier: Apache-2.0 */
/* The pure parts of OCI images: references, WWW-Authenticate, credentials,
 * platform selection, whiteout names, the written-path set, documents. */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "curl_dl.h"
#include "layer.h"
#include "oci_image.h"
#include "oci_tar.h"
#include "registry.h"
#include "tap.h"
#include "util.h"

static void ref_ok(const char *in, const char *domain, const char *host, const char *repo, const char *tag,
                   const char *digest, bool plain_http) {
  struct registry_ref r;
  hutch_error_t err = NULL;
  int rc = registry_ref_parse(in, &r, &err);
  tap_is_int(rc, 0, "parse %s", in);
  if (rc < 0) {
    hutch_error_free(&err);
    return;
  }
  tap_is_str(r.domain, domain, "%s: domain", in);
  tap_is_str(r.host, host, "%s: API host", in);
  tap_is_str(r.repo, repo, "%s: repository", in);
  tap_is_str(r.tag, tag, "%s: tag", in);
  tap_is_str(r.digest, digest, "%s: digest", in);
  tap_is_int(r.plain_http, plain_http, "%s: plain http only for loopback", in);
  registry_ref_clear(&r);
}

static void ref_bad(const char *in) {
  struct registry_ref r;
  hutch_error_t err = NULL;
  tap_ok(registry_ref_parse(in, &r, &err) < 0 && err != NULL, "refuse %s", in);
  hutch_error_free(&err);
}

static void classify(const char *path, enum layer_whiteout want, const char *target) {
  char *clean = layer_clean_path(path);
  char *t = NULL;
  tap_is_int(layer_classify(clean, &t), want, "classify %s", path);
  tap_is_str(t, target, "target of %s", path);
  free(t);
  free(clean);
}

static void clean(const char *in, const char *want) {
  char *got = layer_clean_path(in);
  tap_is_str(got, want, "clean '%s'", in);
  free(got);
}

#define H64 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define H64B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

/* One ustar member (header and data padded to 512), appended to f. */
static void tar_add(FILE *f, const char *name, char type, const char *data, size_t declared) {
  unsigned char h[512] = {0};
  size_t len = data ? strlen(data) : 0;
  snprintf((char *)h, 100, "%s", name);
  if (type == '2' || type == '1') { /* a symlink or a hard link: data is its target */
    snprintf((char *)h + 157, 100, "%s", data);
    data = NULL;
    len = 0;
  }
  memcpy(h + 100, "0000644", 7);
  char size_field[32];
  snprintf(size_field, sizeof(size_field), "%011zo", declared ? declared : len);
  memcpy(h + 124, size_field, 12); /* 11 octal digits and the NUL: test members are small */
  h[156] = (unsigned char)type;
  memcpy(h + 257, "ustar", 6);
  memcpy(h + 263, "00", 2);
  memset(h + 148, ' ', 8);
  unsigned sum = 0;
  for (size_t i = 0; i < 512; i++)
    sum += h[i];
  snprintf((char *)h + 148, 8, "%06o", sum);
  fwrite(h, 1, 512, f);
  if (len) {
    char pad[512] = {0};
    fwrite(data, 1, len, f);
    fwrite(pad, 1, (512 - len % 512) % 512, f);
  }
}

static int tar_walk(void (*build)(FILE *), struct tar_index *idx) {
  FILE *f = tmpfile();
  build(f);
  char end[1024] = {0};
  fwrite(end, 1, sizeof(end), f);
  fflush(f);
  hutch_error_t err = NULL;
  int r = tar_index_read(fileno(f), idx, &err);
  hutch_error_free(&err);
  fclose(f);
  return r;
}

static void build_layout(FILE *f) {
  tar_add(f, "./", '5', NULL, 0);
  tar_add(f, "./oci-layout", '0', "{}", 0);
  tar_add(f, "./blobs/sha256/" H64, '0', "layer bytes", 0);
  tar_add(f, "./index.json", '0', "{\"manifests\": []}", 0);
}
static void build_podman(FILE *f) {
  tar_add(f, H64 ".tar", '0', "layer bytes", 0);
  tar_add(f, H64B "/layer.tar", '2', "../" H64 ".tar", 0);
  tar_add(f, "escape/layer.tar", '2', "../../" H64 ".tar", 0);
  tar_add(f, "manifest.json", '0', "[]", 0);
}
static void build_marked_rootfs(FILE *f) {
  tar_add(f, "./", '5', NULL, 0);
  tar_add(f, "./etc/passwd", '0', "root", 0);
  tar_add(f, "./manifest.json", '0', "{}", 0);
}
static void build_rootfs(FILE *f) {
  tar_add(f, "./", '5', NULL, 0);
  tar_add(f, "./etc/passwd", '0', "root", 0);
}
static void build_truncated(FILE *f) {
  tar_add(f, "index.json", '0', "{}", 1 << 20);
}
/* A pax extended header of one record, "LEN key=value\n". */
static void pax_add(FILE *f, const char *key, const char *value) {
  size_t body = strlen(key) + strlen(value) + 3, len = body + 1;
  while (snprintf(NULL, 0, "%zu", len) + body != len)
    len++;
  char rec[512];
  snprintf(rec, sizeof(rec), "%zu %s=%s\n", len, key, value);
  tar_add(f, "PaxHeader/x", 'x', rec, 0);
}
/* Names and a size from pax records and a GNU long name, a hard link. */
static void build_extended(FILE *f) {
  pax_add(f, "path", "blobs/sha256/" H64);
  tar_add(f, "short-name-replaced", '0', "pax named", 0);
  tar_add(f, "././@LongLink", 'L', "blobs/sha256/" H64B, 0);
  tar_add(f, "cut-name", '0', "gnu named", 0);
  pax_add(f, "size", "11");
  tar_add(f, "pax-sized", '0', NULL, 0); /* 0 in the header, 11 bytes of data */
  char data[512] = "pax sized!!";
  fwrite(data, 1, sizeof(data), f);
  tar_add(f, "hard", '1', "index.json", 0);
  tar_add(f, "index.json", '0', "{}", 0);
}
static void build_damaged(FILE *f) {
  tar_add(f, "index.json", '0', "{}", 0);
  char junk[512];
  memset(junk, 'J', sizeof(junk));
  fwrite(junk, 1, sizeof(junk), f);
}

/* The bytes of a member, read where the index says they are. */
static bool member_is(FILE *f, const struct tar_index *idx, const char *name, const char *want) {
  const struct tar_member *m = tar_index_find(idx, name);
  char buf[64] = {0};
  return m && m->size == strlen(want) && m->size < sizeof(buf) &&
         pread(fileno(f), buf, m->size, (off_t)m->offset) == (ssize_t)m->size && strcmp(buf, want) == 0;
}

static void extended_members(void) {
  FILE *f = tmpfile();
  build_extended(f);
  char end[1024] = {0};
  fwrite(end, 1, sizeof(end), f);
  fflush(f);
  struct tar_index idx;
  hutch_error_t err = NULL;
  off_t before = lseek(fileno(f), 0, SEEK_CUR);
  tap_is_int(tar_index_read(fileno(f), &idx, &err), 1, "an image archive of pax and GNU headers");
  tap_ok(lseek(fileno(f), 0, SEEK_CUR) == before, "the file's offset is left as it was");
  tap_ok(member_is(f, &idx, "blobs/sha256/" H64, "pax named") && !tar_index_find(&idx, "short-name-replaced"),
         "a pax path names the member, and its bytes are where the index says");
  tap_ok(member_is(f, &idx, "blobs/sha256/" H64B, "gnu named") && !tar_index_find(&idx, "cut-name"),
         "so does a GNU long name");
  tap_ok(member_is(f, &idx, "pax-sized", "pax sized!!") && member_is(f, &idx, "index.json", "{}"),
         "a pax size replaces the header's, and the members after it are still found");
  tap_ok(tar_index_find(&idx, "hard") == NULL, "a hard link is no blob");
  tar_index_clear(&idx);
  hutch_error_free(&err);
  fclose(f);
}

static void build_gzip(FILE *f) {
  fwrite("\x1f\x8b\x08\x00", 1, 4, f);
}

/* The credentials found for domain (and repo): want, or none (NULL). */
static void auth_is(const char *json, const char *domain, const char *repo, const char *want, const char *what) {
  char *got = registry_auth_lookup_repo(json, domain, repo);
  if (want)
    tap_is_str(got, want, "%s", what);
  else
    tap_ok(got == NULL, "%s", what);
  free(got);
}

int main(void) {
  /* ---- references: Docker's naming rules ---- */
  ref_ok("docker://ubuntu", "docker.io", "registry-1.docker.io", "library/ubuntu", "latest", NULL, false);
  ref_ok("ubuntu:24.04", "docker.io", "registry-1.docker.io", "library/ubuntu", "24.04", NULL, false);
  ref_ok("docker://someone/tool:v2", "docker.io", "registry-1.docker.io", "someone/tool", "v2", NULL, false);
  ref_ok("docker://docker.io/ubuntu", "docker.io", "registry-1.docker.io", "library/ubuntu", "latest", NULL, false);
  ref_ok("docker://index.docker.io/library/debian:12", "docker.io", "registry-1.docker.io", "library/debian", "12",
         NULL, false);
  ref_ok("docker://127.0.0.1:5000/test/img:v1", "127.0.0.1:5000", "127.0.0.1:5000", "test/img", "v1", NULL, true);
  ref_ok("docker://localhost/img", "localhost", "localhost", "img", "latest", NULL, true);
  ref_ok("docker://[::1]:5000/a/b", "[::1]:5000", "[::1]:5000", "a/b", "latest", NULL, true);
  ref_ok("docker://registry.test:443/team/app@sha256:" H64, "registry.test:443", "registry.test:443", "team/app", NULL,
         "sha256:" H64, false);
  ref_ok("docker://registry.test/app:1.0@sha256:" H64, "registry.test", "registry.test", "app", "1.0", "sha256:" H64,
         false);
  ref_bad("docker://Ubuntu");
  ref_bad("docker://ubuntu:");
  ref_bad("docker://ubuntu@sha256:abc");
  ref_bad("docker://ubuntu@md5:" H64);
  ref_bad("docker://a//b");
  ref_bad("docker://-a");
  ref_bad("docker://a/b:t@g");
  struct registry_ref r;
  if (registry_ref_parse("docker://127.0.0.1:5000/test/img@sha256:" H64, &r, NULL) == 0) {
    char *s = registry_ref_format(&r);
    tap_is_str(s, "127.0.0.1:5000/test/img@sha256:" H64, "format a digest reference");
    free(s);
    registry_ref_clear(&r);
  }

  /* ---- WWW-Authenticate ---- */
  struct registry_challenge ch;
  tap_is_int(registry_challenge_parse("Bearer realm=\"https://auth.test/token\",service=\"reg.test\","
                                      "scope=\"repository:library/ubuntu:pull\"",
                                      &ch),
             0, "parse a Bearer challenge");
  tap_is_str(ch.scheme, "Bearer", "scheme");
  tap_is_str(ch.realm, "https://auth.test/token", "realm");
  tap_is_str(ch.service, "reg.test", "service");
  tap_is_str(ch.scope, "repository:library/ubuntu:pull", "scope");
  registry_challenge_clear(&ch);
  tap_is_int(registry_challenge_parse("Bearer realm=\"http://h/t\", service=svc , scope=\"a:b,c:pull\"", &ch), 0,
             "spaces, a bare token value and a comma inside quotes");
  tap_is_str(ch.service, "svc", "bare service");
  tap_is_str(ch.scope, "a:b,c:pull", "quoted comma kept");
  registry_challenge_clear(&ch);
  tap_is_int(registry_challenge_parse("Basic realm=\"r\\\"x\"", &ch), 0, "parse a Basic challenge");
  tap_is_str(ch.scheme, "Basic", "Basic scheme");
  tap_is_str(ch.realm, "r\"x", "escaped quote");
  tap_ok(ch.service == NULL, "no service");
  registry_challenge_clear(&ch);
  tap_ok(registry_challenge_parse("Bearer realm=\"unterminated", &ch) < 0, "an unterminated string is refused");
  tap_ok(registry_challenge_parse("", &ch) < 0, "an empty header is refused");

  /* ---- credentials ---- */
  const char *auth = "{\"auths\": {\"https://index.docker.io/v1/\": {\"auth\": \"aHViOnB3\"},"
                     " \"http://127.0.0.1:5000\": {\"auth\": \"bG9jYWw6cHc=\"},"
                     " \"reg.test\": {\"auth\": \"\"}}}";
  char *a = registry_auth_lookup(auth, "docker.io");
  tap_is_str(a, "aHViOnB3", "Docker Hub's key in config.json");
  free(a);
  a = registry_auth_lookup(auth, "127.0.0.1:5000");
  tap_is_str(a, "bG9jYWw6cHc=", "a key with a scheme");
  free(a);
  a = registry_auth_lookup(auth, "127.0.0.1:5001");
  tap_ok(a == NULL, "another port has no credentials");
  a = registry_auth_lookup(auth, "reg.test");
  tap_ok(a == NULL, "an empty auth is none");
  tap_ok(registry_auth_lookup("not json", "docker.io") == NULL, "a damaged file gives none");
  tap_ok(registry_auth_lookup(NULL, "docker.io") == NULL, "no file gives none");
  const char *scoped = "{\"auths\": {\"reg.test\": {\"auth\": \"aG9zdA==\"},"
                       " \"reg.test/team\": {\"auth\": \"dGVhbQ==\"},"
                       " \"http://reg.test/team/app/\": {\"auth\": \"YXBw\"},"
                       " \"reg.test/teamx\": {\"auth\": \"eA==\"}}}";
  a = registry_auth_lookup_repo(scoped, "reg.test", "team/app");
  tap_is_str(a, "YXBw", "a repository's own key wins over its namespace's and the host's");
  free(a);
  a = registry_auth_lookup_repo(scoped, "reg.test", "team/other");
  tap_is_str(a, "dGVhbQ==", "a namespace's key holds the repositories under it");
  free(a);
  a = registry_auth_lookup_repo(scoped, "reg.test", "teamother/x");
  tap_is_str(a, "aG9zdA==", "a key is a path prefix, not a string prefix");
  free(a);
  a = registry_auth_lookup_repo(scoped, "reg.test", NULL);
  tap_is_str(a, "aG9zdA==", "without a repository only the host's key applies");
  free(a);
  /* Keys as libcurl reads URLs: ports, IPv6 literals, userinfo, no scheme. */
  const char *tricky = "{\"auths\": {\"[::1]:5000\": {\"auth\": \"djY=\"},"
                       " \"https://[fd00::2]:8443/v2/\": {\"auth\": \"djZi\"},"
                       " \"https://someone@reg.test:5000/\": {\"auth\": \"dXNlcg==\"},"
                       " \"reg.test:5001/team/./app/../app\": {\"auth\": \"ZG90\"},"
                       " \"http://a b/\": {\"auth\": \"c3BhY2U=\"},"
                       " \"127.0.0.1:5000@evil.test\": {\"auth\": \"ZXZpbA==\"}}}";
  auth_is(tricky, "[::1]:5000", NULL, "djY=", "an IPv6 literal with a port, no scheme");
  auth_is(tricky, "[fd00::2]:8443", NULL, "djZi", "an IPv6 literal in a URL with an API path");
  auth_is(tricky, "reg.test:5000", NULL, "dXNlcg==", "a user in the key is not part of the host");
  auth_is(tricky, "reg.test:5001", "team/app", "ZG90", "a key's path is read with its dot segments resolved");
  auth_is(tricky, "127.0.0.1:5000", NULL, NULL, "a key whose host is after an '@' is not the loopback registry's");
  auth_is(tricky, "evil.test", NULL, "ZXZpbA==", "it is that host's");
  auth_is(tricky, "a b", NULL, NULL, "a key libcurl refuses names no registry");

  /* Plain http only for loopback. */
  tap_ok(registry_host_is_loopback("127.0.0.1:5000") && registry_host_is_loopback("127.8.9.10") &&
             registry_host_is_loopback("[::1]:5000") && registry_host_is_loopback("localhost:80"),
         "127.0.0.0/8, ::1 and localhost are loopback");
  tap_ok(!registry_host_is_loopback("127.0.0.1.example.com") && !registry_host_is_loopback("127.evil.test:5000") &&
             !registry_host_is_loopback("[::2]:5000") && !registry_host_is_loopback("localhost.example.com") &&
             !registry_host_is_loopback("128.0.0.1"),
         "a name that starts like a loopback address is not one");
  ref_ok("docker://127.0.0.1.example.com/img", "127.0.0.1.example.com", "127.0.0.1.example.com", "img", "latest", NULL,
         false);

  /* URLs through libcurl's parser. */
  struct curl_dl_url u;
  tap_ok(curl_dl_url_parse("http://user:pw@[::1]:8080/a/../b?q#f", 0, &u, NULL) == 0 && strcmp(u.scheme, "http") == 0 &&
             u.user && strcmp(u.host, "[::1]") == 0 && strcmp(u.port, "8080") == 0 && strcmp(u.path, "/b") == 0,
         "a URL's parts: userinfo, IPv6 literal, port, a normalised path");
  curl_dl_url_clear(&u);
  tap_ok(curl_dl_url_parse("http://:pw@h/", 0, &u, NULL) == 0 && u.user && u.port == NULL,
         "a password alone counts as userinfo; no port when none is written");
  curl_dl_url_clear(&u);
  tap_ok(curl_dl_url_parse("reg.test/x", CURLU_DEFAULT_SCHEME, &u, NULL) == 0 && strcmp(u.scheme, "https") == 0 &&
             strcmp(u.host, "reg.test") == 0,
         "no scheme: the default one, when asked for");
  curl_dl_url_clear(&u);
  hutch_error_t uerr = NULL;
  tap_ok(curl_dl_url_parse("reg.test/x", 0, &u, &uerr) < 0 && uerr != NULL, "no scheme: refused otherwise");
  hutch_error_free(&uerr);
  tap_ok(curl_dl_url_parse("http://h:99999/", 0, &u, NULL) < 0, "a port past 65535 is refused");
  tap_ok(curl_dl_url_parse("http://u:p@ss@h/", 0, &u, NULL) < 0, "so is a second '@'");

  /* ---- platform selection ---- */
  struct oci_descriptor d[] = {
      {.os = "linux", .arch = "arm", .variant = "v7"},
      {.os = "linux", .arch = "arm64"},
      {.os = "linux", .arch = "arm64", .variant = "v8"},
      {.os = "linux", .arch = "amd64"},
      {.os = "unknown", .arch = "unknown"},
      {.os = "windows", .arch = "amd64"},
  };
  tap_is_int(oci_select_platform(d, 6, "linux", "amd64", NULL), 3, "linux/amd64");
  tap_is_int(oci_select_platform(d, 6, "linux", "arm64", "v8"), 2, "arm64/v8: the exact variant first");
  tap_is_int(oci_select_platform(d, 2, "linux", "arm64", "v8"), 1, "arm64/v8: else the one without a variant");
  tap_is_int(oci_select_platform(d, 6, "linux", "arm", "v6"), -1, "arm/v6: a v7 image does not fit");
  tap_is_int(oci_select_platform(d, 6, "linux", "s390x", NULL), -1, "no image for s390x");
  const char *os, *arch, *variant;
  oci_host_platform(&os, &arch, &variant);
  tap_is_str(os, "linux", "the host's os");
  tap_ok(arch && strcmp(arch, "unknown") != 0, "the host's architecture is known (%s)", arch);

  /* ---- documents ---- */
  tap_is_int(oci_doc_kind(OCI_MT_INDEX, NULL, 0), OCI_DOC_INDEX, "OCI index by media type");
  tap_is_int(oci_doc_kind(DOCKER_MT_LIST, NULL, 0), OCI_DOC_INDEX, "Docker list by media type");
  tap_is_int(oci_doc_kind(DOCKER_MT_MANIFEST "; charset=utf-8", NULL, 0), OCI_DOC_MANIFEST,
             "Docker manifest with parameters");
  const char *idx = "{\"manifests\": []}";
  tap_is_int(oci_doc_kind("application/json", idx, strlen(idx)), OCI_DOC_INDEX, "index by content");
  const char *man = "{\"schemaVersion\": 2, \"config\": {\"digest\": \"sha256:" H64 "\", \"size\": 7},"
                    " \"layers\": [{\"mediaType\": \"application/vnd.oci.image.layer.v1.tar+gzip\","
                    " \"digest\": \"sha256:" H64 "\", \"size\": 9}]}";
  tap_is_int(oci_doc_kind(NULL, man, strlen(man)), OCI_DOC_MANIFEST, "manifest by content");
  struct oci_manifest m;
  hutch_error_t err = NULL;
  tap_is_int(oci_parse_manifest(man, strlen(man), &m, &err), 0, "parse a manifest");
  tap_is_int((int)m.n_layers, 1, "one layer");
  tap_is_int((int)m.layers[0].size, 9, "its size");
  tap_is_int((int)m.config.size, 7, "the config's size");
  oci_manifest_clear(&m);
  const char *badman = "{\"config\": {\"digest\": \"sha512:abc\"}, \"layers\": []}";
  tap_ok(oci_parse_manifest(badman, strlen(badman), &m, &err) < 0, "a sha512 digest is refused");
  tap_ok(err && err->hint && strstr(err->hint, "sha256"), "with a hint naming sha256");
  hutch_error_free(&err);
  const char *cfg = "{\"architecture\": \"amd64\", \"os\": \"linux\", \"config\": {\"Env\": [\"A=1\", \"BROKEN\","
                    " \"=x\", \"B=\"], \"WorkingDir\": \"/w\", \"User\": \"1000\"},"
                    " \"rootfs\": {\"diff_ids\": [\"sha256:" H64 "\"]}}";
  struct oci_config c;
  tap_is_int(oci_parse_config(cfg, strlen(cfg), &c, &err), 0, "parse a config");
  tap_is_str(c.env[0], "A=1", "Env kept");
  tap_is_str(c.env[1], "B=", "an empty value is a variable");
  tap_ok(c.env[2] == NULL, "entries without a name are dropped");
  tap_is_str(c.workdir, "/w", "WorkingDir");
  tap_is_str(c.user, "1000", "User");
  tap_is_int((int)c.n_diff_ids, 1, "diff_ids");
  oci_config_clear(&c);
  const char *save = "[{\"Config\": \"" H64 ".json\", \"RepoTags\": [\"a:b\"], \"Layers\": [\"x/layer.tar\"]}]";
  struct docker_save ds;
  tap_is_int(docker_parse_save(save, strlen(save), NULL, &ds, &err), 0, "parse docker save's manifest.json");
  tap_is_str(ds.config, H64 ".json", "its config");
  tap_is_str(ds.layers[0], "x/layer.tar", "its layer");
  docker_save_clear(&ds);
  tap_ok(docker_parse_save("{}", 2, NULL, &ds, &err) < 0, "an object is not a docker save manifest");
  hutch_error_free(&err);

  /* ---- at most HUTCH_IMAGE_MAX_LAYERS layers ---- */
  for (size_t n = HUTCH_IMAGE_MAX_LAYERS; n <= HUTCH_IMAGE_MAX_LAYERS + 1; n++) {
    bool over = n > HUTCH_IMAGE_MAX_LAYERS;
    _cleanup_free_ char *layers = xstrdup(""), *names = xstrdup("");
    for (size_t i = 0; i < n; i++) {
      char *l = xasprintf("%s%s{\"digest\": \"sha256:" H64 "\", \"size\": 9}", layers, i ? ", " : "");
      char *m2 = xasprintf("%s%s\"x/layer.tar\"", names, i ? ", " : "");
      free(layers);
      free(names);
      layers = l;
      names = m2;
    }
    _cleanup_free_ char *deep = xasprintf("{\"config\": {\"digest\": \"sha256:" H64 "\", \"size\": 7},"
                                          " \"layers\": [%s]}",
                                          layers);
    int pr = oci_parse_manifest(deep, strlen(deep), &m, &err);
    _cleanup_free_ char *why = err ? hutch_error_format(err) : xstrdup("");
    tap_ok(over ? pr < 0 && strstr(why, "at most 127") != NULL : pr == 0 && m.n_layers == n,
           "a manifest of %zu layers is %s (%s)", n, over ? "refused" : "parsed", why);
    if (pr == 0)
      oci_manifest_clear(&m);
    hutch_error_free(&err);
    _cleanup_free_ char *dsave = xasprintf("[{\"Config\": \"" H64 ".json\", \"Layers\": [%s]}]", names);
    pr = docker_parse_save(dsave, strlen(dsave), NULL, &ds, &err);
    tap_ok(over ? pr < 0 && err && err->errnum == EFBIG : pr == 0 && ds.n_layers == n,
           "docker save's manifest.json of %zu layers is %s", n, over ? "refused" : "parsed");
    if (pr == 0)
      docker_save_clear(&ds);
    hutch_error_free(&err);
  }

  /* ---- several images in one archive ---- */
  const char *multi = "[{\"Config\": \"" H64 ".json\", \"RepoTags\": [\"localhost/bb:1\"], \"Layers\": [\"a.tar\"]},"
                      " {\"Config\": \"" H64B ".json\", \"RepoTags\": [\"docker.io/library/two:latest\"],"
                      " \"Layers\": [\"a.tar\", \"b.tar\"]}]";
  int refused = docker_parse_save(multi, strlen(multi), NULL, &ds, &err);
  _cleanup_free_ char *msg = err ? hutch_error_format(err) : xstrdup("");
  tap_ok(refused < 0 && strstr(msg, "localhost/bb:1") && strstr(msg, "docker.io/library/two:latest"),
         "several images without --image: refused with their names (%s)", msg);
  hutch_error_free(&err);
  tap_ok(docker_parse_save(multi, strlen(multi), "two", &ds, &err) == 0 && ds.n_layers == 2,
         "--image two: the second image");
  docker_save_clear(&ds);
  tap_ok(docker_parse_save(multi, strlen(multi), "bb:1", &ds, &err) == 0 && ds.n_layers == 1,
         "--image bb:1: podman's localhost/bb:1");
  docker_save_clear(&ds);
  tap_ok(docker_parse_save(multi, strlen(multi), "sha256:" H64B, &ds, &err) == 0 && ds.n_layers == 2,
         "--image sha256:HEX: by the config's digest");
  docker_save_clear(&ds);
  tap_ok(docker_parse_save(multi, strlen(multi), "bb:2", &ds, &err) < 0, "--image of a name the archive lacks");
  hutch_error_free(&err);
  tap_ok(oci_ref_matches("docker.io/library/busybox:latest", "busybox") && oci_ref_matches("localhost/x", "x:latest") &&
             !oci_ref_matches("x:1", "x:2") && !oci_ref_matches("quay.io/x:1", "x:1") && !oci_ref_matches(NULL, "x"),
         "reference matching");

  /* ---- several images in a layout's index.json ---- */
  const char *named =
      "{\"manifests\": ["
      "{\"digest\": \"sha256:" H64 "\", \"annotations\": {\"org.opencontainers.image.ref.name\": \"one\"}},"
      "{\"digest\": \"sha256:" H64B "\", \"annotations\": {\"io.containerd.image.name\": "
      "\"docker.io/library/two:latest\", \"org.opencontainers.image.ref.name\": \"latest\"}}]}";
  struct oci_descriptor *list = NULL;
  size_t n_list = 0;
  tap_is_int(oci_parse_index(named, strlen(named), &list, &n_list, &err), 0, "parse an index of two named images");
  tap_ok(oci_filter_by_name(list, &n_list, NULL, &err) < 0, "two names and no --image: refused");
  hutch_error_free(&err);
  tap_ok(oci_filter_by_name(list, &n_list, "two", &err) == 0 && n_list == 1 && strcmp(list[0].digest + 7, H64B) == 0,
         "--image two: containerd's name matches");
  oci_descriptors_free(list, n_list);
  tap_is_int(oci_parse_index(named, strlen(named), &list, &n_list, &err), 0, "parse it again");
  tap_ok(oci_filter_by_name(list, &n_list, "sha256:" H64, &err) == 0 && n_list == 1 &&
             strcmp(list[0].ref_name, "one") == 0,
         "--image sha256:HEX: by the manifest's digest");
  oci_descriptors_free(list, n_list);
  tap_is_int(oci_parse_index(named, strlen(named), &list, &n_list, &err), 0, "and again");
  tap_ok(oci_filter_by_name(list, &n_list, "three", &err) < 0 && n_list == 0, "--image of a name it lacks");
  hutch_error_free(&err);
  oci_descriptors_free(list, n_list);

  /* ---- symlinks inside an archive ---- */
  _cleanup_free_ char *lt = tar_link_target(H64 "/layer.tar", "../" H64 ".tar");
  tap_is_str(lt, H64 ".tar", "podman's <id>/layer.tar -> ../<digest>.tar");
  _cleanup_free_ char *lt2 = tar_link_target("a/b", "./c/../d");
  tap_is_str(lt2, "a/d", "a relative link with . and ..");
  tap_ok(tar_link_target("a/layer.tar", "../../etc/shadow") == NULL && tar_link_target("a", "/etc/shadow") == NULL &&
             tar_link_target("a/b", "..") == NULL,
         "links out of the archive lead nowhere");
  tap_ok(oci_layer_media_type_ok("application/vnd.docker.image.rootfs.diff.tar.gzip"), "Docker gzip layer");
  tap_ok(oci_layer_media_type_ok(NULL), "no media type: the content decides");
  tap_ok(!oci_layer_media_type_ok("application/vnd.cncf.helm.chart.content.v1.tar+gzip"), "a Helm chart is no layer");
  tap_ok(oci_digest_hex("sha256:" H64, NULL), "a sha256 digest");
  tap_ok(!oci_digest_hex("sha256:" H64 "0", NULL), "65 digits");
  tap_ok(!oci_digest_hex("sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef", NULL),
         "upper-case hex");

  /* ---- image archive names ---- */
  tap_ok(oci_archive_member_name("index.json") && oci_archive_member_name("blobs/sha256/" H64) &&
             oci_archive_member_name(H64 "/layer.tar") && oci_archive_member_name(H64 ".json") &&
             oci_archive_member_name(""),
         "names of image archives");
  tap_ok(!oci_archive_member_name("etc") && !oci_archive_member_name("bin/sh") && !oci_archive_member_name("abc.json"),
         "names of a rootfs tarball");

  /* ---- the members of an image archive ---- */
  struct tar_index ti;
  tap_is_int(tar_walk(build_layout, &ti), 1, "an OCI layout tarball is an image archive");
  const struct tar_member *tm = tar_index_find(&ti, "blobs/sha256/" H64);
  tap_ok(tm && tm->size == 11 && tm->offset % 512 == 0, "a blob is a byte range of the file");
  tap_ok(tar_index_find(&ti, "index.json") != NULL && tar_index_find(&ti, "manifest.json") == NULL,
         "members are found by their cleaned names");
  tar_index_clear(&ti);
  tap_is_int(tar_walk(build_podman, &ti), 1, "podman's docker-archive (manifest.json last) is an image archive");
  tm = tar_index_resolve(&ti, H64B "/layer.tar");
  tap_ok(tm && strcmp(tm->name, H64 ".tar") == 0 && tm->size == 11, "its <id>/layer.tar symlink leads to the layer");
  tap_ok(tar_index_find(&ti, "escape/layer.tar") && tar_index_resolve(&ti, "escape/layer.tar") == NULL,
         "a symlink out of the archive leads nowhere");
  tar_index_clear(&ti);
  tap_is_int(tar_walk(build_marked_rootfs, &ti), 1,
             "a tarball with a top-level manifest.json is taken for an image archive (and refused if not one)");
  tar_index_clear(&ti);
  tap_is_int(tar_walk(build_rootfs, &ti), 0, "a rootfs tarball is not an image archive");
  tap_is_int(tar_walk(build_gzip, &ti), 0, "a compressed file is not one either");
  tap_is_int(tar_walk(build_truncated, &ti), -1, "a member larger than the file is an error");
  tap_is_int(tar_walk(build_damaged, &ti), -1, "a damaged header after what marks an image archive is an error");
  extended_members();

  /* ---- User ---- */
  tap_ok(oci_user_is_root(NULL) && oci_user_is_root("") && oci_user_is_root("root") && oci_user_is_root("0") &&
             oci_user_is_root("0:0") && oci_user_is_root("root:root"),
         "root users");
  tap_ok(!oci_user_is_root("1000") && !oci_user_is_root("nobody") && !oci_user_is_root("0:1000") &&
             !oci_user_is_root("rooty"),
         "other users");

  /* ---- whiteout names ---- */
  clean("./opt/dir/", "opt/dir");
  clean("/a//b/./c", "a/b/c");
  clean("./", "");
  clean(".", "");
  classify("./opt/.wh.gone", LAYER_WHITEOUT, "opt/gone");
  classify(".wh.top", LAYER_WHITEOUT, "top");
  classify("opt/dir/.wh..wh..opq", LAYER_OPAQUE, "opt/dir");
  classify("./.wh..wh..opq", LAYER_OPAQUE, "");
  classify("opt/.wh.", LAYER_BAD, NULL);
  classify("opt/.wh..", LAYER_BAD, NULL);
  classify("opt/.wh...", LAYER_BAD, NULL);
  classify("opt/.wh..wh.plnk", LAYER_BAD, NULL);
  classify("opt/file.wh.x", LAYER_PLAIN, NULL);
  classify("opt/.whx", LAYER_PLAIN, NULL);
  classify(".wh.dir/file", LAYER_PLAIN, NULL);

  /* ---- paths a layer wrote ---- */
  struct layer_paths set = {0};
  layer_paths_add(&set, "opt/dir/new");
  tap_ok(layer_paths_has(&set, "opt/dir/new") && layer_paths_has(&set, "opt/dir") && layer_paths_has(&set, "opt"),
         "a path and its ancestors");
  tap_ok(!layer_paths_has(&set, "opt/dir/old") && !layer_paths_has(&set, "op") && !layer_paths_has(&set, ""),
         "nothing else");
  char name[32];
  for (int i = 0; i < 5000; i++) {
    snprintf(name, sizeof(name), "d%d/f%d", i % 50, i);
    layer_paths_add(&set, name);
  }
  tap_ok(layer_paths_has(&set, "d49/f4999") && layer_paths_has(&set, "d7") && !layer_paths_has(&set, "d50"),
         "still exact after growing (%zu paths)", set.n);
  layer_paths_clear(&set);
  tap_ok(!layer_paths_has(&set, "opt"), "a cleared set is empty");

  /* ---- the first member of a compressed archive: image or rootfs ---- */
#define HEX "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
  static const struct {
    const char *name;
    bool image;
  } members[] = {
      {"oci-layout", true},
      {"./oci-layout", true},
      {"index.json", true},
      {"blobs/", true},
      {"blobs/sha256/0a", true},
      {"manifest.json", true},
      {"repositories", true},
      {HEX "/", true},
      {HEX "/layer.tar", true},
      {HEX ".json", true},
      {HEX ".tar", true},
      {"bin", false},
      {"./etc/", false},
      {"usr/bin/python3", false},
      {"blobsy", false},
      {"index.json.bak", false},
      {"0123456789abcdef/", false},
      {"0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef/", false},
      {HEX ".txt", false},
  };
#undef HEX
  for (size_t i = 0; i < ARRAY_SIZE(members); i++) {
    _cleanup_free_ char *clean = layer_clean_path(members[i].name);
    tap_ok(oci_archive_member_name(clean) == members[i].image, "\"%s\" is part of %s", members[i].name,
           members[i].image ? "an image archive" : "a root filesystem");
  }
  return tap_done();
}
