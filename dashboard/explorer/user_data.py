"""The user's own data on the page: what the data box offers, and an `Explorer` opened on data handed over from
Python.

The data box lists the bundled datasets, the data handed over in this process (`Explorer(data=...)`), and the
files and folders `load` can read (`invlab.data.loadable`: CSV, npz and Parquet files, image folders, IDX folders)
inside the directories the page may read: under `invlab serve`, the data directory and every `--allow-data-dir`
(only what resolves inside them, every class folder and image of an image folder included, and nothing of the run
store: what the server would refuse is not offered); in a notebook, the data directory. The MNIST cache (`invlab
fetch mnist`) is the bundled 'mnist', not a file to list. Nothing is read until a run is built.
"""
from __future__ import annotations

import dataclasses
import logging

from invlab.data import hand_over, handed_names, list_datasets, loadable
from invlab.data.mnist import cache_path
from invlab.data.reads import first_refused
from invlab.errors import ConfigError
from invlab.settings import data_dir
from invlab.train import RunConfig

log = logging.getLogger(__name__)


def data_choices(limits=None) -> list[str]:
    """The data box's choices: bundled names, then handed-over data ('python:NAME'), then the readable files and
    folders ('csv:PATH', 'images:DIR' ...) inside the directories this page may read (see the module doc)."""
    served = limits is not None and bool(limits.data_dirs)
    folders = list(limits.data_dirs) if served else [str(data_dir())]
    skip = {f"npz:{cache_path().resolve()}"}
    files: list[str] = []
    for folder in folders:
        try:
            files += [f for f in loadable(folder) if f not in skip and f not in files
                      and (not served or first_refused(f, limits.readable) is None)]
        except OSError as err:  # an unreadable folder lists nothing; the page still opens
            log.warning("cannot list data in %s: %s", folder, err)
    return list_datasets() + handed_names() + files


def config_with_data(config: RunConfig | None, data=None, dataset=None, target: str | None = None) -> RunConfig | None:
    """`config` (or the defaults) set to train on `data` — `(X, y)` or a DataFrame — or on a built `dataset`, handed
    over under a 'python:NAME' dataset string; `target` names a DataFrame's column to predict. Without either, the
    config as given."""
    if data is not None and dataset is not None:
        raise ConfigError("give data=(X, y) / a DataFrame, or dataset=Dataset, not both")
    given = data if data is not None else dataset
    if given is None:
        if target is not None:
            raise ConfigError("target= names a DataFrame's column: give the DataFrame as data= too")
        return config
    config = config or RunConfig()
    own = dict(config.data.get("source_options") or {})
    if target is not None:
        own["target"] = target
    settings = {**config.data, "dataset": hand_over(given)}
    settings.pop("source_options", None)
    if own:
        settings["source_options"] = own
    return dataclasses.replace(config, data=settings)
