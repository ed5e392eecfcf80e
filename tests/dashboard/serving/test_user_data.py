"""The user's own data in the dashboard without a browser: `Explorer(data=...)` with arrays, a DataFrame and a built
Dataset trains on exactly that data, the data box lists handed-over data and the readable files of the directories
the page may read, and a served page refuses data outside them."""
import numpy as np
import pytest
import torch
from sklearn.datasets import make_circles

from invlab.dashboard import Explorer
from invlab.dashboard.explorer.user_data import config_with_data, data_choices
from invlab.dashboard.serving.limits import ServerLimits
from invlab.data import hand_over, load
from invlab.errors import ConfigError, DataError
from invlab.train import RunConfig, RunStore

SMALL = {"steps": 200, "eval_every": 10, "log_every": 5, "batch_size": 64}


def _explorer(tmp_path, **kwargs):
    e = Explorer(RunConfig(model_config={"num_inducing": 10}, train=SMALL), store=RunStore(tmp_path / "runs.sqlite"),
                 **kwargs)
    e.__panel__()
    return e


def test_a_dataframe_trains_on_its_target_with_metrics_in_its_units(tmp_path, wait_until):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    a, b = rng.uniform(0, 10, 300), rng.uniform(-1, 1, 300)
    frame = pd.DataFrame({"area": a, "noise": b, "price": 1000.0 + 50.0 * a})  # price in its own units (~1250)
    e = _explorer(tmp_path, data=frame, target="price")
    try:
        assert e.settings.data.dataset.startswith("python:dataframe")
        assert e.settings.data.source_options == {"target": "price"}
        assert e.settings.data.dataset in e.page.data_group.controls["dataset"].box.options
        e.start()
        wait_until(lambda: e.session.trainer is not None and "test_rmse" in e.curves.buffers
                   and len(e.curves.buffers["test_rmse"].data), e)
        trainer = e.session.trainer
        assert trainer.dataset.task == "regression" and trainer.dataset.X_train.shape[1] == 2
        assert trainer.dataset.y_mean == pytest.approx(np.mean(1000.0 + 50.0 * a[:len(trainer.dataset.y_train)]),
                                                       rel=0.05)
        # the RMSE the page plots is in the price's units: an independent computation from the predictions
        X = trainer.dataset.X_test * trainer.dataset.x_std + trainer.dataset.x_mean
        truth = trainer.dataset.unscale_targets(trainer.dataset.y_test)
        with trainer.lock:
            mean = np.asarray(trainer.report.predict(X).mean).ravel()
            rmse = float(np.sqrt(np.mean((mean - truth) ** 2)))
        e.pause()
        plotted = e.curves.buffers["test_rmse"].data["test_rmse"]
        assert 0 < plotted.iloc[-1] < 500 and rmse < 500  # not standardised units (≈ 0.x) and not nonsense
        # the target's column names its units on the curve and on the predictions' axes
        assert e.curves.curve_plots["test_rmse"].figure.yaxis[0].axis_label == "test RMSE (price)"
        scatter = trainer.model.data_info
        assert scatter.target_name == "price" and scatter.input_names == ("area", "noise")
        from invlab.diagnostics import field_over_plane, predictions_against_truth

        X, y = torch.as_tensor(trainer.dataset.X_test), torch.as_tensor(trainer.dataset.y_test)
        with trainer.lock:
            view = predictions_against_truth(trainer.model, X, y)
            field = field_over_plane(trainer.model, X, y, resolution=8)
        assert (view.xlabel, view.ylabel) == ("true price", "predicted price (± 2 sd)")
        assert field.axis_names == ("area", "noise")
        # its hyper-parameters are those of the standardised data, and the view's title says so
        assert trainer.model.diagnostics(only=["hyperparameters"])["hyperparameters"].title == \
            "Hyper-parameters (of the standardised inputs and target)"
    finally:
        e.close()


