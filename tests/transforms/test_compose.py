"""Two augmentations composed: a finite orbit of compositions against the explicit list of them and the invariant
kernel's double sum against brute force; a density composition that draws each part independently, with the learned
ranges of both parts trained through it."""
import itertools

import torch

from invlab.kernels import build_kernel
from invlab.kernels.invariant import InvariantKernel
from invlab.transforms import FlipOrbit, Rot90Orbit, build_augmentation, rotation_only
from invlab.transforms.compose import ComposedAugmentation, ComposedOrbit, compose

DT = torch.float64


def test_two_finite_orbits_compose_into_the_orbit_of_every_composition():
    X = torch.rand(2, 1, 4, 4, generator=torch.Generator().manual_seed(0), dtype=DT)
    both = compose(Rot90Orbit(), FlipOrbit("horizontal"), ("rot90", "flips"))
    assert isinstance(both, ComposedOrbit) and both.orbit_size == 8
    E = both.elements(X)  # [N, 8, C, H, W]
    expected = [torch.rot90(X, a, dims=(-2, -1)).flip(-1) if b else torch.rot90(X, a, dims=(-2, -1))
                for a, b in itertools.product(range(4), range(2))]
    for k, e in enumerate(expected):
        assert torch.equal(E[:, k], e)
    assert torch.equal(E[:, 0], X)  # element 0 the identity


def test_the_invariant_kernel_of_a_composed_orbit_is_the_brute_force_double_sum():
    X = torch.randn(5, 3, generator=torch.Generator().manual_seed(1), dtype=DT)
    Y = torch.randn(4, 3, generator=torch.Generator().manual_seed(2), dtype=DT)
    perms = build_augmentation("permutations", (3,), coordinates="0,1")
    signs = build_augmentation("sign_flips", (3,), coordinates="2")
    orbit = compose(perms, signs, ("permutations", "sign_flips"))
    base = build_kernel("rbf", 3, lengthscale=1.3, variance=0.7)
    K = InvariantKernel(base, orbit, orbit.orbit_size).K(X, Y)
    group = [lambda x, p=p, s=s: x[:, list(p)] * torch.tensor([1, 1, s], dtype=DT)
             for p in ((0, 1, 2), (1, 0, 2)) for s in (1, -1)]
    brute = sum(base.K(g(X), h(Y)) for g in group for h in group) / len(group) ** 2
    assert torch.allclose(K, brute, atol=1e-12)


def test_a_density_composition_draws_each_part_independently_and_trains_both_ranges():
    X = torch.rand(400, 1, 5, 5, generator=torch.Generator().manual_seed(3), dtype=DT)
    rotation = rotation_only(0.001)  # a near-zero angle: each sample is x or its mirror image
    both = compose(rotation, FlipOrbit("horizontal"), ("rotation", "flips"))
    assert isinstance(both, ComposedAugmentation) and list(both.range_values()) == ["rotation"]
    A = both.sample(X, 6, torch.Generator().manual_seed(4))  # [N, S, C, H, W]
    flipped = ((A - X.flip(-1)[:, None]).abs().amax(dim=(2, 3, 4)) < 1e-3).double()  # [N, S]
    assert abs(flipped.mean().item() - 0.5) < 0.03  # i.i.d. halves, not one flip per input
    assert 0.2 < flipped[:, 0].mean().item() < 0.8 and flipped.std(dim=1).mean() > 0.3
    wide = compose(rotation_only(30.0), build_augmentation("deformation", (1, 5, 5)), ("rotation", "deformation"))
    names = list(wide.range_values())
    assert names[0] == "rotation" and "deformation_rotation" in names and "strength" in names
    wide.sample(X[:8], 3, torch.Generator().manual_seed(5)).sum().backward()
    assert all(r.half_width.raw.grad is not None for r in wide.ranges.values() if hasattr(r, "half_width"))


def test_an_invariant_gp_with_a_second_augmentation_trains_both():
    from invlab.sweeps.task import estimator_of, invariance_values
    from invlab.train import RunConfig, Trainer

    config = RunConfig("invariant", {"dataset": "digits", "subset": 60, "rotate": 90},
                       {"augmentation": "rotation", "then_augmentation": "flips", "num_inducing": 8,
                        "init_rotation": 30.0}, {"steps": 3, "eval_every": 0})
    trainer = Trainer(config)
    list(trainer.run())
    assert isinstance(trainer.model.augmentation, ComposedAugmentation)
    ranges, learned = invariance_values(trainer.model)
    assert list(ranges) == ["rotation"] and learned and ranges["rotation"] != 30.0  # trained through the composition
    assert "range.rotation" in trainer.history and estimator_of(trainer.model) == "8 samples per input"
    orbit = RunConfig("invariant", {"dataset": "symmetric-2d"}, {"augmentation": "permutations",
                                                                 "then_augmentation": "sign_flips"}, {"steps": 1})
    assert estimator_of(Trainer(orbit).model) == "exact"  # 2 × 4 = 8 elements, all 8 summed
