"""`invlab.gpytorch`'s kernels against sums written out by hand over the GPyTorch base kernel: the convolutional kernel
of van der Wilk, Rasmussen & Hensman 2017 (eq. 14, 18) over every pair of patches, and the invariant kernel of van der
Wilk et al. 2018 over every pair of orbit elements; their gradients with respect to GPyTorch's own raw parameters; and
GPyTorch's own base kernel checks (batches of inputs, `diag=True`, active dimensions, pickling, dtypes)."""
import itertools
import pickle
import unittest

import pytest
import torch

gpytorch = pytest.importorskip("gpytorch")

from gpytorch.kernels import LinearKernel, MaternKernel, RBFKernel, ScaleKernel  # noqa: E402
from gpytorch.test.base_kernel_test_case import BaseKernelTestCase  # noqa: E402

from invlab.errors import ConfigError, ShapeError  # noqa: E402
from invlab.gpytorch import ConvKernel, InvariantKernel  # noqa: E402


def hand_patches(X, h, w, colour):
    """[N, C, H, W] → [N, P, E] by loops: channel-major then row-major positions (a patch holds every channel with
    `colour`)."""
    N, C, H, W = X.shape
    positions = [(i, j) for i in range(H - h + 1) for j in range(W - w + 1)]
    if colour:
        return torch.stack([X[:, :, i:i + h, j:j + w].reshape(N, -1) for i, j in positions], 1)
    return torch.stack([X[:, c, i:i + h, j:j + w].reshape(N, -1) for c in range(C) for i, j in positions], 1)


def hand_conv(base, X1, X2, h, w, weights, colour=False):
    """Σ_p Σ_q w_p w_q k_g(x[p], x'[q]) with k_g the GPyTorch kernel, every pair formed."""
    A, B = hand_patches(X1, h, w, colour), hand_patches(X2, h, w, colour)
    K = base(A.reshape(-1, A.shape[-1]), B.reshape(-1, B.shape[-1])).to_dense()
    K = K.reshape(A.shape[0], A.shape[1], B.shape[0], B.shape[1])
    return torch.einsum("p,ipjq,q->ij", weights, K, weights)


def scaled_rbf(ard=None, lengthscale=0.7, outputscale=1.3):
    k = ScaleKernel(RBFKernel(ard_num_dims=ard))
    k.base_kernel.lengthscale = lengthscale if ard is None else torch.linspace(0.5, 1.5, ard)
    k.outputscale = outputscale
    return k


pytestmark = pytest.mark.usefixtures("float64")


CASES = {
    "rbf": lambda: (scaled_rbf(), dict()),
    "ard": lambda: (scaled_rbf(ard=9), dict()),
    "matern": lambda: (MaternKernel(nu=2.5), dict()),
    "weighted": lambda: (scaled_rbf(), dict(weighted=True)),
    "linear (brute force)": lambda: (LinearKernel(), dict(weighted=True)),
}


@pytest.mark.parametrize("case", CASES)
def test_conv_kernel_is_the_sum_over_every_pair_of_patches(case):
    base, options = CASES[case]()
    gen = torch.Generator().manual_seed(0)
    X1 = (torch.rand(5, 1, 6, 7, generator=gen) > 0.5).double()  # binary: repeated patches, summed first
    X2 = torch.rand(4, 1, 6, 7, generator=gen)
    kernel = ConvKernel(base, (6, 7), 3, **options)
    if kernel.conv.patch_weights() is not None:
        with torch.no_grad():
            kernel.conv.weights.raw.copy_(torch.randn(kernel.num_patches, generator=gen))
    w = kernel.patch_weights
    assert kernel.num_patches == 20 and w.shape == (20,)
    expected = hand_conv(base, X1, X2, 3, 3, w)
    assert torch.allclose(kernel(X1.reshape(5, -1), X2.reshape(4, -1)).to_dense(), expected, rtol=1e-10, atol=1e-12)
    self_K = hand_conv(base, X1, X1, 3, 3, w)
    assert torch.allclose(kernel(X1.reshape(5, -1), diag=True), self_K.diagonal(), rtol=1e-10, atol=1e-12)
    if case == "rbf":  # the default scale: f is the mean of the patch responses, w_p = 1/P
        assert torch.allclose(w, torch.full((20,), 1 / 20))


def test_colour_patches_hold_every_channel_and_grey_patches_one():
    gen = torch.Generator().manual_seed(1)
    X = torch.rand(4, 3, 5, 5, generator=gen)
    for colour, P in ((True, 9), (False, 27)):
        base = scaled_rbf(lengthscale=1.1)
        kernel = ConvKernel(base, (3, 5, 5), 3, colour=colour)
        assert kernel.num_patches == P
        expected = hand_conv(base, X, X, 3, 3, torch.full((P,), 1 / P), colour=colour)
        assert torch.allclose(kernel(X.reshape(4, -1)).to_dense(), expected, rtol=1e-10)


