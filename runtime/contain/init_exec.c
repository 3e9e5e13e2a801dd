/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "init_exec.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "seccomp_policy.h"
#include "util.h"

static char *init_program; /* hutch_set_init_program's */

int hutch_set_init_program(const char *path, hutch_error_t *err) {
  if (path != NULL) {
    struct stat st;
    if (path[0] != '/')
      return hutch_error_set(err, EINVAL, "init program %s: not an absolute path", path);
    if (stat(path, &st) < 0)
      return hutch_error_sys(err, "init program %s", path);
    if (!S_ISREG(st.st_mode) || access(path, X_OK) < 0)
      return hutch_error_set(err, EINVAL, "init program %s: not an executable file", path);
  }
  free(init_program);
  init_program = path ? xstrdup(path) : NULL;
  return 0;
}

char *init_exec_path(void) {
  if (init_program != NULL)
    return xstrdup(init_program);
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash != NULL) {
      *slash = '\0';
      char *beside = xasprintf("%s/" INIT_EXEC_NAME, self);
      if (access(beside, X_OK) == 0)
        return beside;
      free(beside);
    }
  }
  char *installed = xasprintf("%s/" INIT_EXEC_NAME, HUTCH_LIBEXECDIR);
  if (access(installed, X_OK) == 0)
    return installed;
  free(installed);
  return NULL;
}

#define BLOB_MAGIC "HUTCHINI"
#define BLOB_VERSION 3u
/* Bounds the decoder holds the blob to: a program no larger than the
 * kernel takes, an environment no larger than exec takes. */
#define BLOB_MAX_ENV_BYTES (1u << 21)

struct blob_head {
  char magic[8];
  uint32_t version;
  int32_t listen_fd;
  int32_t memwatch_fd;
  int32_t scratch_fd, netns_fd;
  uint64_t nofile, rlimit_data, memory_watch;
  uint32_t die_with_creator;
  uint32_t bpf_len;
  uint32_t n_env;
  uint32_t env_bytes;
};

void *init_config_encode(const struct init_config *cfg, size_t *len) {
  struct blob_head h = {
      .magic = BLOB_MAGIC,
      .version = BLOB_VERSION,
      .listen_fd = cfg->listen_fd,
      .memwatch_fd = cfg->memwatch_fd,
      .scratch_fd = cfg->scratch_fd,
      .netns_fd = cfg->netns_fd,
      .nofile = cfg->nofile,
      .rlimit_data = cfg->rlimit_data,
      .memory_watch = cfg->memory_watch,
      .die_with_creator = cfg->die_with_creator,
      .bpf_len = (uint32_t)cfg->bpf_len,
  };
  for (char **e = cfg->sandbox_env; e != NULL && *e != NULL; e++) {
    h.n_env++;
    h.env_bytes += (uint32_t)strlen(*e) + 1;
  }
  *len = sizeof(h) + h.bpf_len + h.env_bytes;
  char *blob = xmalloc(*len), *p = blob;
  memcpy(p, &h, sizeof(h));
  p += sizeof(h);
  if (h.bpf_len)
    memcpy(p, cfg->bpf, h.bpf_len);
  p += h.bpf_len;
  for (char **e = cfg->sandbox_env; e != NULL && *e != NULL; e++) {
    size_t n = strlen(*e) + 1;
    memcpy(p, *e, n);
    p += n;
  }
  return blob;
}

int init_config_decode(void *blob, size_t len, struct init_config *cfg) {
  struct blob_head h;
  if (len < sizeof(h))
    return -1;
  memcpy(&h, blob, sizeof(h));
  if (memcmp(h.magic, BLOB_MAGIC, sizeof(h.magic)) != 0 || h.version != BLOB_VERSION || h.listen_fd < 0 ||
      h.memwatch_fd < -1 || h.scratch_fd < -1 || h.netns_fd < -1 || h.bpf_len % SECCOMP_INSN_SIZE != 0 ||
      h.bpf_len > (uint32_t)SECCOMP_MAX_INSNS * SECCOMP_INSN_SIZE || h.env_bytes > BLOB_MAX_ENV_BYTES ||
      h.n_env > h.env_bytes || len != sizeof(h) + h.bpf_len + h.env_bytes)
    return -1;
  char *bpf = (char *)blob + sizeof(h);
  char *env = bpf + h.bpf_len, *end = env + h.env_bytes;
  /* Exactly n_env strings, the last one ending the blob. */
  size_t nuls = 0;
  for (const char *q = env; q < end; q++)
    nuls += *q == '\0';
  if (nuls != h.n_env || (h.env_bytes > 0 && end[-1] != '\0'))
    return -1;
  *cfg = (struct init_config){
      .parent_fd = -1,
      .listen_fd = h.listen_fd,
      .memwatch_fd = h.memwatch_fd,
      .exec_fd = -1,
      .scratch_fd = h.scratch_fd,
      .netns_fd = h.netns_fd,
      .nofile = h.nofile,
      .rlimit_data = h.rlimit_data,
      .memory_watch = h.memory_watch,
      .die_with_creator = h.die_with_creator != 0,
      .bpf = h.bpf_len ? bpf : NULL,
      .bpf_len = h.bpf_len,
  };
  cfg->sandbox_env = xcalloc(h.n_env + 1, sizeof(char *));
  for (size_t i = 0; i < h.n_env; i++) {
    cfg->sandbox_env[i] = env;
    env += strlen(env) + 1;
  }
  return 0;
}

void init_exec_small(const struct init_config *cfg) {
  if (cfg->exec_fd < 0 || cfg->listen_fd < 0)
    return;
  size_t len;
  _cleanup_free_ void *blob = init_config_encode(cfg, &len);
  /* Not close-on-exec: hutch-init reads it; sealed, so what it reads is
   * what was written here. */
  _cleanup_close_ int fd = (int)syscall(SYS_memfd_create, INIT_EXEC_NAME, MFD_ALLOW_SEALING);
  if (fd < 0 || write_all(fd, blob, len) < 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) < 0)
    return;
  /* The control socket, the watchdog's socket and the fds held for hutch
   * stay open across the exec; nothing else does.  The commands init
   * starts get none of them (payload.c closes every fd above 2). */
  const int kept[] = {cfg->listen_fd, cfg->memwatch_fd, cfg->scratch_fd, cfg->netns_fd};
  bool ok = true;
  for (size_t i = 0; i < ARRAY_SIZE(kept) && ok; i++)
    ok = kept[i] < 0 || fcntl(kept[i], F_SETFD, 0) == 0;
  if (ok) {
    char arg[16];
    snprintf(arg, sizeof(arg), "%d", fd);
    char *const argv[] = {INIT_EXEC_NAME, arg, NULL};
    char *const envp[] = {NULL};
    syscall(SYS_execveat, cfg->exec_fd, "", argv, envp, AT_EMPTY_PATH);
  }
  for (size_t i = 0; i < ARRAY_SIZE(kept); i++)
    if (kept[i] >= 0)
      fcntl(kept[i], F_SETFD, FD_CLOEXEC);
}
