"""A run a user's own loop wrote (`invlab.train.watch`), opened on the page, says what it is: its own name, model and
data and its step (no step total the loop never had), not the page's default SVGP on digits; ▶ Start and +1 Step are
off, since the page cannot continue a watched run and would otherwise train the defaults; the message says so in one
short sentence; and only the metrics the loop logged get plots."""
import time

from invlab.dashboard import Explorer
from invlab.train import RunConfig, RunStore, watch


class Mine:
    """A user's own model, with no views."""

    def diagnostics(self):
        return {}


def loss_steps(explorer) -> list[int]:
    buffer = explorer.curves.buffers.get("loss")
    return [] if buffer is None else [int(s) for s in buffer.data["step"]]


def opened_finished_loop(tmp_path, wait_until):
    """A page on two-moons that opened the finished run of a loop that logged 12 losses and stored no settings."""
    with watch(Mine(), name="my-loop", data_dir=tmp_path) as run:
        for step in range(1, 13):
            run.log(step, loss=10.0 - step)
    explorer = Explorer(RunConfig(data={"dataset": "two-moons"}), store=RunStore(tmp_path / "runs.sqlite"),
                        run=run.run_id)
    explorer.__panel__()
    try:
        wait_until(lambda: loss_steps(explorer) == list(range(1, 13)), explorer)
        explorer.tick()
    except BaseException:
        explorer.close()
        raise
    return explorer


def test_a_finished_watched_run_without_a_config_shows_its_own_name_and_start_is_off(tmp_path, wait_until):
    explorer = opened_finished_loop(tmp_path, wait_until)
    try:
        status = explorer.status
        assert status.run == "my-loop (Mine)", status.run
        assert status.step == 12 and status.total == 0  # no "of 2000": the loop's length is its own
        assert "svgp" not in status.html() and "of <span" not in status.html()
        assert explorer.buttons["start"].disabled and explorer.buttons["step"].disabled
        message = status.message
        assert "Start trains" not in message and "own loop" in message and "Reset" in message, message
        assert len(message) <= 200, (len(message), message)  # one whole sentence on the status's two lines
        assert explorer.data.dataset == "two-moons"  # the page's settings kept, not the stored defaults
        assert "stored no settings" in explorer.notice, explorer.notice
        assert set(explorer.curves.plots) == {"loss"}, set(explorer.curves.plots)  # nothing it never logged
        explorer.reset()  # ↺ Reset trains a new run here from the page's settings: Start is on again
        wait_until(lambda: explorer.session.trainer is not None and explorer.display.run_started
                   and not explorer.buttons["start"].disabled, explorer)
        assert explorer.status.run == "svgp on two-moons"
    finally:
        explorer.close()


def test_a_live_watched_run_with_a_config_shows_its_settings_and_only_what_it_logged(tmp_path, wait_until):
    config = RunConfig(data={"dataset": "digits", "subset": 200})
    with watch(Mine(), name="configured", config=config, data_dir=tmp_path) as run:
        for step in range(1, 6):
            run.log(step, loss=5.0 - step, elbo=step - 5.0)
        run.flush()
        explorer = Explorer(store=RunStore(tmp_path / "runs.sqlite"), run=run.run_id)
        explorer.__panel__()
        try:
            wait_until(lambda: len(explorer.curves.buffers.get("elbo").data) == 5
                       if "elbo" in explorer.curves.buffers else False, explorer)
            explorer.tick()
            assert explorer.status.run == "configured (svgp on digits)", explorer.status.run
            assert explorer.status.total == 0 and explorer.buttons["start"].disabled
            assert "still being trained by another process" in explorer.status.message
            assert explorer.data.subset == 200  # its stored settings are shown
            assert set(explorer.curves.plots) == {"elbo"}, set(explorer.curves.plots)  # no empty KL / test plots
        except BaseException:
            explorer.close()
            raise
    try:
        wait_until(lambda: "is now finished at step 5" in explorer.status.message, explorer)
        assert "Start trains" not in explorer.status.message, explorer.status.message
        assert explorer.buttons["start"].disabled
    finally:
        explorer.close()


def test_start_from_python_on_a_watched_run_trains_nothing_and_says_why(tmp_path, wait_until):
    """A notebook's `explorer.start()` is the Start button: on a watched run it would train the page's settings under
    the loop's run, so it is refused with the same sentence, and the run's curve stays the loop's."""
    explorer = opened_finished_loop(tmp_path, wait_until)
    try:
        explorer.start()
        # the refusal is said at once; a Start that went through builds and runs a trainer within a few ticks
        wait_until(lambda: "Start is off" in explorer.status.message or explorer.session.trainer is not None, explorer)
        for _ in range(20):
            explorer.tick()
            time.sleep(0.1)
        assert explorer.session.trainer is None, explorer.status.run
        assert explorer.status.run == "my-loop (Mine)", explorer.status.run
        assert "Start is off" in explorer.status.message and "Reset" in explorer.status.message, explorer.status.message
        assert loss_steps(explorer) == list(range(1, 13))
    finally:
        explorer.close()
