"""Prior samples of deep kernel processes and the prior explorer (Aitchison, Yang & Ober 2021: Fig. 2, app. H Fig. 5,
app. J Fig. 6).

`sample_deep_prior` draws the Gram matrices of all P points *jointly* (no inducing points):
  deep inverse Wishart (eq. 18): Ω ~ IW(δI, δ + N0 + 1), G₁ = XΩXᵀ/N0, G_ℓ ~ IW(δK(G_ℓ₋₁), δ + P + 1);
  deep Wishart (eq. 8, 94):      Ω ~ W(I/N, N),          G₁ = XΩXᵀ/N0, G_ℓ ~ W(K(G_ℓ₋₁)/N, N);
  the GP limit (δ, N → ∞):       Ω = I,                   G_ℓ = K(G_ℓ₋₁);
and functions f ~ N(0, K(G_L)) on top.

`PriorExplorer` is a `param.Parameterized` whose `views()` returns typed views, so the dashboard shows it with
sliders for δ, α and the number of layers: eigenvalue histograms of one sample each of the Wishart W(I/N, N),
the residual Wishart ResW(N, α) and the inverse Wishart IW(δI, δ + N + 1) — all with mean I (app. H) — and 1-D
prior function samples from an L-layer process beside the GP with the same kernel (app. J). As in app. J,
panels of a process with L ≥ 2 share their first-layer sample, so the differences between panels come only
from the upper layers.
"""
from __future__ import annotations

import numpy as np
import param
import torch

from ... import diagnostics as dg
from ...errors import ConfigError
from ...kernels.gram import GRAM_REGISTRY, GramKernel, build_gram_kernel
from .wishart import InverseWishart, Wishart, residual_wishart

PROCESSES = ("inverse_wishart", "wishart", "gp")


def _first_layer(X: torch.Tensor, process: str, delta: float, width: int,
                 generator: torch.Generator | None = None) -> torch.Tensor:
    N0 = X.shape[1]
    eye = torch.eye(N0, dtype=X.dtype, device=X.device)
    if process == "gp":
        Omega = eye
    elif process == "wishart":
        Omega = Wishart(width, scale=eye / width).rsample(generator=generator)
    else:
        Omega = InverseWishart(delta + N0 + 1, scale=delta * eye).rsample(generator=generator)
    return X @ Omega @ X.T / N0


def sample_deep_prior(X: torch.Tensor, kernel: GramKernel, num_layers: int, *, process: str = "inverse_wishart",
                      delta: float = 1.0, width: int = 10, jitter: float = 1e-8,
                      first_layer: torch.Tensor | None = None,
                      generator: torch.Generator | None = None) -> list[torch.Tensor]:
    """Joint prior samples [G₁, …, G_L] ([P, P] each) at inputs X [P, N0]; `first_layer` reuses a given G₁. Draws
    come from `generator` if given, else from torch's global stream."""
    if process not in PROCESSES:
        raise ConfigError(f"unknown process {process!r}; choose one of {', '.join(PROCESSES)}")
    if num_layers < 1:
        raise ConfigError(f"num_layers must be at least 1, got {num_layers}")
    if process == "inverse_wishart" and not delta > 0:
        raise ConfigError(f"δ must be positive, got {delta}")
    if process == "wishart" and (int(width) != width or width < 1):
        raise ConfigError(f"the Wishart width N must be a positive integer, got {width}")
    X = X.reshape(X.shape[0], -1)
    P = X.shape[0]
    eye = torch.eye(P, dtype=X.dtype, device=X.device)
    grams = [_first_layer(X, process, delta, width, generator) if first_layer is None else first_layer]
    for _ in range(num_layers - 1):
        K = kernel.K(grams[-1]) + jitter * eye
        if process == "gp":
            grams.append(K)
        elif process == "wishart":
            grams.append(Wishart(width, scale=K / width).rsample(generator=generator))
        else:
            grams.append(InverseWishart(delta + P + 1, scale=delta * K).rsample(generator=generator))
    return grams


def prior_functions(K: torch.Tensor, num_functions: int, jitter: float = 1e-8,
                    generator: torch.Generator | None = None) -> torch.Tensor:
    """f ~ N(0, K), [P, num_functions] (eigendecomposition: K(G) of a low-rank G can be numerically singular); draws
    from `generator` if given, else from torch's global stream."""
    ev, U = torch.linalg.eigh(0.5 * (K + K.T))
    root = U * ev.clamp_min(jitter).sqrt()
    return root @ torch.randn(K.shape[0], num_functions, dtype=K.dtype, device=K.device, generator=generator)


