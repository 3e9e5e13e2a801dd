/* SPDX-License-Identifier: Apache-2.0 */
/* The persistent Python interpreter of a sandbox (tool sandbox_python): one
 * python3 process per sandbox, started at the first call and kept, so
 * variables, imports and functions survive between calls, as a notebook's
 * kernel does.  Each call is one JSON line to its stdin; the driver below
 * runs the code with fds 1 and 2 sent to files (so a subprocess's output is
 * caught too), and answers with one line on its own copy of the original
 * stdout, the call's nonce then JSON: stdout, stderr, the value of a last
 * expression, the exception, and every matplotlib figure as PNG.  What the sandbox answers
 * is bounded in size and time; at the timeout, or when the client goes
 * away, the interpreter is killed (its state goes with it). */
#include "config.h"

#include "mcp.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "util.h"

#define STR_(x) #x
#define STR(x) STR_(x)

/* The code runs in the driver's process, so it can write on the answer
 * channel too (it is hostile input, like all the sandbox writes): each
 * request carries a nonce drawn here for that call only, and a line counts
 * as the answer only when it starts with that nonce and nothing follows
 * it.  An answer the code writes ahead for a later call, or has a child
 * write, cannot carry that call's nonce: it is refused and the interpreter
 * killed.  Within its own call the code decides its own results anyway,
 * and code it leaves running in the interpreter (a thread) owns the
 * interpreter's later calls as any persistent state does: the nonce keeps
 * the host's framing, not the interpreter, out of its reach.  The channels
 * are kept by main() alone (no global name to look up); requests come on a
 * copy of stdin and fd 0 becomes /dev/null, so neither the code's input()
 * nor a child it starts reads the requests that follow; between calls fd 1
 * is stderr's, so what a thread or child prints then is no answer.
 * (python/hutch/_interp.py runs the same protocol with a driver of its own,
 * whose answers have other fields.) */
static const char driver[] =
    "import ast, base64, io, json, os, sys, tempfile, traceback\n"
    "limit = int(sys.argv[1])\n"
    "ns = {'__name__': '__main__'}\n"
    "def grab(f):\n"
    "    f.seek(0); data = f.read(limit + 1)\n"
    "    return data[:limit].decode('utf-8', 'replace'), len(data) > limit\n"
    "def run(code):\n"
    "    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()\n"
    "    saved = os.dup(1), os.dup(2)\n"
    "    os.dup2(out.fileno(), 1); os.dup2(err.fileno(), 2)\n"
    "    sys.stdout = io.TextIOWrapper(os.fdopen(os.dup(1), 'wb'), line_buffering=True)\n"
    "    sys.stderr = io.TextIOWrapper(os.fdopen(os.dup(2), 'wb'), line_buffering=True)\n"
    "    res = {'result': None, 'error': None, 'figures': []}\n"
    "    try:\n"
    "        tree = ast.parse(code, '<cell>', 'exec')\n"
    "        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None\n"
    "        exec(compile(tree, '<cell>', 'exec'), ns)\n"
    "        if last is not None:\n"
    "            v = eval(compile(ast.Expression(last.value), '<cell>', 'eval'), ns)\n"
    "            if v is not None: res['result'] = repr(v)[:limit]\n"
    "    except BaseException as e:\n"
    "        res['error'] = ''.join(traceback.format_exception(type(e), e, e.__traceback__.tb_next))[-limit:]\n"
    "    plt = sys.modules.get('matplotlib.pyplot')\n"
    "    if plt is not None:\n"
    "        for n in plt.get_fignums()[:" STR(
        MCP_MAX_FIGURES) "]:\n"
                         "            b = io.BytesIO()\n"
                         "            try:\n"
                         "                plt.figure(n).savefig(b, format='png'); "
                         "res['figures'].append(base64.b64encode(b.getvalue()).decode())\n"
                         "            except Exception: pass\n"
                         "        plt.close('all')\n"
                         "    for s in (sys.stdout, sys.stderr):\n"
                         "        try: s.close()\n"
                         "        except Exception: pass\n"
                         "    os.dup2(saved[0], 1); os.dup2(saved[1], 2); os.close(saved[0]); os.close(saved[1])\n"
                         "    res['stdout'], cut1 = grab(out); res['stderr'], cut2 = grab(err); res['truncated'] = "
                         "cut1 or cut2\n"
                         "    return res\n"
                         "def main(requests, proto):\n"
                         "    null = os.open(os.devnull, os.O_RDONLY); os.dup2(null, 0); os.close(null); os.dup2(2, "
                         "1)\n"
                         "    for line in requests:\n"
                         "        req = json.loads(line)\n"
                         "        nonce = req['nonce']\n"
                         "        res = run(req['code'])\n"
                         "        proto.write(nonce + ' ' + json.dumps(res) + '\\n'); proto.flush()\n"
                         "main(os.fdopen(os.dup(0), 'r'), os.fdopen(os.dup(1), 'w'))\n";

static int start(const struct mcp_config *cfg, struct mcp_sandbox *m, hutch_error_t *err) {
  _cleanup_free_ char *limit = xasprintf("%zu", cfg->max_output);
  const char *argv[] = {"/bin/sh",
                        "-c",
                        "command -v python3 >/dev/null || { echo 'python3 is not in this sandbox image' >&2; exit 127; "
                        "}; exec python3 -u -c \"$0\" \"$1\"",
                        driver,
                        limit,
                        NULL};
  struct hutch_spawn spec = {
      .argv = argv,
      .stdio = {{HUTCH_STDIO_PIPE, -1}, {HUTCH_STDIO_PIPE, -1}, {HUTCH_STDIO_PIPE, -1}},
  };
  return hutch_proc_spawn(m->sb, &spec, &m->py, err);
}

