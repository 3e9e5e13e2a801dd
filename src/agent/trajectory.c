/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "trajectory.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

void trajectory_init(struct trajectory *t, const char *path, const char *problem) {
  /* The flags start false whatever the caller's memory held. */
  *t = (struct trajectory){0};
  t->path = xstrdup(path);
  t->tmp = xasprintf("%s.tmp", path);
  t->start = monotonic_seconds();
  t->root = cJSON_CreateObject();
  cJSON_AddStringToObject(t->root, "problem_statement", problem);
  t->steps = cJSON_AddArrayToObject(t->root, "steps");
  cJSON *m = cJSON_AddObjectToObject(t->root, "metadata");
  cJSON_AddNumberToObject(m, "total_steps", 0);
  t->meta = cJSON_AddObjectToObject(t->root, "hutch");
}

void trajectory_add(struct trajectory *t, long step, const char *thought, const char *reasoning, const char *function,
                    const char *arguments, const char *observation, double llm_seconds, double tool_seconds,
                    int exit_code, const char *call_id) {
  cJSON *s = cJSON_CreateObject();
  cJSON_AddStringToObject(s, "thought", thought ? thought : "");
  cJSON_AddStringToObject(s, "reasoning_content", reasoning ? reasoning : "");
  cJSON *action = cJSON_AddObjectToObject(s, "action");
  /* The action as LLM-in-Sandbox records it: the arguments as JSON parses
   * them, an object or not; arguments that are no JSON at all are no call
   * ({"function": "", "parameters": {}}), and the call as it came is kept
   * in the step's metadata (unparsed_call). */
  cJSON *params = arguments ? cJSON_ParseWithOpts(arguments, NULL, true) : cJSON_CreateObject();
  bool unparsed = params == NULL;
  cJSON_AddStringToObject(action, "function", function && !unparsed ? function : "");
  cJSON_AddItemToObject(action, "parameters", unparsed ? cJSON_CreateObject() : params);
  cJSON_AddStringToObject(s, "observation", observation ? observation : "");
  cJSON *m = cJSON_AddObjectToObject(s, "metadata");
  cJSON_AddNumberToObject(m, "step", (double)step);
  cJSON_AddNumberToObject(m, "exec_time", llm_seconds);
  cJSON_AddNumberToObject(m, "tool_time", tool_seconds);
  if (exit_code >= 0)
    cJSON_AddNumberToObject(m, "exit_code", exit_code);
  else
    cJSON_AddNullToObject(m, "exit_code");
  if (call_id)
    cJSON_AddStringToObject(m, "tool_call_id", call_id);
  if (unparsed) {
    cJSON *u = cJSON_AddObjectToObject(m, "unparsed_call");
    cJSON_AddStringToObject(u, "name", function ? function : "");
    cJSON_AddStringToObject(u, "arguments", arguments);
  }
  /* Seconds since the run began when the step ended: with exec_time and
   * tool_time it gives the loop's own cost per step. */
  cJSON_AddNumberToObject(m, "elapsed", monotonic_seconds() - t->start);
  cJSON_AddItemToArray(t->steps, s);
}

void trajectory_note_reply(struct trajectory *t, const struct trajectory_reply *rep) {
  cJSON *m =
      cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(t->steps, cJSON_GetArraySize(t->steps) - 1), "metadata");
  if (m == NULL)
    return;
  cJSON_AddNumberToObject(m, "reply", (double)rep->n);
  if (rep->first && rep->has_usage) {
    cJSON_AddNumberToObject(m, "prompt_tokens", (double)rep->prompt_tokens);
    cJSON_AddNumberToObject(m, "completion_tokens", (double)rep->completion_tokens);
  }
  if (rep->first && rep->has_cost)
    cJSON_AddNumberToObject(m, "cost", rep->cost);
}

void trajectory_set(struct trajectory *t, const char *key, cJSON *value) {
  cJSON_DeleteItemFromObjectCaseSensitive(t->meta, key);
  cJSON_AddItemToObject(t->meta, key, value);
}

void trajectory_set_steps(struct trajectory *t, long total_steps) {
  cJSON *m = cJSON_GetObjectItemCaseSensitive(t->root, "metadata");
  cJSON_ReplaceItemInObjectCaseSensitive(m, "total_steps", cJSON_CreateNumber((double)total_steps));
}

/* The whole text at the start of fd, and nothing after it. */
static int write_whole(int fd, const char *text, size_t len) {
  for (size_t off = 0; off < len;) {
    ssize_t n = pwrite(fd, text + off, len - off, (off_t)off);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return -1;
    off += (size_t)n;
  }
  return ftruncate(fd, (off_t)len);
}

int trajectory_save(struct trajectory *t, hutch_error_t *err) {
  _cleanup_free_ char *text = cJSON_Print(t->root);
  size_t len = strlen(text);
  text[len] = '\n';
  /* Written whole into the spare file, then put in place in one step: a
   * reader or a kill -9 sees the old or the new file, never half of one.
   * No fsync: it would cost more than the rest of a step, and only a power
   * cut could tell the difference.  From the second save on the two names
   * are swapped (RENAME_EXCHANGE) and the spare, which then holds the save
   * before, is overwritten next time: two files for the whole run instead
   * of a new one per step, which on ext4 cost about 0.3 ms each (a rename
   * over a file frees one inode, the next save allocates another).  A file
   * held open across a whole step can therefore change under its reader;
   * reading it at once, or copying it, sees one save. */
  _cleanup_close_ int fd = open(t->tmp, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0 || write_whole(fd, text, len + 1) < 0) {
    hutch_error_sys(err, "write %s", t->tmp);
    unlink(t->tmp);
    t->spare = false;
    return -1;
  }
  t->spare = true;
  if (t->saved && !t->no_exchange) {
    if (renameat2(AT_FDCWD, t->tmp, AT_FDCWD, t->path, RENAME_EXCHANGE) == 0)
      return 0;
    /* A filesystem without the swap (or trajectory.json removed
     * meanwhile): a plain rename, from now on. */
    if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP && errno != ENOENT) {
      hutch_error_sys(err, "write %s", t->path);
      return -1;
    }
    t->no_exchange = errno != ENOENT;
  }
  if (rename(t->tmp, t->path) < 0) {
    hutch_error_sys(err, "write %s", t->path);
    unlink(t->tmp);
    t->spare = false;
    return -1;
  }
  t->spare = false;
  t->saved = true;
  return 0;
}

void trajectory_free(struct trajectory *t) {
  if (t->spare)
    unlink(t->tmp);
  cJSON_Delete(t->root);
  free(t->path);
  free(t->tmp);
  memset(t, 0, sizeof(*t));
}
