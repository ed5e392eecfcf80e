"""Finite orbits against torch's own operations, and sampling without replacement."""
import numpy as np
import pytest
import torch
from scipy import ndimage

from invlab.errors import ConfigError, ShapeError
from invlab.transforms import CyclicShiftOrbit, FlipOrbit, PermutationOrbit, Rot90Orbit, build_augmentation

DT = torch.float64


def images(n=3, c=1, h=5, w=5, seed=0):
    return torch.rand(n, c, h, w, generator=torch.Generator().manual_seed(seed), dtype=DT)


def test_rot90_orbit_is_torch_rot90_counter_clockwise(place, tol):
    X = place(images(c=2))
    E = Rot90Orbit().elements(X)
    assert E.shape == (3, 4, 2, 5, 5)
    for k in range(4):
        assert torch.equal(E[:, k], torch.rot90(X, k, dims=(-2, -1)))
    # element 1 is +90° in the data's convention (scipy.ndimage.rotate, axes=(2, 1): counter-clockwise as displayed)
    ref = np.stack([ndimage.rotate(x, 90, axes=(2, 1), reshape=False, order=1) for x in images(c=2).numpy()])
    assert np.abs(E[:, 1].cpu().double().numpy() - ref).max() < tol.f64(atol=1e-12).atol


def test_flip_orbits(place):
    X = place(images(h=4, w=6))
    assert torch.equal(FlipOrbit("horizontal").elements(X)[:, 1], X.flip(-1))
    assert torch.equal(FlipOrbit("vertical").elements(X)[:, 1], X.flip(-2))
    both = FlipOrbit("both").elements(X)
    assert both.shape[1] == 4 and torch.equal(both[:, 3], torch.rot90(X, 2, dims=(-2, -1)))
    with pytest.raises(ConfigError):
        FlipOrbit("diagonal")


def test_permutation_orbit(place):
    X = place(torch.randn(4, 3, dtype=DT))
    orbit = PermutationOrbit(3)
    E = orbit.elements(X)
    assert orbit.orbit_size == 6 and torch.equal(E[:, 0], X)
    assert {tuple(r.tolist()) for r in E[0]} == {tuple(X[0, list(p)].tolist()) for p in orbit.table}
    swap = PermutationOrbit(2).elements(X[:, :2])
    assert torch.equal(swap[:, 1], X[:, :2].flip(-1))
    with pytest.raises(ShapeError):
        orbit.elements(place(torch.randn(4, 2)))
    with pytest.raises(ConfigError):
        PermutationOrbit(2, [(0, 0)])


def test_cyclic_shifts_are_torch_roll(place):
    X = place(images(c=2, h=4, w=3))
    orbit = CyclicShiftOrbit(4, 3)
    E = orbit.elements(X)
    assert orbit.orbit_size == 12
    for k in range(12):
        assert torch.equal(E[:, k], torch.roll(X, divmod(k, 3), dims=(-2, -1)))


@pytest.mark.parametrize("orbit", [Rot90Orbit(), CyclicShiftOrbit(3, 3), FlipOrbit("both")])
def test_sampling_without_replacement(orbit, place):
    X = place(images(n=2000, h=3, w=3))
    P = orbit.orbit_size
    S = P - 1
    A = orbit.sample(X, S, torch.Generator().manual_seed(0))  # [N, S, ...]
    E = orbit.elements(X)  # [N, P, ...]
    # which element each sample is (inputs are random, so elements are distinct)
    match = (A.reshape(2000, S, 1, -1) == E.reshape(2000, 1, P, -1)).all(-1)  # [N, S, P]
    assert (match.sum(-1) == 1).all()
    index = match.float().argmax(-1)  # [N, S]
    assert all(len(set(row.tolist())) == S for row in index[:50])  # distinct within an input
    counts = torch.bincount(index.reshape(-1), minlength=P).double()
    expected = 2000 * S / P
    assert ((counts - expected).abs() < 5 * expected ** 0.5).all()  # uniform marginals
    assert torch.equal(orbit.sample(X[:3], P + 5), E[:3])  # S ≥ P: the whole orbit, in order


