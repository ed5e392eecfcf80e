"""The dashboard without a browser: controls from param, the training thread, live edits, URL state, failures."""
import time

import numpy as np
import panel as pn
import pytest
from bokeh.document import Document
from bokeh.models import ColumnDataSource

from invlab.dashboard import Explorer, TrainingSession
from invlab.dashboard.session.training import TrainingSlots
from invlab.data import DataConfig
from invlab.models import SVGPConfig
from invlab.train import RunConfig, RunStore


def small(**train):
    t = {"steps": 400, "eval_every": 20, "log_every": 5, "batch_size": 64}
    t.update(train)
    return RunConfig(data={"dataset": "digits", "subset": 200, "test_subset": 100}, model_config={"num_inducing": 15},
                     train=t)


@pytest.fixture
def explorer(tmp_path):
    e = Explorer(small(), store=RunStore(tmp_path / "runs.sqlite"))
    e.__panel__()
    yield e
    e.close()


def test_controls_are_generated_from_the_param_configs(explorer):
    tabs = explorer.controls()
    names = [t.name for t in tabs]
    assert names == ["Data", "Model", "Invariance", "Optimisation", "Runs"]
    assert explorer.page.data_group in tabs[0].objects  # the Data tab: its generated controls, then the Task selector
    rotate = explorer.page.data_group._widgets["rotate"]
    assert (rotate.slider.start, rotate.slider.end) == DataConfig.param.rotate.bounds  # an angle on 0..180°
    model_widgets = explorer.page.model_group[0]._widgets
    assert set(model_widgets) >= {"kernel", "num_inducing", "likelihood", "lengthscale"}
    assert list(model_widgets["kernel"].box.options) == SVGPConfig.param.kernel.objects
    assert model_widgets["num_inducing"].kind == "int-box"


def test_start_pause_step_reset_drive_a_real_model(explorer, wait_until):
    explorer.start()
    wait_until(lambda: explorer.session.step >= 15 and "elbo" in explorer.curves.buffers, explorer)
    explorer.pause()
    wait_until(lambda: explorer.session.state == "paused", explorer)
    paused_at = explorer.session.step
    time.sleep(0.5)
    assert explorer.session.step == paused_at
    explorer.step()
    wait_until(lambda: explorer.session.step == paused_at + 1 and explorer.session.state == "paused", explorer)
    elbo = explorer.curves.buffers["elbo"].data
    assert len(elbo) >= 3 and np.isfinite(elbo["elbo"]).all()
    wait_until(lambda: {"kuu_spectrum", "inducing_inputs", "hyperparameters"} <= set(explorer.view_panes), explorer)
    status = explorer.status.pane.object
    assert "paused" in status and f">{paused_at + 1}<" in status and "cpu" in status and "float64" in status
    explorer.reset()
    wait_until(lambda: explorer.session.step == 0 and explorer.curves.previous, explorer)
    assert len(explorer.curves.buffers["elbo"].data) == 0  # live buffer cleared ...
    assert len(explorer.curves.previous[-1][1]["elbo"]) >= 3  # ... old curve kept for comparison


def test_live_tweaks_reach_the_running_model(explorer, wait_until):
    explorer.start()
    wait_until(lambda: explorer.session.step >= 5, explorer)
    explorer.train.learning_rate = 0.003
    trainer = explorer.session.trainer
    before = float(trainer.model.kernel.lengthscale())
    explorer.model_config.lengthscale = 7.5  # far from the initial median-distance value
    # the page says so at once; the model takes the changes before its next step (the server never waits for one)
    assert "lr <span data-field=\"lr\">0.003<" in explorer.status.pane.object
    at = explorer.session.step
    wait_until(lambda: explorer.session.step >= at + 2, explorer)
    assert trainer.optimizer.param_groups[0]["lr"] == pytest.approx(0.003)
    with trainer.lock:  # the thread keeps training, so a step or two may have moved it slightly since
        assert float(trainer.model.kernel.lengthscale()) == pytest.approx(7.5, rel=0.05)
    assert abs(before - 7.5) > 1.0
    # a structural change does not silently rebuild a running model: it asks for Reset
    explorer.model_config.num_inducing = 10
    assert "Press Reset" in explorer.notice
    assert explorer.session.trainer is trainer


