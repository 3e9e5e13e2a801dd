/* SPDX-License-Identifier: Apache-2.0 */
/* The Dockerfile subset `hutch rootfs build -f` builds (hutch-rootfs(1),
 * "DOCKERFILES").  Pure: no I/O.  The parser splits the text into
 * instructions (continuations, comments and the escape directive handled,
 * flags taken apart and checked); variables are substituted later, by the
 * builder, with df_words() and the build's state at that instruction, as
 * Docker does.  Everything outside the subset is refused with file:line. */
#ifndef HUTCH_DOCKERFILE_H
#define HUTCH_DOCKERFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

/* Bounds on hostile input. */
#define DF_MAX_TEXT (1 << 20)     /* bytes of a Dockerfile */
#define DF_MAX_LINE (64 * 1024)   /* bytes of one instruction, continuations joined */
#define DF_MAX_INSTRUCTIONS 4096  /* instructions in a file */
#define DF_MAX_WORDS 1024         /* words (or exec-form elements) of one instruction */
#define DF_MAX_EXPANDED (1 << 20) /* bytes of one instruction after substitution */
/* Bytes of ENV, ARG, LABEL, EXPOSE, WORKDIR and USER values a build keeps,
 * all stages and the copies a stage takes of another counted: substitution
 * can make each instruction 1 MiB. */
#define DF_MAX_STATE (16 << 20)

enum df_kind {
  DF_FROM,
  DF_RUN,
  DF_CMD,
  DF_ENTRYPOINT,
  DF_SHELL,
  DF_ENV,
  DF_ARG,
  DF_LABEL,
  DF_EXPOSE,
  DF_WORKDIR,
  DF_USER,
  DF_COPY,
  DF_ADD,
};

struct df_instr {
  enum df_kind kind;
  int line;       /* of its first line */
  char *text;     /* the instruction as written, continuations joined (its cache identity) */
  char *rest;     /* what follows the keyword and the flags, unsubstituted */
  bool exec_form; /* RUN/CMD/ENTRYPOINT/SHELL written as a JSON array (then argv holds it) */
  char **argv;    /* the JSON array's strings (exec form), NULL-terminated; else NULL */
  char *chown;    /* COPY/ADD --chown */
  char *from;     /* COPY --from */
  char *chmod;    /* COPY/ADD --chmod (octal) */
  char *platform; /* FROM --platform */
  char *checksum; /* ADD --checksum (sha256:HEX, of a URL's content) */
};

struct dockerfile {
  struct df_instr *instrs;
  size_t n;
  char escape; /* '\\' or '`' (the escape directive) */
};

/* origin names the file in messages ("Dockerfile:12: ..."). */
int dockerfile_parse(const char *text, const char *origin, struct dockerfile *out, hutch_error_t *err);
void dockerfile_clear(struct dockerfile *df);
const char *df_kind_name(enum df_kind kind);

/* A variable's value in a "K=V" list (last one wins); NULL when unset. */
const char *df_env_get(char *const *env, const char *name);

/* Docker's word processing of `s`: quotes ('…' literal, "…" with
 * substitution) and the escape character removed, $VAR, ${VAR},
 * ${VAR:-default} and ${VAR:+alt} substituted from env (when expand), and,
 * unless one_word, split at unquoted blanks.  Returns the words
 * (NULL-terminated) or NULL with err set ("unterminated quote", a bad
 * substitution, too long). */
char **df_words(const char *s, char escape, char *const *env, bool expand, bool one_word, hutch_error_t *err);

/* ENV and LABEL: "K=V K2=V2" or the legacy "K V"; pairs as "K=V". */
char **df_pairs(const char *s, char escape, char *const *env, hutch_error_t *err);

#endif