def test_build_augmentation_names():
    assert isinstance(build_augmentation("auto", (2,)), PermutationOrbit)
    assert isinstance(build_augmentation("cyclic_shifts", (1, 4, 5)), CyclicShiftOrbit)
    with pytest.raises(ConfigError, match="vector"):
        build_augmentation("rotation", (2,))
    with pytest.raises(ConfigError, match="images"):
        build_augmentation("permutations", (1, 4, 4))


def test_sign_flip_orbit_is_every_sign_pattern():
    import itertools

    X = torch.randn(4, 3, generator=torch.Generator().manual_seed(1), dtype=DT)
    E = build_augmentation("sign_flips", (3,)).elements(X)
    assert E.shape == (4, 8, 3) and torch.equal(E[:, 0], X)  # element 0 the identity
    patterns = {tuple(s) for s in itertools.product((1.0, -1.0), repeat=3)}
    found = {tuple((E[0, k] / X[0]).round().tolist()) for k in range(8)}
    assert found == patterns  # brute force: all 2^3 sign patterns, each once
    with pytest.raises(ConfigError, match="D ≤ 8"):
        build_augmentation("sign_flips", (9,))
    with pytest.raises(ConfigError, match="images"):
        build_augmentation("sign_flips", (1, 4, 4))


def test_the_identity_orbit_makes_the_invariant_gp_the_plain_svgp():
    from invlab.train import RunConfig, Trainer

    data = {"dataset": "symmetric-2d", "seed": 0, "source_options": {"num_train": 30, "num_test": 20}}
    train = {"steps": 5, "batch_size": 0, "eval_every": 0, "seed": 3}
    model = {"num_inducing": 6, "kernel": "rbf"}
    invariant = Trainer(RunConfig("invariant", data, {**model, "augmentation": "identity"}, train))
    plain = Trainer(RunConfig("svgp", data, model, train))
    assert build_augmentation("identity", (1, 4, 4)).orbit_size == 1
    X = torch.randn(5, 2, dtype=DT)
    assert torch.equal(build_augmentation("identity", (2,)).sample(X, 4)[:, 0], X)
    K_inv = invariant.model.kernel.K(invariant.X[:7])
    K_svgp = plain.model.kernel.K(plain.X[:7])
    assert torch.allclose(K_inv, K_svgp, atol=1e-12)  # the sum over {x} is k itself


def test_a_named_group_acts_on_its_coordinates_only():
    import itertools

    X = torch.randn(3, 4, generator=torch.Generator().manual_seed(2), dtype=DT)
    E = build_augmentation("permutations", (4,), coordinates="1,3").elements(X)
    assert E.shape == (3, 2, 4) and torch.equal(E[:, 0], X)
    assert torch.equal(E[:, 1], X[:, [0, 3, 2, 1]])  # the swap of coordinates 1 and 3; 0 and 2 stay
    E = build_augmentation("permutations", (4,), coordinates="0,1,2").elements(X)
    assert {tuple(e[:3].tolist()) for e in E[0]} == {tuple(X[0, list(p)].tolist())
                                                      for p in itertools.permutations(range(3))}
    assert torch.equal(E[:, :, 3], X[:, 3:].expand(3, 6))
    F = build_augmentation("sign_flips", (4,), coordinates="2").elements(X)
    assert F.shape == (3, 2, 4) and torch.equal(F[:, 1], X * torch.tensor([1, 1, -1, 1], dtype=DT))
    wide = build_augmentation("permutations", (12,), coordinates="0,11")  # D beyond 8: a named pair is fine
    assert wide.orbit_size == 2
    for text, words in (("0,4", "coordinate 4; these inputs have D=4"), ("1,1", "twice"), ("a,b", "whole numbers"),
                        ("2", "at least 2")):
        with pytest.raises(ConfigError, match=words):
            build_augmentation("permutations", (4,), coordinates=text)
