"""The training thread pays only for what the page shows: views are computed only while the Training tab is open,
and their measured cost is kept to `VIEW_SHARE` of the thread's time; the history is handed over point by point."""
import threading
import time

import invlab.dashboard.session.training
from invlab.dashboard.session.scheduling import TrainingSlots
from invlab.dashboard.session.training import VIEW_SHARE, TrainingSession
from invlab.train import RunConfig


def small():
    return RunConfig(data={"dataset": "digits", "subset": 200, "test_subset": 100}, model_config={"num_inducing": 15},
                     train={"steps": 100_000, "eval_every": 0, "log_every": 5, "batch_size": 64})


def wait_for(condition, what, timeout=120.0):
    deadline = time.time() + timeout
    while not condition():
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


class Counted(invlab.dashboard.session.training.Trainer):
    """A Trainer whose views take `views_seconds` and are counted (as a slow family's would)."""

    views_seconds = 0.0
    times_lock = threading.Lock()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        report_snapshot = self.report.snapshot

        def snapshot(views=True, history=True, only=None):  # the report's, slowed and counted
            if views:
                time.sleep(self.views_seconds)
                with self.times_lock:
                    self.view_times.append(time.perf_counter())
            return report_snapshot(views=views, history=history, only=only)

        self.report.snapshot = snapshot


def session_with(monkeypatch, views_seconds):
    monkeypatch.setattr(Counted, "views_seconds", views_seconds)
    monkeypatch.setattr(Counted, "view_times", [], raising=False)
    monkeypatch.setattr(invlab.dashboard.session.training, "Trainer", Counted)
    return TrainingSession(small(), slots=TrainingSlots(1), view_interval=0.2, eval_interval=0)


def test_views_off_screen_are_not_computed_while_training(monkeypatch):
    session = session_with(monkeypatch, 0.0)
    try:
        session.views_wanted = False  # the page shows its Lessons or Compare tab
        session.commands.start()
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
        session.commands.start()
        wait_for(lambda: session.state == "running" and len(Counted.view_times) >= 2, "two views")
        start, seen = time.perf_counter(), len(Counted.view_times)
        time.sleep(5.0)
        spent = (len(Counted.view_times) - seen) * 0.1
        assert spent <= VIEW_SHARE * (time.perf_counter() - start) + 0.1  # one view more at the window's edge
        assert session.views_cost >= 0.1
    finally:
        session.stop(wait=True)


def test_the_page_asks_for_views_only_while_its_training_tab_is_open():
    from invlab.dashboard import Explorer

    explorer = Explorer(small(), store=None)
    try:
        explorer.__panel__()
        for tab, wanted in ((1, False), (3, False), (0, True), (2, False), (0, True)):
            explorer.page.pages.active = tab
            assert explorer.session.views_wanted is wanted, tab
    finally:
        explorer.close()


def next_snapshot(session, timeout=60.0):
    """The next snapshot the session hands the page."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        update = session.drain()
        if update.snapshot is not None:
            return update.snapshot
        time.sleep(0.02)
    raise AssertionError("no snapshot came")


def test_views_scrolled_away_are_left_out_and_one_coming_back_is_computed_at_once(monkeypatch):
    """The page says which views are on screen (`views_shown`): later snapshots hold only those (and any view new to
    the run); a view scrolled back is computed at the next step, not at the next interval."""
    session = session_with(monkeypatch, 0.0)
    session.view_interval = 3600.0  # only a view coming on screen (or a new run) makes views due here
    try:
        session.commands.start()
        wait_for(lambda: session.state == "running" and session.step > 5, "training")
        first = next(u.snapshot for u in iter(session.drain, None) if u.snapshot is not None)
        assert {"hyperparameters", "kuu_spectrum"} <= set(first.views)  # a new run: every view, for its panes
        session.views_shown = {"hyperparameters"}  # the others scrolled away
        assert set(next_snapshot(session).views) == {"hyperparameters"}
        session.views_shown = {"hyperparameters", "kuu_spectrum"}  # the spectrum scrolled back
        assert set(next_snapshot(session).views) == {"hyperparameters", "kuu_spectrum"}
        session.views_shown = {"kuu_spectrum"}  # fewer on screen: nothing new to compute, nothing due
        steps, before = session.step, len(Counted.view_times)
        wait_for(lambda: session.step > steps + 20, "training to go on")
        assert len(Counted.view_times) == before
    finally:
        session.stop(wait=True)


def test_the_watcher_maps_the_page_s_report_back_to_view_names():
    from invlab.dashboard.views.watch import ViewWatcher, view_class

    watcher = ViewWatcher()
    known = ["kuu_spectrum", "layer 1/gram", "posterior"]
    assert watcher.names(known) is None  # not reported: every view
    watcher.on_screen = " ".join(view_class(n)[len("invlab-view--"):] for n in ("layer 1/gram", "posterior"))
    assert watcher.names(known) == {"layer 1/gram", "posterior"}
    assert view_class("layer 1/gram") == "invlab-view--layer-1-gram"
    watcher.on_screen = ""
    assert watcher.names(known) == set()


def test_the_page_hands_the_views_on_screen_to_its_session():
    from invlab.dashboard import Explorer

    explorer = Explorer(small(), store=None)
    try:
        page = explorer.__panel__()
        assert explorer.view_watch in page.select(type(explorer.view_watch))  # on the page, whichever tab is shown
        explorer.feed.view_panes.update({"kuu_spectrum": None, "hyperparameters": None})
        explorer.view_watch.on_screen = "hyperparameters"
        assert explorer.session.views_shown == {"hyperparameters"}
    finally:
        explorer.feed.view_panes.clear()
        explorer.close()


def test_a_view_the_page_has_not_taken_yet_is_not_lost_to_a_smaller_snapshot(monkeypatch):
    """The watcher may report before the page has drawn any pane (nothing on screen): a snapshot of fewer views that
    comes before the page takes the first one keeps the first one's views, so every pane is still made."""
    session = session_with(monkeypatch, 0.0)
    session.view_interval = 3600.0
    try:
        session.commands.start()
        wait_for(lambda: session.state == "running" and session.step > 5, "training")
        session.views_shown = set()  # reported before any pane was drawn
        seen = len(Counted.view_times)
        wait_for(lambda: len(Counted.view_times) > seen, "a snapshot of the views on screen (none)")
        views = next_snapshot(session).views
        assert {"hyperparameters", "kuu_spectrum"} <= set(views)
    finally:
        session.stop(wait=True)
