"""Store and data-directory faults under a server: the page says what is wrong and how to fix it (never a blank page
with the error only in the log), the damaged store is left untouched, and training still works."""
import panel as pn
from bokeh.document import Document

from invlab.dashboard import Explorer
from invlab.train import RunConfig
from tests.helpers.panes import pane_text


def small():
    return RunConfig(data={"dataset": "digits", "subset": 200, "test_subset": 100}, model_config={"num_inducing": 10},
                     train={"steps": 3})


def test_a_corrupt_store_is_explained_on_the_page_and_left_untouched(tmp_path, monkeypatch, wait_until):
    monkeypatch.setenv("INVLAB_DATA", str(tmp_path))
    damaged = b"this is not a database" * 100
    (tmp_path / "runs.sqlite").write_bytes(damaged)
    explorer = Explorer(small())
    explorer.__panel__()
    with pn.io.server.set_curdoc(Document()):
        explorer.lifecycle.on_load()  # the page connects: the store is opened now
    assert "is damaged" in explorer.page.notice_pane.object  # the page shows it
    assert "is damaged" in explorer.notice and "move it aside" in explorer.notice
    assert (tmp_path / "runs.sqlite").read_bytes() == damaged
    explorer.step()  # training still works, without saving runs
    wait_until(lambda: explorer.session.step == 1, explorer, timeout=120)
    explorer.close()


def test_a_data_directory_that_is_a_file_gives_a_page_that_says_so(tmp_path, monkeypatch):
    from invlab.dashboard import app

    monkeypatch.setenv("INVLAB_DATA", str(tmp_path / "a-file"))
    (tmp_path / "a-file").write_text("")
    page = app.page()
    assert isinstance(page, pn.pane.Alert) and "INVLAB_DATA" in pane_text(page) and "cannot start" in pane_text(page)