void mcp_python_stop(struct mcp_sandbox *m) {
  if (m->py)
    hutch_proc_free(m->py); /* kills it */
  m->py = NULL;
}

#define NONCE_BYTES 16

/* Drawn by the host for one call; never guessed from the clock: without
 * the kernel's randomness no call is made. */
static int new_nonce(char out[NONCE_BYTES * 2 + 1], hutch_error_t *err) {
  unsigned char r[NONCE_BYTES];
  ssize_t n;
  while ((n = getrandom(r, sizeof(r), 0)) < 0 && errno == EINTR)
    ;
  if (n != (ssize_t)sizeof(r))
    return hutch_error_sys(err, "sandbox_python: draw the call's nonce (getrandom)");
  for (size_t i = 0; i < sizeof(r); i++)
    snprintf(out + 2 * i, 3, "%02x", r[i]);
  return 0;
}

/* What the interpreter said on stderr before it died (why it did). */
static char *last_words(struct hutch_proc *p) {
  char buf[4096];
  ssize_t n = read(hutch_proc_fd(p, 2), buf, sizeof(buf) - 1);
  return mcp_utf8(buf, n > 0 ? (size_t)n : 0);
}

/* One request line out, one reply line back: 0 with *reply, 1 when the
 * interpreter ended or was killed (*why says why), -1 on error. */
int mcp_python_call(const struct mcp_config *cfg, struct mcp_sandbox *m, const char *code, double timeout,
                    struct mcp_cancel *cancel, char **reply, char **why, hutch_error_t *err) {
  *reply = *why = NULL;
  char nonce[NONCE_BYTES * 2 + 1];
  if (new_nonce(nonce, err) < 0)
    return -1;
  if (m->py == NULL && start(cfg, m, err) < 0)
    return -1;
  cJSON *req = cJSON_CreateObject();
  cJSON_AddStringToObject(req, "code", code);
  cJSON_AddStringToObject(req, "nonce", nonce);
  char *line = cJSON_PrintUnformatted(req);
  cJSON_Delete(req);
  _cleanup_free_ char *msg = xasprintf("%s\n", line);
  free(line);
  size_t off = 0, len = strlen(msg), cap = 65536, got = 0, scanned = 0;
  size_t max = cfg->max_output * 8 + cfg->max_file; /* two streams, escaped, and the figures */
  _cleanup_free_ char *buf = xmalloc(cap + 1);
  double deadline = monotonic_seconds() + timeout;
  for (;;) {
    /* Only what the last read added is searched: linear however the
     * sandbox writes the line (it can make each read return a few bytes). */
    char *nl = got > scanned ? memchr(buf + scanned, '\n', got - scanned) : NULL;
    scanned = got;
    if (nl) {
      /* Only this call's nonce makes the line its answer; the driver
       * writes nothing after it until the next request, so bytes after it
       * were written by the code (for a later call) too. */
      size_t n = strlen(nonce);
      if ((size_t)(nl - buf) <= n || memcmp(buf, nonce, n) != 0 || buf[n] != ' ' || (size_t)(nl - buf) + 1 != got) {
        mcp_python_stop(m);
        *why = xstrdup("the interpreter sent an answer that is not this call's (written by the code it ran): it was "
                       "killed and its variables are gone");
        return 1;
      }
      *nl = '\0';
      size_t reply_len = (size_t)(nl - buf) - n - 1;
      memmove(buf, buf + n + 1, reply_len + 1);
      if (!mcp_answer_shape_ok(buf, reply_len, MCP_ANSWER_STRINGS)) {
        mcp_python_stop(m);
        *why = xstrdup("the interpreter sent an answer that is not the driver's in shape (nested, or more containers "
                       "or strings than its fields): it was killed and its variables are gone");
        return 1;
      }
      *reply = steal_pointer(&buf);
      return 0;
    }
    if (monotonic_seconds() >= deadline) {
      mcp_python_stop(m);
      *why = xasprintf("timed out after %.3g s: the interpreter was killed and its variables are gone", timeout);
      return 1;
    }
    if (mcp_call_gone(cancel)) {
      mcp_python_stop(m);
      *why = xstrdup("cancelled: the interpreter was killed and its variables are gone");
      return 1;
    }
    struct pollfd fds[3] = {
        {hutch_proc_fd(m->py, 1), POLLIN, 0},
        {off < len ? hutch_proc_fd(m->py, 0) : -1, POLLOUT, 0},
        {cancel ? cancel->fd : -1, POLLIN | POLLRDHUP, 0},
    };
    if (poll(fds, 3, 200) < 0 && errno != EINTR)
      return hutch_error_sys(err, "poll");
    if (fds[1].revents) {
      ssize_t w = write(fds[1].fd, msg + off, len - off);
      if (w > 0)
        off += (size_t)w;
    }
    if (fds[0].revents) {
      if (got == cap) {
        if (cap >= max) {
          mcp_python_stop(m);
          *why = xstrdup("the interpreter's answer was too large: it was killed and its variables are gone");
          return 1;
        }
        cap *= 2;
        buf = xrealloc(buf, cap + 1);
      }
      ssize_t n = read(fds[0].fd, buf + got, cap - got);
      if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
        _cleanup_free_ char *words = last_words(m->py);
        mcp_python_stop(m);
        *why = xasprintf("the interpreter ended%s%s", words[0] ? ": " : "", words);
        return 1;
      }
      if (n > 0)
        got += (size_t)n;
    }
  }
}