def test_conv_kernel_gradients_reach_gpytorchs_raw_parameters_and_the_weights():
    gen = torch.Generator().manual_seed(2)
    X = (torch.rand(6, 1, 5, 5, generator=gen) > 0.6).double()
    R = torch.randn(6, 6, generator=gen)
    base = scaled_rbf()
    kernel = ConvKernel(base, (5, 5), (2, 3), weighted=True)
    with torch.no_grad():
        kernel.conv.weights.raw.copy_(torch.randn(kernel.num_patches, generator=gen))
    params = [base.raw_outputscale, base.base_kernel.raw_lengthscale, kernel.conv.weights.raw]
    fast = torch.autograd.grad((kernel(X.reshape(6, -1)).to_dense() * R).sum(), params)
    slow = torch.autograd.grad((hand_conv(base, X, X, 2, 3, kernel.patch_weights) * R).sum(), params)
    for a, b in zip(fast, slow):
        assert torch.allclose(a, b, rtol=1e-9, atol=1e-12)
    assert {id(p) for p in kernel.parameters()} == {id(p) for p in params}  # each parameter once


def test_bad_shapes_and_batched_base_kernels_are_refused_with_a_message():
    kernel = ConvKernel(RBFKernel(), (4, 4), 2)
    with pytest.raises(ShapeError, match="flattened 1×4×4 images"):
        kernel(torch.rand(3, 15)).to_dense()
    with pytest.raises(ShapeError, match="larger than"):
        ConvKernel(RBFKernel(), (4, 4), 5)
    with pytest.raises(ConfigError, match="batch_shape"):
        ConvKernel(RBFKernel(batch_shape=torch.Size([2])), (4, 4), 2)
    with pytest.raises(ConfigError, match="batch_shape"):
        InvariantKernel(RBFKernel(), "flips", input_shape=(1, 4, 4), batch_shape=torch.Size([3]))
    with pytest.raises(ConfigError, match="finite orbit"):
        InvariantKernel(RBFKernel(), "rotation", input_shape=(1, 4, 4))


def test_invariant_kernel_is_the_average_over_every_pair_of_rotations():
    gen = torch.Generator().manual_seed(3)
    X1, X2 = torch.rand(4, 1, 5, 5, generator=gen), torch.rand(3, 1, 5, 5, generator=gen)
    base = scaled_rbf(lengthscale=2.0)
    kernel = InvariantKernel(base, "rot90", input_shape=(1, 5, 5))
    assert kernel.orbit_size == 4

    def flat_rotations(X):
        return torch.stack([torch.rot90(X, k, dims=(-2, -1)).reshape(X.shape[0], -1) for k in range(4)], 1)

    A, B = flat_rotations(X1), flat_rotations(X2)
    expected = base(A.reshape(-1, 25), B.reshape(-1, 25)).to_dense().reshape(4, 4, 3, 4).mean((1, 3))
    K = kernel(X1.reshape(4, -1), X2.reshape(3, -1)).to_dense()
    assert torch.allclose(K, expected, rtol=1e-12)
    turned = torch.rot90(X1, 1, dims=(-2, -1)).reshape(4, -1)  # invariant: a turned image has the same covariances
    assert torch.allclose(kernel(turned, X2.reshape(3, -1)).to_dense(), K, rtol=1e-12)
    assert not torch.allclose(base(turned, X2.reshape(3, -1)).to_dense(), base(X1.reshape(4, -1), X2.reshape(3, -1))
                              .to_dense())
    diag = kernel(X1.reshape(4, -1), diag=True)
    assert torch.allclose(diag, base(A.reshape(-1, 25)).to_dense().reshape(4, 4, 4, 4).mean((1, 3)).diagonal())


def test_invariant_kernel_over_coordinate_permutations_takes_its_dimension_from_the_data():
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(5, 3, generator=gen)
    base = RBFKernel()
    kernel = InvariantKernel(base, "permutations")
    K = kernel(x).to_dense()
    perms = list(itertools.permutations(range(3)))
    A = torch.stack([x[:, list(p)] for p in perms], 1)  # [5, 6, 3]
    expected = base(A.reshape(-1, 3)).to_dense().reshape(5, 6, 5, 6).mean((1, 3))
    assert kernel.orbit_size == 6 and torch.allclose(K, expected, rtol=1e-12)
    pair = InvariantKernel(base, "permutations", orbit_options={"coordinates": "0,1"})
    assert pair(x[:, [1, 0, 2]], x).to_dense().allclose(pair(x).to_dense())
    assert pickle.loads(pickle.dumps(kernel))(x).to_dense().allclose(K)