def test_switching_to_an_lbfgs_family_follows_its_learning_rate_unless_the_user_chose_one(explorer, wait_until):
    explorer.start()
    wait_until(lambda: explorer.session.step >= 2, explorer)
    explorer.model = "rkhs"  # solved by L-BFGS
    assert explorer.train.learning_rate == 1.0 and explorer.run_config().train["learning_rate"] == 1.0
    assert explorer.session.trainer.edits.current_lr == 0.01  # the running Adam model keeps its rate until Reset
    explorer.pause()
    explorer.model = "svgp"
    assert explorer.train.learning_rate == 0.01
    explorer.train.learning_rate = 0.05  # the user's choice survives switching
    explorer.model = "rkhs"
    assert explorer.train.learning_rate == 0.05
    explorer.model = "svgp"
    explorer.train.learning_rate = 0.01
    explorer.train.optimizer = "lbfgs"  # the optimiser setting switches it as well
    assert explorer.train.learning_rate == 1.0


def test_thread_stops_when_the_browser_session_is_destroyed(tmp_path, wait_until):
    doc = Document()
    e = Explorer(small(), store=False)
    with pn.io.server.set_curdoc(doc):
        e.lifecycle.on_load()
    assert e.feed.callback is not None and len(doc.session_destroyed_callbacks) == 1
    e.start()
    wait_until(lambda: e.session.step > 0, e)
    for callback in doc.session_destroyed_callbacks:  # what Bokeh does when the tab closes
        callback(None)  # returns at once: the server thread never waits for a step
    assert e.feed.callback is None
    e.session.thread.join(30)  # the thread ends after its current step
    assert not e.session.thread.is_alive()


def test_plot_handles_receive_data_after_sends(explorer):
    explorer.curves.send("elbo", [1, 2, 3], [-10.0, -8.0, -7.5])
    pane = explorer.curves.plots["elbo"]
    doc = Document()
    root = pane.get_root(doc)
    explorer.curves.send("elbo", [4, 5], [-7.0, -6.9])
    sources = [m for m in root.references() if isinstance(m, ColumnDataSource) and "elbo" in m.data]
    assert sources and max(len(s.data["elbo"]) for s in sources) == 5
    assert list(max(sources, key=lambda s: len(s.data["elbo"])).data["step"])[-1] == 5


def test_url_round_trip_restores_the_configuration():
    from panel.io.location import Location

    a = Explorer(small(), store=False)
    a.read_location(Location())
    a.data.rotate = 45.0
    a.data.classes = [3, 8]
    a.model_config.kernel = "matern52"
    a.model_config.num_inducing = 33
    a.train.learning_rate = 0.02
    query = a.link.url_field.value  # what the page writes into the address bar
    assert "data.rotate=45" in query and "model.kernel=matern52" in query
    assert "model.whiten" not in query and "train.jitter" not in query  # only what differs from the defaults
    b = Explorer(store=False)
    b.read_location(Location(search=query))
    assert b.run_config().to_json() == a.run_config().to_json()
    a.close(), b.close()


def test_numerical_failure_pauses_and_explains(explorer, monkeypatch, wait_until):
    explorer.start()
    wait_until(lambda: explorer.session.step >= 5, explorer)
    trainer = explorer.session.trainer
    real = trainer.model.loss

    def poisoned(batch):
        terms = real(batch)
        terms.loss = terms.loss * float("nan")
        return terms

    monkeypatch.setattr(trainer.model, "loss", poisoned)
    wait_until(lambda: explorer.session.state == "paused" and "non-finite" in explorer.session.message, explorer)
    # the status line follows the session's state on the training thread, a moment after it: wait for what it shows
    wait_until(lambda: "last good state" in explorer.status.pane.object, explorer, timeout=30)
    assert "non-finite" in explorer.status.pane.object and 'data-tone="error"' in explorer.status.pane.object
    assert explorer.session.thread.is_alive()  # the dashboard keeps running


