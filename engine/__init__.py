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
