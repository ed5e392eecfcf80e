"""Datasets for Invariance Lab: `load(name, **options) -> Dataset`.

Sources: scikit-learn's bundled digits (the default), MNIST (cached once by `fetch('mnist')`, i.e.
`invlab fetch mnist`), the synthetic sets of the papers (rectangles, symmetric-2d, two-moons), colour photo
patches and three tabular sets; and your own data: 'csv:PATH', 'npz:PATH', 'parquet:PATH', 'images:DIR',
'idx:DIR', a bare path, `(X, y)` arrays or a pandas DataFrame (`target=`). `loadable(DIR)` lists the files
and folders under DIR that `load` can read; `fetchable()` the sets `invlab fetch` downloads (each data set's
registry entry says whether and how); `hand_over(data)` names Python data as 'python:NAME'.
Variants — rotation, odd/even labels, class selection, subsets, splits — are options, all seeded.
Nothing is downloaded at load time.

    >>> from invlab.data import load
    >>> data = load("digits", classes=[4, 9], rotate=30, seed=1)
    >>> data.X_train.shape[1:], data.num_classes
    ((1, 8, 8), 2)
"""
from .dataset import Dataset
from .fetching import fetch, fetchable, list_datasets
from .handed import hand_over, handed_names
from .identity import identity
from .idx import read_idx, write_idx
from .loader import DataConfig, load
from .paths import loadable
from .raw import DataSize, RawData
from .sources import READERS, register_dataset, register_reader

__all__ = ["DataConfig", "DataSize", "Dataset", "READERS", "RawData", "fetch", "fetchable", "hand_over", "handed_names",
           "identity", "list_datasets", "load", "loadable", "read_idx", "register_dataset", "register_reader",
           "write_idx"]
