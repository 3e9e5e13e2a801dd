/* SPDX-License-Identifier: Apache-2.0
 *
 * LLM-in-Sandbox's console log of one task (pure): what its agent prints
 * with rich (13.3.1) into a recorded console 100 cells wide, which its
 * benchmark runner saves as logs/ID.txt before the result block.  Rich's
 * own steps are followed one by one, so that the bytes are the same: its
 * markup escape() and parser (a backslash before '[' dropped where no tag
 * follows), its :emoji: codes, the control codes it strips, its cell
 * widths (rich_tables.c), its word wrap (Text.wrap: tabs expanded, words
 * divided by divide_line and chop_cells, whose chunks are counted from the
 * word's end, trailing white space cropped), and the panels and rules it
 * draws around them.  Where hutch departs from it, on purpose: the control
 * characters rich keeps (ESC, C1, bidirectional overrides) are escaped
 * (text_escape) before the layout, so that reading the log in a terminal
 * runs nothing of the model's. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "lis_compat.h"
#include "observation.h"
#include "util.h"

#define WIDTH 100
#define BODY (WIDTH - 4)  /* inside "│ " and " │" */
#define FUNCTION_MAX 4096 /* characters of a tool's name shown */

struct u32s {
  uint32_t *c;
  size_t n, cap;
};

static void push(struct u32s *s, uint32_t c) {
  if (s->n == s->cap)
    s->c = xrealloc(s->c, (s->cap = s->cap * 2 + 64) * sizeof(uint32_t));
  s->c[s->n++] = c;
}

static void push_n(struct u32s *s, const uint32_t *c, size_t n) {
  for (size_t i = 0; i < n; i++)
    push(s, c[i]);
}

static void push_ascii(struct u32s *s, const char *a) {
  for (; *a; a++)
    push(s, (unsigned char)*a);
}

/* The first max characters of text and one more, if it has them (at most
 * 4 bytes a character: a text of megabytes is never decoded whole). */
static struct u32s decode_prefix(const char *text, size_t max) {
  size_t len = strnlen(text, max < SIZE_MAX / 4 - 1 ? (max + 1) * 4 : SIZE_MAX);
  _cleanup_free_ char *clean = text_utf8_sanitize(text, len);
  struct u32s s = {0};
  const unsigned char *p = (const unsigned char *)clean;
  size_t left = strlen(clean);
  while (left > 0) {
    uint32_t cp;
    size_t n = utf8_decode(p, left, &cp);
    if (n == 0)
      cp = 0xfffd, n = 1;
    push(&s, cp);
    p += n, left -= n;
  }
  if (s.n > max + 1)
    s.n = max + 1;
  return s;
}

static struct u32s decode(const char *text) {
  return decode_prefix(text, SIZE_MAX - 1);
}

struct out {
  char *buf;
  size_t len, cap;
};

static void out_bytes(struct out *o, const char *b, size_t n) {
  if (o->len + n + 1 > o->cap)
    o->buf = xrealloc(o->buf, o->cap = (o->len + n + 1) * 2 + 256);
  memcpy(o->buf + o->len, b, n);
  o->len += n;
  o->buf[o->len] = '\0';
}

static void out_str(struct out *o, const char *s) {
  out_bytes(o, s, strlen(s));
}

static void out_cp(struct out *o, uint32_t c) {
  char b[4];
  size_t n;
  if (c < 0x80)
    b[0] = (char)c, n = 1;
  else if (c < 0x800)
    b[0] = (char)(0xc0 | c >> 6), b[1] = (char)(0x80 | (c & 0x3f)), n = 2;
  else if (c < 0x10000)
    b[0] = (char)(0xe0 | c >> 12), b[1] = (char)(0x80 | ((c >> 6) & 0x3f)), b[2] = (char)(0x80 | (c & 0x3f)), n = 3;
  else
    b[0] = (char)(0xf0 | c >> 18), b[1] = (char)(0x80 | ((c >> 12) & 0x3f)), b[2] = (char)(0x80 | ((c >> 6) & 0x3f)),
    b[3] = (char)(0x80 | (c & 0x3f)), n = 4;
  out_bytes(o, b, n);
}

static void out_cps(struct out *o, const uint32_t *c, size_t n) {
  for (size_t i = 0; i < n; i++)
    out_cp(o, c[i]);
}

static char *encode(const uint32_t *c, size_t n) {
  struct out o = {0};
  out_str(&o, "");
  out_cps(&o, c, n);
  return o.buf;
}

