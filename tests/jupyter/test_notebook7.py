"""The README's snippet in Jupyter Notebook 7 (the classic notebook's successor), offline: it renders, trains, and
the widgets and the Python object stay in step. Notebook 7 is JupyterLab's front end with a one-notebook page, so
the same page kit drives it.

Opt-in (INVLAB_NOTEBOOK7=1): in repeated runs the flow passed 38 times in 41. One failure was a widget change
that did not reach Python within 30 s, one a Start press that gave no ELBO point within 60 s, and one was not
recorded. The JupyterLab test that shares these steps has not failed so far (CI and local runs). Until the cause
is understood, this test stays out of the default run, which must not go red by chance.
"""
import os

import pytest
from test_readme_snippet import snippet_trains_and_stays_in_step, write_snippet_notebook

from labkit import error_outputs, jupyter_lab, lab_page, open_notebook, shut_down_kernels

pytestmark = [pytest.mark.jupyter, pytest.mark.browser,
              pytest.mark.skipif(os.environ.get("INVLAB_NOTEBOOK7", "") in ("", "0"),
                                 reason="Notebook 7 test is opt-in: INVLAB_NOTEBOOK7=1 (see the module docstring)")]

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