def test_an_exact_gp_with_the_conv_kernel_trains_on_rectangles_with_gpytorchs_own_loop():
    from invlab.data import load

    ds = load("rectangles", num_train=120, num_test=200, image_size=12)
    X, Xt = (torch.as_tensor(a, dtype=torch.float64).reshape(len(a), -1) for a in (ds.X_train, ds.X_test))
    y = torch.as_tensor(ds.y_train, dtype=torch.float64) * 2 - 1  # ±1 targets, classified by the mean's sign

    class ConvGP(gpytorch.models.ExactGP):
        def __init__(self, kernel):
            super().__init__(X, y, gpytorch.likelihoods.GaussianLikelihood())
            self.mean_module, self.covar_module = gpytorch.means.ZeroMean(), kernel

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    def test_error(kernel, steps=30):
        model = ConvGP(kernel)
        model.train()
        optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
        mll = gpytorch.mlls.ExactMarginalLogLikelihood(model.likelihood, model)
        for _ in range(steps):
            optimizer.zero_grad()
            (-mll(model(X), y)).backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            mean = model(Xt).mean
        return float(((mean > 0).long() != torch.as_tensor(ds.y_test)).double().mean())

    conv = test_error(ConvKernel(ScaleKernel(RBFKernel()), (12, 12), 3))
    plain = test_error(ScaleKernel(RBFKernel()))
    # a rectangle's outline is told by its corners and edges wherever it sits: the sum over patches sees them
    assert conv <= 0.05 and conv < plain, (conv, plain)


class _Float32:
    def setUp(self):
        self._dtype = torch.get_default_dtype()
        torch.set_default_dtype(torch.float32)

    def tearDown(self):
        torch.set_default_dtype(self._dtype)


class _RefusesKernelBatches:
    """GPyTorch's tests of kernels with a batch shape of their own: here each is refused with the message."""

    def _refused(self, batch_shape):
        with pytest.raises(ConfigError, match="batch_shape"):
            self.create_kernel_no_ard(batch_shape=batch_shape)

    def test_smoke_double_batch_kernel_double_batch_x_no_ard(self):
        self._refused(torch.Size([3, 2]))

    def test_kernel_getitem_single_batch(self):
        self._refused(torch.Size([2]))

    def test_kernel_getitem_double_batch(self):
        self._refused(torch.Size([3, 2]))

    def test_kernel_getitem_broadcast(self):
        self._refused(torch.Size([2]))


class TestConvKernelAsGPyTorchKernel(_Float32, _RefusesKernelBatches, BaseKernelTestCase, unittest.TestCase):
    """Inputs of D values are 1×1×D images with 1×1 patches: P = D patches of one pixel each."""

    def create_kernel_no_ard(self, active_dims=None, batch_shape=torch.Size([]), D=None, **kwargs):
        D = D or (len(active_dims) if active_dims is not None else 2)
        return ConvKernel(ScaleKernel(RBFKernel(batch_shape=batch_shape)), (1, 1, D), 1, active_dims=active_dims,
                          **kwargs)

    # GPyTorch's own active-dimension checks, except that the kernel compared with is built for images of the
    # selected size (a ConvKernel knows its image shape; GPyTorch's uses one built without active dimensions)
    def _active_dims(self, active_dims):
        x = self.create_data_no_batch()
        covar_mat = self.create_kernel_no_ard(active_dims=active_dims)(x).evaluate_kernel().to_dense()
        actual = self.create_kernel_no_ard(D=len(active_dims))(x[:, active_dims]).evaluate_kernel().to_dense()
        self.assertAllClose(covar_mat, actual, rtol=1e-3, atol=1e-5)

    def test_active_dims_list(self):
        self._active_dims([0, 2, 4, 6])

    def test_active_dims_range(self):
        self._active_dims(list(range(3, 9)))


class TestInvariantKernelAsGPyTorchKernel(_Float32, _RefusesKernelBatches, BaseKernelTestCase, unittest.TestCase):
    """Sign flips of every coordinate: 2^D orbit elements."""

    def create_kernel_no_ard(self, active_dims=None, batch_shape=torch.Size([]), **kwargs):
        return InvariantKernel(ScaleKernel(RBFKernel(batch_shape=batch_shape)), "sign_flips", active_dims=active_dims,
                               **kwargs)


def test_a_conv_kernel_that_has_been_used_pickles_as_torch_save_does():
    """torch.save(model) pickles the kernel after training: the last batch's images it keeps (for one patch
    extraction per batch) are not part of its state."""
    kernel = ConvKernel(scaled_rbf(), image_shape=(6, 6), patch_shape=3)
    x = torch.rand(4, 36, generator=torch.Generator().manual_seed(0))
    K = kernel(x).to_dense()
    again = pickle.loads(pickle.dumps(kernel))
    torch.testing.assert_close(again(x).to_dense(), K)
