"""The page follows a run that a user's own loop writes with `invlab.train.watch` in another process: Runs → Open run
shows its curves so far, its ELBO curve grows while the loop writes, the Runs list names it, and when the loop ends
the page says so (without continuing the run here)."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from invlab.dashboard import Explorer
from invlab.train import RunConfig, RunStore

ROOT = Path(__file__).resolve().parents[3]

# a hand-written Adam loop on a small default SVGP: 20 steps, then 20 more each time a line arrives on stdin
LOOP = textwrap.dedent("""
    import sys
    import torch
    from invlab.models.base import DataInfo
    from invlab.train import RunConfig, watch

    config = RunConfig(data={"dataset": "digits", "subset": 200}, model_config={"num_inducing": 16})
    data = config.data_config().load()
    X, y = torch.as_tensor(data.X_train), torch.as_tensor(data.y_train)
    model = config.model_spec().build(config.model_params(), X, y, DataInfo.of(data))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    with watch(model, name="my-loop", config=config, data=data, data_dir=sys.argv[1]) as run:
        step = 0
        for turn in range(2):
            for _ in range(20):
                step += 1
                optimizer.zero_grad()
                terms = model.loss((X, y))
                terms.loss.backward()
                optimizer.step()
                run.log(step, loss=terms.loss, elbo=terms.parts["elbo"])
            run.flush()
            print(run.run_id, step, flush=True)
            sys.stdin.readline()
