"""`invlab.train.watch` takes a GPyTorch model: a user's `ApproximateGP` with `ConvKernel` and the inter-domain
strategy, trained by their own loop, is recorded in the run store with its hyperparameters (as views and as metrics
over training), the KL term, the K_uu spectrum and the inducing patches as images, each equal to what the model
holds; a plain GPyTorch SVGP's inducing images are drawn when they are square images."""
import numpy as np
import pytest
import torch

gpytorch = pytest.importorskip("gpytorch")

from invlab.errors import ConfigError  # noqa: E402
from invlab.train import RunStore, watch  # noqa: E402


def conv_model(seed=0):
    from benchmarks.gpytorch.conv import ConvApproximateGP

    g = torch.Generator().manual_seed(seed)
    X = torch.rand(40, 64, generator=g, dtype=torch.float64)
    y = (X[:, :32].sum(1) > X[:, 32:].sum(1)).double()
    model = ConvApproximateGP((8, 8), torch.rand(6, 9, generator=g, dtype=torch.float64), 0.8, 1.2).double()
    return model, X, y


def test_a_watched_gpytorch_model_stores_its_hyperparameters_spectrum_and_inducing_patches(tmp_path):
    model, X, y = conv_model()
    likelihood = gpytorch.likelihoods.BernoulliLikelihood()
    mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=X.shape[0])
    optimiser = torch.optim.Adam(model.parameters(), lr=0.05)
    with watch(model, name="my gpytorch loop", data_dir=tmp_path, likelihood=likelihood) as run:
        for step in range(1, 6):
            optimiser.zero_grad()
            loss = -mll(model(X), y)
            loss.backward()
            optimiser.step()
            run.log(step, loss=loss)
            run.snapshot()
        run_id = run.run_id
    store = RunStore(tmp_path / "runs.sqlite")
    try:
        views = store.views.written_after(run_id, 0).views
        history = store.metrics.read(run_id)
    finally:
        store.close()
    base = model.covar_module.base_kernel
    lengthscale = float(base.base_kernel.lengthscale)
    assert views["hyperparameters"].values == pytest.approx({
        "covar_module.base_kernel.base_kernel.lengthscale": lengthscale,
        "covar_module.base_kernel.outputscale": float(base.outputscale)})
    steps, values = history["hyperparameters/covar_module.base_kernel.base_kernel.lengthscale"]
    assert steps == [1, 2, 3, 4, 5] and values[-1] == pytest.approx(lengthscale) and values[0] != values[-1]
    strategy = model.variational_strategy
    with torch.no_grad():
        kl = float(strategy.kl_divergence())
        Z = strategy.inducing_points.detach()
        Kuu = float(base.outputscale) * base.base_kernel(Z, Z).to_dense()
    assert views["elbo_terms"].values["KL(q(u) ‖ p(u))"] == pytest.approx(kl)
    np.testing.assert_allclose(np.sort(views["kuu_spectrum"].values), np.linalg.eigvalsh(Kuu.numpy()), atol=1e-10)
    grid = views["inducing"]
    assert grid.images.shape == (1, 6, 3, 3) and "Inducing patches (6 of 6)" in grid.title
    np.testing.assert_allclose(grid.images[0], Z.numpy().reshape(6, 3, 3))


def test_a_plain_gpytorch_svgps_square_inducing_inputs_are_images_and_its_noise_is_shown(tmp_path):
    from gpytorch.variational import CholeskyVariationalDistribution, VariationalStrategy

    class SVGP(gpytorch.models.ApproximateGP):
        def __init__(self, Z):
            super().__init__(VariationalStrategy(self, Z, CholeskyVariationalDistribution(Z.shape[0])))
            self.mean_module = gpytorch.means.ConstantMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel(ard_num_dims=16))

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    model = SVGP(torch.rand(10, 16))
    likelihood = gpytorch.likelihoods.GaussianLikelihood()
    likelihood.noise = 0.25
    with watch(model, name="svgp", data_dir=tmp_path, likelihood=likelihood) as run:
        run.log(1, loss=1.0)
        views = run.snapshot()
    assert views["hyperparameters"].values["likelihood.noise"] == pytest.approx(0.25)
    assert views["hyperparameters"].values["covar_module.base_kernel.lengthscale"] == pytest.approx(
        float(model.covar_module.base_kernel.lengthscale.mean()))
    assert views["inducing"].images.shape == (2, 8, 4, 4)  # 10 images of 4×4, the last row padded
    assert len(views["kuu_spectrum"].values) == 10


def test_a_likelihood_for_a_model_that_is_not_gpytorchs_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="likelihood= is for a GPyTorch model"):
        watch(object(), name="x", data_dir=tmp_path, likelihood=gpytorch.likelihoods.GaussianLikelihood())
