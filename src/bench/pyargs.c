/* SPDX-License-Identifier: Apache-2.0 */
/* The scoring driver's side of the wire (reward.c): its args as Python
 * marshal data, the numbers of the task rows as Python's json.loads reads
 * them, and its one-line result read back strictly. */
#include "config.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "error.h"
#include "util.h"

/* Python's json.loads refuses an integer of more digits (int_max_str_digits,
 * Python 3.11's default), as LLM-in-Sandbox would on reading the row. */
#define INT_DIGITS_MAX 4300

struct pybuf {
  char *p;
  size_t len, cap;
};

static void put(struct pybuf *b, const void *data, size_t n) {
  if (b->len + n > b->cap) {
    b->cap = (b->len + n) * 2 + 64;
    b->p = xrealloc(b->p, b->cap);
  }
  memcpy(b->p + b->len, data, n);
  b->len += n;
}

static void put_byte(struct pybuf *b, char c) {
  put(b, &c, 1);
}

/* marshal's numbers are little-endian whatever the host's order. */
static void put_le(struct pybuf *b, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; i++)
    put_byte(b, (char)(v >> (8 * i)));
}

static void put_i32(struct pybuf *b, int32_t v) {
  put_le(b, (uint32_t)v, 4);
}

/* 'l': a sign and magnitude in 15-bit digits, least significant first
 * (PyLong_MARSHAL_SHIFT); 'i' when it fits in 32 bits. */
static void put_int_text(struct pybuf *b, const char *t) {
  bool neg = *t == '-';
  t += neg;
  size_t nd = strlen(t);
  if (nd <= 9) {
    put_byte(b, 'i');
    put_i32(b, (int32_t)(neg ? -strtol(t, NULL, 10) : strtol(t, NULL, 10)));
    return;
  }
  /* log2(10) / 15 < 1/4 digit of 15 bits per decimal digit. */
  _cleanup_free_ uint16_t *d = xcalloc(nd / 4 + 2, sizeof(*d));
  size_t n = 0;
  for (; *t; t++) {
    uint32_t carry = (uint32_t)(*t - '0');
    for (size_t i = 0; i < n; i++) {
      uint32_t x = d[i] * 10u + carry;
      d[i] = x & 0x7fff;
      carry = x >> 15;
    }
    if (carry)
      d[n++] = (uint16_t)carry;
  }
  put_byte(b, 'l');
  put_i32(b, neg ? -(int32_t)n : (int32_t)n);
  for (size_t i = 0; i < n; i++)
    put_le(b, d[i], 2);
}

static void put_float(struct pybuf *b, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof(bits));
  put_byte(b, 'g');
  put_le(b, bits, 8);
}

static bool is_int_text(const char *t) {
  return t && *t && strpbrk(t, ".eE") == NULL;
}

static void put_number(struct pybuf *b, const cJSON *v) {
  const char *t = v->valuestring; /* its text in the row (bench_json_keep_numbers) */
  if (is_int_text(t))
    put_int_text(b, t);
  else if (t)
    put_float(b, strtod(t, NULL));
  else if (v->valuedouble == trunc(v->valuedouble) && fabs(v->valuedouble) < 0x1p62) {
    char text[32];
    snprintf(text, sizeof(text), "%lld", (long long)v->valuedouble);
    put_int_text(b, text);
  } else
    put_float(b, v->valuedouble);
}

/* 'u': UTF-8 by its length, so that no content needs escaping. */
static int put_str(struct pybuf *b, const char *s) {
  size_t n = strlen(s);
  if (n > INT32_MAX)
    return -1;
  put_byte(b, 'u');
  put_i32(b, (int32_t)n);
  put(b, s, n);
  return 0;
}

