# SPDX-License-Identifier: Apache-2.0
"""Saves each matplotlib (and so seaborn) figure shown, and each plotly
figure shown, into /tmp/sandbox_plots as NNNNNN.png or NNNNNN.html; the
number goes on across runs (.counter) until the plots are cleared.
Figures still open at exit that were never shown are saved too."""

PYTHON_PLOT_DETECTION_CODE = r'''
def __hutch_plot_capture():
    import atexit
    import os

    out = "/tmp/sandbox_plots"
    os.makedirs(out, exist_ok=True)
    counter = os.path.join(out, ".counter")

    def next_path(ext):
        try:
            with open(counter) as f:
                n = int(f.read().strip() or 0)
        except (OSError, ValueError):
            n = 0
        n += 1
        with open(counter, "w") as f:
            f.write(str(n))
        return os.path.join(out, "%06d.%s" % (n, ext))

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        plt = None
    if plt is not None:
        saved = set()

        def drawn(fig):
            return any(a.lines or a.patches or a.collections or a.images or a.texts for a in fig.get_axes())

        def save_open(close):
            for num in plt.get_fignums():
                fig = plt.figure(num)
                if id(fig) not in saved and drawn(fig):
                    fig.savefig(next_path("png"), format="png", dpi=100, bbox_inches="tight")
                    saved.add(id(fig))
                if close:
                    plt.close(fig)

        def show(*args, **kwargs):
            try:
                save_open(True)
            except Exception as e:
                print("plot capture: %s" % e)

        plt.show = show
        atexit.register(lambda: save_open(False))
    try:
        import plotly.basedatatypes as pbt

        def plotly_show(self, *args, **kwargs):
            try:
                self.write_html(next_path("html"), include_plotlyjs="cdn")
            except Exception as e:
                print("plot capture: %s" % e)

        pbt.BaseFigure.show = plotly_show
    except ImportError:
        pass


__hutch_plot_capture()
del __hutch_plot_capture
'''
