/* SPDX-License-Identifier: Apache-2.0
 *
 * JSON as Python's json.dump(v, f, indent=2, ensure_ascii=False) writes it,
 * the settings of LLM-in-Sandbox's results.json and trajectory.json (pure).
 * Python keeps 1 and 1.0 apart where cJSON holds one double: a number that
 * has a valuestring prints from it (the text it was parsed from, kept by
 * bench_json_keep_numbers, or a float made by bench_pyjson_float), else as
 * an int when it is integral and exact, else as a float's repr. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "util.h"

void bench_py_float_repr(char buf[40], double v) {
  /* json.dumps: float.__repr__, with Python's names for the others. */
  if (isnan(v)) {
    strcpy(buf, "NaN");
    return;
  }
  if (isinf(v)) {
    strcpy(buf, v > 0 ? "Infinity" : "-Infinity");
    return;
  }
  bench_fmt_double(buf, v);
  if (strpbrk(buf, ".e") == NULL)
    strcat(buf, ".0");
}

cJSON *bench_pyjson_float(double v) {
  char buf[40];
  bench_py_float_repr(buf, v);
  cJSON *n = cJSON_CreateNumber(v);
  n->valuestring = xstrdup(buf);
  return n;
}

static bool int_text(const char *t) {
  const char *p = t + (*t == '-');
  if (*p == '\0')
    return false;
  for (; *p; p++)
    if (*p < '0' || *p > '9')
      return false;
  return true;
}

struct out {
  char *buf;
  size_t len, cap;
};

static void put(struct out *o, const char *s, size_t n) {
  if (o->len + n + 1 > o->cap) {
    o->cap = (o->len + n + 1) * 2;
    o->buf = xrealloc(o->buf, o->cap);
  }
  memcpy(o->buf + o->len, s, n);
  o->len += n;
  o->buf[o->len] = '\0';
}

static void puts_(struct out *o, const char *s) {
  put(o, s, strlen(s));
}

static void number(struct out *o, const cJSON *v) {
  char buf[40];
  const char *t = v->valuestring;
  if (t && int_text(t)) {
    /* As json.loads reads it: an int, -0 being 0. */
    const char *d = t + (*t == '-');
    while (d[0] == '0' && d[1])
      d++;
    if (*t == '-' && strcmp(d, "0") != 0)
      puts_(o, "-");
    puts_(o, d);
    return;
  }
  if (t) {
    bench_py_float_repr(buf, strtod(t, NULL));
  } else if (v->valuedouble == trunc(v->valuedouble) && fabs(v->valuedouble) <= 0x1p53) {
    snprintf(buf, sizeof(buf), "%lld", (long long)v->valuedouble);
  } else {
    bench_py_float_repr(buf, v->valuedouble);
  }
  puts_(o, buf);
}

static void string(struct out *o, const char *s) {
  puts_(o, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    char esc[8];
    switch (*p) {
    case '"':
      puts_(o, "\\\"");
      break;
    case '\\':
      puts_(o, "\\\\");
      break;
    case '\n':
      puts_(o, "\\n");
      break;
    case '\r':
      puts_(o, "\\r");
      break;
    case '\t':
      puts_(o, "\\t");
      break;
    case '\b':
      puts_(o, "\\b");
      break;
    case '\f':
      puts_(o, "\\f");
      break;
    default:
      if (*p < 0x20) {
        snprintf(esc, sizeof(esc), "\\u%04x", *p);
        puts_(o, esc);
      } else {
        put(o, (const char *)p, 1);
      }
    }
  }
  puts_(o, "\"");
}

static void indent(struct out *o, int depth) {
  puts_(o, "\n");
  for (int i = 0; i < depth; i++)
    puts_(o, "  ");
}

static void value(struct out *o, const cJSON *v, int depth) {
  if (cJSON_IsNull(v) || v == NULL)
    puts_(o, "null");
  else if (cJSON_IsTrue(v))
    puts_(o, "true");
  else if (cJSON_IsFalse(v))
    puts_(o, "false");
  else if (cJSON_IsNumber(v))
    number(o, v);
  else if (cJSON_IsString(v))
    string(o, v->valuestring);
  else if (cJSON_IsArray(v) || cJSON_IsObject(v)) {
    bool obj = cJSON_IsObject(v);
    if (v->child == NULL) {
      puts_(o, obj ? "{}" : "[]");
      return;
    }
    puts_(o, obj ? "{" : "[");
    for (const cJSON *c = v->child; c; c = c->next) {
      indent(o, depth + 1);
      if (obj) {
        string(o, c->string ? c->string : "");
        puts_(o, ": ");
      }
      value(o, c, depth + 1);
      if (c->next)
        puts_(o, ",");
    }
    indent(o, depth);
    puts_(o, obj ? "}" : "]");
  } else {
    puts_(o, "null"); /* raw or invalid items: none is made here */
  }
}

char *bench_pyjson(const cJSON *v) {
  struct out o = {0};
  puts_(&o, "");
  value(&o, v, 0);
  return o.buf;
}
