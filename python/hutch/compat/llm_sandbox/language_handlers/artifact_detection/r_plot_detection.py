# SPDX-License-Identifier: Apache-2.0
"""Sends R's graphics (base graphics, and ggplot2 figures printed) to PNG
files in /tmp/sandbox_plots, a page a file, named after the run's start so
that they sort after those of earlier runs."""

R_PLOT_DETECTION_CODE = r"""
local({
  out <- "/tmp/sandbox_plots"
  dir.create(out, showWarnings = FALSE, recursive = TRUE)
  run <- format(Sys.time(), "%Y%m%d%H%M%OS6")
  run <- gsub("[^0-9]", "", run)
  options(device = function(...) {
    grDevices::png(filename = file.path(out, paste0(run, "_%03d.png")), width = 800, height = 600)
  })
})
.hutch_close_devices <- function() invisible(grDevices::graphics.off())
reg.finalizer(globalenv(), function(e) .hutch_close_devices(), onexit = TRUE)
"""
