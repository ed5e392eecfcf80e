"""The deep inverse Wishart process family (Aitchison, Yang & Ober 2021): output layer, NNGP limit, training, CLI,
diagnostics, errors."""
import math

import numpy as np
import pytest
import torch
from torch.distributions import MultivariateNormal

from invlab import diagnostics as dg
from invlab.data import load
from invlab.errors import ConfigError, ShapeError
from invlab.models import DataInfo
from invlab.models.dkp import DIWPConfig, DKPSVGPConfig, NNGPConfig, build_dkp, build_dkp_svgp
from invlab.models.dkp.layers import GlobalInducingOutput, GramBlocks, InverseWishartLayer, OmegaInputLayer
from invlab.train import RunConfig, Trainer
from tests.helpers.cli import run_main
from tests.helpers.spectra import assert_spectrum_of

DT = torch.float64


@pytest.fixture(scope="module")
def diabetes():
    ds = load("diabetes", subset=120)
    return (torch.as_tensor(ds.X_train), torch.as_tensor(ds.y_train),
            torch.as_tensor(ds.X_test), torch.as_tensor(ds.y_test))


def build(config, X, y, place, task="regression", num_classes=None):
    """Built from float64 CPU data, as the trainer does, then placed on the test device and dtype."""
    return place(build_dkp(config, X, y, DataInfo(task, num_classes), generator=torch.Generator().manual_seed(0)))


# -- output layer (app. G) ---------------------------------------------------------------------------------------------
def test_global_inducing_output_layer_against_the_closed_form(place, tol, assert_close):
    """Q(f) ∝ N(f; 0, K) N(v; f, Λ⁻¹): mean ΣΛv, covariance Σ = (K⁻¹ + Λ)⁻¹; log P − log Q per sample exactly."""
    torch.manual_seed(0)
    Pi, Pt = 4, 3
    A = torch.randn(Pi + Pt, Pi + Pt, dtype=DT)
    K = A @ A.T / (Pi + Pt) + 0.2 * torch.eye(Pi + Pt, dtype=DT)
    layer = place(GlobalInducingOutput(Pi, 1, v_init=torch.randn(Pi, 1, dtype=DT), precision=0.7))
    with torch.no_grad():
        layer.prec_tril_raw.add_(place(0.3 * torch.tril(torch.randn(1, Pi, Pi, dtype=DT), -1)))
    # the reference in float64 on the CPU, from the layer's own (placed) parameters
    Lam = (layer.prec_tril @ layer.prec_tril.transpose(-1, -2))[0].detach().cpu().double()
    Kii = K[:Pi, :Pi]
    Sigma = torch.linalg.inv(torch.linalg.inv(Kii) + Lam)
    mu = Sigma @ Lam @ layer.v[:, 0].detach().cpu().double()
    blocks = GramBlocks(place(Kii[None]), place(K[None, :Pi, Pi:]), place(K.diagonal()[None, Pi:]))
    with torch.no_grad():
        mean, var, logpq, f_i = layer(blocks, 40_000)
    f = f_i[..., 0].cpu().double()  # [S, Pi]
    ref = (MultivariateNormal(torch.zeros(Pi, dtype=DT), Kii).log_prob(f)
           - MultivariateNormal(mu, 0.5 * (Sigma + Sigma.T)).log_prob(f))
    assert_close(logpq, ref, tol.f64(atol=1e-9))
    z = (f.mean(0) - mu) / (f.std(0) / math.sqrt(f.shape[0]))
    assert z.abs().max() < 3.0
    assert torch.allclose(torch.cov(f.T), Sigma, atol=0.05 * float(Sigma.diagonal().max()))
    # f_t | f_i: the conditional prior N(K_ti K_ii⁻¹ f_i, k_tt − K_ti K_ii⁻¹ K_it)
    cond_mean = f @ torch.linalg.solve(Kii, K[:Pi, Pi:])
    cond_var = K.diagonal()[Pi:] - (K[:Pi, Pi:] * torch.linalg.solve(Kii, K[:Pi, Pi:])).sum(0)
    assert_close(mean[..., 0], cond_mean, tol.f64(atol=1e-9))
    assert_close(var[0, :, 0], cond_var, tol.f64(atol=1e-9))


