"""Which kernels each family takes, said the same way everywhere. The GP families, the RKHS machine (Zhang, Lee & Teh
2013: any twice-differentiable kernel, its derivatives by autograd where there is no closed form) and GWI's reference GP
(Wild, Hu & Sejdinovic 2022: any covariance function) take every registered kernel: the config accepts it, `invlab train
--help` lists it, the page's selector offers it, and it trains. The deep kernel processes take kernels on Gram matrices,
a kind of their own; a base kernel there is refused naming the ones they take. (A plugin's kernel in rkhs and gwi:
tests/test_plugins.py.)"""
from __future__ import annotations

import json
import sqlite3

import pytest

from invlab.cli import main
from invlab.errors import ConfigError
from invlab.kernels import kernel_names
from invlab.train import RunConfig


def help_choices(capsys, model: str, flag: str = "--kernel") -> list[str]:
    with pytest.raises(SystemExit):
        main(["train", "--model", model, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    return text.split(f"{flag} {{")[1].split("}")[0].split(",")


@pytest.mark.parametrize("model", ["rkhs", "gwi"])
def test_rkhs_and_gwi_offer_every_registered_kernel_on_the_command_line_and_the_page(capsys, model):
    from invlab.dashboard import Explorer

    assert help_choices(capsys, model) == kernel_names()
    explorer = Explorer(RunConfig(model=model), store=False)
    try:
        explorer.__panel__()
        assert explorer.page.model_group[0]._widgets["kernel"].options == kernel_names()
    finally:
        explorer.close()


@pytest.mark.parametrize("model, kernel, dataset", [
    ("rkhs", "matern52", "two-moons"), ("rkhs", "arccos1", "two-moons"),
    ("gwi", "matern52", "diabetes"), ("gwi", "polynomial", "two-moons")])
def test_rkhs_and_gwi_train_with_a_kernel_beyond_their_papers(tmp_path, monkeypatch, capsys, model, kernel, dataset):
    monkeypatch.setenv("INVLAB_DATA", str(tmp_path))
    extra = ["--reference-steps", "5"] if model == "gwi" else []
    code = main(["train", "--model", model, "--kernel", kernel, "--dataset", dataset, "--subset", "80",
                 "--steps", "3", "--eval-every", "0", "--quiet", *extra])
    assert code == 0, capsys.readouterr().err
    with sqlite3.connect(tmp_path / "runs.sqlite") as db:
        (config,), = db.execute("SELECT config FROM runs").fetchall()
    assert json.loads(config)["model_config"]["kernel"] == kernel


def test_a_base_kernel_in_a_deep_kernel_process_is_refused_naming_the_kernels_it_takes():
    from invlab.kernels.gram import GRAM_KERNELS

    with pytest.raises(ConfigError) as info:
        RunConfig(model="dkp_svgp", model_config={"kernel": "matern52"}).validate()
    message = str(info.value)
    assert "matern52" in message and all(name in message for name in GRAM_KERNELS), message
