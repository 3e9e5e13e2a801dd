/* SPDX-License-Identifier: Apache-2.0 */
/* The Dockerfile parser and Docker's word processing: forms, flags,
 * directives, continuations, substitution, and hostile input refused with
 * file:line. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dockerfile.h"
#include "dockerfile_copy.h"
#include "tap.h"
#include "util.h"

/* The words of s joined by '|', or "ERR: message". */
static char *words(const char *s, char *const *env, bool one_word) {
  hutch_error_t err = NULL;
  char **w = df_words(s, '\\', env, true, one_word, &err);
  if (w == NULL) {
    char *m = xasprintf("ERR: %s", err->msg);
    cleanup_errorp(&err);
    return m;
  }
  char *out = xstrdup("");
  for (char **p = w; *p; p++) {
    char *t = xasprintf("%s%s%s", out, p == w ? "" : "|", *p);
    free(out);
    out = t;
  }
  cleanup_strvp(&w);
  return out;
}

/* The error of parsing text, or "OK". */
static char *parse_error(const char *text) {
  struct dockerfile df;
  hutch_error_t err = NULL;
  if (dockerfile_parse(text, "Dockerfile", &df, &err) == 0) {
    dockerfile_clear(&df);
    return xstrdup("OK");
  }
  char *m = xstrdup(err->msg);
  cleanup_errorp(&err);
  return m;
}

static void check_words(void) {
  char *env[] = {"A=one", "B=two words", "E=", NULL};
  static const struct {
    const char *in, *want;
    bool one;
  } cases[] = {
      {"$A ${A} x$A", "one|one|xone", false},
      {"${B}", "two words|", false}, /* placeholder replaced below */
      {"\"$B\" '$B'", "two words|$B", false},
      {"${UNSET:-def} ${A:-def} ${E:-empty} ${E-set}", "def|one|empty", false},
      {"${A:+alt} ${UNSET:+alt}x", "alt|x", false},
      {"${UNSET:-${A}-nested}", "one-nested", false},
      {"a\\ b c\\$A", "a b|c$A", false},
      {"\"a \\\"q\\\" \\n\"", "a \"q\" \\n", false},
      {"$ 5$ $1", "$|5$|$1", false},
      {"  spaced   out  ", "spaced|out", false},
      {"keep  this  one", "keep  this  one", true},
      {"\"unterminated", "ERR: unterminated double quote", false},
      {"${A", "ERR: unterminated substitution \"${A\"", false},
      {"${A?x}", "ERR: unsupported substitution \"${A?x}\" (only ${VAR}, ${VAR:-word} and ${VAR:+word})", false},
      {"${1}", "ERR: bad substitution \"${1}\"", false},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const char *want = cases[i].want;
    if (i == 1)
      want = "two|words"; /* unquoted, a value with blanks is split as Docker splits it */
    _cleanup_free_ char *got = words(cases[i].in, env, cases[i].one);
    tap_is_str(got, want, "words of %s", cases[i].in);
  }
  /* ${VAR:-word} recursion is bounded. */
  _cleanup_free_ char *deep = words("${X:-${X:-${X:-${X:-${X:-${X:-${X:-${X:-${X:-${X:-deep}}}}}}}}}}", env, false);
  tap_is_str(deep, "ERR: substitutions nested too deep", "nested defaults are bounded");
  /* Substitution cannot grow without bound. */
  char *big_env[] = {NULL, NULL};
  big_env[0] = xmalloc(600000);
  memset(big_env[0], 'x', 599999);
  memcpy(big_env[0], "X=", 2);
  big_env[0][599999] = '\0';
  _cleanup_free_ char *big = words("$X$X", big_env, true);
  tap_is_str(big, "ERR: more than 1048576 bytes after substitution", "expansion is bounded");
  free(big_env[0]);
}

