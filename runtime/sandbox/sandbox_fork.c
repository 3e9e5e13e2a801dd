/* SPDX-License-Identifier: Apache-2.0 */
/* hutch_sandbox_fork: new live sandboxes that start from a live one's
 * files.  Each child is started as `hutch create` starts a sandbox, from
 * the configuration its parent was created with (state.json "config",
 * config_record.h), and its child process copies the parent's writable
 * layer into its own before its overlay is mounted (a seeded start:
 * sandbox_internal.h, contain.c: step_seed_layer).  Nothing is shared
 * that either side could write: each has its own upper directory, tmpfs
 * (/tmp, /dev/shm), namespaces, cgroup and proxy; only the binds the
 * configuration declares are bound again, as declared.
 *
 * The parent is paused from before the first child copies until the last
 * has copied (sandbox_hold: the state lock, the pause, the resume on
 * every way out), so every child holds the same moment of its files.
 * All or nothing: when a child cannot start, the children started are
 * removed, and the parent goes on as before. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "config_capture.h"
#include "config_record.h"
#include "policy.h"
#include "proc_stat.h"
#include "sandbox.h"
#include "sandbox_fds.h"
#include "sandbox_fs.h"
#include "sandbox_internal.h"
#include "state.h"
#include "util.h"

/* The options' syntax, before anything is read or paused. */
static int check_options(const struct hutch_fork_options *o, hutch_error_t *err) {
  if (o->n < 1 || o->n > HUTCH_FORK_MAX) {
    hutch_error_set(err, EINVAL, "fork: %u children asked for", o->n);
    return hutch_error_hint(err, "a fork makes 1 to %d sandboxes at a time", HUTCH_FORK_MAX);
  }
  struct hutch_sandbox_extras x = {.labels = o->labels, .ttl = o->ttl, .on_ttl = o->on_ttl};
  if (hutch_sandbox_extras_check(&x, err) < 0)
    return hutch_error_wrap(err, "fork");
  for (size_t i = 0; o->names && o->names[i]; i++) {
    if (i == o->n)
      return hutch_error_set(err, EINVAL, "fork: more names than the %u children", o->n);
    x.name = o->names[i];
    if (hutch_sandbox_extras_check(&x, err) < 0)
      return hutch_error_wrap(err, "fork");
    for (size_t j = 0; j < i; j++)
      if (strcmp(o->names[j], o->names[i]) == 0)
        return hutch_error_set(err, EINVAL, "fork: the name %s is given twice (a name is one sandbox's)", o->names[i]);
  }
  return 0;
}

/* What the children start from, read from the parent's state before
 * anything is paused: what can be refused is refused here. */
struct plan {
  struct sandbox_state st;
  struct config_record rec;
  struct hutch_policy *policy;
  struct hutch_sandbox_config cfg;
  char *state_path;
};

static void plan_clear(struct plan *p) {
  state_clear(&p->st);
  config_record_clear(&p->rec);
  hutch_policy_free(p->policy);
  free(p->state_path);
}

static int make_plan(struct hutch_sandbox *sb, const struct hutch_fork_options *o, struct plan *p, hutch_error_t *err) {
  if (state_read(sb->state_fd, sb->id, &p->st, err) < 0)
    return -1;
  if (!p->st.long_lived)
    return hutch_error_set(err, EINVAL, "sandbox %s is a one-shot sandbox", sb->id);
  if (p->st.overlay_fuse) {
    hutch_error_set(err, EOPNOTSUPP,
                    "sandbox %s runs on fuse-overlayfs (--overlay fuse), whose layer is not the kernel's "
                    "overlayfs format a child starts from",
                    sb->id);
    return hutch_error_hint(err, "make the sandbox without --overlay fuse to fork it");
  }
  /* A sandbox made before 0.2 has no record: ESTALE, as for a reset. */
  if (config_record_decode(p->st.live.config, sb->id, &p->rec, err) < 0)
    return -1;
  p->cfg = p->rec.cfg;
  /* The policy it was made under, unchanged since (ESTALE otherwise): a
   * child runs under the very policy its parent runs under. */
  if (hutch_policy_load(p->rec.policy_path, &p->policy, err) < 0)
    return -1;
  p->cfg.policy = p->policy;
  char fp[CONFIG_FINGERPRINT_LEN];
  if (config_capture_fingerprint(&p->cfg, fp, err) < 0 || config_record_check_policy(&p->rec, fp, sb->id, err) < 0)
    return -1;
  /* An image removed since (`hutch rootfs rm`) is refused now, not by the
   * first child's mount with the parent paused. */
  for (size_t i = 0;; i++) {
    const char *tree = i == 0 ? p->cfg.rootfs : p->cfg.rootfs_lowers ? p->cfg.rootfs_lowers[i - 1] : NULL;
    if (tree == NULL)
      break;
    if (faccessat(AT_FDCWD, tree, F_OK, 0) < 0) {
      hutch_error_sys(err, "image %s: its tree %s", p->cfg.image ? p->cfg.image : "?", tree);
      return hutch_error_hint(err, "the image was removed from the store since the sandbox was made");
    }
  }
  if ((p->state_path = fd_path(sb->state_fd)) == NULL)
    return hutch_error_sys(err, "the state directory's path");
  p->cfg.state_dir = p->state_path;
  /* The creator's, not the parent's: a parent that dies with its creator
   * hands that on to no child made elsewhere. */
  p->cfg.die_with_creator = o->die_with_creator;
  return 0;
}

