/* SPDX-License-Identifier: Apache-2.0 */
/* The policy file (hutch-policy(5)) and a --net-policy file's [network]. */
#include "config.h"

#include <stdio.h>

#include "fuzz.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > POLICY_MAX_BYTES)
    return 0;
  char *text = fuzz_cstring(data, size);
  hutch_error_t err = NULL;
  struct policy_settings s;
  if (policy_parse(text, "fuzz.policy", &s, &err) == 0) {
    /* What the proxy asks of a parsed policy. */
    struct net_decision d;
    net_policy_decide_host(&s.network, "example.com", 443, &d);
    net_policy_decide_host(&s.network, "a.b.pypi.org", 80, &d);
    net_policy_decide_host(&s.network, "127.0.0.1", 22, &d);
    net_policy_find_resolve(&s.network, "example.com");
    net_policy_tls_required(&s.network, 443);
    FILE *null = fopen("/dev/null", "w");
    if (null) {
      net_policy_describe(&s.network, null);
      fclose(null);
    }
    policy_settings_clear(&s);
  }
  hutch_error_free(&err);
  struct net_policy np;
  if (policy_parse_network(text, "fuzz.net-policy", &np, &err) == 0)
    net_policy_clear(&np);
  hutch_error_free(&err);
  free(text);
  return 0;
}
