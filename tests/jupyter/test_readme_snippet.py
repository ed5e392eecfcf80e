"""The README's JupyterLab snippet in a real JupyterLab, offline: it renders, trains, stays in step with
Python both ways, and stops training when the notebook is closed or its kernel restarted."""
import os

import pytest

from labkit import (
    LAYOUT_PLOTS,
    column_length,
    command,
    error_outputs,
    kernel_client,
    kernel_eval,
    lab_page,
    open_notebook,
    output_texts,
    plot_points,
    poll,
    run_cell,
    run_command,
    set_widget_value,
    shut_down_kernels,
    wait_kernel_idle,
    widget_value,
    write_notebook,
)

pytestmark = [pytest.mark.jupyter, pytest.mark.browser]

# Exactly the README's snippet (README.md, "In JupyterLab"); the other cells are the test's.
SNIPPET = "from invlab.dashboard import Explorer\n\nexplorer = Explorer()\nexplorer"
LEARNING_RATE = "Learning rate"


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def write_snippet_notebook(root) -> str:
    """snippet.ipynb in `root`: the README's snippet, then a cell setting the learning rate from Python and one
    printing it."""
    write_notebook(root / "snippet.ipynb", [
        SNIPPET,
        "explorer.train.learning_rate = 0.0123",
        "print(explorer.train.learning_rate)",
    ])
    return "snippet.ipynb"


def snippet_trains_and_stays_in_step(page, screenshot: str) -> None:
    """Run the snippet, press Start, see the ELBO curve receive data; then Python → widget and widget → Python."""
    run_cell(page, 0, timeout=120)
    page.get_by_role("button", name="▶ Start").click(timeout=60_000)
    poll(lambda: column_length(page, "elbo") >= 2, timeout=120)  # the ELBO curve receives data
    page.screenshot(path=screenshot)
    page.locator(".bk-tab", has_text="Optimisation").first.click()  # the learning rate's tab, drawn when opened
    poll(lambda: widget_value(page, LEARNING_RATE) is not None, timeout=60)
    run_cell(page, 1)  # Python → widget
    poll(lambda: widget_value(page, LEARNING_RATE) == 0.0123, timeout=30)
    set_widget_value(page, LEARNING_RATE, 0.005)  # widget → Python
    poll(lambda: (run_cell(page, 2), output_texts(page, 2).strip())[1] == "0.005", timeout=30, interval=1.0)


def every_plot_holds_data_in_the_page(page, client, errors) -> None:
    """The Test error plot included: read from the data the page's Bokeh models hold, not from Python's buffers.

    Each plot is laid out in a message of its own while the page sends every update back: an echo of the
    children before the last plot was added used to detach that plot in the kernel (one plot, a different one
    each run, stayed empty or never arrived), and echoed data was appended to the kernel's copy twice."""
    poll(lambda: kernel_eval(client, "'test_error' in explorer.curves.buffers and "
                                     "len(explorer.curves.buffers['test_error'].data) >= 2 and "
                                     "explorer.session.step >= 20"), timeout=240, interval=1.0)
    layout = kernel_eval(client, LAYOUT_PLOTS)
    assert {"elbo", "test_error", "test_nlpd", "kuu_spectrum"} <= set(layout.values())
    try:
        poll(lambda: all(plot_points(page, list(layout)).values()), timeout=60, interval=0.5)
    except AssertionError:
        points = plot_points(page, list(layout))
        empty = {f"{layout[k]} ({k})": v for k, v in points.items() if not v}
        shown = kernel_eval(client, "{n: [m.id for (m, _) in p._models.values()] for n, p in "
                                    "explorer.curves.plots.items()}")
        raise AssertionError(f"plots without data in the page (None: not in the page): {empty}; "
                             f"the kernel's models: {shown}; page errors: {errors}") from None


def test_readme_snippet_renders_trains_fills_every_plot_and_closes_offline(lab, screenshot_path):
    """One notebook, as a user goes: the snippet trains, widgets and Python agree both ways, every plot of the run
    fills with data, and closing the notebook or restarting its kernel ends the training."""
    url, dirs = lab
    write_snippet_notebook(dirs["root"])
    try:
        with lab_page() as (page, outside, errors):
            open_notebook(page, url, "snippet.ipynb")
            snippet_trains_and_stays_in_step(page, screenshot_path("jupyterlab_snippet_training.png"))
            client = kernel_client(url, dirs, "snippet.ipynb")
            try:
                every_plot_holds_data_in_the_page(page, client, errors)
                texts = page.evaluate("() => document.querySelector('.jp-NotebookPanel').innerText")
                assert "Could not update the page" not in texts
                assert error_outputs(page) == []
                assert errors == []
                assert outside == [], f"requests left the machine: {outside[:5]}"

                # Closing the notebook (the kernel keeps running) stops training.
                assert kernel_eval(client, "explorer.session.thread.is_alive()") is True
                command(page, "application:close")
                page.get_by_role("button", name="Discard").click(timeout=10_000)
                poll(lambda: kernel_eval(client, "(explorer.session.thread.is_alive(), explorer.feed.callback is None)")
                     == (False, True), timeout=60, interval=1.0)

                # Open it again, train, and restart the kernel (Kernel ▸ Restart Kernel…): the training ends with
                # the kernel's process.
                run_command(page, "docmanager:open", {"path": "snippet.ipynb"})
                wait_kernel_idle(page)
                run_cell(page, 0, timeout=120)
                page.get_by_role("button", name="▶ Start").click(timeout=60_000)
                poll(lambda: kernel_eval(client, "explorer.session.step") >= 2, timeout=120)
                pid = kernel_eval(client, "__import__('os').getpid()")
                # what Kernel ▸ Restart Kernel… does once its dialog is confirmed
                page.evaluate("() => window.jupyterapp.shell.currentWidget.sessionContext.restartKernel()")
                poll(lambda: not process_alive(pid), timeout=60, interval=0.5)
                wait_kernel_idle(page)
                fresh = kernel_client(url, dirs, "snippet.ipynb")  # the restarted kernel, on a new connection
                try:
                    new_pid, has_explorer = kernel_eval(fresh, "(__import__('os').getpid(), 'explorer' in globals())")
                    assert new_pid != pid and has_explorer is False
                finally:
                    fresh.stop_channels()
                assert error_outputs(page) == []
            finally:
                client.stop_channels()
    finally:
        shut_down_kernels(url)
