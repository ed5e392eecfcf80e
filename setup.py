"""Build step that pyproject.toml cannot express: the teaching notebooks (notebooks/*.ipynb) ship inside the
engine package as engine/notebooks/, where `invlab notebooks DIR` and `invlab lab` find them. Everything else is
declared in pyproject.toml."""
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithNotebooks(build_py):
    """`build_py` that also copies notebooks/*.ipynb into the built engine package."""

    def run(self):
        super().run()
        target = Path(self.build_lib) / "engine" / "notebooks"
        for notebook in sorted(Path(__file__).resolve().parent.glob("notebooks/*.ipynb")):
            target.mkdir(parents=True, exist_ok=True)
            self.copy_file(str(notebook), str(target / notebook.name))


setup(cmdclass={"build_py": BuildWithNotebooks})
