/* SPDX-License-Identifier: Apache-2.0 */
/* state.json's members of a long-lived sandbox (state_live.h): "name",
 * "labels" ({"KEY": "VALUE"}), "forked_from" (an id), "generation", "config", "devices"
 * (["NAME"]), "ports", "ttl" ({"seconds",
 * "on_ttl", "deadline_boot_ns", "deadline", "left"}) and "helpers"
 * ({"keeper": {"pid", "start_time"}}) and "init_fds" ({"scratch": N,
 * "netns": N}). */
#include "config.h"

#include "state_live.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cdi_spec.h"
#include "hutch.h"
#include "labels.h"
#include "paths.h"
#include "request.h"
#include "util.h"

/* 64-bit numbers as strings: a JSON number is a double. */
static void add_u64(cJSON *o, const char *key, uint64_t v) {
  char text[32];
  snprintf(text, sizeof(text), "%" PRIu64, v);
  cJSON_AddStringToObject(o, key, text);
}

static uint64_t get_u64(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsString(v) ? strtoull(v->valuestring, NULL, 10) : 0;
}

static double get_number(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void write_ttl(cJSON *o, const struct sandbox_live *l) {
  if (ttl_active(&l->ttl)) {
    cJSON *t = cJSON_AddObjectToObject(o, "ttl");
    cJSON_AddNumberToObject(t, "seconds", l->ttl.seconds);
    cJSON_AddStringToObject(t, "on_ttl", l->ttl.on_ttl == HUTCH_TTL_PAUSE ? "pause" : "remove");
    add_u64(t, "deadline_boot_ns", (uint64_t)l->ttl.deadline_ns);
    if (ttl_stopped(&l->ttl))
      cJSON_AddNumberToObject(t, "left", l->ttl.left);
    else
      cJSON_AddNumberToObject(t, "deadline", l->ttl.deadline);
  }
  if (l->keeper.pid > 0) {
    cJSON *k = cJSON_AddObjectToObject(cJSON_AddObjectToObject(o, "helpers"), "keeper");
    cJSON_AddNumberToObject(k, "pid", l->keeper.pid);
    add_u64(k, "start_time", l->keeper.start_time);
  }
}

/* A record that makes no sense is no limit: never a deadline made up. */
static void read_ttl(const cJSON *o, struct sandbox_live *l) {
  const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "ttl");
  if (cJSON_IsObject(t) && ttl_seconds_valid(get_number(t, "seconds"))) {
    l->ttl.seconds = get_number(t, "seconds");
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(t, "on_ttl");
    l->ttl.on_ttl = cJSON_IsString(a) && strcmp(a->valuestring, "pause") == 0 ? HUTCH_TTL_PAUSE : HUTCH_TTL_REMOVE;
    uint64_t d = get_u64(t, "deadline_boot_ns");
    l->ttl.deadline_ns = d > INT64_MAX ? INT64_MAX : (int64_t)d;
    l->ttl.deadline = get_number(t, "deadline");
    double left = get_number(t, "left");
    l->ttl.left = left > 0 && left <= TTL_MAX_SECONDS ? left : 0;
  }
  const cJSON *h = cJSON_GetObjectItemCaseSensitive(o, "helpers");
  const cJSON *k = cJSON_IsObject(h) ? cJSON_GetObjectItemCaseSensitive(h, "keeper") : NULL;
  double pid = cJSON_IsObject(k) ? get_number(k, "pid") : 0;
  if (pid >= 1 && pid <= INT32_MAX) {
    l->keeper.pid = (pid_t)pid;
    l->keeper.start_time = get_u64(k, "start_time");
  }
}

/* 0-2 are init's /dev/null: never one it holds for hutch. */
#define HELD_FD_MIN 3
#define HELD_FD_MAX (1 << 20)

static void write_held(cJSON *o, const struct sync_held_fds *h) {
  if (h->scratch_fd < HELD_FD_MIN || h->netns_fd < HELD_FD_MIN)
    return;
  cJSON *fds = cJSON_AddObjectToObject(o, "init_fds");
  cJSON_AddNumberToObject(fds, "scratch", h->scratch_fd);
  cJSON_AddNumberToObject(fds, "netns", h->netns_fd);
}