def test_bad_settings_fail_with_a_message_and_the_session_survives(tmp_path, wait_until):
    e = Explorer(RunConfig(model_config={"likelihood": "bernoulli"}), store=False)
    e.__panel__()
    e.start()
    wait_until(lambda: e.session.state == "failed", e)
    assert "2 classes" in e.session.message and "2 classes" in e.status.pane.object
    e.model_config.likelihood = "auto"
    e.data.subset = 200
    e.start()
    wait_until(lambda: e.session.step > 0, e)
    e.close()


def test_opening_a_corrupt_checkpoint_changes_nothing(explorer, tmp_path, wait_until):
    explorer.step()
    wait_until(lambda: explorer.session.step == 1, explorer)
    path = explorer.session.commands.save_checkpoint()
    with open(path, "wb") as f:
        f.write(b"garbage")
    trainer = explorer.session.trainer
    explorer.runs.refresh()
    explorer.runs.select.value = trainer.record.run_id
    explorer.runs.open_selected()
    wait_until(lambda: "cannot be read" in explorer.session.message, explorer)
    assert explorer.session.trainer is trainer and explorer.session.step == 1


def test_stored_run_can_be_reopened(explorer, wait_until):
    explorer.start()
    wait_until(lambda: explorer.session.step >= 20, explorer)
    explorer.pause()
    wait_until(lambda: explorer.session.state == "paused", explorer)
    explorer.save_checkpoint()
    run_id, step = explorer.session.trainer.record.run_id, explorer.session.trainer.step_count
    explorer.session.commands.open_run(run_id)
    wait_until(lambda: explorer.session.trainer.step_count == step and "opened stored run" in explorer.session.message,
             explorer)


def test_sessions_beyond_the_cap_are_queued():
    slots = TrainingSlots(1)
    a = TrainingSession(small(steps=100_000), slots=slots)
    b = TrainingSession(small(steps=100_000), slots=slots)
    a.commands.start()
    deadline = time.time() + 60
    while a.state != "running" and time.time() < deadline:
        time.sleep(0.05)
    b.commands.start()
    while b.state != "queued" and time.time() < deadline:
        time.sleep(0.05)
    assert a.state == "running" and b.state == "queued"
    a.commands.pause()
    while b.state != "running" and time.time() < deadline:
        time.sleep(0.05)
    assert b.state == "running"
    a.stop(), b.stop()


def test_csv_download_holds_every_run(explorer):
    explorer.curves.send("elbo", [1, 2], [-3.0, -2.0])
    explorer.curves.archive("run 1")
    explorer.curves.send("elbo", [1], [-5.0])
    text = explorer.curves.to_csv().getvalue()
    assert text.splitlines()[0] == "run,label,metric,unit,step,value"
    assert ",run 1,elbo,nats,2,-2.0" in text and ",this run,elbo,nats,1,-5.0" in text


def test_invariance_sliders_set_and_freeze_the_running_models_ranges(wait_until):
    config = RunConfig(model="invariant", data={"dataset": "digits", "subset": 150, "test_subset": 60},
                       model_config={"augmentation": "rotation", "num_inducing": 10, "num_samples": 4},
                       train={"steps": 400, "log_every": 5, "eval_every": 0, "batch_size": 32})
    e = Explorer(config, store=False)
    e.__panel__()
    e.start()
    wait_until(lambda: e.session.step >= 3 and e.display.learned_controls, e)
    name, control = next(iter(e.display.learned_controls.items()))
    assert name.startswith("kernel.augmentation.")
    e.pause()
    wait_until(lambda: e.session.state == "paused", e)
    from invlab.parameters import learnables

    p = learnables(e.session.trainer.model)[name]
    control.learn.value = False  # the learn / freeze toggle
    assert p.frozen
    e.display.set_learned(name, control.widget.end)  # the slider's ends lie inside the range's open bounds
    assert float(p()) == pytest.approx(control.widget.end, rel=1e-9) and "must lie" not in e.notice
    target = 0.5 * (control.widget.start + control.widget.end)
    e.display.set_learned(name, target)  # what releasing the slider calls
    assert float(p()) == pytest.approx(target, rel=1e-9)
    e.step()
    wait_until(lambda: e.session.state == "paused" and e.session.step > 3, e)
    assert float(p()) == pytest.approx(target, rel=1e-9)  # frozen: the optimiser left it alone
    wait_until(lambda: "augmentation_samples" in e.view_panes or any("augment" in k for k in e.view_panes), e)
    e.close()


