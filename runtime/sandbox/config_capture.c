/* SPDX-License-Identifier: Apache-2.0 */
/* The creation record of a long-lived sandbox, taken at its start
 * (config_capture.h).  Nothing is read for a configuration whose paths
 * are absolute and that names no --net-policy file. */
#include "config.h"

#include "config_capture.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "policy.h"
#include "util.h"

int config_capture_fingerprint(const struct hutch_sandbox_config *cfg, char out[CONFIG_FINGERPRINT_LEN],
                               hutch_error_t *err) {
  _cleanup_free_ char *net = NULL;
  size_t len = 0;
  if (cfg->net == HUTCH_NET_PROXY && cfg->net_policy &&
      (net = read_file_at(AT_FDCWD, cfg->net_policy, POLICY_MAX_BYTES, &len)) == NULL)
    return hutch_error_sys(err, "--net-policy %s: read", cfg->net_policy);
  config_record_fingerprint(cfg->policy, net, len, out);
  return 0;
}

int config_capture(const struct hutch_sandbox_config *cfg, const struct hutch_sandbox_extras *x, cJSON **out,
                   hutch_error_t *err) {
  char fp[CONFIG_FINGERPRINT_LEN];
  if (config_capture_fingerprint(cfg, fp, err) < 0)
    return -1;
  _cleanup_free_ char *cwd = NULL;
  if (config_record_needs_cwd(cfg) && (cwd = getcwd(NULL, 0)) == NULL)
    return hutch_error_sys(err, "the working directory, for the sandbox's relative paths");
  return config_record_encode(cfg, x, fp, cwd, out, err);
}