def test_kl_estimate_matches_the_closed_form_of_the_output_layer(diabetes, place):
    """NNGP: the only random variables are the inducing outputs, Q(w) = N(μ, A⁻¹) against P(w) = N(0, I) per output."""
    X, y, _, _ = diabetes
    model = build(NNGPConfig(num_inducing=10, output_precision=3.0), X, y, place)
    ind = model.sample_inducing(1)
    Lk, _ = ind.output_state
    M = model.output.prec_tril.detach()
    C = Lk.transpose(-1, -2)[:, None] @ M
    A = torch.eye(10, dtype=C.dtype, device=C.device) + C @ C.transpose(-1, -2)  # [1, L, Pi, Pi]
    mu = torch.linalg.solve(A, C @ (M.transpose(-1, -2) @ model.output.v.detach().T[..., None]))
    closed = 0.5 * (torch.linalg.inv(A).diagonal(dim1=-2, dim2=-1).sum() + (mu ** 2).sum() - 10 + torch.logdet(A).sum())
    draws = torch.cat([-model.sample_inducing(2000).logpq for _ in range(5)]).double()  # a float64 mean of 10,000
    assert abs(float(draws.mean() - closed)) < 3 * float(draws.std()) / math.sqrt(len(draws))
    assert abs(model.kl_estimate(4000) - float(closed)) < 4 * float(draws.std()) / math.sqrt(4000)


# -- the NNGP limit ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("input_layer,Pi", [("omega", 15), ("gram", 8)])
def test_large_delta_makes_every_layer_the_nngp_kernel(diabetes, input_layer, Pi, place):
    X, y, _, _ = diabetes
    seen = {}
    for key, config in [("diwp", DIWPConfig(num_inducing=Pi, delta=1e8, input_layer=input_layer)),
                        ("small", DIWPConfig(num_inducing=Pi, delta=1.0, input_layer=input_layer)),
                        ("nngp", NNGPConfig(num_inducing=Pi))]:
        with torch.no_grad():  # the kernel blocks K(G_L) that reach the output layer
            seen[key] = build(config, X, y, place).propagate(place(X[:10]), 3, trace=True).output_blocks
    for block in ("ii", "it", "tt"):
        ref = getattr(seen["nngp"], block)
        scale = float(ref.abs().max())
        assert float((getattr(seen["diwp"], block) - ref).abs().max()) < 2e-3 * scale  # fluctuations ~ δ^(-1/2)
        assert float((getattr(seen["small"], block) - ref).abs().max()) > 0.1 * scale  # small δ: far from it


def test_train_points_in_chunks_give_the_same_pass(diabetes, monkeypatch, place, tol, assert_close):
    """Points are conditioned on the inducing blocks one by one, so chunking them changes nothing (NNGP: no noise
    after the inducing phase, hence identical numbers for one seed)."""
    import invlab.models.dkp.model as dkp_model

    X, y, _, _ = diabetes
    model = build(NNGPConfig(num_inducing=12, kernel="sqexp"), X, y, place)
    X = place(X)
    torch.manual_seed(3)
    whole = model.propagate(X[:25], 2)
    monkeypatch.setattr(dkp_model, "CHUNK_ELEMENTS", 2 * 12 * 4)  # chunks of 4 points
    assert model.chunk_size(2) == 4
    torch.manual_seed(3)
    chunked = model.propagate(X[:25], 2)
    assert_close(whole.mean, chunked.mean, tol.f64(atol=1e-12))
    assert_close(whole.var, chunked.var, tol.f64(atol=1e-12))
    assert torch.equal(whole.logpq, chunked.logpq)


