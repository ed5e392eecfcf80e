"""The whole-training-set ELBO to a stated precision (`invlab.train.precision.precise_elbo`): exact where nothing is
sampled or a finite orbit is small enough to sum whole (equal to a brute-force double sum), unbiased where the orbit
is sampled (the mean over seeds agrees with the whole orbit's value within its standard error), a Monte-Carlo standard
error at or under the target that is an honest one (near the spread of repeated calls), and for a plug-in likelihood
a measured bias whose direction is that of a brute-force whole-orbit evaluation."""
import math

import numpy as np
import pytest
import torch

from invlab.covariances.orbits import _kuf_interdomain
from invlab.inducing import InducingPoints, InterDomainPoints
from invlab.kernels import RBF
from invlab.kernels.invariant import InvariantKernel
from invlab.likelihoods import Gaussian
from invlab.likelihoods.bernoulli import Bernoulli
from invlab.likelihoods.softmax import Softmax
from invlab.models import SVGP
from invlab.models.conditionals import project
from invlab.models.invariant import InvariantSVGP
from invlab.train import RunConfig, Trainer, precision
from invlab.train.precision import EXACT_ORBIT, precise_elbo
from invlab.transforms import PermutationOrbit

DT = torch.float64


def vector_problem(place, D, N=12, M=5, L=1, seed=0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(N, D, generator=g, dtype=DT) * torch.linspace(0.5, 2.0, D, dtype=DT)  # not symmetric
    Y = torch.randn(N, L, generator=g, dtype=DT)
    Z = torch.randn(M, D, generator=g, dtype=DT)
    q_mu = torch.randn(M, L, generator=g, dtype=DT)
    q_sqrt = torch.tril(0.3 * torch.randn(L, M, M, generator=g, dtype=DT)) + 0.7 * torch.eye(M, dtype=DT)
    return tuple(place(t) for t in (X, Y, Z, q_mu, q_sqrt))


def permutation_model(place, D, Z, q_mu, q_sqrt, *, S=2, likelihood=None, L=1):
    """An invariant GP over all D! permutations of D coordinates, trained (as it were) with S samples per input."""
    kernel = InvariantKernel(RBF(D, lengthscale=1.5, variance=1.2), PermutationOrbit(D), S)
    model = place(InvariantSVGP(kernel, InterDomainPoints(Z), likelihood or Gaussian(0.3), 50, num_latent=L,
                                jitter=1e-8))
    model.q.set(q_mu, q_sqrt)
    return model


def brute_force(model, X, Y, q_mu, q_sqrt):
    """Σ_n E_q[log p(y_n | f_n)] − KL with k_f and k_fu summed over the whole orbit (the double sum, no estimator)."""
    with torch.no_grad():
        Luu = model.prior_cholesky()
        A = model.kernel.orbit(X)  # [N, P, E]: every element of each input's orbit
        kff = torch.stack([model.kernel.base.K(a).mean() for a in A])  # [N]: the P² double sum ÷ P²
        mean, var = project(_kuf_interdomain(model.inducing, model.kernel, X), Luu, kff, q_mu, q_sqrt)
        return float(model.likelihood.expected_log_prob(model.likelihood.encode(Y), mean, var).sum()
                     - model.kl(Luu))


@pytest.mark.float64_only(reason="an identity checked to 1e-9")
def test_a_finite_orbit_of_24_is_summed_whole_and_equals_the_brute_force_double_sum(place):
    X, Y, Z, q_mu, q_sqrt = vector_problem(place, D=4)
    model = permutation_model(place, 4, Z, q_mu, q_sqrt, S=2)  # trains with 2 of the 24 permutations
    assert model.augmentation.orbit_size == 24 <= EXACT_ORBIT
    estimate = precise_elbo(model, X, Y, target_se=0.01, batch_size=5)
    assert estimate.exact and estimate.mc_se == 0.0 and estimate.evaluations == 1 and estimate.samples == 24
    assert estimate.elbo == pytest.approx(brute_force(model, X, Y, q_mu, q_sqrt), rel=1e-9)
    assert estimate.phrase() == "exact (whole orbit of 24)" and "whole orbit" in estimate.method


def test_sampled_evaluations_of_a_24_element_orbit_average_to_the_whole_orbit_value(place):
    """Unbiasedness of the sampled estimator (S = 3 of P = 24, without replacement): the mean of many independently
    seeded evaluations agrees with the exact whole-orbit value within 4 standard errors of that mean."""
    X, Y, Z, q_mu, q_sqrt = vector_problem(place, D=4, N=8)
    model = permutation_model(place, 4, Z, q_mu, q_sqrt, S=3)
    exact = precise_elbo(model, X, Y, target_se=1.0).elbo
    draws = torch.tensor([model.full_elbo(X, Y, seed=s, num_samples=3)["elbo"] for s in range(400)], dtype=DT)
    se = float(draws.std()) / math.sqrt(len(draws))
    assert float(draws.std()) > 0.01  # the draws do vary: the check has power
    assert abs(float(draws.mean()) - exact) < 4 * se


def test_an_evaluation_kept_by_input_is_the_models_own_full_elbo_at_its_seed(place):
    """precise_elbo keeps each evaluation per input (for the standard error), drawing what the model's `full_elbo`
    draws: the same total at the same batch size and seed."""
    X, Y, Z, q_mu, q_sqrt = vector_problem(place, D=6, N=40, M=6)
    model = permutation_model(place, 6, Z, q_mu, q_sqrt, S=4)
    runs = precision.Evaluations(model, X, Y, batch_size=15, seed=5)
    ells, kl = runs.one(16, 2)
    assert ells.shape == (40,)
    seed = int(np.random.SeedSequence([5, 16, 2]).generate_state(1)[0])
    whole = model.full_elbo(X, Y, batch_size=15, seed=seed, num_samples=16)
    assert ells.sum() - kl == pytest.approx(whole["elbo"], rel=1e-12)


def test_a_plain_svgp_samples_nothing_and_is_exact():
    g = torch.Generator().manual_seed(1)
    X, Y = torch.randn(30, 2, generator=g, dtype=DT), torch.randn(30, 1, generator=g, dtype=DT)
    model = SVGP(RBF(2), InducingPoints(X[:6].clone()), Gaussian(0.2), 30).to(DT)
    estimate = precise_elbo(model, X, Y, target_se=0.05)
    assert estimate.exact and estimate.evaluations == 1 and estimate.mc_se == 0.0 and estimate.bias == 0.0
    assert estimate.elbo == model.full_elbo(X, Y)["elbo"]


def test_a_sampled_likelihood_without_an_orbit_is_evaluated_over_seeds_to_the_target():
    """Softmax's expectation is a Monte-Carlo one even in a plain SVGP: not exact, repeated over seeds."""
    g = torch.Generator().manual_seed(2)
    X, y = torch.randn(30, 2, generator=g, dtype=DT), torch.randint(0, 3, (30,), generator=g)
    model = SVGP(RBF(2), InducingPoints(X[:6].clone()), Softmax(3), 30, num_latent=3).to(DT)
    with torch.no_grad():
        model.q.q_mu.normal_(generator=g)
    estimate = precise_elbo(model, X, y, target_se=0.5)
    assert not estimate.exact and 0 < estimate.mc_se <= 0.5 and estimate.samples == 1 and estimate.evaluations > 4
    assert estimate.phrase() == f"{estimate.evaluations} evaluation seeds (unbiased)"


def test_a_sampled_orbit_reaches_the_target_with_an_honest_standard_error(place):
    """P = 720 (all permutations of 6 coordinates) is sampled: precise_elbo adds evaluations (then samples) until the
    standard error is at most the target; calls at other base seeds spread about as much as the error they state,
    and their mean is the whole orbit's value."""
    X, Y, Z, q_mu, q_sqrt = vector_problem(place, D=6, N=40, M=6)
    model = permutation_model(place, 6, Z, q_mu, q_sqrt, S=4)
    exact = brute_force(model, X, Y, q_mu, q_sqrt)  # the whole orbit (720 elements) summed
    rough = precise_elbo(model, X, Y, target_se=1e3)  # the first round: S = 16, 4 evaluation seeds
    assert (rough.samples, rough.evaluations, rough.exact) == (16, 4, False) and rough.mc_se > 0
    target = rough.mc_se / 3
    calls = [precise_elbo(model, X, Y, target_se=target, seed=s) for s in range(8)]
    assert all(c.mc_se <= target for c in calls), [(c.mc_se, c.method) for c in calls]
    assert all(c.samples * c.evaluations > 16 * 4 for c in calls)  # more than the first round
    assert calls[0].phrase() == f"{calls[0].samples} samples per input × {calls[0].evaluations} evaluation seeds " \
                                "(unbiased)"
    elbos = torch.tensor([c.elbo for c in calls], dtype=DT)
    stated = math.sqrt(sum(c.mc_se ** 2 for c in calls) / len(calls))
    spread = float(elbos.std())
    assert 0.3 < spread / stated < 3.0, (spread, stated)  # 8 calls: the spread itself is known to about ±25 %
    assert abs(float(elbos.mean()) - exact) < 4 * stated / math.sqrt(len(calls))


def test_a_plug_in_likelihood_reports_its_bias_in_the_direction_of_the_whole_orbit_value(place, monkeypatch):
    """Bernoulli (probit) in the invariant GP is a plug-in of the sampled moments (biased). precise_elbo measures its
    bias by doubling S and says in which direction the estimate moves; a brute-force whole-orbit evaluation (where
    the moments are exact) confirms that direction. Kept tiny: an orbit of 24 sampled from S = 2 (the constants
    lowered here), where the bias is large."""
    monkeypatch.setattr(precision, "EXACT_ORBIT", 8)
    monkeypatch.setattr(precision, "MIN_SAMPLES", 2)
    X, _, Z, q_mu, q_sqrt = vector_problem(place, D=4, N=160, M=6)
    y = place((X[:, 0] > X[:, 1]).to(DT))  # a label the permutations destroy
    model = permutation_model(place, 4, Z, 4.0 * q_mu, q_sqrt, S=2, likelihood=Bernoulli())
    limit = brute_force(model, X, y, 4.0 * q_mu, q_sqrt)
    small = torch.tensor([model.full_elbo(X, y, seed=s, num_samples=2)["elbo"] for s in range(40)], dtype=DT)
    gap, gap_se = float(small.mean()) - limit, float(small.std()) / math.sqrt(len(small))
    assert abs(gap) > 4 * gap_se, (gap, gap_se)  # at S = 2 the plug-in's bias is clearly there
    estimate = precise_elbo(model, X, y, target_se=0.2)
    assert estimate.samples >= 4 and estimate.plug_in  # here S may grow to the whole orbit: exact there
    direction = "falls" if gap > 0 else "rises"  # above the limit at small S: it falls towards it as S grows
    assert f"the plug-in estimate {direction} as S grows" in estimate.method, estimate.method
    assert abs(estimate.elbo - limit) < abs(gap) / 2  # far closer to the limit than at the training S
    assert abs(estimate.bias) <= max(0.2, 2 * 0.2 * math.sqrt(2)) or "cap" in estimate.method


def test_a_finished_run_with_an_elbo_precision_keeps_the_estimate_and_its_error():
    config = RunConfig("invariant", {"dataset": "digits", "subset": 60, "test_subset": 30, "seed": 0},
                       {"augmentation": "rotation", "num_inducing": 8, "num_samples": 3, "num_predict_samples": 4},
                       {"steps": 3, "batch_size": 20, "eval_every": 0, "elbo_precision": 2.0})
    trainer = Trainer(config)
    for _ in trainer.run():
        pass
    final = trainer.final_elbo
    assert {"elbo", "expected_log_lik", "kl", "mc_se", "samples", "evaluations", "exact", "bias"} <= set(final)
    assert 0 < final["mc_se"] <= 2.0 and final["samples"] >= 16 and final["evaluations"] >= 4 and final["exact"] == 0
    assert trainer.report.elbo_estimate.elbo == final["elbo"]
    plain = RunConfig(config.model, config.data, config.model_config, {**config.train, "elbo_precision": 0.0})
    with pytest.raises(Exception, match="elbo_precision"):
        RunConfig(config.model, config.data, config.model_config, {**config.train, "elbo_precision": -1}).validate()
    trainer = Trainer(plain)
    for _ in trainer.run():
        pass
    assert set(trainer.final_elbo) == {"elbo", "expected_log_lik", "kl"}  # 0: one evaluation at seed 0, as before