""")


@pytest.fixture
def loop(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen([sys.executable, "-c", LOOP, str(tmp_path)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True, env=env)
    yield process
    if process.poll() is None:
        process.kill()
    process.wait()


def elbo_steps(explorer) -> list[int]:
    buffer = explorer.curves.buffers.get("elbo")
    return [] if buffer is None else [int(s) for s in buffer.data["step"]]


def test_an_opened_watched_run_keeps_drawing_what_the_loop_writes(tmp_path, loop, wait_until):
    run_id, step = map(int, loop.stdout.readline().split())
    assert step == 20
    explorer = Explorer(RunConfig(), store=RunStore(tmp_path / "runs.sqlite"))
    explorer.__panel__()
    try:
        explorer.runs.refresh()
        assert f"#{run_id} my-loop: svgp on digits — running, step 20" in explorer.runs.select.options
        explorer.runs.select.value = run_id
        explorer.runs.open_selected()
        wait_until(lambda: elbo_steps(explorer) == list(range(1, 21)), explorer)
        assert "still being trained by another process" in explorer.session.message
        assert explorer.session.trainer is None  # shown, not continued here
        loop.stdin.write("\n")
        loop.stdin.flush()
        assert loop.stdout.readline().split() == [str(run_id), "40"]
        wait_until(lambda: elbo_steps(explorer) == list(range(1, 41)), explorer)  # the curve grew
        assert explorer.session.step == 40
        loop.stdin.write("\n")
        loop.stdin.flush()
        assert loop.wait(timeout=60) == 0
        wait_until(lambda: "is now finished at step 40" in explorer.session.message, explorer)
        assert elbo_steps(explorer) == list(range(1, 41))  # each point once
    finally:
        explorer.close()


def test_the_follower_reads_each_stored_value_once_even_one_stored_late_for_an_early_step(tmp_path):
    import math

    from invlab.dashboard.session.follow import RunFollower

    with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = store.runs.create(RunConfig().to_json(), "svgp", "digits", status="running")
        follower = RunFollower(store, run_id)
        for step in (1, 2, 3):
            store.metrics.log(run_id, step, {"elbo": -float(step)})
        store.flush()
        points, record = follower.read()
        assert points == {"elbo": ([1, 2, 3], [-1.0, -2.0, -3.0])} and record.status == "running"
        store.metrics.log(run_id, 2, {"hyperparameters/lengthscale": 0.5, "gap": None})  # late, at an early step
        store.flush()
        points, _ = follower.read()
        assert points["hyperparameters/lengthscale"] == ([2], [0.5]) and "elbo" not in points
        assert points["gap"][0] == [2] and math.isnan(points["gap"][1][0])  # a gap is drawn as a break in the line
        assert follower.read()[0] == {}


def test_explorer_run_id_follows_the_watched_loop_as_in_a_notebook(tmp_path, loop, wait_until):
    run_id, _ = map(int, loop.stdout.readline().split())
    explorer = Explorer(store=RunStore(tmp_path / "runs.sqlite"), run=run_id)  # what a JupyterLab cell does
    explorer.__panel__()
    try:
        wait_until(lambda: elbo_steps(explorer) == list(range(1, 21)), explorer)
        assert explorer.runs.select.value == run_id
        loop.stdin.write("\n")
        loop.stdin.flush()
        loop.stdout.readline()
        wait_until(lambda: elbo_steps(explorer) == list(range(1, 41)), explorer)
    finally:
        explorer.close()
        loop.stdin.write("\n")
        loop.stdin.flush()


def test_a_followed_watched_run_whose_loss_climbs_is_shown_as_diverging_from_its_stored_history(tmp_path, wait_until):
    from invlab.train import watch

    def loss_steps(explorer) -> list[int]:
        buffer = explorer.curves.buffers.get("loss")
        return [] if buffer is None else [int(s) for s in buffer.data["step"]]

    config = RunConfig(train={"learning_rate": 0.05})
    with watch(name="climbing", config=config, data_dir=tmp_path) as run:
        for step in range(1, 11):  # a healthy start: the loss falls
            run.log(step, loss=100.0 - 5 * step)
        run.flush()
        explorer = Explorer(store=RunStore(tmp_path / "runs.sqlite"), run=run.run_id)
        explorer.__panel__()
        try:
            wait_until(lambda: loss_steps(explorer) == list(range(1, 11)), explorer)
            explorer.tick()
            assert explorer.status.state not in ("diverging", "stalled", "collapsed")
            assert "still being trained by another process" in explorer.status.message
            for step in range(11, 41):  # then it climbs, step after step
                run.log(step, loss=50.0 + 4 * (step - 10))
            run.flush()
            wait_until(lambda: explorer.status.state == "diverging", explorer)
            assert "the loss has risen steadily" in explorer.status.message
            assert "lower the learning rate (now 0.05) in your loop" in explorer.status.message
            assert "Reset" not in explorer.status.message  # the page's buttons do nothing to another process's loop
            assert explorer.status.tone == "warning"
            for step in range(41, 61):  # it recovers: the verdict goes, and so does its warning
                run.log(step, loss=170.0 - 8 * (step - 40))
            run.flush()
            wait_until(lambda: explorer.session.step == 60, explorer)
            wait_until(lambda: explorer.status.state != "diverging", explorer)
            assert "risen steadily" not in explorer.status.message
            assert "trained by another process" in explorer.status.message and explorer.status.tone == "info"
        except BaseException:
            explorer.close()
            raise
    try:  # the loop ended: the run is finished, and the verdict of a run no longer training is not shown
        wait_until(lambda: "is now finished at step 60" in explorer.status.message, explorer)
        assert explorer.status.state != "diverging"
    finally:
        explorer.close()


def shown_view(explorer, name):
    """The view the page's pane `name` holds now (None while there is no such pane)."""
    pane = explorer.feed.view_panes.get(name)
    return None if pane is None else pane.pipe.data


