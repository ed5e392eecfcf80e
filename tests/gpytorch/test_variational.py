"""`InterDomainVariationalStrategy` against the lab's own models: a GPyTorch `ApproximateGP` holding the same numbers
(base-kernel hyperparameters, inducing patches or points, q(v), patch weights, noise) has GPyTorch's
`VariationalELBO` equal to the lab's ELBO (divided by N) to 1e-8 in float64, for the convolutional GP with inducing
patches (van der Wilk, Rasmussen & Hensman 2017, eq. 15–16; plain and weighted) and for an invariant GP over a finite
orbit with inducing points in the non-invariant function's space (van der Wilk, Bauer, John & Hensman 2018, eq. 13),
and the gradient reaching the inducing inputs is the lab's."""
import pytest
import torch

gpytorch = pytest.importorskip("gpytorch")

from gpytorch.distributions import MultivariateNormal  # noqa: E402
from gpytorch.kernels import RBFKernel, ScaleKernel  # noqa: E402
from gpytorch.variational import CholeskyVariationalDistribution  # noqa: E402

from invlab.errors import ConfigError, ShapeError  # noqa: E402
from invlab.gpytorch import ConvKernel, InducingPatches, InterDomainVariationalStrategy, InvariantKernel  # noqa: E402
from invlab.inducing import InducingPatches as LabPatches  # noqa: E402
from invlab.inducing import InterDomainPoints  # noqa: E402
from invlab.kernels import RBF  # noqa: E402
from invlab.kernels.convolutional import Convolutional, WeightedConvolutional  # noqa: E402
from invlab.kernels.invariant import InvariantKernel as LabInvariant  # noqa: E402
from invlab.likelihoods.gaussian import Gaussian  # noqa: E402
from invlab.models.convolutional import ConvolutionalGP  # noqa: E402
from invlab.models.invariant import InvariantSVGP  # noqa: E402
from invlab.transforms import build_augmentation  # noqa: E402

JITTER = 1e-6
LENGTHSCALE, VARIANCE, NOISE = 0.9, 1.4, 0.3


pytestmark = pytest.mark.usefixtures("float64")


class HostedGP(gpytorch.models.ApproximateGP):
    """A user's ApproximateGP: zero mean, the given covariance module, the inter-domain strategy at Z."""

    def __init__(self, covar_module, inducing, M):
        q = CholeskyVariationalDistribution(M)
        super().__init__(InterDomainVariationalStrategy(self, inducing, q, jitter_val=JITTER))
        self.mean_module = gpytorch.means.ZeroMean()
        self.covar_module = covar_module

    def forward(self, x):
        return MultivariateNormal(self.mean_module(x), self.covar_module(x))


def base_kernel():
    k = ScaleKernel(RBFKernel())
    k.base_kernel.lengthscale, k.outputscale = LENGTHSCALE, VARIANCE
    return k


def variational(M, seed):
    g = torch.Generator().manual_seed(seed)
    q_mu = torch.randn(M, 1, generator=g)
    q_sqrt = torch.tril(0.3 * torch.randn(M, M, generator=g), -1) + torch.diag(0.5 + torch.rand(M, generator=g))
    return q_mu, q_sqrt


def hosted_elbo(hosted, q_mu, q_sqrt, X, y):
    """GPyTorch's VariationalELBO of `hosted` with q(v) = N(q_mu, q_sqrt q_sqrtᵀ), and the mll's own likelihood."""
    strategy = hosted.variational_strategy
    with torch.no_grad():
        strategy._variational_distribution.variational_mean.copy_(q_mu[:, 0])
        strategy._variational_distribution.chol_variational_covar.copy_(q_sqrt)
    strategy.variational_params_initialized.fill_(1)
    likelihood = gpytorch.likelihoods.GaussianLikelihood()
    likelihood.noise = NOISE
    hosted.train(), likelihood.train()
    mll = gpytorch.mlls.VariationalELBO(likelihood, hosted, num_data=X.shape[0])
    return mll(hosted(X), y)


def lab_elbo(model, q_mu, q_sqrt, X, y):
    with torch.no_grad():
        model.q.set(q_mu, q_sqrt[None])
    return model.elbo_terms(X, y)["elbo"]