static void check_pairs(void) {
  char *env[] = {"V=val", NULL};
  hutch_error_t err = NULL;
  char **p = df_pairs("A=1 B=\"two words\" C=$V", '\\', env, &err);
  tap_ok(p && p[0] && p[1] && p[2] && !p[3], "three pairs");
  if (p) {
    tap_is_str(p[1], "B=two words", "quoted value");
    tap_is_str(p[2], "C=val", "substituted value");
  }
  cleanup_strvp(&p);
  p = df_pairs("LEGACY  a value  here", '\\', env, &err);
  tap_is_str(p ? p[0] : NULL, "LEGACY=a value  here", "the legacy form takes the rest as the value");
  cleanup_strvp(&p);
  p = df_pairs("A=1 junk", '\\', env, &err);
  tap_ok(p == NULL && err && strstr(err->msg, "\"junk\" is not NAME=VALUE"), "a word without = is refused");
  cleanup_errorp(&err);
}

static void check_parse(void) {
  const char *text = "# syntax=docker/dockerfile:1\n"
                     "# escape=\\\n"
                     "ARG BASE=busybox\n"
                     "FROM --platform=linux/amd64 ${BASE} AS build\n"
                     "# a comment\n"
                     "\n"
                     "RUN echo a && \\\n"
                     "# dropped inside the continuation\n"
                     "    echo b\n"
                     "run [\"/bin/echo\", \"exec form\"]\n"
                     "ENV K=V\n"
                     "COPY --chown=1:2 --from=build a b /dst/\n"
                     "CMD [\"/bin/sh\"]\n"
                     "SHELL [\"/bin/bash\", \"-c\"]\n"
                     "RUN [not json\n";
  struct dockerfile df;
  hutch_error_t err = NULL;
  int r = dockerfile_parse(text, "Dockerfile", &df, &err);
  tap_is_int(r, 0, "a Dockerfile of every form parses%s%s", err ? ": " : "", err ? err->msg : "");
  if (r < 0) {
    cleanup_errorp(&err);
    return;
  }
  tap_is_int(df.n, 9, "nine instructions");
  tap_is_int(df.instrs[0].kind, DF_ARG, "ARG before FROM");
  tap_is_str(df.instrs[1].platform, "linux/amd64", "FROM --platform is kept");
  tap_is_str(df.instrs[1].rest, "${BASE} AS build", "FROM's arguments, unsubstituted");
  tap_is_int(df.instrs[2].line, 7, "a continued instruction has its first line");
  tap_is_str(df.instrs[2].rest, "echo a &&     echo b", "continuation joined, the comment inside dropped");
  tap_ok(df.instrs[3].exec_form && strcmp(df.instrs[3].argv[1], "exec form") == 0, "lower-case run, exec form");
  tap_is_str(df.instrs[5].chown, "1:2", "COPY --chown");
  tap_is_str(df.instrs[5].from, "build", "COPY --from");
  tap_is_str(df.instrs[5].rest, "a b /dst/", "COPY's arguments");
  tap_ok(df.instrs[7].kind == DF_SHELL && df.instrs[7].exec_form, "SHELL");
  tap_ok(df.instrs[8].kind == DF_RUN && !df.instrs[8].exec_form, "not JSON: the shell form");
  dockerfile_clear(&df);

  /* ADD --checksum is kept for the builder (which checks its form). */
  r = dockerfile_parse("FROM x\nADD --checksum=sha256:ab --chmod=600 http://h/f /f\n", "Dockerfile", &df, &err);
  tap_ok(r == 0 && df.n == 2 && df.instrs[1].checksum && strcmp(df.instrs[1].checksum, "sha256:ab") == 0 &&
             strcmp(df.instrs[1].chmod, "600") == 0 && strcmp(df.instrs[1].rest, "http://h/f /f") == 0,
         "ADD --checksum and --chmod");
  if (r == 0)
    dockerfile_clear(&df);
  else
    cleanup_errorp(&err);

  /* The escape directive. */
  r = dockerfile_parse("# escape=`\nFROM x\nRUN a `\n  b\n", "Dockerfile", &df, &err);
  tap_ok(r == 0 && df.n == 2 && strcmp(df.instrs[1].rest, "a   b") == 0, "escape=` continues with a backtick");
  if (r == 0)
    dockerfile_clear(&df);
  else
    cleanup_errorp(&err);

  static const struct {
    const char *text, *want;
  } bad[] = {
      {"FROM x\nRUN --mount=type=cache,target=/c make\n", "Dockerfile:2: RUN --mount is not supported"},
      {"FROM x\n\nHEALTHCHECK CMD true\n",
       "Dockerfile:3: HEALTHCHECK is not supported: health checks are not run by hutch"},
      {"FROM x\nONBUILD RUN x\n",
       "Dockerfile:2: ONBUILD is not supported: triggers for later builds are not supported"},
      {"FROM x\nFOO bar\n", "Dockerfile:2: unknown instruction \"FOO\""},
      {"RUN x\n", "Dockerfile:1: the first instruction must be FROM (or ARG before it), not RUN"},
      {"FROM x\nCOPY --link a b\n", "Dockerfile:2: COPY --link is not supported"},
      {"FROM x\nADD --from=s a b\n", "Dockerfile:2: ADD --from is not supported"},
      {"FROM x\nCOPY --checksum=sha256:0 a b\n", "Dockerfile:2: COPY --checksum is not supported"},
      {"FROM x\nADD --checksum=a --checksum=b http://h/a b\n", "Dockerfile:2: ADD --checksum given twice"},
      {"FROM x\nCOPY --chown a b\n", "Dockerfile:2: COPY --chown needs a value (--chown=VALUE)"},
      {"FROM x\nCOPY onlyone\n", "Dockerfile:2: COPY takes SOURCE... DEST"},
      {"FROM a b\n", "Dockerfile:1: FROM takes IMAGE [AS NAME]"},
      {"FROM x\nSHELL /bin/bash -c\n", "Dockerfile:2: SHELL takes a JSON array: SHELL [\"/bin/sh\", \"-c\"]"},
      {"FROM x\nRUN\n", "Dockerfile:2: RUN needs arguments"},
      {"FROM x\nRUN echo \"a\nRUN b\n", "OK"}, /* quotes are the shell's business in RUN */
      {"FROM x\nENV A=\"b\n", "OK"},           /* ENV is read by the builder (substitution needs its state) */
      {"# escape=x\nFROM x\n", "Dockerfile:1: escape takes \\ or `, not \"x\""},
      {"# just a comment\n\n", "Dockerfile: no instructions (a Dockerfile starts with FROM)"},
      {"ARG A\n", "Dockerfile: no FROM instruction"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    _cleanup_free_ char *got = parse_error(bad[i].text);
    tap_is_str(got, bad[i].want, "bad case %zu", i);
  }

  /* Hostile sizes. */
  char *huge = xmalloc(DF_MAX_TEXT + 16);
  memset(huge, '#', DF_MAX_TEXT + 15);
  huge[DF_MAX_TEXT + 15] = '\0';
  _cleanup_free_ char *e1 = parse_error(huge);
  tap_is_str(e1, "Dockerfile: larger than 1048576 bytes", "a file over 1 MiB");
  /* One instruction of 90,000 bytes by continuations. */
  char *p = huge;
  p += sprintf(p, "FROM x\nRUN a");
  for (int i = 0; i < 9000; i++)
    p += sprintf(p, "bbbbbbbb\\\n");
  sprintf(p, "c\n");
  _cleanup_free_ char *e2 = parse_error(huge);
  tap_is_str(e2, "Dockerfile:2: an instruction longer than 65536 bytes", "an instruction over 64 KiB");
  p = huge;
  p += sprintf(p, "FROM x\n");
  for (int i = 0; i < DF_MAX_INSTRUCTIONS; i++)
    p += sprintf(p, "ENV A=%d\n", i);
  _cleanup_free_ char *e3 = parse_error(huge);
  tap_is_str(e3, "Dockerfile:4097: more than 4096 instructions", "more than 4096 instructions");
  free(huge);
}

static void check_ignore(void) {
  struct df_ignore ig;
  df_ignore_parse("# comment\n\n*.log\n./build/\n**/*.tmp\n!keep.log\n/secret\r\ndocs/*.md\n", &ig);
  tap_is_int(ig.n, 6, "six patterns (comments, blanks, ./ and / cleaned)");
  static const struct {
    const char *path;
    bool want;
  } cases[] = {
      {"debug.log", true},     {"keep.log", false},      {"sub/debug.log", false}, {"build", true},
      {"build/out/x.o", true}, {"a/b/c.tmp", true},      {"x.tmp", true},          {"secret", true},
      {"secret/inner", true},  {"docs/readme.md", true}, {"docs/sub/x.md", false}, {"src/main.c", false},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    tap_is_int(df_ignored(&ig, cases[i].path), cases[i].want, ".dockerignore: %s", cases[i].path);
  df_ignore_clear(&ig);
  df_ignore_parse(NULL, &ig);
  tap_ok(!df_ignored(&ig, "anything"), "no .dockerignore: nothing ignored");
  df_ignore_clear(&ig);
}

static void check_image_path(void) {
  static const struct {
    const char *wd, *p, *want;
  } cases[] = {
      {NULL, "/../../../../home/u/", "/home/u"},
      {NULL, "/../../tmp/x/copied.txt", "/tmp/x/copied.txt"},
      {"/app", "a/../../b", "/b"},
      {"/app/sub", "../../../../x", "/x"},
      {"/app", "./x/./y/", "/app/x/y"},
      {"/", "..", "/"},
      {NULL, ".", "/"},
      {"/w/../../..", "f", "/f"},
      {"/a//b/", "c", "/a/b/c"},
      {"/", "...", "/..."},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    _cleanup_free_ char *got = df_image_path(cases[i].wd, cases[i].p);
    tap_is_str(got, cases[i].want, "image path: \"%s\" in %s", cases[i].p, cases[i].wd ? cases[i].wd : "(no WORKDIR)");
  }
}

/* A stage of more layers than an image may have is refused at parse time. */
static void check_layer_count(void) {
  static const struct {
    const char *stages; /* the layers each stage makes (RUN, COPY, ADD), comma-separated */
    bool ok;
  } cases[] = {{"126", true}, {"127", false}, {"100,100", true}, {"5,127", false}};
  static const char *const kinds[] = {"RUN true", "COPY a /a", "ADD a /a", "WORKDIR /w", "ENV A=1"};
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    _cleanup_free_ char *text = xstrdup("");
    for (const char *p = cases[c].stages; *p;) {
      char *end;
      long n = strtol(p, &end, 10);
      char *t = xasprintf("%sFROM x\n", text);
      free(text);
      text = t;
      /* WORKDIR and ENV between them do not count. */
      for (long i = 0, made = 0; made < n; i++) {
        made += i % 5 < 3;
        t = xasprintf("%s%s\n", text, kinds[i % 5]);
        free(text);
        text = t;
      }
      p = *end ? end + 1 : end;
    }
    _cleanup_free_ char *got = parse_error(text);
    if (cases[c].ok)
      tap_is_str(got, "OK", "stages of %s layers are parsed", cases[c].stages);
    else
      tap_ok(strstr(got, "at most 127 layers") != NULL, "stages of %s layers: refused (%s)", cases[c].stages, got);
  }
}

int main(void) {
  check_layer_count();
  check_image_path();
  check_ignore();
  check_words();
  check_pairs();
  check_parse();
  return tap_done();
}
