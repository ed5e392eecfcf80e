"""Step time of the deep inverse Wishart process against the batch size Pt and the number of inducing points Pi.

Doubly-stochastic inference samples every train point on its own given the inducing blocks (Aitchison, Yang & Ober 2021
eq. 31–34, app. I), so one step costs O(Pi³ + Pi²·Pt) (sec. 6): doubling Pt at most doubles the time, doubling Pi costs
up to eight times as much once the Pi³ terms dominate. For contrast, the time to draw the *joint* (Pi + Pt)-square
inverse Wishart that non-doubly-stochastic inference would need is measured too (cubic in Pt).

Each configuration is timed side by side, interleaved in rounds, and the median step is reported.

    python -m benchmarks.dkp.scaling [--quick] [--pi 100 --pt 1000 --samples 4 --rounds 7]

Last line: one JSON object with `ratio_double_pt` (target ≤ 2.3: linear in Pt) and `ratio_double_pi`.
"""
from __future__ import annotations

import statistics
import time

import torch

from invlab.models import DataInfo
from invlab.models.dkp import DIWPConfig, build_dkp
from invlab.models.dkp.wishart import InverseWishart

from ..common import arguments, emit, log, parse


def make_model(Pi: int, D: int, layers: int, samples: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(max(Pi, 8) * 2, D, generator=g, dtype=torch.float64)
    y = torch.sin(X[:, 0]) + 0.1 * torch.randn(X.shape[0], generator=g, dtype=torch.float64)
    config = DIWPConfig(num_inducing=Pi, num_layers=layers, num_samples=samples, input_layer="omega")
    model = build_dkp(config, X, y, DataInfo("regression"), generator=g)
    return model, torch.optim.Adam(model.parameters(), lr=1e-3)


def step_seconds(model, opt, X, y) -> float:
    t0 = time.perf_counter()
    opt.zero_grad(set_to_none=True)
    model.loss((X, y)).loss.backward()
    opt.step()
    return time.perf_counter() - t0


def joint_seconds(P: int, delta: float = 50.0) -> float:
    """One joint IW draw of a P-square Gram matrix (what sampling all points together would cost per layer)."""
    A = torch.randn(P, P, dtype=torch.float64) / P ** 0.5
    K = A @ A.T + torch.eye(P, dtype=torch.float64)
    t0 = time.perf_counter()
    InverseWishart(delta + P + 1, scale=delta * K).rsample()
    return time.perf_counter() - t0


def main(argv=None) -> dict:
    p = arguments(__doc__, quick="small sizes and few rounds: finishes in well under a minute")
    p.add_argument("--pi", type=int, default=100, help="inducing points Pi (doubled in the second comparison)")
    p.add_argument("--pt", type=int, default=1000, help="train points per batch Pt (doubled in the first comparison)")
    p.add_argument("--features", type=int, default=8, help="input features N0")
    p.add_argument("--layers", type=int, default=2, help="Gram layers L")
    p.add_argument("--samples", type=int, default=4, help="Monte-Carlo samples S per step")
    p.add_argument("--rounds", type=int, default=7, help="timed rounds (each times every configuration once)")
    args = parse(p, argv)
    if args.quick:
        args.pi, args.pt, args.rounds, args.samples = min(args.pi, 50), min(args.pt, 400), min(args.rounds, 5), 2
    torch.manual_seed(0)
    Pi, Pt = args.pi, args.pt
    g = torch.Generator().manual_seed(1)
    X2 = torch.randn(2 * Pt, args.features, generator=g, dtype=torch.float64)
    y2 = torch.sin(X2[:, 0])
    small, opt_small = make_model(Pi, args.features, args.layers, args.samples)
    big, opt_big = make_model(2 * Pi, args.features, args.layers, args.samples)
    cases = {
        "pi_pt": lambda: step_seconds(small, opt_small, X2[:Pt], y2[:Pt]),
        "pi_2pt": lambda: step_seconds(small, opt_small, X2, y2),
        "2pi_pt": lambda: step_seconds(big, opt_big, X2[:Pt], y2[:Pt]),
        "joint_pi_pt": lambda: joint_seconds(Pi + Pt),
        "joint_pi_2pt": lambda: joint_seconds(Pi + 2 * Pt),
    }
    for fn in cases.values():  # warm-up: allocator, first-call overheads
        fn()
    times = {k: [] for k in cases}
    for r in range(args.rounds):
        for name, fn in cases.items():
            times[name].append(fn())
        log(f"round {r + 1}/{args.rounds}: " + ", ".join(f"{k} {1e3 * v[-1]:.1f} ms" for k, v in times.items()))
    med = {k: statistics.median(v) for k, v in times.items()}
    result = {
        "benchmark": "dkp_scaling",
        "Pi": Pi, "Pt": Pt, "features": args.features, "layers": args.layers, "samples": args.samples,
        "rounds": args.rounds, "threads": args.threads,
        "step_ms": {k: round(1e3 * v, 2) for k, v in med.items() if not k.startswith("joint")},
        "joint_draw_ms": {k: round(1e3 * v, 2) for k, v in med.items() if k.startswith("joint")},
        "ratio_double_pt": round(med["pi_2pt"] / med["pi_pt"], 3),
        "ratio_double_pi": round(med["2pi_pt"] / med["pi_pt"], 3),
        "ratio_joint_double_pt": round(med["joint_pi_2pt"] / med["joint_pi_pt"], 3),
        "target_ratio_double_pt": 2.3,
    }
    result["linear_in_pt"] = result["ratio_double_pt"] <= 2.3
    log(f"double Pt ({Pt} → {2 * Pt}): ×{result['ratio_double_pt']} (target ≤ 2.3); "
        f"double Pi ({Pi} → {2 * Pi}): ×{result['ratio_double_pi']}; joint draw, double Pt: "
        f"×{result['ratio_joint_double_pt']}")
    return emit(result)


if __name__ == "__main__":
    main()
