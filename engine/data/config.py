"""`DataConfig`: the dataset and its variant options as `param` parameters.

The dashboard builds its data controls from these parameters, the CLI its flags, and a run stores them
as JSON; `loader.load` validates the same option names against the same bounds, so a value refused here
is refused there with the same range in the message.
"""
from __future__ import annotations

import param

from ..errors import DataError
from . import sources


class DatasetName(param.String):
    """A string naming a registered dataset or an IDX directory ('idx:/path/to/dir')."""

    def _validate(self, val):
        super()._validate(val)
        if val is None:
            return
        try:
            sources.resolve(val)
        except DataError:
            raise DataError(
                f"parameter 'dataset' got {val!r}, which is not a known dataset; valid names: "
                f"{', '.join(sources.names())}, or 'idx:/path/to/dir' for a folder of MNIST-format files."
            ) from None


class DataConfig(param.Parameterized):
    """Which data to load and which variant of it; `load()` returns the `Dataset`."""

    dataset = DatasetName(
        "digits",
        doc=f"Dataset name: one of {', '.join(sources.names())}, or 'idx:/path/to/dir' (MNIST-format IDX files).",
    )
    rotate = param.Number(
        0.0, bounds=(0, 180),
        doc="Rotate every image by its own angle drawn uniformly in [−rotate, rotate] degrees (seeded); images only.",
    )
    odd_even = param.Boolean(False, doc="Relabel digits as 0 = even, 1 = odd (digit datasets only).")
    classes = param.List(
        [], item_type=int,
        doc="Keep only these classes, relabelled 0..K−1 in the given order, e.g. [4, 9]; empty keeps all. "
        "For digit datasets a class is its digit, otherwise its index.",
    )
    subset = param.Integer(0, bounds=(0, None), doc="Training points kept (stratified by class, seeded); 0 keeps all.")
    test_subset = param.Integer(0, bounds=(0, None), doc="Test points kept (stratified by class, seeded); 0 keeps all.")
    test_fraction = param.Number(
        0.25, bounds=(0, 1), inclusive_bounds=(False, False),
        doc="Share held out for testing, for sources without a fixed test split.",
    )
    seed = param.Integer(
        0, bounds=(0, None), doc="Seed of every random choice: split, subsets, rotations, synthetic data."
    )
    source_options = param.Dict(
        {}, doc="Options of the chosen source, e.g. {'num_train': 500} for rectangles or {'patch_size': 8}.",
    )

    def values(self) -> dict:
        """The variant options as keyword arguments for `load` (without dataset and source_options)."""
        return {key: getattr(self, key) for key in VARIANT_OPTIONS}

    def load(self):
        from .loader import load  # the loader imports this module, so import it when first needed

        return load(self.dataset, **self.values(), **self.source_options)


VARIANT_OPTIONS = ("rotate", "odd_even", "classes", "subset", "test_subset", "test_fraction", "seed")