static int32_t read_fd(const cJSON *fds, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(fds, name);
  if (!cJSON_IsNumber(v) || v->valuedouble < HELD_FD_MIN || v->valuedouble > HELD_FD_MAX)
    return -1;
  return (int32_t)v->valuedouble;
}

void state_live_write(cJSON *o, const struct sandbox_live *l) {
  write_ttl(o, l);
  write_held(o, &l->held);
  if (l->name)
    cJSON_AddStringToObject(o, "name", l->name);
  if (l->forked_from)
    cJSON_AddStringToObject(o, "forked_from", l->forked_from);
  if (l->generation) {
    char g[32];
    snprintf(g, sizeof(g), "%" PRIu64, l->generation);
    cJSON_AddStringToObject(o, "generation", g);
  }
  /* A reference: the record stays the caller's. */
  if (l->config)
    cJSON_AddItemReferenceToObject(o, "config", l->config);
  if (l->devices && l->devices[0])
    cJSON_AddItemToObject(
        o, "devices",
        cJSON_CreateStringArray((const char *const *)l->devices, (int)strv_length((const char *const *)l->devices)));
  if (l->ports)
    cJSON_AddItemReferenceToObject(o, "ports", l->ports);
  if (l->labels == NULL || l->labels[0] == NULL)
    return;
  cJSON *labels = cJSON_AddObjectToObject(o, "labels");
  for (char **kv = l->labels; *kv; kv++) {
    const char *eq = strchr(*kv, '=');
    if (eq == NULL)
      continue;
    _cleanup_free_ char *key = xstrndup(*kv, (size_t)(eq - *kv));
    /* A key given twice: the last wins, as labels_match reads a list. */
    cJSON_DeleteItemFromObjectCaseSensitive(labels, key);
    cJSON_AddStringToObject(labels, key, eq + 1);
  }
}

void state_live_read(const cJSON *o, struct sandbox_live *l) {
  memset(l, 0, sizeof(*l));
  const cJSON *fds = cJSON_GetObjectItemCaseSensitive(o, "init_fds");
  l->held.scratch_fd = read_fd(fds, "scratch");
  l->held.netns_fd = read_fd(fds, "netns");
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "name");
  if (cJSON_IsString(v) && labels_check_name(v->valuestring, NULL) == 0)
    l->name = xstrdup(v->valuestring);
  if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(o, "forked_from")) && paths_valid_name(v->valuestring) &&
      strlen(v->valuestring) < 40)
    l->forked_from = xstrdup(v->valuestring);
  if (cJSON_IsString(v = cJSON_GetObjectItemCaseSensitive(o, "generation")))
    l->generation = strtoull(v->valuestring, NULL, 10);
  l->config = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(o, "config"), true);
  const cJSON *devices = cJSON_GetObjectItemCaseSensitive(o, "devices");
  if (cJSON_IsArray(devices)) {
    size_t n = 0;
    l->devices = xcalloc(HUTCH_DEVICES_MAX + 1, sizeof(char *));
    cJSON_ArrayForEach(v, devices) {
      if (n < HUTCH_DEVICES_MAX && cJSON_IsString(v) && cdi_device_name_valid(v->valuestring))
        l->devices[n++] = xstrdup(v->valuestring);
    }
  }
  l->ports = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(o, "ports"), true);
  read_ttl(o, l);
  const cJSON *labels = cJSON_GetObjectItemCaseSensitive(o, "labels");
  if (!cJSON_IsObject(labels))
    return;
  size_t n = 0;
  l->labels = xcalloc(HUTCH_LABELS_MAX + 1, sizeof(char *));
  cJSON_ArrayForEach(v, labels) {
    if (n == HUTCH_LABELS_MAX || !cJSON_IsString(v) || v->string == NULL)
      continue;
    char *kv = xasprintf("%s=%s", v->string, v->valuestring);
    if (labels_check_label(kv, NULL) == 0)
      l->labels[n++] = kv;
    else
      free(kv);
  }
}

void state_live_clear(struct sandbox_live *l) {
  free(l->name);
  free(l->forked_from);
  l->forked_from = NULL;
  for (char **kv = l->labels; kv && *kv; kv++)
    free(*kv);
  free(l->labels);
  cJSON_Delete(l->config);
  cleanup_strvp(&l->devices);
  cJSON_Delete(l->ports);
  l->ports = NULL;
  l->name = NULL;
  l->labels = NULL;
  l->config = NULL;
  l->generation = 0;
}