def test_a_followed_watched_run_shows_its_picture_views_and_their_updates(tmp_path, wait_until):
    import numpy as np

    from invlab import diagnostics as dg
    from invlab.train import watch

    class Mine:
        """A user's model whose diagnostics are a grid of samples and a spectrum that change every snapshot."""

        def __init__(self):
            self.calls = 0

        def diagnostics(self):
            self.calls += 1
            rng = np.random.default_rng(self.calls)
            return {"samples": dg.ImageGrid(title=f"Samples at snapshot {self.calls}", images=rng.random((2, 3, 4, 4))),
                    "spectrum": dg.Spectrum(title="Eigenvalues", values=np.sort(rng.random(8)))}

    model = Mine()
    with watch(model, name="pictures", data_dir=tmp_path) as run:
        run.log(1, loss=1.0)
        first = run.snapshot()
        explorer = Explorer(store=RunStore(tmp_path / "runs.sqlite"), run=run.run_id)
        explorer.__panel__()
        try:
            wait_until(lambda: shown_view(explorer, "samples") is not None, explorer)
            assert np.array_equal(shown_view(explorer, "samples").images, first["samples"].images)
            assert shown_view(explorer, "samples").title == "Samples at snapshot 1"
            assert np.array_equal(shown_view(explorer, "spectrum").values, first["spectrum"].values)
            run.log(2, loss=0.5)
            second = run.snapshot()  # the loop goes on: the page shows the new pictures
            wait_until(lambda: shown_view(explorer, "samples").title == "Samples at snapshot 2", explorer)
            assert np.array_equal(shown_view(explorer, "samples").images, second["samples"].images)
            assert np.array_equal(shown_view(explorer, "spectrum").values, second["spectrum"].values)
        except BaseException:
            explorer.close()
            raise
    explorer.close()


def test_an_opened_page_run_without_a_checkpoint_shows_its_stored_pictures(tmp_path, wait_until):
    import numpy as np

    from invlab.train import Trainer

    config = RunConfig(model="svgp", data={"dataset": "digits", "subset": 200}, model_config={"num_inducing": 16},
                       train={"steps": 50, "batch_size": 50})
    with RunStore(tmp_path / "runs.sqlite") as store:
        trainer = Trainer(config, store=store)
        list(trainer.run(steps=3))
        views = trainer.report.snapshot(views=True).views  # what the page showed while it trained
        trainer._flush()
        # its checkpoints are gone (pruned, or never written)
        for _, path in store.checkpoints.list(trainer.record.run_id):
            path.unlink()
    explorer = Explorer(store=RunStore(tmp_path / "runs.sqlite"), run=trainer.record.run_id)
    explorer.__panel__()
    try:
        wait_until(lambda: shown_view(explorer, "kuu_spectrum") is not None, explorer)
        assert "no checkpoint to continue from" in explorer.session.message
        assert np.array_equal(shown_view(explorer, "kuu_spectrum").values, views["kuu_spectrum"].values)
        assert np.array_equal(shown_view(explorer, "inducing_inputs").images, views["inducing_inputs"].images)
    finally:
        explorer.close()


def test_a_diverging_loop_watched_without_a_config_is_not_told_a_learning_rate_it_never_stored(tmp_path, wait_until):
    from invlab.train import watch

    class Mine:
        def diagnostics(self):
            return {}

    with watch(Mine(), name="no-config", data_dir=tmp_path) as run:  # its optimiser's rate is the loop's own
        run.log(1, loss=100.0)
        run.flush()
        explorer = Explorer(store=RunStore(tmp_path / "runs.sqlite"), run=run.run_id)
        explorer.__panel__()
        try:
            wait_until(lambda: "still being trained by another process" in explorer.status.message, explorer)
            for step in range(2, 31):
                run.log(step, loss=100.0 + 4 * step)
            run.flush()
            wait_until(lambda: explorer.status.state == "diverging", explorer)
            assert "lower the learning rate in your loop" in explorer.status.message
            assert "(now" not in explorer.status.message  # the page's default rate is not this loop's
        finally:
            explorer.close()


def test_a_followed_run_that_already_diverged_is_judged_when_opened(tmp_path, wait_until):
    from invlab.train import watch

    with watch(name="already-climbing", config=RunConfig(train={"learning_rate": 0.05}), data_dir=tmp_path) as run:
        for step in range(1, 31):  # everything is stored before the page opens it, and nothing new arrives
            run.log(step, loss=100.0 + 4 * step)
        run.flush()
        explorer = Explorer(store=RunStore(tmp_path / "runs.sqlite"), run=run.run_id)
        explorer.__panel__()
        try:
            wait_until(lambda: explorer.status.state == "diverging", explorer, timeout=30)
            assert "lower the learning rate (now 0.05) in your loop" in explorer.status.message
        finally:
            explorer.close()
