"""The page's starting values for each model family: sizes a lecturer can watch train on a 2-core laptop.

The engine's config defaults are chosen for experiments (the paper's data sizes, batches of 256, evaluation
on 2,000 test points). The page overrides a few of them per family, *in the page only*, so that every
family's default run takes at least 5 steps/s on a 2-core CPU with one torch thread and shows a first
test-error point within 10 s of pressing Start. `python -m benchmarks.dashboard.page_defaults` measures them;
its table is in benchmarks/dashboard/README.md ("The page's defaults").

Each family declares its own in its registry entry (`ModelSpec.page`: {"data": {...}, "model": {...},
"train": {...}}, values for `DataConfig`, the family's config class and `TrainConfig` over the engine's defaults),
so a family a plugin adds brings its own and no page code names a family; `FAMILY_DEFAULTS` reads them from the
registry. `data["dataset"]` is the family's own data set (also in `FAMILY_DATASETS`): images for the convolutional
families (`rectangles`, van der Wilk, Rasmussen & Hensman 2017's task, and colour `photo-patches` for the colour
kernels), two moons for the RKHS functionals (Zhang, Lee & Teh 2013 Fig. 1), scikit-learn's diabetes regression for
Gaussian Wasserstein inference and the deep kernel processes (Wild, Hu & Sejdinovic 2022 and Aitchison, Yang & Ober
2021 use UCI regression), and the bundled 8×8 digits elsewhere; a family that declares none starts on the page's
digits. The page evaluates the test subset by wall time (every couple of seconds, `TrainingSession`), so
`train.eval_size` is what bounds one evaluation: each is chosen to take well under a second, on the family's own data
set and on `digits` (which the page keeps when a family switch can run on it).

What the measurements showed (all at one torch thread):
- The convolutional families crawled (0.3–0.4 steps/s) on `rectangles` because k_ff costs N·P² per batch (676
  patches of 3×3 in a 28×28 image) and each evaluation scored all 2,000 test images. The engine now counts each
  image's identical patches once (`invlab.covariances.patches.distinct_patches`, exact): 27 distinct patches of
  676 in a rectangle outline. Batches of 128 and 500 test images do the rest.
- The multi-channel colour kernel has no repeated patches in photographs: batches of 32.
- The DKP families draw `num_predict_samples` × 256 softmax samples per test point when classifying: 8 samples
  (instead of 32) keep an evaluation of 200 digits short; their own data set is a regression, where it is cheap.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping

from invlab.models import REGISTRY
from invlab.train import RunConfig


class FamilyDefaults(Mapping):
    """family → its page defaults {"data": {...}, "model": {...}, "train": {...}}, read from each registered family's
    entry (`ModelSpec.page`); it follows registrations (a plugin's family) and their roll-back."""

    def __getitem__(self, family: str) -> dict:
        page = REGISTRY[family].page
        return {section: dict(page.get(section, {})) for section in ("data", "model", "train")}

    def __iter__(self):
        return iter(REGISTRY)

    def __len__(self) -> int:
        return len(REGISTRY)


class FamilyDatasets(Mapping):
    """family → the data set it starts on in the page (its page defaults' `data["dataset"]`, else digits)."""

    def __getitem__(self, family: str) -> str:
        return REGISTRY[family].page.get("data", {}).get("dataset", "digits")

    def __iter__(self):
        return iter(REGISTRY)

    def __len__(self) -> int:
        return len(REGISTRY)


FAMILY_DEFAULTS = FamilyDefaults()
FAMILY_DATASETS = FamilyDatasets()  # the data set each family starts on in the page

PAGE_TRAIN = {"steps": 2000, "eval_every": 0}  # every family: the page evaluates by wall time (TrainingSession)


def page_run_config(family: str, dataset: str | None = None) -> RunConfig:
    """The run the page starts for `family` with nothing changed (on `dataset` instead of its own, if given: then
    the family's data options are dropped, as the page does when it keeps the user's data set)."""
    spec = copy.deepcopy(FAMILY_DEFAULTS.get(family) or {})
    data = spec.get("data", {}) if dataset is None else {"dataset": dataset}
    return RunConfig(model=family, data=data, model_config=spec.get("model", {}),
                     train={**PAGE_TRAIN, **spec.get("train", {})})
