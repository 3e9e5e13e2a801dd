/* SPDX-License-Identifier: Apache-2.0 */
/* hutch: the sandbox runtime's public interface.
 *
 * Everything the `hutch` command does with sandboxes, rootfs images and
 * policies goes through this header.  The runtime knows nothing about LLMs.
 *
 * Error contract: every function that can fail returns a negative value and,
 * when `err` is not NULL, stores a newly allocated error object in *err (which
 * must be NULL on entry).  On success *err is left untouched.  Callers add
 * context with their own message and print it once. */
#ifndef HUTCH_H
#define HUTCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "hutch_version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The library is built with -fvisibility=hidden: what this header declares
 * is its whole interface, and libhutch.so exports that and nothing else. */
#pragma GCC visibility push(default)

/* The library's version: "0.2.0", with " (git DESCRIBE)" where it was built
 * from a git checkout.  HUTCH_VERSION_* (hutch_version.h) are the header's,
 * the version a program was compiled against. */
const char *hutch_version(void);

typedef struct hutch_error {
  int errnum; /* errno of the failed operation, 0 when none applies */
  char *msg;  /* "step: what failed", without the strerror text */
  char *hint; /* how to fix it, or NULL */
} * hutch_error_t;

void hutch_error_free(hutch_error_t *err);
/* "msg: strerror(errnum)" followed by "\nhint: ..." when there is a hint. */
void hutch_error_print(FILE *out, const char *prog, const hutch_error_t err);
/* The one formatter of an error: "msg: strerror(errnum)", or "msg" alone
 * when errnum is 0 (never "Success"), when msg says strerror(errnum)
 * already (case ignored), or when it names an HTTP status ("HTTP 401"),
 * which the errno only sorts; without the hint; malloc'd ("" for no
 * error). */
char *hutch_error_format(const hutch_error_t err);
/* The same for an errno without an error object: "FMT: strerror(errnum)",
 * or FMT alone in the same cases; malloc'd. */
