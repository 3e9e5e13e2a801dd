/* SPDX-License-Identifier: Apache-2.0 */
#include "config.h"

#include "layer_copy.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "idmap.h"
#include "layer_tree.h"
#include "util.h"

struct copy_job {
  int src, dst;
};

static int copy_job_main(void *data, hutch_error_t *err) {
  struct copy_job *j = data;
  return layer_copy_tree(j->src, j->dst, err);
}

/* Root in a user namespace: the layer's files belong to any of the mapped
 * ids, and overlayfs's whiteouts are character devices. */
int layer_copy_out(int layer_fd, const char *dest, hutch_error_t *err) {
  if (layer_fd < 0)
    return hutch_error_set(err, EINVAL, "the sandbox did not hand over its layer");
  const struct idmap_set *maps;
  if (idmap_for_caller(&maps, err) < 0)
    return -1;
  _cleanup_close_ int dst = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dst < 0)
    return hutch_error_sys(err, "open %s", dest);
  struct copy_job job = {layer_fd, dst};
  return userns_run(maps, 0, copy_job_main, &job, err);
}
