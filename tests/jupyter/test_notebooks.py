"""Each teaching notebook, run in a real JupyterLab without internet: every cell runs without an error output,
every plot is drawn, and nothing is requested from another machine. The kernel runs them in quick mode
(INVLAB_QUICK=1: a tenth of the training steps). Nothing is written to stderr either: a warning under a cell is
something every reader would see (notebook 05's Wishart check once warned on every float() of a tensor that tracked
gradients)."""
import os

import pytest

from labkit import (
    NOTEBOOKS,
    copy_notebooks,
    error_outputs,
    lab_page,
    open_notebook,
    plots_and_canvases,
    poll,
    run_all,
    screenshot_plot_outputs,
    scroll_to_first_plot,
    shut_down_kernels,
    stderr_outputs,
)

pytestmark = [pytest.mark.jupyter, pytest.mark.browser]

NAMES = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_and_draws_offline(lab, name, screenshot_path):
    url, dirs = lab
    copy_notebooks(dirs["root"], [name])
    try:
        with lab_page() as (page, outside, errors):
            open_notebook(page, url, name)
            ran = run_all(page, timeout=400)
            assert error_outputs(page) == []
            assert ran, "a cell failed without an error output"
            assert stderr_outputs(page) == []
            # every plot has a canvas, and every one in view (not in a hidden tab) is drawn
            counts = []

            def all_drawn():
                counts[:] = plots_and_canvases(page)
                plots, canvases, shown, drawn = counts
                return canvases >= plots > 0 and drawn == shown > 0

            try:
                poll(all_drawn, timeout=60, interval=0.5)
            except AssertionError:
                raise AssertionError(f"plots, canvases, in view, drawn: {counts}") from None
            scroll_to_first_plot(page)
            stem = f"jupyterlab_{name.replace('.ipynb', '')}"
            page.screenshot(path=screenshot_path(f"{stem}.png"))
            if os.environ.get("INVLAB_SCREENSHOTS"):  # every plot output, for a person to look at
                screenshot_plot_outputs(page, lambda i: screenshot_path(f"{stem}_plot{i}.png"))
            assert errors == []
            assert outside == [], f"requests left the machine: {outside[:5]}"
    finally:
        shut_down_kernels(url)
