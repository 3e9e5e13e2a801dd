/* SPDX-License-Identifier: Apache-2.0 */
/* hutch mcp: the Model Context Protocol server (hutch-mcp(1)).
 *
 * mcp_proto.c     JSON-RPC and the MCP lifecycle: one message in, one reply out
 * mcp_schema.c    the tools' definitions (schemas, annotations) and the check
 *                 of a call's arguments against them
 * mcp_call.c      what every tool's handler uses: results, errors, arguments
 * mcp_tools.c     the tools: sandboxes as sessions, their files and commands
 * mcp_lifecycle.c the tools that pause and resume a sandbox
 * mcp_snapshot.c  the tools that snapshot and reset a sandbox, and delete a snapshot
 * mcp_fork.c      the tool that forks a sandbox into new ones of the session
 * mcp_resources.c a sandbox's files as resources, and subscriptions to them
 * mcp_prompts.c   the prompts
 * mcp_exec.c      a bounded command in a sandbox, cancelled when its client goes
 * mcp_http.c      the Streamable HTTP transport on a loopback address
 * mcp_worker.c    over HTTP, each session's own thread and its queue
 * mcp_reaper.c    the process that removes the sandboxes of a killed server
 * src/cli/cmd_mcp.c parses the options and runs the stdio transport.
 *
 * A session's requests are served by one thread, in order: over stdio the
 * only one, over HTTP a thread of the session's own.  Its sandboxes die with
 * that thread (hutch_sandbox_config.die_with_creator), so a SIGKILLed server
 * takes them along, and the reaper removes what they left. */
#ifndef HUTCH_MCP_H
#define HUTCH_MCP_H

#include <cjson/cJSON.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hutch.h"

#define MCP_LATEST_VERSION "2025-11-25"

#define MCP_STR_(x) #x
#define MCP_STR(x) MCP_STR_(x)

static inline void mcp_cjson_freep(cJSON **j) {
  cJSON_Delete(*j);
}
#define _cleanup_cjson_ __attribute__((cleanup(mcp_cjson_freep)))

/* The audit lines' file.  A client sets the pace of its lines, so a file
 * the operator names is bounded: past max bytes it becomes PATH.1 (the one
 * before is dropped) and a new one starts. */
struct mcp_audit {
  FILE *f;
  const char *path; /* NULL: standard error, not rotated */
  uint64_t max, size;
};

/* What the operator allows clients (hutch mcp's options). */
struct mcp_config {
  const char *store, *state_dir;
  struct hutch_policy *policy;
  const char *default_image;
  const char **images;     /* the images a client may name besides the default (NULL-terminated); NULL: any */
  struct hutch_limits max; /* the most a client may ask for; 0: it may not set that limit */
  double max_timeout;      /* seconds a command may run */
  size_t max_output;       /* bytes kept of each of a command's streams */
  size_t max_file;         /* bytes of a file read or written */
  unsigned max_sandboxes;  /* per session */
  unsigned max_snapshots;  /* images a session keeps at once (sandbox_snapshot) */
  bool net_proxy;          /* clients may ask for --net proxy */
  const char **allow;      /* hosts clients may add to the allowlist (NULL-terminated) */
  struct mcp_audit *audit; /* one JSON line per tool call; NULL: none */
  int reaper_fd;           /* mcp_reaper_*; -1: none */
};

struct mcp_sandbox {
  struct hutch_sandbox *sb;
  char id[40];
  char *image;
  char *workdir; /* its image's working directory, where resources/list looks */
  int64_t created;
  struct hutch_proc *py; /* its persistent Python interpreter, NULL until asked for */
  struct mcp_sandbox *next;
};

/* A resource a client subscribed to (resources/subscribe): what its file
 * held when last looked at, to tell a change. */
struct mcp_watch {
  char *uri, *sandbox, *path;
  int state; /* 0: read (size, hash); else the errno that kept it from being read */
  size_t size;
  uint64_t hash;
  struct mcp_watch *next;
};

