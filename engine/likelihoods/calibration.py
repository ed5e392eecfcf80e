"""Calibration of class probabilities: expected calibration error (Guo et al. 2017) and NLPD.

ECE = Σ_b (n_b / n) |accuracy_b − confidence_b| over equal-width bins of the top-class probability.
"""
from __future__ import annotations

import torch


def expected_calibration_error(probs: torch.Tensor, y: torch.Tensor, bins: int = 15) -> float:
    """ECE of class probabilities probs [N, K] for labels y [N], with `bins` equal-width confidence bins on (0, 1]."""
    conf, pred = probs.max(-1)
    correct = (pred == y.long().reshape(-1)).to(probs.dtype)
    # bin b holds (b/bins, (b+1)/bins]; a confidence of exactly 0 joins the first bin
    idx = (torch.ceil(conf * bins).long() - 1).clamp(0, bins - 1)
    count = torch.zeros(bins, dtype=probs.dtype, device=probs.device).index_add_(0, idx, torch.ones_like(conf))
    acc = torch.zeros_like(count).index_add_(0, idx, correct)
    cf = torch.zeros_like(count).index_add_(0, idx, conf)
    return float((acc - cf).abs().sum() / probs.shape[0])


def nlpd(probs: torch.Tensor, y: torch.Tensor) -> float:
    """Mean −log p(y) of the true labels."""
    p = probs.gather(1, y.long().reshape(-1, 1)).squeeze(1)
    return float(-torch.log(p.clamp_min(1e-300)).mean())
