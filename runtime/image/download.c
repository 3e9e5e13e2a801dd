/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "download.h"

#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>

#include "curl_dl.h"
#include "util.h"

/* An interrupted transfer is resumed at once while each attempt brings more bytes. */
#define MAX_ATTEMPTS 5
#define HASH_CHUNK (1024 * 1024)

struct transfer {
  CURL *curl;
  int fd;           /* DEST.part */
  uint64_t offset;  /* bytes already in DEST.part when the request was sent */
  uint64_t written; /* bytes written by this request */
  bool started;     /* the first body byte has been seen and the file positioned */
  bool discard;     /* an HTTP error page: swallow it */
  bool write_failed;
  int write_errno;
  bool too_big; /* past max_size */
  uint64_t max_size;
  long status;
  hutch_progress_fn progress;
  void *progress_data;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata) {
  struct transfer *t = userdata;
  size_t len = size * nmemb;
  if (!t->started) {
    t->started = true;
    CURL(curl_easy_getinfo)(t->curl, CURLINFO_RESPONSE_CODE, &t->status);
    if (t->status >= 400) {
      t->discard = true;
    } else if (t->status != 206 && t->offset > 0) {
      /* The server ignored the Range: it sends the whole file again. */
      if (ftruncate(t->fd, 0) < 0 || lseek(t->fd, 0, SEEK_SET) < 0) {
        t->write_failed = true;
        t->write_errno = errno;
        return 0;
      }
      t->offset = 0;
    }
  }
  if (t->discard)
    return len;
  if (t->max_size && t->offset + t->written + len > t->max_size) {
    t->too_big = true;
    return 0;
  }
  if (write_all(t->fd, data, len) < 0) {
    t->write_failed = true;
    t->write_errno = errno;
    return 0;
  }
  t->written += len;
  return len;
}

static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
  struct transfer *t = userdata;
  if (t->progress && !t->discard && t->started)
    t->progress(t->offset + (uint64_t)dlnow, dltotal > 0 ? t->offset + (uint64_t)dltotal : 0, t->progress_data);
  return 0;
}

bool download_network_error(const hutch_error_t err) {
  if (err == NULL)
    return false;
  switch (err->errnum) {
  case EHOSTUNREACH:
  case ECONNREFUSED:
  case ETIMEDOUT:
  case ENETUNREACH:
  case ENETDOWN:
  case ECONNRESET:
    return true;
  default:
    return false;
  }
}

static int http_errno(long status) {
  switch (status) {
  case 404:
  case 410:
    return ENOENT;
  case 401:
  case 403:
    return EACCES;
  default:
    return EPROTO;
  }
}