class PriorExplorer(param.Parameterized):
    """Eigenvalues of (inverse / residual) Wishart samples and 1-D prior function samples of deep kernel processes."""

    delta = param.Number(default=20.0, bounds=(1e-3, 1e6), softbounds=(0.1, 1000.0),
                         doc="δ of the inverse Wishart: small δ, heavy variability; δ → ∞, the deterministic limit.")
    alpha = param.Number(default=1.0, bounds=(0.0, 100.0), softbounds=(0.0, 5.0),
                         doc="α, the weight of the identity in a residual layer W = (ξ/√N + αI)/√(1+α²).")
    num_layers = param.Integer(default=2, bounds=(1, 6), doc="Layers L of the process the functions are drawn from.")
    process = param.Selector(default="inverse_wishart", objects=["inverse_wishart", "wishart"],
                             doc="Which deep kernel process the function samples come from.")
    width = param.Integer(default=5, bounds=(1, 1000),
                          doc="N, the width (degrees of freedom) of the deep Wishart process.")
    kernel = param.Selector(default="sqexp", objects=["sqexp"],
                            doc="Kernel applied to each Gram matrix: any registered Gram kernel (sqexp, relu, "
                                "a plugin's).")
    lengthscale = param.Number(default=1.0, bounds=(0.01, 100.0), softbounds=(0.1, 5.0),
                               doc="Bandwidth of the squared-exponential kernel.")
    size = param.Integer(default=400, bounds=(10, 3000),
                         doc="N = P, the size of the matrices in the eigenvalue panels.")
    num_points = param.Integer(default=120, bounds=(10, 1000), doc="Equally spaced 1-D inputs on [−5, 5].")
    num_functions = param.Integer(default=5, bounds=(1, 50), doc="Functions drawn per top-layer Gram sample.")
    num_panels = param.Integer(default=3, bounds=(1, 8), doc="Independent top-layer Gram samples (one panel each).")
    seed = param.Integer(default=0, bounds=(0, 2**31 - 1), doc="Seed of every draw (same seed, same pictures).")

    def inputs(self) -> torch.Tensor:
        """The 1-D inputs the prior functions are drawn at: `num_points` points evenly on [−5, 5] [P, 1]."""
        return torch.linspace(-5.0, 5.0, self.num_points, dtype=torch.float64)[:, None]  # [P, 1]

    def _kernel(self) -> GramKernel:
        return build_gram_kernel(self.kernel, lengthscale=self.lengthscale,
                                 **GRAM_REGISTRY.options_of(self.kernel, self))

    # Each panel depends on a few parameters only; its view is kept until one of them changes, so a slider move
    # recomputes what it affects (δ: the inverse Wishart histogram and the function panels; α: one histogram) and
    # the page redraws only the views that are new objects.
    SPECTRUM_DEPENDS = {"wishart": ("size", "seed"), "residual_wishart": ("size", "alpha", "seed"),
                        "inverse_wishart": ("size", "delta", "seed")}
    FUNCTION_DEPENDS = ("num_layers", "process", "delta", "width", "kernel", "lengthscale", "num_points",
                        "num_functions", "num_panels", "seed")
    GP_DEPENDS = ("num_layers", "kernel", "lengthscale", "num_points", "num_functions", "seed")  # no δ: its limit

    def _cached(self, key: tuple, compute):
        cache = self.__dict__.setdefault("_view_cache", {})
        if key not in cache:
            if len(cache) > 16:
                cache.clear()
            cache[key] = compute()
        return cache[key]

    def _key(self, kind: str, names) -> tuple:
        """The cache key of a panel: its kind and the parameters it depends on (with "kernel", the chosen Gram
        kernel's own options too, e.g. a plugin's)."""
        key = (kind,) + tuple(getattr(self, n) for n in names)
        if "kernel" in names:
            key += tuple(sorted(GRAM_REGISTRY.options_of(self.kernel, self).items()))
        return key

    @torch.no_grad()
    def _spectrum(self, kind: str) -> dg.Spectrum:
        N = self.size
        eye = torch.eye(N, dtype=torch.float64)
        # one stream per panel, of its own: a served page's other threads draw from torch's global stream meanwhile
        generator = torch.Generator().manual_seed(self.seed * 3 + list(self.SPECTRUM_DEPENDS).index(kind))
        if kind == "wishart":
            M = Wishart(N, scale=eye / N).rsample(generator=generator)
            return dg.Spectrum(title=f"Wishart W(I/N, N), N = {N}", values=dg.spectrum_of(M),
                               description="Many eigenvalues near zero: information is lost.")
        if kind == "residual_wishart":
            return dg.Spectrum(title=f"Residual Wishart ResW(N, α = {self.alpha:g})",
                               values=dg.spectrum_of(residual_wishart(N, self.alpha, generator=generator)),
                               description="The identity weight α pushes eigenvalues from 0.")
        M = InverseWishart(self.delta + N + 1, scale=self.delta * eye).rsample(generator=generator)
        return dg.Spectrum(title=f"Inverse Wishart IW(δI, δ + N + 1), δ = {self.delta:g}", values=dg.spectrum_of(M),
                           description="Smallest eigenvalue ≈ δ/(√(δ+N) + √N)²: away from zero unless δ ≪ N, unlike "
                                       "the Wishart's (app. H).")

    def spectra(self) -> dict[str, dg.Spectrum]:
        """Eigenvalues of one sample of each of W(I/N, N), ResW(N, α), IW(δI, δ + N + 1) (all with mean I)."""
        return {f"{kind}_eigenvalues": self._cached(self._key(kind, names), lambda kind=kind: self._spectrum(kind))
                for kind, names in self.SPECTRUM_DEPENDS.items()}

    @torch.no_grad()
    def function_samples(self) -> tuple[np.ndarray, np.ndarray, list[np.ndarray], list[list[np.ndarray]]]:
        """x [P]; GP samples [P, F]; per panel: functions [P, F] and the Gram samples [G₁, …, G_L] ([P, P] each)."""
        X = self.inputs()
        kernel = self._kernel()
        generator = torch.Generator().manual_seed(self.seed)  # its own stream, as the spectra's
        gp = sample_deep_prior(X, kernel, self.num_layers, process="gp")
        gp_f = prior_functions(kernel.K(gp[-1]), self.num_functions, generator=generator)
        shared = None
        if self.num_layers >= 2:  # app. J: panels share the first layer
            shared = sample_deep_prior(X, kernel, 1, process=self.process, delta=self.delta, width=self.width,
                                       generator=generator)[0]
        funcs, panels = [], []
        for _ in range(self.num_panels):
            grams = sample_deep_prior(X, kernel, self.num_layers, process=self.process, delta=self.delta,
                                      width=self.width, first_layer=shared, generator=generator)
            funcs.append(prior_functions(kernel.K(grams[-1]), self.num_functions, generator=generator).numpy())
            panels.append([G.numpy() for G in grams])
        return X[:, 0].numpy(), gp_f.numpy(), funcs, panels

    def _function_views(self) -> dict[str, dg.View]:
        x, gp_f, funcs, panels = self.function_samples()
        name = {"inverse_wishart": f"deep IW, δ = {self.delta:g}",
                "wishart": f"deep Wishart, N = {self.width}"}[self.process]
        series = lambda F: {f"f{k + 1}": (x, F[:, k]) for k in range(F.shape[1])}  # noqa: E731
        views: dict[str, dg.View] = {}
        views["prior_functions_gp"] = dg.Curves(title=f"GP with the same kernel ({self.num_layers} layer(s), δ → ∞)",
                                                series=series(gp_f), xlabel="x", ylabel="f(x)", legend=False,
                                                description=f"{self.num_functions} functions drawn from the NNGP "
                                                            "limit.")
        for k, F in enumerate(funcs, start=1):
            views[f"prior_functions_{k}"] = dg.Curves(
                title=f"{self.num_layers}-layer {name}: top-layer sample {k}", series=series(F), xlabel="x",
                ylabel="f(x)", legend=False,
                description="Functions drawn given one sample of the top-layer Gram matrix G_L.")
        views["top_gram"] = dg.Heatmap(title=f"G_{self.num_layers}, top-layer Gram sample 1", matrix=panels[0][-1],
                                       xlabel="x index", ylabel="x index")
        return views

    def views(self) -> dict[str, dg.View]:
        """All panels as typed views (Spectrum, Curves, Heatmap), in display order; a view whose parameters have
        not changed since the last call is the same object as then."""
        views: dict[str, dg.View] = dict(self.spectra())
        functions = self._cached(self._key("functions", self.FUNCTION_DEPENDS), self._function_views)
        # the GP panel is the δ → ∞ limit: the same picture whatever δ, N or the process, so it keeps its first view
        gp = self._cached(self._key("gp", self.GP_DEPENDS), lambda: functions["prior_functions_gp"])
        views["prior_functions_gp"] = gp
        views.update((k, v) for k, v in functions.items() if k != "prior_functions_gp")
        return views


__all__ = ["sample_deep_prior", "prior_functions", "PriorExplorer", "PROCESSES"]


GRAM_REGISTRY.attach(PriorExplorer, "kernel")  # the prior page offers every registered Gram kernel, a plugin's too
