/* SPDX-License-Identifier: Apache-2.0 */
/* What ADD does beyond COPY, as Docker does it: a local tar archive
 * (uncompressed, gzip, bzip2, xz or zstd) is unpacked into the
 * destination, and a URL is downloaded (never unpacked).
 *
 * An archive from the context is hostile input like any image layer: it is
 * unpacked by the image import's unpacker (unpack.c), in a child that is
 * chrooted into the destination directory of the new layer, with its checks
 * on absolute paths, "..", links on the way and device nodes, and the
 * policy's import budget.
 *
 * A URL is fetched through hutch's allowlist proxy (proxy.h), run here on a
 * loopback port for the download only, with the network policy a RUN step
 * of the same build gets (--net-policy or the policy's [network], plus
 * --allow): a host the policy refuses is refused for ADD too, and each
 * request is written to the build log as the proxy's audit line.  The layer
 * is keyed by the URL and the --checksum, else the server's (strong) ETag,
 * else the content, so a rebuild with either needs no download. */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "archive_dl.h"
#include "build_layer.h"
#include "curl_dl.h"
#include "dockerfile_build.h"
#include "download.h"
#include "net_host.h"
#include "policy.h"
#include "proxy.h"
#include "store.h"
#include "util.h"

/* A download that stalls is dropped by curl's own low-speed limit; this
 * bounds the whole of it. */
#define ADD_URL_MAX_SECONDS 1800L
#define ADD_HEAD_MAX_SECONDS 60L

bool df_add_is_url(const char *s) {
  return strncmp(s, "http://", 7) == 0 || strncmp(s, "https://", 8) == 0;
}

/* ---- the proxy, for one download ------------------------------------------------- */

struct add_proxy {
  struct proxy *p;
  struct net_policy policy;
  int stop_fd;
  pthread_t thread;
  bool running;
  char dir[64];           /* the socket's 0700 directory ("": none) */
  struct sockaddr_un sun; /* where the proxy listens */
};

static void *proxy_main(void *data) {
  struct add_proxy *ap = data;
  _cleanup_error_ hutch_error_t e = NULL;
  if (proxy_run(ap->p, ap->stop_fd, &e) < 0)
    hutch_warn("ADD: the proxy stopped: %s", e->msg);
  return NULL;
}

static void proxy_stop(struct add_proxy *ap) {
  if (ap->running) {
    uint64_t one = 1;
    (void)!write(ap->stop_fd, &one, sizeof(one));
    pthread_join(ap->thread, NULL);
    ap->running = false;
  }
  if (ap->p)
    proxy_free(ap->p);
  ap->p = NULL;
  if (ap->stop_fd >= 0)
    close(ap->stop_fd);
  ap->stop_fd = -1;
  if (ap->dir[0]) {
    (void)unlink(ap->sun.sun_path);
    (void)rmdir(ap->dir);
    ap->dir[0] = '\0';
  }
  net_policy_clear(&ap->policy);
}

/* The policy a RUN step of this build gets (net_host_resolve), on a Unix
 * socket in a directory of mode 0700: no TCP port on loopback that any
 * local user could use as an open proxy with the build's allowlist while
 * the download runs.  curl reaches it through connect_proxy. */
