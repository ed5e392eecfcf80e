"""The Compare page follows a sweep's typed events (`invlab.sweeps.events.SweepEvent`): each run's row says where it
stands in the page's one vocabulary of state words, whatever happened to it (started, stepping, stored finished or
failed, never run), and the status line says how the sweep ended. No Dask: a runner stand-in hands the events over."""
import threading
from types import SimpleNamespace

from invlab.dashboard.compare import ComparePage
from invlab.dashboard.state.settings import RunSettings
from invlab.sweeps import SweepSpec
from invlab.sweeps.events import SweepEvent
from invlab.train import RunConfig
from invlab.train.states import RunStatus, StudyState, SweepEventKind


def small_spec() -> SweepSpec:
    data = {"dataset": "symmetric-2d", "seed": 0, "source_options": {"num_train": 30, "num_test": 50}}
    train = {"steps": 20, "batch_size": 0, "learning_rate": 0.03, "eval_every": 0, "log_every": 5}
    return SweepSpec(name="tiny", base=RunConfig("svgp", data, {"num_inducing": 5}, train),
                     vary={"model.num_inducing": [4, 8]}, seeds=[0, 1])


class Runner:
    """What `SweepFollowing` drains from a sweep's background thread, handed over by the test."""

    def __init__(self):
        self.sweep_id, self.stop_event, self.lost = None, threading.Event(), ""
        self.events, self.finished, self.error, self.progress = [], False, None, None

    def drain(self):
        events, self.events = self.events, []
        return self.progress, events, self.finished, self.error


def test_a_sweep_with_a_failed_run_shows_each_runs_state_in_the_pages_words():
    spec = small_spec()
    planned = spec.runs()
    keys = [run.key for run in planned]
    page = ComparePage(RunSettings())
    runner = Runner()
    page.following.follow(runner, planned, list(spec.vary))
    runner.events = [SweepEvent(SweepEventKind.STARTED, key=keys[0]),
                     SweepEvent(SweepEventKind.STEP, key=keys[0], step=5, steps=20, elbo=-12.5),
                     SweepEvent(SweepEventKind.STORED, key=keys[1], status=RunStatus.FAILED, message="boom"),
                     SweepEvent(SweepEventKind.STORED, key=keys[2], status=RunStatus.FINISHED, run_id=7)]
    runner.progress = SimpleNamespace(done=1, total=4, running=1, failed=1, best_elbo=-10.0, eta_s=3.0)
    page.following.tick()
    status = dict(zip(page.following.table.value["step"].index, page.following.table.value["status"]))
    assert [status[i] for i in range(4)] == ["running", "failed", "finished", "queued"]
    assert page.state == StudyState.RUNNING and "1 failed" in page.message

    runner.finished = True
    page.following.tick()
    assert list(page.following.table.value["status"]) == ["not run", "failed", "finished", "not run"]
    assert page.state == StudyState.FINISHED
    shown = page.following.status_pane.object
    assert 'data-field="sweep-state">finished<' in shown


def test_a_sweep_event_travels_as_plain_data_and_comes_back_typed():
    event = SweepEvent(SweepEventKind.STORED, key="a", status=RunStatus.FAILED, message="boom", run_id=3)
    wire = event.to_dict()
    assert type(wire["kind"]) is str and type(wire["status"]) is str  # what Dask's messages carry
    back = SweepEvent.from_dict(wire)
    assert back == event and back.kind is SweepEventKind.STORED and back.status is RunStatus.FAILED
    assert SweepEvent.from_dict({"kind": "something else"}) is None  # what no sweep tells is left out
    assert SweepEvent(SweepEventKind.STEP, key="a").run_status is RunStatus.RUNNING
    assert SweepEvent(SweepEventKind.STARTED, key="a").run_status is RunStatus.RUNNING
    assert SweepEvent(SweepEventKind.STORED, key="a", status=RunStatus.FINISHED).run_status is RunStatus.FINISHED
    assert SweepEvent(SweepEventKind.PLANNED, runs=3).run_status is None