def test_new_plots_are_part_of_the_document_before_data_is_streamed_into_them(tmp_path, monkeypatch, wait_until):
    """A data source that is streamed into before it joins the document emits no events: the browser keeps the
    empty copy it got with the plot (seen as an empty test-error curve). Every stream must reach the document."""
    from bokeh.models import ColumnDataSource as CDS
    from panel.io.state import set_curdoc

    detached = []
    original = CDS._stream

    def recording(self, new_data, rollover=None, setter=None):
        if self.document is None:
            detached.append(sorted(new_data))
        return original(self, new_data, rollover, setter)

    monkeypatch.setattr(CDS, "_stream", recording)
    e = Explorer(small(steps=100_000, eval_every=5, log_every=1), store=RunStore(tmp_path / "runs.sqlite"))
    doc = Document()
    doc.add_root(e.__panel__().get_root(doc))
    with set_curdoc(doc):
        e.start()
        wait_until(lambda: {"elbo", "test_error", "kl"} <= set(e.curves.buffers) and e.view_panes, e)
        for _ in range(5):
            e.tick()
    e.close()
    assert not detached, f"streamed into sources outside the document: {detached}"
    sources = [m for m in doc.models if isinstance(m, CDS) and "test_error" in m.data]
    assert sources and max(len(s.data["test_error"]) for s in sources) == len(e.curves.buffers["test_error"].data)


def test_a_failing_page_update_is_reported_and_the_next_tick_recovers(tmp_path, monkeypatch, wait_until):
    explorer = Explorer(small(steps=100_000), store=RunStore(tmp_path / "runs.sqlite"), view_interval=0.2)
    explorer.__panel__()
    explorer.start()
    wait_until(lambda: explorer.session.step >= 3 and explorer.view_panes, explorer)

    def broken(views):
        raise RuntimeError("renderer exploded")

    monkeypatch.setattr(explorer.feed, "_show_views", broken)
    deadline = time.time() + 60
    while "renderer exploded" not in explorer.notice and time.time() < deadline:
        explorer.tick()  # never raises: a periodic callback that raises is not called again by some servers
        time.sleep(0.05)
    assert "Could not update the page (RuntimeError: renderer exploded); training goes on." == explorer.notice
    monkeypatch.undo()
    explorer.notice = ""
    step = explorer.session.step
    wait_until(lambda: explorer.feed.last_snapshot.step > step, explorer)  # views flow again
    explorer.close()


def test_a_run_another_process_still_trains_opens_without_taking_it_over(explorer, wait_until):
    """Two writers would garble a run: a page opening a run that a live `invlab train` process trains shows its
    curves but does not continue it."""
    import sqlite3
    import subprocess
    import sys

    from invlab.train.store import _process_token, writer_identity

    explorer.start()
    wait_until(lambda: explorer.session.step >= 10, explorer)
    explorer.pause()
    wait_until(lambda: explorer.session.state == "paused", explorer)
    explorer.save_checkpoint()
    run_id = explorer.session.trainer.record.run_id
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        identity = {**writer_identity(), "writer_pid": other.pid, "writer_token": _process_token(other.pid)}
        with sqlite3.connect(explorer.store.path) as con:  # as a live `invlab train --resume` would mark it
            con.execute("UPDATE runs SET status = 'running', writer_pid = ?, writer_host = ?, writer_token = ? "
                        "WHERE id = ?", (identity["writer_pid"], identity["writer_host"], identity["writer_token"],
                                         run_id))
        explorer.session.commands.open_run(run_id)
        wait_until(lambda: "still being trained" in explorer.session.message, explorer)
        assert explorer.session.trainer is None and f"pid {other.pid}" in explorer.session.message
    finally:
        other.kill()
        other.wait()
