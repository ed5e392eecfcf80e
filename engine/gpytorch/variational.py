"""Inter-domain inducing variables for GPyTorch's approximate GPs: a convolutional GP with inducing patches, or an
invariant GP with inducing points in the space of the non-invariant function, in a user's own `ApproximateGP`.

For a kernel that sums a base kernel k_g over an orbit, f(x) = Σ_a w_a g(x_a) (the patches of an image, van der Wilk,
Rasmussen & Hensman 2017; a finite group's elements, van der Wilk, Bauer, John & Hensman 2018), the inducing
variables are u = g(Z) at M inputs of g, so

    K_uu = k_g(Z, Z),   K_uf[m, n] = Σ_a w_a k_g(z_m, x_n,a)      (2017 eq. 15–16; 2018 eq. 13)

and K_uu never sums over an orbit. `InterDomainVariationalStrategy` is GPyTorch's whitened `VariationalStrategy`
(Hensman et al. 2015; q(v) = N(m, S), u = L_uu v, the KL against N(0, I)) with K_uu and K_uf taken from the lab's
covariance dispatch (`invlab.covariances`: `Kuu`, `Kuf`) instead of from the kernel on [Z; X]; k_ff is the model's own
kernel's diagonal. Everything else — the variational distribution, `VariationalELBO`, any likelihood — is GPyTorch's.
"""
from __future__ import annotations

import torch
from gpytorch.distributions import MultivariateNormal
from gpytorch.kernels import ScaleKernel
from gpytorch.variational import VariationalStrategy
from linear_operator.operators import SumLinearOperator, TriangularLinearOperator
from linear_operator.utils.cholesky import psd_safe_cholesky

from ..covariances import Kuf, Kuu
from ..errors import ConfigError, DataError, ShapeError
from ..inducing import InducingPatches as LabPatches
from ..inducing import InducingVariables, InterDomainPoints
from .inputs import refuse_non_finite, refuse_widths
from .kernels import ConvKernel, InvariantKernel


class InducingPatches:
    """M inducing patches Z [M, E] (E = h·w values, C·h·w for colour patches) for a `ConvKernel` model: the inputs of
    the patch-response function g at which u = g(Z) (van der Wilk, Rasmussen & Hensman 2017, eq. 15–16)."""

    def __init__(self, Z):
        Z = torch.as_tensor(Z)
        if Z.dim() != 2 or Z.shape[0] == 0:
            raise ShapeError(f"inducing patches are [M, E] with M ≥ 1, got shape {tuple(Z.shape)}")
        refuse_non_finite("InducingPatches", Z=Z)
        self.Z = Z

    @classmethod
    def from_images(cls, kernel, X: torch.Tensor, M: int, generator: torch.Generator | None = None):
        """M distinct patches drawn from the flattened images X [N, C·H·W], as the lab's own models start. `kernel`
        is the model's `ConvKernel`, bare or as the model wraps it (`ScaleKernel(ConvKernel(...))`, or any chain of
        kernels with a `base_kernel`): only its image and patch shapes are read, so it can be built before the
        model that will hold it."""
        kernel = _conv_kernel(kernel)
        X = torch.as_tensor(X)
        refuse_widths("InducingPatches.from_images", *kernel._expected(), X=X)
        if X.numel() == 0:
            raise ShapeError("InducingPatches.from_images: X holds no images; give at least one image to draw the "
                             f"{M} inducing patches from")
        refuse_non_finite("InducingPatches.from_images", X=X)
        patches = kernel.conv.patches(kernel._images(X)).reshape(-1, kernel.conv.patch_dim)
        distinct = torch.unique(patches, dim=0)
        if distinct.shape[0] < M:
            raise ShapeError(f"the images hold {distinct.shape[0]} distinct patches, fewer than M = {M}")
        return cls(distinct[torch.randperm(distinct.shape[0], generator=generator)[:M]])