def test_large_delta_diwp_predicts_like_the_nngp(diabetes, place):
    X, y, Xs, ys = diabetes
    nngp = build(NNGPConfig(num_inducing=15, num_samples=2), X, y, place)
    X, y, Xs, ys = place(X), place(y), place(Xs), place(ys)
    opt = torch.optim.Adam(nngp.parameters(), lr=0.02)
    for _ in range(40):  # move away from the initialisation so the comparison is of a trained posterior
        opt.zero_grad()
        nngp.loss((X, y)).loss.backward()
        opt.step()
    diwp = build(DIWPConfig(num_inducing=15, delta=1e8), *diabetes[:2], place)
    missing, unexpected = diwp.load_state_dict(nngp.state_dict(), strict=False)
    assert not unexpected and all(k.startswith(("input_layer.", "hidden.")) for k in missing)
    torch.manual_seed(1)
    a = nngp.predict(Xs, ys, num_samples=400)
    b = diwp.predict(Xs, ys, num_samples=400)
    assert float((a.y_mean - b.y_mean).abs().max()) < 0.1  # targets are standardised; MC error ≈ 0.02
    assert abs(float(a.log_density.mean() - b.log_density.mean())) < 0.02
    assert torch.allclose(a.y_var, b.y_var, rtol=0.1)


# -- training ----------------------------------------------------------------------------------------------------------
def elbo_estimate(model, X, y, repeats=30):
    with torch.no_grad():
        return float(np.mean([float(model.elbo_terms(X, y)["elbo"]) for _ in range(repeats)]))


def test_elbo_rises_over_training_on_a_small_regression_set(diabetes, place):
    X, y, _, _ = diabetes
    torch.manual_seed(2)
    model = build(DIWPConfig(num_inducing=20, num_samples=2, delta=20.0), X, y, place)
    X, y = place(X), place(y)
    before = elbo_estimate(model, X, y)
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(80):
        opt.zero_grad()
        model.loss((X, y)).loss.backward()
        opt.step()
    after = elbo_estimate(model, X, y)
    assert after > before + 0.2 * abs(before)  # e.g. −400 → −160 per 120 points
    deltas = [float(layer.delta()) for layer in [model.input_layer, *model.hidden]]
    assert all(d != 20.0 for d in deltas)  # δ is learned per layer


def test_trainer_runs_diwp_classification_and_reports_metrics(train_device):
    config = RunConfig(model="diwp", data={"dataset": "wine"},
                       model_config={"num_inducing": 12, "num_samples": 2, "num_predict_samples": 8},
                       train={"steps": 15, "batch_size": 64, "learning_rate": 0.02, "eval_every": 0, **train_device})
    trainer = Trainer(config)
    list(trainer.run())
    assert trainer.report.last_metrics["test_error"] < 0.5  # 3 classes: chance is 0.67
    snap = trainer.report.snapshot()
    assert {"layer1_gram", "layer2_gram", "layer1_spectrum", "output_kernel"} <= set(snap.views)


def test_cli_trains_the_family(capsys, cli_device):
    code, out, err = run_main(capsys, "train", "--model", "diwp", "--dataset", "diabetes", "--steps", "6",
                              "--num-inducing", "10", "--num-samples", "1", "--num-predict-samples", "4",
                              "--batch-size", "64", "--quiet", *cli_device)
    assert code == 0, err
    summary = out.strip().splitlines()[-1]
    assert "diwp on diabetes | step 6 | ELBO" in summary and "test RMSE" in summary


# -- baselines share the kernel ----------------------------------------------------------------------------------------
def test_nngp_and_svgp_baseline_use_the_same_kernel(diabetes, place, tol, assert_close):
    X, y, _, _ = diabetes
    nngp = build(NNGPConfig(num_inducing=10, kernel="sqexp", num_layers=3), X, y, place)
    svgp = place(build_dkp_svgp(DKPSVGPConfig(num_inducing=10, kernel="sqexp", num_layers=3), X, y,
                                DataInfo("regression"), generator=torch.Generator().manual_seed(0)))
    _, K_out = nngp.layer_grams(S=1)
    K_svgp = svgp.kernel.K(nngp.Z) + nngp.jitter * place(torch.eye(10, dtype=DT))
    assert_close(K_out[0], K_svgp, tol.f64(atol=1e-10))


