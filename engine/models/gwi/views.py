"""What Gaussian Wasserstein inference shows (Wild, Hu & Sejdinovic 2022): the spectrum λ_s of the W2 operator
estimate C_Q C_P on a sample of the data (sec. 2.1.2), the parts of the W2 estimate over training, the
hyper-parameters with P's frozen reference fit, and the posterior over the plane for 2-D data. `GWI.own_diagnostics`
calls `gwi_views`; it reads the model, never changes it.
"""
from __future__ import annotations

import numpy as np
import torch

from ... import diagnostics as dg
from ...diagnostics import field_over_plane, hyperparameter_values

W2_LABELS = {"w2": "Ŵ² (total)", "w2_mean": "mean term", "w2_trace_p": "trace of C_P", "w2_trace_q": "trace of C_Q",
             "w2_eigen": "eigenvalue term Σ√λ"}  # the W2 parts' names in the view's legend


@torch.no_grad()
def gwi_views(model, data=None) -> dict[str, dg.View]:
    """The family's own views: the spectrum of the W2 operator estimate on a sample of the data (Wild, Hu &
    Sejdinovic, 2022, sec. 2.1.2), the parts of the W2 estimate over training, the hyper-parameters (P frozen) and,
    for 2-D data, the posterior over the plane."""
    views: dict[str, dg.View] = {}
    spectrum = model.last_spectrum if (wanted := model.wants("w2_spectrum")) else None
    if data is not None and wanted:
        X = data[0]
        S = min(model.num_spectrum, X.shape[0])
        index = torch.randperm(X.shape[0], generator=torch.Generator().manual_seed(0))[:S].to(X.device)
        spectrum = model.w2(X, index=index).spectrum
    if spectrum is not None:
        views["w2_spectrum"] = dg.Spectrum(
            title="Spectrum λ_s of the W2 operator estimate (C_Q C_P on X_S)",
            values=np.sort(spectrum.reshape(-1).cpu().numpy()),
            description=f"{model.spectrum} estimate, N_S = {spectrum.shape[-1]}, all {spectrum.shape[0]} latent "
                        "function(s); Σ√λ_s is the eigenvalue term of Ŵ².")
    series = model.history.series() if model.wants("w2_terms") else {}
    if series:
        views["w2_terms"] = dg.Curves(
            title="Parts of the W2 estimate", series=series, xlabel="training step", ylabel="value",
            labels={"w2": "Ŵ² (total)", "w2_mean": "mean term", "w2_trace_p": "trace of C_P",
                    "w2_trace_q": "trace of C_Q", "w2_eigen": "eigenvalue term Σ√λ"},
            covers=tuple(series),
            description="Ŵ² = mean term + trace of C_P + trace of C_Q − 2 × eigenvalue term (summed over latent "
                        "functions), per training step.")
    if model.wants("hyperparameters"):
        values = {**hyperparameter_values(model), "alpha_T": float(model.alpha_T),
                  "M (inducing)": float(model.Q.num_inducing), "N_S": float(model.num_spectrum),
                  **{f"reference {k}": v for k, v in model.reference_info.items()}}
        views["hyperparameters"] = dg.Scalars(title="Hyper-parameters (P frozen)", values=values)
    if model.wants("posterior") and data is not None and data[0].reshape(data[0].shape[0], -1).shape[1] == 2:
        views["posterior"] = field_over_plane(model, data[0], data[1])
    return views


__all__ = ["gwi_views", "W2_LABELS"]
