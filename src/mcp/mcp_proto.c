/* SPDX-License-Identifier: Apache-2.0 */
/* JSON-RPC 2.0 and the MCP lifecycle (initialize, ping), and the methods
 * of tools, resources and prompts, independent of the transport: a message
 * in, a reply out. */
#include "config.h"

#include "mcp.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

volatile sig_atomic_t mcp_stopping;

/* Newest first: what an initialize that asks for another gets. */
static const char *const versions[] = {MCP_LATEST_VERSION, "2025-06-18", "2025-03-26", "2024-11-05"};

bool mcp_version_supported(const char *v) {
  for (size_t i = 0; i < ARRAY_SIZE(versions); i++)
    if (v && strcmp(v, versions[i]) == 0)
      return true;
  return false;
}

char *mcp_utf8(const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  char *out = xmalloc(len * 3 + 1);
  size_t o = 0;
  for (size_t i = 0; i < len;) {
    uint32_t cp;
    size_t n = utf8_decode(p + i, len - i, &cp);
    if (n == 0 || cp == 0) {
      memcpy(out + o, "\xef\xbf\xbd", 3);
      o += 3;
      i++;
      continue;
    }
    memcpy(out + o, p + i, n);
    o += n;
    i += n;
  }
  out[o] = '\0';
  return out;
}

bool mcp_answer_shape_ok(const char *text, size_t len, unsigned max_strings) {
  unsigned containers = 0, strings = 0;
  size_t outside = 0;
  bool in_string = false;
  for (size_t i = 0; i < len; i++) {
    char ch = text[i];
    if (in_string) {
      if (ch == '\\')
        i++; /* an escape's next character is never its string's end */
      else if (ch == '"')
        in_string = false;
      continue;
    }
    if (ch == '"') {
      in_string = true;
      if (++strings > max_strings)
        return false;
    } else if (((ch == '[' || ch == '{') && ++containers > 2) || ++outside > 4096) {
      return false;
    }
  }
  return true;
}

static char *reply(const cJSON *id, cJSON *result, int code, const char *message) {
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "jsonrpc", "2.0");
  cJSON_AddItemToObject(r, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
  if (result) {
    cJSON_AddItemToObject(r, "result", result);
  } else {
    cJSON *e = cJSON_AddObjectToObject(r, "error");
    cJSON_AddNumberToObject(e, "code", code);
    cJSON_AddStringToObject(e, "message", message);
  }
  char *s = cJSON_PrintUnformatted(r);
  cJSON_Delete(r);
  return s;
}

char *mcp_error_reply(const cJSON *id, int code, const char *message) {
  return reply(id, NULL, code, message);
}

bool mcp_call_gone(struct mcp_cancel *cancel) {
  if (cancel && cancel->session)
    mcp_watches_poll(cancel->cfg, cancel->session);
  return mcp_stopping || (cancel && cancel->gone && cancel->gone(cancel->data, cancel->request));
}

/* The full file becomes PATH.1 and a new one starts under the same stream
 * (its descriptor replaced), so whoever holds the stream holds the new
 * file; should that fail, the lines go on in the old one, and the failure
 * is said once. */
static void audit_rotate(struct mcp_audit *a) {
  _cleanup_free_ char *old = xasprintf("%s.1", a->path);
  fflush(a->f);
  int fd = rename(a->path, old) == 0 ? open(a->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600) : -1;
  if (fd < 0 || dup3(fd, fileno(a->f), O_CLOEXEC) < 0) {
    hutch_warn("the audit log %s is past %llu bytes and could not start again: %s", a->path, (unsigned long long)a->max,
               strerror(errno));
    a->max = UINT64_MAX;
  } else {
    a->size = 0;
  }
  if (fd >= 0)
    close(fd);
}

/* Over HTTP each session's thread writes its own lines. */
static pthread_mutex_t audit_lock = PTHREAD_MUTEX_INITIALIZER;