# -- diagnostics and errors --------------------------------------------------------------------------------------------
def test_diagnostics_show_each_layer(diabetes, place):
    X, y, _, _ = diabetes
    model = build(DIWPConfig(num_inducing=12, num_layers=3), X, y, place)
    X, y = place(X), place(y)
    torch.manual_seed(5)
    views = model.diagnostics((X[:20], y[:20]))
    torch.manual_seed(5)  # the same draws again: the G_ii samples the spectra claim to show
    grams, _ = model.layer_grams(S=4)
    for ell in (1, 2, 3):
        heat, spec = views[f"layer{ell}_gram"], views[f"layer{ell}_spectrum"]
        assert isinstance(heat, dg.Heatmap) and heat.matrix.shape == (12, 12)
        assert isinstance(spec, dg.Spectrum) and spec.values.shape == (12,)
        assert_spectrum_of(spec.values, grams[ell - 1][0])
    assert isinstance(views["hyperparameters"], dg.Scalars)
    assert any("delta" in k for k in views["hyperparameters"].values)
    assert model.numerics().condition >= 1.0 and model.numerics().condition_of == "output K_ii"


def test_bad_configurations_and_inputs_are_refused(diabetes, place):
    X, y, _, _ = diabetes
    with pytest.raises(ConfigError, match="input_layer"):
        build(DIWPConfig(num_inducing=20, input_layer="gram"), X, y, place)  # Pi = 20 ≥ 10 features
    with pytest.raises(ConfigError, match="delta"):
        RunConfig(model="diwp", data={"dataset": "diabetes"}, model_config={"delta": -1.0}).validate()
    model = build(NNGPConfig(num_inducing=10), X, y, place)
    with pytest.raises(ShapeError, match="D=10"):
        model.predict(place(X[:, :4]))
    with pytest.raises(ConfigError, match="V must be"):
        InverseWishartLayer(3, 1.0, 1.0, V_init=torch.eye(2, dtype=DT))
    with pytest.raises(ConfigError, match="positive"):
        OmegaInputLayer(3, delta=0.0, gamma=1.0)


@pytest.mark.parametrize("input_layer,Pi", [("omega", 12), ("gram", 6)])
def test_sampled_kl_agrees_with_the_closed_form_per_layer(diabetes, input_layer, Pi, place):
    """The ELBO's KL(Q ‖ P) over Ω / G₁, G₂ and f_i: the mean of log Q − log P over samples against the same chain
    with each layer's KL in closed form given the layer below (inverse Wishart and Gaussian KLs). Q is moved away
    from P first (δ = 5, γ = 2, V and v perturbed), where the KL is tens of nats."""
    X, y, _, _ = diabetes
    model = build(DIWPConfig(num_inducing=Pi, delta=5.0, gamma=2.0, input_layer=input_layer), X, y, place)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for layer in (model.input_layer, *model.hidden):
            layer.V.add_(place(0.3 * torch.randn(layer.V.shape, generator=g, dtype=DT)))
        model.output.v.add_(place(torch.randn(model.output.v.shape, generator=g, dtype=DT)))
    torch.manual_seed(0)
    with torch.no_grad():
        sampled = torch.cat([-model.sample_inducing(1000).logpq for _ in range(4)]).double()
        model.set_kl_estimator("closed_form")
        closed = torch.cat([-model.sample_inducing(1000).logpq for _ in range(4)]).double()
    se = math.sqrt(float(sampled.var()) / len(sampled) + float(closed.var()) / len(closed))
    assert float(closed.mean()) > 10.0
    assert abs(float(sampled.mean() - closed.mean())) < 4 * se
    assert float(closed.std()) < float(sampled.std())  # same expectation, less variance
