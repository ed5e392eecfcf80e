"""The README's snippet in Jupyter Notebook 7 (the classic notebook's successor), offline: it renders, trains, and
the widgets and the Python object stay in step. Notebook 7 is JupyterLab's front end with a one-notebook page, so
the same page kit drives it."""
import pytest
from test_readme_snippet import LEARNING_RATE, SNIPPET

from labkit import (
    column_length,
    error_outputs,
    lab_page,
    open_notebook,
    output_texts,
    poll,
    run_cell,
    set_widget_value,
    shut_down_kernels,
    widget_value,
    write_notebook,
)

pytestmark = [pytest.mark.jupyter, pytest.mark.browser]

# Notebook 7.6's own settings loader raises this on every page load, with any notebook (one holding only `1 + 1`
# too) and before a kernel has started: it is not the dashboard's, and the page works.
NOTEBOOK7_OWN_ERRORS = {"Cannot read properties of undefined (reading 'schema')"}


@pytest.fixture(scope="module")
def classic(tmp_path_factory):
    from labkit import jupyter_lab

    with jupyter_lab(tmp_path_factory.mktemp("notebook7"), app="notebook") as served:
        yield served


def test_readme_snippet_renders_and_trains_in_notebook_7(classic, screenshot_path):
    url, dirs = classic
    write_notebook(dirs["root"] / "snippet.ipynb", [
        SNIPPET,
        "explorer.train.learning_rate = 0.0123",
        "print(explorer.train.learning_rate)",
    ])
    try:
        with lab_page() as (page, outside, errors):
            open_notebook(page, url, "snippet.ipynb", app="notebook")
            assert page.evaluate("() => window.jupyterapp.name") == "Jupyter Notebook"
            run_cell(page, 0, timeout=120)
            page.get_by_role("button", name="▶ Start").click(timeout=60_000)
            poll(lambda: column_length(page, "elbo") >= 2, timeout=120)  # the ELBO curve receives data
            page.screenshot(path=screenshot_path("notebook7_snippet_training.png"))
            run_cell(page, 1)  # Python → widget
            poll(lambda: widget_value(page, LEARNING_RATE) == 0.0123, timeout=30)
            set_widget_value(page, LEARNING_RATE, 0.005)  # widget → Python
            poll(lambda: (run_cell(page, 2), output_texts(page, 2).strip())[1] == "0.005", timeout=30, interval=1.0)
            assert error_outputs(page) == []
            assert [e for e in errors if e not in NOTEBOOK7_OWN_ERRORS] == []
            assert outside == [], f"requests left the machine: {outside[:5]}"
    finally:
        shut_down_kernels(url)
