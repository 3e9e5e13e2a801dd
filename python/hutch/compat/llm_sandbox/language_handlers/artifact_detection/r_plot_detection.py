# SPDX-License-Identifier: Apache-2.0
"""Sends R's graphics (base graphics, lattice and ggplot2 figures printed)
to PNG files in /tmp/sandbox_plots, one a page, numbered on from earlier
runs (.counter) until the plots are cleared."""

R_PLOT_DETECTION_CODE = r"""
# R plot detection setup (hutch): every page drawn goes to a PNG file.
local({
  out <- "/tmp/sandbox_plots"
  dir.create(out, showWarnings = FALSE, recursive = TRUE)
  counter <- file.path(out, ".counter")
  .plot_counter <- suppressWarnings(as.integer(if (file.exists(counter)) readLines(counter, n = 1) else 0))
  if (length(.plot_counter) == 0 || is.na(.plot_counter)) .plot_counter <- 0L
  next_file <- function() {
    .plot_counter <<- .plot_counter + 1L
    writeLines(as.character(.plot_counter), counter)
    file.path(out, sprintf("%06d_%%03d.png", .plot_counter))
  }
  options(device = function(...) grDevices::png(filename = next_file(), width = 800, height = 600))
})
invisible(reg.finalizer(globalenv(), function(e) invisible(grDevices::graphics.off()), onexit = TRUE))
"""
