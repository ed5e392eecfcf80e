"""Convolutional and invariant kernels as GPyTorch kernels, for a user's own `ExactGP` or `ApproximateGP`.

- `ConvKernel(base_kernel, image_shape, patch_shape)`: the convolutional kernel of "Convolutional Gaussian Processes"
  (van der Wilk, Rasmussen & Hensman 2017, arXiv:1709.01894), k(x, x') = Σ_p Σ_q w_p w_q k_g(x[p], x'[q]) over the
  patches of two images (eq. 14; with learned weights, eq. 18), on flattened images [..., N, C·H·W].
- `InvariantKernel(base_kernel, orbit)`: the base kernel averaged over a finite orbit, k(x, x') = (1/P²) Σ_a Σ_b
  k_g(a(x), b(x')), the invariant kernel of "Learning Invariances using the Marginal Likelihood" (van der Wilk,
  Bauer, John & Hensman 2018, arXiv:1808.05563, eq. 5–8) for a finite group, exactly.

Both follow GPyTorch's conventions: `kernel(x1, x2)` gives a lazily evaluated [..., N1, N2] covariance, `diag=True`
its diagonal [..., N], batch dimensions of the inputs are batches. The base kernel keeps its own hyperparameters
(`kernel.base_kernel.lengthscale`, ...). A kernel with a batch shape of its own (a batch of hyperparameters) is
refused with a message: the orbit sums here are for one set of hyperparameters.

For an RBF or Matérn-5/2 base kernel (optionally in a `ScaleKernel`) `ConvKernel` uses the lab's patch arithmetic
(`invlab.covariances.patches`): identical patches of an image are summed first, and the double sum is formed in
chunks, so memory stays bounded whatever the number of patches; other base kernels are summed by brute force.
`InvariantKernel` evaluates the base kernel on blocks of orbit elements, a bounded number at a time.
"""
from __future__ import annotations

import math
import weakref

import torch
from gpytorch.kernels import Kernel

from ..covariances.patch_kernels import _stationary_parts, patch_cross, patch_gram_quad
from ..covariances.patch_terms import _terms
from ..errors import ConfigError, ShapeError
from ..kernels.convolutional import Convolutional, WeightedConvolutional
from ..kernels.invariant import InvariantKernel as LabInvariant
from ..transforms import REGISTRY, build_augmentation
from ..transforms.base import FiniteOrbit
from .bridge import patch_kernel
from .inputs import checked_pair, parameter_dtype, refuse_widths

BLOCK_ELEMENTS = 1 << 22  # entries of the base kernel's matrix formed at a time by the orbit sums (32 MB in float64)


def _refuse_batch_kernel(kernel: Kernel, what: str) -> None:
    if len(kernel.batch_shape) or any(len(getattr(k, "batch_shape", ())) for k in kernel.modules()
                                      if isinstance(k, Kernel)):
        raise ConfigError(f"{what} sums one base kernel over patches or an orbit; this one has batch_shape "
                          f"{tuple(kernel.batch_shape) or 'in a part'}: give a base kernel without a batch shape "
                          "(batches of inputs are fine)")


_IMAGE_ORBITS, _VECTOR_ORBITS = "'rot90', 'flips' or 'cyclic_shifts'", "'permutations' or 'sign_flips'"


def _refuse_misfit(orbit, input_shape: tuple[int, ...] | None) -> None:
    """A `ConfigError` when `orbit` (a registered name, or a `FiniteOrbit`) cannot act on inputs of `input_shape`
    (None: vectors whose width the first input gives), with advice in the kernel's own arguments: inputs come
    flattened, so only `input_shape` says that they are images (the registry's own message speaks of a config's
    `augmentation`)."""
    if isinstance(orbit, str):
        if orbit == "auto":  # chosen by the inputs' kind when the orbit is built
            return
        if orbit not in REGISTRY.parts:
            raise ConfigError(f"InvariantKernel: unknown orbit {orbit!r}; the built-in finite orbits are "
                              f"{_IMAGE_ORBITS} for images and {_VECTOR_ORBITS} for vectors "
                              "(invlab.transforms.augmentation_names() lists every registered one), or pass a "
                              "FiniteOrbit")
        label, applies = repr(orbit), REGISTRY.parts[orbit].inputs
    else:
        label = f"{type(orbit).__name__}()"
        applies = ("image",) if getattr(orbit, "image_only", False) else ("image", "vector")
    if input_shape is None or len(input_shape) != 3:
        if "vector" in applies:
            return
        read = "no input_shape was given, so each row is read as a vector" if input_shape is None \
            else f"input_shape={input_shape} is a vector's shape"
        raise ConfigError(f"InvariantKernel: the orbit {label} acts on images, but {read}. For flattened images "
                          "pass input_shape=(C, H, W), the shape of one image, e.g. InvariantKernel(base_kernel, "
                          f"{label}, input_shape=(1, 8, 8)) for 8×8 grey images [N, 64]; for vectors use the orbit "
                          f"{_VECTOR_ORBITS}")
    if "image" not in applies:
        raise ConfigError(f"InvariantKernel: the orbit {label} acts on vectors, but input_shape={input_shape} is an "
                          f"image's shape. For images use the orbit {_IMAGE_ORBITS}; for vectors leave input_shape "
                          "out (or give (D,))")