def _conv_kernel(kernel) -> ConvKernel:
    """The `ConvKernel` in `kernel`, found along its `base_kernel` chain (a ScaleKernel around it, ...)."""
    found = kernel
    while not isinstance(found, (ConvKernel, InvariantKernel)) and isinstance(getattr(found, "base_kernel", None),
                                                                            torch.nn.Module):
        found = found.base_kernel
    if isinstance(found, ConvKernel):
        return found
    if isinstance(found, InvariantKernel):
        raise ConfigError("InducingPatches.from_images cuts patches for a ConvKernel; an InvariantKernel model's "
                          "inducing inputs are inputs of its base kernel [M, D], e.g. M rows of the training inputs "
                          "(X[:M]), given to InterDomainVariationalStrategy as they are")
    raise ConfigError(f"InducingPatches.from_images needs the model's ConvKernel, bare or wrapped (e.g. "
                      f"ScaleKernel(ConvKernel(...))), for its image and patch shapes; got {type(kernel).__name__}"
                      + (f" around {type(found).__name__}" if found is not kernel else ""))


class _Patches(LabPatches):
    """The lab's inducing patches at a tensor the GPyTorch strategy owns (not copied, so gradients reach it)."""

    def __init__(self, Z: torch.Tensor):
        InducingVariables.__init__(self)
        self.Z = Z
        self.patch_shape = (1, 1, Z.shape[-1])


class _Points(InterDomainPoints):
    """The lab's inter-domain inducing points (u = g(Z)) at a tensor the GPyTorch strategy owns."""

    def __init__(self, Z: torch.Tensor):
        InducingVariables.__init__(self)
        self.Z = Z


def _orbit_kernel(covar_module):
    """(the `ConvKernel` / `InvariantKernel` of a model's covariance, its ScaleKernel or None)."""
    scale = None
    kernel = covar_module
    if isinstance(kernel, ScaleKernel):
        scale, kernel = kernel, kernel.base_kernel
    if not isinstance(kernel, (ConvKernel, InvariantKernel)):
        raise ConfigError("InterDomainVariationalStrategy needs the model's covar_module to be an invlab.gpytorch "
                          f"ConvKernel or InvariantKernel (optionally in a ScaleKernel), not {type(kernel).__name__}")
    return kernel, scale


