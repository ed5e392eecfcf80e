"""Invariance Lab engine: invariant, convolutional, RKHS, Wasserstein and deep-kernel-process models in PyTorch."""


def _version() -> str:
    """The project's version: from a source checkout's pyproject.toml when the engine runs from one (so a checkout
    beside an installed copy reports its own), else from the installed package's metadata."""
    import re
    from pathlib import Path

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    if pyproject.is_file():
        text = pyproject.read_text(encoding="utf-8")
        if re.search(r'^name = "invariance-lab"$', text, re.M):
            found = re.search(r'^version = "([^"]+)"$', text, re.M)
            if found:
                return found.group(1)
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("invariance-lab")
    except PackageNotFoundError:  # neither installed nor a checkout (a copied folder): say so, do not guess
        return "0+unknown"


__version__ = _version()
"""The version of Invariance Lab this engine belongs to (PEP 440, e.g. "0.2.0")."""

# The public face, imported when first used (`import invlab` alone loads neither torch nor the dashboard):
#   from invlab import Explorer, watch, load, RunConfig, Trainer
# and the registries' doors: invlab.kernels.register, invlab.transforms.register, invlab.models.register,
# invlab.data.register_reader.
_FACE = {
    "Explorer": ("invlab.dashboard", "Explorer"),  # the dashboard (the `dashboard` extra)
    "watch": ("invlab.train", "watch"),
    "load": ("invlab.data", "load"),
    "RunConfig": ("invlab.train", "RunConfig"),
    "Trainer": ("invlab.train", "Trainer"),
    "RunStore": ("invlab.train", "RunStore"),
}
__all__ = ["__version__", *_FACE]


def __getattr__(name: str):
    """`invlab.Explorer`, `invlab.watch`, ...: the public names, imported on first use (PEP 562)."""
    if name in _FACE:
        import importlib

        module, attribute = _FACE[name]
        value = getattr(importlib.import_module(module), attribute)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'invlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names and the public face's."""
    return sorted([*globals(), *_FACE])
