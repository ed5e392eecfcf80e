"""What `invlab.gpytorch`'s kernels and inducing helpers do with inputs a user gets wrong, side by side with what
GPyTorch's own `RBFKernel` (and `VariationalStrategy`) does with the same inputs: mixed float32 / float64 inputs are
promoted where GPyTorch promotes and refused naming both dtypes where GPyTorch fails; empty inputs give an empty
covariance of GPyTorch's shape; an `x2` of another width, and NaN or inf values, are refused with a `ValueError`
that says which input and what was expected."""
import pytest
import torch

gpytorch = pytest.importorskip("gpytorch")

from gpytorch.distributions import MultivariateNormal  # noqa: E402
from gpytorch.kernels import RBFKernel, ScaleKernel  # noqa: E402
from gpytorch.variational import CholeskyVariationalDistribution, VariationalStrategy  # noqa: E402

from invlab.gpytorch import ConvKernel, InducingPatches, InterDomainVariationalStrategy, InvariantKernel  # noqa: E402

F32, F64 = torch.float32, torch.float64
# (kernel, D): a convolutional kernel on flattened 1×4×4 images, an invariant one on vectors of 3 coordinates
KERNELS = {
    "conv": (lambda: ConvKernel(RBFKernel(), (4, 4), 2), 16),
    "invariant": (lambda: InvariantKernel(RBFKernel(), "permutations", input_shape=(3,)), 3),
}


def dense(out):
    return out.to_dense() if hasattr(out, "to_dense") else out


def outcome(kernel, *args, **kwargs):
    """('ok', dtype, shape) of kernel(*args) evaluated, or ('error', message)."""
    try:
        K = dense(kernel(*args, **kwargs))
    except (RuntimeError, ValueError) as err:
        return "error", str(err)
    return "ok", K.dtype, tuple(K.shape)


def rand(*shape, dtype=F64, seed=0):
    return torch.rand(*shape, generator=torch.Generator().manual_seed(seed), dtype=F64).to(dtype)


@pytest.mark.parametrize("which", KERNELS)
@pytest.mark.parametrize("kernel_dtype", [F32, F64], ids=["float32 kernel", "float64 kernel"])
@pytest.mark.parametrize("dtypes", [(F32, F64), (F64, F32), (F32, F32), (F64, F64)],
                         ids=["f32-f64", "f64-f32", "f32-f32", "f64-f64"])
def test_mixed_dtypes_are_promoted_or_refused_as_gpytorchs_rbf_kernel_does(which, kernel_dtype, dtypes):
    make, D = KERNELS[which]
    ours, theirs = make().to(kernel_dtype), RBFKernel().to(kernel_dtype)
    x1, x2 = rand(4, D, dtype=dtypes[0]), rand(3, D, dtype=dtypes[1], seed=1)
    expected = outcome(theirs, x1, x2)
    got = outcome(ours, x1, x2)
    if expected[0] == "ok":
        assert got == ("ok", expected[1], (4, 3)), (got, expected)
        assert outcome(ours, x1, diag=True) == outcome(theirs, x1, diag=True)
    else:
        assert got[0] == "error", got
        message = got[1]
        assert "x1" in message and "x2" in message and "torch.float32" in message and "torch.float64" in message


@pytest.mark.parametrize("which", KERNELS)
def test_empty_inputs_give_an_empty_covariance_of_gpytorchs_shape(which):
    make, D = KERNELS[which]
    ours, theirs = make().double(), RBFKernel().double()
    x, none = rand(3, D), rand(0, D)
    for args, kwargs in [((none, x), {}), ((x, none), {}), ((none,), {}), ((none,), {"diag": True}),
                         ((rand(2, 0, D),), {}), ((rand(2, 0, D),), {"diag": True}), ((rand(0, 3, D),), {})]:
        expected = outcome(theirs, *args, **kwargs)
        assert expected[0] == "ok"
        assert outcome(ours, *args, **kwargs) == expected, ([a.shape for a in args], kwargs)


@pytest.mark.parametrize("which", KERNELS)
def test_an_x2_of_another_width_is_refused_naming_both_widths_and_the_expected_one(which):
    make, D = KERNELS[which]
    kernel = make().double()
    with pytest.raises(RuntimeError):  # GPyTorch's own kernel: an error that names no width
        RBFKernel().double()(rand(4, D), rand(3, D + 1))
    with pytest.raises(ValueError, match=rf"x1 has rows of {D} values and x2 rows of {D + 1}.*{D} values a row"):
        kernel(rand(4, D), rand(3, D + 1))
    with pytest.raises(ValueError, match=rf"x1 has rows of {D + 1} values.*{D} values a row"):
        dense(kernel(rand(4, D + 1)))
    with pytest.raises(ValueError, match=rf"x1 has rows of {D} values and x2 rows of {D + 1}.*{D} values a row"):
        dense(ScaleKernel(kernel).forward(rand(4, D), rand(3, D + 1)))  # GPyTorch's __call__ left out


