"""The user's own data through every route: `invlab train` on a CSV, an npz file and an image folder (real processes),
`invlab runs`, `--resume`; predictions in the data's own units for every family that takes tabular data, checked
against a hand computation from the Dataset's scalers; and a run that knows its data (checkpoints of hand-built and
DataFrame data, resume refused after the file changed)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from invlab.data import Dataset, identity, load
from invlab.errors import ConfigError, DataError
from invlab.models.base import seeded
from invlab.train import RunConfig, RunStore, Trainer, open_run
from invlab.train.states import RunStatus

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def invlab(*args, data_dir):
    env = dict(os.environ, INVLAB_DATA=str(data_dir), PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, "-m", "invlab", *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=ROOT)


def house_csv(path, rows=80, seed=0):
    """price ≈ 50 + 3·x1 − x2 + noise, in its own units."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(rows, 2)) * [2.0, 5.0] + [10.0, -3.0]
    y = 50 + 3 * X[:, 0] - X[:, 1] + 0.3 * rng.normal(size=rows)
    path.write_text("x1,x2,price\n" + "".join(f"{a:.6f},{b:.6f},{c:.6f}\n" for (a, b), c in zip(X, y)))
    return X, y


def test_csv_trains_lists_resumes_and_reports_in_the_targets_units(tmp_path):
    house_csv(tmp_path / "house.csv")
    data = tmp_path / "data"
    first = invlab("train", "--dataset", f"csv:{tmp_path / 'house.csv'}", "--steps", "20", "--num-inducing", "10",
                   "--batch-size", "0", "--learning-rate", "0.05", "--quiet", data_dir=data)
    assert first.returncode == 0, first.stderr
    assert "task is regression" in first.stderr  # the inferred task is said
    summary = first.stdout.strip().splitlines()[-1]
    assert summary.startswith("run 1 | svgp on house.csv | step 20") and "NLPD" in summary
    rmse = float(re.search(r"test RMSE ([0-9.e+-]+)", summary).group(1))
    listed = invlab("runs", data_dir=data)
    assert listed.returncode == 0 and re.search(r"^\s*1\s+svgp\s+house\.csv\s+finished\s+20\s", listed.stdout, re.M)
    with RunStore(data / "runs.sqlite") as store:
        stored = RunConfig.from_json(store.runs.get(1).config)
        _, checkpoint = store.checkpoints.latest(1)
    assert stored.data_identity["source"] == f"csv:{tmp_path / 'house.csv'}"
    assert stored.data_identity["shapes"]["X_train"] == [60, 2] and stored.data_identity["mtime"] > 0
    # the printed RMSE is in the target's units: the reloaded model scores the same from its own predictions
    again = Trainer.from_checkpoint(checkpoint)
    ds = again.dataset
    X_test, y_test = ds.X_test * ds.x_std + ds.x_mean, ds.unscale_targets(ds.y_test)
    by_hand = float(np.sqrt(np.mean((again.report.predict(X_test).y_mean[:, 0].numpy() - y_test) ** 2)))
    assert by_hand == pytest.approx(rmse, rel=1e-3) and by_hand < np.std(y_test)  # learned something, in units
    resumed = invlab("train", "--resume", "1", "--steps", "30", "--quiet", data_dir=data)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming run 1 at step 20 of 30" in resumed.stderr and "step 30" in resumed.stdout