/* The parent's "fork" record (hutch-audit(5)): after the pause and resume
 * records of the pause it made.  A record that cannot be written is said,
 * not fatal: the children are made. */
static void audit_fork(struct hutch_sandbox *sb, const struct hutch_fork_options *o, struct hutch_sandbox **children,
                       size_t made, const struct hutch_fork_result *r, const hutch_error_t failure) {
  struct audit_rec rec;
  audit_rec_init(&rec, "fork");
  audit_rec_caller(&rec);
  audit_rec_u64(&rec, "n", o->n);
  const char *ids[HUTCH_FORK_MAX + 1] = {NULL};
  for (size_t i = 0; i < made; i++)
    ids[i] = children[i]->id;
  audit_rec_strv(&rec, "children", ids);
  audit_rec_double(&rec, "paused_ms", r->paused_seconds * 1000);
  audit_rec_str(&rec, "method", hutch_pause_method_name(r->method));
  audit_rec_bool(&rec, "was_paused", r->was_paused);
  _cleanup_free_ char *why = failure ? hutch_error_format(failure) : NULL;
  audit_rec_str(&rec, "error", why);
  hutch_error_t err = NULL;
  _cleanup_close_ int dirfd = openat(sb->state_fd, sb->id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dirfd < 0 || audit_append(dirfd, AUDIT_LOG_NAME, 0, &rec, &err) < 0) {
    if (err == NULL)
      hutch_error_sys(&err, "open sandbox %s's state", sb->id);
    hutch_error_wrap(&err, "fork of sandbox %s: its audit record", sb->id);
    hutch_log_error(HUTCH_LOG_WARNING, err);
    hutch_error_free(&err);
  }
  audit_rec_free(&rec);
}

/* What the children's starts hand back (start_seed): the parent's pause,
 * set going before the first child starts, is waited for when that child
 * is ready to copy its layer, and the parent resumed once the last child
 * has copied it, while that child's start ends. */
struct seeding {
  struct sandbox_hold *hold;
  int layer; /* the parent's upper directory, taken before the pause */
  unsigned copies, n;
  double t_sent; /* when the last seed went, for the debug log */
};

static int seed_take(void *data, hutch_error_t *err) {
  struct seeding *f = data;
  double t0 = monotonic_seconds();
  if (sandbox_hold_freeze(f->hold, err) < 0)
    return -1;
  f->t_sent = monotonic_seconds();
  hutch_debug("fork: the parent paused in %.3f ms", (f->t_sent - t0) * 1e3);
  /* An open of its own for each child: none reads from another's offset. */
  int fd = openat(f->layer, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  return fd < 0 ? hutch_error_sys(err, "open the parent's layer") : fd;
}

static int seed_copied(void *data, hutch_error_t *err) {
  struct seeding *f = data;
  hutch_debug("fork: child %u copied the parent's layer in %.3f ms", f->copies + 1,
              (monotonic_seconds() - f->t_sent) * 1e3);
  if (++f->copies < f->n)
    return 0;
  /* A parent that cannot be resumed fails the fork (the hold says why). */
  return sandbox_hold_end(f->hold, err);
}

/* One id of a process ("Uid", "Gid" of its status, the host's), in its
 * own user namespace (through `map`, its uid_map or gid_map). */
static int64_t id_inside(pid_t pid, const char *key, const char *map) {
  char p[64];
  snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
  _cleanup_free_ char *status = read_file_at(AT_FDCWD, p, 16384, NULL);
  snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, map);
  _cleanup_free_ char *text = read_file_at(AT_FDCWD, p, 4096, NULL);
  int64_t host = status ? sfs_status_id(status, key) : -1;
  return host < 0 || text == NULL ? -1 : sfs_map_inside_of(text, (uint32_t)host);
}

/* A parent created with a user: its children run as the ids its init
 * runs as, given by number.  The name is not looked up again: the child's
 * /etc/passwd is its copy of the parent's layer, which the sandbox writes,
 * and could have given the name uid 0 since. */
static int parent_user(const struct hutch_sandbox *sb, const char *spec, char *out, size_t len, hutch_error_t *err) {
  if (spec == NULL || spec[0] == '\0')
    return 0;
  int64_t uid = id_inside(sb->pid, "Uid", "uid_map"), gid = id_inside(sb->pid, "Gid", "gid_map");
  if (uid < 0 || gid < 0 || !proc_stat_alive(sb->pid, sb->start_time))
    return hutch_error_set(err, ESRCH, "fork: the ids the parent's init runs as (user %s) cannot be read", spec);
  snprintf(out, len, "%lld:%lld", (long long)uid, (long long)gid);
  return 0;
}