def _one_input(input_shape) -> tuple[int, ...]:
    """`input_shape` as (C, H, W) for images ((H, W) is one channel) or (D,) for vectors."""
    shape = tuple(int(s) for s in input_shape)
    if len(shape) == 2:
        shape = (1, *shape)
    if len(shape) not in (1, 3):
        raise ShapeError(f"InvariantKernel: input_shape is (C, H, W) or (H, W) for flattened images, (D,) for "
                         f"vectors; got {shape}")
    return shape


class _OrbitSum(Kernel):
    """What the two kernels share: the checks of their inputs (`invlab.gpytorch.inputs`), empty inputs, batches of
    inputs flattened to one loop, and the kernel's own batch refused."""

    is_stationary = False

    def _expected(self) -> tuple[int | None, str]:
        """(values a row the kernel takes, or None while it does not know yet; that in words)."""
        raise NotImplementedError

    def __call__(self, x1, x2=None, diag=False, last_dim_is_batch=False, **params):
        """GPyTorch's `Kernel.__call__`, after a check that x1 and x2 have rows of one width (GPyTorch's own
        refusal names neither width)."""
        if x2 is not None and x2 is not x1 and self.active_dims is None:
            refuse_widths(type(self).__name__, self._expected()[0], self._expected()[1], x1=x1, x2=x2)
        return super().__call__(x1, x2, diag=diag, last_dim_is_batch=last_dim_is_batch, **params)

    def forward(self, x1, x2, diag=False, last_dim_is_batch=False, **params):
        """k(x1, x2) [..., N1, N2] (or its diagonal [..., N] with `diag`) of inputs [..., N, D]."""
        if last_dim_is_batch:
            raise ConfigError(f"{type(self).__name__} does not take last_dim_is_batch: each input is a whole "
                              "image or vector, not a batch of its coordinates")
        x1, x2 = checked_pair(type(self).__name__, x1, x2, parameter_dtype(self), *self._expected())
        batch = torch.broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
        if x1.shape[-2] == 0 or x2.shape[-2] == 0 or 0 in batch:  # nothing to sum: GPyTorch's empty shape
            return x1.new_zeros(*batch, x1.shape[-2], *(() if diag else (x2.shape[-2],)))
        if not batch:
            return self._diag(x1, x2) if diag else self._cross(x1, x2)
        a = x1.expand(*batch, *x1.shape[-2:]).reshape(-1, *x1.shape[-2:])
        b = x2.expand(*batch, *x2.shape[-2:]).reshape(-1, *x2.shape[-2:])
        out = torch.stack([self._diag(u, v) if diag else self._cross(u, v) for u, v in zip(a, b)])
        return out.reshape(*batch, *out.shape[1:])

    def _diag(self, x1, x2):
        if x1.shape != x2.shape:
            raise ShapeError(f"diag=True needs inputs of one shape, got {tuple(x1.shape)} and {tuple(x2.shape)}")
        if x1 is x2 or torch.equal(x1, x2):
            return self._self_diag(x1)
        return torch.stack([self._cross(x1[n:n + 1], x2[n:n + 1])[0, 0] for n in range(x1.shape[0])])


