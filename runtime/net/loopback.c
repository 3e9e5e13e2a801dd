/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "loopback.h"

#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "util.h"

int loopback_up(hutch_error_t *err) {
  _cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return hutch_error_sys(err, "network: a socket to set lo up");
  struct ifreq req;
  memset(&req, 0, sizeof(req));
  memcpy(req.ifr_name, "lo", 3);
  if (ioctl(fd, SIOCGIFFLAGS, &req) < 0)
    return hutch_error_sys(err, "network: read the flags of lo");
  req.ifr_flags |= IFF_UP;
  if (ioctl(fd, SIOCSIFFLAGS, &req) < 0)
    return hutch_error_sys(err, "network: set lo up");
  return 0;
}