def test_npz_and_image_folder_routes(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    np.savez(tmp_path / "points.npz", X=rng.normal(size=(60, 3)), y=np.arange(60) % 2)
    data = tmp_path / "data"
    npz = invlab("train", "--dataset", str(tmp_path / "points.npz"), "--steps", "3", "--num-inducing", "5",
                 "--quiet", data_dir=data)
    assert npz.returncode == 0, npz.stderr
    assert "svgp on points.npz" in npz.stdout and "test error" in npz.stdout
    for c, name in enumerate(["horizontal", "vertical"]):
        (tmp_path / "pics" / name).mkdir(parents=True)
        for i in range(8):
            image = np.zeros((8, 8), np.uint8)
            if c == 0:
                image[i % 8, :] = 255
            else:
                image[:, i % 8] = 255
            Image.fromarray(image).save(tmp_path / "pics" / name / f"{i}.png")
    help_text = invlab("train", "--help", data_dir=data).stdout
    assert "conv-invariant" in help_text
    conv = invlab("train", "--dataset", f"images:{tmp_path / 'pics'}", "--model", "conv-invariant", "--patch-size", "3",
                  "--num-inducing", "8", "--steps", "3", "--quiet", data_dir=data)
    assert conv.returncode == 0, conv.stderr
    assert "conv-invariant on pics" in conv.stdout and "test error" in conv.stdout


def regression_data():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(70, 2)) * [3.0, 0.5] + [20.0, 1.0]
    y = 50 + 2 * X[:, 0] + 10 * X[:, 1] + rng.normal(size=70)
    return X, y


TABULAR_FAMILIES = ["svgp", "gwi", "rkhs", "nngp", "diwp", "dkp_svgp", "invariant"]


@pytest.mark.parametrize("family", TABULAR_FAMILIES)
def test_predictions_come_back_in_the_targets_units(family):
    X, y = regression_data()
    ds = load((X, y), seed=1)
    config = {"num_inducing": 10} if family not in ("gwi", "rkhs") else {}
    try:
        trainer = Trainer(RunConfig(model=family, model_config=config, train={"steps": 3, "eval_every": 0}),
                          dataset=ds)
    except ConfigError as err:
        pytest.skip(f"{family} does not take 2-D tabular data: {err}")
    for _ in range(3):
        trainer.step()
    X_new = X[:7]  # the data's own units
    with seeded(0):
        pred = trainer.report.predict(X_new)
    with seeded(0):
        scaled = trainer.model.predict_standardised(torch.as_tensor((X_new - ds.x_mean) / ds.x_std))
    assert torch.allclose(pred.y_mean, scaled.y_mean * ds.y_std + ds.y_mean, rtol=1e-10, atol=1e-8)
    assert torch.allclose(pred.y_var, scaled.y_var * ds.y_std ** 2, rtol=1e-10, atol=1e-8)
    assert 30 < float(pred.y_mean.mean()) < 120  # the target's units, not standardised ones
    with seeded(0):
        as_float32 = trainer.model.predict(torch.as_tensor(X_new, dtype=torch.float32))  # was: a dtype error
    assert torch.allclose(as_float32.y_mean, pred.y_mean, rtol=1e-4)
    upper = pred.quantile(0.975)
    assert torch.allclose(upper, pred.y_mean + 1.959964 * pred.y_var.sqrt(), rtol=1e-5)


def test_the_metrics_and_predictions_agree_in_units():
    X, y = regression_data()
    trainer = Trainer(RunConfig(model_config={"num_inducing": 20}, train={"steps": 60, "learning_rate": 0.05,
                                                                          "batch_size": 0}), dataset=load((X, y)))
    list(trainer.run())
    ds = trainer.dataset
    pred = trainer.report.predict(ds.X_test * ds.x_std + ds.x_mean).y_mean[:, 0].numpy()
    rmse = float(np.sqrt(np.mean((pred - ds.unscale_targets(ds.y_test)) ** 2)))
    assert trainer.report.last_metrics["test_rmse"] == pytest.approx(rmse, rel=1e-9)
    assert rmse < 0.5 * np.std(y)  # the reported case: a hand-built y ≈ 50 set gave RMSE 39 unscaled


def circles(seed):
    from sklearn.datasets import make_circles

    X, y = make_circles(80, noise=0.05, factor=0.5, random_state=seed)
    return Dataset("circles", X[:60], y[:60], X[60:], y[60:], num_classes=2)


