/* SPDX-License-Identifier: Apache-2.0 */
/* The library's one log sink (hutch_set_log_handler) and its one error
 * formatter (hutch_error_format, hutch_errno_format). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hutch.h"
#include "tap.h"
#include "util.h"

struct seen {
  int n;
  enum hutch_log_level level;
  char line[512];
  void *data;
};

static void handler(enum hutch_log_level level, const char *line, void *data) {
  struct seen *s = data;
  s->n++;
  s->level = level;
  s->data = data;
  snprintf(s->line, sizeof(s->line), "%s", line);
}

/* stderr into a temporary file, to see what reached it. */
static int saved_stderr = -1;
static FILE *captured;

static void capture_stderr(void) {
  fflush(stderr);
  captured = tmpfile();
  saved_stderr = dup(2);
  dup2(fileno(captured), 2);
}

static char *captured_text(void) {
  fflush(stderr);
  dup2(saved_stderr, 2);
  close(saved_stderr);
  static char buf[1024];
  rewind(captured);
  size_t n = fread(buf, 1, sizeof(buf) - 1, captured);
  buf[n] = '\0';
  fclose(captured);
  return buf;
}

int main(void) {
  unsetenv("HUTCH_DEBUG");
  struct seen s = {0};
  hutch_set_log_handler(handler, &s);
  capture_stderr();
  /* A library warning through the public API: the image's User is ignored;
   * the name carries an escape sequence, as a hostile image's would. */
  struct hutch_image image = {.user = (char *)"evil\033[2J\nhutch: all is well\r"};
  hutch_image_user_notice(&image);
  const char *err_text = captured_text();
  tap_is_int(s.n, 1, "the library's warning reaches the handler");
  tap_is_int(s.level, HUTCH_LOG_WARNING, "as a warning");
  tap_ok(s.data == &s, "with the handler's data");
  tap_ok(strstr(s.line, "the image's User \"evil\\x1b[2J hutch: all is well \" is not applied") != NULL,
         "its control characters escaped, its line ends made spaces: %s", s.line);
  tap_ok(strncmp(s.line, "hutch", 5) != 0 && strstr(s.line, "warning") == NULL,
         "without program name or level (the handler adds its own)");
  tap_is_str(err_text, "", "nothing reaches stderr");

  /* The default again: "hutch: warning: ..." on stderr. */
  hutch_set_log_handler(NULL, NULL);
  capture_stderr();
  hutch_warn("a default %s", "line\033]0;x\007");
  hutch_notice("a notice");
  hutch_log(HUTCH_LOG_INFO, "a progress line");
  err_text = captured_text();
  tap_is_str(err_text,
             "hutch: warning: a default line\\x1b]0;x\\x07\nhutch: notice: a notice\nhutch: a progress line\n",
             "without a handler: prefixed lines on stderr, escaped");
  tap_is_int(s.n, 1, "and the old handler is not called");

  /* Debug lines only with HUTCH_DEBUG (read once: unset here). */
  hutch_set_log_handler(handler, &s);
  hutch_debug("not shown");
  hutch_log_errno(HUTCH_LOG_DEBUG, EIO, "not shown either");
  tap_is_int(s.n, 1, "no debug line without HUTCH_DEBUG");
  hutch_log_errno(HUTCH_LOG_WARNING, ENOENT, "open %s", "x");
  tap_is_str(s.line, "open x: No such file or directory", "hutch_log_errno: the formatter's text");
  hutch_log_errno(HUTCH_LOG_WARNING, 0, "no errno");
  tap_is_str(s.line, "no errno", "errno 0 adds nothing");
  hutch_set_log_handler(NULL, NULL);

  /* The one formatter never says "Success". */
  char *t = hutch_errno_format(0, "step %d", 3);
  tap_is_str(t, "step 3", "hutch_errno_format with errno 0: the message alone");
  free(t);
  t = hutch_errno_format(EACCES, "open %s", "f");
  tap_is_str(t, "open f: Permission denied", "with an errno: msg: strerror");
  free(t);
  struct hutch_error e0 = {.msg = (char *)"read the reply", .errnum = 0};
  t = hutch_error_format(&e0);
  tap_is_str(t, "read the reply", "hutch_error_format of an error without errno");
  free(t);
  struct hutch_error e1 = {.msg = (char *)"mount /proc", .errnum = EPERM, .hint = (char *)"see hutch doctor"};
  t = hutch_error_format(&e1);
  tap_is_str(t, "mount /proc: Operation not permitted", "with errno, without the hint");
  free(t);
  t = hutch_error_format(NULL);
  tap_is_str(t, "", "no error: empty");
  free(t);

  /* The errno's text said once, and only where it means something. */
  static const struct {
    int errnum;
    const char *msg, *want, *what;
  } once[] = {
      {ENOENT, "/x in the sandbox: no such file or directory", NULL, "a message that says the errno's text: not again"},
      {ENOENT, "open a: No such file or directory: in b", NULL, "nor when it says it in the middle"},
      {ENOENT, "no such file", "no such file: No such file or directory", "a part of the text is not the text"},
      {EPROTO, "http://x/v1/chat/completions answered HTTP 401: bad key", NULL,
       "an HTTP status is not followed by EPROTO's \"Protocol error\""},
      {EACCES, "registry r: GET a/manifests/b answered HTTP 403", NULL, "nor by the EACCES that sorts a 403"},
      {ECONNREFUSED, "GET http://127.0.0.1:9/v1/models", "GET http://127.0.0.1:9/v1/models: Connection refused",
       "a URL is no HTTP status"},
      {EIO, "read HTTP 4000 bytes", "read HTTP 4000 bytes: Input/output error", "nor are four digits"},
  };
  for (size_t i = 0; i < sizeof(once) / sizeof(once[0]); i++) {
    struct hutch_error e = {.msg = (char *)once[i].msg, .errnum = once[i].errnum};
    char *by_error = hutch_error_format(&e), *by_errno = hutch_errno_format(once[i].errnum, "%s", once[i].msg);
    const char *want = once[i].want ? once[i].want : once[i].msg;
    tap_is_str(by_error, want, "hutch_error_format: %s", once[i].what);
    tap_is_str(by_errno, want, "hutch_errno_format: %s", once[i].what);
    free(by_error);
    free(by_errno);
  }
  char *printed = NULL;
  size_t plen = 0;
  FILE *f = open_memstream(&printed, &plen);
  struct hutch_error ecp = {.msg = (char *)"/x in the sandbox: no such file or directory", .errnum = ENOENT};
  hutch_error_print(f, "hutch", &ecp);
  fclose(f);
  tap_is_str(printed, "hutch: /x in the sandbox: no such file or directory\n", "hutch_error_print says it once too");
  free(printed);
  return tap_done();
}
