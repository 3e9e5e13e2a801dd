/* SPDX-License-Identifier: Apache-2.0 */
/* Where hutch keeps things, and pure checks on names and paths. */
#ifndef HUTCH_PATHS_H
#define HUTCH_PATHS_H

#include <sys/types.h>
#include <stdbool.h>

/* Default locations, from the environment (each returns a new string). */
char *paths_default_store(void); /* $HUTCH_STORE, $XDG_DATA_HOME/hutch, ~/.local/share/hutch, /var/lib/hutch */
/* $HUTCH_STATE_DIR, $XDG_RUNTIME_DIR/hutch, /run/hutch, $TMPDIR/hutch-UID; *shared_tmp (may be NULL)
 * tells the last: a name in a directory others can write, see paths_state_fallback(). */
char *paths_default_state(bool *shared_tmp);
/* Where the state lives when $TMPDIR/hutch-UID is someone else's or a link:
 * $XDG_STATE_HOME/hutch/run, else ~/.local/state/hutch/run. */
char *paths_state_fallback(void);
char *paths_default_cache(void);  /* $HUTCH_CACHE_DIR, $XDG_CACHE_HOME/hutch, ~/.cache/hutch, /var/cache/hutch */
char *paths_default_policy(void); /* $HUTCH_POLICY, else hutch_data_dir()'s (or /etc's) default.policy */
char *paths_user_config(void);    /* $XDG_CONFIG_HOME/hutch, ~/.config/hutch: hutch-agent's settings */

/* Image names and sandbox ids: [A-Za-z0-9][A-Za-z0-9._:-]{0,127}, no "..". */
bool paths_valid_name(const char *name);
/* The next name of path from *at on, slashes skipped: true with the name
 * at [*start, *at); false at the end. */
bool paths_next_name(const char *path, size_t *at, size_t *start);
/* Whether real (where a mount point named `named` resolved, both
 * normalized) is dir or below it while named is not that same path: the
 * name reached dir only through a symlink. */
bool paths_led_into(const char *real, const char *named, const char *dir);

/* Normalise an absolute path that will be resolved inside the sandbox:
 * collapses "//" and "/./", refuses ".." components and relative paths.
 * Returns a new string, or NULL when the path is refused. */
char *paths_normalize_inside(const char *path);

/* What a path named when it was checked (protected.c, on the host), for
 * whoever opens it afterwards (the child, mounts.c) to compare with. */
struct file_id {
  dev_t dev;
  ino_t ino;
};

#endif
