"""The training thread pays only for what the page shows: views are computed only while the Training tab is open,
and their measured cost is kept to `VIEW_SHARE` of the thread's time; the history is handed over point by point."""
import threading
import time

import dashboard.session
from dashboard.scheduling import TrainingSlots
from dashboard.session import VIEW_SHARE, TrainingSession
from engine.train import RunConfig


def small():
    return RunConfig(data={"dataset": "digits", "subset": 200, "test_subset": 100}, model_config={"num_inducing": 15},
                     train={"steps": 100_000, "eval_every": 0, "log_every": 5, "batch_size": 64})


def wait_for(condition, what, timeout=120.0):
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


class Counted(dashboard.session.Trainer):
    """A Trainer whose views take `views_seconds` and are counted (as a slow family's would)."""

    views_seconds = 0.0
    lock = threading.Lock()

    def snapshot(self, views=True, history=True):
        if views:
            time.sleep(self.views_seconds)
            with self.lock:
                self.view_times.append(time.perf_counter())
        return super().snapshot(views=views, history=history)


def session_with(monkeypatch, views_seconds):
    monkeypatch.setattr(Counted, "views_seconds", views_seconds)
    monkeypatch.setattr(Counted, "view_times", [], raising=False)
    monkeypatch.setattr(dashboard.session, "Trainer", Counted)
    return TrainingSession(small(), slots=TrainingSlots(1), view_interval=0.2, eval_interval=0)


def test_views_off_screen_are_not_computed_while_training(monkeypatch):
    session = session_with(monkeypatch, 0.0)
    try:
        session.views_wanted = False  # the page shows its Lessons or Compare tab
        session.start()
        wait_for(lambda: session.state == "running" and session.step > 20, "training")
        session.drain()  # what the build showed (the fresh model's views, once)
        before, steps_before, t0 = len(Counted.view_times), session.step, time.perf_counter()
        wait_for(lambda: session.step >= steps_before + 20 and time.perf_counter() - t0 > 1.5,
                 "training to go on for 1.5 s, many view intervals")
        assert len(Counted.view_times) == before  # ... without a single view
        update = session.drain()
        assert update.points["loss"][0] and update.snapshot is None
        session.views_wanted = True  # back on the Training tab: views come again at their interval
        wait_for(lambda: len(Counted.view_times) >= before + 3, "views once the page shows them")
        snapshot = next(u.snapshot for u in iter(session.drain, None) if u.snapshot is not None)
        assert snapshot.views and snapshot.history == {}  # the page has the history point by point already
    finally:
        session.stop(wait=True)


def test_slow_views_are_kept_to_their_share_of_the_training_thread(monkeypatch):
    """Views of 0.1 s asked for every 0.2 s would take a third of the thread; they come every 0.1 / VIEW_SHARE s."""
    session = session_with(monkeypatch, 0.1)
    try:
        session.start()
        wait_for(lambda: session.state == "running" and len(Counted.view_times) >= 2, "two views")
        start, seen = time.perf_counter(), len(Counted.view_times)
        time.sleep(5.0)
        spent = (len(Counted.view_times) - seen) * 0.1
        assert spent <= VIEW_SHARE * (time.perf_counter() - start) + 0.1  # one view more at the window's edge
        assert session.views_cost >= 0.1
    finally:
        session.stop(wait=True)


def test_the_page_asks_for_views_only_while_its_training_tab_is_open():
    from dashboard import Explorer

    explorer = Explorer(small(), store=None)
    try:
        explorer.__panel__()
        for tab, wanted in ((1, False), (3, False), (0, True), (2, False), (0, True)):
            explorer.pages.active = tab
            assert explorer.session.views_wanted is wanted, tab
    finally:
        explorer.close()
