"""A run's diagnostics views in the run store: the latest snapshot of each view (not a history), in a compact JSON
form that holds only numbers, text and arrays of numbers, read back exactly; a stored row that is not one of the
engine's view types is skipped, never run. Written by `watch`'s `run.snapshot()` and by the Trainer's snapshots."""
from __future__ import annotations

import numpy as np

from invlab import diagnostics as dg
from invlab.train import RunConfig, RunStore, Trainer, watch


def every_kind_of_view() -> dict:
    """One view of each type, with data that does not survive rounding (float64 noise, NaN, ±inf, ints)."""
    rng = np.random.default_rng(0)
    return {
        "patches": dg.ImageGrid(title="Inducing patches, 6 of 40", images=rng.random((2, 3, 5, 5, 3)),
                                row_labels=["a", "b"], col_labels=["1", "2", "3"], description="colour"),
        "weights": dg.ImageGrid(title="Patch weights", images=rng.normal(size=(1, 1, 4, 4)), vrange=(-2.5, 2.5)),
        "kuu_spectrum": dg.Spectrum(title="Eigenvalues of Kuu", values=np.sort(rng.random(16)) ** 9, log=False),
        "kernel": dg.Heatmap(title="K", matrix=rng.normal(size=(3, 4)), xlabel="j", ylabel="i", symmetric=True),
        "field": dg.Field2D(title="P(class 1)", x=np.linspace(-1, 1, 7), y=np.linspace(0, 2, 5),
                            values=rng.random((5, 7)), points=rng.normal(size=(4, 2)),
                            point_labels=np.array([0, 1, -1, 1]), contour=0.5),
        "predictions": dg.Scatter(title="Test predictions", x=rng.normal(size=6), y=rng.normal(size=6),
                                  y_err=rng.random(6), xlabel="true", ylabel="predicted", identity=True),
        "ranges": dg.Curves(title="Ranges", series={"rotation": (np.arange(4), rng.random(4)),
                                                    "scale": (np.arange(4) * 2, np.array([1.0, np.nan, np.inf, -1]))},
                            ylabel="range (°)", logy=True, min_span=0.5, covers=("loss",),
                            labels={"rotation": "rotation range"}, legend=False),
        "hyperparameters": dg.Scalars(title="Hyper-parameters", values={"lengthscale": 0.123456789012345,
                                                                         "noise": float("nan")}),
    }


def assert_same_view(got, want) -> None:
    assert type(got) is type(want)
    for name in want.__dataclass_fields__:
        a, b = getattr(got, name), getattr(want, name)
        if isinstance(b, np.ndarray):
            assert isinstance(a, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape, name
            assert np.array_equal(a, b, equal_nan=True), name
        elif isinstance(b, dict) and b and isinstance(next(iter(b.values())), tuple):
            assert a.keys() == b.keys()
            for key in b:
                for x, y in zip(a[key], b[key]):
                    assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), (name, key)
        elif isinstance(b, dict):
            assert a.keys() == b.keys() and all(a[k] == b[k] or (a[k] != a[k] and b[k] != b[k]) for k in b), name
        else:
            assert a == b and type(a) is type(b), name


def test_every_view_type_round_trips_exactly_through_the_store(tmp_path):
    views = every_kind_of_view()
    with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = store.runs.create(RunConfig().to_json(), "svgp", "digits")
        store.views.save(run_id, 7, views)
        store.flush()
    with RunStore(tmp_path / "runs.sqlite") as store:
        stored = store.views.read(run_id)
    assert stored.step == 7 and list(stored.views) == list(views) and stored.skipped == []
    for name, view in views.items():
        assert_same_view(stored.views[name], view)


def test_only_the_latest_snapshot_of_each_view_is_kept(tmp_path):
    with RunStore(tmp_path / "runs.sqlite") as store:
        run_id = store.runs.create(RunConfig().to_json(), "svgp", "digits")
        for step in range(1, 6):
            store.views.save(run_id, step, {"spectrum": dg.Spectrum(values=np.full(3, float(step))),
                                             "noise": dg.Scalars(values={"noise": float(step)})})
            store.flush()
        stored = store.views.read(run_id)
        rows = store.connection.db.execute("SELECT count(*) FROM views WHERE run_id = ?", (run_id,)).fetchone()[0]
    assert rows == 2 and stored.step == 5
    assert stored.views["spectrum"].values.tolist() == [5.0, 5.0, 5.0]


def test_a_watched_loops_snapshot_stores_its_picture_views(tmp_path):
    grids = []

    class Mine:
        def diagnostics(self):
            grid = dg.ImageGrid(title=f"samples {len(grids)}", images=np.random.default_rng(len(grids)).random(
                (2, 2, 3, 3)))
            grids.append(grid)
            return {"samples": grid, "spectrum": dg.Spectrum(values=np.arange(1.0, 5.0))}

    with watch(Mine(), name="mine", data_dir=tmp_path) as run:
        run.log(3, loss=1.0)
        run.snapshot()
        with RunStore(tmp_path / "runs.sqlite") as reader:  # written while the loop still runs
            stored = reader.views.read(run.run_id)
        assert stored.step == 3 and stored.views["samples"].title == "samples 0"
        run.log(9, loss=0.5)
        run.snapshot()
    with RunStore(tmp_path / "runs.sqlite") as store:
        stored = store.views.read(run.run_id)
    assert stored.step == 9 and set(stored.views) == {"samples", "spectrum"}
    assert np.array_equal(stored.views["samples"].images, grids[-1].images)


def test_the_trainers_snapshots_store_its_views_with_the_run(tmp_path):
    config = RunConfig(model="svgp", data={"dataset": "digits", "subset": 200}, model_config={"num_inducing": 16},
                       train={"steps": 4, "batch_size": 50})
    with RunStore(tmp_path / "runs.sqlite") as store:
        trainer = Trainer(config, store=store)
        list(trainer.run(steps=2))
        snap = trainer.report.snapshot(views=True)
        list(trainer.run(steps=2))  # the run ends: what it stored is written
        stored = store.views.read(trainer.record.run_id)
    assert stored.views.keys() == snap.views.keys() and "kuu_spectrum" in stored.views
    assert np.array_equal(stored.views["kuu_spectrum"].values, snap.views["kuu_spectrum"].values)
