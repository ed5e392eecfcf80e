"""The rkhs family in the dashboard without a browser: the ν slider re-solves the running model and the decision
boundary view follows (Zhang, Lee & Teh 2013, Fig. 1 made interactive)."""

import numpy as np
import pytest

from invlab.dashboard import Explorer
from invlab.train import RunConfig, RunStore


@pytest.fixture
def explorer(tmp_path):
    config = RunConfig(model="rkhs", data={"dataset": "two-moons", "seed": 1, "source_options": {"num_train": 120}},
                       model_config={"sigma": 0.25, "labelled": 2, "max_unlabelled": 118, "nu": 0.0},
                       train={"steps": 100_000, "learning_rate": 1.0, "eval_every": 50, "log_every": 1})
    e = Explorer(config, store=RunStore(tmp_path / "runs.sqlite"), view_interval=0.2)
    e.__panel__()
    yield e
    e.close()


def latest(explorer):
    """The last snapshot with views the page received."""
    feed = getattr(explorer, "feed", None)
    return feed.last_snapshot if feed is not None else explorer._last_snapshot


def field(explorer):
    return latest(explorer).views["decision_function"]


def solved(explorer, after: int = -1) -> bool:
    """The L-BFGS solve has converged (the run stopped by itself) and the page shows its last step, past `after`."""
    s, snap = explorer.session, latest(explorer)
    return (s.trainer is not None and s.trainer.solve.converged and s.state in ("finished", "converged")
            and snap is not None
            and snap.step == s.step > after and "decision_function" in snap.views)


def test_nu_slider_re_solves_and_redraws_the_decision_boundary(explorer, wait_until):
    widgets = explorer.page.model_group[0]._widgets
    assert widgets["nu"].start == 0.0 and widgets["nu"].end == 10.0  # a slider, from the param bounds
    explorer.start()
    wait_until(lambda: solved(explorer), explorer)
    assert explorer.session.step < 50  # the solve stopped once converged, not after its 100,000 steps
    before = field(explorer)
    assert (before.point_labels == -1).sum() == 118 and before.contour == 0.0
    trainer = explorer.session.trainer
    changed_at = trainer.step_count
    explorer.model_config.nu = 1.0  # the slider
    with trainer.lock:
        assert float(trainer.model.nu()) == 1.0
    wait_until(lambda: solved(explorer, after=changed_at), explorer)
    after = field(explorer)
    assert np.abs(after.values - before.values).max() > 0.1  # the boundary moved ...
    pane = explorer.view_panes["decision_function"]
    assert pane.pipe.data is not before  # ... and the pane received the new field
    # the objective's three terms are plotted; the invariance term, 0 while ν was 0, rises
    buffers = explorer.curves.buffers
    wait_until(lambda: {"data_loss", "invariance_loss", "norm"} <= set(buffers)
             and np.asarray(buffers["invariance_loss"].data["invariance_loss"]).max() > 0, explorer)


def test_moving_nu_after_the_solve_finished_re_solves(tmp_path, wait_until):
    config = RunConfig(model="rkhs", data={"dataset": "two-moons", "seed": 1, "source_options": {"num_train": 120}},
                       model_config={"sigma": 0.25, "labelled": 2, "max_unlabelled": 118, "nu": 0.0},
                       train={"steps": 8, "eval_every": 4, "log_every": 1})  # the default L-BFGS step size
    explorer = Explorer(config, store=RunStore(tmp_path / "runs.sqlite"), view_interval=0.2)
    explorer.__panel__()
    try:
        explorer.start()
        wait_until(lambda: solved(explorer), explorer)
        first = explorer.session.step
        assert first <= 8
        before = field(explorer)
        explorer.model_config.nu = 1.0
        assert "re-solving" in explorer.notice
        wait_until(lambda: solved(explorer, after=first), explorer)
        assert explorer.session.step <= first + 10  # at most the re-solve's 10 steps, fewer once converged
        after = field(explorer)
        assert np.abs(after.values - before.values).max() > 0.1  # the new solution's boundary is shown
        assert explorer.session.trainer.tc.steps == 8  # the configured length is unchanged
    finally:
        explorer.close()
