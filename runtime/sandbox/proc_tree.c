/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "proc_tree.h"

#include <stdlib.h>
#include <string.h>

/* The value after "\nKEY:" (or at the start), NULL when absent. */
static const char *field(const char *text, const char *key) {
  size_t kl = strlen(key);
  for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
    if (strncmp(l, key, kl) == 0 && l[kl] == ':')
      return l + kl + 1;
  return NULL;
}

bool proc_status_parse(const char *status, pid_t *ppid, pid_t *inner) {
  const char *pp = field(status, "PPid"), *ns = field(status, "NSpid");
  if (pp == NULL || ns == NULL)
    return false;
  *ppid = (pid_t)strtol(pp, NULL, 10);
  long last = -1;
  for (char *end;; ns = end) {
    long v = strtol(ns, &end, 10);
    if (end == ns)
      break;
    last = v;
  }
  if (last <= 0)
    return false;
  *inner = (pid_t)last;
  return true;
}

/* Marks what descends from host pid `top` (not top itself). */
static size_t mark_under(struct proc_entry *e, size_t n, pid_t top) {
  for (size_t i = 0; i < n; i++)
    e[i].chosen = false;
  /* Parents may come after their children in /proc's order: repeat until
   * nothing changes (n passes at most). */
  size_t count = 0;
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t i = 0; i < n; i++) {
      if (e[i].chosen || e[i].pid == top)
        continue;
      bool under = e[i].ppid == top;
      for (size_t j = 0; !under && j < n; j++)
        under = e[j].chosen && e[j].pid == e[i].ppid;
      if (under) {
        e[i].chosen = changed = true;
        count++;
      }
    }
  }
  return count;
}

size_t proc_tree_select(struct proc_entry *e, size_t n, pid_t init, pid_t leader, bool self) {
  /* Every process of a sandbox descends from its init (orphans are given
   * to it): the leader is looked for among them only; pid 1 is the init. */
  mark_under(e, n, init);
  pid_t host = 0;
  for (size_t i = 0; i < n; i++)
    if (leader == 1 ? e[i].pid == init : e[i].chosen && e[i].inner == leader)
      host = e[i].pid;
  if (host == 0) {
    for (size_t i = 0; i < n; i++)
      e[i].chosen = false;
    return 0;
  }
  size_t count = mark_under(e, n, host);
  for (size_t i = 0; self && i < n; i++)
    if (e[i].pid == host) {
      e[i].chosen = true;
      count++;
    }
  return count;
}

size_t proc_children_parse(const char *text, pid_t *v, size_t *n, size_t cap) {
  size_t lost = 0;
  for (char *end;; text = end) {
    long pid = strtol(text, &end, 10);
    if (end == text)
      break;
    if (pid <= 0)
      continue;
    if (*n < cap)
      v[(*n)++] = (pid_t)pid;
    else
      lost++;
  }
  return lost;
}
