"""Plugins that fail half-way (their registrations are rolled back) and kernels whose own output is not finite."""

import pytest

from tests.bad_inputs.worlds import run_cli

# a plugin that registers one part of every kind, then clashes with the built-in kernel `rbf`
HALF_WAY = '''
import invlab.data
import invlab.kernels
import invlab.models
import invlab.transforms
from invlab.kernels import Stationary
from invlab.transforms import FiniteOrbit


@invlab.kernels.register("mykern")
class MyKern(Stationary):
    def __init__(self, input_dim, lengthscale=1.0, variance=1.0, ard=False, mygain=2.0):
        super().__init__(input_dim, lengthscale, variance, ard)
        self.mygain = float(mygain)

    def K_r2(self, r2):
        return (-0.5 * r2).exp()


@invlab.transforms.register("myorbit")
class MyOrbit(FiniteOrbit):
    orbit_size = 2
    image_only = False

    def __init__(self, input_shape):
        super().__init__()

    def apply(self, X, index):
        sign = (1 - 2 * index).to(X.dtype)
        return X[:, None] * sign.reshape(*index.shape, *[1] * (X.dim() - 1))


def build_mine(config, X, y, info, *, generator=None):
    raise RuntimeError("never built")


invlab.models.register(invlab.models.ModelSpec("mymodel", invlab.models.get_model("svgp").config, build_mine))


@invlab.data.register_reader("myformat", "my own files")
def my_source(path):
    raise RuntimeError("never read")


@invlab.kernels.register("rbf")
class MyRBF(Stationary):
    def K_r2(self, r2):
        return (-0.5 * r2).exp()
'''


def test_a_plugin_that_fails_half_way_registers_nothing(tmp_path):
    from tests.helpers.plugins import env_with, install, invlab, package

    site = install(package(tmp_path / "src", "half-plugin", "halfway", HALF_WAY), tmp_path / "site")
    env = env_with(site, INVLAB_DATA=str(tmp_path / "data"))

    listing = invlab("plugins", env=env)
    assert listing.returncode == 0 and "Traceback" not in listing.stderr, listing.stderr
    warnings = [line for line in listing.stderr.splitlines() if line.startswith("invlab: warning: plugin 'halfway'")]
    assert len(warnings) == 1 and "kernel name 'rbf' is taken by the built-in kernel" in warnings[0], listing.stderr
    names = [row.split()[:2] for row in listing.stdout.splitlines()]
    assert names.count(["kernel", "rbf"]) == 1, listing.stdout
    for kind, name in (("kernel", "mykern"), ("augmentation", "myorbit"), ("model", "mymodel")):
        assert [kind, name] not in names, listing.stdout  # its first registrations went with it
    rbf = next(row for row in listing.stdout.splitlines() if row.split()[:2] == ["kernel", "rbf"])
    assert "built-in" in rbf and "invlab.kernels.stationary.RBF" in rbf

    helped = invlab("train", "--help", env=env)
    assert helped.returncode == 0, helped.stderr
    for leftover in ("mykern", "myorbit", "mymodel", "--mygain"):
        assert leftover not in helped.stdout, leftover  # no choice and no option of the failed plugin

    refused = invlab("train", "--kernel", "mykern", "--steps", "1", "--quiet", env=env)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    assert "invalid choice: 'mykern'" in refused.stderr, refused.stderr

    read = invlab("train", "--dataset", "myformat:somewhere", "--steps", "1", "--quiet", env=env)
    assert read.returncode == 1 and "Traceback" not in read.stderr, read.stderr
    assert "never read" not in read.stderr and "myformat:PATH" not in read.stderr  # its reader went with it


def _nan_in_K(base):
    class NanInK(base):
        """K() is NaN off the diagonal, K_diag() is fine."""

        def K_r2(self, r2):
            return r2 * float("nan")

    return NanInK


def _inf_in_K_diag(base):
    class InfInKDiag(base):
        """K() is fine, K_diag() is +inf."""

        def K_r2(self, r2):
            return (-0.5 * r2).exp()

        def _K_diag(self, X):
            return super()._K_diag(X) * float("inf")

    return InfInKDiag


@pytest.fixture(params=[(_nan_in_K, "NaN"), (_inf_in_K_diag, "inf")], ids=["nan_in_K", "inf_in_K_diag"])
def broken_kernel(request):
    """A kernel registered as `nan_kernel` whose own output is not finite, for the time of one test."""
    from invlab import kernels
    from invlab.registry import snapshot

    make, value = request.param
    saved = snapshot()
    cls = kernels.register("nan_kernel")(make(kernels.Stationary))
    try:
        yield cls, value
    finally:
        saved.restore()
    assert "nan_kernel" not in kernels.kernel_names()


def test_a_kernel_that_returns_nan_is_named_not_the_learning_rate(world, capsys, broken_kernel):
    cls, value = broken_kernel
    code, out, err = run_cli(["train", "--kernel", "nan_kernel", "--steps", "2", "--eval-every", "0", "--quiet"],
                             capsys)
    assert code == 1 and "Traceback" not in out + err, err
    line = next(line for line in err.splitlines() if line.startswith("invlab train:"))
    assert "the kernel 'nan_kernel'" in line and f"{cls.__module__}.{cls.__qualname__}" in line, line
    assert f"returned non-finite values ({value})" in line and "for finite inputs at step 1" in line, line
    assert "the learning rate is not the cause" in line, line
    assert "Lower the learning rate" not in line and "diverged" not in line, line
    assert "--learning-rate" not in err  # nor is a smaller one suggested for resuming
