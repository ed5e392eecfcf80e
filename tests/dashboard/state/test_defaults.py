"""The page's per-family defaults: every family has them, and each is a run the engine accepts."""
import pytest

from invlab.dashboard.state.defaults import FAMILY_DATASETS, FAMILY_DEFAULTS, page_run_config
from invlab.data.sources import resolve
from invlab.models import get_model, model_names
from invlab.train import TrainConfig


def test_every_family_has_page_defaults_with_its_data_set():
    assert set(FAMILY_DEFAULTS) == set(model_names())
    for family, spec in FAMILY_DEFAULTS.items():
        assert set(spec) == {"data", "model", "train"}, family
        assert FAMILY_DATASETS[family] == spec["data"]["dataset"]


@pytest.mark.parametrize("family", model_names())
def test_page_defaults_are_valid_and_suit_the_family(family):
    config = page_run_config(family).validate()  # refuses unknown names and out-of-bounds values
    spec, source = get_model(family), resolve(config.data["dataset"])
    assert source.task in spec.tasks
    assert source.kind == "image" or not spec.image_only
    train = config.train_config()
    assert train.eval_every == 0  # the page evaluates by wall time
    assert train.eval_size < TrainConfig.param.eval_size.default  # one evaluation stays short


def test_another_data_set_drops_the_familys_data_options():
    config = page_run_config("conv-weighted", dataset="digits")
    assert config.data == {"dataset": "digits"}
    assert config.train["batch_size"] == FAMILY_DEFAULTS["conv-weighted"]["train"]["batch_size"]
