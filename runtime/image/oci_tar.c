/* SPDX-License-Identifier: Apache-2.0 */
/* Walking the headers of an uncompressed tar file (oci_tar.h). */
#include "config.h"

#include "oci_tar.h"

#include <string.h>
#include <sys/stat.h>

#include "layer.h"
#include "oci_image.h"
#include "util.h"

#define BLOCK 512
/* More members than any image archive has: a bound on what a hostile file
 * can make us allocate. */
#define MAX_MEMBERS 100000
#define MAX_LONGNAME 65536

static uint64_t octal(const unsigned char *p, size_t len) {
  /* GNU base-256 for sizes of 8 GiB and more. */
  if (p[0] & 0x80) {
    uint64_t v = p[0] & 0x7f;
    for (size_t i = 1; i < len; i++)
      v = (v << 8) | p[i];
    return v;
  }
  uint64_t v = 0;
  size_t i = 0;
  while (i < len && (p[i] == ' ' || p[i] == '\0'))
    i++;
  for (; i < len && p[i] >= '0' && p[i] <= '7'; i++)
    v = v * 8 + (uint64_t)(p[i] - '0');
  return v;
}

bool tar_header_valid(const unsigned char b[BLOCK]) {
  uint64_t want = octal(b + 148, 8);
  uint64_t sum = 0;
  for (size_t i = 0; i < BLOCK; i++)
    sum += (i >= 148 && i < 156) ? ' ' : b[i];
  if (sum != want || sum == 8 * ' ')
    return false;
  return memcmp(b + 257, "ustar", 5) == 0 || b[156] == '0' || b[156] == '\0' || b[156] == '5';
}

static bool all_zero(const unsigned char *b) {
  for (size_t i = 0; i < BLOCK; i++)
    if (b[i])
      return false;
  return true;
}

/* The value of `key` in a pax extended header's records, NULL when absent. */
static char *pax_value(const char *data, size_t len, const char *key) {
  size_t off = 0, klen = strlen(key);
  char *value = NULL;
  while (off < len) {
    char *end;
    unsigned long reclen = strtoul(data + off, &end, 10);
    if (reclen == 0 || end >= data + len || *end != ' ' || off + reclen > len)
      break;
    const char *kv = end + 1;
    size_t kvlen = (size_t)(data + off + reclen - kv);
    if (kvlen > klen + 1 && strncmp(kv, key, klen) == 0 && kv[klen] == '=') {
      free(value);
      value = xstrndup(kv + klen + 1, kvlen - klen - 2); /* without the '\n' */
    }
    off += reclen;
  }
  return value;
}

static char *header_name(const unsigned char *b, size_t off, size_t len) {
  return xstrndup((const char *)b + off, strnlen((const char *)b + off, len));
}

/* Every header is read, since the member that marks an image archive may
 * come last (podman writes manifest.json at the end): an image archive that
 * is not understood must be refused, never unpacked as a tree.  A rootfs
 * tarball costs one 512-byte read per member here. */