char *hutch_errno_format(int errnum, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- the library's log -------------------------------------------------- */

enum hutch_log_level {
  HUTCH_LOG_DEBUG,   /* each setup step; only with $HUTCH_DEBUG set */
  HUTCH_LOG_INFO,    /* progress of a long operation ("downloaded URL in 2.1 s") */
  HUTCH_LOG_NOTICE,  /* one-time facts worth knowing (an import dropped setuid bits) */
  HUTCH_LOG_WARNING, /* a degraded mode, a cleanup that failed */
};
/* One line of the library's log: without program name, level or newline,
 * control characters already escaped (it may quote what a sandbox wrote). */
typedef void (*hutch_log_fn)(enum hutch_log_level level, const char *line, void *data);
/* Every warning, notice, progress and debug line of the library goes to fn
 * (from whichever thread logs); NULL restores the default: "PROG: warning:
 * LINE" ("notice: ", "debug: ", nothing for INFO) on stderr. */
void hutch_set_log_handler(hutch_log_fn fn, void *data);
/* "warning: ", "notice: ", "debug: " or "" for a level. */
const char *hutch_log_level_prefix(enum hutch_log_level level);

/* The hutch-init program a long-lived sandbox's init becomes, for a
 * program that embeds the library from a build tree (neither beside the
 * program nor installed in LIBEXECDIR, where it is otherwise looked for).
 * Without it that init stays a fork of the caller: it works, but cannot be
 * paused rootless (a fork keeps the caller's memory, which only the host's
 * root may trace).  path must be an executable regular file (EINVAL,
 * ENOENT otherwise); NULL goes back to looking for it.  Set it before the
 * first sandbox; not safe against a concurrent start. */
int hutch_set_init_program(const char *path, hutch_error_t *err);

/* ---- rootfs store ---------------------------------------------------- */

struct hutch_store;

/* path NULL: $HUTCH_STORE, else $XDG_DATA_HOME/hutch (~/.local/share/hutch)
 * for a user, /var/lib/hutch for root. */
int hutch_store_open(const char *path, struct hutch_store **out, hutch_error_t *err);
void hutch_store_close(struct hutch_store *store);
const char *hutch_store_path(const struct hutch_store *store);

struct hutch_image {
  char *name;         /* NULL for an unnamed entry */
  char *digest;       /* "sha256:<64 hex>" of the imported archive's bytes */
  char *rootfs;       /* absolute path of the unpacked, read-only tree */
  uint64_t size;      /* bytes of file content unpacked */
  int64_t created;    /* seconds since the epoch */
  bool ids_preserved; /* files owned by ids other than 0 were kept (needs a subordinate id range to run) */
  /* An OCI or Docker image's defaults from its config (hutch-rootfs(1)), NULL
   * for a plain tarball: "K=V" list (NULL-terminated), working directory,
   * and User, which is only recorded (sandboxes run as root of their userns
   * unless hutch_sandbox_extras.user names another). */
  char **env;
  char *workdir;
  char *user;
  /* An image built on another (`hutch rootfs build`) is a layer of its own:
   * the trees below `rootfs`, nearest first (NULL-terminated), or NULL for
   * an image that is one tree. */
  char **lowers;
};
/* The layers an image may have, as in Docker: an image archive, layout or
 * registry manifest of more is refused before anything is unpacked or
 * downloaded, and a build stacks no layer on an image of this many trees
 * (its own and its lowers). */
#define HUTCH_IMAGE_MAX_LAYERS 127
void hutch_image_clear(struct hutch_image *image);
void hutch_image_list_free(struct hutch_image *images, size_t n);

/* done/total in bytes of the compressed input; total is 0 when unknown. */
typedef void (*hutch_progress_fn)(uint64_t done, uint64_t total, void *data);

struct hutch_import_options {
  const char *name; /* NULL: keep the entry unnamed */
  hutch_progress_fn progress;
  void *progress_data;
  /* The file's sha256 (64 hex) when the caller has just verified it (a
   * pull): the import skips its own first pass over the file; the unpack
   * still hashes every byte and fails when they differ.  NULL: unknown. */
  const char *sha256;
  /* The image to take from an archive or layout of several (a name such
   * as "busybox:1" or "sha256:" and 12+ hex digits); NULL: its only one. */
  const char *image;
};
/* Returns 1 when the same bytes were already in the store (nothing unpacked), 0 after an unpack. */
int hutch_image_import(struct hutch_store *store, const char *file, const struct hutch_import_options *opts,
                       struct hutch_image *out, hutch_error_t *err);
int hutch_image_lookup(struct hutch_store *store, const char *name_or_digest, struct hutch_image *out,
                       hutch_error_t *err);
int hutch_image_list(struct hutch_store *store, struct hutch_image **out, size_t *n, hutch_error_t *err);
/* Write an image as an archive podman, skopeo and docker load: format
 * "oci-archive" (NULL) or "docker-archive", one layer holding the image's
 * tree, its Env, WorkingDir and User in the config. */
int hutch_image_export(struct hutch_store *store, const char *name_or_digest, const char *format, const char *file,
                       hutch_error_t *err);
int hutch_image_remove(struct hutch_store *store, const char *name_or_digest, hutch_error_t *err);
/* Name an image that is in the store (moves the name if it is in use). */
int hutch_image_tag(struct hutch_store *store, const char *name_or_digest, const char *name, hutch_error_t *err);

/* Whether `name` can name an image: [A-Za-z0-9][A-Za-z0-9._:-]{0,127}, no "..". */
bool hutch_image_name_valid(const char *name);
/* The environment a sandbox of this image starts with: the image's Env, then
 * `extra` ("K=V"; a later one replaces an earlier one of its name).  A
 * NULL-terminated list the caller frees, entries and all. */
char **hutch_image_env(const struct hutch_image *image, const char *const *extra);
/* Warns once per process (hutch_set_log_handler) when the image's User is not root: it is ignored. */
void hutch_image_user_notice(const struct hutch_image *image);

/* ---- pulling and building images (hutch-rootfs(1)) ------------------ */

/* A long operation's progress for people: `phase` starts a step that
 * reports bytes through hutch_progress_fn ("downloading FILE", "importing
 * IMAGE") and is NULL when that step ends; it may be NULL.  Lines worth
 * printing ("downloaded URL in 2.1 s, sha256 verified") go to the log
 * (hutch_set_log_handler) as HUTCH_LOG_INFO. */
typedef void (*hutch_phase_fn)(const char *label, void *data);

struct hutch_pull_options {
  const char *name; /* the image's name; NULL: the reference without "docker://" */
  const char *arch; /* manifest images: the architecture to fetch; NULL: this machine's */
  hutch_progress_fn progress;
  hutch_phase_fn phase;
  void *data; /* passed to progress and phase */
  /* docker:// only: the credentials file (NULL: as podman looks), no TLS
   * certificate check (--tls-verify=false), the CAs of a --cert-dir. */
  const char *auth_file;
  bool tls_insecure;
  const char *cert_dir;
};
/* `ref` is an image manifest's name (hutch-manifest(5): ubuntu:24.04) or
 * docker://NAME[:TAG|@DIGEST] for an OCI registry.  Downloads what the store
 * lacks, verifies its sha256, imports it and names it.  Returns 1 when the
 * pinned digest was in the store already (nothing downloaded), else 0. */
int hutch_image_pull(struct hutch_store *store, const char *ref, const struct hutch_pull_options *opts,
                     struct hutch_image *out, hutch_error_t *err);

/* `hutch rootfs push`: the image as one layer (hutch_image_export's)
 * uploaded to docker://REF with an OCI manifest; the pushed manifest's
 * digest ("sha256:<hex>") in digest_out. */
struct hutch_push_options {
  const char *auth_file;
  bool tls_insecure;
  const char *cert_dir;
  hutch_progress_fn progress; /* bytes of the layer sent */
  hutch_phase_fn phase;
  void *data;
};
int hutch_image_push(struct hutch_store *store, const char *name_or_digest, const char *ref,
                     const struct hutch_push_options *opts, char digest_out[72], hutch_error_t *err);

struct hutch_build_options {
  const char *from;       /* base: an image in the store or a manifest's name (pulled first) */
  const char *recipe;     /* hutch-recipe(5) file */
  const char *name;       /* the new image's name */
  const char *arch;       /* of a base that is pulled; NULL: this machine's */
  const char *policy;     /* NULL: as hutch_policy_load */
  const char *net_policy; /* a policy whose [network] replaces the policy's (with the proxy only) */
  int net;                /* enum hutch_net_mode, or -1: proxy when the recipe needs a network */
  int output_fd;          /* the steps' (and a Debian bootstrap's) stdout and stderr */
  /* A step is killed past step_timeout seconds and fails the build; of its
   * output (escaped) step_log_max bytes are shown, and log_max bytes of all
   * the steps' output.  0: the defaults (1 h, 8 MiB, 64 MiB). */
  double step_timeout;
  uint64_t step_log_max, log_max;
  hutch_progress_fn progress;
  hutch_phase_fn phase;
  void *data;
};
struct hutch_build_result {
  char digest[80]; /* "sha256:HEX" of the new image */
  uint64_t size;   /* bytes of file content in its layer */
  char base[256];  /* the base image's name, else its digest */
};
/* Runs the recipe's steps in a sandbox on the base and keeps what they
 * changed as a new image, a layer stacked on the base.  store NULL: the
 * default store.  SIGINT, SIGTERM and SIGHUP reach the running step and end
 * the build at the next step boundary (it installs handlers for them in the
 * calling process, and leaves them installed).  Returns 0, -1 on error, or the
 * exit code (> 0) of the step that failed or 128+signal when interrupted;
 * no image is left behind unless it returns 0.  The sandbox dies with the
 * calling thread (die_with_creator), even one SIGKILLed; what a killed
 * build left in the store's tmp/ (the state of that sandbox) is removed by
 * the next build, either kind. */
int hutch_image_build(const char *store, const struct hutch_build_options *opts, struct hutch_build_result *out,
                      hutch_error_t *err);

/* `hutch rootfs build -f`: a Dockerfile (the subset in hutch-rootfs(1)),
 * each instruction that changes files a layer keyed by what made it, so a
 * rebuild reuses every layer whose instruction and inputs are unchanged. */
struct hutch_dockerfile_options {
  const char *dockerfile;        /* path */
  const char *context;           /* directory COPY reads (NULL: the Dockerfile's) */
  const char *name;              /* the new image's name */
  const char *target;            /* stage to build (NULL: the last) */
  const char *const *build_args; /* "K=V", NULL-terminated, may be NULL */
  const char *const *allow;      /* HOST[:PORT] RUN steps may reach through the proxy */
  const char *arch, *policy, *net_policy;
  int net;               /* enum hutch_net_mode, or -1: proxy when allow names a host */
  bool no_cache;         /* build every layer again */
  const char *auth_file; /* a FROM pulled from a registry: as hutch_pull_options */
  bool tls_insecure;
  int output_fd;        /* progress and the steps' output */
  const char *log_file; /* the whole build log (NULL: STORE/logs/build-NAME.log) */
  /* As in hutch_build_options; the caps hold for the log as for output_fd. */
  double step_timeout;
  uint64_t step_log_max, log_max;
  hutch_progress_fn progress;
  hutch_phase_fn phase;
  void *data;
};
int hutch_dockerfile_build(const char *store, const struct hutch_dockerfile_options *opts,
                           struct hutch_build_result *out, hutch_error_t *err);

/* ---- policy ---------------------------------------------------------- */

struct hutch_policy;

/* Where hutch's own files are (policies/, prompts/, rootfs/): the installed
 * HUTCH_DATADIR, or the source tree for a binary run from its build tree. */
const char *hutch_data_dir(void);

/* path NULL: the installed default policy ($HUTCH_POLICY overrides). */
int hutch_policy_load(const char *path, struct hutch_policy **out, hutch_error_t *err);
void hutch_policy_free(struct hutch_policy *policy);
const char *hutch_policy_path(const struct hutch_policy *policy);
/* [network] run = proxy: `hutch run` starts its sandbox with --net proxy
 * unless told --net none (hutch-policy(5)). */
bool hutch_policy_run_proxy(const struct hutch_policy *policy);
/* Human-readable description of what a sandbox gets; `effective` resolves
 * every rule against this host (architectures, syscall numbers). */
int hutch_policy_describe(const struct hutch_policy *policy, bool effective, FILE *out, hutch_error_t *err);
/* The same description as one JSON object (`hutch policy show --json`). */
int hutch_policy_describe_json(const struct hutch_policy *policy, bool effective, FILE *out, hutch_error_t *err);

/* ---- sandboxes ------------------------------------------------------- */

struct hutch_bind {
  const char *source; /* host path */
  const char *dest;   /* absolute path inside the sandbox */
  bool readonly;
};

/* Whether sandbox content may reach the host path PATH (a bind's source, a
 * directory copied into a sandbox, or with `writable` one into which a
 * sandbox's files are copied): refused (EPERM, with a hint) when PATH is,
 * contains or lies inside hutch's store, state directory or cache, or with
 * `writable` covers the policy's files; compared by device and inode, so a
 * link or a second mount of the same directory is refused too.  NULL
 * store, state_dir, policy: the defaults (no policy). */
int hutch_check_host_path(const char *path, bool writable, const char *store, const char *state_dir,
                          const struct hutch_policy *policy, hutch_error_t *err);

/* ---- resource limits (hutch-policy(5) [limits]) ---- */

/* "1024", "512M", "2G", "1.5GiB", "64k": bytes, in powers of 1024. */
bool hutch_parse_size(const char *s, uint64_t *out);
/* The other way: "64 MiB", "1 GiB", "1.5 GiB", "512 KiB", "100 B". */
void hutch_format_size(uint64_t bytes, char *buf, size_t len);

/* Limits asked for explicitly (command-line options): they are applied with
 * a cgroup or the start is refused.  A zero field leaves the policy's
 * default, which may fall back to rlimits when the policy allows it. */
struct hutch_limits {
  uint64_t memory;           /* bytes: memory.max */
  uint64_t memory_swap;      /* bytes of swap besides memory (memory.swap.max), when memory_swap_set */
  bool memory_swap_set;      /* else memory.swap.max is 0 */
  double cpus;               /* CPUs' worth of time per period: cpu.max */
  uint64_t pids;             /* pids.max */
  uint32_t io_weight;        /* io.weight, 1..10000 */
  uint64_t disk;             /* bytes of all writable places together (0: the policy's [limits] disk) */
  const char *cgroup_parent; /* cgroup under which the sandbox's cgroup goes (NULL: see hutch-exec(1)) */
  bool no_cgroups;           /* rlimits only, asked for explicitly */
};

/* How a sandbox's limits were applied. */
struct hutch_limits_status {
  char mode[16];    /* "cgroup", "rlimits" or "none" (no limit set) */
  bool degraded;    /* weaker than cgroup limits (rlimits, or a limit left out) */
  char reason[512]; /* why degraded and how to fix it; empty otherwise */
  char cgroup[256]; /* the sandbox's cgroup directory, empty without one */
  /* Limits fell back to rlimits on a host without a usable cgroup: the
   * warning of it ("limits: no cgroup here: ..."), which stderr gets once a
   * day per state directory (not at all with the policy's fallback_quiet),
   * and --json and state.json every time; empty otherwise. */
  char warning[256];
  /* The writable layer is on the host's disk, outside [limits] disk (the
   * degraded mode HUTCH_DEGRADED_DISK_UNBOUNDED). */
  bool disk_unbounded;
};

/* What a process or sandbox used, from its cgroup; zero when unknown. */
struct hutch_usage {
  bool oom_killed;         /* the OOM killer ended it (memory.events oom_kill) */
  uint64_t oom_kills;      /* OOM kills counted in the sandbox's cgroup */
  uint64_t memory_max;     /* the memory limit in force, bytes; 0: none */
  uint64_t memory_peak;    /* bytes (memory.peak) */
  uint64_t cpu_usec;       /* CPU time (cpu.stat usage_usec) */
  uint64_t nr_throttled;   /* periods the CPU limit held it back */
  uint64_t throttled_usec; /* and for how long */
};

enum hutch_net_mode { HUTCH_NET_NONE = 0, HUTCH_NET_PROXY };

/* How the sandbox's root is layered over its image. */
enum hutch_overlay_mode { HUTCH_OVERLAY_KERNEL = 0, HUTCH_OVERLAY_FUSE };

struct hutch_sandbox_config {
  const char *rootfs;                /* lower tree, usually hutch_image.rootfs */
  const char *const *rootfs_lowers;  /* trees below it, nearest first (hutch_image.lowers), may be NULL */
  const char *image;                 /* name recorded in the sandbox state, may be NULL */
  const char *workdir;               /* where its processes start when they name no --workdir (NULL: /) */
  bool rootfs_subordinate_ids;       /* the tree holds files owned by ids 1..65535 (hutch_image.ids_preserved) */
  const struct hutch_policy *policy; /* required */
  const char *hostname;              /* NULL: "sandbox" */
  const char *const *env;            /* NULL-terminated "K=V" list added to every process */
  const struct hutch_bind *binds;
  size_t n_binds;
  bool keep; /* keep the upper/work dirs after the sandbox ends */
  /* Degraded mode, only when asked for: the outer /proc bound read-only
   * (dangerous parts masked) instead of a fresh procfs, for hosts that
   * refuse one ("mount too revealing").  The sandbox then sees the host's
   * processes. */
  bool proc_host_ro;
  /* The image's tree read-only (EROFS): only /tmp, /dev/shm and read-write
   * binds take writes.  For a sandbox that runs many pieces of untrusted
   * input one after another (hutch benchmark's scoring), so that none can
   * leave a file in the image's paths for the next to load. */
  bool read_only_root;
  /* Image builds only (`hutch rootfs build`): processes keep CAP_CHOWN,
   * CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_FSETID, CAP_SETUID, CAP_SETGID,
   * CAP_SETFCAP and CAP_KILL in the sandbox's user namespace, which package
   * scripts need (chown to system groups).  Never for an agent's code. */
  bool build_caps;
  /* Degraded mode, only when asked for: the root is served by the
   * fuse-overlayfs program instead of the kernel's overlayfs, for hosts
   * that refuse overlayfs in a user namespace (see hutch-security(7)). */
  enum hutch_overlay_mode overlay;
  const char *state_dir;      /* NULL: $HUTCH_STATE_DIR, $XDG_RUNTIME_DIR/hutch or /run/hutch */
  const char *store;          /* the image store (NULL: the default): like the state directory and the
                                 cache, no bind may reach it (hutch_check_host_path) */
  struct hutch_limits limits; /* explicit limits; the policy's [limits] fill in the rest */
  /* Network (hutch-policy(5) [network]).  HUTCH_NET_NONE: loopback only.
   * HUTCH_NET_PROXY: a veth to a private gateway namespace whose only
   * service is hutch's allowlist HTTP proxy.  There is no host network. */
  enum hutch_net_mode net;
  const char *const *net_allow;   /* --allow HOST[:PORT], added to the policy's list; NULL-terminated */
  const char *net_policy;         /* --net-policy FILE: its [network] replaces the policy's */
  const char *const *net_resolve; /* --resolve NAME=ADDR (tests only, logged), NULL-terminated */
  /* Addresses (CIDR) reachable although internal, as [network] allow_address;
   * NULL-terminated.  `hutch rootfs build` lists the addresses of the
   * mirrors this machine's own apt uses. */
  const char *const *net_allow_address;
  const char *net_audit_log; /* the proxy's JSON lines; NULL: "proxy.log" in the sandbox's state dir */
  /* hutch_sandbox_create: the sandbox dies (SIGKILL to its init) when the
   * thread that created it ends, as a one-shot one does, instead of
   * outliving it: an embedding program keeps its sandbox tied to itself. */
  bool die_with_creator;
  /* The audit log (hutch-audit(5)) is also written here, with FILE.head,
   * when the sandbox ends: hutch_run's return, hutch_sandbox_destroy of the
   * handle hutch_sandbox_create returned (not a `hutch rm` from elsewhere).
   * NULL: only in the state directory (and its .audit/ archive). */
  const char *audit_copy;
};

/* What the proxy of a --net proxy sandbox did: its audit log's totals. */
struct hutch_net_summary {
  bool proxy;          /* the sandbox ran with --net proxy */
  char audit_log[512]; /* the audit log; empty when it went with the sandbox's state */
  uint64_t requests, allowed, refused, errors;
  uint64_t unlogged;     /* of the requests, counted by the proxy but not logged one by one (log_max, rate) */
  char top_refused[256]; /* the most frequent refusal, "evil.example:443 (not in allowlist) x1" */
  char unread[256];      /* not empty: the log could not be read, and why (the counts are then unknown) */
};
/* Totals of an audit log (hutch_sandbox_config.net_audit_log), read as a
 * stream.  A log that cannot be read: -1, with `unread` set. */
int hutch_net_summarize(const char *audit_log, struct hutch_net_summary *out, hutch_error_t *err);
/* "12 requests, 11 allowed, 1 refused (evil.example:443 ...)", or that the
 * log could not be read */
void hutch_net_summary_format(const struct hutch_net_summary *s, char *buf, size_t len);

struct hutch_process {
  const char *const *argv; /* argv[0] is looked up in PATH inside the sandbox */
  const char *const *env;  /* extra "K=V" for this process, may be NULL */
  const char *workdir;     /* NULL: "/" */
  int stdio[3];            /* fds handed to the process as 0, 1, 2 */
  double timeout;          /* seconds, 0 = none */
  /* The caller handles its own signals: SIGINT, SIGTERM, SIGHUP and SIGQUIT
   * are neither intercepted nor forwarded to the process while it runs. */
  bool keep_caller_signals;
  /* A pseudo-terminal (hutch exec -t): the process gets the slave of a pty
   * opened in the sandbox's own devpts as its stdin, stdout, stderr and
   * controlling terminal; the master comes back to the caller alone, and
   * while it waits hutch copies stdio[0] to it (unless tty_no_input) and
   * its output to stdio[1].  stdio[0], when a terminal it reads, is put in
   * raw mode meanwhile and restored before returning; SIGWINCH to the
   * caller copies the window size of stdio[0] (else stdio[1]) to the pty. */
  bool tty;
  bool tty_no_input;       /* -t without -i: the pty gets no input */
  unsigned short tty_rows; /* initial window size; 0: that of stdio[0] (else stdio[1]) */
  unsigned short tty_cols;
};

struct hutch_exit {
  int status;        /* exit status when !signaled */
  int signal;        /* terminating signal, 0 if it exited */
  bool timed_out;    /* killed because the timeout expired */
  int exec_errno;    /* the program could not be started: this errno (status is then 126 or 127) */
  bool setup_failed; /* it failed before execve (working directory, limits): exit code 125 */
  char failure[512]; /* why it could not be started, empty otherwise */
  double wall_seconds;
  char id[40];                       /* the sandbox's id */
  struct hutch_usage usage;          /* of this process (one-shot: of the whole sandbox) */
  struct hutch_limits_status limits; /* of the sandbox */
  struct hutch_net_summary net;      /* hutch_run with --net proxy: what its proxy did */
};

/* Conventional shell exit code for a finished process: status, 128+signal,
 * 126/127 for exec failures, 125 when its setup failed, 124 for a timeout. */
int hutch_exit_code(const struct hutch_exit *ex);

/* One-shot: create a sandbox, run one process in it, tear everything down.
 * SIGINT, SIGTERM, SIGHUP and SIGQUIT that reach the caller meanwhile are
 * forwarded to the process (the caller's mask is restored afterwards),
 * unless proc->keep_caller_signals; the same holds for hutch_sandbox_exec.
 * A caller may have other threads (that one holds malloc's lock does not
 * stop the start): then the sandbox's first process is cloned from a
 * fork()ed helper, about a fork's cost more (hutch_run, hutch_sandbox_create). */
int hutch_run(const struct hutch_sandbox_config *cfg, const struct hutch_process *proc, struct hutch_exit *out,
              hutch_error_t *err);

/* Long-lived sandboxes. */
struct hutch_sandbox;
int hutch_sandbox_create(const struct hutch_sandbox_config *cfg, struct hutch_sandbox **out, hutch_error_t *err);
int hutch_sandbox_open(const char *state_dir, const char *id, struct hutch_sandbox **out, hutch_error_t *err);
const char *hutch_sandbox_id(const struct hutch_sandbox *sb);
const struct hutch_limits_status *hutch_sandbox_limits(const struct hutch_sandbox *sb);
/* The proxy's audit log of a --net proxy sandbox, NULL without one. */
const char *hutch_sandbox_audit_log(const struct hutch_sandbox *sb);
int hutch_sandbox_exec(struct hutch_sandbox *sb, const struct hutch_process *proc, struct hutch_exit *out,
                       hutch_error_t *err);
/* ---- a process in a live sandbox (a handle) ----
 * hutch_sandbox_exec() above is this, blocking: spawn, wait, free.  The
 * handle owns its own connection to the sandbox's init, so it may outlive
 * the hutch_sandbox it was spawned from (closed or destroyed). */

enum hutch_stdio_kind {
  HUTCH_STDIO_NULL = 0, /* /dev/null */
  HUTCH_STDIO_PIPE,     /* a pipe; the caller's end is hutch_proc_fd() */
  HUTCH_STDIO_FD,       /* the caller's fd, passed as it is (the caller keeps it) */
  /* A pseudo-terminal will be a fourth kind, its size in hutch_spawn. */
};
struct hutch_stdio {
  enum hutch_stdio_kind kind;
  int fd; /* HUTCH_STDIO_FD only */
};
struct hutch_spawn {
  const char *const *argv; /* argv[0] is looked up in PATH inside the sandbox */
  const char *const *env;  /* extra "K=V" for this process, may be NULL */
  const char *workdir;     /* NULL: the sandbox's, else "/" */
  struct hutch_stdio stdio[3];
  /* A pseudo-terminal inside the sandbox as the process's stdin, stdout,
   * stderr and controlling terminal, of tty_rows x tty_cols (0: 24 x 80);
   * hutch_sandbox_exec relays it to stdio (struct hutch_process.tty). */
  bool tty;
  unsigned short tty_rows, tty_cols;
};
struct hutch_proc;

/* Starts a process; it runs in a process group (session) of its own. */
int hutch_proc_spawn(struct hutch_sandbox *sb, const struct hutch_spawn *spec, struct hutch_proc **out,
                     hutch_error_t *err);
/* The process as the host sees it (its pid there, read from the pidfd
 * when asked: -1 once it has ended or without pidfds), as the sandbox sees
 * it, and a pidfd of it (-1 without pidfds; owned by the handle; readable
 * once the process has ended). */
pid_t hutch_proc_pid(const struct hutch_proc *p);
pid_t hutch_proc_sandbox_pid(const struct hutch_proc *p);
int hutch_proc_pidfd(const struct hutch_proc *p);
/* The caller's end of stream 0, 1 or 2 when it is HUTCH_STDIO_PIPE, else -1:
 * non-blocking and close-on-exec, owned by the handle until
 * hutch_proc_close_fd() (stdin: the process reads EOF). */
int hutch_proc_fd(const struct hutch_proc *p, int stream);
/* With spec->tty, the master of the process's pty (owned by the handle;
 * the caller reads the process's output from it and writes its input, and
 * sets its window size with TIOCSWINSZ), else -1. */
int hutch_proc_pty(const struct hutch_proc *p);
void hutch_proc_close_fd(struct hutch_proc *p, int stream);
/* Readable when the process has ended: then hutch_proc_wait() does not block. */
int hutch_proc_event_fd(const struct hutch_proc *p);
/* Waits up to `timeout` seconds (< 0: no bound, 0: just look).  Returns 0
 * with *out filled when the process has ended (asking again repeats it),
 * 1 with out->timed_out set when it still runs (it is left running), -1 on
 * error.  out->usage is this process's share of the sandbox's cgroup, and
 * oom_killed also holds for the rlimits fallback's memory watchdog. */
int hutch_proc_wait(struct hutch_proc *p, double timeout, struct hutch_exit *out, hutch_error_t *err);
/* Sends sig to the process's group; nothing once it has ended. */
int hutch_proc_signal(struct hutch_proc *p, int sig, hutch_error_t *err);
int hutch_proc_kill(struct hutch_proc *p, hutch_error_t *err); /* SIGKILL */
/* Frees the handle; a process still running is killed (with its group). */
void hutch_proc_free(struct hutch_proc *p);

/* Kill everything in the sandbox and remove its directories. Frees sb. */
int hutch_sandbox_destroy(struct hutch_sandbox *sb, hutch_error_t *err);
void hutch_sandbox_close(struct hutch_sandbox *sb);

/* Signals the process whose pid inside is `leader` and every process that
 * descends from it (the leader too when `self`), from the host: nothing of
 * the sandbox's runs for it.  Processes already gone are no error.  Leader 1
 * is the sandbox's init: every process in it (and with `self` the init,
 * which ends the sandbox). */
int hutch_sandbox_signal_tree(struct hutch_sandbox *sb, pid_t leader, int sig, bool self, hutch_error_t *err);

/* Tie the calling process to its parent, `parent` as read by getppid() at
 * its start: when the parent dies the process gets SIGTERM
 * (PR_SET_PDEATHSIG), and a process hutch_run or hutch_sandbox_exec waits on
 * is then killed, whatever it does with SIGTERM, before the sandbox is
 * cleaned up.  ESRCH when the parent has already gone; nothing is done for
 * a parent of 0 (outside this pid namespace) or 1. */
int hutch_die_with_parent(pid_t parent, hutch_error_t *err);

/* ---- pausing a long-lived sandbox (pause.c) ----
 * Every process of the sandbox, its init included, is frozen: its memory
 * stays, it uses no CPU, and nothing inside can undo it.  With a cgroup
 * (hutch_limits_status.cgroup) its freezer does it; without one, a host
 * process of hutch's (the pauser) holds every task in a ptrace stop, and
 * every task dies should the pauser die.  While paused, hutch_proc_spawn
 * and the file calls of a handle that has not yet opened the sandbox's
 * files fail with EAGAIN; a removal works as ever. */
enum hutch_pause_method { HUTCH_PAUSE_NONE = 0, HUTCH_PAUSE_CGROUP, HUTCH_PAUSE_PTRACE };
struct hutch_pause_status {
  bool paused;
  enum hutch_pause_method method; /* HUTCH_PAUSE_NONE while a pause is under way */
  double since;                   /* when it was paused (seconds since the epoch) */
  unsigned tasks;                 /* threads held (ptrace) */
  pid_t pauser_pid;               /* ptrace: the pauser, on the host */
  uint64_t pauser_start_time;
};
/* "cgroup", "ptrace" or "none". */
const char *hutch_pause_method_name(enum hutch_pause_method m);
/* EALREADY when it is paused already; `used` (may be NULL): the method. */
int hutch_sandbox_pause(struct hutch_sandbox *sb, enum hutch_pause_method *used, hutch_error_t *err);
/* EINVAL when it is not paused. */
int hutch_sandbox_resume(struct hutch_sandbox *sb, hutch_error_t *err);
/* 1 when sandbox `id` is paused (out filled), 0 when not, -1 on error. */
int hutch_sandbox_pause_status(const char *state_dir, const char *id, struct hutch_pause_status *out,
                               hutch_error_t *err);

/* ---- resetting a long-lived sandbox (sandbox_reset.c) ----
 * The sandbox starts again from the configuration it was created with,
 * under the same id, name and labels and with the same audit log: every
 * process but its new init is gone, and so are the writable layer, /tmp,
 * /dev/shm, SysV IPC objects and every namespace (all are new).  A paused
 * sandbox comes back running; its cgroup, proxy and /30 are made anew (its
 * init's host pid and its --net proxy address may change).  Its published
 * ports are bound again on the same host ports, relayed to the new
 * incarnation (a port another program took in the moment between fails
 * the reset, EADDRINUSE, and leaves it ended).  `sb` follows
 * the new incarnation; other handles of it follow at their next call.
 * ESTALE when it was made by a hutch that did not record its
 * configuration, or when its policy (the file, its seccomp profile, a
 * --net-policy file) changed since: recreate it.  EPERM for a sandbox
 * made with die_with_creator, from a process other than its creator.
 * Checks that can fail are made before anything is stopped; a start that
 * fails after leaves the sandbox ended (`hutch ps`: dead) for `hutch rm`. */
struct hutch_reset_options {
  /* NULL: the image it runs.  Else this image from now on: its trees and
   * WorkingDir, its Env under the environment the sandbox was made with. */
  const struct hutch_image *to;
};
int hutch_sandbox_reset(struct hutch_sandbox *sb, const struct hutch_reset_options *o, hutch_error_t *err);
/* ---- a snapshot of a live sandbox (snapshot.c) ----
 * The sandbox's writable layer becomes an image without stopping it: a
 * layer over the image it runs, in that image's store, as `hutch rootfs
 * build` makes one (hutch_sandbox_config.rootfs takes it by name or
 * digest).  The layer is copied while the sandbox is paused (as
 * hutch_sandbox_pause does it, and resumed after, whatever happens); a
 * sandbox paused already stays paused.  Not part of it: its binds (their
 * files are never in the layer, only the mount points hutch made), /tmp
 * and /dev/shm (the sandbox's tmpfs, not its layer), and the /etc/hosts
 * and /etc/resolv.conf hutch gives every sandbox.  The image's Env and
 * working directory are the base image's.  Recorded in the sandbox's
 * audit log (a "snapshot" record). */
struct hutch_snapshot_options {
  const char *store; /* NULL: the store of the sandbox's image; another store is refused (EXDEV) */
  const char *name;  /* the new image's name; NULL: none */
  bool processes;    /* its processes too: refused (EOPNOTSUPP) by this version */
};
struct hutch_snapshot_result {
  char digest[80];       /* "sha256:" and 64 hex digits */
  uint64_t size;         /* bytes of file content in the layer */
  uint64_t files;        /* entries in the layer: files, directories, links, whiteouts */
  double paused_seconds; /* how long the snapshot kept it paused; 0 when it was paused already */
  enum hutch_pause_method method;
  bool was_paused; /* it was paused before, and is still */
};
/* o may be NULL (all defaults).  ESRCH when the sandbox is not running,
 * EOPNOTSUPP for a sandbox of --overlay fuse or made by an older hutch. */
int hutch_sandbox_snapshot(struct hutch_sandbox *sb, const struct hutch_snapshot_options *o,
                           struct hutch_snapshot_result *out, hutch_error_t *err);

/* ---- a long-lived sandbox's files, from the host (sandbox_fs.c) ----
 * hutch itself reads and writes them, through the sandbox's own root: no
 * program of the sandbox runs, and no path leaves that root (".." and
 * absolute symlinks stay inside, /proc's magic links are refused, and so is
 * any file on a kernel pseudo file system such as /proc or /sys).  What is
 * created belongs to the sandbox's root.  `path` is absolute inside.  Each
 * file written, read, removed or copied (below) is recorded in the
 * sandbox's audit log with its size and sha256 (hutch-audit(5)): a caller
 * adds nothing for it. */

enum hutch_file_kind { HUTCH_FILE_NONE, HUTCH_FILE_REGULAR, HUTCH_FILE_DIR, HUTCH_FILE_OTHER };
/* As the sandbox's `test -d`, `-f`, `-e || -L` would say (symlinks inside
 * its root followed); a negative value on error. */
int hutch_sandbox_file_kind(struct hutch_sandbox *sb, const char *path, hutch_error_t *err);
/* A regular file's bytes (NUL-terminated); EFBIG when it holds more than max. */
int hutch_sandbox_read_file(struct hutch_sandbox *sb, const char *path, size_t max, char **data, size_t *len,
                            hutch_error_t *err);
/* Replaces a regular file's contents; with `create`, makes a new file
 * (EEXIST when anything is there) and the directories above it. */
int hutch_sandbox_write_file(struct hutch_sandbox *sb, const char *path, const void *data, size_t len, bool create,
                             hutch_error_t *err);
int hutch_sandbox_remove_file(struct hutch_sandbox *sb, const char *path, hutch_error_t *err);
int hutch_sandbox_mkdirs(struct hutch_sandbox *sb, const char *path, hutch_error_t *err);
/* The paths under dir, `depth` levels deep, dir itself first (as `find dir
 * -maxdepth DEPTH` names them, unsorted), at most max of them: a
 * NULL-terminated list the caller frees, entries and all. */
int hutch_sandbox_list_dir(struct hutch_sandbox *sb, const char *dir, unsigned depth, size_t max, char ***out,
                           hutch_error_t *err);
/* With `on`, the functions above refuse, for this handle, a path that is
 * or goes through a symlink (ELOOP), as hutch_sandbox_copy_file_* do: no
 * link the sandbox planted is followed, not even inside its root
 * (hutch_sandbox_file_kind says HUTCH_FILE_OTHER of a symlink).  A sandbox
 * that runs as a user other than its root (hutch_sandbox_extras.user) is
 * always so: hutch acts there with its root's access, which a link that
 * user planted would turn to files the user cannot reach. */
void hutch_sandbox_set_no_symlinks(struct hutch_sandbox *sb, bool on);

/* Copies between a host directory and a sandbox directory take regular files
 * and directories only (symlinks, FIFOs, devices and sockets are skipped and
 * counted), follow no symlink on either side, and stop at the first bound
 * reached; what was copied until then stays.  A zero bound takes the default. */
#define HUTCH_COPY_ENTRIES 100000u /* files, directories and skipped entries */
#define HUTCH_COPY_DEPTH 64u
#define HUTCH_COPY_SECONDS 600.0 /* the whole copy */
struct hutch_copy_limits {
  uint64_t bytes; /* of file content; 0: none */
  uint64_t entries;
  unsigned depth;
  double seconds;
};
struct hutch_copy_report {
  uint64_t files, dirs, bytes, skipped;
  uint64_t renamed;    /* out of a sandbox: entries given hutch_output_name()'s name */
  const char *stopped; /* NULL, or the bound that stopped it: "bytes", "entries", "depth" or "time" */
};
/* The name a file or directory of a sandbox takes on the host when hutch
 * chooses it (a tree copied out, a name taken from the sandbox's path):
 * the name itself, or, for a name that host programs load by themselves
 * from the directory they run in (.git, HEAD, .envrc, .vscode, hutch.yaml,
 * ...: hutch-security(7), "What a sandbox hands back"), the name with the
 * suffix ".sandbox".  One-to-one: no two names of a directory take the
 * same.  malloc'd. */
char *hutch_output_name(const char *name);
/* The contents of host directory src into sandbox directory dest (created). */
int hutch_sandbox_copy_in(struct hutch_sandbox *sb, const char *src, const char *dest,
                          const struct hutch_copy_limits *limits, struct hutch_copy_report *rep, hutch_error_t *err);
/* The contents of sandbox directory src into host directory dest (created;
 * nothing is written outside it), each name through hutch_output_name(),
 * files without their execute bits.  A missing src copies nothing. */
int hutch_sandbox_copy_out(struct hutch_sandbox *sb, const char *src, const char *dest,
                           const struct hutch_copy_limits *limits, struct hutch_copy_report *rep, hutch_error_t *err);
/* The same into a dest an earlier copy filled, for a copy repeated while
 * the sandbox works (hutch run's files/ at each step's end): a regular file
 * whose size and modification time are those of the regular file of its
 * name in dest is not copied again, a file copied takes its source's
 * modification time, one larger than the bytes left stops the copy before
 * dest's file is touched, and nothing in dest is removed (what the sandbox
 * removed since stays).  rep counts what was copied; the audit log records
 * a copy that copied something, stopped or failed. */
int hutch_sandbox_update_out(struct hutch_sandbox *sb, const char *src, const char *dest,
                             const struct hutch_copy_limits *limits, struct hutch_copy_report *rep, hutch_error_t *err);
/* One regular file (`hutch cp`): host file src to the sandbox path dest, or
 * sandbox file src to the host path dest.  dest names the file itself: a
 * new one, or a regular file replaced in place; a symlink, directory or
 * anything else there is refused, and so is a source that is not a regular
 * file.  No symlink is followed in the sandbox (ELOOP).  The bytes and time
 * are bounded as above; a file cut short by a bound is removed. */
int hutch_sandbox_copy_file_in(struct hutch_sandbox *sb, const char *src, const char *dest,
                               const struct hutch_copy_limits *limits, struct hutch_copy_report *rep,
                               hutch_error_t *err);
int hutch_sandbox_copy_file_out(struct hutch_sandbox *sb, const char *src, const char *dest,
                                const struct hutch_copy_limits *limits, struct hutch_copy_report *rep,
                                hutch_error_t *err);

/* hutch's output directories (a `hutch run` run directory, a `hutch
 * benchmark` directory) hold what sandboxes wrote.  Each is marked with a
 * file of this name, made by hutch, which a sandbox cannot write there, and
 * hutch reads no settings file from the current directory when it is at or
 * below a marked one (hutch-security(7), "What a sandbox hands back"). */
#define HUTCH_OUTPUT_MARK ".hutch-output"
/* Marks dir (an existing directory) as an output directory. */
int hutch_output_mark(const char *dir, hutch_error_t *err);
/* The marked directory at or above path, physically (symlinks resolved),
 * malloc'd; NULL when there is none.  A path that cannot be resolved is
 * taken as marked at itself: the caller then reads nothing from it. */
char *hutch_output_marked(const char *path);

/* The degraded modes by name, after the options that ask for them, as
 * state.json and the --json output of exec, create and ps list them. */
#define HUTCH_DEGRADED_OVERLAY_FUSE "overlay fuse"
#define HUTCH_DEGRADED_PROC_HOST_RO "proc host-ro"
#define HUTCH_DEGRADED_DISK_UNBOUNDED "disk unbounded" /* create --keep, --overlay fuse */

struct hutch_sandbox_info {
  char id[40];
  pid_t pid;    /* the sandbox's init as seen from the host */
  bool running; /* false: left behind by a killed hutch, `hutch rm` cleans it */
  int64_t created;
  char *image;
  char *rootfs;
  struct hutch_limits_status limits;
  struct hutch_usage usage; /* read from its cgroup while it has one */
  bool net_proxy;           /* --net proxy; false: loopback only */
  char net_address[16];     /* its eth0 address with --net proxy */
  bool overlay_fuse;        /* the degraded modes it runs in */
  bool proc_host_ro;
};
int hutch_sandbox_list(const char *state_dir, struct hutch_sandbox_info **out, size_t *n, hutch_error_t *err);
void hutch_sandbox_info_free(struct hutch_sandbox_info *infos, size_t n);
/* Remove a sandbox by id or name whether or not it is running (kills it
 * first).  It waits for a reset, a fork's or a snapshot's copy, a pause or
 * a resume of it under way (they hold its state's lock, and so does the
 * removal, as hutch_sandbox_destroy does): never half of one is left. */
int hutch_sandbox_remove(const char *state_dir, const char *id, hutch_error_t *err);

/* ---- names, labels and the status of live sandboxes (0.2) ------------- */

/* A name is unique in its state directory and goes wherever an id does
 * (hutch_sandbox_open, hutch_sandbox_remove, hutch_audit_find): one
 * letter or digit, then up to 63 of letters, digits, '_', '.' and '-'; a
 * name that could be an id (12 lowercase hex digits) is refused.  A label
 * is "KEY=VALUE": the key as a name but up to 128 bytes and '/' allowed,
 * the value printable ASCII, up to 256 bytes. */
#define HUTCH_NAME_MAX 64
#define HUTCH_LABEL_KEY_MAX 128
#define HUTCH_LABEL_VALUE_MAX 256
#define HUTCH_LABELS_MAX 64
enum hutch_ttl_action { HUTCH_TTL_REMOVE = 0, HUTCH_TTL_PAUSE };
struct hutch_port {
  const char *host_addr;    /* NULL: 127.0.0.1 */
  unsigned short host_port; /* 0: any */
  unsigned short port;      /* on the sandbox's loopback */
};
/* What a long-lived sandbox has beyond hutch_sandbox_config.
 *
 * ttl (seconds, at most ten years): kept by a host process of hutch's, the
 * keeper, started for that sandbox alone: when the ttl runs out it removes
 * the sandbox (audit end reason "ttl expired") or, with HUTCH_TTL_PAUSE,
 * pauses it.  Paused time does not count.
 *
 * ports: at most 32, each a host listener (bound before the sandbox
 * starts: a port in use, EADDRINUSE, starts nothing) relayed to the
 * sandbox's loopback; an address beyond loopback (127/8, ::1) is refused
 * with EPERM unless the policy's [network] publish_address allows it.
 *
 * devices: a CDI device ("vendor/class=name", "vendor/class=all": every
 * device of the kind) from the specs in /var/run/cdi and /etc/cdi
 * ($HUTCH_CDI_DIRS, colon-separated, instead), or a character device
 * "/dev/NODE"; at most HUTCH_DEVICES_MAX.  The policy's [devices] allow
 * must name each (hutch-policy(5)); block devices are refused, and a
 * spec's hooks are never run (its libraries' directories go to
 * LD_LIBRARY_PATH and /etc/ld.so.conf.d/000-hutch-cdi.conf instead).  A
 * device's memory and compute are shared with every other user of it
 * (hutch-security(7)).
 *
 * user ("UID[:GID]" or "NAME[:GROUP]", as Docker's --user): the sandbox's
 * init and every process it starts run as that uid and gid of the
 * sandbox's user namespace (real, effective and saved), with no
 * supplementary group, no capability and no_new_privs, so none can switch
 * back to 0 (not even through a setuid program of the image).  Names are
 * looked up in the sandbox's own /etc/passwd and /etc/group; a uid alone
 * takes its passwd line's group, else gid 0 (as Docker); HOME is its
 * passwd home (else "/") unless the image or the caller sets one.  The ids
 * must be mapped, 0 to 65535: root's sandbox maps them to the same host
 * ids; an unprivileged caller's then maps its subordinate range
 * (/etc/subuid, /etc/subgid) to 1 to 65535, and without one anything but
 * root is refused (EPERM, the hint naming the fix).  Files hutch itself makes in the sandbox
 * (hutch_sandbox_write_file, _mkdirs, _copy_in, `hutch cp`) belong to
 * that user.  NULL: root of the sandbox's user namespace, as before.  Not
 * with hutch_sandbox_config.build_caps (EINVAL). */
#define HUTCH_DEVICES_MAX 64
struct hutch_sandbox_extras {
  const char *name;          /* NULL: none */
  const char *const *labels; /* "KEY=VALUE", NULL-terminated; a key given twice: the last wins */
  double ttl;                /* seconds; 0: none */
  enum hutch_ttl_action on_ttl;
  const struct hutch_port *ports;
  size_t n_ports;
  const char *const *devices; /* NULL-terminated */
  const char *user;           /* NULL: root inside (see above) */
};
/* Checks the syntax of x (EINVAL, naming what is wrong); the name is not
 * looked up. */
int hutch_sandbox_extras_check(const struct hutch_sandbox_extras *x, hutch_error_t *err);
/* hutch_sandbox_create with extras (x NULL: none).  The name is claimed
 * before the sandbox starts: one already taken fails with EEXIST and
 * starts nothing; a failed start gives it back, and so does the removal. */
int hutch_sandbox_create_with(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x,
                              struct hutch_sandbox **out, hutch_error_t *err);
/* hutch_run with extras (x NULL: none): of them a one-shot sandbox takes
 * devices and user only (the others: EINVAL). */
int hutch_run_with(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x,
                   const struct hutch_process *proc, struct hutch_exit *out, hutch_error_t *err);
/* The id of the sandbox named or with the id name_or_id: ENOENT when there
 * is none. */
int hutch_sandbox_resolve(const char *state_dir, const char *name_or_id, char id[40], hutch_error_t *err);

/* The pause methods are hutch_pause_method's, above. */
enum hutch_sandbox_state { HUTCH_SANDBOX_DEAD = 0, HUTCH_SANDBOX_RUNNING, HUTCH_SANDBOX_PAUSED };
struct hutch_published_port {
  char host_addr[64];
  unsigned short host_port, port;
};
struct hutch_sandbox_status {
  struct hutch_sandbox_info info; /* as hutch_sandbox_list gives it */
  char *name;                     /* NULL: none (as any sandbox made before 0.2) */
  char **labels;                  /* "KEY=VALUE", NULL-terminated, never NULL */
  enum hutch_sandbox_state state;
  enum hutch_pause_method pause_method;
  double ttl, ttl_left; /* 0: none */
  enum hutch_ttl_action on_ttl;
  struct hutch_published_port *ports;
  size_t n_ports;
  char **devices; /* NULL-terminated, never NULL */
  uint64_t generation;
  char forked_from[40]; /* "": not a fork */
};
/* A sandbox whose ttl ran out while its keeper was gone (killed) is
 * removed, or paused, by the next hutch_sandbox_list, _list_status or
 * _open of it, with a warning through the log handler. */
int hutch_sandbox_list_status(const char *state_dir, struct hutch_sandbox_status **out, size_t *n, hutch_error_t *err);
void hutch_sandbox_status_free(struct hutch_sandbox_status *s, size_t n);
/* Sets sb's ttl to `seconds` from now (while paused: from the resume),
 * keeping its action (HUTCH_TTL_REMOVE when it had none), and starts its
 * keeper when it has none; `seconds` <= 0 clears it (the keeper ends).
 * Recorded in the audit log ("ttl").  ESRCH when it is not running. */
int hutch_sandbox_set_ttl(struct hutch_sandbox *sb, double seconds, hutch_error_t *err);
/* Filters as `hutch ps --filter` takes them: "name=NAME", "label=KEY" (has
 * the key), "label=KEY=VALUE", "status=running|paused|dead".
 * hutch_sandbox_filter_check says what is wrong with one (EINVAL);
 * hutch_sandbox_status_matches is true when s matches every filter of the
 * NULL-terminated list (an invalid one matches nothing). */
int hutch_sandbox_filter_check(const char *filter, hutch_error_t *err);
bool hutch_sandbox_status_matches(const struct hutch_sandbox_status *s, const char *const *filters);

/* ---- forking a live sandbox (sandbox_fork.c) ----
 * New live sandboxes that start from a live one's files: each child gets a
 * copy of the parent's writable layer, taken while the parent is paused
 * (as a snapshot pauses it, and resumed after, whatever happens; a parent
 * paused already stays paused), and the configuration the parent was
 * created with (its image, environment, working directory, hostname,
 * binds, limits, network options, devices, user and policy: what a reset starts
 * again from).  Each child is a sandbox of its own, in the parent's state
 * directory: a fresh id, its own writable layer, /tmp, /dev/shm,
 * namespaces, cgroup and proxy, so no write of one reaches another or the
 * parent.  Not carried: the parent's /tmp and /dev/shm (its tmpfs, not
 * its layer), its processes, and its name, labels, time limit and
 * published ports (a host port is one listener): the children's come from
 * the options.  The binds are bound again as declared: a read-write bind's
 * host directory is shared, as it is by any two sandboxes that bind it.  A
 * reset of a child returns it to its image, not to the fork.  Recorded in
 * the parent's audit log (a "fork" record naming the children) and in each
 * child's start record ("forked_from", also hutch_sandbox_status's).  All
 * or nothing: when a child cannot start, those started are removed. */
#define HUTCH_FORK_MAX 64
struct hutch_fork_options {
  unsigned n;                /* children: 1 to HUTCH_FORK_MAX */
  const char *const *names;  /* the first children's names, NULL-terminated, at most n (NULL: none) */
  const char *const *labels; /* every child's, "KEY=VALUE", NULL-terminated (may be NULL) */
  double ttl;                /* every child's time limit, as hutch_sandbox_extras's (0: none) */
  enum hutch_ttl_action on_ttl;
  /* The children die with the thread that forks them, as
   * hutch_sandbox_config.die_with_creator (the parent's setting is not
   * carried). */
  bool die_with_creator;
};
struct hutch_fork_result {
  double paused_seconds; /* how long the fork kept the parent paused; 0 when it was paused already */
  enum hutch_pause_method method;
  bool was_paused; /* it was paused before, and is still */
};
/* children: room for o->n handles, filled in order on success (each the
 * caller's to close or destroy); out may be NULL.  EINVAL for n out of
 * range or a name given twice; EEXIST for a name taken (nothing is left
 * made); ESRCH when the parent is not running; EOPNOTSUPP for one of
 * --overlay fuse; ESTALE as for a reset (no recorded configuration, or
 * its policy changed since). */
int hutch_sandbox_fork(struct hutch_sandbox *parent, const struct hutch_fork_options *o,
                       struct hutch_sandbox **children, struct hutch_fork_result *out, hutch_error_t *err);

/* ---- audit logs (hutch-audit(5)) -------------------------------------- */

/* Where a sandbox's audit log is: `what` is a file, a directory holding
 * audit.jsonl (a run directory, a sandbox's state directory), or a
 * sandbox's id or name: its state directory while it exists, else the state
 * directory's archive (.audit/ID.jsonl).  *path is malloc'd. */
int hutch_audit_find(const char *state_dir, const char *what, char **path, hutch_error_t *err);
struct hutch_audit_verdict {
  bool ok;
  uint64_t lines;       /* complete lines read */
  uint64_t broken_line; /* the line where the chain breaks; 0: not at a line (the head, an empty log) */
  char reason[256];
  bool ended;  /* its last record is "end" */
  bool capped; /* [limits] audit_log was reached: records were dropped */
  bool headed; /* PATH.head was there and agrees (else the end record alone closes it) */
  /* --net proxy: the proxy's log as its records (net_summary, net_unread)
   * say.  net_requests counts every request, those the proxy counted
   * without a line of their own (net_unlogged) included; net_not_joined:
   * its lines left out of this log at its bound. */
  bool net;
  bool net_unread; /* the proxy's log could not be read: its requests are unknown */
  uint64_t net_requests, net_unlogged, net_not_joined;
};
/* Verifies the hash chain of the log at path against PATH.head; each line
 * goes to `line` (may be NULL) as read, unescaped.  Returns 0 with the
 * verdict, -1 when the log cannot be read. */
int hutch_audit_verify(const char *path, void (*line)(const char *text, size_t len, uint64_t no, void *data),
                       void *data, struct hutch_audit_verdict *out, hutch_error_t *err);

/* ---- host checks (`hutch doctor`) ------------------------------------ */

enum hutch_check_status {
  HUTCH_CHECK_OK,
  HUTCH_CHECK_INFO, /* a fact about the host, no verdict */
  HUTCH_CHECK_SKIP, /* does not apply here */
  HUTCH_CHECK_WARN, /* works, or is not needed yet, but something is missing */
  HUTCH_CHECK_FAIL,
};

struct hutch_check {
  const char *id;    /* stable key for scripts: "userns", "procfs", ... */
  const char *title; /* for people */
  enum hutch_check_status status;
  bool required; /* a full-isolation sandbox cannot start when this fails */
  int errnum;    /* errno of the failed attempt, 0 when none */
  char *detail;  /* what was tried and what happened */
  char *fix;     /* how to fix it, NULL when nothing is to be done */
};

struct hutch_doctor_options {
  const char *store;     /* NULL: the default store */
  const char *state_dir; /* NULL: the default state directory */
};

struct hutch_doctor_report {
  struct hutch_check *checks;
  size_t n;
  bool ready;        /* every required check passed: a full-isolation sandbox can start */
  char *environment; /* "host", "docker", "podman", "kubernetes", "lxc", "container" */
};

/* Each check is a real attempt, made in a forked child; nothing is changed
 * on the host but temporary directories in the state directory. */
int hutch_doctor_run(const struct hutch_doctor_options *opts, struct hutch_doctor_report *out, hutch_error_t *err);
void hutch_doctor_report_clear(struct hutch_doctor_report *report);
const char *hutch_check_status_name(enum hutch_check_status status);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
