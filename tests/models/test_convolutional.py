"""Convolutional GPs: the SVGP core with inducing patches and blocks, checked against independent computations.

- With a finite set of possible patches (binary images) and every one of them an inducing patch, u determines f,
  so the ELBO at Titsias' optimal q(u) is the exact log marginal likelihood of the convolutional GP — for the
  weighted, the weighted + RBF (blocks) and the multi-channel (shared patches) kernels.
- The block-diagonal q(u) ("mean-field", van der Wilk, Rasmussen & Hensman 2017 app. C) equals a full q(u) that is block
diagonal, and its
  KL equals torch.distributions' KL.
- Every registered variant builds from its config, trains from the CLI and gives its diagnostics.
"""
import copy
import itertools
import subprocess
import sys

import numpy as np
import pytest
import torch
from torch.distributions import MultivariateNormal, kl_divergence

from invlab import cli
from invlab import diagnostics as dg
from invlab.covariances import Kuf, Kuu
from invlab.inducing import InducingBlocks, InducingPatches, InducingPoints, SharedInducingPatches
from invlab.kernels import RBF
from invlab.kernels.combinators import Sum
from invlab.kernels.convolutional import MultiChannelConvolutional, WeightedConvolutional
from invlab.likelihoods import Gaussian
from invlab.models import REGISTRY
from invlab.models.convolutional import BlockVariational, ConvolutionalGP
from invlab.train import RunConfig, Trainer
from tests.helpers.spectra import assert_spectrum_of
from tests.helpers.titsias import set_optimal_q

DT = torch.float64
CONV_MODELS = ["conv-invariant", "conv-weighted", "conv-weighted-rbf", "conv-colour"]


def gen(seed):
    return torch.Generator().manual_seed(seed)


def all_binary_patches(E):
    return torch.tensor(list(itertools.product([0.0, 1.0], repeat=E)), dtype=DT)  # [2^E, E]


def binary_problem(kind, N=10, seed=0):
    g = gen(seed)
    C = 2 if kind == "multi" else 1
    X = (torch.rand(N, C, 4, 4, generator=g, dtype=DT) > 0.5).to(DT)
    if kind == "multi":
        kernel = MultiChannelConvolutional(RBF(None, 0.6, 1.3), (C, 4, 4), 2)
        inducing = SharedInducingPatches(all_binary_patches(4), C)
    else:
        kernel = WeightedConvolutional(RBF(None, 0.6, 1.3), (1, 4, 4), 2)
        inducing = InducingPatches(all_binary_patches(4))
    with torch.no_grad():
        kernel.weights.assign(torch.randn(kernel.weights.shape, generator=g, dtype=DT) * 0.5)
    if kind == "sum":
        kernel = Sum([RBF(16, 1.5, 0.4), kernel])
        inducing = InducingBlocks([InducingPoints(X), inducing])
    y = torch.randn(N, generator=g, dtype=DT)
    return kernel.double(), inducing.double(), X, y


@pytest.mark.parametrize("kind,whiten", [("weighted", True), ("weighted", False), ("sum", True), ("sum", False),
                                         ("multi", True), ("multi", False)])
def test_elbo_is_the_exact_marginal_likelihood_when_every_patch_is_inducing(kind, whiten, place, tol, assert_close):
    kernel, inducing, X, y = binary_problem(kind)
    reference = ConvolutionalGP(kernel, inducing, Gaussian(0.3), X.shape[0], whiten=whiten, jitter=0.0).double()
    set_optimal_q(reference, X, y, 0.3)  # float64 on the CPU
    model = place(copy.deepcopy(reference))
    with torch.no_grad():
        elbo = model.elbo_terms(place(X), place(y))["elbo"]
        Kf = kernel.K(X) + 0.3 * torch.eye(X.shape[0], dtype=DT)  # brute-force kernel
        exact = MultivariateNormal(torch.zeros(X.shape[0], dtype=DT), covariance_matrix=Kf).log_prob(y)
    assert_close(elbo, exact, tol.f64(rtol=1e-8, atol=0))