static int put_value(struct pybuf *b, const cJSON *v) {
  const cJSON *c;
  if (cJSON_IsNull(v))
    put_byte(b, 'N');
  else if (cJSON_IsTrue(v))
    put_byte(b, 'T');
  else if (cJSON_IsFalse(v))
    put_byte(b, 'F');
  else if (cJSON_IsNumber(v))
    put_number(b, v);
  else if (cJSON_IsString(v))
    return put_str(b, v->valuestring);
  else if (cJSON_IsArray(v)) {
    put_byte(b, '[');
    put_i32(b, cJSON_GetArraySize(v));
    cJSON_ArrayForEach(c, v) if (put_value(b, c) < 0) return -1;
  } else if (cJSON_IsObject(v)) {
    /* Keys in order, a repeated one last wins: json.loads's dict. */
    put_byte(b, '{');
    cJSON_ArrayForEach(c, v) if (put_str(b, c->string) < 0 || put_value(b, c) < 0) return -1;
    put_byte(b, '0');
  } else
    return -1;
  return 0;
}

char *bench_py_marshal(const cJSON *v, size_t *len) {
  struct pybuf b = {0};
  if (put_value(&b, v) < 0) {
    free(b.p);
    return NULL;
  }
  *len = b.len;
  return b.p;
}

/* The number tokens of a JSON text, in order: strings skipped, a number
 * anything else that begins with '-' or a digit (the text is JSON cJSON
 * parsed; keys are strings, and true, false and null hold no digit). */
static const char *next_number(const char *p, const char *end, size_t *n) {
  while (p < end) {
    if (*p == '"') {
      for (p++; p < end && *p != '"'; p++)
        if (*p == '\\')
          p++;
      p++;
    } else if (*p == '-' || (*p >= '0' && *p <= '9')) {
      const char *s = p;
      while (p < end && strchr("+-.0123456789eE", *p) && *p)
        p++;
      *n = (size_t)(p - s);
      return s;
    } else
      p++;
  }
  return NULL;
}

static int keep(cJSON *v, const char **p, const char *end, hutch_error_t *err) {
  if (cJSON_IsNumber(v)) {
    size_t n;
    const char *t = next_number(*p, end, &n);
    if (t == NULL)
      return 0;
    *p = t + n;
    free(v->valuestring);
    v->valuestring = xstrndup(t, n);
    if (is_int_text(v->valuestring) && n - (*t == '-') > INT_DIGITS_MAX)
      return hutch_error_set(err, 0, "an integer of more than %d digits (Python's json.loads refuses it)",
                             INT_DIGITS_MAX);
    return 0;
  }
  cJSON *c;
  cJSON_ArrayForEach(c, v) if (keep(c, p, end, err) < 0) return -1;
  return 0;
}

/* A NUL in a string of the text (\u0000, or the byte itself): cJSON's
 * string ends there, a C string, where json.loads keeps the NUL and what
 * follows it (or refuses the raw byte). */
static bool has_nul(const char *p, const char *end) {
  bool in = false;
  for (; p < end; p++) {
    if (*p == '"')
      in = !in;
    else if (in && *p == '\0')
      return true;
    else if (in && *p == '\\') {
      if (end - p >= 6 && memcmp(p + 1, "u0000", 5) == 0)
        return true;
      p++; /* the escaped character */
    }
  }
  return false;
}

int bench_json_keep_numbers(cJSON *v, const char *text, size_t len, hutch_error_t *err) {
  if (has_nul(text, text + len))
    return hutch_error_set(err, 0, "a string holds a NUL (\\u0000), which hutch would cut short there");
  const char *p = text;
  return keep(v, &p, text + len, err);
}

struct member {
  cJSON *item;
  size_t index;
};

static int by_key(const void *a, const void *b) {
  const struct member *x = a, *y = b;
  int c = strcmp(x->item->string, y->item->string);
  return c ? c : x->index < y->index ? -1 : x->index > y->index;
}

/* An object's repeated keys as Python's dict keeps them: the last value,
 * in the place of the first.  Sorted by key, in O(n log n): a task set's
 * object may have many members. */
static void last_wins(cJSON *obj) {
  size_t n = 0;
  cJSON *c;
  cJSON_ArrayForEach(c, obj) n++;
  if (n < 2)
    return;
  _cleanup_free_ struct member *m = xcalloc(n, sizeof(*m));
  n = 0;
  cJSON_ArrayForEach(c, obj) m[n] = (struct member){c, n}, n++;
  qsort(m, n, sizeof(*m), by_key);
  for (size_t i = 0, j; i < n; i = j) {
    for (j = i + 1; j < n && strcmp(m[i].item->string, m[j].item->string) == 0; j++)
      ;
    if (j - i < 2)
      continue;
    /* m[i] is the first, m[j - 1] the last; the ones between go. */
    for (size_t k = i + 1; k + 1 < j; k++)
      cJSON_Delete(cJSON_DetachItemViaPointer(obj, m[k].item));
    cJSON_ReplaceItemViaPointer(obj, m[i].item, cJSON_DetachItemViaPointer(obj, m[j - 1].item));
  }
}

