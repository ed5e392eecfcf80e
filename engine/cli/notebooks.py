"""`invlab notebooks DIR` copies the teaching notebooks out of the installed package; `invlab lab [DIR]` opens them
in JupyterLab (the `lab` extra).

An installed package carries the notebooks as `engine/notebooks/*.ipynb` (the build copies them from the
repository's `notebooks/`); a source checkout reads `notebooks/` itself.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import sys
from pathlib import Path

from ..errors import ConfigError

LAB_EXTRA = "pip install 'invariance-lab[lab]'"


def notebook_files() -> list[Path]:
    """The teaching notebooks (`.ipynb` paths, sorted by name) of this installation or source checkout."""
    here = Path(__file__).resolve().parent.parent  # the engine package
    for folder in (here / "notebooks", here.parent / "notebooks"):
        found = sorted(folder.glob("*.ipynb"))
        if found:
            return found
    raise ConfigError("the teaching notebooks are not part of this installation; reinstall the package "
                      "(pip install --force-reinstall invariance-lab)")


def copy_notebooks(target: Path) -> list[Path]:
    """Copy the notebooks into folder `target` (made if missing) and return the new files; ConfigError, with
    nothing copied, when `target` is a file or already holds a notebook of the same name."""
    target = Path(target).expanduser()
    if target.exists() and not target.is_dir():
        raise ConfigError(f"{target} is a file; give a folder to copy the notebooks into")
    sources = notebook_files()
    clashing = [s.name for s in sources if (target / s.name).exists()]
    if clashing:
        raise ConfigError(f"{', '.join(clashing)} already exist{'s' if len(clashing) == 1 else ''} in {target}; "
                          "nothing was copied (your files are kept): choose a new or empty folder, or move those "
                          "files away")
    try:
        target.mkdir(parents=True, exist_ok=True)
        return [Path(shutil.copy2(source, target / source.name)) for source in sources]
    except OSError as err:
        raise ConfigError(f"cannot write the notebooks to {target}: {err.strerror or err}") from None


def cmd_notebooks(argv: list[str]) -> int:
    """`invlab notebooks ARGV`; returns the exit status (0 copied, 1 refused, 2 usage)."""
    parser = argparse.ArgumentParser(prog="invlab notebooks",
                                     description="Copy the teaching notebooks into a folder, to run and edit them.")
    parser.add_argument("folder", metavar="DIR", help="Folder to copy them into (made if missing); notebooks "
                        "already there are never overwritten.")
    args = parser.parse_args(argv)
    try:
        copied = copy_notebooks(Path(args.folder))
    except ConfigError as err:
        print(f"invlab notebooks: {err}", file=sys.stderr)
        return 1
    print(f"copied {len(copied)} notebooks to {Path(args.folder).expanduser()}: "
          + ", ".join(p.name for p in copied))
    print(f"open them with: invlab lab {args.folder}   (needs {LAB_EXTRA})")
    return 0


def lab_command(argv: list[str]) -> list[str]:
    """The JupyterLab command line `invlab lab ARGV` runs, after copying the notebooks into its folder when that
    folder holds none of them yet (a folder holding them is opened as it is: edits are kept)."""
    parser = argparse.ArgumentParser(prog="invlab lab", description="Open the teaching notebooks in JupyterLab "
                                     "(on 127.0.0.1), copying them into DIR first when it holds none of them.")
    parser.add_argument("folder", metavar="DIR", nargs="?", default="invlab-notebooks",
                        help="Folder of the notebooks (default: ./invlab-notebooks).")
    args, passthrough = parser.parse_known_args(argv)
    if importlib.util.find_spec("jupyterlab") is None:
        raise ConfigError(f"JupyterLab is not installed; install it with: {LAB_EXTRA}")
    folder = Path(args.folder).expanduser()
    if not any((folder / source.name).exists() for source in notebook_files()):
        copy_notebooks(folder)
    return [sys.executable, "-m", "jupyterlab", f"--notebook-dir={folder}", "--ServerApp.ip=127.0.0.1", *passthrough]


def cmd_lab(argv: list[str]) -> int:
    """`invlab lab ARGV`: JupyterLab replaces this process; returns 2 (nothing started) when refused."""
    try:
        cmd = lab_command(argv)
    except ConfigError as err:
        print(f"invlab lab: {err}", file=sys.stderr)
        return 2
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(cmd[0], cmd)
    return 0  # not reached: the server runs in this process