@pytest.mark.parametrize("kind", ["sum", "multi"])
def test_mean_field_blocks_equal_a_block_diagonal_full_q_and_bound_the_likelihood(kind, place, tol, assert_close):
    kernel, inducing, X, y = binary_problem(kind, seed=1)
    kernel, inducing, X, y = place(kernel), place(inducing), place(X), place(y)
    for whiten in (True, False):
        full = place(ConvolutionalGP(kernel, inducing, Gaussian(0.3), X.shape[0], whiten=whiten, jitter=0.0))
        blocks = place(ConvolutionalGP(kernel, inducing, Gaussian(0.3), X.shape[0], whiten=whiten, jitter=0.0,
                                       q_covariance="mean-field"))
        assert isinstance(blocks.q, BlockVariational) and blocks.q.sizes == inducing.block_sizes
        with torch.no_grad():
            Mt = inducing.num_inducing
            S = torch.tril(torch.randn(1, Mt, Mt, generator=gen(2), dtype=DT)) * 0.2 + torch.eye(Mt, dtype=DT)
            mask = torch.block_diag(*[torch.ones(s, s, dtype=DT) for s in inducing.block_sizes])
            m = torch.randn(Mt, 1, generator=gen(3), dtype=DT)
            full.q.set(place(m), place(S * mask))
            blocks.q.set(place(m), place(S))  # keeps only the diagonal blocks
            assert torch.equal(blocks.q.sqrt(), full.q.sqrt())
            for a, b in zip(full.qf(X), blocks.qf(X)):
                assert_close(a, b, tol.f64(atol=1e-10))
            assert_close(full.kl(), blocks.kl(), tol.f64(atol=1e-10))
            if not whiten:  # against torch.distributions with the full block-diagonal prior (float64 on the CPU)
                Ls = [L.cpu().double() for L in blocks.prior_factors()]
                p = MultivariateNormal(torch.zeros(Mt, dtype=DT), scale_tril=torch.block_diag(*Ls))
                q = MultivariateNormal(m[:, 0], scale_tril=(S * mask)[0])
                assert_close(blocks.kl(), kl_divergence(q, p), tol.f64(atol=1e-9))
    # the optimal full q attains the exact likelihood (previous test); a mean-field q is a strict lower bound
    set_optimal_q(full, X, y, 0.3)
    with torch.no_grad():
        best = full.elbo_terms(X, y)["elbo"]
        blocks.q.set(full.q.q_mu, full.q.sqrt())
        assert blocks.elbo_terms(X, y)["elbo"] < best


def test_diagonal_q_and_float32(device):
    kernel, inducing, X, y = binary_problem("sum", seed=4)
    model = ConvolutionalGP(kernel, inducing, Gaussian(0.3), X.shape[0], q_covariance="diagonal").to(
        device=device, dtype=torch.float32)
    terms = model.loss((X.float().to(device), y.float().to(device)))
    terms.loss.backward()
    assert terms.loss.dtype == torch.float32 and terms.loss.device.type == device.type and torch.isfinite(terms.loss)
    assert model.q.mean_field and model.q.q_sqrt_diag.grad is not None


# -- the registered variants -----------------------------------------------------------------------------------------
def small_run(model, model_config=None, steps=3, dataset="rectangles", train_device=None, **source):
    options = {"num_train": 60, "num_test": 40, "image_size": 10} if dataset == "rectangles" else source
    data = {"dataset": dataset, "source_options": options}
    if dataset == "digits":
        data = {"dataset": "digits", "classes": [0, 1, 7], "subset": 90, "test_subset": 30}
    config = RunConfig(model=model, data=data, model_config={"num_inducing": 8, **(model_config or {})},
                       train={"steps": steps, "batch_size": 20, "eval_every": 0, "eval_size": 40,
                              **(train_device or {})})
    trainer = Trainer(config)
    list(trainer.run())
    return trainer


def check_views(views, model, gp):
    assert isinstance(views["inducing_patches"], dg.ImageGrid)
    assert isinstance(views["kuu_spectrum"], dg.Spectrum)
    assert_spectrum_of(views["kuu_spectrum"].values, Kuu(gp.inducing, gp.kernel))
    assert isinstance(views["hyperparameters"], dg.Scalars)
    if model != "conv-invariant":
        w = views["patch_weights"]
        assert isinstance(w, dg.ImageGrid) and w.vrange[0] == -w.vrange[1]