class InterDomainVariationalStrategy(VariationalStrategy):
    """GPyTorch's whitened `VariationalStrategy` with inter-domain inducing variables u = g(Z): inducing patches
    (`InducingPatches`) for a `ConvKernel` model, inducing inputs of the base kernel [M, D] for an `InvariantKernel`
    model. K_uu = k_g(Z, Z) and K_uf = Σ_a w_a k_g(Z, x_a) come from the lab's covariance dispatch (see the module's
    doc); `model.covar_module` is the `ConvKernel` / `InvariantKernel`, optionally in a `ScaleKernel` (whose
    outputscale scales g). `inducing_points` is the parameter Z (learned with `learn_inducing_locations`).

    During training only the diagonal of q(f) is formed (what `VariationalELBO` needs) and no jitter is added to it;
    in eval mode the full predictive covariance gets GPyTorch's jitter, as `VariationalStrategy` does.
    """

    def __init__(self, model, inducing, variational_distribution, learn_inducing_locations: bool = True,
                 jitter_val: float | None = None):
        Z = inducing.Z if isinstance(inducing, InducingPatches) else torch.as_tensor(inducing)
        if Z.dim() != 2:
            raise ShapeError(f"inducing inputs are [M, E], got shape {tuple(Z.shape)}")
        super().__init__(model, Z, variational_distribution, learn_inducing_locations, jitter_val=jitter_val)

    def _covariances(self, Z: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(K_uu [M, M] with jitter, K_uf [M, N]) of the model's kernel."""
        kernel, scale = _orbit_kernel(self.model.covar_module)
        if isinstance(kernel, ConvKernel):
            if Z.shape[-1] != kernel.conv.patch_dim:
                raise ShapeError(f"inducing patches have {Z.shape[-1]} values but the kernel's patches have "
                                 f"{kernel.conv.patch_dim}")
            inducing, lab_kernel, X = _Patches(Z), kernel.conv, kernel._images(x)
        else:
            lab_kernel = kernel.lab_kernel(x)
            if Z.shape[-1] != x.shape[-1]:
                raise ShapeError(f"inducing inputs have {Z.shape[-1]} values but the inputs have {x.shape[-1]}")
            inducing, X = _Points(Z), x.reshape(-1, *kernel.input_shape)
        Kzz = Kuu(inducing, lab_kernel)
        # no inputs, no orbit sums: an empty K_uf, so q(f) is empty as GPyTorch's own strategy returns it
        Kzx = Kuf(inducing, lab_kernel, X) if x.shape[0] else Kzz.new_zeros(Kzz.shape[-1], 0)
        if Kzx.dim() == 3:  # the invariant kernel's per-element k_g(z, x_a) [M, N, P]: the orbit average
            Kzx = Kzx.mean(-1)
        if scale is not None:
            s = scale.outputscale.reshape(())
            Kzz, Kzx = s * Kzz, s * Kzx
        eye = torch.eye(Kzz.shape[-1], dtype=Kzz.dtype, device=Kzz.device)
        return Kzz + self.jitter_val * eye, Kzx

    def _checked(self, x: torch.Tensor, Z: torch.Tensor) -> torch.Tensor:
        """x in Z's dtype, as GPyTorch's own `VariationalStrategy` takes it (a float32 x in a float64 model is
        promoted; a float64 x in a float32 model fails there too, and is refused here naming both dtypes), after the
        checks of its width and values."""
        kernel, _ = _orbit_kernel(self.model.covar_module)
        if x.dim() != 2:
            raise ShapeError(f"InterDomainVariationalStrategy takes inputs [N, D], got shape {tuple(x.shape)}")
        refuse_widths("InterDomainVariationalStrategy", *kernel._expected(), x=x)
        if torch.promote_types(x.dtype, Z.dtype) != Z.dtype:
            raise DataError(f"InterDomainVariationalStrategy: the inputs x are {x.dtype} but the model's inducing "
                            f"inputs are {Z.dtype}; GPyTorch's own VariationalStrategy cannot mix them either: give x "
                            f"as {Z.dtype} (x.to({Z.dtype})), or convert the model (model.to({x.dtype}))")
        refuse_non_finite("InterDomainVariationalStrategy", x=x)
        return x.to(Z.dtype)

    def forward(self, x, inducing_points, inducing_values, variational_inducing_covar=None, diag=True, **kwargs):
        """q(f(x)) = N(μ(x) + K_fu L⁻ᵀ m, k_ff + K_fu L⁻ᵀ (S − I) L⁻¹ K_uf) for inputs x [N, D] (GPyTorch's whitened
        predictive, Hensman et al. 2015, with the inter-domain K_uu and K_uf)."""
        x = self._checked(x, inducing_points)
        prior = self.model.forward(x, **kwargs)
        Kzz, Kzx = self._covariances(inducing_points, x)
        L = TriangularLinearOperator(psd_safe_cholesky(Kzz))
        mean_update, covar_update = self._compute_predictive_updates(
            chol=L, induc_data_covar=Kzx, inducing_values=inducing_values,
            variational_inducing_covar=variational_inducing_covar,
            prior_covar=self.prior_distribution.lazy_covariance_matrix, diag=diag)
        data_covar = prior.lazy_covariance_matrix
        if not self.training:
            data_covar = data_covar.add_jitter(self.jitter_val)
        return MultivariateNormal(prior.mean + mean_update, SumLinearOperator(data_covar, covar_update))


__all__ = ["InducingPatches", "InterDomainVariationalStrategy"]