/* rich's cells._get_codepoint_cell_size: its own binary search. */
int bench_lislog_cell(uint32_t cp) {
  size_t lo = 0, hi = lislog_n_widths - 1, i = (lo + hi) / 2;
  for (;;) {
    const struct lislog_width *w = &lislog_widths[i];
    if (cp < w->first) {
      if (i == 0)
        break;
      hi = i - 1;
    } else if (cp > w->last) {
      lo = i + 1;
    } else {
      return w->width;
    }
    if (hi < lo)
      break;
    i = (lo + hi) / 2;
  }
  return 1;
}

static size_t cells(const uint32_t *c, size_t n) {
  size_t w = 0;
  for (size_t i = 0; i < n; i++)
    w += (size_t)bench_lislog_cell(c[i]);
  return w;
}

/* Python's str.isspace(), which its re's \s and rstrip() go by. */
static bool py_space(uint32_t c) {
  return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

/* ---- markup ---- */

/* rich's tag pattern (\\*)\[[a-z#/@][^[]*?] matched at i: the end of the
 * match (after ']'), with *q at its '['; 0 when none starts at i. */
static size_t tag_at(const struct u32s *s, size_t i, size_t *q) {
  size_t k = i;
  while (k < s->n && s->c[k] == '\\')
    k++;
  if (k + 1 >= s->n || s->c[k] != '[')
    return 0;
  uint32_t f = s->c[k + 1];
  if (!((f >= 'a' && f <= 'z') || f == '#' || f == '/' || f == '@'))
    return 0;
  for (size_t j = k + 2; j < s->n; j++) {
    if (s->c[j] == ']') {
      *q = k;
      return j + 1;
    }
    if (s->c[j] == '[')
      return 0;
  }
  return 0;
}

/* The next match at or after from (re.finditer's scan): its start, or n. */
static size_t next_tag(const struct u32s *s, size_t from, size_t *q, size_t *end) {
  for (size_t i = from; i < s->n; i++) {
    if (s->c[i] != '\\' && s->c[i] != '[')
      continue;
    if ((*end = tag_at(s, i, q)) != 0)
      return i;
    /* No match starts later in the same run of backslashes either. */
    while (i + 1 < s->n && s->c[i] == '\\' && s->c[i + 1] == '\\')
      i++;
  }
  return s->n;
}

/* rich.markup.escape: each tag-like text gets its backslashes doubled and
 * one more. */
static struct u32s markup_escape(const struct u32s *s) {
  struct u32s r = {0};
  size_t pos = 0, q, end;
  for (size_t m; (m = next_tag(s, pos, &q, &end)) < s->n; pos = end) {
    push_n(&r, s->c + pos, m - pos);
    push_n(&r, s->c + m, q - m);
    push_n(&r, s->c + m, q - m);
    push(&r, '\\');
    push_n(&r, s->c + q, end - q);
  }
  push_n(&r, s->c + pos, s->n - pos);
  return r;
}

static int emoji_cmp(const void *key, const void *e) {
  return strcmp(key, ((const struct lislog_emoji *)e)->name);
}

static bool at(const struct u32s *s, size_t i, const char *a) {
  for (; *a; a++, i++)
    if (i >= s->n || s->c[i] != (unsigned char)*a)
      return false;
  return true;
}

/* rich's _emoji_replace: (:(\S*?)(?:-(emoji|text))?:) over the chunk, each
 * match that names an emoji (lower-cased) replaced by it. */
static void emoji_replace(const struct u32s *s, struct u32s *r) {
  for (size_t i = 0; i < s->n;) {
    size_t end = 0, name_end = i + 1;
    uint32_t variant = 0;
    if (s->c[i] == ':') {
      for (; name_end <= s->n; name_end++) {
        if (at(s, name_end, "-emoji:")) {
          end = name_end + 7, variant = 0xfe0f;
          break;
        }
        if (at(s, name_end, "-text:")) {
          end = name_end + 6, variant = 0xfe0e;
          break;
        }
        if (name_end < s->n && s->c[name_end] == ':') {
          end = name_end + 1;
          break;
        }
        if (name_end >= s->n || py_space(s->c[name_end]))
          break;
      }
    }
    if (end == 0) {
      push(r, s->c[i++]);
      continue;
    }
    _cleanup_free_ char *name = encode(s->c + i + 1, name_end - i - 1);
    for (char *p = name; *p; p++)
      if (*p >= 'A' && *p <= 'Z')
        *p = (char)(*p - 'A' + 'a');
    const struct lislog_emoji *e = bsearch(name, lislog_emoji, lislog_n_emoji, sizeof(*e), emoji_cmp);
    if (e) {
      struct u32s em = decode(e->text);
      push_n(r, em.c, em.n);
      free(em.c);
      if (variant)
        push(r, variant);
    } else {
      push_n(r, s->c + i, end - i);
    }
    i = end;
  }
}

/* A plain chunk of markup: "\[" as "[", then its emoji codes. */
static void plain(const uint32_t *c, size_t n, struct u32s *r) {
  struct u32s t = {0};
  for (size_t i = 0; i < n; i++) {
    if (c[i] == '\\' && i + 1 < n && c[i + 1] == '[')
      continue;
    push(&t, c[i]);
  }
  emoji_replace(&t, r);
  free(t.c);
}

/* rich.markup.render's text: tags dropped, every other chunk as plain();
 * then Text's control-code strip (BEL, BS, VT, FF, CR), and hutch's escape
 * of the controls it keeps. */
static struct u32s markup_render(const struct u32s *s) {
  struct u32s r = {0};
  size_t pos = 0, q, end;
  bool any = false;
  for (size_t i = 0; i < s->n && !any; i++)
    any = s->c[i] == '[';
  if (!any) {
    emoji_replace(s, &r);
  } else {
    for (size_t m; (m = next_tag(s, pos, &q, &end)) < s->n; pos = end) {
      plain(s->c + pos, m - pos, &r);
      size_t esc = q - m;
      if (esc / 2) {
        uint32_t *bs = xcalloc(esc / 2, sizeof(uint32_t));
        for (size_t k = 0; k < esc / 2; k++)
          bs[k] = '\\';
        plain(bs, esc / 2, &r);
        free(bs);
      }
      if (esc % 2)
        plain(s->c + q, end - q, &r);
      /* else a tag: it styles, and prints nothing */
    }
    plain(s->c + pos, s->n - pos, &r);
  }
  size_t k = 0;
  for (size_t i = 0; i < r.n; i++)
    if (r.c[i] != 7 && r.c[i] != 8 && r.c[i] != 11 && r.c[i] != 12 && r.c[i] != 13)
      r.c[k++] = r.c[i];
  r.n = k;
  _cleanup_free_ char *utf8 = encode(r.c, r.n);
  _cleanup_free_ char *safe = text_escape_cstr(utf8);
  free(r.c);
  return decode(safe);
}

/* ---- layout ---- */

/* rich.cells.set_cell_size, its binary search included. */
static struct u32s set_cell_size(const uint32_t *c, size_t n, size_t total) {
  struct u32s r = {0};
  if (total == 0)
    return r;
  size_t size = cells(c, n);
  if (size <= total) {
    push_n(&r, c, n);
    for (; size < total; size++)
      push(&r, ' ');
    return r;
  }
  size_t start = 0, end = n;
  for (int guard = 0; guard < 256; guard++) {
    size_t pos = (start + end) / 2;
    size_t before = cells(c, pos + 1);
    if (before == total + 1 && bench_lislog_cell(c[pos]) == 2) {
      push_n(&r, c, pos);
      push(&r, ' ');
      return r;
    }
    if (before == total) {
      push_n(&r, c, pos + 1);
      return r;
    }
    if (before > total)
      end = pos;
    else
      start = pos;
  }
  /* Where rich's search would not end: the longest prefix that fits. */
  size_t w = 0, i = 0;
  while (i < n && w + (size_t)bench_lislog_cell(c[i]) <= total)
    w += (size_t)bench_lislog_cell(c[i++]);
  push_n(&r, c, i);
  return r;
}

/* Text.expand_tabs of one line: positions counted in characters. */
static struct u32s expand_tabs(const uint32_t *c, size_t n) {
  struct u32s r = {0};
  size_t pos = 0;
  for (size_t i = 0; i < n; i++) {
    if (c[i] != '\t') {
      push(&r, c[i]);
      continue;
    }
    /* The tab becomes a space, then spaces up to a multiple of 8
     * characters of the line so far. */
    push(&r, ' ');
    pos = r.n;
    size_t spaces = 8 - ((pos - 1) % 8) - 1;
    for (size_t k = 0; k < spaces; k++)
      push(&r, ' ');
  }
  return r;
}

struct line {
  size_t a, b; /* [a, b) of the text */
};

/* rich._wrap.divide_line: where the line breaks. */
static size_t divide_line(const uint32_t *c, size_t n, size_t width, size_t **divs) {
  size_t nd = 0, line_pos = 0;
  *divs = NULL;
  for (size_t pos = 0; pos < n;) {
    /* words(): \s*\S+\s* matched at pos */
    size_t i = pos;
    while (i < n && py_space(c[i]))
      i++;
    if (i >= n)
      break;
    while (i < n && !py_space(c[i]))
      i++;
    size_t stripped = i;
    while (i < n && py_space(c[i]))
      i++;
    size_t start = pos, wend = i;
    pos = i;
    size_t word_len = cells(c + start, stripped - start);
    if (line_pos + word_len > width) {
      if (word_len > width) {
        /* chop_cells: chunks of at most width cells, taken from the
         * word's end (its trailing white space included), listed from
         * there; the first starts empty, as rich's [[]]. */
        size_t nchunks = 1, total = 0;
        size_t *lens = xcalloc(1, sizeof(size_t)), *widths = xcalloc(1, sizeof(size_t));
        for (size_t k = wend; k > start; k--) {
          size_t sz = (size_t)bench_lislog_cell(c[k - 1]);
          if (total + sz > width) {
            lens = xrealloc(lens, (nchunks + 1) * sizeof(size_t));
            widths = xrealloc(widths, (nchunks + 1) * sizeof(size_t));
            lens[nchunks] = 0, widths[nchunks] = 0;
            nchunks++;
            total = 0;
          }
          lens[nchunks - 1]++;
          widths[nchunks - 1] += sz;
          total += sz;
        }
        for (size_t k = 0; k < nchunks; k++) {
          if (start) {
            *divs = xrealloc(*divs, (nd + 1) * sizeof(size_t));
            (*divs)[nd++] = start;
          }
          if (k + 1 == nchunks)
            line_pos = widths[k];
          else
            start += lens[k];
        }
        free(lens);
        free(widths);
      } else if (line_pos && start) {
        *divs = xrealloc(*divs, (nd + 1) * sizeof(size_t));
        (*divs)[nd++] = start;
        line_pos = cells(c + start, wend - start);
      }
    } else {
      line_pos += cells(c + start, wend - start);
    }
  }
  return nd;
}

/* Text.wrap of rendered text at width, each line then padded to width
 * cells (Console.render_lines): "│ " LINE " │" for each. */
static void panel_body(struct out *o, const struct u32s *t) {
  size_t ls = 0;
  for (size_t i = 0; i <= t->n; i++) {
    if (i < t->n && t->c[i] != '\n')
      continue;
    const uint32_t *lc = t->c + ls;
    size_t ln = i - ls;
    ls = i + 1;
    struct u32s line = {0};
    bool tab = false;
    for (size_t k = 0; k < ln; k++)
      tab |= lc[k] == '\t';
    if (tab)
      line = expand_tabs(lc, ln);
    else
      push_n(&line, lc, ln);
    size_t *divs = NULL;
    size_t nd = divide_line(line.c, line.n, BODY, &divs);
    for (size_t k = 0; k <= nd; k++) {
      size_t a = k == 0 ? 0 : divs[k - 1], b = k == nd ? line.n : divs[k];
      if (b < a)
        b = a;
      /* rstrip_end: white space past width characters, at most the excess */
      size_t len = b - a;
      if (len > BODY) {
        size_t ws = 0;
        while (ws < len && py_space(line.c[b - 1 - ws]))
          ws++;
        size_t excess = len - BODY;
        b -= ws < excess ? ws : excess;
      }
      struct u32s fit = set_cell_size(line.c + a, b - a, BODY);
      /* truncate only crops; render_lines pads */
      out_str(o, "│ ");
      out_cps(o, fit.c, fit.n);
      out_str(o, " │\n");
      free(fit.c);
    }
    free(divs);
    free(line.c);
  }
}

static void repeat(struct out *o, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    out_str(o, s);
}

/* A Panel(escape-d text, title=[style]TITLE[/style], padding=(0, 1)) as
 * the console prints it: full width, rounded box, the title centred. */
static void panel(struct out *o, const char *title, const struct u32s *markup) {
  struct u32s t = decode(title);
  struct u32s padded = {0};
  push(&padded, ' ');
  push_n(&padded, t.c, t.n);
  push(&padded, ' ');
  /* align_text: cut to the room there is, then centred in "─". */
  struct u32s shown = {0};
  if (cells(padded.c, padded.n) > BODY)
    shown = set_cell_size(padded.c, padded.n, BODY);
  else
    push_n(&shown, padded.c, padded.n);
  size_t excess = BODY - cells(shown.c, shown.n), left = excess / 2;
  out_str(o, "╭─");
  repeat(o, "─", left);
  out_cps(o, shown.c, shown.n);
  repeat(o, "─", excess - left);
  out_str(o, "─╮\n");
  struct u32s text = markup_render(markup);
  panel_body(o, &text);
  out_str(o, "╰");
  repeat(o, "─", WIDTH - 2);
  out_str(o, "╯\n");
  free(text.c);
  free(shown.c);
  free(padded.c);
  free(t.c);
}

/* A Rule(title) across the console, the title centred. */
static void rule(struct out *o, const char *title) {
  struct u32s t = decode(title);
  size_t tw = cells(t.c, t.n);
  if (tw > WIDTH - 4) {
    struct u32s cut = set_cell_size(t.c, t.n, WIDTH - 5);
    free(t.c);
    t = cut;
    push(&t, 0x2026);
    tw = cells(t.c, t.n);
  }
  size_t side = (WIDTH - tw) / 2;
  size_t left = side >= 1 ? side - 1 : 0;
  size_t right = WIDTH - left - tw;
  if (right > side + 1)
    right = side + 1;
  struct u32s all = {0};
  for (size_t i = 0; i < left; i++)
    push(&all, 0x2500);
  push(&all, ' ');
  push_n(&all, t.c, t.n);
  push(&all, ' ');
  for (size_t i = 0; i < right; i++)
    push(&all, 0x2500);
  struct u32s fit = set_cell_size(all.c, all.n, WIDTH);
  out_cps(o, fit.c, fit.n);
  out_str(o, "\n");
  free(fit.c);
  free(all.c);
  free(t.c);
}

/* text[:max] + "..." when longer, in characters; then rich's escape(). */
static struct u32s escaped(const char *text, size_t max) {
  struct u32s s = decode_prefix(text ? text : "", max);
  if (s.n > max) {
    s.n = max;
    push_ascii(&s, "...");
  }
  struct u32s e = markup_escape(&s);
  free(s.c);
  return e;
}

static const char *str_of(const cJSON *o, const char *k) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
  return cJSON_IsString(v) ? v->valuestring : "";
}

