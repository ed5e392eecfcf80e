"""The eigenvalue term of Ŵ² (Wild, Hu & Sejdinovic 2022 sec. 2.1.2) on a sub-sample: the two estimators against the
full-data value.

Data: `diabetes`, seed 0; P fitted on M = 2·√N_fit = 35 points; Q trained by GWI for `--steps` full-batch Adam
steps (and, separately, Q = P: β = 0, Σ = K_ZZ⁻¹). X = the N = 299 points trained on; the target is the
full-data eigenvalue term T = Σ √λ(R K) / N (= both estimators at X_S = X). For each N_S, `--draws` random
sub-samples X_S ⊂ X give
- `subsample` (default): Σ_s √λ_s(r(X_S, X_S) k(X_S, X_S)) / N_S,
- `paper`: Σ_s √Re λ_s(r(X_S, X) k(X, X_S)) / √(N·N_S), with the largest relative imaginary part of that spectrum.
Reported: mean ± std of each, the relative bias against T, and the mean Ŵ² at Q = P (zero for an unbiased
estimator of a distance that vanishes there).

Run `python -m benchmarks.gwi.spectrum [--quick]`; the last line is one JSON object.
"""
from __future__ import annotations

import statistics

import torch

from invlab.data import load
from invlab.models import DataInfo
from invlab.models.gwi import GWIConfig, build_gwi
from invlab.models.gwi.wasserstein import psd_product_eigenvalues, psd_sqrt, sum_sqrt

from ..common import arguments, emit, parse


def trained_model(steps: int):
    ds = load("diabetes", seed=0)
    X, y = torch.as_tensor(ds.X_train), torch.as_tensor(ds.y_train)
    model = build_gwi(GWIConfig(inducing_factor=2.0), X, y, DataInfo("regression"))
    keep = ~model.validation_mask(X)
    X, y = X[keep], y[keep]
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(steps):
        opt.zero_grad(set_to_none=True)
        model.loss((X, y)).loss.backward()
        opt.step()
    return model, X


@torch.no_grad()
def estimates(model, X, sizes, draws, seed=0):
    N = X.shape[0]
    K = model.kernel.K(X)
    R = model.Q.covariance(X)[0]
    full = float(sum_sqrt(psd_product_eigenvalues(R, psd_sqrt(K)) / (N * N)))
    g = torch.Generator().manual_seed(seed)
    out = {}
    for S in sizes:
        sub, paper, imag, w2_sub, w2_paper = [], [], [], [], []
        for _ in range(draws):
            idx = torch.randperm(N, generator=g)[:S]
            model.spectrum = "subsample"
            e = model.w2(X, index=idx)
            sub.append(float(e.eigen[0]))
            w2_sub.append(float(e.total[0]))
            model.spectrum = "paper"
            e = model.w2(X, index=idx)
            paper.append(float(e.eigen[0]))
            w2_paper.append(float(e.total[0]))
            imag.append(float(e.imag[0]))
        model.spectrum = "subsample"
        out[S] = {"subsample_mean": statistics.fmean(sub), "subsample_std": statistics.stdev(sub),
                  "paper_mean": statistics.fmean(paper), "paper_std": statistics.stdev(paper),
                  "subsample_rel_bias": statistics.fmean(sub) / full - 1,
                  "paper_rel_bias": statistics.fmean(paper) / full - 1,
                  "paper_max_rel_imag": max(imag), "w2_subsample_mean": statistics.fmean(w2_sub),
                  "w2_paper_mean": statistics.fmean(w2_paper)}
    return full, out


def main(argv=None) -> dict:
    parser = arguments(__doc__, quick="10 draws, 100 training steps.")
    parser.add_argument("--draws", type=int, default=50)
    parser.add_argument("--steps", type=int, default=1000)
    args = parse(parser, argv)
    draws, steps = (2, 5) if args.smoke else (10, 100) if args.quick else (args.draws, args.steps)
    sizes = [10, 25, 50, 100, 200]
    model, X = trained_model(steps)
    full, trained = estimates(model, X, sizes, draws)
    with torch.no_grad():  # Q = P
        Luu = model.Q.prior_cholesky()
        Sigma = torch.cholesky_inverse(Luu)
        model.Q.set(torch.zeros_like(model.Q.beta), torch.linalg.cholesky(0.5 * (Sigma + Sigma.T)))
    full_p, at_p = estimates(model, X, sizes, draws, seed=1)
    print(f"trained Q: full-data eigenvalue term T = {full:.4f} (N = {X.shape[0]}); Q = P: T = {full_p:.4f}")
    print("| N_S | subsample (mean ± std) | bias | paper (mean ± std) | bias | max rel. Im λ (paper) | "
          "Ŵ² at Q = P: subsample | paper |")
    print("|---|---|---|---|---|---|---|---|")
    for S in sizes:
        t, p = trained[S], at_p[S]
        print(f"| {S} | {t['subsample_mean']:.4f} ± {t['subsample_std']:.4f} | {100 * t['subsample_rel_bias']:+.1f}% | "
              f"{t['paper_mean']:.4f} ± {t['paper_std']:.4f} | {100 * t['paper_rel_bias']:+.1f}% | "
              f"{t['paper_max_rel_imag']:.1e} | {p['w2_subsample_mean']:.2e} | {p['w2_paper_mean']:.3f} |")
    result = {"benchmark": "gwi_spectrum", "draws": draws, "train_steps": steps, "N": X.shape[0],
              "full_eigen_term": full, "trained": {str(k): v for k, v in trained.items()},
              "full_eigen_term_Q_eq_P": full_p, "Q_eq_P": {str(k): v for k, v in at_p.items()}}
    return emit(result)


if __name__ == "__main__":
    main()
