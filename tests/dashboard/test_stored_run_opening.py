"""Opening a stored run whose last checkpoint is older than its last step says how many steps continuing drops, and an
invariant run keeps its learned ranges' history from step 0."""
import time

from dashboard.explorer import Explorer
from dashboard.settings import RunSettings
from engine.train import RunStore, Trainer


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
    trainer.release("paused")
    explorer = Explorer(store=store)
    try:
        explorer.open_stored_run(trainer.run_id)
        deadline = time.time() + 60
        while time.time() < deadline and (explorer.feed.last_snapshot is None or not explorer._run_started):
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