void mcp_audit(const struct mcp_config *cfg, const struct mcp_session *s, const char *tool, const char *sandbox,
               const char *outcome, double seconds) {
  if (cfg->audit == NULL)
    return;
  cJSON *j = cJSON_CreateObject();
  cJSON_AddNumberToObject(j, "time", (double)time(NULL));
  if (s->id[0])
    cJSON_AddStringToObject(j, "session", s->id);
  if (s->client)
    cJSON_AddNumberToObject(j, "client", s->client);
  cJSON_AddStringToObject(j, "tool", tool);
  if (sandbox)
    cJSON_AddStringToObject(j, "sandbox", sandbox);
  cJSON_AddStringToObject(j, "outcome", outcome);
  cJSON_AddNumberToObject(j, "seconds", seconds);
  char *line = cJSON_PrintUnformatted(j);
  mcp_audit_write(cfg->audit, line);
  free(line);
  cJSON_Delete(j);
}

void mcp_audit_write(struct mcp_audit *a, const char *line) {
  size_t len = strlen(line) + 1;
  pthread_mutex_lock(&audit_lock);
  if (a->path && a->size > 0 && a->size + len > a->max)
    audit_rotate(a);
  if (a->f && fprintf(a->f, "%s\n", line) > 0)
    a->size += len;
  if (a->f)
    fflush(a->f);
  pthread_mutex_unlock(&audit_lock);
}

static cJSON *initialize(struct mcp_session *s, const cJSON *params) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(params, "protocolVersion");
  const char *asked = cJSON_IsString(v) ? v->valuestring : NULL;
  /* Version negotiation: the client's revision when this server speaks it,
   * else the newest one (the client then decides whether to go on). */
  snprintf(s->version, sizeof(s->version), "%s", mcp_version_supported(asked) ? asked : MCP_LATEST_VERSION);
  cJSON *r = cJSON_CreateObject();
  cJSON_AddStringToObject(r, "protocolVersion", s->version);
  cJSON *caps = cJSON_AddObjectToObject(r, "capabilities");
  cJSON *tools = cJSON_AddObjectToObject(caps, "tools");
  cJSON_AddBoolToObject(tools, "listChanged", false);
  cJSON *resources = cJSON_AddObjectToObject(caps, "resources");
  cJSON_AddBoolToObject(resources, "subscribe", true);
  cJSON_AddBoolToObject(resources, "listChanged", false);
  cJSON *prompts = cJSON_AddObjectToObject(caps, "prompts");
  cJSON_AddBoolToObject(prompts, "listChanged", false);
  cJSON *info = cJSON_AddObjectToObject(r, "serverInfo");
  cJSON_AddStringToObject(info, "name", "hutch");
  cJSON_AddStringToObject(info, "version", PACKAGE_VERSION);
  cJSON_AddStringToObject(r, "instructions",
                          "Sandboxes are sessions: create one with sandbox_create, pass its id to the other tools, "
                          "and destroy it with sandbox_destroy; all of them go when this session ends. Their files "
                          "are resources too: sandbox://ID/PATH.");
  s->initialized = true;
  return r;
}