@pytest.mark.parametrize("model", CONV_MODELS)
def test_each_variant_trains_and_shows_its_diagnostics(model, train_device):
    spec = REGISTRY[model]
    assert spec.image_only
    trainer = small_run(model, train_device=train_device)
    assert np.isfinite(trainer.last_parts["elbo"]) and 0 <= trainer.report.last_metrics["test_error"] <= 1
    snap = trainer.report.snapshot()
    check_views(snap.views, model, trainer.model)
    grid = snap.views["inducing_patches"].images
    assert grid.shape[-2:] == (3, 3)  # 3×3 patches by default
    labels = snap.views["inducing_patches"].row_labels
    if model == "conv-invariant":  # one latent: each row is labelled with the range of its patches' E[g(z)]
        M = trainer.model.inducing.num_patches
        mu = trainer.model.inducing_output_mean()[:M, 0].detach().cpu().numpy()
        assert len(labels) == grid.shape[0]
        flat = [float(v) for label in labels for v in label.split(" … ")]
        assert flat == sorted(flat, reverse=True)  # largest first, row after row
        assert flat[0] == pytest.approx(mu.max(), abs=0.006) and flat[-1] == pytest.approx(mu.min(), abs=0.006)
    if model == "conv-weighted-rbf":
        split = snap.views["variance_split"].values
        assert 0 < split["convolutional share of the prior variance"] < 1
        assert snap.views["inducing_images"].images.shape[-2:] == (10, 10)
    if model != "conv-invariant":
        assert snap.views["patch_weights"].images.shape == (1, 1, 8, 8)  # one weight per position of 10×10 images


@pytest.mark.parametrize("colour,q", [("colour-patch", "full"), ("multi-channel", "mean-field"),
                                      ("multi-channel", "full"), ("additive", "diagonal")])
def test_colour_variants_on_photo_patches(colour, q, train_device):
    trainer = small_run("conv-colour", {"colour": colour, "q_covariance": q, "patch_size": 2}, dataset="photo-patches",
                        train_device=train_device, num_train=30, num_test=20, patch_size=6)
    assert np.isfinite(trainer.last_parts["elbo"])
    views = trainer.report.snapshot().views
    check_views(views, "conv-colour", trainer.model)
    if colour == "multi-channel":
        assert trainer.model.inducing.block_sizes == (8, 8, 8) and views["patch_weights"].images.shape == (1, 3, 5, 5)
        # patches shared by the channels, drawn in the colours of the channels whose inducing outputs they carry
        assert views["inducing_patches"].images.shape[-3:] == (2, 2, 3)
        assert isinstance(trainer.model.q, BlockVariational) == (q == "mean-field")
    else:
        assert views["inducing_patches"].images.shape[-3:] == (2, 2, 3)  # colour patches


def test_multi_class_patches_are_sorted_per_class(train_device):
    trainer = small_run("conv-weighted", {"patch_size": 3}, dataset="digits", train_device=train_device)
    grid = trainer.report.snapshot().views["inducing_patches"]
    assert grid.images.shape[:2] == (3, 8) and len(grid.row_labels) == 3
    mu = trainer.model.inducing_output_mean().cpu().numpy()  # [M, 3]
    Z = trainer.model.inducing.Z.detach().cpu().numpy().reshape(-1, 3, 3)
    for k in range(3):  # row k starts with the patch of the largest class-k inducing output
        assert np.allclose(grid.images[k, 0], Z[mu[:, k].argmax()])


def test_inducing_patches_start_at_distinct_training_patches(train_device):
    trainer = Trainer(RunConfig(model="conv-weighted", data={"dataset": "rectangles", "source_options": {
        "num_train": 40, "num_test": 10, "image_size": 10}}, model_config={"num_inducing": 12},
        train={"steps": 0, **train_device}))
    Z = trainer.model.inducing.Z.detach()
    assert torch.unique(Z, dim=0).shape[0] == 12
    U = trainer.model.kernel.patches(trainer.X).reshape(-1, 9)
    assert all(((U - z).abs().sum(1) == 0).any() for z in Z)  # every one is a real patch
    noise = Trainer(RunConfig(model="conv-invariant", data=trainer.config.data,
                              model_config={"num_inducing": 12, "inducing_init": "noise"},
                              train={"steps": 0, **train_device}))
    Zn = noise.model.inducing.Z.detach()
    assert 0 <= float(Zn.min()) and float(Zn.max()) <= 1 and torch.unique(Zn, dim=0).shape[0] == 12


def test_translation_invariant_model_learns_rectangles(train_device):
    trainer = Trainer(RunConfig(model="conv-invariant", data={"dataset": "rectangles", "source_options": {
        "num_train": 200, "num_test": 300, "image_size": 12}}, model_config={"num_inducing": 16},
        train={"steps": 80, "batch_size": 100, "learning_rate": 0.05, "eval_every": 0, **train_device}))
    list(trainer.run())
    assert trainer.report.last_metrics["test_error"] < 0.1


@pytest.mark.parametrize("model", CONV_MODELS)
def test_cli_trains_each_variant(model, capsys, cli_device):
    code = cli.main(["train", "--model", model, "--dataset", "rectangles", "--steps", "2", "--source-option",
                     "num_train=30", "--source-option", "num_test=20", "--source-option", "image_size=9",
                     "--num-inducing", "6", "--batch-size", "10", "--quiet", *cli_device])
    assert code == 0
    assert f"{model} on rectangles | step 2" in capsys.readouterr().out


