/* SPDX-License-Identifier: Apache-2.0 */
/* The images a task's agent wrote, for report.html's viewer: the PNG, JPEG,
 * GIF and WebP files at the top of the run's files/ (what hutch run copied
 * back from the sandbox), each embedded as a data: URI.  The files are the
 * sandbox's: a file is taken only when it is regular (no symlink, FIFO or
 * device), its first bytes are the format's signature (the type comes from
 * the bytes, never the name; no SVG, which can hold script), and it is small;
 * a task gets a few and a page a bounded total, so a sandbox cannot make the
 * report large. */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "util.h"

/* Per image, per task, per page (the page's budget is the caller's). */
#define IMAGE_MAX ((size_t)512 << 10)
#define IMAGES_PER_TASK 8

static const char *image_type(const unsigned char *b, size_t n) {
  if (n >= 8 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0)
    return "image/png";
  if (n >= 3 && memcmp(b, "\xff\xd8\xff", 3) == 0)
    return "image/jpeg";
  if (n >= 6 && (memcmp(b, "GIF87a", 6) == 0 || memcmp(b, "GIF89a", 6) == 0))
    return "image/gif";
  if (n >= 12 && memcmp(b, "RIFF", 4) == 0 && memcmp(b + 8, "WEBP", 4) == 0)
    return "image/webp";
  return NULL;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

cJSON *bench_report_images(int run_fd, size_t *budget) {
  cJSON *list = cJSON_CreateArray();
  _cleanup_close_ int dfd = run_fd >= 0 ? openat(run_fd, "files", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
  DIR *d = dfd >= 0 ? fdopendir(dup(dfd)) : NULL;
  if (d == NULL)
    return list;
  /* Sorted, so the page does not depend on the directory's order; at most
   * a bounded number of names looked at. */
  char *names[256];
  size_t n = 0;
  struct dirent *e;
  while (n < 256 && (e = readdir(d)) != NULL) {
    const char *dot = strrchr(e->d_name, '.');
    if (e->d_name[0] == '.' || dot == NULL || (e->d_type != DT_REG && e->d_type != DT_UNKNOWN))
      continue;
    if (strcasecmp(dot, ".png") && strcasecmp(dot, ".jpg") && strcasecmp(dot, ".jpeg") && strcasecmp(dot, ".gif") &&
        strcasecmp(dot, ".webp"))
      continue;
    names[n++] = xstrdup(e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof(*names), by_name);
  int taken = 0;
  for (size_t i = 0; i < n; i++) {
    size_t len = 0;
    _cleanup_free_ char *bytes = NULL;
    const char *type = NULL, *why = NULL;
    if (taken >= IMAGES_PER_TASK)
      why = "more images than the page shows";
    else if ((bytes = read_regular_file_at(dfd, names[i], IMAGE_MAX, &len)) == NULL)
      why = errno == EFBIG ? "larger than 512 KiB" : "not a regular file";
    else if ((type = image_type((const unsigned char *)bytes, len)) == NULL)
      why = "not a PNG, JPEG, GIF or WebP image";
    else if ((len + 2) / 3 * 4 + 32 > *budget)
      why = "the page's images are over their budget";
    cJSON *img = cJSON_CreateObject();
    cJSON_AddStringToObject(img, "name", names[i]);
    if (why) {
      cJSON_AddStringToObject(img, "omitted", why);
    } else {
      _cleanup_free_ char *b64 = base64_encode(bytes, len);
      _cleanup_free_ char *uri = xasprintf("data:%s;base64,%s", type, b64);
      *budget -= strlen(uri);
      cJSON_AddStringToObject(img, "src", uri);
      taken++;
    }
    cJSON_AddItemToArray(list, img);
    free(names[i]);
  }
  return list;
}
