"""What the convolutional families' picture views hold and say: the patch-weight map and the
hyper-parameter table show the same learned weights and say how they relate to the kernel's w_p; colour inducing
patches are drawn in colour; a grid that shows some of the inducing points says how many of how many."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from invlab.train import RunConfig, Trainer

SMALL = {"subset": 60, "test_subset": 20}


def views_of(model: str, dataset: str, subset: int = 60, **model_config):
    """(trainer, its views) for a small model of `model` on `subset` points of `dataset`, before training."""
    trainer = Trainer(RunConfig(model=model, data={"dataset": dataset, **SMALL, "subset": subset},
                                model_config=model_config,
                                train={"batch_size": 20}))
    return trainer, trainer.report.snapshot(views=True).views


def test_the_patch_weight_map_and_the_table_show_the_same_learned_weights_and_say_what_they_are():
    trainer, _ = views_of("conv-weighted", "rectangles", num_inducing=8, patch_size=3)
    kernel = trainer.model.conv_parts()[1]
    v = torch.linspace(-3.0, 5.0, kernel.weights().numel(), dtype=torch.float64)
    kernel.weights.assign(v)
    views = trainer.report.snapshot(views=True).views
    grid, table = views["patch_weights"], views["hyperparameters"].values
    (name, mean), = [(k, x) for k, x in table.items() if "weights (mean of" in k]
    shown = np.asarray(grid.images)
    assert shown.size == v.numel() and np.allclose(np.sort(shown.ravel()), v.numpy())  # the learned v_p themselves
    assert mean == pytest.approx(float(shown.mean()))  # the table's row is the mean of the map
    assert grid.vrange[1] == pytest.approx(5.0)  # the colour bar spans the values drawn
    P = v.numel()
    assert "v_p" in grid.title and f"mean of {P}" in grid.description
    assert "w_p = s·v_p" in grid.description and f"s = 1/{P}" in grid.description


@pytest.mark.parametrize("channel", [0, 2])
def test_colour_inducing_patches_are_drawn_in_colour_by_the_channels_they_serve(channel):
    trainer, views = views_of("conv-colour", "photo-patches", num_inducing=12, colour="multi-channel")
    model = trainer.model
    inducing, _, start = model.conv_parts()
    M = inducing.num_patches
    with torch.no_grad():  # inducing outputs in one colour channel only: every patch serves that channel
        q_mu = torch.zeros_like(model.q.q_mu)
        rows = slice(start + channel * M, start + (channel + 1) * M)
        q_mu[rows] = torch.randn(q_mu[rows].shape, generator=torch.Generator().manual_seed(0), dtype=q_mu.dtype)
        model.q.q_mu.copy_(q_mu)
    grid = trainer.report.snapshot(views=True).views["inducing_patches"]
    images = np.asarray(grid.images)
    assert images.ndim == 5 and images.shape[-1] == 3  # colour, not grey
    patches = images.reshape(-1, *images.shape[-3:])[:M]  # [M, h, w, 3]
    others = [c for c in range(3) if c != channel]
    assert np.abs(patches[..., channel]).max() > 0 and np.all(patches[..., others] == 0)
    assert "channel" in grid.description
    fresh = views["inducing_patches"]  # before training no channel is favoured: grey, in colour form
    assert np.allclose(fresh.images[..., 0], fresh.images[..., 1]) and np.allclose(fresh.images[..., 1],
                                                                                    fresh.images[..., 2])


@pytest.mark.parametrize("model, dataset, config, total, title", [
    ("conv-weighted", "rectangles", {"num_inducing": 40}, 40, "inducing_patches"),
    ("svgp", "digits", {"num_inducing": 100}, 100, "inducing_inputs"),
    ("conv-weighted-rbf", "digits", {"num_inducing": 10, "num_inducing_rbf": 64}, 64, "inducing_images"),
])
def test_a_grid_of_some_of_the_inducing_points_says_how_many_of_how_many(model, dataset, config, total, title):
    _, views = views_of(model, dataset, subset=150, **config)
    grid = views[title]
    assert f"32 of {total}" in grid.title


def test_a_grid_of_all_the_inducing_points_says_so():
    _, views = views_of("conv-weighted", "rectangles", num_inducing=20)
    assert "all 20" in views["inducing_patches"].title
