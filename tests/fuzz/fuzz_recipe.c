/* SPDX-License-Identifier: Apache-2.0 */
/* Image recipes (hutch-recipe(5)) and the scripts made from their steps. */
#include "config.h"

#include "fuzz.h"
#include "recipe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1u << 20))
    return 0;
  char *text = fuzz_cstring(data, size);
  hutch_error_t err = NULL;
  struct recipe r;
  if (recipe_parse(text, "fuzz.recipe", &r, &err) == 0) {
    bool first = true;
    for (size_t i = 0; i < r.n_steps; i++) {
      free(recipe_step_script(&r.steps[i], first));
      free(recipe_step_describe(&r.steps[i]));
      first = false;
    }
    recipe_uses_apt(&r);
    recipe_needs_network(&r);
    recipe_clear(&r);
  }
  hutch_error_free(&err);
  free(text);
  return 0;
}