class ConvKernel(_OrbitSum):
    """The convolutional kernel on flattened images [..., N, C·H·W]: k(x, x') = Σ_p Σ_q w_p w_q k_g(x[p], x'[q])
    (van der Wilk, Rasmussen & Hensman 2017, eq. 14 and, with `weighted=True`, eq. 18).

    `base_kernel` k_g: a GPyTorch kernel on patches of E = h·w values (C·h·w with `colour=True`).
    `image_shape`: (H, W) or (C, H, W). `patch_shape`: (h, w) or an int. `stride`: between patch positions.
    `weighted`: learn one weight per patch (`weights`, starting at 1). `colour`: each patch holds every channel
    (the "colour patch" variant); without it each channel's patches are patches of the one k_g, as in the paper's
    grey baseline for colour images. `weight`: the fixed scale s of every w_p = s·v_p; by default 1/P (P patches), so
    that f is the mean of the patch responses (GPflow 2's normalisation and the lab's own models'). Any other
    keyword (`active_dims`, ...) is GPyTorch's `Kernel`'s.
    """

    def __init__(self, base_kernel: Kernel, image_shape, patch_shape=3, *, stride=1, weighted: bool = False,
                 colour: bool = False, weight: float | None = None, **kwargs):
        _refuse_batch_kernel(base_kernel, "ConvKernel")
        if kwargs.get("batch_shape"):
            raise ConfigError("ConvKernel sums one base kernel over patches; give it no batch_shape (batches of "
                              "inputs are fine)")
        super().__init__(**kwargs)
        image_shape = tuple(int(s) for s in image_shape)
        if len(image_shape) == 2:
            image_shape = (1, *image_shape)
        if len(image_shape) != 3:
            raise ShapeError(f"image_shape is (H, W) or (C, H, W), got {image_shape}")
        self.base_kernel = base_kernel
        cls = WeightedConvolutional if weighted else Convolutional
        self.conv = cls(patch_kernel(base_kernel), image_shape, patch_shape, stride, colour_patches=colour)
        self.conv.weight = float(1.0 / self.conv.num_patches if weight is None else weight)
        self.conv.to(dtype=parameter_dtype(base_kernel))
        self.image_shape = image_shape

    def _expected(self) -> tuple[int, str]:
        C, H, W = self.image_shape
        return C * H * W, f"flattened {C}×{H}×{W} images ({C * H * W} values a row)"

    @property
    def num_patches(self) -> int:
        """P, the number of patches of one image."""
        return self.conv.num_patches

    @property
    def patch_weights(self) -> torch.Tensor:
        """The weights w_p [P] (the fixed s·1 without `weighted`)."""
        w = self.conv.patch_weights()
        if w is None:
            return torch.full((self.conv.num_patches,), self.conv.weight, dtype=parameter_dtype(self))
        return w

    def _images(self, x):
        """x [N, C·H·W] as images [N, C, H, W]: the same tensor for the same x, so that the lab's patch cache
        (keyed by the image tensor) serves K_uf and k_ff of one batch from one patch extraction."""
        C, H, W = self.image_shape
        refuse_widths("ConvKernel", *self._expected(), x=x)
        last = getattr(self, "_last_images", None)
        if last is not None and last[0]() is x and last[1] == x._version:
            return last[2]
        images = x.reshape(-1, C, H, W)
        try:
            self._last_images = (weakref.ref(x), x._version, images)
        except TypeError:  # not weakly referable: no reuse
            pass
        return images

    def __getstate__(self):
        """The kernel's state for pickling (`torch.save(model)`), without the last batch's images (a weak reference)."""
        state = dict(super().__getstate__() if hasattr(super(), "__getstate__") else self.__dict__)
        state.pop("_last_images", None)
        return state

    def _fast(self) -> bool:
        return _stationary_parts(self.conv.base) is not None

    def _cross(self, x1, x2):
        X1, X2 = self._images(x1), self._images(x2)
        if not self._fast():
            return self.conv.K(X1, X2)
        U, w = _terms(self.conv, X1)  # [N1, Q1, E], [N1, Q1]: each image's distinct patches and their weights
        V, v = _terms(self.conv, X2)
        rows = max(1, BLOCK_ELEMENTS // max(1, V.shape[1] * X1.shape[0]))  # images of x2 at a time
        out = []
        for start in range(0, X2.shape[0], rows):
            Vc, vc = V[start:start + rows], v[start:start + rows]  # [c, Q2, E], [c, Q2]
            K = patch_cross(self.conv.base, Vc.reshape(-1, Vc.shape[-1]), U, w)  # [c·Q2, N1]
            out.append((K.reshape(Vc.shape[0], Vc.shape[1], -1) * vc[..., None]).sum(1))  # [c, N1]
        return torch.cat(out).transpose(0, 1)  # [N1, N2]

    def _self_diag(self, x):
        X = self._images(x)
        if not self._fast():
            return self.conv.K_diag(X)
        return patch_gram_quad(self.conv.base, *_terms(self.conv, X))


class InvariantKernel(_OrbitSum):
    """The base kernel averaged over a finite orbit, on inputs [..., N, D]: k(x, x') = (1/P²) Σ_a Σ_b k_g(a(x), b(x'))
    (van der Wilk, Bauer, John & Hensman 2018, eq. 5–8, exact for a finite group of P elements).

    `orbit`: a registered finite orbit by name (`"rot90"`, `"flips"`, `"cyclic_shifts"` for images; `"permutations"`,
    `"sign_flips"` for vectors; `orbit_options` are its own, e.g. `coordinates="0,1"`) or a `FiniteOrbit`.
    `input_shape`: one input's shape, (C, H, W) or (H, W) for images (inputs come flattened, so an image orbit needs
    it), by default (D,) vectors, with D taken from the first input. A sampled augmentation (rotation by a learned
    angle, ...) is refused: its kernel is an expectation that the lab's own invariant model estimates without bias
    (`invlab.models`, family "invariant").
    """

    def __init__(self, base_kernel: Kernel, orbit, *, input_shape=None, orbit_options: dict | None = None, **kwargs):
        _refuse_batch_kernel(base_kernel, "InvariantKernel")
        if kwargs.get("batch_shape"):
            raise ConfigError("InvariantKernel sums one base kernel over an orbit; give it no batch_shape (batches "
                              "of inputs are fine)")
        super().__init__(**kwargs)
        self.base_kernel = base_kernel
        self.input_shape = None if input_shape is None else _one_input(input_shape)
        self._orbit_name, self._orbit_options = (orbit, dict(orbit_options or {})) if isinstance(orbit, str) \
            else (None, {})
        self.orbit = None if isinstance(orbit, str) else self._checked(orbit)
        _refuse_misfit(orbit, self.input_shape)
        if self.orbit is None and self.input_shape is not None:
            self.orbit = self._build(self.input_shape)

    def _build(self, shape):
        return self._checked(build_augmentation(self._orbit_name, shape, **self._orbit_options))

    @staticmethod
    def _checked(orbit):
        if not isinstance(orbit, FiniteOrbit):
            raise ConfigError(f"InvariantKernel sums over a finite orbit (rot90, flips, permutations, ...); "
                              f"{type(orbit).__name__} is a distribution to sample: train the lab's invariant model "
                              "for it, or pass a FiniteOrbit")
        return orbit

    def _expected(self) -> tuple[int | None, str]:
        if self.input_shape is None:  # taken from the first input
            return None, "rows of one width"
        return math.prod(self.input_shape), f"inputs of shape {self.input_shape} flattened " \
                                            f"({math.prod(self.input_shape)} values a row)"

    @property
    def orbit_size(self) -> int:
        """P, the number of elements of the orbit (the identity included)."""
        if self.orbit is None:
            raise ConfigError("the orbit is built from the first input's shape; call the kernel once, or give "
                              "input_shape")
        return self.orbit.orbit_size

    def _ensure_orbit(self, x):
        if self.input_shape is None:
            self.input_shape = (x.shape[-1],)
        if self.orbit is None:
            self.orbit = self._build(self.input_shape).to(device=x.device)

    def lab_kernel(self, x) -> LabInvariant:
        """The lab's invariant kernel of this one (k_g read from `base_kernel`, the whole orbit as its P samples),
        for the lab's covariance dispatch; built for the shape of inputs x [N, D] on first use."""
        self._ensure_orbit(x)
        if getattr(self, "_lab", None) is None or self._lab[0].augmentation is not self.orbit:
            self._lab = (LabInvariant(patch_kernel(self.base_kernel), self.orbit, num_samples=max(2, self.orbit_size)),)
        return self._lab[0]

    def _elements(self, x):
        """The orbit of each input: [N, P, D], flattened."""
        self._ensure_orbit(x)
        refuse_widths("InvariantKernel", *self._expected(), x=x)
        A = self.orbit.elements(x.reshape(-1, *self.input_shape))
        return A.reshape(A.shape[0], A.shape[1], -1)

    def _cross(self, x1, x2):
        A, B = self._elements(x1), self._elements(x2)  # [N1, P, D], [N2, P, D]
        (N1, P, D), N2 = A.shape, B.shape[0]
        flat_b = B.reshape(-1, D)
        rows = max(1, BLOCK_ELEMENTS // max(1, P * N2 * P))  # inputs of x1 at a time
        out = []
        for start in range(0, N1, rows):
            a = A[start:start + rows]
            K = self.base_kernel(a.reshape(-1, D), flat_b).to_dense()  # [c·P, N2·P]
            out.append(K.reshape(a.shape[0], P, N2, P).mean((1, 3)))
        return torch.cat(out)

    def _self_diag(self, x):
        A = self._elements(x)  # [N, P, D]
        return self.base_kernel(A, A).to_dense().mean((-1, -2))  # a batch of [P, P] blocks


__all__ = ["BLOCK_ELEMENTS", "ConvKernel", "InvariantKernel"]
