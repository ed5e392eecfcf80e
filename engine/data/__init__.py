"""Datasets for Invariance Lab: `load(name, **options) -> Dataset`.

Sources: scikit-learn's bundled digits (the default), MNIST (cached once by `fetch('mnist')`, i.e.
`invlab fetch mnist`), any folder of MNIST-format IDX files ('idx:/path/to/dir'), the synthetic sets of
the papers (rectangles, symmetric-2d, two-moons), colour photo patches and three tabular sets.
Variants — rotation, odd/even labels, class selection, subsets, splits — are options, all seeded.
Nothing is downloaded at load time.

    >>> from engine.data import load
    >>> data = load("digits", classes=[4, 9], rotate=30, seed=1)
    >>> data.X_train.shape[1:], data.num_classes
    ((1, 8, 8), 2)
"""
from .dataset import Dataset
from .idx import read_idx, write_idx
from .loader import DataConfig, fetch, list_datasets, load

__all__ = ["DataConfig", "Dataset", "fetch", "list_datasets", "load", "read_idx", "write_idx"]