int tar_index_read(int fd, struct tar_index *out, hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  struct stat st;
  if (fstat(fd, &st) < 0)
    return hutch_error_sys(err, "stat the archive");
  if (!S_ISREG(st.st_mode))
    return 0;
  uint64_t fsize = (uint64_t)st.st_size, off = 0;
  _cleanup_free_ char *longname = NULL, *longlink = NULL;
  unsigned char b[BLOCK];
  struct tar_index idx = {0};
  bool marked = false, overflow = false;
  int ret = 0;
  for (;;) {
    if (off + BLOCK > fsize)
      break;
    if (pread(fd, b, BLOCK, (off_t)off) != BLOCK) {
      ret = hutch_error_sys(err, "read the archive at byte %llu", (unsigned long long)off);
      goto fail;
    }
    if (all_zero(b))
      break;
    if (!tar_header_valid(b)) {
      if (!marked)
        goto not_tar; /* a compressed file, or a damaged tarball the unpacker reports */
      ret = hutch_error_set(err, EINVAL, "the archive has a damaged header at byte %llu", (unsigned long long)off);
      goto fail;
    }
    uint64_t size = octal(b + 124, 12);
    uint64_t data = off + BLOCK;
    char type = (char)b[156];
    if (size > fsize || data + size > fsize) {
      _cleanup_free_ char *raw = longname ? xstrdup(longname) : header_name(b, 0, 100);
      _cleanup_free_ char *clean = layer_clean_path(raw);
      if (!marked && !oci_archive_member_name(clean))
        goto not_tar;
      ret = hutch_error_set(err, EINVAL, "the archive is truncated (a member at byte %llu)", (unsigned long long)off);
      goto fail;
    }
    off = data + ((size + BLOCK - 1) / BLOCK) * BLOCK;
    if (type == 'L' || type == 'K' || type == 'x') {
      if (size > MAX_LONGNAME)
        continue;
      _cleanup_free_ char *text = xmalloc(size + 1);
      if (pread(fd, text, size, (off_t)data) != (ssize_t)size) {
        ret = hutch_error_sys(err, "read the archive at byte %llu", (unsigned long long)data);
        goto fail;
      }
      text[size] = '\0';
      if (type == 'x') {
        char *p = pax_value(text, size, "path");
        if (p) {
          free(longname);
          longname = p;
        }
        p = pax_value(text, size, "linkpath");
        if (p) {
          free(longlink);
          longlink = p;
        }
      } else {
        char **slot = type == 'L' ? &longname : &longlink;
        free(*slot);
        *slot = xstrndup(text, size);
      }
      continue;
    }
    if (type == 'g')
      continue;
    char name[BLOCK];
    if (longname) {
      snprintf(name, sizeof(name), "%s", longname);
      free(longname);
      longname = NULL;
    } else if (memcmp(b + 257, "ustar", 5) == 0 && b[345]) {
      snprintf(name, sizeof(name), "%.155s/%.100s", (const char *)b + 345, (const char *)b);
    } else {
      snprintf(name, sizeof(name), "%.100s", (const char *)b);
    }
    _cleanup_free_ char *link = longlink ? steal_pointer(&longlink) : header_name(b, 157, 100);
    _cleanup_free_ char *clean = layer_clean_path(name);
    marked = marked || oci_archive_marker(clean);
    if (type != '0' && type != '\0' && type != '7' && type != '2')
      continue; /* directories, hard links, devices: an image archive's blobs are files or symlinks to them */
    if (overflow || idx.n >= MAX_MEMBERS) {
      overflow = true;
      continue;
    }
    idx.members = xrealloc(idx.members, (idx.n + 1) * sizeof(*idx.members));
    idx.members[idx.n++] = (struct tar_member){
        .name = steal_pointer(&clean),
        .link = type == '2' ? steal_pointer(&link) : NULL,
        .offset = data,
        .size = type == '2' ? 0 : size,
    };
  }
  if (!marked)
    goto not_tar;
  if (overflow) {
    ret = hutch_error_set(err, E2BIG, "the image archive has more than %d members", MAX_MEMBERS);
    goto fail;
  }
  *out = idx;
  return 1;
not_tar:
  tar_index_clear(&idx);
  return 0;
fail:
  tar_index_clear(&idx);
  return ret;
}

char *tar_link_target(const char *member, const char *target) {
  if (target == NULL || target[0] == '\0' || target[0] == '/')
    return NULL;
  const char *slash = strrchr(member, '/');
  _cleanup_free_ char *joined = slash ? xasprintf("%.*s/%s", (int)(slash - member), member, target) : xstrdup(target);
  /* Resolve "." and ".." by hand: a ".." above the archive's top is refused. */
  char *out = xmalloc(strlen(joined) + 1);
  size_t len = 0;
  char *save = NULL;
  for (char *c = strtok_r(joined, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
    if (strcmp(c, ".") == 0)
      continue;
    if (strcmp(c, "..") == 0) {
      if (len == 0) {
        free(out);
        return NULL;
      }
      while (len > 0 && out[len - 1] != '/')
        len--;
      if (len > 0)
        len--;
      continue;
    }
    if (len)
      out[len++] = '/';
    memcpy(out + len, c, strlen(c));
    len += strlen(c);
  }
  out[len] = '\0';
  if (len == 0) {
    free(out);
    return NULL;
  }
  return out;
}

/* Follows symlinks inside the archive only (podman's <id>/layer.tar points
 * at ../<digest>.tar); a bounded number of hops. */
const struct tar_member *tar_index_resolve(const struct tar_index *idx, const char *name) {
  _cleanup_free_ char *cur = xstrdup(name);
  for (int hops = 0; hops < 8; hops++) {
    const struct tar_member *m = tar_index_find(idx, cur);
    if (m == NULL || m->link == NULL)
      return m;
    char *next = tar_link_target(m->name, m->link);
    if (next == NULL)
      return NULL;
    free(cur);
    cur = next;
  }
  return NULL;
}

const struct tar_member *tar_index_find(const struct tar_index *idx, const char *name) {
  for (size_t i = idx->n; i-- > 0;)
    if (strcmp(idx->members[i].name, name) == 0)
      return &idx->members[i];
  return NULL;
}

void tar_index_clear(struct tar_index *idx) {
  for (size_t i = 0; i < idx->n; i++) {
    free(idx->members[i].name);
    free(idx->members[i].link);
  }
  free(idx->members);
  memset(idx, 0, sizeof(*idx));
}