@pytest.mark.parametrize("which", KERNELS)
@pytest.mark.parametrize("bad", [float("nan"), float("inf")], ids=["nan", "inf"])
def test_non_finite_inputs_are_refused_naming_the_input(which, bad):
    make, D = KERNELS[which]
    kernel = make().double()
    x, y = rand(4, D), rand(3, D, seed=1)
    spoiled = x.clone()
    spoiled[1, 2] = bad
    assert not torch.isfinite(dense(RBFKernel().double()(spoiled, y))).all()  # GPyTorch: non-finite, no word
    for args, which_input in [((spoiled, y), "x1"), ((y, spoiled), "x2"), ((spoiled,), "x1")]:
        with pytest.raises(ValueError, match=rf"{which_input} has non-finite values \(NaN or inf\)"):
            dense(kernel(*args))
    with pytest.raises(ValueError, match="x1 has non-finite values"):
        kernel(spoiled, diag=True)
    with pytest.raises(ValueError, match="x1 has non-finite values"):
        dense(ScaleKernel(kernel)(spoiled, y))  # a ScaleKernel calls the kernel's forward directly
    with pytest.raises(ValueError, match="x1 has non-finite values"):
        dense(kernel(spoiled[None].expand(2, 4, D)))


@pytest.mark.parametrize("which", KERNELS)
def test_the_checks_keep_batch_shapes_and_gradients(which):
    make, D = KERNELS[which]
    kernel = make().double()
    x = rand(2, 4, D).requires_grad_()
    K = dense(kernel(x, rand(3, D, seed=1)))
    assert K.shape == dense(RBFKernel().double()(x, rand(3, D, seed=1))).shape == (2, 4, 3)
    (grad,) = torch.autograd.grad(K.sum(), x)
    assert grad.shape == x.shape and torch.isfinite(grad).all() and grad.abs().sum() > 0
    x32 = rand(4, D, dtype=F32).requires_grad_()
    (grad,) = torch.autograd.grad(dense(kernel(x32)).sum() + kernel(x32, diag=True).sum(), x32)  # promoted, still
    assert grad.dtype == F32 and torch.isfinite(grad).all()


class _Hosted(gpytorch.models.ApproximateGP):
    def __init__(self, kernel, Z, strategy=InterDomainVariationalStrategy):
        M = (Z.Z if isinstance(Z, InducingPatches) else Z).shape[0]
        super().__init__(strategy(self, Z, CholeskyVariationalDistribution(M)))
        self.mean_module, self.covar_module = gpytorch.means.ZeroMean(), kernel

    def forward(self, x):
        return MultivariateNormal(self.mean_module(x), self.covar_module(x))


def strategies(model_dtype):
    """(ours with inducing patches of a conv kernel, ours with an invariant kernel, GPyTorch's own with an RBF), D."""
    return [(_Hosted(ConvKernel(RBFKernel(), (4, 4), 2), InducingPatches(rand(5, 4))).to(model_dtype), 16),
            (_Hosted(InvariantKernel(RBFKernel(), "permutations", input_shape=(3,)), rand(5, 3)).to(model_dtype), 3),
            (_Hosted(RBFKernel(), rand(5, 3), VariationalStrategy).to(model_dtype), 3)]


def predicted(model, x):
    try:
        out = model(x)
        return "ok", out.mean.dtype, tuple(out.mean.shape), tuple(out.variance.shape)
    except (RuntimeError, ValueError) as err:
        return "error", str(err)


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_the_strategy_treats_dtypes_and_empty_inputs_as_gpytorchs_own_strategy_does(mode):
    for model_dtype, x_dtype in [(F64, F32), (F32, F64), (F32, F32)]:
        *ours, (theirs, _) = strategies(model_dtype)
        for model, _ in [*ours, (theirs, None)]:
            model.train(mode == "train")
        expected = predicted(theirs, rand(4, 3, dtype=x_dtype))
        for model, D in ours:
            got = predicted(model, rand(4, D, dtype=x_dtype))
            if expected[0] == "ok":
                assert got == expected, (model_dtype, x_dtype, got, expected)
            else:
                assert got[0] == "error" and "torch.float32" in got[1] and "torch.float64" in got[1], got
    *ours, (theirs, _) = strategies(F64)
    expected = predicted(theirs.train(mode == "train"), rand(0, 3))
    for model, D in ours:
        assert predicted(model.train(mode == "train"), rand(0, D)) == expected


def test_the_strategy_and_the_inducing_helpers_refuse_non_finite_and_mis_sized_inputs():
    (conv_model, _), (inv_model, _), _ = strategies(F64)
    spoiled = rand(4, 16)
    spoiled[0, 3] = float("nan")
    with pytest.raises(ValueError, match="x has non-finite values"):
        conv_model(spoiled)
    with pytest.raises(ValueError, match=r"rows of 17 values.*16 values a row"):
        conv_model(rand(4, 17))
    with pytest.raises(ValueError, match=r"rows of 4 values.*3 values a row"):
        inv_model(rand(4, 4))
    Z = rand(5, 4)
    Z[2, 1] = float("inf")
    with pytest.raises(ValueError, match="InducingPatches: Z has non-finite values"):
        InducingPatches(Z)
    conv = ConvKernel(RBFKernel(), (4, 4), 2).double()
    with pytest.raises(ValueError, match="X has non-finite values"):
        InducingPatches.from_images(conv, spoiled, 3)
    with pytest.raises(ValueError, match=r"X has rows of 17 values.*16 values a row"):
        InducingPatches.from_images(conv, rand(4, 17), 3)
    with pytest.raises(ValueError, match="X holds no images"):
        InducingPatches.from_images(conv, rand(0, 16), 3)
