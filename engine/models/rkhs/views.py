"""What the RKHS invariance machine shows (Zhang, Lee & Teh 2013): the objective of eq. 4 with its weights, its terms
over the L-BFGS iterations, the eigenvalues of the representer Gram matrix, the decision function over the plane for
2-D data, and the labelled images with their tangent vectors (Thm 5). `RKHSMachine.own_diagnostics` and
`.decision_field` call these; they read the machine, never change it.
"""
from __future__ import annotations

import numpy as np
import torch

from ... import diagnostics as dg

SPECTRUM_MAX = 1500  # eigenvalues of at most this many representers (a principal submatrix beyond)


@torch.no_grad()
def rkhs_views(model, data=None) -> dict[str, dg.View]:
    """The family's own views: the objective and its weights, its terms over the solver's iterations, the Gram
    spectrum, for 2-D data the decision function, and for images the labelled images with their tangent vectors
    (Zhang, Lee & Teh, 2013, Thm 5)."""
    views: dict[str, dg.View] = {}
    if model.wants("objective"):
        parts = {k: float(v) for k, v in model.objective_terms().items()}
        # one view per quantity: the terms' values are in their curve over the solver's iterations (below)
        views["objective"] = dg.Scalars(title="Objective (eq. 4) and its weights", values={
            "objective": sum(parts.values()), "nu": float(model.nu()), "lambda": float(model.lam()),
            "labelled": float(model.num_labelled),
            "invariance functionals": float(model.gram.size - model.num_labelled)})
    if model.wants("gram_spectrum"):
        B = model.gram.size
        title = "Eigenvalues of the representer Gram matrix K (eq. 4)"
        if B > SPECTRUM_MAX:
            title += f" — a random {SPECTRUM_MAX}×{SPECTRUM_MAX} principal submatrix of {B}×{B}"
        views["gram_spectrum"] = dg.Spectrum(title=title, values=model.gram_spectrum(),
                                             description="Evaluations and invariance representers together; a "
                                                         "long tail of tiny eigenvalues means directions the norm "
                                                         "barely penalises.")
    if model.wants("solver_trace") and model.trace:
        it = np.arange(len(model.trace))
        views["solver_trace"] = dg.Curves(
            title="Objective terms over L-BFGS iterations (fit)", xlabel="L-BFGS iteration",
            ylabel="objective term",
            logy=True, covers=("data_loss", "invariance_loss", "norm"),  # terms orders of magnitude apart
            labels={"data_loss": "data loss", "invariance_loss": "invariance loss", "norm": "norm penalty λ‖f‖²"},
            series={k: (it, np.array([t[k] for t in model.trace]))
                    for k in ("data_loss", "invariance_loss", "norm")})
    if model.wants("decision_function") and model.gram.blocks[0].input_dim == 2:
        views["decision_function"] = decision_field(model, data)
    if model.wants("tangents") and model.tangent_preview is not None:
        images, tangents, names = model.tangent_preview
        rows = []
        for img, tan in zip(images, tangents):
            scale = max(float(np.abs(tan).max()), 1e-12)
            rows.append(np.concatenate([img[None, 0] * 2.0 - 1.0, tan[:, 0] / scale], 0))
        views["tangents"] = dg.ImageGrid(title="Labelled images and their tangent vectors (Thm 5)",
                                         images=np.stack(rows), col_labels=["image"] + list(names),
                                         vrange=(-1.0, 1.0))
    return views


@torch.no_grad()
def decision_field(model, data=None, resolution: int = 60) -> dg.Field2D:
    """f over the plane with the labelled points (their class) and the unlabelled ones (label −1)."""
    XL = model.gram.blocks[0].X
    U = model.unlabelled
    pts = torch.cat([XL, U], 0)
    cloud = pts if data is None else torch.cat([pts, data[0].reshape(data[0].shape[0], -1).to(pts)], 0)
    lo, hi = cloud.min(0).values, cloud.max(0).values
    pad = 0.1 * (hi - lo).clamp_min(1e-6)
    gx = torch.linspace(float(lo[0] - pad[0]), float(hi[0] + pad[0]), resolution, dtype=XL.dtype, device=XL.device)
    gy = torch.linspace(float(lo[1] - pad[1]), float(hi[1] + pad[1]), resolution, dtype=XL.dtype, device=XL.device)
    G = torch.stack(torch.meshgrid(gx, gy, indexing="xy"), -1).reshape(-1, 2)
    f = model.decision_function(G)
    if f.shape[1] == 1:
        values, contour = f[:, 0], (0.0 if model.task == "classification" else None)
        title = "Decision function f(x) (boundary f = 0)" if contour is not None else "f(x)"
    else:
        values, contour, title = f.argmax(1).to(f.dtype), None, "Predicted class"
    labels = torch.cat([model.labels if model.task == "classification" else torch.zeros(len(XL), dtype=torch.long,
                                                                                         device=XL.device),
                        torch.full((len(U),), -1, dtype=torch.long, device=XL.device)])
    return dg.Field2D(title=title, x=gx.cpu().numpy(), y=gy.cpu().numpy(),
                      values=values.reshape(resolution, resolution).cpu().numpy(), points=pts.cpu().numpy(),
                      point_labels=labels.cpu().numpy(), contour=contour,
                      description="Labelled points by class; unlabelled points (label −1) carry invariance "
                                  "functionals in semi-supervised mode.")


__all__ = ["rkhs_views", "decision_field", "SPECTRUM_MAX"]
