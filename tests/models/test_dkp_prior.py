"""Prior samples of deep kernel processes and the prior explorer (Aitchison, Yang & Ober 2021 Fig. 2, app. H Fig. 5,
app. J Fig. 6)."""
import numpy as np
import pytest
import torch

from invlab import diagnostics as dg
from invlab.errors import ConfigError
from invlab.kernels.gram import SquaredExponentialGram
from invlab.models.dkp.prior import PriorExplorer, prior_functions, sample_deep_prior

DT = torch.float64


def test_the_gp_limit_is_the_deterministic_kernel_composition(place, tol, assert_close):
    X = place(torch.linspace(-2, 2, 9, dtype=DT)[:, None])
    k = place(SquaredExponentialGram(lengthscale=0.8))
    grams = sample_deep_prior(X, k, 3, process="gp", jitter=0.0)
    assert_close(grams[0], X @ X.T, tol.f64())
    assert_close(grams[2], k.K(k.K(X @ X.T)), tol.f64())


def test_one_layer_deep_iw_is_a_squared_exponential_with_a_random_lengthscale(place, tol, assert_close):
    """App. J: with 1-D inputs G₁ = Ω x xᵀ, so K(G₁) = exp(−Ω (x − x')²/2) with Ω ~ InvGamma((δ + 2)/2, δ/2)."""
    X = place(torch.linspace(-2, 2, 7, dtype=DT)[:, None])
    k = place(SquaredExponentialGram())
    torch.manual_seed(0)
    G = sample_deep_prior(X, k, 1, delta=3.0)[0]
    omega = G[-1, -1] / 4.0
    assert_close(G, omega * X @ X.T, tol.f64())
    assert_close(k.K(G), torch.exp(-0.5 * omega * (X - X.T) ** 2), tol.f64())
    omegas = torch.stack([sample_deep_prior(X[-1:], k, 1, delta=3.0)[0][0, 0] / 4.0 for _ in range(1000)]).double()
    assert abs(float(omegas.mean()) - 1.0) < 3 * float(omegas.std()) / np.sqrt(1000)  # E[Ω] = I


def test_prior_functions_have_the_kernel_as_covariance(place, tol, assert_close):
    torch.manual_seed(1)
    x = place(torch.linspace(-1, 1, 4, dtype=DT)[:, None])
    K = place(SquaredExponentialGram()).K(x @ x.T)
    f = prior_functions(K, 50_000)
    assert_close(torch.cov(f.double()), K, tol.f64(atol=0.03))


def test_explorer_returns_typed_views_that_follow_its_parameters():
    explorer = PriorExplorer(size=150, num_points=40, num_panels=2, num_functions=3)
    views = explorer.views()
    spectra = [views[k] for k in ("wishart_eigenvalues", "residual_wishart_eigenvalues", "inverse_wishart_eigenvalues")]
    assert all(isinstance(s, dg.Spectrum) and s.values.shape == (150,) for s in spectra)
    for s in spectra:  # all three have mean I: the eigenvalues average to about 1
        assert abs(s.values.mean() - 1.0) < 0.25
    assert isinstance(views["prior_functions_gp"], dg.Curves) and len(views["prior_functions_gp"].series) == 3
    assert {"prior_functions_1", "prior_functions_2"} <= set(views) and "prior_functions_3" not in views
    assert isinstance(views["top_gram"], dg.Heatmap) and views["top_gram"].matrix.shape == (40, 40)
    # same seed, same pictures; a new δ changes the inverse Wishart panel only
    again = explorer.views()
    assert np.array_equal(again["inverse_wishart_eigenvalues"].values, views["inverse_wishart_eigenvalues"].values)
    explorer.delta = 150.0
    moved = explorer.views()
    assert np.array_equal(moved["wishart_eigenvalues"].values, views["wishart_eigenvalues"].values)
    # app. H: the Wishart (N = P) has eigenvalues near zero; an inverse Wishart with δ ~ N does not
    assert moved["wishart_eigenvalues"].values.min() < 0.01 < 0.1 < moved["inverse_wishart_eigenvalues"].values.min()


