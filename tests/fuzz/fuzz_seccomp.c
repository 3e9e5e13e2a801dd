/* SPDX-License-Identifier: Apache-2.0 */
/* The seccomp profile (OCI runtime-spec JSON): parse, compile to BPF, and
 * check the program as the cache check does. */
#include "config.h"

#include "fuzz.h"
#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > POLICY_SECCOMP_MAX_BYTES)
    return 0;
  hutch_error_t err = NULL;
  struct seccomp_profile *p = NULL;
  if (seccomp_profile_parse((const char *)data, size, "fuzz.json", &p, &err) == 0) {
    void *bpf = NULL;
    size_t len = 0;
    if (seccomp_profile_compile(p, &bpf, &len, &err) == 0) {
      if (!seccomp_program_valid(bpf, len))
        abort(); /* what hutch compiles, its own cache check must accept */
      free(bpf);
    }
    seccomp_profile_free(p);
  }
  hutch_error_free(&err);
  return 0;
}
