/* SPDX-License-Identifier: Apache-2.0 */
/* What state.json holds of a long-lived sandbox beyond its start: its name
 * and labels, the sandbox it was forked from, its resets so far, the
 * record of its configuration, its devices, its published ports, its time
 * limit and the keeper that enforces it, and where its init holds the fds
 * it keeps for hutch.  A state written by an older hutch has none of it. */
#ifndef HUTCH_STATE_LIVE_H
#define HUTCH_STATE_LIVE_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "ttl_plan.h"
#include "sync.h"

struct sandbox_live {
   char *name;          /* NULL: none */
   char **labels;       /* "KEY=VALUE", NULL-terminated; NULL: none */
   uint64_t generation; /* resets so far (sandbox_reset.c) */
   cJSON *config;       /* "config": the creation record (config_record.h), owned; NULL: none */
   /* --device, as asked; NULL-terminated; NULL: none */
   char **devices;
   cJSON *ports;                /* "ports": the published ports and their relay (port_relay.h), owned; NULL: none */
   struct ttl_record ttl;       /* its time limit (ttl_plan.h) */
   struct helper_record keeper; /* the ttl's keeper (keeper.c) */
   /* The numbers of the fds init holds (init.h), which hutch takes from a
    * frozen init with pidfd_getfd; -1: none ("init_fds"). */
   struct sync_held_fds held;
   char *forked_from; /* "forked_from": the id of the sandbox it was forked from; NULL: none */
 };

 /* Adds the members of l to the state object o. */
 void state_live_write(cJSON *o, const struct sandbox_live *l);
 /* Reads them from o; what does not pass the checks of labels.h is left
  * out (the state directory is hutch's own, but a bad record is not
  * trusted to name or match anything). */
 void state_live_read(const cJSON *o, struct sandbox_live *l);
 void state_live_clear(struct sandbox_live *l);

#endif