def test_explorer_panels_share_the_first_layer_when_deep():
    explorer = PriorExplorer(num_points=30, num_panels=2, num_layers=1)
    _, _, _, panels = explorer.function_samples()
    assert not np.allclose(panels[0][0], panels[1][0])  # one layer: each panel draws its own Ω
    explorer.num_layers = 2
    _, _, _, panels = explorer.function_samples()
    assert np.array_equal(panels[0][0], panels[1][0])  # app. J: the panels share the first layer ...
    assert not np.allclose(panels[0][1], panels[1][1])  # ... and differ through the second


def test_explorer_and_sampler_refuse_bad_values():
    with pytest.raises(ValueError, match="delta"):
        PriorExplorer(delta=-1.0)
    with pytest.raises(ValueError, match="num_layers"):
        PriorExplorer(num_layers=0)
    with pytest.raises(ConfigError, match="process"):
        sample_deep_prior(torch.zeros(3, 1, dtype=DT), SquaredExponentialGram(), 1, process="nope")
    with pytest.raises(ConfigError, match="width"):
        sample_deep_prior(torch.zeros(3, 1, dtype=DT), SquaredExponentialGram(), 2, process="wishart", width=2.5)


def test_the_same_seed_draws_the_same_pictures_while_another_thread_draws_from_torchs_stream():
    """On a served dashboard the prior page draws while other pages' threads train (drawing from torch's
    process-wide random stream) and evaluate (seeding it for their own estimates, `invlab.settings.seeded`): the
    prior page's pictures must still be its seed's (they once came out different on a busy server)."""
    import threading

    from invlab.settings import seeded

    def pictures():
        views = PriorExplorer(size=60, num_points=40).views()
        spectra = [np.asarray(v.values) for v in views.values() if isinstance(v, dg.Spectrum)]
        curves = [np.asarray(y) for v in views.values() if isinstance(v, dg.Curves) for _, y in v.series.values()]
        return spectra + curves

    alone = pictures()
    stop = threading.Event()

    def training_and_evaluating():  # another page: draws as it trains, and its evaluation's own seed
        while not stop.is_set():
            torch.randn(20_000, dtype=DT)
            with seeded(1234):
                torch.randn(20_000, dtype=DT)

    other = threading.Thread(target=training_and_evaluating, daemon=True)
    other.start()
    try:
        busy = [pictures() for _ in range(12)]
    finally:
        stop.set()
        other.join(timeout=30)
    differ = [k for k, got in enumerate(busy) if any(not np.array_equal(a, b) for a, b in zip(alone, got))]
    assert differ == [], f"{len(differ)} of {len(busy)} redraws differ from the same seed's pictures drawn alone"


def test_seeded_blocks_in_two_threads_each_draw_their_own_seeds_numbers():
    """`seeded` blocks take turns across threads: a block never draws numbers another thread's seed started."""
    import threading

    from invlab.settings import seeded

    def draw(seed):
        with seeded(seed):
            return [torch.randn(5_000, dtype=DT) for _ in range(20)]

    expected = {seed: draw(seed) for seed in (1, 2)}
    wrong = []

    def worker(seed):
        for _ in range(15):
            got = draw(seed)
            if not all(torch.equal(a, b) for a, b in zip(got, expected[seed])):
                wrong.append(seed)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert wrong == [], f"{len(wrong)} of 30 blocks drew another seed's numbers"


def test_a_wishart_drawn_with_a_generator_is_the_global_streams_draw_and_keeps_its_gradient_in_nu():
    from invlab.models.dkp.wishart import InverseWishart, Wishart, bartlett

    scale = torch.eye(4, dtype=DT) + 0.3
    torch.manual_seed(7)
    by_stream = (Wishart(6.5, scale=scale).rsample(), InverseWishart(9.0, scale=scale).rsample())
    generator = torch.Generator().manual_seed(7)
    by_generator = (Wishart(6.5, scale=scale).rsample(generator=generator),
                    InverseWishart(9.0, scale=scale).rsample(generator=generator))
    for a, b in zip(by_stream, by_generator):
        assert torch.equal(a, b)
    nu = torch.tensor(7.0, dtype=DT, requires_grad=True)
    A = bartlett(4, nu, generator=torch.Generator().manual_seed(3))
    (A.diagonal() ** 2).sum().backward()  # the χ² draws' sum: its gradient in ν is the implicit one, positive
    assert nu.grad is not None and torch.isfinite(nu.grad) and nu.grad > 0
