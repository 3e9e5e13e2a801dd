/* The persistent Python interpreter of a sandbox (tool sandbox_python): one
 * python3 process per sandbox, started at the first call and kept, so
 * variables, imports and functions survive between calls, as a notebook's
 * kernel does.  Each call is one JSON line to its stdin; the driver below
 * runs the code with fds 1 and 2 sent to files (so a subprocess's output is
 * caught too), and answers with one JSON line on its own copy of the
 * original stdout: stdout, stderr, the value of a last expression, the
 * exception, and every matplotlib figure as PNG.  What the sandbox answers
 * is bounded in size and time; at the timeout, or when the client goes
 * away, the interpreter is killed (its state goes with it). */
#include "config.h"

#include "mcp.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static const char driver[] =
    "import ast, base64, io, json, os, sys, tempfile, traceback\n"
    "proto = os.fdopen(os.dup(1), 'w')\n"
    "limit = int(sys.argv[1])\n"
    "ns = {'__name__': '__main__'}\n"
    "def grab(f):\n"
    "    f.seek(0); data = f.read(limit + 1)\n"
    "    return data[:limit].decode('utf-8', 'replace'), len(data) > limit\n"
    "for line in sys.stdin:\n"
    "    req = json.loads(line)\n"
    "    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()\n"
    "    saved = os.dup(1), os.dup(2)\n"
    "    os.dup2(out.fileno(), 1); os.dup2(err.fileno(), 2)\n"
    "    sys.stdout = io.TextIOWrapper(os.fdopen(os.dup(1), 'wb'), line_buffering=True)\n"
    "    sys.stderr = io.TextIOWrapper(os.fdopen(os.dup(2), 'wb'), line_buffering=True)\n"
    "    res = {'result': None, 'error': None, 'figures': []}\n"
    "    try:\n"
    "        tree = ast.parse(req['code'], '<cell>', 'exec')\n"
    "        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None\n"
    "        exec(compile(tree, '<cell>', 'exec'), ns)\n"
    "        if last is not None:\n"
    "            v = eval(compile(ast.Expression(last.value), '<cell>', 'eval'), ns)\n"
    "            if v is not None: res['result'] = repr(v)[:limit]\n"
    "    except BaseException as e:\n"
    "        res['error'] = ''.join(traceback.format_exception(type(e), e, e.__traceback__.tb_next))[-limit:]\n"
    "    plt = sys.modules.get('matplotlib.pyplot')\n"
    "    if plt is not None:\n"
    "        for n in plt.get_fignums():\n"
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
    "    res['stdout'], cut1 = grab(out); res['stderr'], cut2 = grab(err); res['truncated'] = cut1 or cut2\n"
    "    proto.write(json.dumps(res) + '\\n'); proto.flush()\n";

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
  if (m->py == NULL && start(cfg, m, err) < 0)
    return -1;
  cJSON *req = cJSON_CreateObject();
  cJSON_AddStringToObject(req, "code", code);
  char *line = cJSON_PrintUnformatted(req);
  cJSON_Delete(req);
  _cleanup_free_ char *msg = xasprintf("%s\n", line);
  free(line);
  size_t off = 0, len = strlen(msg), cap = 65536, got = 0;
  size_t max = cfg->max_output * 8 + cfg->max_file; /* two streams, escaped, and the figures */
  _cleanup_free_ char *buf = xmalloc(cap + 1);
  double deadline = monotonic_seconds() + timeout;
  for (;;) {
    char *nl = got ? memchr(buf, '\n', got) : NULL;
    if (nl) {
      *nl = '\0';
      *reply = steal_pointer(&buf);
      return 0;
    }
    if (monotonic_seconds() >= deadline) {
      mcp_python_stop(m);
      *why = xasprintf("timed out after %.3g s: the interpreter was killed and its variables are gone", timeout);
      return 1;
    }
    if (mcp_stopping || (cancel && cancel->gone && cancel->gone(cancel->data, cancel->request))) {
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