def conv_pair(weighted, seed=0):
    """(lab ConvolutionalGP, hosted ApproximateGP, images [N, 1, 6, 6], targets [N]) with the same numbers."""
    g = torch.Generator().manual_seed(seed)
    N, M, shape = 30, 8, (1, 6, 6)
    X = torch.rand(N, *shape, generator=g)
    y = torch.randn(N, generator=g)
    cls = WeightedConvolutional if weighted else Convolutional
    lab_kernel = cls(RBF(lengthscale=LENGTHSCALE, variance=VARIANCE), shape, 3, 1, colour_patches=False)
    lab_kernel.weight = 1.0 / lab_kernel.num_patches
    patches = lab_kernel.patches(X).reshape(-1, 9)
    Z = patches[torch.randperm(patches.shape[0], generator=g)[:M]] + 0.01 * torch.randn(M, 9, generator=g)
    conv = ConvKernel(base_kernel(), image_shape=(6, 6), patch_shape=3, weighted=weighted)
    if weighted:
        w = 1.0 + 0.5 * torch.randn(lab_kernel.num_patches, generator=g)
        lab_kernel.weights.assign(w)
        conv.conv.weights.assign(w)
    lab = ConvolutionalGP(lab_kernel, LabPatches(Z, (1, 3, 3)), Gaussian(variance=NOISE), N, jitter=JITTER)
    hosted = HostedGP(conv, InducingPatches(Z.clone()), M)
    return lab, hosted, X, y


@pytest.mark.parametrize("weighted", [False, True], ids=["conv-invariant", "conv-weighted"])
def test_the_hosted_convolutional_gp_has_the_labs_elbo_and_inducing_patch_gradient(weighted):
    lab, hosted, X, y = conv_pair(weighted)
    q_mu, q_sqrt = variational(8, seed=1)
    ours = lab_elbo(lab, q_mu, q_sqrt, X, y)
    theirs = hosted_elbo(hosted, q_mu, q_sqrt, X.flatten(1), y)
    assert abs(float(theirs) - float(ours) / X.shape[0]) < 1e-8
    assert abs(float(ours)) > 1.0  # a real value, not two zeros
    ours.backward(), theirs.backward()
    dZ_lab = lab.inducing.Z.grad / X.shape[0]
    dZ_hosted = hosted.variational_strategy.inducing_points.grad
    assert dZ_lab.abs().max() > 1e-4
    torch.testing.assert_close(dZ_hosted, dZ_lab, rtol=1e-7, atol=1e-10)
    if weighted:  # the patch weights are learned through the strategy too
        dw_lab = lab.kernel.weights.raw.grad / X.shape[0]
        torch.testing.assert_close(hosted.covar_module.conv.weights.raw.grad, dw_lab, rtol=1e-7, atol=1e-10)


def test_the_hosted_invariant_gp_over_a_finite_orbit_has_the_labs_elbo():
    g = torch.Generator().manual_seed(3)
    N, M, shape = 24, 7, (1, 5, 5)
    X = torch.rand(N, *shape, generator=g)
    y = torch.randn(N, generator=g)
    orbit = build_augmentation("rot90", shape)
    lab_kernel = LabInvariant(RBF(lengthscale=LENGTHSCALE, variance=VARIANCE), orbit, num_samples=orbit.orbit_size)
    Z = X[:M].flatten(1) + 0.05 * torch.randn(M, 25, generator=g)
    lab = InvariantSVGP(lab_kernel, InterDomainPoints(Z), Gaussian(variance=NOISE), N, jitter=JITTER)
    hosted = HostedGP(InvariantKernel(base_kernel(), "rot90", input_shape=shape), Z.clone(), M)
    q_mu, q_sqrt = variational(M, seed=4)
    ours = lab_elbo(lab, q_mu, q_sqrt, X, y)
    theirs = hosted_elbo(hosted, q_mu, q_sqrt, X.flatten(1), y)
    assert abs(float(theirs) - float(ours) / N) < 1e-8
    ours.backward(), theirs.backward()
    torch.testing.assert_close(hosted.variational_strategy.inducing_points.grad, lab.inducing.Z.grad / N,
                               rtol=1e-7, atol=1e-10)


