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

/* The path of a pax extended header's records, NULL when it has none. */
static char *pax_path(const char *data, size_t len) {
  size_t off = 0;
  char *path = NULL;
  while (off < len) {
    char *end;
    unsigned long reclen = strtoul(data + off, &end, 10);
    if (reclen == 0 || end >= data + len || *end != ' ' || off + reclen > len)
      break;
    const char *kv = end + 1;
    size_t kvlen = (size_t)(data + off + reclen - kv);
    if (kvlen > 5 && strncmp(kv, "path=", 5) == 0) {
      free(path);
      path = xstrndup(kv + 5, kvlen - 6); /* without the '\n' */
    }
    off += reclen;
  }
  return path;
}

int tar_index_read(int fd, struct tar_index *out, hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  struct stat st;
  if (fstat(fd, &st) < 0)
    return hutch_error_sys(err, "stat the archive");
  if (!S_ISREG(st.st_mode))
    return 0;
  uint64_t fsize = (uint64_t)st.st_size, off = 0;
  _cleanup_free_ char *longname = NULL;
  unsigned char b[BLOCK];
  struct tar_index idx = {0};
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
      if (idx.n == 0 && off == 0)
        goto not_tar;
      ret = hutch_error_set(err, EINVAL, "the archive has a damaged header at byte %llu", (unsigned long long)off);
      goto fail;
    }
    uint64_t size = octal(b + 124, 12);
    uint64_t data = off + BLOCK;
    if (size > fsize || data + size > fsize) {
      ret = hutch_error_set(err, EINVAL, "the archive is truncated (a member at byte %llu)", (unsigned long long)off);
      goto fail;
    }
    off = data + ((size + BLOCK - 1) / BLOCK) * BLOCK;
    char type = (char)b[156];
    if (type == 'L' || type == 'x') {
      if (size > MAX_LONGNAME)
        continue;
      _cleanup_free_ char *text = xmalloc(size + 1);
      if (pread(fd, text, size, (off_t)data) != (ssize_t)size) {
        ret = hutch_error_sys(err, "read the archive at byte %llu", (unsigned long long)data);
        goto fail;
      }
      text[size] = '\0';
      free(longname);
      longname = type == 'L' ? xstrndup(text, size) : pax_path(text, size);
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
    _cleanup_free_ char *clean = layer_clean_path(name);
    /* The first name an image archive would not hold ends the walk: a
     * rootfs tarball is told apart after a header or two. */
    if (!oci_archive_member_name(clean))
      goto not_tar;
    if (type != '0' && type != '\0' && type != '7')
      continue; /* directories, links: an image archive's blobs are regular files */
    if (idx.n >= MAX_MEMBERS) {
      ret = hutch_error_set(err, E2BIG, "the archive has more than %d members", MAX_MEMBERS);
      goto fail;
    }
    idx.members = xrealloc(idx.members, (idx.n + 1) * sizeof(*idx.members));
    idx.members[idx.n++] = (struct tar_member){.name = steal_pointer(&clean), .offset = data, .size = size};
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

const struct tar_member *tar_index_find(const struct tar_index *idx, const char *name) {
  for (size_t i = idx->n; i-- > 0;)
    if (strcmp(idx->members[i].name, name) == 0)
      return &idx->members[i];
  return NULL;
}

void tar_index_clear(struct tar_index *idx) {
  for (size_t i = 0; i < idx->n; i++)
    free(idx->members[i].name);
  free(idx->members);
  memset(idx, 0, sizeof(*idx));
}