static int proxy_start(struct df_builder *b, struct add_proxy *ap, hutch_error_t *err) {
  *ap = (struct add_proxy){.stop_fd = -1};
  if (b->o->net_policy) {
    if (net_host_load_policy_file(b->o->net_policy, &ap->policy, err) < 0)
      return -1;
  } else {
    net_policy_copy(&ap->policy, &b->policy->settings.network);
  }
  for (char **a = b->allow; a && *a; a++)
    if (net_policy_add_allow(&ap->policy, *a, err) < 0)
      return hutch_error_wrap(err, "--allow %s", *a);
  const char *tmp = getenv("TMPDIR");
  if (tmp == NULL || *tmp != '/' || strlen(tmp) > 40)
    tmp = "/tmp";
  snprintf(ap->dir, sizeof(ap->dir), "%s/hutch-add-XXXXXX", tmp);
  if (mkdtemp(ap->dir) == NULL) {
    hutch_error_sys(err, "ADD: create a directory for the proxy's socket in %s", tmp);
    ap->dir[0] = '\0';
    return hutch_error_hint(err, "set TMPDIR to a writable directory");
  }
  ap->sun.sun_family = AF_UNIX;
  snprintf(ap->sun.sun_path, sizeof(ap->sun.sun_path), "%s/proxy", ap->dir);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return hutch_error_sys(err, "ADD: create the proxy's socket");
  if (bind(fd, (struct sockaddr *)&ap->sun, sizeof(ap->sun)) < 0 || listen(fd, 16) < 0) {
    hutch_error_sys(err, "ADD: listen on %s for the proxy", ap->sun.sun_path);
    close(fd);
    return -1;
  }
  if (proxy_new(&ap->p, err) < 0) {
    close(fd);
    return -1;
  }
  /* Its audit lines go to the build log. */
  int audit = b->log_fd >= 0 ? fcntl(b->log_fd, F_DUPFD_CLOEXEC, 3) : -1;
  struct proxy_listener_config lc = {
      .listen_fd = fd, .sandbox_id = "build", .policy = &ap->policy, .audit_fd = audit, .peer_pid = getpid()};
  if (proxy_add_listener(ap->p, &lc, err) < 0)
    return -1;
  ap->stop_fd = eventfd(0, EFD_CLOEXEC);
  if (ap->stop_fd < 0)
    return hutch_error_sys(err, "ADD: eventfd");
  /* No signal of the build's is the proxy thread's to take. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int r = pthread_create(&ap->thread, NULL, proxy_main, ap);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (r != 0)
    return hutch_error_set(err, r, "ADD: start the proxy thread");
  ap->running = true;
  return 0;
}

/* curl's connection to "the proxy" goes to its Unix socket: the address
 * curl was about to connect to is replaced (curl connects to the address
 * the callback leaves; its storage is a sockaddr_storage).  Not a socket
 * connected here with CURL_SOCKOPT_ALREADY_CONNECTED: curl 7.88 connects
 * such a socket again and fails. */
static curl_socket_t connect_proxy(void *data, curlsocktype purpose, struct curl_sockaddr *address) {
  struct add_proxy *ap = data;
  socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(ap->sun.sun_path) + 1);
  if (purpose != CURLSOCKTYPE_IPCXN || len > sizeof(struct sockaddr_storage))
    return CURL_SOCKET_BAD;
  memcpy((char *)address + offsetof(struct curl_sockaddr, addr), &ap->sun, len);
  address->family = AF_UNIX;
  address->protocol = 0;
  address->addrlen = len;
  return socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
}

/* Every transfer goes through the proxy, whatever the host's proxy
 * variables and no_proxy say.  The proxy's address is a placeholder: no
 * connection is made to it (connect_proxy). */
static void through_proxy(void *curl, void *data) {
  struct add_proxy *ap = data;
  CURL(curl_easy_setopt)(curl, CURLOPT_PROXY, "http://127.0.0.1:9");
  CURL(curl_easy_setopt)(curl, CURLOPT_OPENSOCKETFUNCTION, connect_proxy);
  CURL(curl_easy_setopt)(curl, CURLOPT_OPENSOCKETDATA, ap);
  CURL(curl_easy_setopt)(curl, CURLOPT_NOPROXY, "");
  CURL(curl_easy_setopt)(curl, CURLOPT_TIMEOUT, ADD_URL_MAX_SECONDS);
}

/* ---- HEAD: the ETag, Last-Modified, and the proxy's refusal ------------------- */

struct head_info {
  char etag[256];
  char refused[240];
  long status;
  long mtime; /* -1: unknown */
};

static void header_value(const char *line, size_t n, const char *name, char *out, size_t size) {
  size_t len = strlen(name);
  if (n <= len || strncasecmp(line, name, len) != 0)
    return;
  const char *v = line + len;
  size_t vn = n - len;
  while (vn > 0 && (*v == ' ' || *v == '\t'))
    v++, vn--;
  while (vn > 0 && (v[vn - 1] == '\r' || v[vn - 1] == '\n' || v[vn - 1] == ' '))
    vn--;
  if (vn < size) {
    memcpy(out, v, vn);
    out[vn] = '\0';
  }
}