def test_arrays_and_a_built_dataset_open_the_lab_on_them(tmp_path):
    X, y = make_circles(200, noise=0.05, factor=0.5, random_state=1)
    e = _explorer(tmp_path, data=(X, y))
    try:
        ds = e.settings.data.load()
        assert ds.num_classes == 2 and ds.num_train + ds.num_test == 200
        back = np.concatenate([ds.X_train, ds.X_test]) * ds.x_std + ds.x_mean  # in the arrays' own units
        np.testing.assert_allclose(np.sort(back[:, 0]), np.sort(X[:, 0]), atol=1e-10)
    finally:
        e.close()
    built = load("digits", classes=[3, 5], subset=100)
    e = _explorer(tmp_path, dataset=built)
    try:
        ds = e.settings.data.load()
        np.testing.assert_allclose(ds.X_train, built.X_train)  # the same split, images as they were
        assert ds.class_names == built.class_names and ds.num_test == built.num_test
    finally:
        e.close()


def test_wrong_combinations_are_refused_in_words():
    with pytest.raises(ConfigError, match="not both"):
        config_with_data(None, data=(np.zeros((3, 2)), np.zeros(3)), dataset=load("wine"))
    with pytest.raises(ConfigError, match="target="):
        config_with_data(None, target="price")
    with pytest.raises(DataError, match="hand over"):
        hand_over(np.zeros((3, 2)))
    with pytest.raises(DataError, match="no data named 'nobody'"):
        load("python:nobody")


def test_the_data_box_lists_readable_files_only_inside_the_allowed_directories(tmp_path):
    allowed, elsewhere = tmp_path / "allowed", tmp_path / "elsewhere"
    (allowed / "sub").mkdir(parents=True)
    elsewhere.mkdir()
    (allowed / "house.csv").write_text("a,b,price\n1,2,3\n4,5,6\n")
    (allowed / "sub" / "arrays.npz").write_bytes(b"")  # listed by its extension; read only when chosen
    (allowed / "notes.txt").write_text("not data")
    (elsewhere / "secret.csv").write_text("a,b\n1,2\n")
    choices = data_choices(ServerLimits(data_dirs=(str(allowed),)))
    assert f"csv:{(allowed / 'house.csv').resolve()}" in choices
    assert f"npz:{(allowed / 'sub' / 'arrays.npz').resolve()}" in choices
    assert not any("notes.txt" in c or "secret" in c for c in choices)
    assert choices[:3] == ["digits", "mnist", "rectangles"]  # the bundled names first
    limits = ServerLimits(data_dirs=(str(allowed),))
    with pytest.raises(Exception, match="inside the data directories"):
        limits.check(RunConfig(data={"dataset": f"csv:{elsewhere / 'secret.csv'}"}))


def test_the_task_selector_shows_for_a_table_and_its_choice_trains(tmp_path, wait_until):
    """The hint "give task='classification' to change it" named a Python argument the page had no control for. A
    table's Data tab now has a Task selector (hidden for the bundled digits); choosing regression for a target of a
    few whole numbers (inferred as classes) trains a regression, and the link carries the choice."""
    rng = np.random.default_rng(1)
    x1, x2 = rng.uniform(0, 1, 300), rng.uniform(0, 1, 300)
    rating = np.clip(np.round(1 + 4 * (0.6 * x1 + 0.4 * x2)), 1, 5).astype(int)  # 1–5 stars
    csv = tmp_path / "ratings.csv"
    csv.write_text("x1,x2,rating\n" + "\n".join(f"{a:.4f},{b:.4f},{r}" for a, b, r in zip(x1, x2, rating)) + "\n")
    e = _explorer(tmp_path)
    try:
        assert not e.page.task_control.select.visible  # digits: the task is fixed
        e.settings.data.dataset = f"csv:{csv}"
        assert e.page.task_control.select.visible and e.page.task_control.select.value == "auto"
        assert e.settings.data.load().task == "classification"  # inferred: five whole-number values
        e.page.task_control.select.value = "regression"
        assert e.settings.data.source_options == {"task": "regression"}
        assert "regression" in e.settings.query_string()  # what the address bar is written from
        e.start()
        wait_until(lambda: e.session.trainer is not None and "test_rmse" in e.curves.buffers
                   and len(e.curves.buffers["test_rmse"].data), e)
        assert e.session.trainer.dataset.task == "regression" and "test_error" not in e.curves.buffers
        e.pause()
        e.page.task_control.select.value = "auto"  # back to the inferred task: the option is dropped
        assert "task" not in e.settings.data.source_options
    finally:
        e.close()
