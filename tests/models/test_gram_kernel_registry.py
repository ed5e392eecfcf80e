"""Gram-matrix kernels come through one registry door (`invlab.kernels.gram.register_gram_kernel`), as a plugin's
do: a registered kernel is a choice of the deep kernel processes' config and of the prior page's `PriorExplorer`,
its own arguments are settings of both, and the prior's function samples use it — checked against the built-in
kernel it equals. Every registration here is rolled back afterwards (`invlab.registry.snapshot`)."""
import pytest
import torch

from invlab.kernels.gram import SquaredExponentialGram, gram_kernel_names, register_gram_kernel
from invlab.models.dkp import PriorExplorer
from invlab.models.dkp.config import GramKernelParams
from invlab.registry import snapshot


@pytest.fixture
def stretched():
    saved = snapshot()

    @register_gram_kernel("stretched")
    def stretched(lengthscale: float = 1.0, variance: float = 1.0, stretch: float = 2.0):
        return SquaredExponentialGram(lengthscale * stretch, variance)

    yield
    saved.restore()


def test_a_registered_gram_kernel_is_a_choice_of_both_with_its_option(stretched):
    assert gram_kernel_names()[:2] == ["relu", "sqexp"] and "stretched" in gram_kernel_names()
    for owner in (GramKernelParams, PriorExplorer):
        assert "stretched" in owner.param.kernel.objects and "stretch" in owner.param, owner


def test_the_prior_page_draws_with_the_registered_kernel_and_follows_its_option(stretched):
    """The stretched kernel at lengthscale ℓ and stretch s is the squared exponential at ℓ·s: same seed, same
    prior functions; changing s (a setting only the plugin has) draws new ones."""
    settings = dict(num_points=30, num_functions=2, num_panels=1, num_layers=2, size=20, seed=4)
    plugin = PriorExplorer(kernel="stretched", lengthscale=0.5, stretch=3.0, **settings)
    builtin = PriorExplorer(kernel="sqexp", lengthscale=1.5, **settings)
    G = torch.randn(6, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    G = G @ G.T
    assert torch.allclose(plugin._kernel().K(G), builtin._kernel().K(G), rtol=1e-12, atol=1e-12)
    drawn = plugin.views()["prior_functions_gp"]
    assert drawn.title == builtin.views()["prior_functions_gp"].title
    for a, b in zip(drawn.series.values(), builtin.views()["prior_functions_gp"].series.values()):
        assert torch.allclose(torch.as_tensor(a[1]), torch.as_tensor(b[1]), rtol=1e-9, atol=1e-9)
    plugin.stretch = 1.0
    redrawn = plugin.views()["prior_functions_gp"]
    assert any(not torch.allclose(torch.as_tensor(a[1]), torch.as_tensor(b[1]))
               for a, b in zip(redrawn.series.values(), drawn.series.values()))
