/* SPDX-License-Identifier: Apache-2.0 */
/* apt's source lists, one-line ("deb [opts] URI SUITE COMPONENT...") and
 * deb822 ("Types:/URIs:/Suites:/Components:" stanzas).  Pure: text in.
 * `hutch rootfs build` reads them to know which archive hosts a build may
 * reach, and the host's to find the mirror for a Debian bootstrap. */
#ifndef HUTCH_APT_SOURCES_H
#define HUTCH_APT_SOURCES_H

#include <stdbool.h>
#include <stddef.h>

struct apt_source {
  char *uri;     /* one per entry: a deb822 stanza with several URIs gives several entries */
  char **suites; /* NULL-terminated */
  bool deb;      /* binary packages (type deb) */
};

/* Append the enabled entries of one file's text to the list (*list, *n). */
void apt_sources_parse(const char *text, bool deb822, struct apt_source **list, size_t *n);
void apt_sources_free(struct apt_source *list, size_t n);

/* "host" or "host:port" of an http(s) URI (new string), NULL for other schemes. */
char *apt_uri_host(const char *uri);

/* The URI of the first binary source that serves `suite`, or NULL. */
const char *apt_sources_mirror(const struct apt_source *list, size_t n, const char *suite);

#endif
