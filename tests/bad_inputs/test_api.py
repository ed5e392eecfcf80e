"""The API calls of the published list, the predictor's refusals and the checkpoint loader's."""

import os
import sys

import numpy as np
import pytest
import torch

from invlab.errors import InvlabError
from tests.bad_inputs.api_cases import API, _digits_trainer, _nan_images
from tests.bad_inputs.worlds import setup_corrupt_store


@pytest.fixture(scope="module")
def trainer():
    return _digits_trainer()




@pytest.mark.parametrize("case", list(API))
def test_api_call(case):
    call, says = API[case]
    with pytest.raises(InvlabError) as info:
        call()
    message = str(info.value)
    assert all(w in message for w in says), message
    assert "\n" not in message.strip()


PREDICT = {
    "predict-wrong-shape": (lambda: np.zeros((3, 64)), ("(64,)", "(1, 8, 8)")),
    "predict-one-point-no-batch": (lambda: np.zeros((1, 8, 8)), ("(8, 8)",)),
    "predict-nan": (lambda: _nan_images(3, [(0, 0, 1, 1), (2, 0, 4, 4)]), ("2 non-finite", "X")),
    "predict-inf": (lambda: np.full((2, 1, 8, 8), np.inf), ("128 non-finite",)),
    "predict-text": (lambda: np.full((2, 1, 8, 8), "a"), ("numbers",)),
}


@pytest.mark.parametrize("case", list(PREDICT))
def test_predict_refuses(case, trainer):
    make, says = PREDICT[case]
    with pytest.raises(InvlabError) as info:
        trainer.report.predict(make())
    assert all(w in str(info.value) for w in says), str(info.value)


def test_predict_accepts_float32_and_lists(trainer):
    """Valid: any real dtype, a list of lists, or a tensor is converted to the trainer's dtype."""
    X = np.random.default_rng(0).random((4, 1, 8, 8))
    ref = trainer.report.predict(X).probs
    assert torch.allclose(trainer.report.predict(X.astype(np.float32)).probs, ref, atol=1e-5)
    assert torch.allclose(trainer.report.predict(X.tolist()).probs, ref)
    assert torch.allclose(trainer.report.predict(torch.as_tensor(X)).probs, ref)


def test_inducing_points_over_n_are_announced_not_silent():
    """M > N is a documented valid behaviour: the model uses M = N, and the trainer says so in its warning."""
    trainer = _digits_trainer(num_inducing=500)
    assert trainer.model.Z.shape[0] == 60 if hasattr(trainer.model, "Z") else True
    assert "num_inducing=500" in (trainer.last_warning or "") and "60 training points" in trainer.last_warning


def test_checkpoint_errors_never_suggest_unsafe_loading(tmp_path):
    from invlab.train.checkpoint import CheckpointError, load_checkpoint

    path = tmp_path / "evil.pt"
    torch.save({"format": 1, "fn": os.getcwd}, path)
    with pytest.raises(CheckpointError) as info:
        load_checkpoint(path)
    assert "weights_only" not in str(info.value) and "evil.pt" in str(info.value)


def test_checkpoint_missing_keys_are_named(tmp_path):
    from invlab.train.checkpoint import CheckpointError, load_checkpoint

    path = tmp_path / "partial.pt"
    torch.save({"format": 1, "model": {}, "step": 3, "config": "{}"}, path)
    with pytest.raises(CheckpointError, match="optimizer") as info:
        load_checkpoint(path)
    assert "rng" in str(info.value)


def test_no_case_prints_a_traceback_in_a_real_process(tmp_path):
    """The console entry itself (not only `main`) turns a store fault into a message: one subprocess."""
    import subprocess

    setup_corrupt_store(tmp_path)
    env = dict(os.environ, INVLAB_DATA=str(tmp_path / "data"))
    out = subprocess.run([sys.executable, "-m", "invlab", "runs"], capture_output=True, text=True, env=env,
                         timeout=120)
    assert out.returncode == 1 and "Traceback" not in out.stderr and "move it aside" in out.stderr
    assert (tmp_path / "data" / "runs.sqlite").read_bytes().startswith(b"this is not a database")  # untouched
