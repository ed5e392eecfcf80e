"""The invariant GP end to end: it reduces to the plain SVGP at zero ranges, equals the exact double-sum model
for a full finite orbit, passes gradients to every range, trains from the CLI and through the Trainer."""
import math

import pytest
import torch

from invlab.covariances import Kuu
from invlab.covariances.orbits import _kff_diag_interdomain, _kuf_interdomain
from invlab.inducing import InducingPoints, InterDomainPoints
from invlab.kernels import RBF
from invlab.kernels.invariant import InvariantKernel
from invlab.likelihoods import Gaussian
from invlab.likelihoods.polya_gamma import PolyaGammaLogistic
from invlab.models import SVGP, DataInfo, get_model
from invlab.models.conditionals import project
from invlab.models.invariant import InvariantConfig, InvariantSVGP, build_invariant
from invlab.parameters import learnables
from invlab.train import RunConfig, Trainer
from invlab.train.edits import Freeze, SetValue
from invlab.transforms import LocalDeformation, PermutationOrbit, Rot90Orbit, all_affine, rotation_only
from tests.helpers.spectra import assert_spectrum_of

DT = torch.float64


def image_problem(place, N=20, M=6, L=3, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.zeros(N, 1, 8, 8, dtype=DT)
    X[:, :, 2:6, 2:6] = torch.rand(N, 1, 4, 4, generator=g, dtype=DT)
    Y = torch.randn(N, L, generator=g, dtype=DT)
    Z = torch.rand(M, 64, generator=g, dtype=DT)
    q_mu = torch.randn(M, L, generator=g, dtype=DT)
    q_sqrt = torch.tril(0.3 * torch.randn(L, M, M, generator=g, dtype=DT)) + 0.7 * torch.eye(M, dtype=DT)
    return tuple(place(t) for t in (X, Y, Z, q_mu, q_sqrt))


def invariant_model(place, augmentation, Z, L, S=4, whiten=True, likelihood=None):
    kernel = InvariantKernel(RBF(Z.shape[1], lengthscale=2.0, variance=1.5), augmentation, S)
    lik = likelihood or Gaussian(0.3)
    return place(InvariantSVGP(kernel, InterDomainPoints(Z), lik, 50, num_latent=L, whiten=whiten, jitter=1e-8))


@pytest.mark.parametrize("augmentation", [rotation_only(0.0), all_affine(0.0, 0.0), LocalDeformation(0.0, 0.0, 0.0)])
@pytest.mark.parametrize("whiten", [True, False])
def test_zero_ranges_reduce_to_the_plain_svgp(augmentation, whiten, place, tol, assert_close):
    X, Y, Z, q_mu, q_sqrt = image_problem(place)
    inv = invariant_model(place, augmentation, Z, 3, whiten=whiten)
    plain = place(SVGP(RBF(64, lengthscale=2.0, variance=1.5), InducingPoints(Z), Gaussian(0.3), 50, num_latent=3,
                       whiten=whiten, jitter=1e-8))
    for m in (inv, plain):
        m.q.set(q_mu, q_sqrt)
    with torch.no_grad():
        a, b = inv.elbo_terms(X, Y), plain.elbo_terms(X, Y)
        pa, pb = inv.predict(X), plain.predict(X)
    assert_close(a["elbo"], b["elbo"], tol.f64(rtol=0, atol=1e-6))
    assert_close(pa.mean, pb.mean, tol.f64(atol=1e-8))
    assert_close(pa.var, pb.var, tol.f64(atol=1e-8))


def test_full_finite_orbit_is_the_exact_double_sum_model(place, tol, assert_close):
    """S = P = 4 (rot90): the ELBO equals the one built from the brute-force orbit covariances and q(f) projection."""
    X, Y, Z, q_mu, q_sqrt = image_problem(place)
    model = invariant_model(place, Rot90Orbit(), Z, 3, S=4)
    model.q.set(q_mu, q_sqrt)
    with torch.no_grad():
        Luu = model.prior_cholesky()
        mean, var = project(_kuf_interdomain(model.inducing, model.kernel, X), Luu,
                            _kff_diag_interdomain(model.inducing, model.kernel, X), q_mu, q_sqrt)
        ref = model.likelihood.expected_log_prob(Y, mean, var).sum() * 50 / 20 - model.kl(Luu)
        assert_close(model.elbo_terms(X, Y)["elbo"], ref, tol.f64(rtol=1e-9, atol=0))
        assert_close(model.predict(X).mean, mean, tol.f64(atol=1e-10))


def test_elbo_is_an_unbiased_estimate_for_a_subsampled_orbit(place):
    X, Y, Z, q_mu, q_sqrt = image_problem(place, N=6)
    full = invariant_model(place, Rot90Orbit(), Z, 3, S=4)
    sub = invariant_model(place, Rot90Orbit(), Z, 3, S=2)
    for m in (full, sub):
        m.q.set(q_mu, q_sqrt)
    torch.manual_seed(0)
    R = 3000
    with torch.no_grad():
        exact = float(full.elbo_terms(X, Y)["elbo"])
        # R independent draws in one batch: each replicate of the 6 inputs draws its own 2 of the 4 rotations
        ell = sub.expected_log_lik(X.repeat(R, 1, 1, 1), Y.repeat(R, 1), None).reshape(R, 6).sum(1) * 50 / 6
        draws = (ell - sub.kl()).double()  # the mean of 3000 draws in float64 (a float32 sum would add its rounding)
    assert abs(float(draws.mean()) - exact) < 3 * float(draws.std()) / math.sqrt(R)


@pytest.mark.parametrize("augmentation", [rotation_only(20.0), all_affine(10.0, 0.05),
                                          LocalDeformation(0.8, 10.0, 0.05)])
def test_gradients_reach_every_range(augmentation, place):
    X, Y, Z, q_mu, q_sqrt = image_problem(place)
    model = invariant_model(place, augmentation, Z, 3)
    model.q.set(q_mu, q_sqrt)
    torch.manual_seed(0)
    (-model.elbo_terms(X, Y)["elbo"]).backward()
    ranges = {k: v for k, v in learnables(model).items() if k.startswith("kernel.augmentation")}
    assert ranges
    for name, value in ranges.items():
        assert torch.isfinite(value.raw.grad) and value.raw.grad.abs() > 0, name


def test_polya_gamma_model_on_binary_digits(place, tol, assert_close):
    X, _, Z, _, _ = image_problem(place, N=40, L=1)
    y = (X.reshape(40, -1).sum(1) > X.reshape(40, -1).sum(1).median()).long()
    model = invariant_model(place, rotation_only(10.0), Z, 1, likelihood=PolyaGammaLogistic(64, 8))
    opt = torch.optim.Adam(model.parameters(), lr=0.03)
    start = float(model.loss((X, y)).loss)
    for _ in range(60):
        opt.zero_grad()
        terms = model.loss((X, y))
        terms.loss.backward()
        opt.step()
    assert float(terms.loss) < start and "range.rotation" in terms.parts
    pred = model.predict(X, y)
    assert pred.probs.shape == (40, 2)
    assert_close(pred.probs.sum(1), torch.ones(40, dtype=DT), tol.f64())
    assert torch.isfinite(pred.log_density).all()


def test_build_config_diagnostics_and_history(place):
    g = torch.Generator().manual_seed(0)
    X = torch.rand(30, 1, 6, 6, generator=g, dtype=DT)
    y = torch.randint(0, 3, (30,), generator=g)
    model = build_invariant(InvariantConfig(num_inducing=8, augmentation="affine", learn_ranges=False), X, y,
                            DataInfo("classification", 3, image_shape=(1, 6, 6)), generator=g)
    model, X, y = place(model), place(X), place(y)
    assert isinstance(model.likelihood, Gaussian) and model.q.num_latent == 3  # one-hot Gaussian, as the paper
    assert all(v.frozen for k, v in learnables(model).items() if "augmentation" in k)
    for _ in range(3):
        model.loss((X, y)).loss.backward()
    views = model.diagnostics((X, y))
    grid = views["augmentation_samples"]
    assert grid.images.shape == (4, 8, 6, 6) and grid.col_labels[0] == "input"
    # one view per quantity: the ranges' history, not a table of them nor rows of the hyper-parameter table
    assert ("augmentation_ranges" not in views
            and not [k for k in views["hyperparameters"].values if "augmentation" in k])
    assert set(views["augmentation_history"].series) == {f"{p}.{e}" for p in
                                                         ("rotation", "scale_x", "scale_y", "shear", "translate_x",
                                                          "translate_y") for e in ("lo", "hi")}
    steps, values = views["augmentation_history"].series["rotation.hi"]
    assert list(steps) == [1, 2, 3] and values[0] == pytest.approx(5.0)
    assert_spectrum_of(views["kuu_spectrum"].values, Kuu(model.inducing, model.kernel))
    # the same fixed noise: the grid only changes when the ranges do
    assert (model.diagnostics((X, y))["augmentation_samples"].images == grid.images).all()


def test_trainer_logs_ranges_and_edits_them_live(train_device):
    config = RunConfig(model="invariant",
                       data={"dataset": "digits", "odd_even": True, "subset": 120, "test_subset": 60},
                       model_config={"num_inducing": 10, "num_samples": 3, "num_predict_samples": 4},
                       train={"steps": 6, "log_every": 1, "eval_every": 0, "eval_size": 60, "batch_size": 32,
                              **train_device})
    trainer = Trainer(config)
    assert isinstance(trainer.model.likelihood, PolyaGammaLogistic)
    name = "kernel.augmentation.ranges.rotation.half_width"
    trainer.step()
    trainer.edits.put(SetValue(name, 30.0))
    trainer.edits.put(Freeze(name))
    for _ in range(2):
        trainer.step()
    assert trainer.history["range.rotation"][1][-1] == pytest.approx(30.0)
    metrics = trainer.report.evaluate()
    assert 0.0 <= metrics["test_error"] <= 1.0
    snap = trainer.report.snapshot()
    assert "augmentation_samples" in snap.views and "augmentation_history" in snap.views


def test_registry_and_refusals():
    spec = get_model("invariant")
    assert spec.config is InvariantConfig
    X = torch.randn(10, 2, dtype=DT)
    with pytest.raises(Exception, match="polya_gamma"):
        build_invariant(InvariantConfig(likelihood="polya_gamma"), X, torch.randn(10), DataInfo("regression"))
    model = build_invariant(InvariantConfig(num_inducing=5), X, torch.randn(10), DataInfo("regression"))
    assert isinstance(model.kernel.augmentation, PermutationOrbit)


def test_cli_trains_on_symmetric_2d(capsys, cli_device):
    """`python -m invlab train --model invariant ...`, run in-process (`invlab.cli.main` is what `-m invlab` calls)."""
    from invlab.cli import main

    code = main(["train", "--model", "invariant", "--dataset", "symmetric-2d", "--steps", "40", "--num-inducing", "20",
                 "--learning-rate", "0.03", "--quiet", *cli_device])
    out = capsys.readouterr()
    assert code == 0, out.err
    summary = out.out.strip().splitlines()[-1]
    assert summary.startswith("run 1 | invariant on symmetric-2d | step 40 | ELBO") and "test RMSE" in summary


# -- the whole-data ELBO ----------------------------------------------------------------------------------------------
@pytest.mark.float64_only(reason="an identity checked to 1e-9")
def test_full_elbo_at_the_whole_finite_orbit_is_exact(place):
    """S = P = 4: the whole-data ELBO is the one of the brute-force double-sum model, whatever the seed."""
    X, Y, Z, q_mu, q_sqrt = image_problem(place)
    model = invariant_model(place, Rot90Orbit(), Z, 3, S=2)  # trains with 2 of the 4 rotations; evaluated with all 4
    whole = invariant_model(place, Rot90Orbit(), Z, 3, S=4)  # the same model whose kernel sums the whole orbit
    for m in (model, whole):
        m.q.set(q_mu, q_sqrt)
    with torch.no_grad():
        Luu = whole.prior_cholesky()
        mean, var = project(_kuf_interdomain(whole.inducing, whole.kernel, X), Luu,
                            _kff_diag_interdomain(whole.inducing, whole.kernel, X), q_mu, q_sqrt)
        ell = whole.likelihood.expected_log_prob(Y, mean, var).sum()
        exact = float(ell - whole.kl(Luu))
    for seed in (0, 1):
        out = model.full_elbo(X, Y, batch_size=6, seed=seed, num_samples=4)
        assert abs(out["elbo"] - exact) < 1e-9 * abs(exact)
        assert abs(out["expected_log_lik"] - float(ell)) < 1e-9 * abs(float(ell))


@pytest.mark.parametrize("augmentation", [Rot90Orbit(), rotation_only(30.0)])
def test_full_elbo_is_deterministic_for_a_seed_and_unbiased_over_seeds(augmentation, place):
    X, Y, Z, q_mu, q_sqrt = image_problem(place, N=8)
    model = invariant_model(place, augmentation, Z, 3, S=2)
    model.q.set(q_mu, q_sqrt)
    state = torch.random.get_rng_state()
    first = model.full_elbo(X, Y, batch_size=3, seed=7)
    assert model.full_elbo(X, Y, batch_size=3, seed=7) == first  # the same orbit samples, the same number
    assert model.full_elbo(X, Y, batch_size=3, seed=8)["elbo"] != first["elbo"]
    assert torch.equal(torch.random.get_rng_state(), state)
    draws = torch.tensor([model.full_elbo(X, Y, seed=s)["elbo"] for s in range(300)], dtype=DT)
    if augmentation.orbit_size is not None:  # the exact value: all P = 4 rotations
        reference, ref_se = model.full_elbo(X, Y, num_samples=4)["elbo"], 0.0
    else:  # brute force: many samples per input (the estimator's variance falls like 1/S)
        many = torch.tensor([model.full_elbo(X, Y, seed=1000 + s, num_samples=256)["elbo"] for s in range(4)], dtype=DT)
        reference, ref_se = float(many.mean()), float(many.std()) / 2
    se = float(draws.std()) / math.sqrt(len(draws))
    assert abs(float(draws.mean()) - reference) < 4 * math.sqrt(se ** 2 + ref_se ** 2)


def test_importing_the_invariant_kernel_does_not_import_the_covariances():
    """Kernels never import covariances (the pair estimator lives with the kernel)."""
    import subprocess
    import sys

    code = ("import sys, invlab.kernels.invariant; "
            "print(sorted(m for m in sys.modules if m.startswith(('invlab.covariances', 'invlab.models'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


def test_predictive_variance_includes_the_monte_carlo_variance_of_the_mean(place):
    """Predictions from S = 2 of the 4 rotations: the reported mean μ̂ is itself random, so the reported variance must
    cover both q(f)'s variance and μ̂'s error, E[var̂] = σ² + E[(μ̂ − μ)²] with μ, σ² from the exact whole-orbit
    projection (μ̂² − μ²̂ is the unbiased estimate of μ̂'s variance); at S = P both are exact."""
    X, Y, Z, q_mu, q_sqrt = image_problem(place, N=6)
    full = invariant_model(place, Rot90Orbit(), Z, 3, S=4)  # its k_f(x, x) is the exact whole-orbit double sum
    model = invariant_model(place, Rot90Orbit(), Z, 3, S=2)
    q_mu = 30 * q_mu  # means that differ between rotations by more than σ
    for m in (full, model):
        m.q.set(q_mu, q_sqrt)
    torch.manual_seed(1)
    R = 2000
    with torch.no_grad():
        Luu = full.prior_cholesky()
        mean, var = project(_kuf_interdomain(full.inducing, full.kernel, X), Luu,
                            _kff_diag_interdomain(full.inducing, full.kernel, X), q_mu, q_sqrt)
        model.num_predict_samples = 4
        full_mean, full_var = model.qf(X)
        model.num_predict_samples = 2
        m, v = model.qf(X.repeat(R, 1, 1, 1))
    assert torch.allclose(full_mean, mean, atol=1e-10) and torch.allclose(full_var, var, atol=1e-10)
    m, v = m.reshape(R, 6, 3).double(), v.reshape(R, 6, 3).double()
    err2 = (m - mean.double()) ** 2
    assert float(err2.mean()) > 0.1 * float(var.mean())  # the Monte Carlo error is not negligible here
    gap = (v - err2).mean(0) - var.double()  # [6, 3]: zero in expectation
    se = (v - err2).std(0) / math.sqrt(R)
    assert (gap.abs() <= 4 * se + 1e-9).all(), (gap / se).max()