def test_a_checkpoint_of_hand_built_data_reloads_only_onto_data_given(tmp_path):
    ds = circles(0)
    trainer = Trainer(RunConfig(model_config={"num_inducing": 8}, train={"steps": 5, "eval_every": 0}), dataset=ds)
    for _ in range(5):
        trainer.step()
    path = trainer.save_checkpoint(tmp_path / "c.pt")
    with pytest.raises(DataError, match="hand-built dataset 'circles'"):
        Trainer.from_checkpoint(path)  # was: silently two-moons
    same = Trainer.from_checkpoint(path, dataset=circles(0))
    assert same.resume_notes == [] and same.step_count == 5
    X = np.random.default_rng(0).normal(size=(5, 2))
    assert torch.allclose(same.report.predict(X).probs, trainer.report.predict(X).probs)
    other = Trainer.from_checkpoint(path, dataset=circles(1))  # same shapes, other points: allowed, recorded
    assert other.config.data_identity["hash"] == identity(other.dataset)["hash"] != identity(ds)["hash"]
    assert "continues on" in other.resume_notes[0]


def test_a_stored_dataframe_run_resumes_with_its_data_and_records_it(tmp_path):
    import pandas as pd

    X, y = regression_data()
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1], "price": y})
    with RunStore(tmp_path / "runs.sqlite") as store:
        trainer = Trainer(RunConfig(model_config={"num_inducing": 8}, train={"steps": 4, "eval_every": 0}),
                          store=store, dataset=load(frame, target="price"))
        list(trainer.run())
        stored = RunConfig.from_json(store.runs.get(trainer.record.run_id).config).data_identity
        assert stored["name"] == "dataframe" and stored["shapes"]["X_train"] == [52, 2]
        with pytest.raises(DataError, match="pass that data as dataset="):
            open_run(store, trainer.record.run_id).trainer
        again = open_run(store, trainer.record.run_id, dataset=load(frame, target="price"),
                         train={"steps": 6}).trainer
        assert again.step_count == 4 and again.resume_notes == []
        again.record.release(RunStatus.PAUSED)  # one writer per run: give it back before resuming it once more
        frame.loc[0, "price"] += 1.0
        changed = open_run(store, trainer.record.run_id, dataset=load(frame, target="price")).trainer
        assert "continues on" in changed.resume_notes[0]
        recorded = RunConfig.from_json(store.runs.get(trainer.record.run_id).config).data_identity
        assert recorded["hash"] == identity(changed.dataset)["hash"] != stored["hash"]


def test_a_loaded_file_given_as_dataset_names_itself_in_the_config(tmp_path):
    house_csv(tmp_path / "house.csv")
    ds = load(f"csv:{tmp_path / 'house.csv'}", subset=30)
    trainer = Trainer(RunConfig(model_config={"num_inducing": 5}, train={"steps": 1}), dataset=ds)
    assert trainer.config.data["dataset"] == f"csv:{tmp_path / 'house.csv'}" and trainer.config.data["subset"] == 30
    path = trainer.save_checkpoint(tmp_path / "h.pt")
    assert Trainer.from_checkpoint(path).dataset.num_train == 30  # reloaded from the file, by itself


def test_diabetes_predictions_are_in_disease_progression_units():
    """The reported case: `Trainer.predict` gave standardised means (−0.469) for diabetes' raw inputs."""
    from sklearn.datasets import load_diabetes

    raw = load_diabetes()
    trainer = Trainer(RunConfig(data={"dataset": "diabetes"}, model_config={"num_inducing": 30},
                                train={"steps": 40, "learning_rate": 0.05, "eval_every": 0}))
    list(trainer.run())
    pred = trainer.report.predict(raw.data[:50]).y_mean[:, 0].numpy()  # the features as scikit-learn gives them
    assert 100 < pred.mean() < 200 and np.corrcoef(pred, raw.target[:50])[0, 1] > 0.5