/* The children, one after the other, from the paused parent's layer.  The
 * layer's fd is taken before the pause: a running init hands it over, a
 * frozen one no longer answers.  *made: how many were made; -1 when fewer
 * than asked, or when the parent could not be resumed. */
static int make_children(struct hutch_sandbox *sb, const struct hutch_fork_options *o, const struct plan *p,
                         struct hutch_sandbox **children, size_t *made, struct hutch_fork_result *out,
                         hutch_error_t *err) {
  *made = 0;
  char user[48] = "";
  if (parent_user(sb, p->rec.x.user, user, sizeof(user), err) < 0)
    return -1;
  /* Resumed and unlocked on every way out (or by the last copy). */
  __attribute__((cleanup(sandbox_hold_cleanup))) struct sandbox_hold h = {.dirfd = -1};
  if (sandbox_hold_begin(&h, sb, err) < 0)
    return -1;
  out->was_paused = h.was_paused;
  out->method = h.method;
  double t0 = monotonic_seconds();
  _cleanup_close_ int layer = sandbox_upper_fd(sb, err);
  double t1 = monotonic_seconds();
  /* The parent's tasks stop while the first child starts; they are
   * waited for when it is ready to copy (seed_take). */
  if (layer < 0 || sandbox_hold_freeze_begin(&h, err) < 0)
    return -1;
  hutch_debug("fork: the parent's layer taken in %.3f ms, its pause set going in %.3f ms", (t1 - t0) * 1e3,
              (monotonic_seconds() - t1) * 1e3);
  struct seeding f = {.hold = &h, .layer = layer, .n = o->n};
  struct start_seed seed = {.take = seed_take, .copied = seed_copied, .data = &f, .forked_from = sb->id};
  int r = 0;
  for (bool named = o->names != NULL; *made < o->n; (*made)++) {
    const char *name = named ? o->names[*made] : NULL;
    named = name != NULL;
    /* The parent's devices, resolved again for each, and its user; its
     * ports are its own (a host port is one listener). */
    struct hutch_sandbox_extras x = {
        .name = name,
        .labels = o->labels,
        .ttl = o->ttl,
        .on_ttl = o->on_ttl,
        .devices = p->rec.x.devices,
        .user = user[0] ? user : NULL,
    };
    if (sandbox_create_seeded(&p->cfg, &x, &seed, &children[*made], err) < 0) {
      r = hutch_error_wrap(err, "child %zu of %u", *made + 1, o->n);
      break;
    }
  }
  out->method = h.method;
  /* After a failure: resumed here (a failure to is logged, the child's
   * error being the fork's). */
  if (sandbox_hold_end(&h, err) < 0)
    r = -1;
  out->paused_seconds = out->was_paused ? 0 : h.paused_seconds;
  return r;
}

int hutch_sandbox_fork(struct hutch_sandbox *sb, const struct hutch_fork_options *o, struct hutch_sandbox **children,
                       struct hutch_fork_result *out, hutch_error_t *err) {
  struct hutch_fork_result unused;
  if (out == NULL)
    out = &unused;
  *out = (struct hutch_fork_result){0};
  if (o == NULL || children == NULL)
    return hutch_error_set(err, EINVAL, "fork of sandbox %s: no options or no room for the children", sb->id);
  if (check_options(o, err) < 0)
    return -1;
  for (unsigned i = 0; i < o->n; i++)
    children[i] = NULL;
  sandbox_follow_if_ended(sb); /* a reset since this handle looked */
  if (!proc_stat_alive(sb->pid, sb->start_time)) {
    hutch_error_set(err, ESRCH, "sandbox %s is not running", sb->id);
    return hutch_error_hint(err, "remove it with `hutch rm %s`", sb->id);
  }
  struct plan p = {0};
  double t0 = monotonic_seconds();
  if (make_plan(sb, o, &p, err) < 0) {
    plan_clear(&p);
    return hutch_error_wrap(err, "fork of sandbox %s", sb->id);
  }
  /* The failure is kept here too: the parent's record names it whether
   * or not the caller asked for it. */
  hutch_error_t failure = NULL;
  hutch_debug("fork: the parent's configuration read in %.3f ms", (monotonic_seconds() - t0) * 1e3);
  size_t made;
  int r = make_children(sb, o, &p, children, &made, out, &failure);
  plan_clear(&p);
  if (r < 0) {
    audit_fork(sb, o, children, made, out, failure);
    /* All or nothing: the children made go (their logs say so). */
    for (size_t i = 0; i < made; i++) {
      hutch_error_t ignored = NULL;
      if (hutch_sandbox_destroy(children[i], &ignored) < 0) {
        hutch_log_error(HUTCH_LOG_WARNING, ignored);
        hutch_error_free(&ignored);
      }
      children[i] = NULL;
    }
    hutch_error_wrap(&failure, "fork of sandbox %s", sb->id);
    hutch_error_move(err, &failure);
    return -1;
  }
  audit_fork(sb, o, children, made, out, NULL);
  hutch_debug("fork %s: %zu children in %.3f ms, the parent paused %.3f ms", sb->id, made,
              (monotonic_seconds() - t0) * 1e3, out->paused_seconds * 1e3);
  return 0;
}