static size_t on_header(char *line, size_t size, size_t n, void *data) {
  struct head_info *h = data;
  size_t len = size * n;
  /* A redirect's or the CONNECT answer's headers come first: keep the last. */
  if (len >= 5 && strncmp(line, "HTTP/", 5) == 0)
    h->etag[0] = '\0';
  header_value(line, len, "ETag:", h->etag, sizeof(h->etag));
  header_value(line, len, "X-Hutch-Refused:", h->refused, sizeof(h->refused));
  return len;
}

static int url_head(struct add_proxy *ap, const char *url, struct head_info *h, hutch_error_t *err) {
  *h = (struct head_info){.mtime = -1};
  CURL *curl = CURL(curl_easy_init)();
  if (curl == NULL)
    return hutch_error_set(err, ENOMEM, "ADD %s: cannot create a curl handle", url);
  char errbuf[CURL_ERROR_SIZE] = "";
  curl_dl_http_defaults(curl, url, errbuf);
  through_proxy(curl, ap);
  CURL(curl_easy_setopt)(curl, CURLOPT_TIMEOUT, ADD_HEAD_MAX_SECONDS);
  CURL(curl_easy_setopt)(curl, CURLOPT_NOBODY, 1L);
  CURL(curl_easy_setopt)(curl, CURLOPT_FILETIME, 1L);
  CURL(curl_easy_setopt)(curl, CURLOPT_HEADERFUNCTION, on_header);
  CURL(curl_easy_setopt)(curl, CURLOPT_HEADERDATA, h);
  CURLcode rc = CURL(curl_easy_perform)(curl);
  CURL(curl_easy_getinfo)(curl, CURLINFO_RESPONSE_CODE, &h->status);
  long ft = -1;
  if (CURL(curl_easy_getinfo)(curl, CURLINFO_FILETIME, &ft) == CURLE_OK)
    h->mtime = ft;
  CURL(curl_easy_cleanup)(curl);
  if (h->refused[0]) {
    hutch_error_set(err, EACCES, "ADD %s: refused by the network policy: %s", url, h->refused);
    return hutch_error_hint(err, "allow the host for the build: --allow HOST[:PORT], or a --net-policy that allows it");
  }
  /* Anything else (a server that refuses HEAD, a network error) is for the
   * download to report. */
  (void)rc;
  return 0;
}

/* ---- GET: the ETag of the bytes themselves ----------------------------------------- */

/* The HEAD's ETag keys the layer only if every response that brought bytes
 * (each attempt of a resumed download) carried that same ETag: a server
 * may answer HEAD with one ETag and GET with other content, and the layer
 * would then pin that content under the ETag. */
struct get_check {
  struct add_proxy *ap;
  const char *want; /* the HEAD's ETag */
  char etag[256];   /* of the response being read */
  long status;
  bool mismatch;
};

static size_t on_get_header(char *line, size_t size, size_t n, void *data) {
  struct get_check *g = data;
  size_t len = size * n;
  if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
    g->etag[0] = '\0';
    const char *sp = memchr(line, ' ', len);
    g->status = sp ? strtol(sp + 1, NULL, 10) : 0;
    return len;
  }
  header_value(line, len, "ETag:", g->etag, sizeof(g->etag));
  /* The end of a response's headers: a 2xx one's body is the file's. */
  if ((len == 2 && line[0] == '\r') || (len == 1 && line[0] == '\n'))
    if (g->status >= 200 && g->status < 300 && strcmp(g->etag, g->want) != 0)
      g->mismatch = true;
  return len;
}

