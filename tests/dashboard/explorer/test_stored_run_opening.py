"""Opening a stored run whose last checkpoint is older than its last step says how many steps continuing drops, and an
invariant run keeps its learned ranges' history from step 0."""
import time

from invlab.dashboard.explorer.explorer import Explorer
from invlab.dashboard.state.settings import RunSettings
from invlab.train import RunStore, Trainer


def test_opening_a_run_past_its_checkpoint_says_what_continuing_drops(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite")
    settings = RunSettings()
    settings.apply_query({"model": "invariant", "model.num_inducing": "10", "model.num_samples": "2",
                          "data.subset": "150", "data.test_subset": "60", "train.learning_rate": "0.02",
                          "train.steps": "1000", "train.batch_size": "32"})
    trainer = Trainer(settings.run_config(), store=store)
    for _ in trainer.run(steps=20):
        pass
    trainer.save_checkpoint()
    for _ in trainer.run(steps=7):  # 7 more steps, never checkpointed (a killed process)
        pass
    trainer.record.release("paused")
    explorer = Explorer(store=store)
    try:
        explorer.open_stored_run(trainer.record.run_id)
        deadline = time.time() + 60
        while time.time() < deadline and (explorer.feed.last_snapshot is None or not explorer.display.run_started):
            time.sleep(0.2)
            explorer.tick()
        status = explorer.status_values()
        assert status["step"] == 20
        assert "the 7 steps after it (to step 27)" in status["message"], status["message"]
        assert status["learning_rate"] == 0.02 and status["total"] == 1000
        ranges = explorer.feed.last_snapshot.views["augmentation_history"].series["rotation"][0]
        assert ranges[0] == 10 and ranges[-1] == 20, ranges  # from the run's start, as logged
    finally:
        explorer.close()


def two_pages(tmp_path):
    """Two pages of one server on one store: the first set to train a small run for long, the second blank."""
    store = RunStore(tmp_path / "runs.sqlite")
    settings = RunSettings()
    settings.apply_query({"data.subset": "200", "data.test_subset": "100", "model.num_inducing": "10",
                          "train.steps": "100000"})
    return Explorer(settings.run_config(), store=store), Explorer(store=store)


def test_a_run_another_page_of_this_server_trains_is_followed_and_said_so_in_the_pages_words(tmp_path):
    """A second tab on a run the first tab trains: the page says another page of this server trains it and that its
    points are drawn here, not that another process should be stopped with kill (the server's own process)."""
    first, second = two_pages(tmp_path)
    try:
        first.start()
        deadline = time.time() + 60
        while time.time() < deadline and first.session.step < 3:
            time.sleep(0.1)
        second.open_stored_run(first.session.opened.run_id)
        while time.time() < deadline and "opened" not in second.status_values()["message"]:
            time.sleep(0.1)
            second.tick()
        message = second.status_values()["message"]
        assert "another page of this server" in message and "drawn here" in message, message
        assert "process" not in message and "kill" not in message, message
    finally:
        first.close()
        second.close()


def _wait(explorer, done, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline and not done():
        time.sleep(0.1)
        explorer.tick()
    return done()


def test_start_on_a_run_another_page_took_back_follows_that_page_instead_of_naming_the_servers_process(tmp_path):
    """Two tabs on one run: the second opened it while the first was paused (so it could continue it), then the first
    went on training. The second's ▶ Start does not tell a web user to kill the server's own process: it says
    another page of this server trains the run and draws that page's new points here."""
    first, second = two_pages(tmp_path)
    try:
        first.start()
        assert _wait(first, lambda: first.session.step >= 3)
        first.pause()
        assert _wait(first, lambda: first.session.state == "paused")
        run_id = first.session.opened.run_id
        second.open_stored_run(run_id)
        assert _wait(second, lambda: "Start continues it" in second.status_values()["message"])
        first.start()
        assert _wait(first, lambda: first.session.state == "running")
        second.start()
        assert _wait(second, lambda: "another page of this server" in second.status_values()["message"])
        message = second.status_values()["message"]
        assert f"Start did not train run {run_id} here" in message and "drawn here" in message, message
        assert "kill" not in message and "pid" not in message, message
        step = second.session.step
        assert _wait(second, lambda: second.session.step > step, timeout=30)  # the first page's steps, followed
        assert first.session.state == "running" and second.session.opened.run_id == run_id
    finally:
        first.close()
        second.close()