char *bench_lislog(const char *system, const char *user, const cJSON *steps, long max_steps, bool trailing) {
  struct out o = {0};
  out_str(&o, "");
  struct u32s m = escaped(system, 2000);
  panel(&o, "SYSTEM PROMPT", &m);
  free(m.c);
  m = escaped(user, 2000);
  panel(&o, "USER PROMPT", &m);
  free(m.c);
  long n = 0;
  const cJSON *st;
  cJSON_ArrayForEach(st, steps) {
    _cleanup_free_ char *title = xasprintf("Step %ld/%ld", ++n, max_steps);
    out_str(&o, "\n");
    rule(&o, title);
    const char *reasoning = str_of(st, "reasoning_content");
    if (*reasoning) {
      m = escaped(reasoning, 2000);
      panel(&o, "🧠 REASONING CONTENT", &m);
      free(m.c);
    }
    const char *thought = str_of(st, "thought");
    if (*thought) {
      m = escaped(thought, 1000);
      panel(&o, "💭 THOUGHT", &m);
      free(m.c);
    }
    const cJSON *action = cJSON_GetObjectItemCaseSensitive(st, "action");
    struct u32s a = {0};
    push_ascii(&a, "[bold]");
    /* A name is a few words; one of megabytes is cut. */
    struct u32s fn = decode_prefix(str_of(action, "function"), FUNCTION_MAX - 1);
    push_n(&a, fn.c, fn.n);
    free(fn.c);
    push_ascii(&a, "[/bold]");
    const cJSON *params = cJSON_GetObjectItemCaseSensitive(action, "parameters");
    if (lis_truthy(params)) {
      _cleanup_free_ char *js = bench_pyjson(params);
      m = escaped(js, 300);
      push(&a, '\n');
      push_n(&a, m.c, m.n);
      free(m.c);
    }
    panel(&o, "⚡ ACTION", &a);
    free(a.c);
    m = escaped(str_of(st, "observation"), 800);
    panel(&o, "👁 OBSERVATION", &m);
    free(m.c);
  }
  if (trailing) {
    _cleanup_free_ char *title = xasprintf("Step %ld/%ld", n + 1, max_steps);
    out_str(&o, "\n");
    rule(&o, title);
  }
  return o.buf;
}