static void get_setup(void *curl, void *data) {
  struct get_check *g = data;
  through_proxy(curl, g->ap);
  /* An https CONNECT's answer is the proxy's, not a response with the file. */
  CURL(curl_easy_setopt)(curl, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
  CURL(curl_easy_setopt)(curl, CURLOPT_HEADERFUNCTION, on_get_header);
  CURL(curl_easy_setopt)(curl, CURLOPT_HEADERDATA, g);
}

/* ---- the file's name and place ---------------------------------------------------- */

/* The last component of the URL's path as libcurl reads it, still
 * percent-encoded ("" when it has none); NULL, with err, for a URL libcurl
 * refuses. */
static char *url_file_name(const char *url, hutch_error_t *err) {
  struct curl_dl_url u;
  if (curl_dl_url_parse(url, 0, &u, err) < 0)
    return NULL;
  const char *slash = u.path ? strrchr(u.path, '/') : NULL;
  char *name = xstrdup(slash ? slash + 1 : u.path ? u.path : "");
  curl_dl_url_clear(&u);
  return name;
}

/* The layer keyed (stage's key, ADD, text, extra) into *key; 1 when the
 * store has it (it is the stage's top now), 0 when not, -1. */
static int reuse(struct df_builder *b, struct df_stage *st, const char *text, const char *extra,
                 char key[SHA256_HEX_SIZE], hutch_error_t *err) {
  memcpy(key, st->key, SHA256_HEX_SIZE);
  df_key_next(key, "ADD", text, extra);
  if (df_layer_cached(b, st, key, err)) {
    memcpy(st->key, key, SHA256_HEX_SIZE);
    return 1;
  }
  return err && *err ? -1 : 0;
}

static bool usable_name(const char *n) {
  return *n && strcmp(n, ".") != 0 && strcmp(n, "..") != 0;
}

int df_add_url(struct df_builder *b, struct df_stage *st, const struct df_instr *in, const char *url,
               const struct df_copy *tmpl, hutch_error_t *err) {
  if (tmpl->n_sources != 1)
    return hutch_error_set(err, ENOTSUP, "ADD of a URL (%s) takes one source: one ADD for each URL", url);
  _cleanup_free_ char *name = url_file_name(url, err);
  if (name == NULL)
    return hutch_error_wrap(err, "ADD %s", url);
  if (tmpl->dest_is_dir && !usable_name(name))
    return hutch_error_set(err, EINVAL, "ADD %s: no file name in the URL: give the destination file's name", url);
  if (!usable_name(name)) {
    free(name);
    name = xstrdup("download");
  }
  const char *checksum = in->checksum;
  if (checksum && (strncmp(checksum, "sha256:", 7) != 0 || strlen(checksum) != 7 + 64 ||
                   strspn(checksum + 7, "0123456789abcdef") != 64))
    return hutch_error_set(err, EINVAL, "ADD --checksum=%s: sha256:<64 hex digits> is needed", checksum);
  if (!b->net) {
    hutch_error_set(err, ENETUNREACH, "ADD %s: the build has no network", url);
    return hutch_error_hint(err, "allow the host: --allow HOST[:PORT] (the download goes through hutch's proxy)");
  }
  struct import_budget budget;
  if (build_check_depth(&st->top, err) < 0 || curl_dl_load(err) < 0 ||
      policy_import_budget(b->o->policy, &budget, err) < 0)
    return -1;

  struct add_proxy ap = {.stop_fd = -1};
  struct store_stage dl = {.fd = -1};
  _cleanup_free_ char *text = NULL, *extra = NULL, *file = NULL;
  _cleanup_close_ int tree = -1;
  int ret = -1;
  text = xasprintf("ADD-URL %s --chown=%u:%u --chmod=%d %s %s", url, tmpl->uid, tmpl->gid, tmpl->chmod,
                   tmpl->dest_is_dir ? "into" : "as", tmpl->dest);
  char key[SHA256_HEX_SIZE];
  /* With --checksum, a rebuild asks the server nothing. */
  if (checksum) {
    extra = xasprintf("checksum %s", checksum);
    int r = reuse(b, st, text, extra, key, err);
    if (r != 0) {
      ret = r < 0 ? -1 : 1;
      goto out;
    }
  }
  if (proxy_start(b, &ap, err) < 0)
    goto out;
  struct head_info h;
  if (url_head(&ap, url, &h, err) < 0)
    goto out;
  /* A strong ETag names the content, as a checksum does. */
  bool by_etag = false;
  if (extra == NULL && h.status == 200 && h.etag[0] == '"') {
    by_etag = true;
    extra = xasprintf("etag %s", h.etag);
    int r = reuse(b, st, text, extra, key, err);
    if (r != 0) {
      ret = r < 0 ? -1 : 1;
      goto out;
    }
  }
  if (store_stage_begin(b->store, &dl, err) < 0)
    goto out;
  file = xasprintf("%s/%s", dl.rootfs, name);
  char hex[SHA256_HEX_SIZE];
  struct get_check g = {.ap = &ap, .want = h.etag};
  struct download_request req = {
      .url = url,
      .dest = file,
      .sha256 = checksum,
      .sha256_out = hex,
      .max_size = budget.bytes,
      .setup = get_setup,
      .setup_data = &g,
  };
  df_say(b, "  downloading %s", url);
  if (download_file(&req, err) < 0) {
    if (err && *err && (*err)->errnum == EFBIG)
      hutch_error_hint(err, "the policy's import budget (%s) bounds what a build may download", budget.policy);
    goto out;
  }
  proxy_stop(&ap);
  if (by_etag && g.mismatch) {
    df_say(b, "  %s: the download's ETag is not the HEAD's: the layer is keyed by its content", url);
    free(extra);
    extra = NULL;
  }
  if (extra == NULL) {
    extra = xasprintf("content %s", hex);
    int r = reuse(b, st, text, extra, key, err);
    if (r != 0) {
      ret = r < 0 ? -1 : 1;
      goto out;
    }
  }
  /* Docker: mode 0600 unless --chmod, mtime from Last-Modified. */
  tree = open(dl.rootfs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (tree < 0 || fchmodat(tree, name, 0600, 0) < 0) {
    hutch_error_sys(err, "ADD: set up %s", file);
    goto out;
  }
  if (h.mtime > 0) {
    struct timespec times[2] = {{.tv_sec = h.mtime}, {.tv_sec = h.mtime}};
    (void)utimensat(tree, name, times, AT_SYMLINK_NOFOLLOW);
  }
  char *sources[] = {name, NULL};
  struct df_copy c = *tmpl;
  c.trees = &tree;
  c.n_trees = 1;
  c.context = false;
  c.ignore = NULL;
  c.sources = sources;
  c.audit_from = url;
  memcpy(st->key, key, sizeof(key));
  ret = df_layer_copy(b, st, in, &c, NULL, st->key, err);
out:
  proxy_stop(&ap);
  if (dl.fd >= 0)
    store_stage_abort(b->store, &dl);
  return ret;
}

/* ---- local archives ------------------------------------------------------------------ */

/* Docker unpacks a tar that is uncompressed or compressed with gzip,
 * bzip2, xz or zstd, told by its content, not its name; anything else
 * (lz4, a tar with no entry, not a tar) is copied as a file. */
static bool is_archive(int fd) {
  unsigned char m[6] = {0};
  if (pread(fd, m, sizeof(m), 0) < 0)
    return false;
  bool compressed = (m[0] == 0x1f && m[1] == 0x8b) || (m[0] == 'B' && m[1] == 'Z' && m[2] == 'h') ||
                    memcmp(m,
                           "\xfd"
                           "7zXZ\0",
                           6) == 0 ||
                    memcmp(m, "\x28\xb5\x2f\xfd", 4) == 0;
  bool other = (m[0] == 0x04 && m[1] == 0x22 && m[2] == 0x4d && m[3] == 0x18) || (m[0] == 0x5d && m[1] == 0);
  if (other)
    return false;
  _cleanup_error_ hutch_error_t e = NULL;
  if (archive_dl_load(&e) < 0)
    return false;
  struct archive *a = ARCHIVE(archive_read_new)();
  if (a == NULL)
    return false;
  ARCHIVE(archive_read_support_format_tar)(a);
  if (compressed)
    archive_dl_support_filters(a);
  struct archive_entry *entry;
  bool yes = ARCHIVE(archive_read_open_fd)(a, fd, 65536) == ARCHIVE_OK &&
             ARCHIVE(archive_read_next_header)(a, &entry) == ARCHIVE_OK;
  ARCHIVE(archive_read_free)(a);
  return yes;
}

struct add_item {
  char *rel;
  int fd; /* an archive's, open for reading; -1: copied */
};

struct add_fill {
  const struct df_copy *tmpl;
  struct add_item *items;
  size_t n;
  struct import_budget budget;
};

/* Sources in order, each copied (runs of them together) or unpacked. */
static int fill_add(struct df_builder *b, const char *layer, int layer_fd, void *data, hutch_error_t *err) {
  struct add_fill *f = data;
  uint64_t used_bytes = 0, used_entries = 0;
  for (size_t i = 0; i < f->n;) {
    if (f->items[i].fd < 0) {
      size_t j = i;
      while (j < f->n && f->items[j].fd < 0)
        j++;
      _cleanup_free_ char **sources = xcalloc(j - i + 1, sizeof(*sources));
      for (size_t k = i; k < j; k++)
        sources[k - i] = f->items[k].rel;
      struct df_copy c = *f->tmpl;
      c.sources = sources;
      c.n_sources = j - i;
      if (df_layer_fill_copy(b, &c, NULL, layer_fd, err) < 0)
        return -1;
      i = j;
      continue;
    }
    /* An archive goes into the destination as a directory, made and then
     * opened without following a link or a "..": the unpacker enters that
     * fd, never a path the image's tree could redirect. */
    if (df_layer_fill_copy(b, NULL, f->tmpl->dest, layer_fd, err) < 0)
      return -1;
    _cleanup_close_ int target_fd = -1;
    if (df_layer_mkdirs(layer_fd, f->tmpl->dest, 0, 0, &target_fd, err) < 0)
      return hutch_error_wrap(err, "ADD %s", f->items[i].rel);
    _cleanup_free_ char *target = xasprintf("%s/%s", layer, f->tmpl->dest + strspn(f->tmpl->dest, "/"));
    struct stat s;
    if (fstat(f->items[i].fd, &s) < 0)
      return hutch_error_sys(err, "ADD %s", f->items[i].rel);
    struct unpack_request req = {
        .fd = f->items[i].fd,
        .total = (uint64_t)s.st_size,
        .target = target,
        .target_fd = target_fd,
        .maps = b->maps,
        .add = true,
        .budget = &f->budget,
        .used_bytes = used_bytes,
        .used_entries = used_entries,
    };
    uint8_t digest[SHA256_DIGEST_SIZE];
    struct unpack_stats stats = {0};
    if (unpack_archive(&req, digest, &stats, err) < 0)
      return hutch_error_wrap(err, "ADD %s: unpack it", f->items[i].rel);
    build_audit_file(&b->audit, "unpack", f->items[i].rel, f->tmpl->dest, (uint64_t)s.st_size, digest);
    used_bytes += stats.size;
    used_entries += stats.headers;
    if (stats.skipped_special)
      df_say(b, "  %s: %llu device nodes, fifos or sockets left out", f->items[i].rel,
             (unsigned long long)stats.skipped_special);
    i++;
  }
  return 0;
}

int df_add_local(struct df_builder *b, struct df_stage *st, const struct df_instr *in, const struct df_copy *c,
                 const char *key, hutch_error_t *err) {
  _cleanup_strv_ char **rels = df_copy_expand(c, err);
  if (rels == NULL)
    return -1;
  struct add_fill f = {.tmpl = c};
  size_t n = 0;
  while (rels[n])
    n++;
  f.items = xcalloc(n + 1, sizeof(*f.items));
  bool any = false;
  int ret = -1;
  for (size_t i = 0; i < n; i++) {
    f.items[i] = (struct add_item){.rel = rels[i], .fd = -1};
    f.n++;
    struct stat s;
    _cleanup_close_ int fd = df_copy_open_source(c, rels[i], &s, err);
    if (fd < 0)
      goto out;
    if (!S_ISREG(s.st_mode))
      continue;
    _cleanup_free_ char *proc = xasprintf("/proc/self/fd/%d", fd);
    int rfd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (rfd < 0) {
      hutch_error_sys(err, "open %s", rels[i]);
      goto out;
    }
    if (is_archive(rfd)) {
      f.items[i].fd = rfd;
      any = true;
    } else {
      close(rfd);
    }
  }
  if (!any) {
    ret = df_layer_copy(b, st, in, c, NULL, key, err);
    goto out;
  }
  if (policy_import_budget(b->o->policy, &f.budget, err) < 0)
    goto out;
  ret = df_layer_make(b, st, in, key, fill_add, &f, err);
out:
  for (size_t i = 0; i < f.n; i++)
    if (f.items[i].fd >= 0)
      close(f.items[i].fd);
  free(f.items);
  return ret;
}
