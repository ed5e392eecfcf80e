"""The README's snippet in Jupyter Notebook 7 (the classic notebook's successor), offline: it renders, trains, and
the widgets and the Python object stay in step. Notebook 7 is JupyterLab's front end with a one-notebook page, so
the same page kit drives it.

Notebook 7, like JupyterLab, sends every update back to the kernel; an echo of an older layout used to detach a
plot just added (its curve stayed empty), which is what made this flow lose a Start or a change now and then.
"""

import pytest
from test_readme_snippet import snippet_trains_and_stays_in_step, write_snippet_notebook

from labkit import error_outputs, jupyter_lab, lab_page, open_notebook, shut_down_kernels

pytestmark = [pytest.mark.jupyter, pytest.mark.browser]

# Notebook 7.6's own settings loader raises this on every page load, with any notebook (one holding only `1 + 1`
# too) and before a kernel has started: it is not the dashboard's, and the page works.
NOTEBOOK7_OWN_ERRORS = {"Cannot read properties of undefined (reading 'schema')"}


@pytest.fixture(scope="module")
def classic(tmp_path_factory):
    with jupyter_lab(tmp_path_factory.mktemp("notebook7"), app="notebook") as served:
        yield served


def test_readme_snippet_renders_and_trains_in_notebook_7(classic, screenshot_path):
    url, dirs = classic
    name = write_snippet_notebook(dirs["root"])
    try:
        with lab_page() as (page, outside, errors):
            open_notebook(page, url, name, app="notebook")
            assert page.evaluate("() => window.jupyterapp.name") == "Jupyter Notebook"
            snippet_trains_and_stays_in_step(page, screenshot_path("notebook7_snippet_training.png"))
            assert error_outputs(page) == []
            assert [e for e in errors if e not in NOTEBOOK7_OWN_ERRORS] == []
            assert outside == [], f"requests left the machine: {outside[:5]}"
    finally:
        shut_down_kernels(url)