/* A snapshot a session keeps (sandbox_snapshot). */
struct mcp_snapshot {
  char *name; /* mcp-TAG-N */
  char *base; /* the image the sandbox ran when it was taken: its layer lies over it */
};

struct mcp_session {
  char id[40];
  unsigned client; /* HTTP: 1 + the index of its client's token; 0 over stdio */
  bool initialized;
  char version[16];
  struct mcp_sandbox *sandboxes;
  struct mcp_watch *watches;
  unsigned n_watches;
  double next_poll;               /* monotonic time of the watches' next look */
  char snap_tag[16];              /* its snapshots' names' tag ("": none made yet) */
  unsigned snap_seq;              /* snapshots made, for the next one's name */
  struct mcp_snapshot *snapshots; /* the images it keeps, oldest first */
  unsigned n_snapshots;
  /* Sends a server-initiated message (a notification) to the client, when
   * the transport has a way to; NULL: none. */
  void (*notify)(struct mcp_session *s, const char *json);
  void *notify_data;
};

/* Asked while a call waits: true when the client went away or cancelled
 * the request whose id is `request` (a cJSON number or string). */
struct mcp_cancel {
  int fd; /* polled for readability/hangup; -1: none */
  bool (*gone)(void *data, const cJSON *request);
  void *data;
  const cJSON *request;
  /* Set by mcp_handle_message: the session whose watches are looked at
   * while the call waits (mcp_call_gone). */
  const struct mcp_config *cfg;
  struct mcp_session *session;
};

/* ---- mcp_proto.c ---- */
/* Set by SIGINT, SIGTERM and SIGHUP: calls end, then the server. */
extern volatile sig_atomic_t mcp_stopping;
/* Whether this server speaks protocol revision v. */
bool mcp_version_supported(const char *v);
/* One JSON-RPC message (text) for a session: the reply to send (malloc'd),
 * or NULL for a notification or a response from the client. */
char *mcp_handle_message(const struct mcp_config *cfg, struct mcp_session *s, const char *text, size_t len,
                         struct mcp_cancel *cancel);
/* A JSON-RPC error object reply without a request (parse errors, HTTP). */
char *mcp_error_reply(const cJSON *id, int code, const char *message);
/* Valid UTF-8 of len bytes (bad bytes and NULs as U+FFFD); malloc'd. */
char *mcp_utf8(const char *s, size_t len);
char *mcp_base64_encode(const unsigned char *data, size_t len);
/* Whether JSON text has at most the interpreter's answer's shape: two
 * containers (the answer, its figures), max_strings strings and a few KiB
 * between them.  Checked in one pass before it is parsed: a nested or
 * container-heavy line from the sandbox would cost the server time and
 * memory (a cJSON item of 64 bytes for each "[]," it holds). */
bool mcp_answer_shape_ok(const char *text, size_t len, unsigned max_strings);
/* Decodes into out (room for strlen(text) / 4 * 3 + 3 bytes); false on a byte that is not base64. */
bool mcp_base64_decode(const char *text, unsigned char *out, size_t *len);
/* One audit line (from any thread: the lines are written whole). */
void mcp_audit(const struct mcp_config *cfg, const struct mcp_session *s, const char *tool, const char *sandbox,
               const char *outcome, double seconds);
/* One line (without its newline) to an audit file, whole, from any thread,
 * rotated past its bound; hutch serve's lines go this way too. */
void mcp_audit_write(struct mcp_audit *a, const char *line);
/* Asked by a call while it waits (every 200 ms at most): looks at the
 * session's watches when they are due, and says whether the call is to end
 * (the server stops, the client went away or cancelled it). */
bool mcp_call_gone(struct mcp_cancel *cancel);

/* ---- mcp_schema.c ---- */
/* The tools (tools/list): openWorldHint says whether their commands may
 * reach a network, which the operator decides (--net proxy). */
