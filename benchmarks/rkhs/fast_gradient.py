"""Eq. 11 of Zhang, Lee & Teh 2013 against the vanilla product with the materialised partial-derivative Gram matrix,
side by side.

Problem (sec. 5): all n partial derivatives at each of l points under the Gaussian kernel κ_σ, so the
representer Gram block N = (⟨z_{i,d}, z_{j,d'}⟩) (eq. 8) is (n·l × n·l). The solver's bottleneck is g = N α.

- direct: N materialised once (O(l²n²) memory, reported), then each product N α is a matrix-vector product,
  O(l²n²) time;
- eq. 11: G = σ⁻⁴ [σ² A K + X Q − X ∘ (1_n ⊗ 1_lᵀ Q)] with the l×l kernel matrix K computed once, O(l²n) time and
  O(l² + nl) memory (`invlab.models.rkhs.fast_gradient`, the paper's layout: X, A, G are [n, l]).

Inputs: X ~ N(0, I_n) for l = 100 points, σ = √n (kernel values around e⁻¹), α ~ N(0, 1), float64, one intra-op
thread (the machine is shared); both products are checked to agree (max relative difference reported). Each
repetition times one product of each kind, alternating which goes first; the ratio is of the medians, which
ignores bursts of load from other processes. Only the per-iteration products are timed: in the solver both N
and K are built once and reused at every L-BFGS iteration (their build times are reported separately).

Run `python -m benchmarks.rkhs.fast_gradient [--quick] [--device auto|cpu|cuda]`; the last line printed is one
JSON object with `speedup_n64` (target ≥ 10) and `speedup_n16` (direct time / eq. 11 time).
"""
from __future__ import annotations

import statistics
import time

import torch

from invlab.models.rkhs import dense_partials_gram, fast_gradient
from invlab.settings import resolve_device

from ..common import arguments, emit, parse


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def _timed(fn, device, inner: int):
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(inner):
        out = fn()
    _sync(device)
    return (time.perf_counter() - t0) / inner, out


def measure(l: int, n: int, reps: int, device, dtype=torch.float64) -> dict:
    g = torch.Generator().manual_seed(n)
    X = torch.randn(l, n, generator=g, dtype=dtype).to(device)  # [l, n] engine layout
    alpha = torch.randn(l, n, generator=g, dtype=dtype).to(device)
    sigma = float(n) ** 0.5

    t_build_direct, N = _timed(lambda: dense_partials_gram(X, sigma), device, 1)  # (l·n × l·n)
    t_build_fast, K = _timed(lambda: torch.exp(-0.5 * torch.cdist(X, X) ** 2 / sigma**2), device, 1)
    Xp, Ap = X.T.contiguous(), alpha.T.contiguous()  # the paper's layout [n, l]
    a = alpha.reshape(-1)

    def direct():
        return N @ a

    def fast():
        return fast_gradient(Xp, Ap, K, sigma)

    ref = direct().reshape(l, n)
    got = fast().T
    rel = float((ref - got).abs().max() / ref.abs().max())
    for _ in range(3):  # warm-up
        direct(), fast()
    inner = 5
    td, tf = [], []
    for r in range(reps):
        order = (direct, fast) if r % 2 == 0 else (fast, direct)
        for fn in order:
            t, _ = _timed(fn, device, inner)
            (td if fn is direct else tf).append(t)
    md, mf = statistics.median(td), statistics.median(tf)
    return {"l": l, "n": n, "direct_ms": md * 1e3, "eq11_ms": mf * 1e3, "speedup": md / mf,
            "direct_matrix_MiB": N.numel() * N.element_size() / 2**20,
            "eq11_matrix_MiB": K.numel() * K.element_size() / 2**20,
            "build_direct_ms": t_build_direct * 1e3, "build_eq11_ms": t_build_fast * 1e3, "max_rel_diff": rel}


def main(argv=None) -> dict:
    parser = arguments(__doc__, quick="fewer repetitions (well under a minute)")
    parser.add_argument("--device", default="auto", help="auto | cpu | cuda")
    args = parse(parser, argv)
    device = resolve_device(args.device)
    reps = 1 if args.smoke else 9 if args.quick else 41
    results = {}
    for n in (16, 64):
        r = measure(100, n, reps, device)
        results[n] = r
        print(f"l = {r['l']}, n = {n}: direct N·α {r['direct_ms']:.3f} ms (N is {r['direct_matrix_MiB']:.1f} MiB), "
              f"eq. 11 {r['eq11_ms']:.3f} ms (K is {r['eq11_matrix_MiB']:.3f} MiB) → {r['speedup']:.1f}× ; "
              f"max relative difference {r['max_rel_diff']:.1e}")
    summary = {"benchmark": "rkhs_fast_gradient", "device": str(device), "threads": args.threads, "dtype": "float64",
               "l": 100, "repetitions": reps,
               "speedup_n16": results[16]["speedup"], "speedup_n64": results[64]["speedup"],
               "direct_ms_n16": results[16]["direct_ms"], "eq11_ms_n16": results[16]["eq11_ms"],
               "direct_ms_n64": results[64]["direct_ms"], "eq11_ms_n64": results[64]["eq11_ms"],
               "direct_matrix_MiB_n64": results[64]["direct_matrix_MiB"],
               "eq11_matrix_MiB_n64": results[64]["eq11_matrix_MiB"],
               "max_rel_diff": max(r["max_rel_diff"] for r in results.values())}
    return emit(summary)


if __name__ == "__main__":
    main()
