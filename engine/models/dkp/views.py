"""What the deep kernel processes show (Aitchison, Yang & Ober 2021): each layer's Gram matrix on the inducing inputs
as a heatmap and its eigenvalues with a caption saying why some are zero (app. H), the output kernel K(G_L) and its
eigenvalues, the hyper-parameter table, the posterior over the plane for 2-D data, and the sliders each layer's δ, γ
and kernel get. `DeepKernelProcess.own_diagnostics` and `.tunables` call these; they read the model, never change it.
"""
from __future__ import annotations

import numpy as np
import torch

from ... import diagnostics as dg
from ...diagnostics import field_over_plane, hyperparameter_values
from ...parameters import learnables
from ..base import Tunable, tunable
from .layers import InverseWishartLayer, LinearInputLayer, OmegaInputLayer


def inducing_order(model) -> np.ndarray:
    """Inducing points sorted by their desired output (class, then strength), so Gram heatmaps show blocks."""
    v = model.output.v.detach().cpu().numpy()
    if v.shape[1] == 1:
        return np.argsort(v[:, 0])
    return np.lexsort((-v.max(1), v.argmax(1)))


def spectrum_caption(model, ell: int, values: np.ndarray) -> str:
    """What layer ℓ's eigenvalue histogram shows, true of the values drawn: how many are zero up to rounding,
    and why (the input layer's rank; an inverse Wishart layer's or a deterministic layer's kernel)."""
    P, zero = len(values), dg.near_zero(values)
    count = f"{zero} of {P} eigenvalues are zero up to rounding (below 1e-10 × the largest)"
    layer = model.input_layer if ell == 1 else model.hidden[ell - 2]
    if isinstance(layer, (OmegaInputLayer, LinearInputLayer)):
        N0 = model.Z.shape[1]
        how = "X̃ΩX̃ᵀ/N₀" if isinstance(layer, OmegaInputLayer) else "X̃X̃ᵀ/N₀ (the NNGP limit, Ω = I)"
        why = (f"G₁ = {how} has rank at most N₀ = {N0} input features, so at least {P - N0} of its {P} "
               "eigenvalues are zero: the input layer cannot add rank (Aitchison, Yang & Ober 2021 eq. 18)."
               if N0 < P else
               f"G₁ = {how} with N₀ = {N0} input features ≥ {P} inducing points can be full rank.")
        return f"{count}. {why}"
    if isinstance(layer, InverseWishartLayer):
        return (f"{count}. An inverse Wishart layer keeps its eigenvalues away from zero (Aitchison, Yang & Ober "
                "2021 app. H) unless the kernel K(G_ℓ₋₁) it is centred on is itself close to singular.")
    return f"{count}. A deterministic layer G_ℓ = K(G_ℓ₋₁) (the NNGP limit): no sampling noise."


def dkp_tunables(model) -> list[Tunable]:
    """Each layer's δ and γ (log scale), each kernel's σ² and the Gaussian noise variance."""
    out = []
    for name, p in learnables(model).items():
        if p.raw.numel() != 1:
            continue
        parts = name.split(".")
        if name == "likelihood.variance":
            out.append(tunable(name, p, "noise variance", group="likelihood", interval=(1e-6, 1e3)))
        elif parts[-1] in ("delta", "gamma") and parts[0] in ("input_layer", "hidden"):
            layer = 1 if parts[0] == "input_layer" else int(parts[1]) + 2
            what, interval = ("δ (degrees of freedom)", (1e-2, 1e6)) if parts[-1] == "delta" else \
                ("γ (extra degrees of freedom of Q)", (1e-4, 1e4))
            out.append(tunable(name, p, f"layer {layer} {what}", group="kernel", interval=interval, scale="log"))
        elif parts[0] == "kernels" and parts[-1] in ("variance", "lengthscale"):
            what = "σ²" if parts[-1] == "variance" else "lengthscale"
            out.append(tunable(name, p, f"kernel {what} after layer {int(parts[1]) + 1}", group="kernel",
                               interval=(1e-4, 1e4)))
    return out


@torch.no_grad()
def dkp_views(model, data=None) -> dict[str, dg.View]:
    """The family's own views: each layer's Gram matrix on the inducing inputs as a heatmap and its eigenvalues
    (Aitchison, Yang & Ober, 2021, app. H), the output kernel K(G_L) and its eigenvalues, the hyper-parameters
    and, for 2-D data, the posterior over the plane."""
    views: dict[str, dg.View] = {}
    sampled = [f"layer{ell}_{what}" for ell in range(1, model.num_layers + 1) for what in ("gram", "spectrum")]
    if any(model.wants(name) for name in sampled + ["output_kernel", "output_spectrum"]):  # one draw for all
        grams, K = model.layer_grams(S=4)
        order = inducing_order(model)
        kind = "inverse Wishart" if model.stochastic else "deterministic (NNGP)"
        for ell, G in enumerate(grams, start=1):
            if model.wants(f"layer{ell}_gram"):
                views[f"layer{ell}_gram"] = dg.Heatmap(
                    title=f"Layer {ell}: inducing Gram G_ii (mean of {G.shape[0]} samples)",
                    matrix=G.mean(0)[np.ix_(order, order)],
                    xlabel="inducing point", ylabel="inducing point",
                    description=f"{kind} layer; inducing points sorted by their desired output v.")
            if model.wants(f"layer{ell}_spectrum"):
                values = dg.spectrum_of(G[0])
                views[f"layer{ell}_spectrum"] = dg.Spectrum(
                    title=f"Layer {ell}: eigenvalues of one G_ii sample", values=values,
                    description=spectrum_caption(model, ell, values))
        if model.wants("output_kernel"):
            views["output_kernel"] = dg.Heatmap(title="Output kernel K(G_L) at the inducing points",
                                                matrix=K.mean(0)[np.ix_(order, order)], xlabel="inducing point",
                                                ylabel="inducing point")
        if model.wants("output_spectrum"):
            views["output_spectrum"] = dg.Spectrum(title="Eigenvalues of the output kernel K(G_L)_ii",
                                                   values=dg.spectrum_of(K[0]))
    if model.wants("hyperparameters"):
        views["hyperparameters"] = dg.Scalars(title="Hyper-parameters", values=hyperparameter_values(model))
    if model.wants("posterior") and data is not None and data[0].reshape(data[0].shape[0], -1).shape[1] == 2:
        views["posterior"] = field_over_plane(model, data[0], data[1], resolution=40)
    return views


__all__ = ["dkp_views", "dkp_tunables", "inducing_order", "spectrum_caption"]
