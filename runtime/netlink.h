/* rtnetlink over libmnl. */
#ifndef HUTCH_NETLINK_H
#define HUTCH_NETLINK_H

#include "hutch.h"

/* Bring the loopback interface of the current network namespace up. */
int netlink_loopback_up(hutch_error_t *err);

#endif