void bench_json_last_wins(cJSON *v) {
  if (cJSON_IsObject(v))
    last_wins(v);
  cJSON *c;
  cJSON_ArrayForEach(c, v) bench_json_last_wins(c);
}

/* \\, \n, \s (a space) and \0 (U+FFFD: the C side's strings end at a NUL,
 * as the answer's NUL became U+FFFD); anything else after a backslash is
 * not the driver's. */
static char *unescape(const char *s, size_t n) {
  char *out = xmalloc(n + n / 2 + 1), *o = out; /* "\0", 2 bytes, grows most: to U+FFFD's 3 */
  for (const char *end = s + n; s < end; s++) {
    if (*s != '\\') {
      *o++ = *s;
      continue;
    }
    switch (++s < end ? *s : '\0') {
    case '\\':
      *o++ = '\\';
      break;
    case 'n':
      *o++ = '\n';
      break;
    case 's':
      *o++ = ' ';
      break;
    case '0':
      memcpy(o, "\xef\xbf\xbd", 3);
      o += 3;
      break;
    default:
      free(out);
      return NULL;
    }
  }
  *o = '\0';
  return out;
}

/* A score: Python's repr of a finite float, nothing else. */
bool bench_score_repr(const char *t, double *v) {
  if (strcmp(t, "True") == 0 || strcmp(t, "False") == 0) {
    *v = t[0] == 'T';
    return true;
  }
  if (!*t || strlen(t) > 400 || strspn(t, "+-.0123456789e") != strlen(t))
    return false;
  char *end;
  *v = strtod(t, &end);
  return *end == '\0' && isfinite(*v);
}

const char *bench_py_result_head(const char *line, int64_t *cpu_us, bool *last) {
  if (strncmp(line, "cpu=", 4) != 0)
    return NULL;
  const char *p = line + 4;
  int64_t us = 0;
  size_t digits = 0;
  /* Digits only (strtoull would take a sign or spaces), at most 18: no
   * overflow. */
  for (; *p >= '0' && *p <= '9'; p++, digits++) {
    if (digits == 18)
      return NULL;
    us = us * 10 + (*p - '0');
  }
  if (digits == 0)
    return NULL;
  *last = strncmp(p, ",last", 5) == 0;
  if (*last)
    p += 5;
  if (*p != ' ')
    return NULL;
  *cpu_us = us;
  return p + 1;
}

cJSON *bench_py_result(const char *line) {
  const char *sp = strchr(line, ' ');
  if (sp == NULL)
    return NULL;
  size_t tag = (size_t)(sp - line);
  const char *rest = sp + 1;
  cJSON *r = cJSON_CreateObject();
  double score;
  if (tag == 5 && strncmp(line, "score", 5) == 0 && bench_score_repr(rest, &score)) {
    cJSON_AddNumberToObject(r, "score", score);
    cJSON_AddStringToObject(r, "repr", rest);
    return r;
  }
  if (tag == 6 && strncmp(line, "prompt", 6) == 0) {
    _cleanup_free_ char *text = unescape(rest, strlen(rest));
    if (text && cJSON_AddStringToObject(r, "prompt", text))
      return r;
  } else if (tag == 5 && strncmp(line, "error", 5) == 0 && (sp = strchr(rest, ' ')) != NULL) {
    _cleanup_free_ char *kind = unescape(rest, (size_t)(sp - rest));
    _cleanup_free_ char *text = unescape(sp + 1, strlen(sp + 1));
    if (kind && text && cJSON_AddStringToObject(r, "error", text) && cJSON_AddStringToObject(r, "kind", kind))
      return r;
  }
  cJSON_Delete(r);
  return NULL;
}