cJSON *mcp_tools_list(const struct mcp_config *cfg);
/* Whether name is a tool of this server. */
bool mcp_tool_known(const char *name);
/* NULL when args fit the tool's inputSchema (types, enums, bounds, the
 * required ones, no others), else why not (malloc'd), for the model. */
char *mcp_args_check(const char *tool, const cJSON *args);

/* ---- mcp_call.c ---- */
/* One tools/call, as its handler sees it. */
struct mcp_call {
  const struct mcp_config *cfg;
  struct mcp_session *s;
  const char *tool;
  const cJSON *args;
  struct mcp_cancel *cancel;
  char sandbox[40]; /* for the audit: the sandbox it reached */
  bool invalid;     /* the arguments were refused: so says the audit */
};
/* A tool's result: text for the model, and the same facts as structured content. */
cJSON *mcp_result(const char *text, cJSON *structured, bool is_error);
/* A failed tool (the model can read why and try otherwise); frees *err. */
cJSON *mcp_tool_error(hutch_error_t *err);
/* Arguments the tool cannot take: a tool error, for the model to correct. */
__attribute__((format(printf, 2, 3))) cJSON *mcp_bad(struct mcp_call *c, const char *fmt, ...);
/* A string argument, or NULL. */
const char *mcp_arg_str(struct mcp_call *c, const char *key);
/* The session's sandbox of that id, or NULL. */
struct mcp_sandbox *mcp_sandbox_find(struct mcp_session *s, const char *id);
/* The session's sandbox named by the argument "id" (its link in the list),
 * or NULL, and then *why says why: none has that id, or it is paused and
 * the tool does not work on a paused sandbox (mcp_tool_runs_paused). */
struct mcp_sandbox **mcp_find(struct mcp_call *c, const char **why);
/* The tool error of mcp_find's why. */
cJSON *mcp_no_sandbox(const char *why);

/* ---- mcp_tools.c ---- */
/* The result of tools/call (a CallToolResult), or NULL with *code and
 * *message set for a protocol error (an unknown tool). */
cJSON *mcp_tools_call(const struct mcp_config *cfg, struct mcp_session *s, const char *name, const cJSON *args,
                      struct mcp_cancel *cancel, int *code, char **message);

/* A sandbox made for the session (sandbox_create, sandbox_fork): the
 * reaper is told of it, its file tools follow no symlink of its, and it
 * joins the session's list (image: what it runs; workdir: its image's, "/"
 * when none).  NULL, the sandbox destroyed, when the reaper cannot be
 * told. */
struct mcp_sandbox *mcp_session_add(const struct mcp_config *cfg, struct mcp_session *s, struct hutch_sandbox *sb,
                                    const char *image, const char *workdir, hutch_error_t *err);
/* Starts a sandbox of the session on an image of the store (net: none, or
 * the proxy with the policy's allowlist and allow's hosts) and adds it
 * (mcp_session_add): 0 and *out, or -1 and *err. */
int mcp_sandbox_start(const struct mcp_config *cfg, struct mcp_session *s, const char *image_name,
                      const struct hutch_limits *lim, bool proxy, const char *const *allow, struct mcp_sandbox **out,
                      hutch_error_t *err);
/* A tool error when the operator lists the images clients may start
 * (--allow-image) and name is not one of them; else NULL. */
cJSON *mcp_image_refused(const struct mcp_config *cfg, const char *name);
/* The session's sandboxes. */
unsigned mcp_session_count(const struct mcp_session *s);
/* Destroys a sandbox of the session (unlinked from its list already),
 * tells the reaper, and frees m. */
void mcp_sandbox_drop(const struct mcp_config *cfg, struct mcp_sandbox *m);

/* ---- mcp_lifecycle.c ---- */
/* The call of a tool of mcp_lifecycle.c's table, or NULL when the tool is
 * not one of them. */
cJSON *mcp_lifecycle_call(struct mcp_call *c);
/* Whether the tool acts on a paused sandbox (sandbox_destroy, those of
 * mcp_lifecycle.c that say so); the others are refused while it is paused. */
