"""The page's starting values for each model family: sizes a lecturer can watch train on a 2-core laptop.

The engine's config defaults are chosen for experiments (the paper's data sizes, batches of 256, evaluation
on 2,000 test points). The page overrides a few of them per family, *in the page only*, so that every
family's default run takes at least 5 steps/s on a 2-core CPU with one torch thread and shows a first
test-error point within 10 s of pressing Start. `python -m benchmarks.dashboard.page_defaults` measures them;
its table is in benchmarks/dashboard/README.md ("The page's defaults").

`FAMILY_DEFAULTS[family]` is {"data": {...}, "model": {...}, "train": {...}}: values for `DataConfig`, the family's
config class and `TrainConfig`, over the engine's defaults. `data["dataset"]` is the family's own data set
(also in `FAMILY_DATASETS`): images for the convolutional families (`rectangles`, van der Wilk, Rasmussen & Hensman
2017's task, and colour `photo-patches` for the colour kernels), two moons for the RKHS functionals (Zhang, Lee & Teh
2013 Fig. 1), scikit-learn's diabetes regression for Gaussian Wasserstein inference and the deep kernel processes (Wild,
Hu & Sejdinovic 2022 and Aitchison, Yang & Ober 2021 use UCI regression), and the bundled 8×8 digits elsewhere. The page
evaluates the test subset by wall time (every couple of seconds, `TrainingSession`), so `train.eval_size` is what bounds
one evaluation: each is chosen to take well under a second, on the family's own data set and on `digits` (which the page
keeps when a family switch can run on it).

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

from invlab.train import RunConfig

_CONV = {"batch_size": 128, "eval_size": 500}  # with identical patches counted once: ~20 ms a step on rectangles

FAMILY_DEFAULTS: dict[str, dict[str, dict]] = {
    "svgp": {"data": {"dataset": "digits"}, "model": {}, "train": {"eval_size": 500}},
    "invariant": {"data": {"dataset": "digits"}, "model": {}, "train": {"batch_size": 128, "eval_size": 200}},
    "conv-invariant": {"data": {"dataset": "rectangles"}, "model": {}, "train": dict(_CONV)},
    "conv-weighted": {"data": {"dataset": "rectangles"}, "model": {}, "train": dict(_CONV)},
    "conv-weighted-rbf": {"data": {"dataset": "rectangles"}, "model": {}, "train": dict(_CONV)},
    "conv-colour": {"data": {"dataset": "photo-patches"}, "model": {}, "train": {"batch_size": 32, "eval_size": 200}},
    "rkhs": {"data": {"dataset": "two-moons"}, "model": {}, "train": {"eval_size": 1000}},
    "gwi": {"data": {"dataset": "diabetes"}, "model": {"inducing_factor": 2.0}, "train": {"eval_size": 200}},
    "diwp": {"data": {"dataset": "diabetes"}, "model": {"num_predict_samples": 8},
             "train": {"batch_size": 64, "eval_size": 100}},
    "nngp": {"data": {"dataset": "diabetes"}, "model": {"num_predict_samples": 8}, "train": {"eval_size": 200}},
    "dkp_svgp": {"data": {"dataset": "diabetes"}, "model": {}, "train": {"eval_size": 200}},
}

# the data set each family starts on in the page
FAMILY_DATASETS: dict[str, str] = {family: d["data"]["dataset"] for family, d in FAMILY_DEFAULTS.items()}

PAGE_TRAIN = {"steps": 2000, "eval_every": 0}  # every family: the page evaluates by wall time (TrainingSession)


def page_run_config(family: str, dataset: str | None = None) -> RunConfig:
    """The run the page starts for `family` with nothing changed (on `dataset` instead of its own, if given: then
    the family's data options are dropped, as the page does when it keeps the user's data set)."""
    spec = copy.deepcopy(FAMILY_DEFAULTS.get(family, {}))
    data = spec.get("data", {}) if dataset is None else {"dataset": dataset}
    return RunConfig(model=family, data=data, model_config=spec.get("model", {}),
                     train={**PAGE_TRAIN, **spec.get("train", {})})