char *mcp_handle_message(const struct mcp_config *cfg, struct mcp_session *s, const char *text, size_t len,
                         struct mcp_cancel *cancel) {
  cJSON *msg = cJSON_ParseWithLength(text, len);
  if (msg == NULL)
    return reply(NULL, NULL, -32700, "parse error: not JSON");
  char *out = NULL;
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(msg, "id");
  const cJSON *method = cJSON_GetObjectItemCaseSensitive(msg, "method");
  const cJSON *jsonrpc = cJSON_GetObjectItemCaseSensitive(msg, "jsonrpc");
  const cJSON *params = cJSON_GetObjectItemCaseSensitive(msg, "params");
  if (!cJSON_IsObject(msg)) {
    out = reply(NULL, NULL, -32600, "invalid request: a JSON-RPC message is an object (no batches)");
    goto done;
  }
  bool id_ok = id == NULL || cJSON_IsString(id) || (cJSON_IsNumber(id));
  if (!cJSON_IsString(jsonrpc) || strcmp(jsonrpc->valuestring, "2.0") != 0 || !id_ok ||
      (method && !cJSON_IsString(method)) || (params && !cJSON_IsObject(params))) {
    out = reply(id_ok ? id : NULL, NULL, -32600, "invalid request: not a JSON-RPC 2.0 message");
    goto done;
  }
  if (method == NULL) {
    /* A response (to nothing this server asks) or garbage: no reply to a
     * response, an error for anything else that carries an id. */
    if (id && !cJSON_HasObjectItem(msg, "result") && !cJSON_HasObjectItem(msg, "error"))
      out = reply(id, NULL, -32600, "invalid request: no method");
    goto done;
  }
  const char *m = method->valuestring;
  if (id == NULL)
    goto done; /* notifications: initialized, cancelled (of nothing running), others ignored */
  if (strcmp(m, "initialize") == 0) {
    out = reply(id, initialize(s, params), 0, NULL);
  } else if (strcmp(m, "ping") == 0) {
    out = reply(id, cJSON_CreateObject(), 0, NULL);
  } else if (!s->initialized) {
    out = reply(id, NULL, -32600, "the session is not initialized: send initialize first");
  } else if (strcmp(m, "tools/list") == 0) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddItemToObject(r, "tools", mcp_tools_list(cfg));
    out = reply(id, r, 0, NULL);
  } else if (strcmp(m, "tools/call") == 0) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(params, "name");
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(params, "arguments");
    if (!cJSON_IsString(name) || (args && !cJSON_IsObject(args))) {
      out = reply(id, NULL, -32602, "invalid params: tools/call wants a name and an arguments object");
      goto done;
    }
    int code = 0;
    _cleanup_free_ char *why = NULL;
    if (cancel) {
      cancel->request = id;
      cancel->cfg = cfg;
      cancel->session = s;
    }
    cJSON *r = mcp_tools_call(cfg, s, name->valuestring, args, cancel, &code, &why);
    out = r ? reply(id, r, 0, NULL) : reply(id, NULL, code, why);
  } else if (strcmp(m, "resources/templates/list") == 0) {
    out = reply(id, mcp_resource_templates(), 0, NULL);
  } else if (strcmp(m, "prompts/list") == 0) {
    out = reply(id, mcp_prompts_list(), 0, NULL);
  } else if (strncmp(m, "resources/", 10) == 0 || strcmp(m, "prompts/get") == 0) {
    int code = -32601;
    _cleanup_free_ char *why = NULL;
    cJSON *r = NULL;
    if (strcmp(m, "resources/list") == 0)
      r = mcp_resources_list(cfg, s, params, &code, &why);
    else if (strcmp(m, "resources/read") == 0)
      r = mcp_resources_read(cfg, s, params, &code, &why);
    else if (strcmp(m, "resources/subscribe") == 0 || strcmp(m, "resources/unsubscribe") == 0)
      r = mcp_resources_subscribe(cfg, s, params, m[10] == 's', &code, &why);
    else if (strcmp(m, "prompts/get") == 0)
      r = mcp_prompts_get(params, &code, &why);
    else
      why = xasprintf("method not found: %.64s", m);
    out = r ? reply(id, r, 0, NULL) : reply(id, NULL, code, why);
  } else {
    _cleanup_free_ char *why = xasprintf("method not found: %.64s", m);
    out = reply(id, NULL, -32601, why);
  }
done:
  cJSON_Delete(msg);
  return out;
}

/* The runtime's codec (base64.h), under the names mcp.h gives it. */
char *mcp_base64_encode(const unsigned char *data, size_t len) {
  return base64_encode(data, len);
}

bool mcp_base64_decode(const char *text, unsigned char *out, size_t *len) {
  return base64_decode(text, strlen(text), out, len);
}