bool mcp_tool_runs_paused(const char *tool);
/* Destroys every sandbox of the session and removes its snapshots, and
 * drops its watches. */
void mcp_session_end(const struct mcp_config *cfg, struct mcp_session *s);

/* ---- mcp_snapshot.c ---- */
/* Snapshots a server lets a session keep at most (--max-snapshots). */
#define MCP_MAX_SNAPSHOTS 64
/* The call of sandbox_snapshot, sandbox_reset or sandbox_snapshot_delete,
 * or NULL for another tool. */
cJSON *mcp_snapshot_call(struct mcp_call *c);
/* Whether name is one of the session's snapshots. */
bool mcp_snapshot_own(const struct mcp_session *s, const char *name);
/* Removes the session's snapshots (their sandboxes destroyed first). */
void mcp_snapshots_end(const struct mcp_config *cfg, struct mcp_session *s);

/* ---- mcp_fork.c ---- */
/* The call of sandbox_fork, or NULL for another tool. */
cJSON *mcp_fork_call(struct mcp_call *c);

/* ---- mcp_resources.c ---- */
/* Subscriptions a session holds at most, and how often their files are
 * looked at: every MCP_WATCH_SECONDS, and never more than a tenth of the
 * session's time (a look that took t waits 10 t before the next). */
#define MCP_MAX_WATCHES 16
#define MCP_WATCH_SECONDS 2.0
/* The files resources/list names of each sandbox: regular files under its
 * working directory, MCP_RESOURCE_DEPTH levels down, at most
 * MCP_RESOURCE_FILES of them; pages of MCP_RESOURCE_PAGE. */
#define MCP_RESOURCE_DEPTH 3
#define MCP_RESOURCE_FILES 256
#define MCP_RESOURCE_PAGE 100
/* Each method returns its result, or NULL with *code and *message set for
 * a JSON-RPC error. */
cJSON *mcp_resources_list(const struct mcp_config *cfg, struct mcp_session *s, const cJSON *params, int *code,
                          char **message);
cJSON *mcp_resource_templates(void);
cJSON *mcp_resources_read(const struct mcp_config *cfg, struct mcp_session *s, const cJSON *params, int *code,
                          char **message);
cJSON *mcp_resources_subscribe(const struct mcp_config *cfg, struct mcp_session *s, const cJSON *params, bool on,
                               int *code, char **message);
/* Looks at the watched files when due; a change is sent (s->notify) as
 * notifications/resources/updated. */
void mcp_watches_poll(const struct mcp_config *cfg, struct mcp_session *s);
void mcp_watches_clear(struct mcp_session *s);
/* "sandbox://ID/PATH", PATH's bytes percent-encoded where a URI needs it;
 * malloc'd. */
char *mcp_resource_uri(const char *id, const char *path);
/* The sandbox id and absolute path of such a URI (malloc'd), or false. */
bool mcp_resource_parse(const char *uri, char **id, char **path);

/* ---- mcp_prompts.c ---- */
cJSON *mcp_prompts_list(void);
cJSON *mcp_prompts_get(const cJSON *params, int *code, char **message);

/* ---- mcp_exec.c ---- */
struct mcp_exec_result {
  char *out, *err; /* what was kept, NUL-terminated */
  size_t out_len, err_len;
  bool out_cut, err_cut;
  struct hutch_exit exit;
  bool cancelled; /* the client went away or cancelled: the process was killed */
};
int mcp_exec(const struct mcp_config *cfg, struct hutch_sandbox *sb, const char *const *argv, const char *workdir,
             const char *input, size_t input_len, double timeout, struct mcp_cancel *cancel, struct mcp_exec_result *r,
             hutch_error_t *err);
void mcp_exec_result_clear(struct mcp_exec_result *r);

/* ---- mcp_python.c ---- */
/* Figures one answer carries at most (the rest are dropped). */
#define MCP_MAX_FIGURES 64
/* Strings of an answer: its keys and values, and the figures. */
#define MCP_ANSWER_STRINGS (16 + MCP_MAX_FIGURES)
/* Runs code in the sandbox's interpreter (started when needed): 0 with the
 * driver's JSON reply, 1 with *why when the interpreter ended or was killed
 * (timeout, cancel), -1 on error. */