static int hash_fd(int fd, char hex[SHA256_HEX_SIZE]) {
  _cleanup_free_ char *buf = xmalloc(HASH_CHUNK);
  struct sha256_ctx ctx;
  sha256_init(&ctx);
  off_t off = 0;
  for (;;) {
    ssize_t n = pread(fd, buf, HASH_CHUNK, off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -1;
    if (n == 0)
      break;
    sha256_update(&ctx, buf, (size_t)n);
    off += n;
  }
  uint8_t d[SHA256_DIGEST_SIZE];
  sha256_final(&ctx, d);
  sha256_hex(d, hex);
  return 0;
}

/* One request.  Returns 0 when the whole body is in the file, 1 when the
 * transfer broke off after some bytes (worth resuming), -1 otherwise. */
static int transfer_once(const struct download_request *req, struct curl_slist *headers, int fd, hutch_error_t *err) {
  struct stat st;
  if (fstat(fd, &st) < 0)
    return hutch_error_sys(err, "download %s: stat %s.part", req->url, req->dest);
  CURL *curl = CURL(curl_easy_init)();
  if (curl == NULL)
    return hutch_error_set(err, ENOMEM, "download %s: cannot create a curl handle", req->url);
  struct transfer t = {
      .curl = curl,
      .fd = fd,
      .offset = (uint64_t)st.st_size,
      .progress = req->progress,
      .progress_data = req->progress_data,
      .max_size = req->max_size,
  };
  if (lseek(fd, 0, SEEK_END) < 0) {
    CURL(curl_easy_cleanup)(curl);
    return hutch_error_sys(err, "download %s: seek %s.part", req->url, req->dest);
  }
  char errbuf[CURL_ERROR_SIZE] = "";
  curl_dl_http_defaults(curl, req->url, errbuf);
  CURL(curl_easy_setopt)(curl, CURLOPT_WRITEFUNCTION, on_body);
  CURL(curl_easy_setopt)(curl, CURLOPT_WRITEDATA, &t);
  CURL(curl_easy_setopt)(curl, CURLOPT_XFERINFOFUNCTION, on_progress);
  CURL(curl_easy_setopt)(curl, CURLOPT_XFERINFODATA, &t);
  CURL(curl_easy_setopt)(curl, CURLOPT_NOPROGRESS, 0L);
  if (headers)
    CURL(curl_easy_setopt)(curl, CURLOPT_HTTPHEADER, headers);
  if (req->setup)
    req->setup(curl, req->setup_data);
  if (t.offset > 0)
    CURL(curl_easy_setopt)(curl, CURLOPT_RESUME_FROM_LARGE, (curl_off_t)t.offset);
  hutch_debug("download %s: %s from byte %" PRIu64, req->url, t.offset ? "resuming" : "starting", t.offset);

  CURLcode rc = CURL(curl_easy_perform)(curl);
  long status = 0;
  CURL(curl_easy_getinfo)(curl, CURLINFO_RESPONSE_CODE, &status);
  char *effective = NULL;
  CURL(curl_easy_getinfo)(curl, CURLINFO_EFFECTIVE_URL, &effective);
  _cleanup_free_ char *where = effective && strcmp(effective, req->url) != 0
                                   ? xasprintf("%s (redirected to %s)", req->url, effective)
                                   : xstrdup(req->url);
  int ret = 0;
  if (t.too_big) {
    ret = hutch_error_set(err, EFBIG, "download %s: larger than the %" PRIu64 " bytes expected", where, req->max_size);
  } else if (t.write_failed) {
    errno = t.write_errno;
    ret = hutch_error_sys(err, "download %s: write %s.part", where, req->dest);
  } else if (status >= 400 || (rc == CURLE_OK && !t.started && status != 200 && status != 206 && status != 0)) {
    if (status == 416 && t.offset > 0)
      ret = 2; /* the range is past the end: the .part is not a prefix of this file */
    else {
      ret = hutch_error_set(err, http_errno(status), "download %s: the server answered HTTP %ld", where, status);
      if (status == 404 || status == 410)
        hutch_error_hint(err, "the file is not (or no longer) at this address: check the URL or the manifest");
      else if (status == 407)
        hutch_error_hint(err, "the proxy wants credentials: put them in https_proxy (http://USER:PASS@HOST:PORT)");
    }
  } else if (rc == CURLE_RANGE_ERROR && t.offset > 0) {
    ret = 2; /* the server cannot resume: start over */
  } else if (rc != CURLE_OK) {
    ret = hutch_error_set(err, curl_dl_errno(rc), "download %s: %s", where,
                          errbuf[0] ? errbuf : CURL(curl_easy_strerror)(rc));
    if (t.written > 0 && (rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR || rc == CURLE_OPERATION_TIMEDOUT ||
                          rc == CURLE_GOT_NOTHING || rc == CURLE_SEND_ERROR))
      ret = 1;
    else if (curl_dl_errno(rc) != EIO)
      hutch_error_hint(err, "check the network; a proxy is taken from https_proxy/http_proxy (and no_proxy)");
  }
  CURL(curl_easy_cleanup)(curl);
  return ret;
}

int download_file(const struct download_request *req, hutch_error_t *err) {
  const char *expect = req->sha256;
  if (expect && strncmp(expect, "sha256:", 7) == 0)
    expect += 7;
  if (expect && strlen(expect) != SHA256_HEX_SIZE - 1)
    return hutch_error_set(err, EINVAL, "download %s: \"%s\" is not a sha256 digest", req->url, req->sha256);
  if (curl_dl_load(err) < 0)
    return hutch_error_wrap(err, "download %s", req->url);

  _cleanup_free_ char *part = xasprintf("%s.part", req->dest);
  /* Two downloads of the same file take turns: the second waits for the
   * first, then finds its .part gone (renamed into place) and starts anew. */
  _cleanup_close_ int fd = -1;
  for (;;) {
    fd = open(part, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
      return hutch_error_sys(err, "download %s: open %s", req->url, part);
    if (flock(fd, LOCK_EX) < 0)
      return hutch_error_sys(err, "download %s: lock %s", req->url, part);
    struct stat held, now;
    if (fstat(fd, &held) == 0 && stat(part, &now) == 0 && held.st_ino == now.st_ino && held.st_dev == now.st_dev)
      break;
    close(fd);
    fd = -1;
  }

  struct curl_slist *headers = NULL;
  for (const char *const *h = req->headers; h && *h; h++)
    headers = CURL(curl_slist_append)(headers, *h);

  int r = -1;
  bool restarted = false;
  for (int attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    _cleanup_error_ hutch_error_t e = NULL;
    r = transfer_once(req, headers, fd, &e);
    if (r == 2 && !restarted) {
      /* A stale .part of some other file: start over once. */
      restarted = true;
      if (ftruncate(fd, 0) < 0) {
        r = hutch_error_sys(err, "download %s: truncate %s", req->url, part);
        break;
      }
      attempt--;
      continue;
    }
    if (r == 1 && attempt < MAX_ATTEMPTS) {
      hutch_debug("download %s: %s; resuming", req->url, e->msg);
      continue;
    }
    if (r != 0) {
      if (e)
        hutch_error_move(err, &e);
      else
        hutch_error_set(err, EPROTO, "download %s: the server refused the range of a partial download", req->url);
      if (r == 1)
        hutch_error_hint(err, "run the command again: it resumes from %s", part);
      r = -1;
    }
    break;
  }
  CURL(curl_slist_free_all)(headers);
  if (r < 0) {
    /* Keep a partial download for the next attempt to resume, but not an
     * empty file, nor one the server now says does not exist, nor one
     * larger than the file may be. */
    struct stat st;
    if ((*err && ((*err)->errnum == ENOENT || (*err)->errnum == EFBIG)) || (fstat(fd, &st) == 0 && st.st_size == 0))
      unlink(part);
    return -1;
  }

  char hex[SHA256_HEX_SIZE];
  if (hash_fd(fd, hex) < 0)
    return hutch_error_sys(err, "download %s: read %s", req->url, part);
  if (expect && strcasecmp(hex, expect) != 0) {
    unlink(part);
    hutch_error_set(err, EBADMSG,
                    "download %s: checksum mismatch: expected sha256:%s, got sha256:%s; the download was deleted",
                    req->url, expect, hex);
    return hutch_error_hint(err, "the file on the server is not the one the manifest pins: a corrupted mirror, a "
                                 "proxy rewriting it, or an outdated manifest");
  }
  if (fsync(fd) < 0 || rename(part, req->dest) < 0)
    return hutch_error_sys(err, "download %s: rename %s to %s", req->url, part, req->dest);
  if (req->sha256_out)
    memcpy(req->sha256_out, hex, SHA256_HEX_SIZE);
  return 0;
}
