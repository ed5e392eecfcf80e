"""What pyproject.toml cannot express: the package list of the one import package `invlab` (the engine/ folder,
with the dashboard/ folder as `invlab.dashboard`: every folder under them with an __init__.py), and the teaching
notebooks (notebooks/*.ipynb) shipped inside it as invlab/notebooks/, where `invlab notebooks DIR` and `invlab lab`
find them. Everything else is declared in pyproject.toml."""
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
FOLDERS = {"engine": "invlab", "dashboard": "invlab.dashboard"}  # repository folder: the package it is


def packages() -> list[str]:
    """`invlab` and every sub-package, from the folders' __init__.py files."""
    out = []
    for folder, name in FOLDERS.items():
        for init in sorted((HERE / folder).rglob("__init__.py")):
            parts = init.parent.relative_to(HERE / folder).parts
            out.append(".".join((name, *parts)))
    return out


class BuildWithNotebooks(build_py):
    """`build_py` that also copies notebooks/*.ipynb into the built engine package."""

    def run(self):
        super().run()
        target = Path(self.build_lib) / "invlab" / "notebooks"
        for notebook in sorted(HERE.glob("notebooks/*.ipynb")):
            target.mkdir(parents=True, exist_ok=True)
            self.copy_file(str(notebook), str(target / notebook.name))


setup(packages=packages(), cmdclass={"build_py": BuildWithNotebooks})