def test_a_scale_kernel_around_the_conv_kernel_scales_g():
    """ScaleKernel(ConvKernel(RBF)) with outputscale s is ConvKernel(ScaleKernel(RBF)) with outputscale s: the same
    prior, so the same ELBO."""
    _, hosted, X, y = conv_pair(False)
    Z = hosted.variational_strategy.inducing_points.detach().clone()
    outer = ScaleKernel(ConvKernel(RBFKernel(), image_shape=(6, 6), patch_shape=3))
    outer.outputscale, outer.base_kernel.base_kernel.lengthscale = VARIANCE, LENGTHSCALE
    q_mu, q_sqrt = variational(8, seed=2)
    a = hosted_elbo(hosted, q_mu, q_sqrt, X.flatten(1), y)
    b = hosted_elbo(HostedGP(outer, InducingPatches(Z), 8), q_mu, q_sqrt, X.flatten(1), y)
    assert abs(float(a) - float(b)) < 1e-10


def test_predictions_in_eval_mode_have_a_full_covariance_and_the_training_marginals():
    _, hosted, X, y = conv_pair(False)
    q_mu, q_sqrt = variational(8, seed=5)
    hosted_elbo(hosted, q_mu, q_sqrt, X.flatten(1), y)
    with torch.no_grad():
        train_var = hosted(X.flatten(1)).variance
        hosted.eval()
        out = hosted(X.flatten(1))
        full = out.covariance_matrix
    assert full.shape == (30, 30)
    torch.testing.assert_close(full.diagonal(), out.variance)
    torch.testing.assert_close(out.variance, train_var + JITTER, rtol=1e-9, atol=1e-12)  # eval adds the jitter


def test_the_strategy_refuses_what_it_cannot_do():
    with pytest.raises(ConfigError, match="ConvKernel or InvariantKernel"):
        hosted = HostedGP(base_kernel(), torch.zeros(3, 9), 3)
        hosted(torch.rand(4, 9))
    conv = ConvKernel(base_kernel(), image_shape=(6, 6), patch_shape=3)
    with pytest.raises(ShapeError, match="inducing patches have 4 values but the kernel's patches have 9"):
        HostedGP(conv, InducingPatches(torch.zeros(3, 4)), 3)(torch.rand(4, 36))
    with pytest.raises(ShapeError, match=r"\[M, E\]"):
        InducingPatches(torch.zeros(9))


def test_inducing_patches_from_images_are_distinct_patches_of_those_images():
    conv = ConvKernel(RBFKernel(), image_shape=(6, 6), patch_shape=3)
    X = torch.rand(5, 36, generator=torch.Generator().manual_seed(0))
    Z = InducingPatches.from_images(conv, X, 12, torch.Generator().manual_seed(1)).Z
    all_patches = conv.conv.patches(X.reshape(5, 1, 6, 6)).reshape(-1, 9)
    assert Z.shape == (12, 9) and torch.unique(Z, dim=0).shape[0] == 12
    assert all(bool((all_patches == z).all(-1).any()) for z in Z)


def test_the_invariant_kernel_serves_gpytorchs_own_variational_strategy_too():
    """With GPyTorch's own VariationalStrategy (inducing points in the space of f, K_uu = k_f(Z, Z) by the orbit sum)
    the prior of an ApproximateGP is invariant: q(f) at an image and at its rotation by 90° are the same."""
    from gpytorch.variational import VariationalStrategy

    class Plain(gpytorch.models.ApproximateGP):
        def __init__(self, Z):
            super().__init__(VariationalStrategy(self, Z, CholeskyVariationalDistribution(Z.shape[0])))
            self.mean_module = gpytorch.means.ZeroMean()
            self.covar_module = InvariantKernel(base_kernel(), "rot90", input_shape=(1, 5, 5))

        def forward(self, x):
            return MultivariateNormal(self.mean_module(x), self.covar_module(x))

    g = torch.Generator().manual_seed(6)
    model = Plain(torch.rand(6, 25, generator=g))
    q_mu, q_sqrt = variational(6, seed=7)
    X = torch.rand(5, 1, 5, 5, generator=g)
    hosted_elbo(model, q_mu, q_sqrt, X.flatten(1), torch.randn(5, generator=g))  # sets q(v), trains one call
    model.eval()
    with torch.no_grad():
        a, b = model(X.flatten(1)), model(torch.rot90(X, 1, (-2, -1)).flatten(1))
    torch.testing.assert_close(a.mean, b.mean)
    torch.testing.assert_close(a.variance, b.variance)
    assert a.mean.abs().max() > 1e-3