def test_command_line_entry_point(tmp_path, cli_device):
    out = subprocess.run([sys.executable, "-m", "invlab", "train", "--model", "conv-weighted-rbf", "--dataset",
                          "rectangles", "--steps", "3", "--source-option", "num_train=30", "--source-option",
                          "num_test=20", "--source-option", "image_size=9", "--num-inducing", "6",
                          "--num-inducing-rbf", "5", "--q-covariance", "mean-field", "--no-whiten", "--quiet",
                          *cli_device],
                         capture_output=True, text=True, timeout=120, env={"INVLAB_DATA": str(tmp_path), "PATH": ""})
    assert out.returncode == 0, out.stderr
    assert "conv-weighted-rbf on rectangles | step 3" in out.stdout


def test_tabular_data_is_refused():
    with pytest.raises(Exception, match="needs image data"):
        Trainer(RunConfig(model="conv-weighted", data={"dataset": "wine"}, train={"steps": 0}))


# -- the block forms against dense computations -----------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["sum", "multi"])
@pytest.mark.parametrize("q_covariance", ["full", "mean-field", "diagonal"])
@pytest.mark.parametrize("whiten", [True, False])
def test_block_projections_and_kl_equal_the_dense_computations(kind, q_covariance, whiten):
    """q(f) and the KL computed block by block equal those with the dense block-diagonal factors (block_diag)."""
    from invlab.covariances import Kff_diag
    from invlab.models.conditionals import project

    kernel, inducing, X, y = binary_problem(kind, seed=5)
    model = ConvolutionalGP(kernel, inducing, Gaussian(0.3), X.shape[0], whiten=whiten, jitter=1e-9,
                            q_covariance=q_covariance).double()
    Mt, g = inducing.num_inducing, gen(6)
    with torch.no_grad():
        model.q.set(torch.randn(Mt, 1, generator=g, dtype=DT),
                    torch.tril(torch.randn(1, Mt, Mt, generator=g, dtype=DT)) * 0.2 + torch.eye(Mt, dtype=DT))
        factors = model.prior_cholesky()
        assert len(factors) == len(inducing.block_sizes) and factors.sizes == inducing.block_sizes
        Lp = torch.block_diag(*factors)  # dense chol(K_uu) [ΣM, ΣM]
        assert torch.allclose(Lp @ Lp.T, Kuu(inducing, kernel) + 1e-9 * torch.eye(Mt, dtype=DT), atol=1e-10)
        B = torch.randn(Mt, 3, generator=g, dtype=DT)
        assert torch.allclose(factors.solve(B), torch.linalg.solve_triangular(Lp, B, upper=False), atol=1e-10)
        assert torch.allclose(factors.solve_t(B), torch.linalg.solve_triangular(Lp.T, B, upper=True), atol=1e-10)
        assert torch.allclose(factors.matmul(B), Lp @ B, atol=1e-12)
        S = model.q.sqrt()  # dense [1, ΣM, ΣM] (block diagonal for mean-field, diagonal for diagonal)
        mean, var = project(Kuf(inducing, kernel, X), Lp, Kff_diag(inducing, kernel, X), model.q.q_mu, S, whiten)
        for a, b in zip(model.qf(X), (mean, var)):
            assert torch.allclose(a, b, atol=1e-10)
        p = MultivariateNormal(torch.zeros(Mt, dtype=DT), scale_tril=torch.eye(Mt, dtype=DT) if whiten else Lp)
        q = MultivariateNormal(model.q.q_mu[:, 0], scale_tril=S[0])
        assert torch.allclose(model.kl(), kl_divergence(q, p), atol=1e-9)


def test_full_elbo_of_a_block_model_is_deterministic_and_sums_its_batches():
    kernel, inducing, X, y = binary_problem("sum", seed=7)
    model = ConvolutionalGP(kernel, inducing, Gaussian(0.3), X.shape[0], whiten=False, jitter=0.0,
                            q_covariance="mean-field").double()
    set_optimal_q(model, X, y, 0.3)
    out = model.full_elbo(X, y, batch_size=3)
    assert out == model.full_elbo(X, y, batch_size=3, seed=1)  # nothing is sampled: the seed does not matter
    with torch.no_grad():
        whole = model.elbo_terms(X, y)  # num_data = N: one batch of everything is the whole-data ELBO
    for key in ("elbo", "expected_log_lik", "kl"):
        assert abs(out[key] - float(whole[key])) < 1e-9 * max(1.0, abs(out[key])), key
