/* SPDX-License-Identifier: Apache-2.0 */
#ifndef HUTCH_CDI_LDCONFIG_H
#define HUTCH_CDI_LDCONFIG_H

#include "hutch.h"

/* A live sandbox just made with a spec's libraries (the ld.so
 * configuration is there): the image's ldconfig, run in it as an ordinary
 * sandboxed command (recorded in its audit log), builds its ld.so cache
 * and the libraries' soname links, which a spec's hook would have made on
 * the host.  An image without ldconfig is left as it is; a failure is a
 * warning (LD_LIBRARY_PATH still finds the libraries). */
void cdi_update_ld_cache(struct hutch_sandbox *sb);

#endif
