"""A registered orbit that makes training diverge, for the tests of what happens to such a candidate."""
import contextlib

import torch


@contextlib.contextmanager
def exploding_orbit(name: str = "exploding"):
    """Register a vector orbit `name` whose second element is NaN (a candidate that diverges at its first step); it is
    taken out of the registry and the invariant GP's choices afterwards."""
    import invlab.transforms as transforms
    from invlab.models.invariant import AugmentationParams
    from invlab.registry import _subclasses

    @transforms.register(name)
    class Exploding(transforms.FiniteOrbit):
        image_only = False
        orbit_size = 2

        def __init__(self, input_shape):
            super().__init__()

        def apply(self, X, index):
            nan = torch.tensor(float("nan"), dtype=X.dtype)
            return X[:, None] * torch.where(index[..., None] > 0, nan, torch.ones((), dtype=X.dtype))

    try:
        yield name
    finally:
        transforms.REGISTRY.parts.pop(name)
        for cls in _subclasses(AugmentationParams):
            for selector in ("augmentation", "then_augmentation"):
                if name in cls.param[selector].objects:
                    cls.param[selector].objects.remove(name)
