/* SPDX-License-Identifier: Apache-2.0
 *
 * report.html's templates (report/ in hutch's data directory): a small
 * subset of Mustache, rendered from a JSON view.  Every value goes into the
 * page escaped for HTML text and quoted attributes: there is no tag that
 * inserts a value as markup, so nothing a model, a sandbox or a task wrote
 * can become an element, an attribute or a script.  Pure: no I/O. */
#ifndef HUTCH_BENCH_TEMPLATE_H
#define HUTCH_BENCH_TEMPLATE_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "hutch.h"

/* The tags:
 *   {{name}} {{a.b}} {{.}}   a string or a number, escaped (& < > " ');
 *                            null, false or absent: nothing
 *   {{#name}}...{{/name}}    an array: once per element, which becomes the
 *                            context; an object: once, as the context;
 *                            true, a non-empty string or a non-zero number:
 *                            once; anything else: not at all
 *   {{^name}}...{{/name}}    once where {{#name}} would render nothing
 *   {{>file}}                the template partials.file, in this context
 *   {{! comment }}
 * A name is looked up from the innermost context outwards.  A malformed
 * template (an unclosed tag or section, an unknown partial, sections or
 * partials nested past 32) is an error naming the template and the offset,
 * as is an output past max bytes (EFBIG).  Returns the page (*len bytes),
 * or NULL with err. */
char *tmpl_render(const char *name, const char *tmpl, const cJSON *view, const cJSON *partials, size_t max, size_t *len,
                  hutch_error_t *err);
/* text escaped for HTML text and quoted attribute values, appended. */
void tmpl_escape(char **out, size_t *len, size_t *cap, const char *text, size_t n);

#endif
