/* SPDX-License-Identifier: Apache-2.0 */
/* hutch_doctor_run: the checks in order, then the verdict; and the two
 * checks that only read the host (cgroups, the outer container). */
#include "config.h"

#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "doctor.h"
#include "probe.h"
#include "util.h"

static void check_cgroups(struct ladder *l) {
  struct hutch_check *c = report_add(l->r, "cgroup", "cgroup v2 and delegation", false);
  struct cgroup_facts cg;
  probe_cgroup_read(&cg);
  const char *layout = cgroup_layout_name(cg.layout);
  if (cg.layout != CGROUP_MODE_V2) {
    c->status = HUTCH_CHECK_WARN;
    report_detail(
        c, "%s%s: resource limits cannot be delegated (sandboxes still start; limits would not apply)", layout,
        cg.layout == CGROUP_MODE_HYBRID ? " (cgroup v1 controllers, v2 at /sys/fs/cgroup/unified without them)" : "");
    report_fix(c, probe_fix_cgroup(&l->env, &cg));
    return;
  }
  bool all = cg.has_cpu && cg.has_memory && cg.has_pids;
  if (cg.writable && all) {
    report_detail(c, "unified; %s is delegated to this user with %s", cg.path, cg.controllers);
    return;
  }
  c->status = HUTCH_CHECK_WARN;
  report_detail(c, "unified; %s%s%s; controllers: %s%s%s%s", cg.path, cg.readonly_mount ? " (read-only mount)" : "",
                cg.writable ? " is writable" : " is not delegated", cg.controllers[0] ? cg.controllers : "none",
                cg.has_cpu ? "" : " (no cpu)", cg.has_memory ? "" : " (no memory)", cg.has_pids ? "" : " (no pids)");
  report_fix(c, probe_fix_cgroup(&l->env, &cg));
}

static void check_container(struct ladder *l) {
  struct hutch_check *c = report_add(l->r, "container", "outer container", false);
  struct probe_env *e = &l->env;
  c->status = HUTCH_CHECK_INFO;
  char blocks[1024] = "";
  for (size_t i = 0; i < l->r->n; i++) {
    struct hutch_check *k = &l->r->checks[i];
    if (k->status == HUTCH_CHECK_FAIL && k != c) {
      size_t len = strlen(blocks);
      snprintf(blocks + len, sizeof(blocks) - len, "%s%s", len ? ", " : "", k->id);
    }
  }
  size_t ev = strlen(e->evidence);
  if (ev >= 2 && strcmp(e->evidence + ev - 2, "; ") == 0)
    e->evidence[ev - 2] = '\0';
  report_detail(c, "%s%s%s%s%s%s%s%s%s", strcmp(e->name, "host") == 0 ? "none detected" : e->name,
                e->evidence[0] ? " (" : "", e->evidence, e->evidence[0] ? ")" : "",
                e->outer_seccomp ? "; an outer seccomp filter is active" : "",
                e->nested_userns ? "; inside a nested user namespace" : "",
                e->masked_proc[0] ? "; /proc has over-mounts" : "", blocks[0] ? "; it blocks: " : "", blocks);
  if (e->github_actions || e->gitlab_ci) {
    size_t len = strlen(c->detail);
    c->detail = xrealloc(c->detail, len + 32);
    snprintf(c->detail + len, 32, "%s", e->github_actions ? "; GitHub Actions" : "; GitLab CI");
  }
}

int hutch_doctor_run(const struct hutch_doctor_options *opts, struct hutch_doctor_report *out, hutch_error_t *err) {
  memset(out, 0, sizeof(*out));
  struct report r = {0};
  struct ladder l = {.r = &r, .state_fd = -1};
  probe_env_read(&l.env);
  /* The probes fork as a start clones: at the hard RLIMIT_NPROC, as
   * sandbox_start.c raises it, or a low soft limit would fail them where
   * sandboxes start.  The caller's limits are reported and put back. */
  bool nproc_raised = nproc_raise(&l.nproc);
  if (idmap_for_caller(&l.maps, err) < 0)
    return -1;
  idmap_single(l.maps, &l.single);

  doctor_check_kernel(&l);
  doctor_check_sysctls(&l);
  doctor_check_userns(&l);
  doctor_check_apparmor(&l);
  doctor_check_idmap(&l);
  doctor_check_store(&l, opts ? opts->store : NULL);
  doctor_check_state_and_overlay(&l, opts ? opts->state_dir : NULL);
  doctor_check_procfs(&l);
  doctor_check_uts(&l);
  doctor_check_seccomp(&l);
  check_cgroups(&l);
  doctor_check_pause(&l);
  doctor_check_network(&l);
  doctor_check_capacity(&l);
  check_container(&l);
  if (l.state_fd >= 0)
    close(l.state_fd);
  free(l.state_path);
  nproc_restore(nproc_raised, &l.nproc);

  out->checks = r.checks;
  out->n = r.n;
  out->environment = xstrdup(l.env.name);
  out->ready = true;
  for (size_t i = 0; i < r.n; i++)
    if (r.checks[i].required && r.checks[i].status == HUTCH_CHECK_FAIL)
      out->ready = false;
  return 0;
}
