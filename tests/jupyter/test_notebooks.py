"""Each teaching notebook, run in a real JupyterLab without internet: every cell runs without an error output
and every plot is drawn. The kernel runs them in quick mode (INVLAB_QUICK=1: a tenth of the training steps)."""
import os

import pytest

from labkit import (
    NOTEBOOKS,
    cells_done,
    copy_notebooks,
    error_outputs,
    lab_page,
    open_notebook,
    plots_and_canvases,
    poll,
    run_all,
    scroll_to_first_plot,
)

# Not in the default run yet: on a loaded 2-core machine the page of a long notebook was seen to time out
# (cells not shown within 120 s, plots not drawn in time). INVLAB_JUPYTER_NOTEBOOKS=1 runs it.
pytestmark = [pytest.mark.jupyter, pytest.mark.browser,
              pytest.mark.skipif(not os.environ.get("INVLAB_JUPYTER_NOTEBOOKS"),
                                 reason="the six notebooks in JupyterLab: set INVLAB_JUPYTER_NOTEBOOKS=1 to run them")]

NAMES = sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_and_draws_offline(lab, name, screenshot_path):
    url, dirs = lab
    copy_notebooks(dirs["root"], [name])
    with lab_page() as (page, outside, errors):
        open_notebook(page, url, name)
        run_all(page, timeout=300)
        assert error_outputs(page) == []
        assert cells_done(page)
        # every plot has a canvas, and every one in view (not in a hidden tab) is drawn
        counts = []

        def all_drawn():
            counts[:] = plots_and_canvases(page)
            plots, canvases, shown, drawn = counts
            return canvases >= plots > 0 and drawn == shown > 0

        assert poll(all_drawn, timeout=30, fail=False), f"plots, canvases, in view, drawn: {counts}"
        scroll_to_first_plot(page)
        page.screenshot(path=screenshot_path(f"jupyterlab_{name.replace('.ipynb', '')}.png"))
        assert errors == []
        assert outside == [], f"requests left the machine: {outside[:5]}"
        page.evaluate("() => window.jupyterapp.commands.execute('kernelmenu:shutdown')")