int mcp_python_call(const struct mcp_config *cfg, struct mcp_sandbox *m, const char *code, double timeout,
                    struct mcp_cancel *cancel, char **reply, char **why, hutch_error_t *err);
void mcp_python_stop(struct mcp_sandbox *m);

/* ---- mcp_llmsb_lang.c ---- */
#define MCP_LLMSB_RESOURCE "sandbox://languages"
/* A language of llm-sandbox's MCP server, as hutch runs it. */
struct mcp_llmsb_lang {
  const char *name;
  const char *tool;    /* its interpreter or compiler in an image, relative to the root */
  const char *run;     /* sh script running the code ("$0"); NULL: the persistent interpreter (Python) */
  const char *install; /* sh script installing the libraries ("$@"); NULL: not offered */
  const char *version, *package_manager;
  const char *preinstalled, *preinstalled_own; /* comma-separated: on the default image; on llm-sandbox-LANG too */
  const char *use_cases;
  bool visualization;
  const char *example;
};
/* llm-sandbox's languages, in its order. */
const struct mcp_llmsb_lang *mcp_llmsb_langs(size_t *n);
const struct mcp_llmsb_lang *mcp_llmsb_lang_named(const char *name);
/* The image the language runs on here (malloc'd), or NULL: not available. */
char *mcp_llmsb_image(const struct mcp_config *cfg, const struct mcp_llmsb_lang *l);
/* Why it is not available, and how to make it so (malloc'd). */
char *mcp_llmsb_unavailable(const struct mcp_llmsb_lang *l);
/* Its details, as get_language_details returns them. */
cJSON *mcp_llmsb_details(const struct mcp_config *cfg, const struct mcp_llmsb_lang *l);
/* resources/read of MCP_LLMSB_RESOURCE, and its resources/list entry. */
cJSON *mcp_llmsb_resource(const struct mcp_config *cfg);
void mcp_llmsb_resource_entry(cJSON *resources);

/* ---- mcp_llmsb.c ---- */
/* The call of execute_code, get_supported_languages or
 * get_language_details, or NULL for another tool. */
cJSON *mcp_llmsb_call(struct mcp_call *c);

/* ---- mcp_http.c ---- */
/* Sessions of the HTTP server, all its clients together: each has a thread
 * of its own, so at most this many calls run at once. */
#define MCP_MAX_SESSIONS 64
/* Requests a session holds waiting behind its running one (429 past it),
 * and the server all sessions together (503 past it). */
#define MCP_SESSION_QUEUE 8
#define MCP_MAX_QUEUED 64
struct mcp_http_config {
  const char *listen;        /* host:port, a loopback address */
  const char *const *tokens; /* NULL-terminated; each one client's */
  double idle;               /* seconds a session may go without a request */
  unsigned max_sessions;     /* per client, at most MCP_MAX_SESSIONS */
};
/* Serves until a signal (mcp_stopping). */
int mcp_http_serve(const struct mcp_config *cfg, const struct mcp_http_config *http, hutch_error_t *err);

/* ---- mcp_reaper.c ---- */
/* Forks the reaper: it removes every sandbox announced to it and not
 * withdrawn once this process is gone, however it went (as many as there
 * are).  Returns the announcing fd. */
int mcp_reaper_start(const char *state_dir, const char *store, hutch_error_t *err);
/* Tells the reaper of a sandbox made (add) or destroyed; fails when the
 * reaper is gone: a sandbox it was not told of must not be kept. */
int mcp_reaper_announce(int fd, bool add, const char *id, hutch_error_t *err);
/* The same for an image of the store (a session's snapshot), removed by
 * the reaper after the sandboxes. */
int mcp_reaper_announce_image(int fd, bool add, const char *name, hutch_error_t *err);

#endif
